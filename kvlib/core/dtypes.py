"""Bytes per cached element for the KV-cache dtypes servers offer (vLLM's ``kv_cache_dtype``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kvlib.core import validate

__all__ = ["DTYPE_BYTES", "KVFormat", "KVScales", "KV_SCALES", "VLLM_EXACT_KV_DTYPES",
           "VLLM_KV_CACHE_DTYPES", "VLLM_KV_FORMATS", "VLLM_KV_UNPLANNED", "auto_kv_dtype",
           "bytes_per_element", "kv_dtype_name", "kv_format"]

DTYPE_BYTES: dict[str, Fraction] = {
    "fp32": Fraction(4),
    "bf16": Fraction(2),
    "fp16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "int4": Fraction(1, 2),
}


def bytes_per_element(dtype: str) -> Fraction:
    """Bytes per element of ``dtype``; ValueError listing the known names otherwise."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(
            f"kv dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}"
        ) from None


@dataclass(frozen=True)
class KVScales:
    """Scales a quantized KV format stores beside the cache.

    scale_bytes: bytes of one scale. elements: cached elements one scale covers;
    None means one scale per cached vector per token (per KV head, for K and for
    V; for MLA, one for the latent and one for the RoPE key).
    """

    name: str
    scale_bytes: Fraction
    elements: int | None = None

    def __post_init__(self):
        validate.exact_fraction(f"{self.name} scale bytes", self.scale_bytes)
        if self.elements is not None:
            validate.positive_int(f"{self.name} elements per scale", self.elements)


KV_SCALES: dict[str, KVScales] = {
    # vLLM kv_cache_dtype int8_per_token_head / fp8_per_token_head / int4_per_token_head: one
    # fp32 scale per token per KV head, for K and V, inline after each head's data
    # (vllm/v1/attention/backends/triton_attn.py:307-319 in 0.34.0); int4's zero point rides in
    # the scale's low mantissa bits (vllm/v1/attention/ops/int4_per_token_head.py:158-162).
    "per-token-head": KVScales("per-token-head", Fraction(4)),
    # vLLM kv_cache_dtype nvfp4: one fp8 scale per 16 elements, h/2 + h/16 bytes per head
    # (nvfp4_kv_cache_full_dim, vllm/utils/torch_utils.py:562-564 in 0.34.0).
    "per-16-fp8": KVScales("per-16-fp8", Fraction(1), 16),
}


# vLLM 0.34.0's kv_cache_dtype values (CacheDType, vllm/config/cache.py:44-67; 0.33.0's are
# the same names) that kvlib plans, each as kvlib's bytes per element plus the scales stored
# beside the cache (a :data:`KV_SCALES` name), and how exact that is.
# Storage: STR_DTYPE_TO_TORCH_DTYPE, vllm/utils/torch_utils.py:40-66 (0.34.0).


@dataclass(frozen=True)
class KVFormat:
    """A KV-cache format as a server names it, in kvlib's terms.

    name: the server's (vLLM's) ``kv_cache_dtype``, or kvlib's own dtype name.
    dtype: kvlib's element dtype (a key of :data:`DTYPE_BYTES`). scales: a
    :data:`KV_SCALES` name, or None. note: how the format maps to kvlib's
    model, where that is not simply "b bytes per element"; "" where it is exact.
    """

    name: str
    dtype: str
    scales: str | None = None
    note: str = ""


_PER_TOKEN_HEAD = ("one fp32 scale per token per KV head, for K and for V, stored inline after "
                   "each head's data by the Triton backend (vllm/v1/attention/backends/"
                   "triton_attn.py:307-319, vLLM 0.34.0)")
