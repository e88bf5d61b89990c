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


# Notebook 06's exercises are worked by hand with vLLM 0.33.0's profiled budget, ceil(0.92 M) - W -
# 4 GiB (section 3's rule); the default release, 0.34.0, sizes the cache from memory it measures
# after warmup, which a reader cannot work out by hand without kvlib's assumed terms.
V033 = {"vllm": "0.33.0"}


@cache
def _plan(model: str, gpu: str, gpus: int, tp: int, context: int, **options):
    return Deployment(load_model(model), gpu, gpus, tp, **options).plan(context)


@cache
def _engine(model: str, gpu: str, engine: str, **options):
    from kvlib.serving.engines import engine_tokens

    return engine_tokens(model, gpu, engine, context=8192, **options)


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
    if not scale:  # the slip: INDEXER's K^I row alone, without the s^I scales
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
             lambda: _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768, **V033).max_sequences,
             lambda: {_plan("llama-3.1-70b", "H100-80GB", 8, 8, 32000, **V033).max_sequences:
                      "32K tokens is 32,768 (2^15), not 32,000",
                      _plan("llama-3.1-70b", "H100-80GB", 8, 8, 32768, **V033,
                            memory="datasheet").max_sequences:
                      "vLLM takes its share of the memory CUDA reports (79.22 GiB for an "
                      "H100 80GB), not of the datasheet's 80 GB"},
             unit="sessions"),
    )),
    "06.2": Exercise((
        Part("plain_tp", "sessions with plain TP", "count",
             lambda: _plan("deepseek-v2", "H200", 8, 8, 32768, **V033,
                           weight_dtype="bf16").max_sequences, unit="sessions"),
        Part("with_dcp", "sessions with decode_context_parallel_size 8", "count",
             lambda: _plan("deepseek-v2", "H200", 8, 8, 32768, **V033, weight_dtype="bf16",
                           dcp=8).max_sequences, unit="sessions"),
    )),
    "06.3": Exercise((
        Part("sessions", "sessions of 8,192 tokens", "count",
             lambda: _plan("llama-3.1-8b", "L40S", 1, 1, 8192, **V033, kv_dtype="fp8",
                           weight_dtype="bf16").max_sequences, unit="sessions"),
        Part("step_seconds", "decode-step lower bound at that batch", "seconds",
             lambda: Fraction(_plan("llama-3.1-8b", "L40S", 1, 1, 8192, **V033, kv_dtype="fp8",
                                    weight_dtype="bf16").decode_step_seconds_lower_bound),
             lambda: {Fraction(_plan("llama-3.1-8b", "L40S", 1, 1, 8192, **V033, kv_dtype="fp8",
                                     weight_dtype="bf16").decode_step_seconds_all_weights):
                      "that reads every weight: the input embedding is a lookup of one row "
                      "per token, not read whole (notebook 06, section 10)"}),
    )),
    "06.4": Exercise((
        Part("tokens", "KV tokens SGLang allocates", "count",
             lambda: _engine("qwen3-32b", "H100-80GB", "sglang").tokens,
             lambda: {_engine("qwen3-32b", "H100-80GB", "trtllm").tokens:
                      "that is TensorRT-LLM's: it keeps 0.9 of what is free after the weights; "
                      "SGLang's fraction applies to what was free before them",
                      _engine("qwen3-32b", "H100-80GB", "vllm").tokens:
                      "that is vLLM 0.34.0's, measured after warmup",
                      _engine("qwen3-32b", "H100-80GB", "sglang", in_use_bytes=0).tokens:
                      "0.5 GiB was in use before the weights: the fraction applies to what is "
                      "free, not to the CUDA total"},
             unit="tokens"),
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
}
