"""The attention kinds, each derived from its table once, at import (notebooks 01-04).

``MHA``, ``GQA``, ``MQA``, ``MLA`` and ``MLA_ROPE`` (``KINDS`` keys "MLA" and
"MLA+RoPE") are :class:`Attention` objects. Each holds the symbolic derivation
(``.symbolic``) and, for every quantity, a :class:`Formula` generated from it,
so a notebook, a widget, a plot, the CLI and a test all evaluate the same
expression::

    >>> GQA.bytes_per_token(N_L=80, N_h=64, N_g=8, d_QK=128, d_V=128, b=2)
    327680
"""

from __future__ import annotations

from functools import cached_property

import sympy as sp

from kvlib.core.derive import CacheFormulas, StateFormulas, derive, derive_state
from kvlib.core.numeric import Formula
from kvlib.core.state_tables import INDEXER as INDEXER_TABLE
from kvlib.core.state_tables import SHORT_CONV_WINDOW, STATE_TABLES, V4_COMPRESSOR, V4_ENTRY
from kvlib.core.tables import TABLE_1, TABLE_2, TABLE_2_ROPE, TensorTable, grouped

__all__ = ["Attention", "MHA", "GQA", "MQA", "MLA", "MLA_ROPE", "INDEXER", "V4", "COMPRESSOR",
           "CONV_WINDOW", "KINDS", "ratio", "compressed", "State", "STATES"]


class _Generated:
    """A table, its SymPy derivation (``symbolic``, done once, on first use, so a command
    that needs one kind does not pay for the others at start-up) and, for every quantity
    of ``QUANTITIES``, a :class:`Formula` generated from it on first access."""

    QUANTITIES: tuple[str, ...] = ()

    def __init__(self, name: str, table: TensorTable):
        self.name = name
        self.table = table

    def __getattr__(self, q: str) -> Formula:
        # Only reached for attributes not yet set: generate each quantity's function once.
        if q not in type(self).QUANTITIES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {q!r}")
        formula = Formula(getattr(self.symbolic, q), f"{self.name}.{q}")
        setattr(self, q, formula)
        return formula


class Attention(_Generated):
    """One attention kind: its table, its derivation, and generated numeric functions."""

    QUANTITIES = ("elements_per_token_layer", "bytes_per_token", "bytes_per_sequence",
                  "bytes_per_batch", "weight_elements_per_layer")

    @cached_property
    def symbolic(self) -> CacheFormulas:
        return derive(self.name, self.table)

    def __repr__(self) -> str:
        per_token = self.symbolic.elements_per_token_layer
        return f"Attention({self.name}: {per_token} per token per layer)"


def ratio(a: Attention, b: Attention) -> Formula:
    """How many times more ``a`` caches per token than ``b``, in lowest terms.

    A ratio of two polynomials: ``cancel`` removes their common factors and ``factor``
    writes what is left as products, exactly; what ``sp.simplify`` returns for every pair
    of kinds here, without its search over rewrite strategies (125 ms for MHA/GQA)."""
    expr = sp.factor(sp.cancel(a.symbolic.elements_per_token_layer
                               / b.symbolic.elements_per_token_layer))
    return Formula(expr, f"{a.name}/{b.name}")


MHA = Attention("MHA", TABLE_1)
GQA = Attention("GQA", grouped(TABLE_1))
MQA = Attention("MQA", grouped(TABLE_1, 1))
MLA = Attention("MLA", TABLE_2)  # caches d_L per token per layer
MLA_ROPE = Attention("MLA+RoPE", TABLE_2_ROPE)  # caches d_L + d_R

INDEXER = Attention("Indexer", INDEXER_TABLE)  # DeepSeek V3.2's indexer keys, in bytes (b = 1)
# DeepSeek V4 (notebook 08): an fp8_ds_mla entry (window or compressed) and a compressor's
# running state, both in bytes (b = 1)
V4 = Attention("V4 entry", V4_ENTRY)
COMPRESSOR = Attention("Compressor state", V4_COMPRESSOR)
# Inkling's four short-convolution streams per layer, kept as a window of d_conv tokens
CONV_WINDOW = Attention("Short-conv window", SHORT_CONV_WINDOW)

KINDS: dict[str, Attention] = {a.name: a for a in (MHA, GQA, MQA, MLA, MLA_ROPE, INDEXER, V4,
                                                   COMPRESSOR, CONV_WINDOW)}


def compressed(a: Attention) -> sp.Expr:
    """Bytes one sequence of N_KV tokens holds in a layer that keeps one ``a`` entry per m
    tokens, as vLLM 0.34.0 writes them: an entry once the m-th token of its group has arrived
    (``(pos + 1) % COMPRESS_RATIO == 0``, v1/attention/backends/mla/compressor_utils.py:84), so
    floor(N_KV / m) entries. Per token it tends to (entry bytes) / m."""
    from kvlib.core.notation import N_KV, m

    f = a.symbolic
    return f.bytes_per_sequence.subs(N_KV.symbol, sp.floor(N_KV.symbol / m.symbol))


class State(_Generated):
    """One constant-size layer kind (Mamba, Mamba2, Gated DeltaNet, ...): its table, its
    derivation and generated numeric functions, like :class:`Attention` (notebook 07)."""

    QUANTITIES = ("conv_elements_per_layer", "ssm_elements_per_layer", "elements_per_layer",
                  "bytes_per_sequence", "bytes_per_batch")

    @cached_property
    def symbolic(self) -> StateFormulas:
        return derive_state(self.name, self.table)

    def __repr__(self) -> str:
        return f"State({self.name}: {self.symbolic.elements_per_layer} elements per layer)"


STATES: dict[str, State] = {name: State(name, table) for name, table in STATE_TABLES.items()}
