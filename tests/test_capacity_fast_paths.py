"""The fast paths of issue 6 give exactly what the slow, obvious computations give.

``kv_bytes_per_sequences_per_gpu`` (a whole sample at once), ``levers.kv_bytes_per_gpu``
(built on it) and ``Deployment.max_context`` (bracketed, then bisected over a block or
two) are each compared with the straightforward computation written out here: one
``kv_bytes_per_sequence_per_gpu`` call per request, and a bisection over every context.
"""

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from kvlib.core.dtypes import DTYPE_BYTES
from kvlib.models.catalog import load_model
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.serving import levers, paging
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu, kv_bytes_per_sequences_per_gpu
from kvlib.serving.sharding import as_mha

# These hand values are vLLM 0.33.0's profiled budget, ceil(0.92 M) - W - O (notebook 06 as it
# stands): pinned to that release since 0.34.0 became the default (tests/test_cli_plan.py and
# tests/test_capacity_formulas.py hold 0.34.0's).
Deployment = functools.partial(Deployment, vllm="0.33.0")

# --- the references: the obvious loops ------------------------------------------------------


def levers_by_loop(model, lengths, s: levers.Setting, tp: int) -> int:
    """ceil(batch x mean bytes per request), one scalar call per request."""
    m = as_mha(model) if s.mha else model
    if s.window is not None:
        m = levers.with_window(m, s.window)
    if not s.paged:
        per_request = kv_bytes_per_sequence_per_gpu(m, s.max_model_len, s.kv_dtype, tp,
                                                    block_size=1)
        return math.ceil(s.batch * Fraction(per_request))
    total = 0
    for t in lengths:
        total += kv_bytes_per_sequence_per_gpu(m, int(min(t, s.max_model_len)), s.kv_dtype, tp,
                                               s.block_size)
    return math.ceil(s.batch * Fraction(total, len(lengths)))


def max_context_by_bisection(d: Deployment, sequences: int, limit=None) -> int:
    """The longest context whose ``sequences`` caches fit, by bisection over every context."""
    hi = limit or d.model.max_position_embeddings or 2**24
    budget = d.kv_budget_bytes_per_gpu

    def fits(t):
        return sequences * d.kv_bytes_per_sequence_per_gpu(t) <= budget

    if budget <= 0 or not fits(1):
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


# --- random models -----------------------------------------------------------------------------

@st.composite
def groups(draw):
    latent = draw(st.booleans()) and draw(st.booleans())  # a quarter of the groups are MLA
    layers = draw(st.integers(1, 8))
    if latent:
        attention = draw(st.sampled_from(["MLA", "MLA+RoPE"]))
        sizes = {"N_h": draw(st.sampled_from([8, 16, 32])),
                 "d_L": draw(st.integers(1, 512)), "d_R": draw(st.integers(1, 64))}
        return LayerGroup(CacheKind.LATENT, layers, attention, sizes)
    kind = draw(st.sampled_from([CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED]))
    attention = draw(st.sampled_from(["MHA", "GQA", "MQA"]))
    n_h = draw(st.sampled_from([8, 16, 32]))
    sizes = {"N_h": n_h, "d_QK": draw(st.integers(1, 256)), "d_V": draw(st.integers(1, 256))}
    if attention == "GQA":
        sizes["N_g"] = draw(st.sampled_from([g for g in (1, 2, 4, 8, 16, 32) if n_h % g == 0]))
    window = None if kind is CacheKind.FULL else draw(st.integers(1, 70_000))
    return LayerGroup(kind, layers, attention, sizes, window)


models = st.builds(
    lambda gs, mpe: ModelSpec("random", tuple(gs), params=10**6, max_position_embeddings=mpe),
    st.lists(groups(), min_size=1, max_size=3),
    st.none() | st.integers(1, 300_000))

options = st.fixed_dictionaries({
    "tp": st.sampled_from([1, 2, 4, 8]),
    "kv_dtype": st.sampled_from(list(DTYPE_BYTES)),
    "block_size": st.sampled_from([1, 3, 16, 32, 128]),
    "scales": st.sampled_from([None, "per-token-head", "per-16-fp8"]),
    "dcp": st.sampled_from([1, 1, 1, 2, 4]),
})


