"""Decode cost per step per layer, as data, summed by SymPy (notebooks 03-04).

One decode step feeds one new token through one layer whose cache already holds
N_KV - 1 tokens (N_KV after the new one is appended). Each way of computing it
is a list of :class:`MatMul` rows, shapes in the paper's symbols, like the
tensor tables of :mod:`kvlib.core.tables`; SymPy adds them up. Nothing here is typed
as a total: ``DecodePath.flops`` is the sum of its rows, and ``.formula`` is the
generated numeric function (:class:`kvlib.core.numeric.Formula`).

Counting convention: a (m x k) @ (k x n) product is m k n multiply-adds and
2 m k n FLOPs. A RoPE rotation of a w-wide row is w outputs, each a 2-term dot
product, so it is a row "m x 2 x w". Softmax (N_h N_KV exponentials), scaling
and additions of partial scores are left out: they do not change the picture.

The NumPy reference (:func:`kvlib.reference.mla.decode`) counts the multiply-adds of the
products it actually executes; the tests check that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy as sp

from kvlib.core.notation import N_KV, N_g, N_h, d_in, d_L, d_QK, d_R, d_V
from kvlib.core.numeric import Formula

__all__ = ["MatMul", "DecodePath", "mha_path", "mla_path", "PATHS"]

_nkv, _nh, _ng = N_KV.symbol, N_h.symbol, N_g.symbol
_din, _dl, _dqk, _dr, _dv = d_in.symbol, d_L.symbol, d_QK.symbol, d_R.symbol, d_V.symbol


@dataclass(frozen=True)
class MatMul:
    """``copies`` products of shape (m x k) @ (k x n) in one decode step of one layer."""

    what: str
    m: sp.Expr
    k: sp.Expr
    n: sp.Expr
    copies: sp.Expr

    @property
    def macs(self) -> sp.Expr:
        return self.copies * self.m * self.k * self.n


def _mm(what, m, k, n, copies=1) -> MatMul:
    return MatMul(what, *(sp.sympify(v) for v in (m, k, n, copies)))


def _rope(what, rows, width, copies=1) -> MatMul:
    return _mm(f"RoPE: {what}", rows, 2, width, copies)


@dataclass(frozen=True)
class DecodePath:
    """One way to run a decode step; ``steps`` are its products, in order."""

    name: str
    description: str
    steps: tuple[MatMul, ...]

    @cached_property  # SymPy work once per path, not on every widget move
    def macs(self) -> sp.Expr:
        """Multiply-adds per decode step per layer, expanded."""
        return sp.expand(sum((s.macs for s in self.steps), sp.Integer(0)))

    @cached_property
    def flops(self) -> sp.Expr:
        """FLOPs (2 per multiply-add) per decode step per layer, factored by N_KV."""
        return sp.collect(2 * self.macs, _nkv)

    @cached_property
    def per_context_token(self) -> sp.Expr:
        """FLOPs each cached token adds to one step: d(flops)/d(N_KV)."""
        return sp.factor(sp.diff(self.flops, _nkv))

    @cached_property
    def formula(self) -> Formula:
        return Formula(self.flops, f"{self.name} decode FLOPs per step per layer")

    @cached_property
    def context_formula(self) -> Formula:
        return Formula(self.per_context_token, f"{self.name} FLOPs per cached token per step")

    def _repr_markdown_(self) -> str:
        lines = [f"**{self.name}.** {self.description}", "",
                 "| product | copies | shape | multiply-adds |", "|---|---|---|---|"]
        for s in self.steps:
            shape = rf"$({sp.latex(s.m)} \times {sp.latex(s.k)}) \cdot " \
                    rf"({sp.latex(s.k)} \times {sp.latex(s.n)})$"
            lines.append(f"| {s.what} | ${sp.latex(s.copies)}$ | {shape} | "
                         f"${sp.latex(s.macs)}$ |")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"DecodePath({self.name}: {self.flops} FLOPs per step per layer)"


def mha_path(grouped: bool = False) -> DecodePath:
    """MHA (or GQA with N_g key/value heads): K and V of every head are cached,
    so a step projects only the new token and reads the cache once per head."""
    kv = _ng if grouped else _nh
    name = "GQA" if grouped else "MHA"
    return DecodePath(name, "Cache K and V per key/value head; attend over them.", (
        _mm("q_h = x W^Q_h", 1, _din, _dqk, _nh),
        _mm("k_g = x W^K_g (new token)", 1, _din, _dqk, kv),
        _mm("v_g = x W^V_g (new token)", 1, _din, _dv, kv),
        _mm("scores q_h K_g^T", 1, _dqk, _nkv, _nh),
        _mm("weighted values s_h V_g", 1, _nkv, _dv, _nh),
        _mm("output o_h W^O_h", 1, _dv, _din, _nh),
    ))


def mla_path(cache: str = "latent", absorbed: bool = False, rope: str | None = None,
             merged: bool = False) -> DecodePath:
    """A decode step of MLA (Table 2), optionally with RoPE.

    cache:    "latent" (cache L, plus K^R when decoupled) or "expanded" (cache the
              per-head K and V computed from the latent: the common naive code).
    absorbed: work on the latent directly (W^LK_h moves to the query side, W^LV_h
              to the output side); needs the latent cache.
    rope:     None, "keys" (RoPE on the up-projected queries and keys, d_QK wide)
              or "decoupled" (an extra d_R-wide RoPE part, one shared key per token).
    merged:   absorbed only: precompute W^Q_h W^LK_h^T (d_in x d_L) and
              W^LV_h W^O_h (d_L x d_in) instead of applying the factors in turn.
    """
    if cache not in ("latent", "expanded"):
        raise ValueError(f"cache must be 'latent' or 'expanded', got {cache!r}")
    if rope not in (None, "keys", "decoupled"):
        raise ValueError(f"rope must be None, 'keys' or 'decoupled', got {rope!r}")
    if absorbed and cache != "latent":
        raise ValueError("absorption works on the cached latent: use cache='latent'")
    if absorbed and rope == "keys":
        raise ValueError(
            "no absorbed path with RoPE on the up-projected keys: the key's rotation R_n "
            "sits between W^LK_h and the query and depends on the key's position n, so "
            "there is no position-independent merged matrix (notebook 04)"
        )
    if merged and not absorbed:
        raise ValueError("merged=True only applies to the absorbed path")
    dec = rope == "decoupled"
    steps = [_mm("latent l = x W^L", 1, _din, _dl)]
    if absorbed and merged:
        steps.append(_mm("absorbed query x (W^Q_h W^LK_h^T)", 1, _din, _dl, _nh))
    elif absorbed:
        steps += [_mm("q_h = x W^Q_h", 1, _din, _dqk, _nh),
                  _mm("absorbed query q_h W^LK_h^T", 1, _dqk, _dl, _nh)]
    else:
        steps.append(_mm("q_h = x W^Q_h", 1, _din, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("q_h", 1, _dqk, _nh))
    if dec:
        steps += [_mm("q^R_h = x W^QR_h", 1, _din, _dr, _nh), _rope("q^R_h", 1, _dr, _nh),
                  _mm("k^R = x W^KR (new token)", 1, _din, _dr), _rope("k^R", 1, _dr)]
    if cache == "expanded":
        steps.append(_mm("k_h = l W^LK_h (new token)", 1, _dl, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("k_h (new token)", 1, _dqk, _nh))
        steps += [_mm("v_h = l W^LV_h (new token)", 1, _dl, _dv, _nh),
                  _mm("scores [q_h, q^R_h] K_h^T" if dec else "scores q_h K_h^T",
                      1, _dqk + _dr if dec else _dqk, _nkv, _nh),
                  _mm("weighted values s_h V_h", 1, _nkv, _dv, _nh),
                  _mm("output o_h W^O_h", 1, _dv, _din, _nh)]
    elif not absorbed:
        steps.append(_mm("K_h = L W^LK_h (every cached token)", _nkv, _dl, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("K_h (every cached token)", _nkv, _dqk, _nh))
        steps += [_mm("V_h = L W^LV_h (every cached token)", _nkv, _dl, _dv, _nh),
                  _mm("scores q_h K_h^T", 1, _dqk, _nkv, _nh)]
        if dec:
            steps.append(_mm("RoPE scores q^R_h K^R^T", 1, _dr, _nkv, _nh))
        steps += [_mm("weighted values s_h V_h", 1, _nkv, _dv, _nh),
                  _mm("output o_h W^O_h", 1, _dv, _din, _nh)]
    else:
        steps.append(_mm("latent scores q~_h L^T", 1, _dl, _nkv, _nh))
        if dec:
            steps.append(_mm("RoPE scores q^R_h K^R^T", 1, _dr, _nkv, _nh))
        steps.append(_mm("weighted latent s_h L", 1, _nkv, _dl, _nh))
        if merged:
            steps.append(_mm("output (s_h L)(W^LV_h W^O_h)", 1, _dl, _din, _nh))
        else:
            steps += [_mm("values (s_h L) W^LV_h", 1, _dl, _dv, _nh),
                      _mm("output o_h W^O_h", 1, _dv, _din, _nh)]
    what = {None: "no positional encoding", "keys": "RoPE on the up-projected q and k",
            "decoupled": "decoupled RoPE"}[rope]
    how = ("absorbed" + (", merged matrices" if merged else "")) if absorbed else (
        "cache expanded K, V" if cache == "expanded" else "re-expand K, V from L every step")
    name = ("MLA+RoPE" if dec else "MLA" if rope is None else "MLA+RoPE(keys)") + f" {how}"
    return DecodePath(name, f"MLA, {what}; {how}.", tuple(steps))


PATHS: dict[str, DecodePath] = {
    "MHA": mha_path(),
    "GQA": mha_path(grouped=True),
    "MLA naive": mla_path(),
    "MLA absorbed": mla_path(absorbed=True),
    "MLA absorbed merged": mla_path(absorbed=True, merged=True),
    "MLA expanded cache": mla_path(cache="expanded"),
    "MLA+RoPE(keys) naive": mla_path(rope="keys"),
    "MLA+RoPE(keys) expanded cache": mla_path(cache="expanded", rope="keys"),
    "MLA+RoPE naive": mla_path(rope="decoupled"),
    "MLA+RoPE absorbed": mla_path(absorbed=True, rope="decoupled"),
    "MLA+RoPE absorbed merged": mla_path(absorbed=True, rope="decoupled", merged=True),
    "MLA+RoPE expanded cache": mla_path(cache="expanded", rope="decoupled"),
}
"""Every decode path the notebooks compare, by a short name."""
