"""vLLM's budget: notebook 06's capacity formulas, written once as SymPy expressions
(docs/formula_sheet.md).

One budget rule per vLLM release (:data:`RULES`, keyed by the release's name; docs/capacity.md
cites each term's source line):

* **0.33.0, profiled**: ``KV_BUDGET`` = ceil(u M) - W_GPU - O, u = 0.92 unless set
  (vllm/config/cache.py:215; requested memory ``math.ceil(total x u)``,
  vllm/v1/worker/utils.py:724-726; ``requested_memory - non_kv_cache_memory -
  cudagraph_memory_estimate``, vllm/v1/worker/gpu_worker.py:753-757; the non-KV memory is
  ``total_consumed + transient_peak_headroom``, vllm/utils/mem_utils.py:312-321).
* **0.34.0, extensible** (the default on CUDA and ROCm, vllm/config/vllm.py:3180-3269): the
  cache is sized after warmup and CUDA-graph capture, from memory measured then
  (``measure_kv_cache_bytes``, vllm/v1/worker/extensible_kv_cache.py:592-618):
  ``KV_BUDGET_EXTENSIBLE`` = min(ceil(u M), M - M_0 - margin) - W_GPU - O_R -
  max(M_pk, M_gr), margin = max(1 GiB, floor(0.75 M_pk)) (:64-65, 3 GiB on ROCm), u = 1.0 unless set
  (``resolved_gpu_memory_utilization``, vllm/config/cache.py:495-502). vLLM's own form is
  min(requested - used, free + committed - margin) - max(peak, growth); with used = W_GPU + O_R
  (all that was taken since start-up but the committed cache) and free + committed =
  M - M_0 - W_GPU - O_R it is the expression above. The block count is then capped by the
  capacity reserved from the profiling estimate (vllm/v1/core/kv_cache_planning.py:1883-1884),
  which is larger under kvlib's assumptions (it keeps no margin).
* **kv_cache_memory_bytes** (both releases): the budget is the bytes given
  (vllm/v1/worker/gpu_worker.py:656-681 in 0.33.0, :688-713 in 0.34.0); in 0.34.0 it also
  turns the extensible cache off (vllm/config/vllm.py:3203-3207), so u resolves to 0.92.

The planner (:class:`kvlib.serving.engines.vllm.deployment.Deployment`,
:func:`kvlib.serving.decode.decode_step_seconds`) evaluates these expressions, and the formula
sheet prints them, so the arithmetic of a plan and the formula a reader sees are one thing:

* ``USABLE``: vLLM's requested memory (both releases), ceil(u M) bytes per GPU (``request_memory``);
* ``KV_BUDGET``: what is left for the cache, ceil(u M) - W_GPU - O (negative when it does not fit);
* ``SESSIONS``: whole sessions per TP group, floor(max(0, budget) / S);
* ``STEP``: the decode-step floor, (R_W + B R_KV) / BW seconds: weight bytes read plus the cache
  of the batch, over the memory bandwidth (every engine's: defined in :mod:`kvlib.serving.decode`
  and shown here beside the budget, as the formula sheet prints them together).

Symbols (the notation's ``SERVING_SYMBOLS``; ours, except u, vLLM's, and M, CUDA's): u
``gpu_memory_utilization``; M the memory CUDA reports for one GPU (bytes); W_GPU the weights
one GPU holds, a draft's included; O the non-KV memory (activations, CUDA graphs); S the bytes
of one session on one GPU (cache in whole blocks, plus any constant state); R_W the weight
bytes one GPU reads per decode step; B the sessions decoding together; R_KV the cache bytes of
one session read per step; BW the bandwidth (bytes/s). 0.34.0's terms: M_0 the memory in use
when vLLM starts (CUDA context, other processes; vLLM reads the free memory then,
``init_snapshot.free_memory``); O_R the non-KV memory resident after warmup and capture besides
the weights (non-torch memory, the CUDA-graph pool); M_pk the transient peak vLLM keeps free
(at least the profiling peak plus the CUDA-graph estimate, vllm/v1/worker/gpu_worker.py:771-773
and 946); M_gr the growth of torch's reservation over a sizing step
(vllm/v1/worker/gpu/warmup.py:476); M_fl the margin's floor. Evaluation is exact for ``int``
and ``Fraction`` inputs (vLLM's int(0.75 x peak) is a float product; exact here).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import sympy as sp

from kvlib.core.notation import by_name
from kvlib.serving.decode import STEP, step_seconds  # the engine-neutral decode floor, shown here

__all__ = ["SYMBOLS", "USABLE", "KV_BUDGET", "SESSIONS", "STEP", "MARGIN",
           "USABLE_EXTENSIBLE", "KV_BUDGET_EXTENSIBLE", "SESSIONS_EXTENSIBLE", "RULES",
           "MARGIN_FLOOR_BYTES", "MARGIN_FRACTION", "usable", "kv_budget", "sessions",
           "step_seconds", "margin", "usable_extensible", "kv_budget_extensible"]

# The symbols are the notation's (kvlib.core.notation.SERVING_SYMBOLS), one meaning each; the
# Python names and SYMBOLS' keys stay short.
u, M, W, O, S, R, B, K, BW = (by_name(n).symbol for n in
                              ("u", "M", "W_GPU", "O", "S", "R_W", "B", "R_KV", "BW"))
M0, OR, P, F, T = (by_name(n).symbol for n in ("M_0", "O_R", "M_pk", "M_fl", "M_gr"))
SYMBOLS = {"u": u, "M": M, "W": W, "O": O, "S": S, "R": R, "B": B, "K": K, "BW": BW,
           "M0": M0, "OR": OR, "P": P, "T": T, "F": F}

# vLLM 0.34.0, vllm/v1/worker/extensible_kv_cache.py:64-65 (CUDA; ROCm's floor is 3 GiB)
MARGIN_FLOOR_BYTES = 1 << 30
MARGIN_FRACTION = sp.Rational(3, 4)

USABLE = sp.ceiling(u * M)
KV_BUDGET = sp.Add(USABLE, -W, -O, evaluate=False)
SESSIONS = sp.floor(sp.Max(0, KV_BUDGET) / S)

MARGIN = sp.Max(F, sp.floor(MARGIN_FRACTION * P))
USABLE_EXTENSIBLE = sp.Min(USABLE, sp.Add(M, -M0, -MARGIN, evaluate=False))
KV_BUDGET_EXTENSIBLE = sp.Add(USABLE_EXTENSIBLE, -W, -OR, -sp.Max(P, T), evaluate=False)
SESSIONS_EXTENSIBLE = sp.floor(sp.Max(0, KV_BUDGET_EXTENSIBLE) / S)

# release -> (rule name, usable, KV budget, sessions); docs/capacity.md has their source lines
RULES = {
    "0.33.0": ("profiled", USABLE, KV_BUDGET, SESSIONS),
    "0.34.0": ("extensible", USABLE_EXTENSIBLE, KV_BUDGET_EXTENSIBLE, SESSIONS_EXTENSIBLE),
}


@cache
def _compiled(expr: sp.Expr, args: tuple[sp.Symbol, ...]):
    # Python's math module: ceil and floor of a Fraction are exact ints.
    return sp.lambdify(args, expr, modules="math")


def usable(util, total: int) -> int:
    """ceil(util x total): the bytes vLLM may use on one GPU."""
    return _compiled(USABLE, (u, M))(Fraction(util), total)


def kv_budget(util, total: int, weights: int, overhead: int) -> int:
    """Bytes left for the cache on one GPU; negative when the weights do not fit."""
    return _compiled(KV_BUDGET, (u, M, W, O))(Fraction(util), total, weights, overhead)


def sessions(util, total: int, weights: int, overhead: int, per_session: int) -> int:
    """Whole sessions of ``per_session`` bytes per GPU that fit the budget (0 if none)."""
    return _compiled(SESSIONS, (u, M, W, O, S))(Fraction(util), total, weights, overhead,
                                                Fraction(per_session))


def margin(peak: int, floor: int = MARGIN_FLOOR_BYTES) -> int:
    """vLLM 0.34.0's sizing margin: max(floor, floor(0.75 x peak)) bytes."""
    return int(_compiled(MARGIN, (P, F))(Fraction(peak), floor))


def usable_extensible(util, total: int, in_use: int, peak: int,
                      floor: int = MARGIN_FLOOR_BYTES) -> int:
    """min(ceil(util x total), total - in_use - margin): what vLLM 0.34.0's extensible cache
    may use on one GPU, before the resident non-KV memory and the peak kept free."""
    return int(_compiled(USABLE_EXTENSIBLE, (u, M, M0, P, F))(Fraction(util), total, in_use,
                                                             Fraction(peak), floor))


def kv_budget_extensible(util, total: int, in_use: int, weights: int, resident: int, peak: int,
                         growth: int = 0, floor: int = MARGIN_FLOOR_BYTES) -> int:
    """vLLM 0.34.0's measured budget on one GPU (negative when nothing is left; vLLM clamps
    it to 0): min(ceil(u M), M - M_0 - margin) - W_GPU - O_R - max(M_pk, M_gr)."""
    # every term is a whole number of bytes: int() only drops Fraction's denominator of 1
    return int(_compiled(KV_BUDGET_EXTENSIBLE, (u, M, M0, W, OR, P, T, F))(
        Fraction(util), total, in_use, weights, resident, Fraction(peak), growth, floor))
