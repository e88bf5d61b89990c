"""Rotary position embedding (RoPE) as block-diagonal 2x2 rotations (notebook 04).

A d-wide vector (d even) is cut into d/2 pairs (v_{2p}, v_{2p+1}); at position i
pair p is rotated by the angle i * theta_p, theta_p = base^(-2p/d). Written as a
matrix acting on column vectors, R_i = diag(rot(i theta_0), ..., rot(i theta_{d/2-1}))
with rot(a) = [[cos a, -sin a], [sin a, cos a]]. Pairs are adjacent (interleaved,
as in RoFormer); the "rotate half" layout of Llama-style code is the same map
after a fixed permutation of the coordinates.

Positions follow kvlib's notation (kvlib.core.notation): i is the query's position,
j the key's, and their offset is Delta = i - j. The property everything rests on:
R_i^T R_j = R_{j-i}, so a rotated query at i and a rotated key at j score
q^T R_{j-i} k, a function of the offset only.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

__all__ = [
    "frequencies", "rotation_matrix", "apply_rope",
    "rotation_2x2", "relative_position_identity",
]

BASE = 10_000.0


def frequencies(d: int, base: float = BASE) -> np.ndarray:
    """theta_p = base^(-2p/d) for pairs p = 0 .. d/2 - 1, shape (d/2,), radians per position."""
    if d <= 0 or d % 2:
        raise ValueError(f"RoPE width d must be a positive even number, got {d}")
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def rotation_matrix(position: int, d: int, base: float = BASE) -> np.ndarray:
    """R_i, shape (d, d): block-diagonal 2x2 rotations for ``position`` i."""
    angles = position * frequencies(d, base)
    R = np.zeros((d, d))
    c, s = np.cos(angles), np.sin(angles)
    i = np.arange(0, d, 2)
    R[i, i], R[i, i + 1], R[i + 1, i], R[i + 1, i + 1] = c, -s, s, c
    return R


def apply_rope(v: np.ndarray, positions, base: float = BASE) -> np.ndarray:
    """Rotate the last axis of ``v`` (..., d) by R_i for each position i.

    ``positions`` is an int or an array broadcastable to ``v.shape[:-1]`` (one
    position per row). Equals ``v @ R_i.T`` row by row (R_i v for a column vector)
    but costs 2 multiply-adds per element instead of d.
    """
    v = np.asarray(v, dtype=np.float64)
    d = v.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[..., None] * frequencies(d, base)
    c, s = np.cos(angles), np.sin(angles)
    even, odd = v[..., 0::2], v[..., 1::2]
    out = np.empty(np.broadcast_shapes(v.shape, angles.shape[:-1] + (d,)))
    out[..., 0::2] = c * even - s * odd
    out[..., 1::2] = s * even + c * odd
    return out


def rotation_2x2(angle: sp.Expr) -> sp.Matrix:
    """The SymPy 2x2 rotation by ``angle`` (counter-clockwise, acting on column vectors)."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def relative_position_identity():
    """One 2x2 block of RoPE, symbolically: returns ``(lhs, rhs, symbols)`` with

    lhs = (R_i q)^T (R_j k),  rhs = q^T R_{j-i} k,

    for q = (q_0, q_1), k = (k_0, k_1), query position i, key position j and
    frequency theta. The
    caller shows ``sp.simplify(lhs - rhs) == 0``.
    """
    q0, q1, k0, k1, theta = sp.symbols("q_0 q_1 k_0 k_1 theta", real=True)
    i, j = sp.symbols("i j", integer=True)
    q, k = sp.Matrix([q0, q1]), sp.Matrix([k0, k1])
    lhs = ((rotation_2x2(i * theta) * q).T * (rotation_2x2(j * theta) * k))[0, 0]
    rhs = (q.T * rotation_2x2((j - i) * theta) * k)[0, 0]
    return lhs, rhs, {"q": q, "k": k, "i": i, "j": j, "theta": theta}
