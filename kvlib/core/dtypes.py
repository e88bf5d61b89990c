"""Bytes per cached element for the KV-cache dtypes servers offer (vLLM's ``kv_cache_dtype``)."""

from __future__ import annotations

from fractions import Fraction

__all__ = ["DTYPE_BYTES", "VLLM_KV_CACHE_DTYPES", "VLLM_KV_UNPLANNED", "bytes_per_element",
           "kv_dtype_name"]

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


# vLLM 0.33.0's kv_cache_dtype values (CacheDType, vllm/config/cache.py:44-67) -> kvlib's name,
# or why kvlib does not plan it. Storage: STR_DTYPE_TO_TORCH_DTYPE, vllm/utils/torch_utils.py:40-66.
VLLM_KV_CACHE_DTYPES: dict[str, str] = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
    # one byte per element (uint8); per-tensor k/v scales are layer parameters, not in the
    # page (vllm/model_executor/layers/quantization/kv_cache.py:63-73)
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8",
}
VLLM_KV_UNPLANNED: dict[str, str] = {
    "auto": "'the model's dtype' (give that dtype: bf16 or fp16)",
    "nvfp4": "4-bit values plus one fp8 scale per 16, h/2 + h/16 bytes per head and token "
             "(FlashInfer only, vllm/v1/attention/backends/flashinfer.py:558-570)",
    "nvfp4_4over6": "the nvfp4 layout (vllm/config/cache.py:245-246)",
    "fp8_ds_mla": "a 656-byte row per token for sparse MLA (kvlib uses it itself on the GPUs "
                  "where vLLM does: give fp8)",
    "nvfp4_ds_mla": "a 352-byte row per token for sparse MLA",
    "int8_per_token_head": "one byte per element plus two fp32 scales per token and head",
    "fp8_per_token_head": "one byte per element plus two fp32 scales per token and head",
    "int4_per_token_head": "half a byte per element plus two fp32 scales per token and head",
}


def kv_dtype_name(text: str) -> str:
    """kvlib's name for a KV dtype as people type it: kvlib's names in any case
    (``FP8``, ``BF16``) and vLLM's spellings (``fp8_e4m3``, ``bfloat16``); ValueError naming
    the value, and saying why for a vLLM dtype kvlib does not plan."""
    key = str(text).strip().lower()
    if key in DTYPE_BYTES:
        return key
    if key in VLLM_KV_CACHE_DTYPES:
        return VLLM_KV_CACHE_DTYPES[key]
    if key in VLLM_KV_UNPLANNED:
        raise ValueError(f"kv dtype {text!r} in vLLM: {VLLM_KV_UNPLANNED[key]}; kvlib plans "
                         f"{', '.join(DTYPE_BYTES)}")
    if key.startswith(("turboquant", "octave", "ultraquant")):
        raise ValueError(f"kv dtype {text!r}: vLLM's packed format of its own slot size; kvlib "
                         f"plans {', '.join(DTYPE_BYTES)}")
    raise ValueError(f"kv dtype must be one of {', '.join(DTYPE_BYTES)} (or vLLM's "
                     f"{', '.join(VLLM_KV_CACHE_DTYPES)}), got {text!r}")
