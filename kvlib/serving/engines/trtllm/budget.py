"""TensorRT-LLM's KV budget (``KV_BUDGET``): ``KvCacheCreator._cal_max_memory``'s
(M - peak + temporary) x fraction, written M - W - O_T times phi, in bytes per GPU (the
sources in :mod:`kvlib.serving.engines.trtllm`).
"""

from __future__ import annotations

import sympy as sp

from kvlib.core.numeric import evaluate
from kvlib.serving.engines.trtllm.defaults import DEFAULT_FRACTION
from kvlib.serving.engines.trtllm.symbols import M, O, W, phi

__all__ = ["KV_BUDGET", "kv_budget"]

KV_BUDGET = sp.floor(sp.Add(M, -W, -O, evaluate=False) * phi)


def kv_budget(total: int, weights: int, other_peak: int, fraction=DEFAULT_FRACTION) -> int:
    """``KV_BUDGET``: int((M - peak + temporary) x fraction) with peak - temporary = W + O_T;
    ``fraction`` as given (pass it through :func:`float32`, as TensorRT-LLM holds it)."""
    return evaluate(KV_BUDGET, M=total, W_GPU=weights, O_T=other_peak, phi=fraction)
