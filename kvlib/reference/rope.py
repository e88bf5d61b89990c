"""Rotary position embedding (RoPE) as block-diagonal 2x2 rotations (notebook 04).

A d-wide vector (d even) is cut into d/2 pairs (v_{2i}, v_{2i+1}); at position m
pair i is rotated by the angle m * theta_i, theta_i = base^(-2i/d). Written as a
matrix acting on column vectors, R_m = diag(rot(m theta_0), ..., rot(m theta_{d/2-1}))
with rot(a) = [[cos a, -sin a], [sin a, cos a]]. Pairs are adjacent (interleaved,
as in RoFormer); the "rotate half" layout of Llama-style code is the same map
after a fixed permutation of the coordinates.

The property everything rests on: R_m^T R_n = R_{n-m}, so a rotated query at m
and a rotated key at n score q^T R_{n-m} k, a function of n - m only.
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
    """theta_i = base^(-2i/d) for i = 0 .. d/2 - 1, shape (d/2,), radians per position."""
    if d <= 0 or d % 2:
        raise ValueError(f"RoPE width d must be a positive even number, got {d}")
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def rotation_matrix(position: int, d: int, base: float = BASE) -> np.ndarray:
    """R_m, shape (d, d): block-diagonal 2x2 rotations for ``position`` m."""
    angles = position * frequencies(d, base)
    R = np.zeros((d, d))
    c, s = np.cos(angles), np.sin(angles)
    i = np.arange(0, d, 2)
    R[i, i], R[i, i + 1], R[i + 1, i], R[i + 1, i + 1] = c, -s, s, c
    return R


def apply_rope(v: np.ndarray, positions, base: float = BASE) -> np.ndarray:
    """Rotate the last axis of ``v`` (..., d) by R_m for each position m.

    ``positions`` is an int or an array broadcastable to ``v.shape[:-1]`` (one
    position per row). Equals ``v @ R_m.T`` row by row (R_m v for a column vector)
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

    lhs = (R_m q)^T (R_n k),  rhs = q^T R_{n-m} k,

    for q = (q_0, q_1), k = (k_0, k_1), positions m, n and frequency theta. The
    caller shows ``sp.simplify(lhs - rhs) == 0``.
    """
    q0, q1, k0, k1, theta = sp.symbols("q_0 q_1 k_0 k_1 theta", real=True)
    m, n = sp.symbols("m n", integer=True)
    q, k = sp.Matrix([q0, q1]), sp.Matrix([k0, k1])
    lhs = ((rotation_2x2(m * theta) * q).T * (rotation_2x2(n * theta) * k))[0, 0]
    rhs = (q.T * rotation_2x2((n - m) * theta) * k)[0, 0]
    return lhs, rhs, {"q": q, "k": k, "m": m, "n": n, "theta": theta}
