"""The longest context at which n sequences fit (notebook 06, "How long can each be").

The cache per sequence never shrinks as T grows and is the same for every T in
one block, so the answer is a whole number of blocks. Linear bounds on the
cache leave a block or two (a few with DCP) to bisect with the exact bytes.
"""

from __future__ import annotations

import math
from fractions import Fraction

from kvlib.core import validate
from kvlib.serving.kv import slot_bytes

__all__ = ["max_context"]


def _last_at_most(terms: list, const, most, k_max: int) -> int:
    """The largest integer k in [0, k_max] with const + sum(a min((k + s) / d, cap)) <= most.

    terms: (a, d, s, cap), a >= 0, cap None for no cap; -1 if even k = 0 exceeds
    ``most``. A sum of capped rising lines is linear between the points where a
    term reaches its cap, so it is solved exactly (Fractions) on the segment
    where it crosses ``most``.
    """
    def value(k):
        return const + sum(a * (Fraction(k + s, d) if cap is None
                                else min(Fraction(k + s, d), cap))
                           for a, d, s, cap in terms)

    if value(0) > most:
        return -1
    ends = sorted({cap * d - s for _, d, s, cap in terms
                   if cap is not None and 0 < cap * d - s < k_max})
    prev, v_prev = 0, value(0)
    for x in [*ends, k_max]:
        v = value(x)
        if v > most:
            return math.floor(prev + Fraction(most - v_prev) * (x - prev) / (v - v_prev))
        prev, v_prev = x, v
    return k_max



def max_context(dep, sequences: int, limit: int | None = None) -> int:
    """The longest context at which ``sequences`` sequences fit per replica of ``dep`` (a
    :class:`~kvlib.serving.engines.vllm.deployment.Deployment`; 0: none).

    Searched up to ``limit`` (default: the model's max_position_embeddings,
    else 2^24 tokens), in tokens; the answer is a whole number of blocks (or ``limit``).
    """
    sequences = validate.positive_int("sequences", sequences)
    hi = limit or dep.model.max_position_embeddings or 2**24
    budget = dep.kv_budget_bytes_per_gpu

    def fits(t: int) -> bool:
        return sequences * dep.bytes_per_sequence_per_gpu(t) <= budget

    if budget <= 0 or not fits(1):
        return 0
    if hi <= 1:
        return 1
    bs = dep.block_size
    lo, top = _block_bracket(dep, budget // sequences, -(-hi // bs))
    lo = max(lo, 1)  # one block fits: fits(1)
    while lo < top:
        mid = (lo + top + 1) // 2
        lo, top = (mid, top) if fits(min(mid * bs, hi)) else (lo, mid - 1)
    return min(hi, lo * bs)


def _block_bracket(dep, most: int, blocks: int) -> tuple[int, int]:
    """Block counts (lo, hi) around the most blocks k <= ``blocks`` whose bytes are <= ``most``.

    A context of k blocks holds, per part (target, draft), ceil(sum over groups of
    a_g min(ceil(k / dcp), K_g)) bytes, plus the constant states: a_g the bytes of
    one block of group g (its formula at one slot, times block_size), K_g its
    window in blocks. Since k / dcp <= ceil(k / dcp) <= (k + dcp - 1) / dcp and a
    ceil adds less than a byte, two piecewise-linear functions of k bound the bytes
    from below and above; where the upper one reaches ``most`` is ``lo``, where the
    lower one does, ``hi``.
    """
    bs = dep.block_size
    parts = [(slot_bytes(dep.model, dep.kv_dtype, dep.tp, dep.scales, dep.dcp), dep.dcp)]
    if dep.draft is not None:
        parts.append((slot_bytes(dep.draft, dep.kv_dtype, dep.draft_tp, dep.scales, 1), 1))
    below, above = [], []
    for per_slot, dcp in parts:
        for g, c in per_slot:
            cap = None if g.window is None else -(-g.window // bs)
            below.append((c * bs, dcp, 0, cap))
            above.append((c * bs, dcp, dcp - 1, cap))
    state = dep.state_bytes_per_sequence_per_gpu  # constant: it does not depend on k
    return (_last_at_most(above, len(parts) + state, most, blocks),
            _last_at_most(below, state, most, blocks))
