"""Every exercise's answers, computed by kvlib's own formulas (never a number typed here).

One :class:`Exercise` per exercise of notebooks 01-07 ("01.1" is notebook 01's first), with
one :class:`Part` per number it asks for, and the usual slips of each part with the hint that
explains them. The solutions in the notebooks call :func:`kvlib.views.exercises.solution`,
which checks their values against these, so a solution and the checker cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import numpy as np

from kvlib.core.decode_cost import PATHS
from kvlib.core.formulas import GQA, INDEXER, MHA, MLA, MLA_ROPE, STATES, compressed
from kvlib.core.notation import by_name
from kvlib.models.catalog import bundled_config, load_model, simplified
from kvlib.models.estimate import estimate
from kvlib.models.readers import read_config
from kvlib.reference.attention import decode, init_weights
from kvlib.serving.engines.vllm.deployment import Deployment

__all__ = ["Part", "Exercise", "ANSWERS"]


@dataclass(frozen=True)
class Part:
    """One number an exercise asks for.

    ``name``: the variable the student edition asks to set; ``what``: what it is, in words;
    ``kind``: "bytes", "count", "ratio", "seconds" or "exception" (how it is read, see
    :func:`kvlib.views.exercises.reading.read`); ``value``: kvlib's answer (an int, a Fraction,
    or an exception's name); ``slips``: wrong answers that come from a known mistake, each
    with its hint; ``unit``: the word printed after the number ("tokens", "FLOP/B"), where
    the kind's own is not enough.
    """

    name: str
    what: str
    kind: str
    value: Callable[[], int | Fraction | str]
    slips: Callable[[], dict] = dict
    unit: str = ""


@dataclass(frozen=True)
class Exercise:
    parts: tuple[Part, ...]


# Shared shapes of the exercises (each from the exercise's own statement).
_LLAMA2_7B = dict(N_L=32, N_h=32, d_QK=128, d_V=128, b=2)
_LLAMA3_70B_AS_MHA = dict(N_L=80, N_h=64, d_QK=128, d_V=128, b=2)
_MISTRAL_7B = dict(N_L=32, N_h=32, N_g=8, d_QK=128, d_V=128, b=2)
_QWEN3_NEXT_STATE = dict(N_L=36, d_conv=4, N_lk=16, d_lk=128, N_lv=32, d_lv=128)
_DS_V2 = dict(N_h=128, d_in=5120, d_QK=128 + 64, d_V=128, d_L=512)  # key width d_QK + d_R
_K = 131_072


@cache
def _section_2_macs() -> tuple[int, ...]:
    """Multiply-adds per step of notebook 01's decode loop (3 layers, 4 heads, d = 8, 32
    tokens), counted by the NumPy reference as it runs (they do not depend on the weights)."""
    rng = np.random.default_rng(0)
    layers = [init_weights(rng, d_in=16, N_h=4, d_QK=8, d_V=8) for _ in range(3)]
    _, _, macs = decode(rng.normal(size=(32, 16)), layers)
    return tuple(int(m) for m in macs)


# Notebook 06's exercises are worked by hand with vLLM 0.34.0's budget and kvlib's assumed terms
# (M - W - 9.125 GiB held back per GPU, its section 3); the engines track's "E01" exercises
# with vLLM 0.33.0's profiled budget, ceil(0.92 M) - W - 4 GiB (engines/01, section 2).
V033 = {"vllm": "0.33.0"}


@cache
def _plan(model: str, gpu: str, gpus: int, tp: int, context: int, **options):
    return Deployment(load_model(model), gpu, gpus, tp, **options).plan(context)


@cache
def _engine(model: str, gpu: str, engine: str, **options):
    from kvlib.serving.engines import engine_tokens

    return engine_tokens(model, gpu, engine, context=8192, **options)


def _sliding_slots(in_flight: int) -> int:
    """E01.2: slots vLLM budgets for a 4,096-token window, 64-token blocks, max_model_len 128K."""
    from kvlib.serving.engines.vllm.pages import vllm_sliding_window_tokens

    return vllm_sliding_window_tokens(4096, 64, in_flight, max_model_len=_K)


def _gemma_8k() -> int:
    return load_model("gemma-3-27b").kv_bytes_per_sequence(8192, 2)


def _gated_deltanet_state(b_s: int, b_c: int = 2) -> int:
    return STATES["Gated DeltaNet"].bytes_per_sequence(**_QWEN3_NEXT_STATE, b_c=b_c, b_s=b_s)


def _qwen_windowed(max_window_layers: int) -> int:
    config = bundled_config("qwen2.5-7b") | {"use_sliding_window": True, "sliding_window": 4096,
                                             "max_window_layers": max_window_layers}
    return read_config(config).kv_bytes_per_sequence(32768, 2)


def _nemotron_8k():
    return estimate("nemotron-h-56b", context=8192)


def _nemotron_bf16_share() -> Fraction:
    """The share if the SSM state were bf16 too: the Mamba2 formula with b_s = 2, on the
    sizes kvlib reads from the config."""
    group = next(g for g in load_model("nemotron-h-56b").groups if g.attention == "Mamba2")
    sizes = {"N_L": group.layers, **group.sizes, "b_c": 2, "b_s": 2}
    formula = STATES["Mamba2"].bytes_per_sequence
    state = formula(**{k: v for k, v in sizes.items() if k in formula.args})
    kv = _nemotron_8k().kv_bytes_per_sequence
    return Fraction(state, state + kv)


def _at_1m(model: str) -> int:
    return load_model(model).total_bytes_per_sequence(1 << 20, 2)


def _v4_limit(model: str, ratio: int, entry: str = "V4 entry") -> Fraction:
    """Bytes per token one compressed layer of ``ratio`` adds past its window
    (:data:`kvlib.core.compression.COMPRESSED_LIMIT`; for the ``"Indexer"``, the limit of its
    compressed keys, one per m tokens), sizes read from the model's config."""
    from kvlib.core import compression

    g = next(g for g in load_model(model).groups if g.ratio == ratio and g.attention == entry)
    sizes = {"N_L": 1, "m": ratio, **{k: v for k, v in g.sizes.items() if k != "b"}}
    expr = compression.per_token_limit(compressed(INDEXER).subs(by_name("b").symbol, 1)) \
        if entry == "Indexer" else compression.COMPRESSED_LIMIT
    value = expr.subs({by_name(k).symbol: v for k, v in sizes.items()})
    return Fraction(int(value.p), int(value.q))


