"""Shared by the hybrid readers: element sizes of states and layer keys for state layers.

vLLM keeps states in ``mamba_cache_dtype`` (conv) and ``mamba_ssm_cache_dtype``
(SSM / recurrent), both "auto" by default, which resolves to the model dtype,
the SSM state following the conv state (``MambaStateDtypeCalculator``, vllm 0.33.0
model_executor/layers/mamba/mamba_utils.py:97-110). A family whose vLLM config
overrides that says so in its reader.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields, describe

__all__ = ["DTYPE_BYTES", "model_dtype_bytes", "dtype_bytes"]

# torch dtype names as config.json writes them -> bytes per element
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2, "fp32": 4,
               "half": 2, "float": 4}


def dtype_bytes(fields: Fields, key: str, value) -> int:
    """Bytes per element of a dtype name, or ValueError naming the field."""
    try:
        return DTYPE_BYTES[str(value).removeprefix("torch.")]
    except KeyError:
        raise ValueError(f"{fields.path(key)} must be one of {', '.join(DTYPE_BYTES)}, "
                         f"got {describe(value)}") from None


def model_dtype_bytes(c: Fields, notes: list[str]) -> int:
    """The model dtype's bytes (``torch_dtype`` or ``dtype``, in ``c`` or the wrapper around
    it), bf16 when the config gives none."""
    for fields in (c, c.outer) if c.outer is not None else (c,):
        for key in ("torch_dtype", "dtype"):
            if fields.has(key):
                return dtype_bytes(fields, key, fields.data[key])
    notes.append("no torch_dtype: states counted in bf16 (2 bytes), vLLM's usual model dtype")
    return 2
