"""The paper's tensor tables, as data (notebooks 01-04).

Each table lists the tensors one attention layer holds while it processes an
input X of N_KV tokens (X has shape N_KV x d_in): its weights, the activations
it forms and drops, and the tensors it keeps for later tokens, the KV cache.
Shapes are in the paper's symbols (:mod:`kvlib.notation`); ``copies`` says how
many such tensors the layer has (N_h for per-head tensors, 1 for shared ones).

Nothing here is a formula for the cache: :mod:`kvlib.derive` reads the
``cache`` rows and derives the formulas with SymPy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import sympy as sp

from kvlib.notation import N_KV, N_g, N_h, d_in, d_QK, d_V

__all__ = ["Role", "Tensor", "TensorTable", "TABLE_1", "grouped"]


class Role(StrEnum):
    WEIGHT = "weight"
    ACTIVATION = "activation"  # formed during the forward pass, then dropped
    CACHE = "cache"  # kept for every later token: the KV cache

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Tensor:
    """One row of a table: ``copies`` tensors of shape ``rows x cols`` per layer."""

    name: str  # plain text, e.g. "W^K_h"
    latex: str  # e.g. r"W^{K}_h"
    rows: sp.Expr
    cols: sp.Expr
    copies: sp.Expr
    role: Role
    kv_side: bool = False  # follows the number of key/value heads under GQA
    note: str = ""

    @property
    def elements(self) -> sp.Expr:
        """Elements of all ``copies`` in one layer."""
        return self.copies * self.rows * self.cols


@dataclass(frozen=True)
class TensorTable:
    """A named, ordered list of :class:`Tensor` rows for one layer."""

    name: str
    caption: str
    tensors: tuple[Tensor, ...]

    def __getitem__(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        known = ", ".join(t.name for t in self.tensors)
        raise KeyError(f"{self.name} has no tensor {name!r}; it has: {known}")

    def __iter__(self):
        return iter(self.tensors)

    def with_role(self, role: Role) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role is role)

    def _repr_markdown_(self) -> str:
        lines = [
            f"**{self.name}.** {self.caption}",
            "",
            "| tensor | copies per layer | shape | role | note |",
            "|---|---|---|---|---|",
        ]
        for t in self.tensors:
            shape = rf"${sp.latex(t.rows)} \times {sp.latex(t.cols)}$"
            lines.append(
                f"| ${t.latex}$ | ${sp.latex(t.copies)}$ | {shape} | {t.role} | {t.note} |"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        rows = [f"{self.name}: {self.caption}"]
        for t in self.tensors:
            rows.append(f"  {t.name:<8} {t.copies} x ({t.rows} x {t.cols})  {t.role}")
        return "\n".join(rows)


def _t(name, latex, rows, cols, copies, role, kv_side=False, note=""):
    return Tensor(name, latex, sp.sympify(rows), sp.sympify(cols), sp.sympify(copies),
                  role, kv_side, note)


W, A, C = Role.WEIGHT, Role.ACTIVATION, Role.CACHE

TABLE_1 = TensorTable(
    "Table 1",
    "Tensors of one multi-head attention layer on an input X of N_KV tokens.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("W^Q_h", r"W^{Q}_h", d_in, d_QK, N_h, W),
        _t("W^K_h", r"W^{K}_h", d_in, d_QK, N_h, W, kv_side=True),
        _t("W^V_h", r"W^{V}_h", d_in, d_V, N_h, W, kv_side=True),
        _t("W^O_h", r"W^{O}_h", d_V, d_in, N_h, W, note="rows of W^O for head h"),
        _t("Q_h", r"Q_h = X W^{Q}_h", N_KV, d_QK, N_h, A),
        _t("K_h", r"K_h = X W^{K}_h", N_KV, d_QK, N_h, C, kv_side=True),
        _t("V_h", r"V_h = X W^{V}_h", N_KV, d_V, N_h, C, kv_side=True),
        _t("S_h", r"S_h = \mathrm{softmax}(Q_h K_h^{T} / \sqrt{d_{QK}})", N_KV, N_KV, N_h, A,
           note="attention scores"),
        _t("Y", r"Y = \sum_h S_h V_h W^{O}_h", N_KV, d_in, 1, A, note="layer output"),
    ),
)


def grouped(table: TensorTable, kv_heads: sp.Expr | int = N_g.symbol) -> TensorTable:
    """The paper's GQA rule: replace N_h by the number of key/value heads in the
    cache terms and in W^K, W^V (the rows marked ``kv_side``).

    ``kv_heads=1`` gives multi-query attention (MQA).
    """
    kv = sp.sympify(kv_heads)
    name = "MQA" if kv == 1 else "GQA"
    rows = tuple(
        replace(t, copies=t.copies.subs(N_h.symbol, kv)) if t.kv_side else t
        for t in table.tensors
    )
    caption = f"{table.name} with N_h -> {kv} in the key/value rows ({name})."
    return TensorTable(f"{table.name} ({name})", caption, rows)
