"""vLLM's names for KV-cache dtypes, and the dtype it really stores where the two differ."""

from __future__ import annotations

from dataclasses import dataclass

from kvlib.core.dtypes import auto_kv_dtype
from kvlib.models.quantization import kv_cache_request
from kvlib.serving.kv import KV_SCALES, kv_format_parts

__all__ = ["vllm_kv_cache_dtype", "stored_kv_dtype", "AutoKVDtype", "resolve_auto"]

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


@dataclass(frozen=True)
class AutoKVDtype:
    """What vLLM 0.34.0's kv_cache_dtype "auto" becomes for one checkpoint, and why.

    kv_cache_dtype: vLLM's name: the checkpoint's request ("fp8_e4m3", "nvfp4", "fp8"), else
    "auto" (the model's dtype). kv_dtype: the name to plan with: that request, else kvlib's
    element dtype of the model (``torch_dtype``: "bf16", "fp16", "fp32"). from_checkpoint: the
    checkpoint chose it. why: one line saying which dtype and why, for the plan to print."""

    kv_cache_dtype: str
    kv_dtype: str
    from_checkpoint: bool
    why: str


def resolve_auto(config: dict | None) -> AutoKVDtype:
    """vLLM 0.34.0's kv_cache_dtype "auto" for ``config`` (a config.json as a dict, with an
    ``hf_quant_config.json`` beside it already merged in as ``quantization_config``, as
    :func:`kvlib.models.readers.fields.load_config` does): the KV-cache dtype the checkpoint
    asks for (:func:`kvlib.models.quantization.kv_cache_request`), else the model's dtype.

    >>> resolve_auto({"quantization_config": {"quant_method": "modelopt",
    ...     "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}).kv_dtype
    'fp8_e4m3'
    """
    request = kv_cache_request(config or {}) if config else None
    if request is not None:
        return AutoKVDtype(request.kv_cache_dtype, request.kv_cache_dtype, True,
                           f"kv_cache_dtype auto is {request.kv_cache_dtype}: the checkpoint asks "
                           f"for it ({request.key}={request.value!r}); {request.rule}")
    dtype = auto_kv_dtype(config)
    return AutoKVDtype("auto", dtype, False,
                       f"kv_cache_dtype auto is the model's dtype, {dtype} (torch_dtype; bf16 "
                       "where the config names none); the checkpoint asks for no KV-cache dtype")
