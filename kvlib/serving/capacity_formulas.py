"""Notebook 06's capacity formulas, written once as SymPy expressions (docs/formula_sheet.md).

The planner (:class:`kvlib.serving.deployment.Deployment`, :func:`kvlib.serving.decode.
decode_step_seconds`) evaluates these expressions, and the formula sheet prints them, so the
arithmetic of a plan and the formula a reader sees are one thing:

* ``USABLE``: vLLM 0.33.0's requested memory, ceil(u M) bytes per GPU (``request_memory``);
* ``KV_BUDGET``: what is left for the cache, ceil(u M) - W - O (negative when it does not fit);
* ``SESSIONS``: whole sessions per TP group, floor(max(0, budget) / S);
* ``STEP``: the decode-step floor, (R + B K) / BW seconds: weight bytes read plus the cache of
  the batch, over the memory bandwidth.

Symbols (ours, except u and M, which are vLLM's and CUDA's): u ``gpu_memory_utilization``;
M the memory CUDA reports for one GPU (bytes); W the weights one GPU holds, a draft's included;
O the non-KV memory (activations, CUDA graphs); S the bytes of one session on one GPU (cache in
whole blocks, plus any constant state); R the weight bytes one GPU reads per decode step; B the
sessions decoding together; K the cache bytes of one session read per step; BW the bandwidth
(bytes/s). Evaluation is exact for ``int`` and ``Fraction`` inputs.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import sympy as sp

__all__ = ["SYMBOLS", "USABLE", "KV_BUDGET", "SESSIONS", "STEP", "usable", "kv_budget",
           "sessions", "step_seconds"]

u, M, W, O, S, R, B, K, BW = sp.symbols("u M W_GPU O S R_W B K BW", positive=True)
SYMBOLS = {"u": u, "M": M, "W": W, "O": O, "S": S, "R": R, "B": B, "K": K, "BW": BW}

USABLE = sp.ceiling(u * M)
KV_BUDGET = sp.Add(USABLE, -W, -O, evaluate=False)
SESSIONS = sp.floor(sp.Max(0, KV_BUDGET) / S)
STEP = sp.Add(R, B * K, evaluate=False) / BW


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


def step_seconds(read_bytes, per_session_bytes, batch, bandwidth):
    """(read + batch x per-session cache) / bandwidth; ``batch`` may be a NumPy array."""
    return _compiled(STEP, (R, B, K, BW))(read_bytes, batch, per_session_bytes, bandwidth)
