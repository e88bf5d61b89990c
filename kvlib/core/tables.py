"""Tensor tables of attention layers, as data (notebooks 01-04).

Table 1 (MHA) and Table 2 (MLA) follow Serret's tables (arXiv:2604.00965), Table 2 with each
head's query kept whole where the paper factors it (notebook 03); ``TABLE_2_ROPE`` adds
DeepSeek-V2's decoupled RoPE key, which the paper's tables do not contain.

Each table lists the tensors one attention layer holds while it processes an
input X of N_KV tokens (X has shape N_KV x d_in): its weights, the activations
it forms and drops, and the tensors it keeps for later tokens, the KV cache.
Shapes are in the collection's symbols (:mod:`kvlib.core.notation`, each with its source);
``copies`` says how many such tensors the layer has (N_h for per-head tensors, 1 for shared ones).

Nothing here is a formula for the cache: :mod:`kvlib.core.derive` reads the
``cache`` rows and derives the formulas with SymPy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import sympy as sp

from kvlib.core.notation import N_KV, N_g, N_h, d_in, d_L, d_Lq, d_QK, d_R, d_V

__all__ = [
    "Role", "Tensor", "TensorTable", "TABLE_1", "TABLE_2", "TABLE_2_ROPE", "grouped",
    "decoupled_rope", "query_compressed",
]


class Role(StrEnum):
    WEIGHT = "weight"
    ACTIVATION = "activation"  # formed during the forward pass, then dropped
    CACHE = "cache"  # kept for every later token: the KV cache
    STATE = "state"  # kept per sequence, the same size whatever the context (notebook 07)

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
    store: str = ""  # for a state row: "conv" or "ssm", which sets its element type

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
            shape = rf"${_factor_latex(t.rows)} \times {_factor_latex(t.cols)}$"
            lines.append(
                f"| ${t.latex}$ | ${sp.latex(t.copies)}$ | {shape} | {t.role} | {t.note} |"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        rows = [f"{self.name}: {self.caption}"]
        for t in self.tensors:
            rows.append(f"  {t.name:<8} {t.copies} x ({_factor(t.rows)} x {_factor(t.cols)})  "
                        f"{t.role}")
        return "\n".join(rows)


def _factor_latex(size) -> str:
    """A shape's side in LaTeX, in parentheses when it is a sum: (d_conv - 1) x (...)."""
    text = sp.latex(size)
    return rf"\left({text}\right)" if isinstance(size, sp.Add) else text


def _factor(size) -> str:
    return f"({size})" if isinstance(size, sp.Add) else str(size)


def _t(name, latex, rows, cols, copies, role, kv_side=False, note="", store=""):
    return Tensor(name, latex, sp.sympify(rows), sp.sympify(cols), sp.sympify(copies),
                  role, kv_side, note, store)


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
        _t("A_h", r"A_h = \mathrm{softmax}(Q_h K_h^{T} / \sqrt{d_{QK}})", N_KV, N_KV, N_h, A,
           note="attention weights: the softmax of the scores Z_h"),
        _t("Y", r"Y = \sum_h A_h V_h W^{O}_h", N_KV, d_in, 1, A, note="layer output"),
    ),
)


def grouped(table: TensorTable, kv_heads: sp.Expr | int = N_g.symbol) -> TensorTable:
    """The paper's GQA rule: replace N_h by the number of key/value heads in the
    cache terms and in W^K, W^V (the rows marked ``kv_side``).

    ``kv_heads=1`` gives multi-query attention (MQA).
    """
    kv = sp.sympify(kv_heads)
    name = "MQA" if kv == 1 else "GQA"
    # Key/value tensors are indexed by their group g, read by query heads h with
    # g = floor(h N_g / N_h).
    rows = tuple(
        replace(t, copies=t.copies.subs(N_h.symbol, kv), latex=t.latex.replace("}_h", "}_g")
                .replace("K_h", "K_g").replace("V_h", "V_g"),
                note=t.note or "one per KV head g")
        if t.kv_side else
        replace(t, latex=t.latex.replace("K_h^{T}", "K_{g(h)}^{T}").replace("V_h", "V_{g(h)}"))
        for t in table.tensors
    )
    caption = f"{table.name} with N_h -> {kv} in the key/value rows ({name})."
    return TensorTable(f"{table.name} ({name})", caption, rows)


