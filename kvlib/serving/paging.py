"""Paged vs contiguous KV allocation on a seeded workload (notebook 06, "Lever 1: paging").

Everything here counts token *slots*: a slot holds one token's cache in every
layer of a group, so the byte count of a slot comes from the formulas
(``kv_bytes_per_sequence_per_gpu`` at one token) and the fractions below are
the same in bytes. Arrays are int64, one entry per request.
"""

from __future__ import annotations

import numpy as np

from kvlib.core import validate

__all__ = ["sample_lengths", "contiguous_slots", "paged_slots", "waste_fraction"]


def sample_lengths(n: int, seed: int, median: int = 2048, sigma: float = 1.0,
                   max_len: int = 131072) -> np.ndarray:
    """``n`` request lengths (prompt + output, tokens), log-normal, clipped to [1, max_len].

    Seeded (``numpy.random.default_rng(seed)``), so the same seed gives the same
    workload on every machine. Shape (n,), int64.
    """
    n = validate.positive_int("n", n)
    validate.positive_int("median", median)
    validate.positive_number("sigma", sigma)
    max_len = validate.positive_int("max_len", max_len)
    rng = np.random.default_rng(validate.positive_int("seed", seed, allow_zero=True))
    lengths = np.rint(rng.lognormal(np.log(median), sigma, n))
    return np.clip(lengths, 1, max_len).astype(np.int64)


def contiguous_slots(lengths: np.ndarray, max_len: int) -> np.ndarray:
    """Slots reserved when each request pre-allocates ``max_len`` contiguous tokens."""
    lengths = validate.positive_int_array("lengths", np.asarray(lengths))
    max_len = validate.positive_int("max_len", max_len)
    if lengths.size and lengths.max() > max_len:
        raise ValueError(f"a request of {lengths.max()} tokens exceeds max_len={max_len}")
    return np.full_like(lengths, max_len)


def paged_slots(lengths: np.ndarray, block_size: int = 16) -> np.ndarray:
    """Slots taken when each request holds whole blocks: ceil(length / block) x block."""
    lengths = validate.positive_int_array("lengths", np.asarray(lengths))
    block_size = validate.positive_int("block_size", block_size)
    return -(-lengths // block_size) * block_size


def waste_fraction(lengths: np.ndarray, slots: np.ndarray) -> float:
    """Share of reserved slots that hold no token: 1 - sum(lengths) / sum(slots)."""
    lengths, slots = np.asarray(lengths), np.asarray(slots)
    if np.any(slots < lengths):
        raise ValueError("every request needs at least as many slots as tokens")
    return float(1 - lengths.sum() / slots.sum())
