"""Shared by the hybrid readers: element sizes of states and layer keys for state layers.

vLLM keeps states in ``mamba_cache_dtype`` (conv) and ``mamba_ssm_cache_dtype``
(SSM / recurrent), both "auto" by default, which resolves to the model dtype,
the SSM state following the conv state (``MambaStateDtypeCalculator``, vllm 0.33.0
model_executor/layers/mamba/mamba_utils.py:97-110). A family whose vLLM config
overrides that says so in its reader.
"""

from __future__ import annotations

from kvlib.core.dtypes import bytes_per_element
from kvlib.models.readers.fields import Fields, describe

__all__ = ["TORCH_NAMES", "model_dtype_bytes", "dtype_bytes"]

# torch dtype names as config.json writes them -> kvlib's dtype names (core.dtypes)
TORCH_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16",
               "float": "fp32", "bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


def dtype_bytes(fields: Fields, key: str, value) -> int:
    """Bytes per element of a dtype name (:data:`kvlib.core.dtypes.DTYPE_BYTES`), or
    ValueError naming the field."""
    name = TORCH_NAMES.get(str(value).removeprefix("torch."))
    if name is None:
        raise ValueError(f"{fields.path(key)} must be one of {', '.join(TORCH_NAMES)}, "
                         f"got {describe(value)}")
    return int(bytes_per_element(name))


def model_dtype_bytes(c: Fields, notes: list[str]) -> int:
    """The model dtype's bytes (``torch_dtype`` or ``dtype``, in ``c`` or the wrapper around
    it), bf16 when the config gives none."""
    for fields in (c, c.outer) if c.outer is not None else (c,):
        for key in ("torch_dtype", "dtype"):
            if fields.has(key):
                return dtype_bytes(fields, key, fields.data[key])
    notes.append("no torch_dtype: states counted in bf16 (2 bytes), vLLM's usual model dtype")
    return 2
