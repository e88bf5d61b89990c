"""TensorRT-LLM's sessions: requests of C tokens at once, whole blocks each, at most
max_batch_size S_max (``SESSIONS``); a count of requests.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("SESSIONS",)
_SYMBOLIC = KEPT
__all__ = [*KEPT, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.trtllm.symbols import C, S_max, T, n

    return {"SESSIONS": sp.Min(S_max, sp.floor(T / (sp.ceiling(C / n) * n)))}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)
