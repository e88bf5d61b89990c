"""The paper's notation, defined once for the whole collection (notebook 01, "Notation").

Symbols follow M. F. Serret, *Understanding Transformers and Attention Mechanisms:
An Introduction for Applied Mathematicians* (arXiv:2604.00965, 2026). The paper
names the number of key/value *heads* only in words; here it is ``N_g`` (GQA's
number of groups: each group of query heads shares one key/value head).

Beware a clash of names: ``N_KV`` counts key/value *tokens* (the rows of the
cached K and V), as in the paper, while "KV heads" is ``N_g``.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

__all__ = ["SYMBOLS", "STATE_SYMBOLS", "ALL_SYMBOLS", "Symbol", "by_name"]


@dataclass(frozen=True)
class Symbol:
    """One symbol of the notation: the SymPy symbol, what it counts, and its unit."""

    symbol: sp.Symbol
    meaning: str
    unit: str

    @property
    def name(self) -> str:
        return self.symbol.name

    def _sympy_(self) -> sp.Symbol:  # lets sp.sympify(N_h) give the SymPy symbol
        return self.symbol

    @property
    def integer(self) -> bool:
        return bool(self.symbol.is_integer)


def _count(name: str, meaning: str, unit: str = "count") -> Symbol:
    return Symbol(sp.Symbol(name, positive=True, integer=True), meaning, unit)


N_L = _count("N_L", "layers")
N_h = _count("N_h", "query heads")
N_g = _count("N_g", "key/value heads (GQA groups)")
N_KV = _count("N_KV", "key/value tokens cached (context length)", "tokens")
N_Q = _count("N_Q", "query tokens in one step (1 in decode; a prefill chunk's length)", "tokens")
d_in = _count("d_in", "model (embedding) width", "elements")
d_QK = _count("d_QK", "query/key width per head", "elements")
d_V = _count("d_V", "value width per head", "elements")
d_L = _count("d_L", "latent width (MLA kv_lora_rank)", "elements")
d_R = _count("d_R", "decoupled RoPE width (MLA qk_rope_head_dim)", "elements")
d_Lq = _count("d_Lq", "query latent width (MLA q_lora_rank)", "elements")
B = _count("B", "sequences in the batch", "sequences")
# Bytes per element is not an integer for 4-bit formats (1/2 byte).
b = Symbol(sp.Symbol("b", positive=True), "bytes per cached element", "bytes")

SYMBOLS: tuple[Symbol, ...] = (N_L, N_h, N_g, N_KV, N_Q, d_in, d_QK, d_V, d_L, d_R, d_Lq, B, b)

# Layers that keep a constant-size state instead of a growing cache (notebook 07). These
# symbols are kvlib's own (the paper covers attention only); each names the config field
# it is read from.
d_conv = _count("d_conv", "convolution kernel width (mamba_d_conv, linear_conv_kernel_dim, "
                "conv_L_cache)", "tokens")
d_inner = _count("d_inner", "Mamba inner width (mamba_expand x d_in)", "elements")
d_state = _count("d_state", "SSM state size per channel (mamba_d_state)", "elements")
N_sg = _count("N_sg", "Mamba2 B/C groups (mamba_n_groups)")
N_sh = _count("N_sh", "Mamba2 heads (mamba_num_heads)")
d_sh = _count("d_sh", "Mamba2 head width (mamba_head_dim)", "elements")
N_lk = _count("N_lk", "linear-attention key heads (linear_num_key_heads)")
N_lv = _count("N_lv", "linear-attention value heads (linear_num_value_heads)")
d_lk = _count("d_lk", "linear-attention key head width (linear_key_head_dim)", "elements")
d_lv = _count("d_lv", "linear-attention value head width (linear_value_head_dim)", "elements")
d_I = _count("d_I", "sparse-attention indexer key width (index_head_dim)", "elements")
b_c = Symbol(sp.Symbol("b_c", positive=True), "bytes per convolution-state element", "bytes")
b_s = Symbol(sp.Symbol("b_s", positive=True), "bytes per SSM / recurrent-state element",
             "bytes")

STATE_SYMBOLS: tuple[Symbol, ...] = (d_conv, d_inner, d_state, N_sg, N_sh, d_sh, N_lk, N_lv,
                                     d_lk, d_lv, d_I, b_c, b_s)
ALL_SYMBOLS: tuple[Symbol, ...] = SYMBOLS + STATE_SYMBOLS

_BY_NAME = {s.name: s for s in ALL_SYMBOLS}


def by_name(name: str) -> Symbol:
    """The notation entry called ``name`` (e.g. ``"N_h"``); KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown symbol {name!r}; known: {', '.join(_BY_NAME)}") from None
