"""SGLang 0.5.23's sessions: max_running_requests when not given (``MAX_RUNNING``,
mem_cache/kv_cache_configurator.py:3119-3132) and the requests of C tokens its pools hold at
once (``SESSIONS``, ``SESSIONS_SWA`` with a sliding-window pool: the admission floor,
model_executor/pool_configurator.py:198-216); counts of requests.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("MAX_RUNNING", "SESSIONS", "SESSIONS_SWA")
_SYMBOLIC = KEPT
__all__ = [*KEPT, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.sglang.symbols import C, T, T_swa, p, w

    # SGLang's int(T / C x 512) is a float's; the exact floor is the same (T x 512 / C is a
    # whole number exactly when T / C is a multiple of 1/512, which a float holds exactly)
    max_running = sp.Min(sp.Max(sp.Min(sp.floor(T / C * 512), 4096), 2048), sp.floor(T / 2))
    # requests of C tokens at once: whole pages each, at most max_running_requests (pool());
    # with a sliding-window pool of T_SWA tokens, also min(C, window w) + one page each (the
    # admission floor, pool_configurator.py:198-216)
    sessions = sp.Min(max_running, sp.floor(T / (sp.ceiling(C / p) * p)))
    return {"MAX_RUNNING": max_running, "SESSIONS": sessions,
            "SESSIONS_SWA": sp.Min(sessions, sp.floor(T_swa / (sp.Min(C, w) + p)))}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)