def _indexer_group(model: str):
    return next(g for g in load_model(model).groups if g.attention == "Indexer")


def _indexer_key(model: str) -> int:
    """Bytes of one token's indexer key in one layer (fp8 values and their fp32 scales)."""
    return INDEXER.bytes_per_token(N_L=1, d_I=_indexer_group(model).sizes["d_I"], b=1)


def _v4_bf16_slip(model: str, ratio: int) -> Fraction:
    """Exercise 08.1's answer with a bf16 entry (d_c values of 2 B) in place of vLLM's
    fp8_ds_mla one: entry and indexer key, one per ``ratio`` tokens."""
    g = next(g for g in load_model(model).groups if g.ratio == ratio and g.attention == "V4 entry")
    return Fraction(g.sizes["d_c"] * 2, ratio) + Fraction(_indexer_key(model), ratio)


def _indexer_keys(model: str, T: int, scale: bool = True, per: int = 4) -> int:
    """The model's indexer keys over T tokens: its compressed group (one key per m tokens).
    The slips are the same formula varied: ``per`` = 1, INDEXER's keys uncompressed (one per
    token); ``scale`` False, the fp8 key row K^I of its table alone."""
    g = _indexer_group(model)
    if not scale:  # the slip: INDEXER's K^I row alone, without the gamma^I scales
        key = INDEXER.table["K^I"].elements.subs({by_name("N_KV").symbol: T // per,
                                                  by_name("d_I").symbol: g.sizes["d_I"]})
        return g.layers * int(key)
    if per == g.ratio:
        return g.bytes_per_sequence(T, 1)
    return INDEXER.bytes_per_sequence(N_L=g.layers, N_KV=T // per, d_I=g.sizes["d_I"], b=1)


def _gemma3n_no_window(T: int) -> int:
    """Gemma 3n's storing layers (those of its groups that are not shared) as if every one kept
    the whole context of T tokens."""
    groups = load_model("gemma-3n-e4b").groups
    g = next(g for g in groups if str(g.kind) == "full")
    layers = sum(g.layers for g in groups if str(g.kind) != "shared")
    return GQA.bytes_per_sequence(N_L=layers, N_KV=T, b=2, **g.sizes)


def _gemma3n(T: int, shared: bool = True) -> int:
    config = bundled_config("gemma-3n-e4b")
    if not shared:
        config = {**config, "text_config": {**config["text_config"], "num_kv_shared_layers": 0}}
    return read_config(config).total_bytes_per_sequence(T, 2)


def _mxfp4_key(model: str, scales: bool = True) -> int:
    """Bytes of one indexer key in vLLM 0.34.0's MXFP4 cache (engines/04): d_I / 2 bytes of
    4-bit values and, unless ``scales`` is False (the slip), d_I / 32 scale bytes."""
    from kvlib.core import compression

    d_I = by_name("d_I").symbol
    d = _indexer_group(model).sizes["d_I"]
    key = compression.MXFP4_KEY if scales else compression.MXFP4_VALUES
    return int(key.subs(d_I, d))


def _keys_at(model: str, T: int, per_key: int, per: int | None = None) -> int:
    """Indexer keys of one ``model`` sequence of T tokens, ``per_key`` bytes each, one per
    ``per`` tokens (the group's m unless given)."""
    g = _indexer_group(model)
    return g.layers * (T // (per or g.ratio)) * per_key


def _v4_page(model: str, ratio: int):
    """vLLM 0.34.0's spec of ``model``'s compressed entries of ratio m (engines/04)."""
    from kvlib.serving.engines.vllm.v4 import v4_specs

    return next(s for s in v4_specs(load_model(model)) if s.role == "compressed"
                and s.ratio == ratio)


def _nemotron_layout(release: str = "0.34.0", **kw):
    """vLLM's layout of Nemotron-H 56B on an H200 (engines/06's exercises)."""
    from kvlib.serving.engines.vllm.layout import vllm_layout

    return vllm_layout(load_model("nemotron-h-56b"), 8192, "bf16", 1, "H200", release=release,
                       **kw)


def _nemotron_state_page() -> int:
    """One Mamba2 layer's state of Nemotron-H 56B (bf16 convolution, float32 SSM state)."""
    spec = load_model("nemotron-h-56b")
    (group,) = [g for g in spec.groups if g.kind.name == "MAMBA"]
    return spec.state_bytes_per_sequence() // group.layers


def _nemotron_state_per_gpu(tp: int, ssm_bytes: int = 4) -> int:
    """Nemotron-H 56B's Mamba2 state per sequence on each of ``tp`` GPUs; ``ssm_bytes`` = 2
    is the slip of a bf16 SSM state."""
    from kvlib.serving.kv import state_bytes_per_sequence_per_gpu

    spec = load_model("nemotron-h-56b")
    whole = state_bytes_per_sequence_per_gpu(spec, tp)
    if ssm_bytes == 4:
        return whole
    (group,) = [g for g in spec.groups if g.kind.name == "MAMBA"]
    s = group.sizes
    return whole - group.layers * s["N_sh"] // tp * s["d_sh"] * s["d_state"] * 2


def _prefill_crossover(d_L: int) -> Fraction:
    """Query tokens per step above which re-expanding keys and values costs fewer FLOPs than
    absorbed attention, against a long cached context, at DeepSeek V2's widths with latent
    ``d_L`` (engines/05, section 2: the N_Q where the two chunk paths' FLOPs meet, N_KV -> oo)."""
    import sympy as sp

    from kvlib.core.decode_cost import CHUNK_PATHS, N_Q

    diff = (CHUNK_PATHS["MLA+RoPE absorbed, query latent"].flops
            - CHUNK_PATHS["MLA+RoPE naive, query latent"].flops)
    u, w = sp.Poly(diff, N_Q).all_coeffs()
    at = {by_name(k).symbol: v for k, v in dict(_DS_V2, d_QK=128, d_R=64, d_Lq=1536,
                                                d_L=d_L).items()}
    return Fraction(str(sp.limit((-w / u).subs(at), by_name("N_KV").symbol, sp.oo)))


# Engines track 02 and 03 (notebooks/engines/): the figures each statement gives.
# E02.1: vLLM #21348, Qwen3-235B-A22B on 4 x H100 at TP 4: SGLang 0.5.23 logged 367,404 tokens
# at --mem-fraction-static 0.93, vLLM 178,880; one KV head of 128 per rank, 94 layers, bf16.
_ISSUE_21348 = dict(sglang=367_404, vllm=178_880, f=Fraction(93, 100),
                    cell=dict(N_kv=4, TP=4, d_QK=128, d_V=128, N_L=94, b=2))
# E03.1: the 2 x L40S log's budget line (25.91 GiB, taken exactly), Qwen3-30B-A3B's shape at
# TP 2 (48 layers, 2 of 4 KV heads of 128 per rank), 16-token blocks, requests of 32,768
_L40S_LOG = dict(budget=2591 * 2**30 // 100, N_L=48, N_g=2, d_QK=128, d_V=128, block=16,
                 max_len=32768)


def _sglang_fraction_for(tokens: int) -> Fraction:
    """E02.1: the mem_fraction_static at which SGLang 0.5.23's budget (its KV_BUDGET, linear in
    the fraction with the weights fixed) holds ``tokens`` where it held the issue's at 0.93; the
    memory free before the weights (F_0 there) = the H100's CUDA total less the 0.5 GiB kvlib
    assumes in use."""
    import sympy as sp

    from kvlib.core.numeric import evaluate
    from kvlib.serving.engines import sglang as sg
    from kvlib.serving.engines.vllm.defaults import MEASURED_DEFAULTS
    from kvlib.serving.gpus import get_gpu

    i, s = _ISSUE_21348, sg.SYMBOLS
    cell = evaluate(sg.CELL_MHA, **i["cell"])
    free = get_gpu("H100-80GB").total_memory_bytes - MEASURED_DEFAULTS["in_use_bytes"]
    budget = sg.KV_BUDGET.args[0].subs({s["F0"]: free, s["X"]: 0})  # inside the floor
    taken = sp.solve(sp.Eq(budget.subs(s["f"], i["f"]), i["sglang"] * cell), s["W"])[0]
    f = sp.solve(sp.Eq(budget.subs(s["W"], taken), tokens * cell), s["f"])[0]
    return Fraction(int(f.p), int(f.q))


def _sglang_default_h100_tp4() -> Fraction:
    from kvlib.serving.engines.sglang import sglang_fraction
    from kvlib.serving.gpus import get_gpu

    return sglang_fraction(get_gpu("H100-80GB"), 4, mla=False)[0]


@cache
def _engine70_trtllm():
    """E02.3: TensorRT-LLM's pool for Llama 3.1 70B on 4 x H100 80GB at TP 4, 32K sessions."""
    from kvlib.serving.engines import engine_tokens

    return engine_tokens("llama-3.1-70b", "H100-80GB", "trtllm", tp=4, context=32768)


def _l40s_blocks(b: int = 1) -> int:
    """E03.1: blocks of the budget line at b bytes per element (1: fp8; 2, the log's bf16, is
    the slip, as is fp8 with all 4 KV heads on one rank: the same bytes)."""
    g = _L40S_LOG
    per_block = GQA.bytes_per_token(N_L=g["N_L"], N_g=g["N_g"], d_QK=g["d_QK"], d_V=g["d_V"],
                                    b=b) * g["block"]
    return g["budget"] // per_block


def _qwen32_k_size(page_rows: bool = True) -> int:
    """E03.2: the K buffer SGLang 0.5.23 logs for Qwen3 32B's 17,667 tokens on one GPU
    (64 layers, 8 KV heads of 128, bf16); without the page's extra row, the slip."""
    from kvlib.serving.engines import sglang as sg

    k = sg.k_size_bytes(17_667, 1, 8, 128, 64, 2)
    return k if page_rows else k - sg.k_size_bytes(0, 1, 8, 128, 64, 2)


ANSWERS: dict[str, Exercise] = {
    "01.1": Exercise((
        Part("per_token", "bytes per token", "bytes",
             lambda: MHA.bytes_per_token(**_LLAMA2_7B),
             lambda: {MHA.bytes_per_token(**_LLAMA2_7B) // 2:
                      "counted K or V only: each token caches both, a factor 2",
                      MHA.bytes_per_token(**_LLAMA2_7B) // 64: "counted one layer's K or V only"}),
        Part("per_sequence", "bytes per 4,096-token sequence", "bytes",
             lambda: MHA.bytes_per_sequence(**_LLAMA2_7B, N_KV=4096),
             lambda: {MHA.bytes_per_sequence(**_LLAMA2_7B, N_KV=4096) // 2:
                      "counted K or V only: each token caches both, a factor 2"}),
    )),
    "01.2": Exercise((
        Part("tokens", "tokens that fit", "count",
             lambda: 80 * 10**9 // MHA.bytes_per_token(**_LLAMA3_70B_AS_MHA),
             lambda: {80 * 2**30 // MHA.bytes_per_token(**_LLAMA3_70B_AS_MHA):
                      "80 GB is decimal: 80 x 10^9 bytes, not 80 GiB (80 x 2^30)"}, unit="tokens"),
    )),
    "01.3": Exercise((
        Part("total", "multiply-adds of the whole loop", "count",
             lambda: sum(_section_2_macs()),
             lambda: {sum(_section_2_macs()) // 2: "count both the scores (K) and the "
                      "weighted sum (V): d_QK + d_V per head per cached token",
                      sum(_section_2_macs()[:-1]): "step t attends over t tokens, from step 1 "
                      "to step 32 included"},
             unit="multiply-adds"),
        Part("step_ratio", "step 32's work over step 1's", "ratio",
             lambda: Fraction(_section_2_macs()[-1], _section_2_macs()[0])),
    )),
    "02.1": Exercise((
        Part("per_token", "bytes per token", "bytes",
             lambda: GQA.bytes_per_token(**_MISTRAL_7B),
             lambda: {MHA.bytes_per_token(N_L=32, N_h=32, d_QK=128, d_V=128, b=2):
                      "that is MHA: Mistral 7B has 8 KV heads, not 32"}),
        Part("saving", "times less than its MHA form", "ratio",
             lambda: Fraction(MHA.bytes_per_token(N_L=32, N_h=32, d_QK=128, d_V=128, b=2),
                              GQA.bytes_per_token(**_MISTRAL_7B)),
             lambda: {1 - Fraction(GQA.bytes_per_token(**_MISTRAL_7B), MHA.bytes_per_token(
                 N_L=32, N_h=32, d_QK=128, d_V=128, b=2)):
                 "that is the share saved; the question asks how many times less"}),
    )),
    "02.2": Exercise((
        Part("kv_heads", "the most KV heads that cache less than Llama 3 70B", "count",
             lambda: max(g for g in (1, 2, 4, 8, 16, 32) if GQA.bytes_per_token(
                 N_L=62, N_h=32, N_g=g, d_QK=128, d_V=128, b=2) < GQA.bytes_per_token(
                 N_L=80, N_h=64, N_g=8, d_QK=128, d_V=128, b=2)),
             lambda: {16: "Gemma 3 27B already has 16 KV heads: 496 KiB per token, more "
                          "than Llama's 320 KiB"}, unit="KV heads"),
    )),
    "02.3": Exercise((
        Part("raised", "what kvlib raises", "exception", lambda: "ValueError"),
    )),
    "03.1": Exercise((
        Part("per_token", "bytes per token", "bytes",
             lambda: MLA.bytes_per_token(N_L=61, d_L=512, b=2),
             lambda: {MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2):
                      "the exercise asks for the latent alone, as blog post A counts it"}),
        Part("per_sequence", "bytes per 131,072-token sequence", "bytes",
             lambda: MLA.bytes_per_sequence(N_L=61, d_L=512, b=2, N_KV=_K)),
    )),
    "03.2": Exercise((
        Part("d_L", "the latent width d_L (elements)", "count",
             lambda: GQA.bytes_per_token(N_L=1, N_h=8, N_g=8, d_QK=128, d_V=128, b=1)
             // MLA.bytes_per_token(N_L=1, d_L=1, b=1),
             lambda: {8 * 128: "count keys and values: 8 heads x (128 + 128)"}, unit="elements"),
    )),
    "03.3": Exercise((
        Part("absorbed_flops", "FLOPs per cached token, absorbed", "count",
             lambda: PATHS["MLA absorbed"].context_formula(**_DS_V2), unit="FLOPs"),
        Part("expanded_flops", "FLOPs per cached token, expanded cache", "count",
             lambda: PATHS["MLA expanded cache"].context_formula(**_DS_V2), unit="FLOPs"),
        Part("absorbed_per_byte", "FLOPs per byte read, absorbed", "ratio",
             lambda: Fraction(PATHS["MLA absorbed"].context_intensity_formula(N_h=128, b=2)),
             unit="FLOP/B"),
        Part("expanded_per_byte", "FLOPs per byte read, expanded cache", "ratio",
             lambda: Fraction(PATHS["MLA expanded cache"].context_intensity_formula(N_h=128,
                                                                                    b=2)),
             unit="FLOP/B"),
    )),
    "04.1": Exercise((
        Part("per_token", "bytes per token", "bytes",
             lambda: MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2),
             lambda: {MLA.bytes_per_token(N_L=61, d_L=512, b=2):
                      "the decoupled RoPE key (qk_rope_head_dim) is cached too"}),
        Part("rope_share", "share of the cache that is RoPE keys", "ratio",
             lambda: 1 - Fraction(MLA.bytes_per_token(N_L=61, d_L=512, b=2),
                                  MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2)),
             lambda: {Fraction(64, 512): "a share of the whole: 64 of 512 + 64 elements"}),
    )),
    "04.2": Exercise((
        Part("latent_only", "sequences by blog post A's 60 KiB per token", "count",
             lambda: 100 * 2**30 // MLA.bytes_per_sequence(N_L=60, d_L=512, b=2, N_KV=_K),
             unit="sequences"),
        Part("with_rope_key", "sequences by the real 67.5 KiB per token", "count",
             lambda: 100 * 2**30 // MLA_ROPE.bytes_per_sequence(N_L=60, d_L=512, d_R=64, b=2,
                                                                 N_KV=_K), unit="sequences"),
    )),
    "04.3": Exercise((
        Part("per_token", "bytes per token", "bytes",
             lambda: MLA_ROPE.bytes_per_token(N_L=60, d_L=512, d_R=64, b=1),
             lambda: {MLA_ROPE.bytes_per_token(N_L=60, d_L=512, d_R=64, b=2):
                      "that is bf16: fp8 is 1 byte per element"}),
        Part("per_sequence", "bytes per 131,072-token sequence", "bytes",
             lambda: MLA_ROPE.bytes_per_sequence(N_L=60, d_L=512, d_R=64, b=1, N_KV=_K),
             lambda: {MLA_ROPE.bytes_per_sequence(N_L=60, d_L=512, d_R=64, b=2, N_KV=_K):
                      "that is bf16: fp8 is 1 byte per element"}),
    )),
    "E05.1": Exercise((
        Part("query_tokens", "query tokens per step where re-expanding starts to win", "ratio",
             lambda: _prefill_crossover(256),
             lambda: {_prefill_crossover(512): "that is DeepSeek V2's latent, d_L = 512; the "
                      "exercise halves it"}, unit="query tokens"),
    )),
    "E05.2": Exercise((
        Part("page", "bytes of one layer's page of a 64-token block", "bytes",
             lambda: 64 * MLA_ROPE.bytes_per_token(N_L=1, d_L=512, d_R=64, b=2),
             lambda: {2 * 64 * MLA_ROPE.bytes_per_token(N_L=1, d_L=512, d_R=64, b=2):
                      "an MLA page holds K only: the latent is read as the value too",
                      64 * MLA.bytes_per_token(N_L=1, d_L=512, b=2):
                      "the decoupled RoPE key (qk_rope_head_dim) is in the page too"}),
        Part("block", "bytes of one 64-token block over all 61 layers", "bytes",
             lambda: 64 * MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2),
             lambda: {2 * 64 * MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2):
                      "an MLA page holds K only: the latent is read as the value too"}),
    )),
    "05.1": Exercise((
        Part("per_sequence", "bytes per sequence", "bytes", _gemma_8k,
             lambda: {GQA.bytes_per_sequence(N_L=62, N_h=32, N_g=16, d_QK=128, d_V=128, b=2,
                                             N_KV=8192):
                      "52 of Gemma 3's 62 layers keep only their 1,024-token window"}),
        Part("times_less", "times less than the simplification says", "ratio",
             lambda: Fraction(simplified(load_model("gemma-3-27b")).kv_bytes_per_sequence(
                 8192, 2), _gemma_8k())),
    )),
    "05.2": Exercise((
        Part("per_sequence", "bytes per 32,768-token sequence", "bytes",
             lambda: _qwen_windowed(14),
             lambda: {load_model("qwen2.5-7b").kv_bytes_per_sequence(32768, 2):
                      "that is every layer at full context: the window is on now",
                      _qwen_windowed(0): "not every layer slides: the first max_window_layers "
                                         "(14) keep every token"}),
    )),
    "05.3": Exercise((
        Part("sequences", "whole sequences in 100 GiB", "count",
             lambda: 100 * 2**30 // estimate("deepseek-v3", context=_K,
                                              kv_dtype="fp8").kv_bytes_per_sequence,
             lambda: {100 * 2**30 // estimate("deepseek-v3", context=_K,
                                              kv_dtype="bf16").kv_bytes_per_sequence:
                      "that is a bf16 cache: fp8 is 1 byte per element",
                      100 * 2**30 // MLA.bytes_per_sequence(N_L=61, d_L=512, b=1, N_KV=_K):
                      "the decoupled RoPE key (qk_rope_head_dim 64) is cached too"},
             unit="sequences"),
    )),
    "06.1": Exercise((
        Part("sessions", "sessions of 32,768 tokens per TP group", "count",
             lambda: _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768).max_sequences,
             lambda: {_plan("llama-3.1-70b", "H100-80GB", 8, 8, 32000).max_sequences:
                      "32K tokens is 32,768 (2^15), not 32,000",
                      _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768,
                            memory="datasheet").max_sequences:
                      "vLLM divides the memory CUDA reports (79.22 GiB for an H100 80GB), not "
                      "the datasheet's 80 GB",
                      _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768, **V033).max_sequences:
                      "that is an older vLLM's budget (engines/01, section 2); this lesson holds "
                      "back the assumed 9.125 GiB of section 3"},
             unit="sessions"),
    )),
    "06.2": Exercise((
        Part("per_token", "bytes per token on each GPU", "bytes",
             lambda: _plan("llama-3.1-70b", "H200", 4, 4, _K,
                           kv_dtype="int4_per_token_head").kv_bytes_per_sequence_per_gpu // _K,
             lambda: {_plan("llama-3.1-70b", "H200", 4, 4, _K,
                            kv_dtype="int4").kv_bytes_per_sequence_per_gpu // _K:
                      "the scales are cached too: one fp32 scale per token and KV head, for K "
                      "and for V",
                      _plan("llama-3.1-70b", "H200", 1, 1, _K,
                            kv_dtype="int4_per_token_head").kv_bytes_per_sequence_per_gpu // _K:
                      "that is all 8 KV heads: at TP=4 each GPU holds 2"}),
        Part("sessions", "sessions of 131,072 tokens", "count",
             lambda: _plan("llama-3.1-70b", "H200", 4, 4, _K,
                           kv_dtype="int4_per_token_head").max_sequences,
             lambda: {_plan("llama-3.1-70b", "H200", 4, 4, _K, kv_dtype="int4").max_sequences:
                      "the scales are cached too: one fp32 scale per token and KV head"},
             unit="sessions"),
    )),
    "06.3": Exercise((
        Part("sessions", "sessions of 8,192 tokens", "count",
             lambda: _plan("llama-3.1-8b", "L40S", 1, 1, 8192, kv_dtype="fp8",
                           weight_dtype="bf16").max_sequences,
             lambda: {_plan("llama-3.1-8b", "L40S", 1, 1, 8192, **V033, kv_dtype="fp8",
                            weight_dtype="bf16").max_sequences:
                      "that is an older vLLM's budget (engines/01, section 2); this lesson holds "
                      "back the assumed 9.125 GiB of section 3"},
             unit="sessions"),
        Part("step_seconds", "decode-step lower bound at that batch", "seconds",
             lambda: Fraction(_plan("llama-3.1-8b", "L40S", 1, 1, 8192, kv_dtype="fp8",
                                    weight_dtype="bf16").decode_step_seconds_lower_bound),
             lambda: {Fraction(_plan("llama-3.1-8b", "L40S", 1, 1, 8192, kv_dtype="fp8",
                                     weight_dtype="bf16").decode_step_seconds_all_weights):
                      "that reads every weight: the input embedding is a lookup of one row "
                      "per token, not read whole (notebook 06, section 8)"}),
    )),
    "07.1": Exercise((
        Part("share", "share of the sequence that is Mamba2 state", "ratio",
             lambda: Fraction(_nemotron_8k().state_bytes_per_sequence,
                              _nemotron_8k().total_bytes_per_sequence),
             lambda: {_nemotron_bf16_share(): "Nemotron-H's SSM state is float32 in vLLM "
                                              "(4 bytes; its convolution state is bf16)"}),
    )),
    "07.2": Exercise((
        Part("state", "bytes of state per sequence", "bytes",
             lambda: _gated_deltanet_state(b_s=4),
             lambda: {_gated_deltanet_state(b_s=2):
                      "that is the bf16 state: the recurrent state is float32 (4 bytes) here",
                      _gated_deltanet_state(b_s=4, b_c=4):
                      "the flag changes the recurrent state only: the convolution state stays "
                      "bf16"}),
    )),
    "07.3": Exercise((
        Part("times_less", "times less per sequence at 1M tokens", "ratio",
             lambda: Fraction(_at_1m("llama-3.1-70b"), _at_1m("qwen3-next-80b-a3b"))),
    )),
    "08.1": Exercise((
        Part("per_token", "bytes per token of one m = 4 layer past its window, indexer key "
             "included", "bytes",
             lambda: _v4_limit("deepseek-v4-flash", 4) + _v4_limit("deepseek-v4-flash", 4,
                                                                   "Indexer"),
             lambda: {_v4_limit("deepseek-v4-flash", 4):
                      "that is the entry alone: an m = 4 layer also keeps an indexer key per 4 "
                      "tokens",
                      _v4_limit("deepseek-v4-flash", 4) + _indexer_key("deepseek-v4-flash"):
                      "one indexer key per 4 tokens, not per token: the keys are compressed too",
                      _v4_bf16_slip("deepseek-v4-flash", 4):
                      "that is a bf16 entry (512 x 2 B); vLLM stores 584 B"}),
    )),
    "08.2": Exercise((
        Part("keys", "bytes of indexer keys per sequence", "bytes",
             lambda: _indexer_keys("deepseek-v4-pro", _K // 2),
             lambda: {_indexer_keys("deepseek-v4-pro", _K // 2, per=1):
                      "one key per 4 tokens, not per token: the keys are compressed too",
                      _indexer_keys("deepseek-v4-pro", _K // 2, scale=False):
                      "each key also keeps one fp32 scale (4 B) per 128 values: 132 B"}),
        Part("share", "share of the sequence that is indexer keys", "ratio",
             lambda: Fraction(_indexer_keys("deepseek-v4-pro", _K // 2),
                              load_model("deepseek-v4-pro").total_bytes_per_sequence(_K // 2, 1))),
    )),
    "08.3": Exercise((
        Part("per_sequence", "bytes of one 16K sequence, sharing as shipped", "bytes",
             lambda: _gemma3n(16384),
             lambda: {_gemma3n(16384, shared=False):
                      "that is without sharing: the last 15 layers store nothing",
                      _gemma3n_no_window(16384):
                      "the sliding layers keep only their last 512 tokens"}),
    )),
    "E04.1": Exercise((
        Part("key", "bytes of one MXFP4 indexer key", "bytes",
             lambda: _mxfp4_key("deepseek-v4-flash"),
             lambda: {_mxfp4_key("deepseek-v4-flash", scales=False):
                      "MXFP4 also keeps one UE8M0 scale byte per 32 values",
                      _indexer_key("deepseek-v4-flash"):
                      "that is the fp8 key (132 B); MXFP4 packs two values a byte"}),
        Part("flash_keys", "bytes of MXFP4 indexer keys in one 1M-token V4-Flash sequence",
             "bytes",
             lambda: _keys_at("deepseek-v4-flash", 2**20, _mxfp4_key("deepseek-v4-flash")),
             lambda: {_keys_at("deepseek-v4-flash", 2**20, _indexer_key("deepseek-v4-flash")):
                      "that is the fp8 cache (132 B a key)",
                      _keys_at("deepseek-v4-flash", 2**20, _mxfp4_key("deepseek-v4-flash"), 1):
                      "one key per 4 tokens, not per token: the keys are compressed too"}),
    )),
    "E04.2": Exercise((
        Part("entries", "584-byte entries in one page of m = 4 entries", "count",
             lambda: _v4_page("deepseek-v4-pro", 4).block_size // 4,
             lambda: {_v4_page("deepseek-v4-pro", 4).block_size:
                      "a 256-token block holds one entry per m = 4 tokens"}),
        Part("page", "bytes of that page, padded", "bytes",
             lambda: _v4_page("deepseek-v4-pro", 4).page_bytes,
             lambda: {_v4_page("deepseek-v4-pro", 4).block_size // 4
                      * _v4_page("deepseek-v4-pro", 4).entry_bytes:
                      "that is before the padding: vLLM rounds the page up to a multiple of 576 "
                      "bytes"}),
    )),
    "E06.1": Exercise((
        Part("block_size", "block size vLLM 0.34.0 chooses", "count",
             lambda: _nemotron_layout().block_size,
             lambda: {-(-_nemotron_state_page() // (_nemotron_layout().page_bytes
                                                    // _nemotron_layout().block_size)):
                      "that is the state page over the bytes per token, before vLLM rounds it up "
                      "to a multiple of 64",
                      _nemotron_layout("0.33.0", prefix_caching=False).block_size:
                      "that is a multiple of 16, vLLM 0.33.0's without prefix caching; 0.34.0 "
                      "starts from its default block of 64"},
             unit="tokens"),
        Part("padding", "bytes of padding per state page", "bytes",
             lambda: _nemotron_layout().page_bytes - _nemotron_state_page()),
    )),
    "E06.2": Exercise((
        Part("per_gpu", "bytes of Mamba2 state per sequence on each GPU", "bytes",
             lambda: _nemotron_state_per_gpu(8),
             lambda: {_nemotron_state_per_gpu(8, ssm_bytes=2):
                      "that is a bf16 SSM state: vLLM keeps Nemotron-H's in float32 (4 bytes)",
                      _nemotron_state_per_gpu(1):
                      "that is the whole state: TP = 8 divides the heads, groups and channels"}),
    )),
    "E02.1": Exercise((
        Part("fraction", "mem_fraction_static at which SGLang holds vLLM's 178,880 tokens",
             "ratio", lambda: _sglang_fraction_for(_ISSUE_21348["vllm"]),
             lambda: {_ISSUE_21348["f"] * Fraction(_ISSUE_21348["vllm"], _ISSUE_21348["sglang"]):
                      "f multiplies the memory free before the weights, not the cache: the "
                      "weights stay whatever it is, so each 0.01 off it takes 0.01 of that "
                      "memory from the cache",
                      _sglang_default_h100_tp4():
                      "that is SGLang's default on this setup, at which it holds fewer tokens "
                      "than vLLM; solve the budget for 178,880 tokens"}),
    )),
    "E02.2": Exercise((
        Part("full_tokens", "tokens of the full-attention pool", "count",
             lambda: _engine("gpt-oss-20b", "H100-80GB", "sglang").tokens,
             lambda: {_engine("gpt-oss-20b", "H100-80GB", "sglang").kv_budget
                      // _engine("gpt-oss-20b", "H100-80GB", "sglang").cell:
                      "the sliding layers have a pool of their own: each full-pool token also "
                      "pays for 0.8 of a window-pool token (c_full + 0.8 c_swa)",
                      _engine("gpt-oss-20b", "H100-80GB", "sglang").kv_budget
                      // (2 * _engine("gpt-oss-20b", "H100-80GB", "sglang").cell):
                      "swa_full_tokens_ratio is 0.8: the window pool holds 0.8 of the full "
                      "pool's tokens, not as many"},
             unit="tokens"),
        Part("swa_tokens", "tokens of the sliding-window pool", "count",
             lambda: _engine("gpt-oss-20b", "H100-80GB", "sglang").swa_tokens,
             lambda: {_engine("gpt-oss-20b", "H100-80GB", "sglang").tokens:
                      "the window pool holds int(0.8 x the full pool's tokens)"},
             unit="tokens"),
    )),
    "E02.3": Exercise((
        Part("tokens", "tokens TensorRT-LLM allocates per GPU", "count",
             lambda: _engine70_trtllm().tokens,
             lambda: {_engine70_trtllm().kv_budget // _engine70_trtllm().cell:
                      "TensorRT-LLM allocates whole blocks of 32 and rounds the token count up"},
             unit="tokens"),
        Part("sessions", "sessions of 32,768 tokens", "count",
             lambda: _engine70_trtllm().sessions, unit="sessions"),
    )),
    "E03.1": Exercise((
        Part("tokens", "tokens GPU KV cache size prints", "count",
             lambda: _l40s_blocks() * _L40S_LOG["block"],
             lambda: {_l40s_blocks(b=2) * _L40S_LOG["block"]:
                      "that is the bf16 cache of the log (or all 4 KV heads on one rank): fp8 "
                      "stores 1 byte per element, and at TP 2 each rank holds 2 of the 4 heads"},
             unit="tokens"),
        Part("concurrency", "maximum concurrency for 32,768 tokens", "ratio",
             lambda: Fraction(_l40s_blocks(), _L40S_LOG["max_len"] // _L40S_LOG["block"]),
             lambda: {Fraction(_l40s_blocks(b=2), _L40S_LOG["max_len"] // _L40S_LOG["block"]):
                      "that is the bf16 cache of the log: fp8 stores 1 byte per element"}),
    )),
    "E03.2": Exercise((
        Part("k_size", "bytes of the K buffer the line prints", "bytes", _qwen32_k_size,
             lambda: {_qwen32_k_size(page_rows=False):
                      "K holds #tokens + one page of rows (memory_pool.py:2574-2578)"}),
    )),
    # --- E01 begin: engines/01 (vLLM's budget and blocks); E01.1 and E01.3 with vLLM 0.33.0's rule
    "E01.1": Exercise((
        Part("plain_tp", "sessions with plain TP", "count",
             lambda: _plan("deepseek-v2", "H200", 8, 8, 32768, **V033,
                           weight_dtype="bf16").max_sequences,
             lambda: {_plan("deepseek-v2", "H200", 8, 8, 32768, weight_dtype="bf16").max_sequences:
                      "that is vLLM 0.34.0's budget: the exercise asks for 0.33.0's"},
             unit="sessions"),
        Part("with_dcp", "sessions with decode_context_parallel_size 8", "count",
             lambda: _plan("deepseek-v2", "H200", 8, 8, 32768, **V033, weight_dtype="bf16",
                           dcp=8).max_sequences, unit="sessions"),
    )),
    "E01.2": Exercise((
        Part("slots", "token slots budgeted per request for the sliding layer", "count",
             lambda: _sliding_slots(2 * 8192),
             lambda: {_sliding_slots(8192): "with async scheduling two batches are in flight: "
                                            "2 x 8,192 tokens",
                      _sliding_slots(2 * 8192) - 64: "plus one block: the window need not start "
                                                     "on a block boundary"},
             unit="slots"),
    )),
    "E01.3": Exercise((
        Part("sessions", "sessions of 32,768 tokens per TP group", "count",
             lambda: _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768, **V033).max_sequences,
             lambda: {_plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768).max_sequences:
                      "that is vLLM 0.34.0's budget (notebook 06, exercise 1): 0.33.0 takes "
                      "0.92 of the CUDA total less 4 GiB",
                      _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768, **V033,
                            memory="datasheet").max_sequences:
                      "vLLM takes its share of the memory CUDA reports (79.22 GiB for an "
                      "H100 80GB), not of the datasheet's 80 GB"},
             unit="sessions"),
    )),
    # --- E01 end
}
