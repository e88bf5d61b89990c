"""Cache formulas derived with SymPy from a tensor table (notebook 01, "Derivation").

The only input is a :class:`kvlib.core.tables.TensorTable`. The cached elements of one
layer are the sum of its ``cache`` rows; every cache row has N_KV rows (one per
token), so the per-token count is the derivative in N_KV, and the sum must be
exactly linear in N_KV (checked, not assumed).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from kvlib.core.notation import N_KV, N_L, B, b, b_c, b_s
from kvlib.core.tables import Role, TensorTable

__all__ = ["CacheFormulas", "StateFormulas", "derive", "derive_state"]


@dataclass(frozen=True)
class CacheFormulas:
    """The symbolic cache formulas of one attention kind.

    elements_per_token_layer: cached elements one token adds to one layer.
    bytes_per_token:          b N_L (elements_per_token_layer), bytes, all layers.
    bytes_per_sequence:       bytes_per_token N_KV, one sequence of N_KV tokens.
    bytes_per_batch:          bytes_per_sequence B, B sequences of N_KV tokens.
    weight_elements_per_layer: elements of the table's weights, for comparison.
    """

    name: str
    table: TensorTable
    elements_per_token_layer: sp.Expr
    bytes_per_token: sp.Expr
    bytes_per_sequence: sp.Expr
    bytes_per_batch: sp.Expr
    weight_elements_per_layer: sp.Expr


def derive(name: str, table: TensorTable) -> CacheFormulas:
    """Derive :class:`CacheFormulas` from the cache rows of ``table``."""
    cached = sum((t.elements for t in table.with_role(Role.CACHE)), sp.Integer(0))
    n = N_KV.symbol
    per_token = sp.factor(sp.diff(cached, n))
    if sp.expand(cached - per_token * n) != 0 or per_token.has(n):
        raise ValueError(f"{table.name}: cached elements {cached} are not linear in N_KV")
    weights = sp.factor(sum((t.elements for t in table.with_role(Role.WEIGHT)), sp.Integer(0)))
    per_token_bytes = b.symbol * N_L.symbol * per_token
    return CacheFormulas(
        name=name,
        table=table,
        elements_per_token_layer=per_token,
        bytes_per_token=per_token_bytes,
        bytes_per_sequence=per_token_bytes * n,
        bytes_per_batch=per_token_bytes * n * B.symbol,
        weight_elements_per_layer=weights,
    )


@dataclass(frozen=True)
class StateFormulas:
    """The symbolic state formulas of one constant-size layer kind (notebook 07).

    conv_elements_per_layer / ssm_elements_per_layer: the two stores of one layer.
    elements_per_layer: their sum.
    bytes_per_sequence: N_L (b_c conv + b_s ssm), bytes, one sequence, all layers.
    bytes_per_batch:    bytes_per_sequence B.
    growth: d(bytes_per_sequence) / d(N_KV), which the derivation proves is 0.
    """

    name: str
    table: TensorTable
    conv_elements_per_layer: sp.Expr
    ssm_elements_per_layer: sp.Expr
    elements_per_layer: sp.Expr
    bytes_per_sequence: sp.Expr
    bytes_per_batch: sp.Expr
    growth: sp.Expr


def derive_state(name: str, table: TensorTable) -> StateFormulas:
    """Derive :class:`StateFormulas` from the ``state`` rows of ``table``.

    Raises ValueError if a state row grows with N_KV (it would be a cache) or has no store.
    """
    rows = table.with_role(Role.STATE)
    stores = {t.store for t in rows}
    if not rows or not stores <= {"conv", "ssm"}:
        raise ValueError(f"{table.name}: state rows need store 'conv' or 'ssm', got {stores}")
    conv = sp.factor(sum((t.elements for t in rows if t.store == "conv"), sp.Integer(0)))
    ssm = sp.factor(sum((t.elements for t in rows if t.store == "ssm"), sp.Integer(0)))
    per_sequence = N_L.symbol * (b_c.symbol * conv + b_s.symbol * ssm)
    growth = sp.diff(per_sequence, N_KV.symbol)
    if growth != 0:
        raise ValueError(f"{table.name}: the state grows with N_KV ({growth}); it is a cache")
    return StateFormulas(
        name=name, table=table, conv_elements_per_layer=conv, ssm_elements_per_layer=ssm,
        elements_per_layer=sp.factor(conv + ssm), bytes_per_sequence=per_sequence,
        bytes_per_batch=per_sequence * B.symbol, growth=growth,
    )
