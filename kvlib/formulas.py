"""The attention kinds, each derived from its table once, at import (notebooks 01-02).

``MHA``, ``GQA`` and ``MQA`` are :class:`Attention` objects. Each holds the
symbolic derivation (``.symbolic``) and, for every quantity, a :class:`Formula`
generated from it, so a notebook, a widget, a plot, the CLI and a test all
evaluate the same expression::

    >>> GQA.bytes_per_token(N_L=80, N_h=64, N_g=8, d_QK=128, d_V=128, b=2)
    327680
"""

from __future__ import annotations

import sympy as sp

from kvlib.derive import CacheFormulas, derive
from kvlib.numeric import Formula
from kvlib.tables import TABLE_1, TensorTable, grouped

__all__ = ["Attention", "MHA", "GQA", "MQA", "KINDS", "ratio"]


class Attention:
    """One attention kind: its table, its derivation, and generated numeric functions."""

    QUANTITIES = ("elements_per_token_layer", "bytes_per_token", "bytes_per_sequence",
                  "bytes_per_batch", "weight_elements_per_layer")

    def __init__(self, name: str, table: TensorTable):
        self.name = name
        self.table = table
        self.symbolic: CacheFormulas = derive(name, table)
        for q in self.QUANTITIES:
            setattr(self, q, Formula(getattr(self.symbolic, q), f"{name}.{q}"))

    def __repr__(self) -> str:
        per_token = self.symbolic.elements_per_token_layer
        return f"Attention({self.name}: {per_token} per token per layer)"


def ratio(a: Attention, b: Attention) -> Formula:
    """How many times more ``a`` caches per token than ``b``, simplified by SymPy."""
    expr = sp.simplify(a.symbolic.elements_per_token_layer / b.symbolic.elements_per_token_layer)
    return Formula(expr, f"{a.name}/{b.name}")


MHA = Attention("MHA", TABLE_1)
GQA = Attention("GQA", grouped(TABLE_1))
MQA = Attention("MQA", grouped(TABLE_1, 1))

KINDS: dict[str, Attention] = {a.name: a for a in (MHA, GQA, MQA)}