@st.composite
def replicated_models(draw):
    """Full or latent groups whose KV heads TP=8 replicates: what DCP may split."""
    gs = []
    for _ in range(draw(st.integers(1, 3))):
        layers = draw(st.integers(1, 8))
        if draw(st.booleans()):
            gs.append(LayerGroup(CacheKind.LATENT, layers, "MLA+RoPE",
                                 {"N_h": 16, "d_L": draw(st.integers(1, 512)),
                                  "d_R": draw(st.integers(1, 64))}))
        else:
            sizes = {"N_h": 16, "d_QK": draw(st.integers(1, 256)),
                     "d_V": draw(st.integers(1, 256))}
            n_g = draw(st.sampled_from([1, 2]))
            gs.append(LayerGroup(CacheKind.FULL, layers, "MQA" if n_g == 1 else "GQA",
                                 sizes if n_g == 1 else {**sizes, "N_g": 2}))
    return ModelSpec("replicated", tuple(gs), params=10**6,
                     max_position_embeddings=draw(st.none() | st.integers(1, 300_000)))


# --- many sequences at once -------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(model=models | replicated_models(), o=options,
       contexts=st.lists(st.integers(1, 400_000), min_size=1, max_size=30))
def test_many_sequences_at_once_equal_one_call_each(model, o, contexts):
    try:
        one_by_one = [kv_bytes_per_sequence_per_gpu(model, t, **o) for t in contexts]
    except ValueError:
        reject()  # a TP or DCP the heads do not allow
    together = kv_bytes_per_sequences_per_gpu(model, np.array(contexts), **o)
    assert [type(v) for v in together] == [int] * len(contexts)
    assert list(together) == one_by_one


def test_many_sequences_refuse_what_one_call_refuses():
    llama = load_model("llama-3.1-70b")
    with pytest.raises(ValueError, match=r"context must be a positive integer, got 0 \(int\)"):
        kv_bytes_per_sequences_per_gpu(llama, np.array([0, 5]))
    with pytest.raises(ValueError, match="must divide the query heads N_h=64"):
        kv_bytes_per_sequences_per_gpu(llama, np.array([5]), tp=3)
    with pytest.raises(ValueError, match="contexts must hold integers"):
        kv_bytes_per_sequences_per_gpu(llama, np.array([5.0]))


# --- the levers ------------------------------------------------------------------------------

LEVER_MODELS = ("llama-3.1-70b", "gemma-3-27b", "deepseek-v2", "gpt-oss-20b")


@pytest.mark.parametrize("name", LEVER_MODELS)
def test_levers_equal_the_loop_over_requests_on_a_seeded_sample(name):
    model = load_model(name)
    lengths = paging.sample_lengths(400, seed=6, median=2048, sigma=1.5, max_len=131072)
    tp = 2
    for s in (levers.Setting(131072, 64, mha=True),
              levers.Setting(131072, 64, paged=True),
              levers.Setting(131072, 7, kv_dtype="int4", paged=True, mha=True),
              levers.Setting(32768, 33, kv_dtype="fp8", paged=True, block_size=32),
              levers.Setting(131072, 5, kv_dtype="int4", paged=True, window=4096),
              levers.Setting(65536, 3, paged=True, block_size=1)):
        assert levers.kv_bytes_per_gpu(model, lengths, s, tp) == levers_by_loop(model, lengths,
                                                                                 s, tp)


def test_levers_notebook_06_workload_equals_the_loop():
    # Notebook 06's workload and both lever tables, as the notebook computes them.
    llama31 = load_model("llama-3.1-70b")
    lengths = paging.sample_lengths(2000, seed=2026, median=2048, sigma=1.0, max_len=131072)
    start = levers.Setting(max_model_len=131072, batch=64)
    steps = (levers.decision_order(llama31, lengths, start, tp=4, short_context=32768)
             + levers.one_at_a_time(llama31, lengths, start, tp=4, short_context=32768,
                                    window=4096))
    for step in steps:
        assert step.kv_bytes_per_gpu == levers_by_loop(llama31, lengths, step.setting, 4)


def test_levers_refuse_an_empty_length_as_before():
    s = levers.Setting(131072, 1, paged=True)
    with pytest.raises(ValueError, match=r"context must be a positive integer, got 0 \(int\)"):
        levers.kv_bytes_per_gpu(load_model("llama-3.1-8b"), np.array([0.5, 100.0]), s)
    # float lengths are taken as int(t), as the loop took them
    lengths = np.array([100.7, 17.2, 17.9])
    assert levers.kv_bytes_per_gpu(load_model("llama-3.1-8b"), lengths, s) == levers_by_loop(
        load_model("llama-3.1-8b"), lengths, s, 1)


# --- max_context ------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(model=models, o=options, draft=st.none() | models, draft_tp_div=st.sampled_from([1, 2]),
       sequences=st.integers(1, 64), data=st.data())
