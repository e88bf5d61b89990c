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
from typing import TYPE_CHECKING

from kvlib.core import kept
from kvlib.core.exact import KeptFormula

if TYPE_CHECKING:
    import sympy as sp

    from kvlib.core.derive import CacheFormulas, StateFormulas
    from kvlib.core.numeric import Formula
    from kvlib.core.tables import TensorTable

__all__ = ["Attention", "MHA", "GQA", "MQA", "MLA", "MLA_ROPE", "INDEXER", "V4", "COMPRESSOR",
           "CONV_WINDOW", "KINDS", "ratio", "compressed", "State", "STATES"]


class _Generated:
    """A table, its SymPy derivation (``symbolic``, done once, on first use, so a command
    that needs one kind does not pay for the others at start-up) and, for every quantity
    of ``QUANTITIES``, a formula: the code kept in :mod:`kvlib.core.kept` (printed from the
    same derivation, so a scalar evaluation imports no SymPy: issue 42 item 6), else a
    :class:`Formula` generated from the derivation on first access.

    table: the :class:`TensorTable`, or a function returning it (the tables are SymPy
    expressions: built when first asked for). kept: whether the kept code of ``name`` is this
    table's (True only for the kinds this module defines; a kind built from any other table,
    a test's altered one say, is evaluated from its own derivation, never from code printed
    for another table of the same name)."""

    QUANTITIES: tuple[str, ...] = ()

    def __init__(self, name: str, table, *, kept: bool = False):
        self.name = name
        self._table = table
        self._kept = kept

    @cached_property
    def table(self) -> TensorTable:
        return self._table() if callable(self._table) else self._table

    def formula(self, q: str) -> Formula:
        """Quantity ``q``'s :class:`Formula`, generated from the SymPy derivation."""
        from kvlib.core.numeric import Formula

        return Formula(getattr(self.symbolic, q), f"{self.name}.{q}")

    def __getattr__(self, q: str) -> Formula | KeptFormula:
        # Only reached for attributes not yet set: make each quantity's function once.
        if q not in type(self).QUANTITIES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {q!r}")
        found = kept.FUNCTIONS.get((self.name, q)) if self._kept else None
        if found is not None:
            args, int_safe, fn = found
            formula = KeptFormula(f"{self.name}.{q}", args, int_safe, fn,
                                  lambda: self.formula(q))
        else:
            formula = self.formula(q)
        setattr(self, q, formula)
        return formula


class Attention(_Generated):
    """One attention kind: its table, its derivation, and generated numeric functions."""

    QUANTITIES = ("elements_per_token_layer", "bytes_per_token", "bytes_per_sequence",
                  "bytes_per_batch", "weight_elements_per_layer")

    @cached_property
    def symbolic(self) -> CacheFormulas:
        from kvlib.core.derive import derive

        return derive(self.name, self.table)

    def __repr__(self) -> str:
        per_token = self.symbolic.elements_per_token_layer
        return f"Attention({self.name}: {per_token} per token per layer)"


def ratio(a: Attention, b: Attention) -> Formula:
    """How many times more ``a`` caches per token than ``b``, in lowest terms.

    A ratio of two polynomials: ``cancel`` removes their common factors and ``factor``
    writes what is left as products, exactly; what ``sp.simplify`` returns for every pair
    of kinds here, without its search over rewrite strategies (125 ms for MHA/GQA)."""
    import sympy as sp

    from kvlib.core.numeric import Formula

    expr = sp.factor(sp.cancel(a.symbolic.elements_per_token_layer
                               / b.symbolic.elements_per_token_layer))
    return Formula(expr, f"{a.name}/{b.name}")


def _tables():
    from kvlib.core import tables

    return tables


def _state_tables():
    from kvlib.core import state_tables

    return state_tables


MHA = Attention("MHA", lambda: _tables().TABLE_1, kept=True)
GQA = Attention("GQA", lambda: _tables().grouped(_tables().TABLE_1), kept=True)
MQA = Attention("MQA", lambda: _tables().grouped(_tables().TABLE_1, 1), kept=True)
MLA = Attention("MLA", lambda: _tables().TABLE_2, kept=True)  # caches d_L per token per layer
MLA_ROPE = Attention("MLA+RoPE", lambda: _tables().TABLE_2_ROPE, kept=True)  # caches d_L + d_R

# DeepSeek V3.2's indexer keys, in bytes (b = 1)
INDEXER = Attention("Indexer", lambda: _state_tables().INDEXER, kept=True)
# DeepSeek V4 (notebook 08): an fp8_ds_mla entry (window or compressed) and a compressor's
# running state, both in bytes (b = 1)
V4 = Attention("V4 entry", lambda: _state_tables().V4_ENTRY, kept=True)
COMPRESSOR = Attention("Compressor state", lambda: _state_tables().V4_COMPRESSOR, kept=True)
# Inkling's four short-convolution streams per layer, kept as a window of d_conv tokens
CONV_WINDOW = Attention("Short-conv window", lambda: _state_tables().SHORT_CONV_WINDOW, kept=True)

KINDS: dict[str, Attention] = {a.name: a for a in (MHA, GQA, MQA, MLA, MLA_ROPE, INDEXER, V4,
                                                   COMPRESSOR, CONV_WINDOW)}


def compressed(a: Attention) -> sp.Expr:
    """Bytes one sequence of N_KV tokens holds in a layer that keeps one ``a`` entry per m
    tokens, as vLLM 0.34.0 writes them: an entry once the m-th token of its group has arrived
    (``(pos + 1) % COMPRESS_RATIO == 0``, v1/attention/backends/mla/compressor_utils.py:84), so
    floor(N_KV / m) entries. Per token it tends to (entry bytes) / m."""
    import sympy as sp

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
        from kvlib.core.derive import derive_state

        return derive_state(self.name, self.table)

    def __repr__(self) -> str:
        return f"State({self.name}: {self.symbolic.elements_per_layer} elements per layer)"


# the names as kvlib.core.state_tables' STATE_TABLES has them (kept: the test of kvlib.core.kept
# says they are the same), each table built when first asked for
STATES: dict[str, State] = {
    name: State(name, lambda name=name: _state_tables().STATE_TABLES[name], kept=True)
    for name in kept.STATE_NAMES}
