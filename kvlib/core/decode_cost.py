"""Decode cost per step per layer, as data, summed by SymPy (notebooks 03-04).

One decode step feeds one new token through one layer whose cache already holds
N_KV - 1 tokens (N_KV after the new one is appended). Each way of computing it
is a list of :class:`MatMul` rows, shapes in the notation's symbols, like the
tensor tables of :mod:`kvlib.core.tables`; SymPy adds them up. Nothing here is typed
as a total: ``DecodePath.flops`` is the sum of its rows, and ``.formula`` is the
generated numeric function (:class:`kvlib.core.numeric.Formula`).

Counting convention: a (m x k) @ (k x n) product is m k n multiply-adds and
2 m k n FLOPs. A RoPE rotation of a w-wide row is w outputs, each a 2-term dot
product, so it is a row "m x 2 x w". Softmax (N_h N_KV exponentials), scaling
and additions of partial scores are left out: they do not change the picture.

Widths (notebooks 03 and 04 use them the same way): ``d_QK`` is the width of the
query-key product that a head's key *up-projection* produces, DeepSeek's
``qk_nope_head_dim`` (128); ``d_R`` is the decoupled RoPE part (``qk_rope_head_dim``,
64). A design whose keys carry RoPE inside them (MHA with decompressed heads, RoPE on
the up-projected keys) has one key of width d_QK + d_R = 192, and is evaluated with
that sum in place of ``d_QK``.

Beyond one query token: every path takes ``queries`` (default 1, a decode step).
:data:`N_Q` (query tokens in one forward step, e.g. a prefill chunk attending to
N_KV cached tokens, causal mask ignored) gives the same rows for a chunk
(:data:`CHUNK_PATHS`, :func:`chunk_flops`), which is how prefill is compared with
decode (notebooks/engines/05_mla_decode_in_engines.ipynb, section 2).

Bytes read: :attr:`DecodePath.weight_elements` sums the weight rows (each weight is
read once per step); the cache a step reads comes from the attention kind's own
table (:attr:`DecodePath.cache`, derived in :mod:`kvlib.core.derive`). Their ratio
with the FLOPs is the step's arithmetic intensity (:attr:`DecodePath.intensity`,
FLOPs per byte), which a roofline compares with a GPU's ridge point.

The NumPy reference (:func:`kvlib.reference.mla.decode`) counts the multiply-adds of the
products it actually executes; the tests check that the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import sympy as sp

from kvlib.core.formulas import GQA, MHA, MLA, MLA_ROPE
from kvlib.core.notation import N_KV, B, N_g, N_h, b, d_in, d_L, d_Lq, d_QK, d_R, d_V
from kvlib.core.notation import N_Q as _N_Q
from kvlib.core.numeric import Formula

__all__ = ["MatMul", "DecodePath", "mha_path", "mla_path", "PATHS", "N_Q", "CHUNK_PATHS",
           "chunk_flops"]

_nkv, _nh, _ng = N_KV.symbol, N_h.symbol, N_g.symbol
_din, _dl, _dqk, _dr, _dv = d_in.symbol, d_L.symbol, d_QK.symbol, d_R.symbol, d_V.symbol
_dlq, _b, _B = d_Lq.symbol, b.symbol, B.symbol

N_Q = _N_Q.symbol
"""Query tokens in one forward step of one sequence (1 in decode; a prefill chunk's length),
the notation's :data:`kvlib.core.notation.N_Q` as a SymPy symbol: kvlib's own name, kept apart
from the key/value tokens N_KV."""


@dataclass(frozen=True)
class MatMul:
    """``copies`` products of shape (m x k) @ (k x n) in one decode step of one layer.

    ``weight``: the (k x n) operand is a weight matrix (read from memory once per step).
    """

    what: str
    m: sp.Expr
    k: sp.Expr
    n: sp.Expr
    copies: sp.Expr
    weight: bool = False

    @property
    def macs(self) -> sp.Expr:
        return self.copies * self.m * self.k * self.n


def _mm(what, m, k, n, copies=1, weight=False) -> MatMul:
    return MatMul(what, *(sp.sympify(v) for v in (m, k, n, copies)), weight=weight)


def _w(what, m, k, n, copies=1) -> MatMul:
    return _mm(what, m, k, n, copies, weight=True)


def _rope(what, rows, width, copies=1) -> MatMul:
    return _mm(f"RoPE: {what}", rows, 2, width, copies)


@dataclass(frozen=True)
class DecodePath:
    """One way to run a decode step; ``steps`` are its products, in order.

    ``cache``: cached elements per token per layer that the step reads, from the
    attention kind's table (``Attention.symbolic.elements_per_token_layer``).
    """

    name: str
    description: str
    steps: tuple[MatMul, ...]
    cache: sp.Expr = sp.Integer(0)

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
    def fixed(self) -> sp.Expr:
        """FLOPs of one step that do not grow with the context: flops at N_KV = 0."""
        return sp.factor(self.flops.subs(_nkv, 0))

    @cached_property
    def weight_elements(self) -> sp.Expr:
        """Weight elements the step reads (each weight row's k x n, times its copies)."""
        return sp.factor(sum((s.copies * s.k * s.n for s in self.steps if s.weight),
                             sp.Integer(0)))

    @cached_property
    def context_intensity(self) -> sp.Expr:
        """FLOPs per byte of cache read, for each cached token: per_context_token / (b cache).

        The step's arithmetic intensity once the context (and the batch) is long enough
        that the cache, not the weights, is what the step reads."""
        return sp.factor(self.per_context_token / (_b * self.cache))

    @cached_property
    def intensity(self) -> sp.Expr:
        """FLOPs per byte read by one decode step of a batch of B sequences of N_KV tokens:
        B flops / (b (weights + B N_KV cache)); weights are read once for the batch."""
        return (_B * self.flops) / (_b * (self.weight_elements + _B * _nkv * self.cache))

    @cached_property
    def formula(self) -> Formula:
        return Formula(self.flops, f"{self.name} decode FLOPs per step per layer")

    @cached_property
    def context_formula(self) -> Formula:
        return Formula(self.per_context_token, f"{self.name} FLOPs per cached token per step")

    @cached_property
    def fixed_formula(self) -> Formula:
        return Formula(self.fixed, f"{self.name} FLOPs per step whatever the context")

    @cached_property
    def weight_formula(self) -> Formula:
        return Formula(self.weight_elements, f"{self.name} weight elements read per step")

    @cached_property
    def context_intensity_formula(self) -> Formula:
        return Formula(self.context_intensity, f"{self.name} FLOPs per byte of cache read")

    @cached_property
    def intensity_formula(self) -> Formula:
        return Formula(self.intensity, f"{self.name} FLOPs per byte read per step")

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


def _query_source(query_latent: bool, q) -> tuple[list[MatMul], str, sp.Expr, str]:
    """The rows that make what each head's query projection reads: x itself, or DeepSeek's
    query latent c^Q = x W^DQ (q_lora_rank = d_Lq). Returns (rows, name, width, W^Q's name)."""
    if query_latent:
        return [_w("query latent c^Q = x W^DQ", q, _din, _dlq)], "c^Q", _dlq, "W^UQ_h"
    return [], "x", _din, "W^Q_h"


def mha_path(grouped: bool = False, queries=1, query_latent: bool = False) -> DecodePath:
    """MHA (or GQA with N_g key/value heads): K and V of every head are cached,
    so a step projects only the new token and reads the cache once per head."""
    kv = _ng if grouped else _nh
    name = ("GQA" if grouped else "MHA") + (", query latent" if query_latent else "")
    q = sp.sympify(queries)
    steps, src, width, wq = _query_source(query_latent, q)
    cache = (GQA if grouped else MHA).symbolic.elements_per_token_layer
    return DecodePath(name, "Cache K and V per key/value head; attend over them.", (
        *steps,
        _w(f"q_h = {src} {wq}", q, width, _dqk, _nh),
        _w("k_g = x W^K_g (new token)", q, _din, _dqk, kv),
        _w("v_g = x W^V_g (new token)", q, _din, _dv, kv),
        _mm("scores q_h K_g^T", q, _dqk, _nkv, _nh),
        _mm("weighted values A_h V_g", q, _nkv, _dv, _nh),
        _w("output o_h W^O_h", q, _dv, _din, _nh),
    ), cache)


def mla_path(cache: str = "latent", absorbed: bool = False, rope: str | None = None,
             merged: bool = False, absorb_values: bool = False, queries=1,
             query_latent: bool = False) -> DecodePath:
    """A decode step of MLA (Table 2), optionally with RoPE.

    cache:    "latent" (cache L, plus K^R when decoupled) or "expanded" (cache the
              per-head K and V computed from the latent: the common naive code).
    absorbed: work on the latent directly (W^LK_h moves to the query side, W^LV_h
              to the output side); needs the latent cache.
    absorb_values: re-expand every cached key but absorb the values: sum the latents
              with the attention weights, then apply W^LV_h once (DeepSeek-V2,
              arXiv:2405.04434, section 2.1.3: RoPE blocks absorbing W^UK only). Needs
              the latent cache; the fair alternative to decoupling (notebook 04).
    rope:     None, "keys" (RoPE on the up-projected queries and keys, d_QK wide)
              or "decoupled" (an extra d_R-wide RoPE part, one shared key per token).
    merged:   absorbed only: precompute W^Q_h W^LK_h^T (d_in x d_L) and
              W^LV_h W^O_h (d_L x d_in) instead of applying the factors in turn.
    queries:  query tokens in the step (1 in decode; :data:`N_Q` for a chunk).
    query_latent: DeepSeek's query compression (q_lora_rank d_Lq): x W^DQ once, then
              each head's W^UQ_h (and W^QR_h) reads that d_Lq-wide latent.
    """
    if cache not in ("latent", "expanded"):
        raise ValueError(f"cache must be 'latent' or 'expanded', got {cache!r}")
    if rope not in (None, "keys", "decoupled"):
        raise ValueError(f"rope must be None, 'keys' or 'decoupled', got {rope!r}")
    if absorbed and cache != "latent":
        raise ValueError("absorption works on the cached latent: use cache='latent'")
    if absorb_values and (absorbed or cache != "latent"):
        raise ValueError("absorb_values re-expands the keys from the cached latent: use "
                         "cache='latent' and absorbed=False (absorbed=True absorbs both)")
    if absorbed and rope == "keys":
        raise ValueError(
            "no absorbed path with RoPE on the up-projected keys: the key's rotation R_j "
            "sits between W^LK_h and the query and depends on the key's position j, so "
            "there is no position-independent merged matrix (notebook 04); the values "
            "can still be absorbed: absorb_values=True"
        )
    if merged and not absorbed:
        raise ValueError("merged=True only applies to the absorbed path")
    dec = rope == "decoupled"
    q = sp.sympify(queries)
    steps = [_w("latent l = x W^L", q, _din, _dl)]
    src_rows, src, width, wq = _query_source(query_latent, q)
    steps += src_rows
    if absorbed and merged:
        steps.append(_w(f"absorbed query {src} ({wq} W^LK_h^T)", q, width, _dl, _nh))
    elif absorbed:
        steps += [_w(f"q_h = {src} {wq}", q, width, _dqk, _nh),
                  _w("absorbed query q_h W^LK_h^T", q, _dqk, _dl, _nh)]
    else:
        steps.append(_w(f"q_h = {src} {wq}", q, width, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("q_h", q, _dqk, _nh))
    if dec:
        steps += [_w(f"q^R_h = {src} W^QR_h", q, width, _dr, _nh), _rope("q^R_h", q, _dr, _nh),
                  _w("k^R = x W^KR (new token)", q, _din, _dr), _rope("k^R", q, _dr)]
    if cache == "expanded":
        steps.append(_w("k_h = l W^LK_h (new token)", q, _dl, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("k_h (new token)", q, _dqk, _nh))
        steps += [_w("v_h = l W^LV_h (new token)", q, _dl, _dv, _nh),
                  _mm("scores [q_h, q^R_h] K_h^T" if dec else "scores q_h K_h^T",
                      q, _dqk + _dr if dec else _dqk, _nkv, _nh),
                  _mm("weighted values A_h V_h", q, _nkv, _dv, _nh),
                  _w("output o_h W^O_h", q, _dv, _din, _nh)]
    elif not absorbed:
        steps.append(_w("K_h = L W^LK_h (every cached token)", _nkv, _dl, _dqk, _nh))
        if rope == "keys":
            steps.append(_rope("K_h (every cached token)", _nkv, _dqk, _nh))
        if not absorb_values:
            steps.append(_w("V_h = L W^LV_h (every cached token)", _nkv, _dl, _dv, _nh))
        steps.append(_mm("scores q_h K_h^T", q, _dqk, _nkv, _nh))
        if dec:
            steps.append(_mm("RoPE scores q^R_h K^R^T", q, _dr, _nkv, _nh))
        if absorb_values:
            steps += [_mm("weighted latent A_h L", q, _nkv, _dl, _nh),
                      _w("values (A_h L) W^LV_h", q, _dl, _dv, _nh)]
        else:
            steps.append(_mm("weighted values A_h V_h", q, _nkv, _dv, _nh))
        steps.append(_w("output o_h W^O_h", q, _dv, _din, _nh))
    else:
        steps.append(_mm("latent scores q~_h L^T", q, _dl, _nkv, _nh))
        if dec:
            steps.append(_mm("RoPE scores q^R_h K^R^T", q, _dr, _nkv, _nh))
        steps.append(_mm("weighted latent A_h L", q, _nkv, _dl, _nh))
        if merged:
            steps.append(_w("output (A_h L)(W^LV_h W^O_h)", q, _dl, _din, _nh))
        else:
            steps += [_w("values (A_h L) W^LV_h", q, _dl, _dv, _nh),
                      _w("output o_h W^O_h", q, _dv, _din, _nh)]
    what = {None: "no positional encoding", "keys": "RoPE on the up-projected q and k",
            "decoupled": "decoupled RoPE"}[rope]
    how = ("absorbed" + (", merged matrices" if merged else "")) if absorbed else (
        "cache expanded K, V" if cache == "expanded" else
        "re-expand K, absorb V" if absorb_values else "re-expand K, V from L every step")
    if query_latent:
        how += ", query latent"
    name = ("MLA+RoPE" if dec else "MLA" if rope is None else "MLA+RoPE(keys)") + f" {how}"
    if cache == "expanded":
        reads = MHA.symbolic.elements_per_token_layer
        if dec:  # every head's key carries its copy of the shared RoPE key
            reads = reads.subs(_dqk, _dqk + _dr)
    else:
        reads = (MLA_ROPE if dec else MLA).symbolic.elements_per_token_layer
    return DecodePath(name, f"MLA, {what}; {how}.", tuple(steps), reads)


_VARIANTS = {
    "MLA naive": dict(),
    "MLA absorbed values": dict(absorb_values=True),
    "MLA absorbed": dict(absorbed=True),
    "MLA absorbed merged": dict(absorbed=True, merged=True),
    "MLA expanded cache": dict(cache="expanded"),
    "MLA+RoPE(keys) naive": dict(rope="keys"),
    "MLA+RoPE(keys) absorbed values": dict(rope="keys", absorb_values=True),
    "MLA+RoPE(keys) expanded cache": dict(cache="expanded", rope="keys"),
    "MLA+RoPE naive": dict(rope="decoupled"),
    "MLA+RoPE absorbed": dict(absorbed=True, rope="decoupled"),
    "MLA+RoPE absorbed merged": dict(absorbed=True, rope="decoupled", merged=True),
    "MLA+RoPE expanded cache": dict(cache="expanded", rope="decoupled"),
}
# DeepSeek's query compression (q_lora_rank), for the paths notebook 04 prices at its shape.
_QUERY_LATENT = ("MLA absorbed", "MLA+RoPE(keys) naive", "MLA+RoPE(keys) absorbed values",
                 "MLA+RoPE(keys) expanded cache", "MLA+RoPE naive", "MLA+RoPE absorbed",
                 "MLA+RoPE absorbed merged", "MLA+RoPE expanded cache")

PATHS: dict[str, DecodePath] = {
    "MHA": mha_path(),
    "GQA": mha_path(grouped=True),
    "MHA, query latent": mha_path(query_latent=True),
    "GQA, query latent": mha_path(grouped=True, query_latent=True),
    **{k: mla_path(**v) for k, v in _VARIANTS.items()},
    **{f"{k}, query latent": mla_path(**_VARIANTS[k], query_latent=True) for k in _QUERY_LATENT},
}
"""Every decode path the notebooks compare, by a short name. ", query latent": the same
path with DeepSeek's query compression (q_lora_rank d_Lq)."""

CHUNK_PATHS: dict[str, DecodePath] = {
    "MHA": mha_path(queries=N_Q),
    **{k: mla_path(**v, queries=N_Q) for k, v in _VARIANTS.items()},
    **{f"{k}, query latent": mla_path(**_VARIANTS[k], query_latent=True, queries=N_Q)
       for k in _QUERY_LATENT},
}
"""The same paths for N_Q query tokens in one step (a prefill chunk, causal mask ignored)."""


@cache
def _chunk_formula(name: str) -> Formula:
    # One compiled function per path, N_Q among its arguments (was one per path and N_Q).
    return Formula(CHUNK_PATHS[name].flops, f"{name} FLOPs per step per layer")


def chunk_flops(name: str, N_Q: int, **sizes) -> int:
    """FLOPs of one step of one layer with ``N_Q`` query tokens attending to ``N_KV``
    cached tokens, path ``name`` of :data:`CHUNK_PATHS` (N_Q = 1 is :data:`PATHS`' step)."""
    if type(N_Q) is not int or N_Q < 1:
        raise ValueError(f"N_Q (query tokens) must be a positive int, got {N_Q!r}")
    return _chunk_formula(name)(N_Q=N_Q, **sizes)