def test_max_context_equals_the_bisection_over_every_context(model, o, draft, draft_tp_div,
                                                            sequences, data):
    o = dict(o)
    tp = o.pop("tp")
    deployment = dict(model=model, gpu="H200", gpus=tp, tp=tp, params=10**6,
                      draft=draft, draft_tp=max(1, tp // draft_tp_div), **o)
    try:
        probe = Deployment(**deployment)
        draft_tp = probe.draft_tp if draft is not None else tp
        if draft is not None:
            kv_bytes_per_sequence_per_gpu(draft, 1, o["kv_dtype"], draft_tp, 1)
    except ValueError:
        reject()  # a TP or DCP the heads do not allow
    limit = data.draw(st.none() | st.integers(1, 400_000), label="limit")
    hi = limit or model.max_position_embeddings or 2**24
    # a budget around what `sequences` sequences of some context T0 need, or none at all
    t0 = data.draw(st.integers(1, min(hi, 400_000)), label="T0")
    need = sequences * probe.kv_bytes_per_sequence_per_gpu(t0)
    budget = need + data.draw(st.integers(-need, need) | st.sampled_from([0, -1, 1]),
                              label="budget - need")
    free = probe.usable_bytes_per_gpu - probe.weights_bytes_per_gpu \
        - probe.draft_weights_bytes_per_gpu
    d = Deployment(**deployment, overhead_bytes=max(0, free - budget))
    assert d.max_context(sequences, limit) == max_context_by_bisection(d, sequences, limit)


@settings(max_examples=200, deadline=None)
@given(model=replicated_models(), dcp=st.sampled_from([2, 4]), sequences=st.integers(1, 64),
       kv_dtype=st.sampled_from(["bf16", "int4"]), block_size=st.sampled_from([1, 16, 64]),
       draft=st.none() | replicated_models(), data=st.data())
def test_max_context_with_decode_context_parallelism_equals_the_bisection(
        model, dcp, sequences, kv_dtype, block_size, draft, data):
    deployment = dict(model=model, gpu="H200", gpus=8, tp=8, params=10**6, kv_dtype=kv_dtype,
                      block_size=block_size, dcp=dcp, draft=draft)
    probe = Deployment(**deployment)
    hi = model.max_position_embeddings or 2**24
    t0 = data.draw(st.integers(1, min(hi, 400_000)), label="T0")
    need = sequences * probe.kv_bytes_per_sequence_per_gpu(t0)
    budget = need + data.draw(st.integers(-need // 4, need // 4), label="budget - need")
    free = probe.usable_bytes_per_gpu - probe.weights_bytes_per_gpu \
        - probe.draft_weights_bytes_per_gpu
    d = Deployment(**deployment, overhead_bytes=max(0, free - budget))
    assert d.max_context(sequences) == max_context_by_bisection(d, sequences)


def test_max_context_ceils_target_and_draft_separately():
    # One MQA layer of d_QK + d_V = 1 + 2 elements in int4: 3 / 2 bytes per token, for the
    # target and again for the draft, each ceiled: 2 x ceil(1.5 T) bytes at T tokens.
    mqa = ModelSpec("mqa", (LayerGroup(CacheKind.FULL, 1, "MQA",
                                       {"N_h": 1, "d_QK": 1, "d_V": 2}),),
                    params=10, max_position_embeddings=1000)
    probe = Deployment(mqa, "H200", kv_dtype="int4", block_size=1, draft=mqa)
    free = probe.usable_bytes_per_gpu - 2 * 20  # two 10-parameter bf16 models
    d = Deployment(mqa, "H200", kv_dtype="int4", block_size=1, draft=mqa,
                   overhead_bytes=free - 303)
    assert d.kv_budget_bytes_per_gpu == 303
    # T = 101: 2 x ceil(151.5) = 304 > 303 although 2 x 151.5 = 303; T = 100: 2 x 150 = 300
    assert d.kv_bytes_per_sequence_per_gpu(101) == 304
    assert d.max_context(1) == 100 == max_context_by_bisection(d, 1)


@pytest.mark.parametrize("name", ["llama-3.1-70b", "llama-3.1-8b", "gemma-3-27b",
                                  "deepseek-v2", "qwen3-32b", "gpt-oss-20b", "llama-4-scout"])
def test_max_context_of_bundled_models_equals_the_bisection(name):
    model = load_model(name)
    for gpu, gpus, tp, kv in (("H200", 4, 4, "bf16"), ("H100", 8, 8, "fp8"),
                              ("A100-80GB", 2, 2, "int4")):
        try:
            d = Deployment(model, gpu, gpus, tp, kv_dtype=kv, weight_dtype="fp8")
        except ValueError:
            continue
        for sequences in (1, 3, 8, 64, 256):
            for limit in (None, 5000, 1 << 22):
                assert d.max_context(sequences, limit) == max_context_by_bisection(
                    d, sequences, limit), (gpu, tp, kv, sequences, limit)
