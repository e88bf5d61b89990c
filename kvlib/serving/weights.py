"""Weight bytes per GPU (notebook 06, "The budget"): parameters x bytes per weight / TP."""

from __future__ import annotations

import math
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import DTYPE_BYTES

__all__ = ["weight_bytes_per_element", "weights_bytes_per_gpu"]


def weight_bytes_per_element(dtype: str) -> Fraction:
    """Bytes per weight for ``dtype`` (bf16/fp16 2, fp8/int8 1, int4 1/2)."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(
            f"weight dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}"
        ) from None


def weights_bytes_per_gpu(params: int, dtype: str = "bf16", tp: int = 1) -> int:
    """ceil(params x bytes per weight / tp): weights split evenly over the TP ranks.

    An approximation: vLLM replicates the small parts (norms, and the K/V
    projections when TP exceeds the KV heads), and int4 checkpoints add scales.
    """
    params = validate.positive_int("parameter count", params)
    tp = validate.positive_int("tensor_parallel_size", tp)
    return math.ceil(Fraction(params * weight_bytes_per_element(dtype) / tp))

