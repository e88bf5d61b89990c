"""TensorRT-LLM's KV budget (``KV_BUDGET``): ``KvCacheCreator._cal_max_memory``'s
(M - peak + temporary) x fraction, written M - W - O_T times phi, in bytes per GPU (the
sources in :mod:`kvlib.serving.engines.trtllm`).
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.trtllm import kept
from kvlib.serving.engines.trtllm.defaults import DEFAULT_FRACTION

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("KV_BUDGET",)
_SYMBOLIC = KEPT
__all__ = [*KEPT, "kv_budget", "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.trtllm.symbols import M, O, W, phi

    return {"KV_BUDGET": sp.floor(sp.Add(M, -W, -O, evaluate=False) * phi)}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def kv_budget(total: int, weights: int, other_peak: int, fraction=DEFAULT_FRACTION) -> int:
    """``KV_BUDGET``: int((M - peak + temporary) x fraction) with peak - temporary = W + O_T;
    ``fraction`` as given (pass it through :func:`float32`, as TensorRT-LLM holds it)."""
    return kept.evaluate("budget.KV_BUDGET", M=total, W_GPU=weights, O_T=other_peak,
                         phi=fraction)
