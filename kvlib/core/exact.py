"""Exact scalar evaluation of a generated formula, without SymPy (issue 42 item 6).

One code path for both kinds of formula: :class:`kvlib.core.numeric.Formula` (generated from
its SymPy expression on first use) and :class:`KeptFormula` (generated once by
``python -m kvlib.core.keep`` into :mod:`kvlib.core.kept`, which a test regenerates and
compares), so that ``kvlib estimate`` evaluates the attention and state formulas without
importing SymPy. Anything but a scalar call (arrays, ``.expr``, LaTeX) builds the SymPy
:class:`~kvlib.core.numeric.Formula` and asks it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from kvlib.core import validate

__all__ = ["check_names", "exact_call", "KeptFormula"]


def check_names(name: str, args: tuple[str, ...], values: dict, known, label) -> None:
    """ValueError for a keyword that is no symbol of the notation (``known``) or a missing
    argument (named with ``label(name)``, its meaning)."""
    for k in values:
        if k not in known:
            raise ValueError(f"unknown parameter {k!r} for {name}; it takes {', '.join(args)}")
    missing = [a for a in args if a not in values]
    if missing:
        raise ValueError(f"{name} needs {', '.join(label(m) for m in missing)}")


def exact_call(fn, args: tuple[str, ...], int_safe: bool, values: dict, integer: dict, label):
    """``fn`` (generated Python, rationals as ``Fraction``) at ``values`` by name, exactly: each
    value checked (a positive whole number where ``integer[name]``, else a positive number),
    N_g checked to divide N_h where both are given; an ``int`` back when the value is whole,
    else a ``Fraction``. ``int_safe``: the expression is a polynomial with integer
    coefficients, so whole numbers go in as ``int`` (no Fraction arithmetic)."""
    exact = {}
    for k, v in values.items():
        if type(v) is int and v >= 1:  # the common case, accepted by both checks below
            exact[k] = v
        elif integer[k]:
            exact[k] = validate.positive_int(label(k), v)
        else:
            exact[k] = validate.positive_number(label(k), v)
    if "N_g" in exact and "N_h" in exact:
        if exact["N_h"] % exact["N_g"]:
            validate.check_divides("N_g (key/value heads)", exact["N_g"],
                                   "N_h (query heads)", exact["N_h"])
    if int_safe:
        xs = [exact[a] for a in args]
        xs = [a.numerator if type(a) is Fraction and a.denominator == 1 else a for a in xs]
    else:
        xs = [Fraction(exact[a]) for a in args]
    result = fn(*xs)
    if type(result) is int:
        return result
    result = Fraction(result)
    return int(result) if result.denominator == 1 else result


class KeptFormula:
    """A formula whose exact scalar function was generated ahead of time (:mod:`kvlib.core.
    kept`): called with scalars it runs that code; anything else (an ndarray argument,
    ``expr``, ``symbols``, ``subs``, LaTeX) goes to the SymPy :class:`Formula` that ``full``
    builds on first need, the same expression the kept code was printed from."""

    def __init__(self, name: str, args: tuple[str, ...], int_safe: bool, fn, full):
        self.name = name
        self.args = args
        self._int_safe_kept = int_safe
        self._fn = fn
        self._full_factory = full
        self._full = None

    @property
    def full(self):
        """The SymPy :class:`~kvlib.core.numeric.Formula` of the same expression."""
        if self._full is None:
            self._full = self._full_factory()
        return self._full

    def __getattr__(self, attr):  # expr, symbols, subs, _repr_latex_, ...
        if attr.startswith("__") or attr in ("_full", "_full_factory"):
            raise AttributeError(attr)
        return getattr(self.full, attr)

    def __repr__(self) -> str:
        return repr(self.full)

    def __call__(self, **values):
        from kvlib.core import kept

        if any(isinstance(v, np.ndarray) for v in values.values()):
            return self.full(**values)  # arrays: SymPy's NumPy code, with its int64 guard
        check_names(self.name, self.args, values, kept.SYMBOLS, kept.label)
        return exact_call(self._fn, self.args, self._int_safe_kept, values, kept.INTEGER,
                          kept.label)