VLLM_KV_FORMATS: dict[str, KVFormat] = {
    "auto": KVFormat("auto", "bf16", None, "auto stores the model's dtype: kvlib takes the "
                     "config's torch_dtype (bf16 where it says none)"),
    "bfloat16": KVFormat("bfloat16", "bf16"),
    "float16": KVFormat("float16", "fp16"),
    "half": KVFormat("half", "fp16"),
    "float32": KVFormat("float32", "fp32"),
    "float": KVFormat("float", "fp32"),
    # one byte per element (uint8); per-tensor k/v scales are layer parameters, not in the
    # page (vllm/model_executor/layers/quantization/kv_cache.py:63-73)
    "fp8": KVFormat("fp8", "fp8", None, "fp8 is fp8_e4m3 (vllm/config/cache.py:250): one byte "
                    "per element, per-tensor scales held by the layer, not in the page"),
    "fp8_e4m3": KVFormat("fp8_e4m3", "fp8"),
    "fp8_e5m2": KVFormat("fp8_e5m2", "fp8"),
    "fp8_inc": KVFormat("fp8_inc", "fp8", None, "fp8_inc is Intel Gaudi's fp8 (e4m3): one byte "
                        "per element"),
    "int8_per_token_head": KVFormat("int8_per_token_head", "int8", "per-token-head",
                                    "int8_per_token_head: one byte per element plus "
                                    + _PER_TOKEN_HEAD),
    "fp8_per_token_head": KVFormat("fp8_per_token_head", "fp8", "per-token-head",
                                   "fp8_per_token_head: one byte per element plus "
                                   + _PER_TOKEN_HEAD),
    "int4_per_token_head": KVFormat(
        "int4_per_token_head", "int4", "per-token-head",
        "int4_per_token_head: half a byte per element (two per byte, after a randomized "
        "Hadamard rotation of K and V) plus " + _PER_TOKEN_HEAD + "; the 4-bit zero point "
        "rides in the low mantissa bits of that scale, so it costs no byte "
        "(vllm/v1/attention/ops/int4_per_token_head.py:3-10, 158-162)"),
    "nvfp4": KVFormat("nvfp4", "int4", "per-16-fp8",
                      "nvfp4: FP4 (E2M1) values at half a byte per element plus one 1-byte fp8 "
                      "scale per 16 elements (1/16 byte per element); kvlib counts both, 9/16 "
                      "byte per element, h/2 + h/16 bytes per head and token "
                      "(nvfp4_kv_cache_full_dim, vllm/utils/torch_utils.py:562-564; FlashInfer "
                      "only, vllm/v1/attention/backends/flashinfer.py:558-570)"),
    "nvfp4_4over6": KVFormat("nvfp4_4over6", "int4", "per-16-fp8",
                             "nvfp4_4over6: the nvfp4 layout with another choice of scale "
                             "(vllm/config/cache.py:255-256), counted as nvfp4: values at half "
                             "a byte and one 1-byte scale per 16 elements, 9/16 byte per "
                             "element"),
}
# kvlib's old names stay: bf16, fp16, fp32, fp8 as vLLM's; int8 and int4 are the cache at
# 1 and 1/2 byte per element with no scales, which vLLM has no kv_cache_dtype for.
VLLM_KV_CACHE_DTYPES: dict[str, str] = {k: f.dtype for k, f in VLLM_KV_FORMATS.items()}
# The KV dtypes the explorers offer (notebooks 05 and 06, the book's pages): vLLM's names for
# the formats kvlib models exactly as b bytes per element, nothing beside them in the page and
# no choice left to the config ("auto"), each with the value the explorer keeps for it:
# kvlib's name where one names the same format (bf16 stays the default, as before), else
# vLLM's. Formats with scales (int4_per_token_head, nvfp4) are planned by kvlib plan.
VLLM_EXACT_KV_DTYPES: dict[str, str] = {"bfloat16": "bf16", "float16": "fp16",
                                        "float32": "fp32", "fp8": "fp8",
                                        "fp8_e5m2": "fp8_e5m2"}
VLLM_KV_UNPLANNED: dict[str, str] = {
    "fp8_ds_mla": "a 656-byte row per token for sparse MLA (kvlib uses it itself on the GPUs "
                  "where vLLM does: give fp8)",
    "nvfp4_ds_mla": "a 352-byte row per token for sparse MLA",
}


def kv_format(text: str) -> KVFormat:
    """The format ``text`` names: kvlib's dtype names in any case (``FP8``, ``BF16``, ``int4``)
    or vLLM's ``kv_cache_dtype`` names (``fp8_e4m3``, ``bfloat16``, ``int4_per_token_head``,
    ``nvfp4``, ``auto``); ValueError naming the value, and saying why for a vLLM dtype kvlib
    does not plan (sparse MLA's rows, the turboquant/octave/ultraquant packings)."""
    key = str(text).strip().lower()
    if key in VLLM_KV_FORMATS:
        return VLLM_KV_FORMATS[key]
    if key in DTYPE_BYTES:
        return KVFormat(key, key)
    names = f"{', '.join(DTYPE_BYTES)} or vLLM's {', '.join(VLLM_KV_FORMATS)}"
    if key in VLLM_KV_UNPLANNED:
        raise ValueError(f"kv dtype {text!r} in vLLM: {VLLM_KV_UNPLANNED[key]}; kvlib plans "
                         f"{names}")
    if key.startswith(("turboquant", "octave", "ultraquant")):
        raise ValueError(f"kv dtype {text!r}: vLLM's packed format of its own slot size; kvlib "
                         f"plans {names}")
    raise ValueError(f"kv dtype must be one of {names}, got {text!r}")


def auto_kv_dtype(config: dict | None) -> str:
    """kvlib's name for the dtype a config stores (``torch_dtype`` / ``dtype``, also in its
    ``text_config``): what vLLM's kv_cache_dtype "auto" caches; bf16 where it says none."""
    for c in (config or {}, (config or {}).get("text_config") or {}):
        name = c.get("torch_dtype") or c.get("dtype")
        if name in ("bfloat16", "float16", "float32"):
            return VLLM_KV_FORMATS[name].dtype
    return "bf16"


def kv_dtype_name(text: str) -> str:
    """kvlib's element dtype for a KV dtype as people type it (:func:`kv_format`): ``FP8`` ->
    fp8, ``bfloat16`` -> bf16; ValueError for a format that stores scales
    (``int4_per_token_head``, ``nvfp4``), whose bytes only :func:`kv_format` (and
    ``kvlib plan``) count whole."""
    fmt = kv_format(text)
    if fmt.scales is not None:
        raise ValueError(f"kv dtype {fmt.name!r} stores scales beside its {fmt.dtype} elements "
                         f"({fmt.note}); kvlib plan counts them, here give {fmt.dtype} for the "
                         "elements alone")
    return fmt.dtype
