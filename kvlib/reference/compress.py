"""NumPy reference of a compressed attention layer in DeepSeek V4's shape (notebook 08).

One head of width ``d_c``: every token's input row x (d_in) is projected to a key-value row
C_j = x W^{KV} (one vector read as key and value, as V4's entry is) and a row of scores
Z_j = x W^{Z} + p_j, where p_j is a learned bias for the token's place j in its group (the
V4 report's C and Z). Every m tokens become one compressed entry, a softmax-gated average
taken per channel, with weights A = softmax(Z) over the group:

    entry = sum_j A_j * C_j,   A_j = softmax_j(Z_j)     (j over the m tokens of the group)

(DeepSeek V4 technical report, 2026; vLLM 0.34.0's ``models/deepseek_v4/compressor.py``, whose
m = 4 layers also overlap each group with the previous one, which this reference leaves out).
Decoding keeps exactly what :mod:`kvlib.core.compression` counts: the last ``N_W`` rows z as
they are (the window), one entry per m tokens read so far, and the running state (C and Z of
the tokens of the group not yet complete). A query attends to the entries and the window.

Float64, seeded weights; shapes in the notation's symbols.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kvlib.reference.attention import attention, softmax

__all__ = ["CompressorWeights", "init_compressor", "compress", "CompressedCache",
           "decode_compressed", "attend"]


@dataclass(frozen=True)
class CompressorWeights:
    """W_KV, W_Z: (d_in, d_c); P: (m, d_c), the score bias of each place in a group."""

    W_KV: np.ndarray
    W_Z: np.ndarray
    P: np.ndarray

    @property
    def m(self) -> int:
        """Tokens merged into one entry."""
        return self.P.shape[0]


def init_compressor(rng: np.random.Generator, d_in: int, d_c: int, m: int) -> CompressorWeights:
    """Random weights scaled by 1/sqrt(d_in); ValueError for m < 2 (nothing to merge)."""
    if m < 2:
        raise ValueError(f"m={m}: a compressor merges at least 2 tokens into one entry")
    s = 1 / np.sqrt(d_in)
    return CompressorWeights(rng.normal(0, s, (d_in, d_c)), rng.normal(0, s, (d_in, d_c)),
                             rng.normal(0, 1, (m, d_c)))


def compress(C: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """One entry (d_c,) from a group's rows C (m, d_c) and scores Z (m, d_c): per channel, the
    weights A = softmax(Z) over the m tokens weight the rows of C."""
    return (softmax(Z, axis=0) * C).sum(axis=0)


@dataclass
class CompressedCache:
    """What one sequence keeps in one layer, after ``tokens`` tokens.

    window: (min(tokens, N_W), d_c), the last rows C exactly; entries: (floor(tokens / m), d_c);
    pending_C, pending_Z: (tokens mod m, d_c), the compressor's running state (rows, scores).
    """

    N_W: int
    window: np.ndarray
    entries: np.ndarray
    pending_C: np.ndarray
    pending_Z: np.ndarray
    tokens: int = 0
    history: list = field(default_factory=list)

    def rows(self) -> tuple[int, int, int]:
        """(window rows, compressed entries, state rows) kept now."""
        return len(self.window), len(self.entries), len(self.pending_C)


def decode_compressed(X: np.ndarray, w: CompressorWeights, N_W: int) -> CompressedCache:
    """Read the rows of X (N_KV, d_in) one token at a time; ``history`` records ``rows()``
    after each token, so a test can compare every step with the formulas."""
    if N_W < 1:
        raise ValueError(f"N_W={N_W}: the window keeps at least one token")
    d_c = w.W_KV.shape[1]
    empty = np.zeros((0, d_c))
    cache = CompressedCache(N_W, empty, empty, empty, empty)
    for x in X:
        row, score = x @ w.W_KV, x @ w.W_Z + w.P[len(cache.pending_C)]
        cache.window = np.vstack([cache.window, row])[-N_W:]
        cache.pending_C = np.vstack([cache.pending_C, row])
        cache.pending_Z = np.vstack([cache.pending_Z, score])
        if len(cache.pending_C) == w.m:  # the group is complete: one entry, state emptied
            cache.entries = np.vstack([cache.entries, compress(cache.pending_C, cache.pending_Z)])
            cache.pending_C, cache.pending_Z = empty, empty
        cache.tokens += 1
        cache.history.append(cache.rows())
    return cache


def attend(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Single-head attention of q (d_c,) over rows (n, d_c) read as keys and values."""
    return attention(q[None], rows, rows)[0]
