"""Bytes per cached element for the KV-cache dtypes servers offer (vLLM's ``kv_cache_dtype``)."""

from __future__ import annotations

from fractions import Fraction

__all__ = ["DTYPE_BYTES", "bytes_per_element"]

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
