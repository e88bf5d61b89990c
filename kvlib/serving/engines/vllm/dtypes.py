"""vLLM's names for KV-cache dtypes, and the dtype it really stores where the two differ."""

from __future__ import annotations

from kvlib.serving.kv import KV_SCALES, kv_format_parts

__all__ = ["vllm_kv_cache_dtype", "stored_kv_dtype"]

_VLLM_NAMES = {("bf16", None): "bfloat16", ("fp16", None): "float16", ("fp32", None): "float32",
               ("fp8", None): "fp8", ("fp8", "per-token-head"): "fp8_per_token_head",
               ("int8", "per-token-head"): "int8_per_token_head",
               ("int4", "per-token-head"): "int4_per_token_head",
               ("int4", "per-16-fp8"): "nvfp4"}


def vllm_kv_cache_dtype(kv_dtype: str, scales=None) -> str | None:
    """vLLM's ``kv_cache_dtype`` for kvlib's element dtype and scales, or None where vLLM has
    no such format (plain int8 and int4, or scales of another shape)."""
    dtype, scales = kv_format_parts(kv_dtype, scales)
    name = scales.name if scales is not None else None
    if scales is not None and KV_SCALES.get(name) != scales:
        return None
    return _VLLM_NAMES.get((dtype, name))


def stored_kv_dtype(config: dict | None, kv_dtype: str) -> tuple[str, str | None]:
    """The dtype vLLM really stores when asked for ``kv_dtype``, and why, where they differ.

    Falcon: vLLM (0.33.0 and 0.34.0) builds a rotary or ALiBi Falcon's ``Attention`` without
    ``cache_config`` (model_executor/models/falcon.py:173-195 in 0.34.0), so the layer's
    ``kv_cache_dtype`` is "auto" (model_executor/layers/attention/attention.py:291-295) and
    ``--kv-cache-dtype`` is ignored: the cache stays in the model dtype. FalconConfig makes
    ``rotary`` = not ``alibi``, so this is every Falcon. Found by ``make oracle``."""
    if (config or {}).get("model_type") in ("falcon", "RefinedWeb", "RefinedWebModel") \
            and kv_dtype not in ("bf16", "fp16"):
        return "bf16", (f"vLLM ignores kv_cache_dtype {kv_dtype} for Falcon: its attention is "
                        "built without cache_config (model_executor/models/falcon.py:173-195),"
                        " so the cache stays bf16")
    return kv_dtype, None
