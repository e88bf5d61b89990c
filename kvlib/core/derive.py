"""Cache formulas derived with SymPy from a tensor table (notebook 01, "Derivation").

The only input is a :class:`kvlib.core.tables.TensorTable`. The cached elements of one
layer are the sum of its ``cache`` rows; every cache row has N_KV rows (one per
token), so the per-token count is the derivative in N_KV, and the sum must be
exactly linear in N_KV (checked, not assumed).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from kvlib.core.notation import N_KV, N_L, B, b
from kvlib.core.tables import Role, TensorTable

__all__ = ["CacheFormulas", "derive"]


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
