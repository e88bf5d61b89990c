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

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.decode import step_seconds  # the engine-neutral decode floor, shown here
from kvlib.serving.engines.vllm import kept

# vLLM 0.34.0, vllm/v1/worker/extensible_kv_cache.py:64-65 (CUDA; ROCm's floor is 3 GiB)
MARGIN_FLOOR_BYTES = 1 << 30

# The expressions kvlib.serving.engines.vllm.kept keeps as code (python -m kvlib.core.keep):
# the functions below evaluate that code and import no SymPy. The expressions themselves, the
# symbols and RULES are built on first use (module __getattr__, :func:`symbolic`).
KEPT = ("USABLE", "KV_BUDGET", "SESSIONS", "MARGIN", "USABLE_EXTENSIBLE",
        "KV_BUDGET_EXTENSIBLE", "SESSIONS_EXTENSIBLE")


@cache
def symbolic() -> dict:
    """Every expression of the module by name, with ``SYMBOLS``, ``MARGIN_FRACTION``, ``STEP``
    and ``RULES`` (imports SymPy)."""
    import sympy as sp

    from kvlib.core.notation import by_name
    from kvlib.serving.decode import STEP

    # The symbols are the notation's (kvlib.core.notation.SERVING_SYMBOLS), one meaning each;
    # the Python names and SYMBOLS' keys stay short.
    u, M, W, O, S, R, B, K, BW = (by_name(n).symbol for n in
                                  ("u", "M", "W_GPU", "O", "S", "R_W", "B", "R_KV", "BW"))
    M0, OR, P, F, T = (by_name(n).symbol for n in ("M_0", "O_R", "M_pk", "M_fl", "M_gr"))
    symbols = {"u": u, "M": M, "W": W, "O": O, "S": S, "R": R, "B": B, "K": K, "BW": BW,
               "M0": M0, "OR": OR, "P": P, "T": T, "F": F}

    margin_fraction = sp.Rational(3, 4)  # extensible_kv_cache.py:64-65
    usable = sp.ceiling(u * M)
    kv_budget = sp.Add(usable, -W, -O, evaluate=False)
    sessions = sp.floor(sp.Max(0, kv_budget) / S)

    margin = sp.Max(F, sp.floor(margin_fraction * P))
    usable_ext = sp.Min(usable, sp.Add(M, -M0, -margin, evaluate=False))
    kv_budget_ext = sp.Add(usable_ext, -W, -OR, -sp.Max(P, T), evaluate=False)
    sessions_ext = sp.floor(sp.Max(0, kv_budget_ext) / S)

    return {
        "SYMBOLS": symbols, "MARGIN_FRACTION": margin_fraction, "STEP": STEP,
        "USABLE": usable, "KV_BUDGET": kv_budget, "SESSIONS": sessions, "MARGIN": margin,
        "USABLE_EXTENSIBLE": usable_ext, "KV_BUDGET_EXTENSIBLE": kv_budget_ext,
        "SESSIONS_EXTENSIBLE": sessions_ext,
        # release -> (rule name, usable, KV budget, sessions); docs/capacity.md has their
        # source lines
        "RULES": {
            "0.33.0": ("profiled", usable, kv_budget, sessions),
            "0.34.0": ("extensible", usable_ext, kv_budget_ext, sessions_ext),
        },
    }


_SYMBOLIC = ("SYMBOLS", "MARGIN_FRACTION", "STEP", "RULES", *KEPT)
__all__ = [*_SYMBOLIC, "MARGIN_FLOOR_BYTES", "usable", "kv_budget", "sessions", "step_seconds",
           "margin", "usable_extensible", "kv_budget_extensible", "symbolic", "KEPT"]


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def _kept(name: str, **values) -> int:
    # every value a Fraction, the result exact: an int for these whole-byte expressions
    return int(kept.evaluate(f"budget.{name}", **values))


def usable(util, total: int) -> int:
    """ceil(util x total): the bytes vLLM may use on one GPU."""
    return _kept("USABLE", u=util, M=total)


def kv_budget(util, total: int, weights: int, overhead: int) -> int:
    """Bytes left for the cache on one GPU; negative when the weights do not fit."""
    return _kept("KV_BUDGET", u=util, M=total, W_GPU=weights, O=overhead)


def sessions(util, total: int, weights: int, overhead: int, per_session: int) -> int:
    """Whole sessions of ``per_session`` bytes per GPU that fit the budget (0 if none)."""
    return _kept("SESSIONS", u=util, M=total, W_GPU=weights, O=overhead, S=per_session)


def margin(peak: int, floor: int = MARGIN_FLOOR_BYTES) -> int:
    """vLLM 0.34.0's sizing margin: max(floor, floor(0.75 x peak)) bytes."""
    return _kept("MARGIN", M_pk=peak, M_fl=floor)


def usable_extensible(util, total: int, in_use: int, peak: int,
                      floor: int = MARGIN_FLOOR_BYTES) -> int:
    """min(ceil(util x total), total - in_use - margin): what vLLM 0.34.0's extensible cache
    may use on one GPU, before the resident non-KV memory and the peak kept free."""
    return _kept("USABLE_EXTENSIBLE", u=util, M=total, M_0=in_use, M_pk=peak, M_fl=floor)


def kv_budget_extensible(util, total: int, in_use: int, weights: int, resident: int, peak: int,
                         growth: int = 0, floor: int = MARGIN_FLOOR_BYTES) -> int:
    """vLLM 0.34.0's measured budget on one GPU (negative when nothing is left; vLLM clamps
    it to 0): min(ceil(u M), M - M_0 - margin) - W_GPU - O_R - max(M_pk, M_gr)."""
    return _kept("KV_BUDGET_EXTENSIBLE", u=util, M=total, M_0=in_use, W_GPU=weights,
                 O_R=resident, M_pk=peak, M_gr=growth, M_fl=floor)
