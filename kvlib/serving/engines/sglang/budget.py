"""SGLang 0.5.23's KV budget (``KV_BUDGET``): the free memory after the weights load, less the
slack F_0 (1 - f) that mem_fraction_static f leaves of the memory free *before* the weights
(mem_cache/kv_cache_configurator.py:3007, 3038, 3060; F_0 measured in
distributed/bootstrap.py:193-223), in bytes per GPU; the sources are cited in full in
:mod:`kvlib.serving.engines.sglang`.
"""

from __future__ import annotations

import struct
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.sglang import kept

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use. REST_MEASURED and REST_MM: the
# two budgets before their floor (kv_rest)
KEPT = ("KV_BUDGET", "KV_BUDGET_MEASURED", "KV_BUDGET_MM", "REST_MEASURED", "REST_MM")
_SYMBOLIC = KEPT
__all__ = ["kv_budget", "kv_rest", *_SYMBOLIC, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.sglang.symbols import F0, F1, M_mm, W, X, f

    kv_budget = sp.floor(sp.Add(F0, -W, -X, -F0 * (1 - f), evaluate=False))
    # the same budget from the two free memories SGLang measures (what kv_budget evaluates)
    measured = kv_budget.subs({W: F0 - F1, X: 0})
    # a multimodal model's: less M_mm, the embedding cache mm_runtime_reservation_gb holds
    # back (kv_cache_configurator.py:3034-3038; :mod:`~kvlib.serving.engines.sglang.multimodal`)
    mm = sp.floor(measured.args[0] - M_mm)
    return {"KV_BUDGET": kv_budget, "KV_BUDGET_MEASURED": measured, "KV_BUDGET_MM": mm,
            "REST_MEASURED": measured.args[0], "REST_MM": mm.args[0]}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def _float32(x) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _measured(free: int, world: int) -> float:
    """A free memory in bytes as SGLang holds it: a float64 (of GB, bytes / 2^30: the same
    float times 2^30), all-reduced as a float32 when ``world`` > 1 (utils/common.py:569-574;
    distributed/bootstrap.py:207-212). SGLang's rounding step, applied to the inputs."""
    return _float32(free) if world > 1 else float(free)


def kv_budget(free_before: int, weights: int, other: int, fraction, world: int = 1,
              reserve: int = 0) -> int:
    """``KV_BUDGET``, F_0 - W - X - F_0 (1 - f) bytes, the budget SGLang 0.5.23 sizes its pools
    from, in its own floating point: ``KV_BUDGET_MEASURED`` evaluated in floats
    (its kept code, :func:`~kvlib.core.numeric.evaluate_floats`'s arithmetic) on the free
    memories before and after the
    weights as SGLang measures them (:func:`_measured`) and float(f)
    (kv_cache_configurator.py:2990-3060: GB floats, utils/common.py:427-576, whose scaling by
    2^30 is exact). Within a few KiB of the exact floor; negative (floored) where SGLang
    stops. reserve: ``KV_BUDGET_MM``'s M_mm, bytes a multimodal model holds back (0 else)."""
    free = {"F_0": _measured(free_before, world),
            "F_1": _measured(free_before - weights - other, world), "f": fraction}
    if reserve:
        return kept.evaluate_floats("budget.KV_BUDGET_MM", M_mm=reserve, **free)
    return kept.evaluate_floats("budget.KV_BUDGET_MEASURED", **free)


def kv_rest(free_before: int, weights: int, other: int, fraction, world: int = 1,
            reserve: int = 0) -> float:
    """:func:`kv_budget` before its floor: rest_memory, the float SGLang hands to its state
    pool (kv_cache_configurator.py:3038-3040) times 2^30 (an exact scaling), in bytes."""
    free = {"F_0": _measured(free_before, world),
            "F_1": _measured(free_before - weights - other, world), "f": fraction}
    if reserve:
        return kept.evaluate_floats("budget.REST_MM", M_mm=reserve, **free)
    return kept.evaluate_floats("budget.REST_MEASURED", **free)