TABLE_2 = TensorTable(
    "Table 2",
    "Tensors of one multi-head latent attention (MLA) layer on an input X of N_KV tokens: "
    "one shared latent per token is cached, each head up-projects it to its keys and values.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("W^Q_h", r"W^{Q}_h", d_in, d_QK, N_h, W),
        _t("W^L", r"W^{L}", d_in, d_L, 1, W, note="shared down-projection (kv_lora_rank)"),
        _t("W^LK_h", r"W^{LK}_h", d_L, d_QK, N_h, W, note="key up-projection"),
        _t("W^LV_h", r"W^{LV}_h", d_L, d_V, N_h, W, note="value up-projection"),
        _t("W^O_h", r"W^{O}_h", d_V, d_in, N_h, W, note="rows of W^O for head h"),
        _t("L", r"L = X W^{L}", N_KV, d_L, 1, C, note="the latent: one d_L vector per token"),
        _t("Q_h", r"Q_h = X W^{Q}_h", N_KV, d_QK, N_h, A),
        _t("K_h", r"K_h = L W^{LK}_h", N_KV, d_QK, N_h, A, note="formed from L, not cached"),
        _t("V_h", r"V_h = L W^{LV}_h", N_KV, d_V, N_h, A, note="formed from L, not cached"),
        _t("A_h", r"A_h = \mathrm{softmax}(Q_h K_h^{T} / \sqrt{d_{QK}})", N_KV, N_KV, N_h, A,
           note="attention weights: the softmax of the scores Z_h"),
        _t("Y", r"Y = \sum_h A_h V_h W^{O}_h", N_KV, d_in, 1, A, note="layer output"),
    ),
)


def decoupled_rope(table: TensorTable = TABLE_2) -> TensorTable:
    """Add the decoupled-RoPE rows (DeepSeek-V2) to an MLA table (notebook 04).

    Each head's query gets an extra d_R-wide part Q^R_h = RoPE(X W^{QR}_h); one
    d_R-wide key per token, K^R = RoPE(X W^{KR}), shared by all heads, is cached
    beside the latent. Scores become (Q_h K_h^T + Q^R_h K^{R T}) / sqrt(d_QK + d_R).
    """
    extra_weights = (
        _t("W^QR_h", r"W^{QR}_h", d_in, d_R, N_h, W, note="RoPE part of each query"),
        _t("W^KR", r"W^{KR}", d_in, d_R, 1, W, note="shared RoPE key projection"),
    )
    query_part = _t("Q^R_h", r"Q^{R}_h = \mathrm{RoPE}(X W^{QR}_h)", N_KV, d_R, N_h, A)
    key_part = _t("K^R", r"K^{R} = \mathrm{RoPE}(X W^{KR})", N_KV, d_R, 1, C,
                  note="one RoPE key per token, shared by all heads, cached")
    rows: list[Tensor] = []
    for t in table.tensors:
        if t.name == "A_h":
            t = replace(t, latex=r"A_h = \mathrm{softmax}((Q_h K_h^{T} + Q^{R}_h K^{R\,T})"
                        r" / \sqrt{d_{QK} + d_R})")
        rows.append(t)
        if t.name == "W^O_h":
            rows.extend(extra_weights)
        if t.name == "L":
            rows.append(key_part)
        if t.name == "Q_h":
            rows.append(query_part)
    return TensorTable(f"{table.name} + decoupled RoPE",
                       f"{table.caption} Plus the decoupled RoPE query and key parts.",
                       tuple(rows))


TABLE_2_ROPE = decoupled_rope(TABLE_2)


def query_compressed(table: TensorTable) -> TensorTable:
    """Replace each W^Q_h (d_in x d_QK) by DeepSeek's query compression (q_lora_rank).

    W^{DQ} (d_in x d_Lq, shared) then W^{UQ}_h (d_Lq x d_QK, per head); with decoupled
    RoPE, W^{QR}_h reads the query latent too (d_Lq x d_R). Only weight rows and one
    activation change: no cache row does.
    """
    rows: list[Tensor] = []
    for t in table.tensors:
        if t.name == "W^Q_h":
            rows.append(_t("W^DQ", r"W^{DQ}", d_in, d_Lq, 1, W,
                           note="query down-projection (q_lora_rank)"))
            rows.append(_t("W^UQ_h", r"W^{UQ}_h", d_Lq, d_QK, N_h, W,
                           note="query up-projection"))
        elif t.name == "W^QR_h":
            rows.append(replace(t, rows=d_Lq.symbol, note="RoPE query part, from the query latent"))
        elif t.name == "Q_h":
            rows.append(_t("C^Q", r"C^{Q} = X W^{DQ}", N_KV, d_Lq, 1, A, note="query latent"))
            rows.append(replace(t, latex=r"Q_h = C^{Q} W^{UQ}_h"))
        else:
            rows.append(t)
    return TensorTable(f"{table.name} + query compression",
                       f"{table.caption} Queries pass through a d_Lq-wide latent.", tuple(rows))
