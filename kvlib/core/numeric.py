"""Numeric functions generated from the SymPy expressions (notebook 01, "Evaluation").

:class:`Formula` wraps one expression and compiles it twice, once each, on first use
(so importing kvlib does not pay for formulas a program never calls):

* scalars: Python code in which every rational constant is a ``Fraction``, fed
  ``Fraction``/``int`` inputs, so byte counts come back as exact ``int``
  (or a ``Fraction`` when a 4-bit dtype leaves half a byte);
* arrays: a NumPy function (``sympy.lambdify``), vectorised over sweeps, int64.

There is no hand-typed copy of any formula: both are printed from ``expr``.

:func:`evaluate` is the same exact Python path for expressions whose symbols are not all the
notation's (the serving engines' budgets, pools and sessions, kvlib.serving.engines): one
function per expression, generated on first use and cached, floors, ceilings, minima and
maxima included.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache, cached_property

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from kvlib.core import validate
from kvlib.core.calling import call, whole
from kvlib.core.exact import check_names, exact_call
from kvlib.core.notation import ALL_SYMBOLS, by_name

__all__ = ["Formula", "evaluate", "evaluate_floats"]

_ORDER = {s.name: i for i, s in enumerate(ALL_SYMBOLS)}
_INT64_MAX = float(np.iinfo(np.int64).max)
_INTEGER = {s.name: s.integer for s in ALL_SYMBOLS}
_LABEL = {s.name: f"{s.name} ({s.meaning})" for s in ALL_SYMBOLS}


class _ExactPrinter(PythonCodePrinter):
    """Prints rationals as ``Fraction(p, q)`` so Python evaluation stays exact."""

    def _print_Rational(self, expr):
        return f"Fraction({expr.p}, {expr.q})"

    def _print_Half(self, expr):
        return self._print_Rational(expr)


def _label(name: str) -> str:
    return _LABEL.get(name) or f"{name} ({by_name(name).meaning})"


def _numpy_printer() -> NumPyPrinter:
    # The printer lambdify(modules="numpy") uses. Passing it with an empty namespace
    # imports only the NumPy names the code needs, instead of `from numpy import *`
    # (which loads numpy.f2py and friends: a tenth of a second at start-up).
    return NumPyPrinter({"fully_qualified_modules": False, "inline": True,
                         "allow_unknown_functions": True, "user_functions": {}})


class Formula:
    """A SymPy expression with exact scalar and vectorised numeric evaluation.

    Call it with the notation's symbol names as keywords::

        GQA.bytes_per_token(N_L=80, N_g=8, d_QK=128, d_V=128, b=2)  # -> 327680

    Extra keywords that name notation symbols (``N_h`` for a GQA formula) are
    validated and used for cross-checks (N_g must divide N_h) but not required.
    """

    def __init__(self, expr: sp.Expr, name: str = ""):
        self.expr = sp.sympify(expr)
        self.name = name
        self.symbols = tuple(sorted(self.expr.free_symbols, key=lambda s: _ORDER[s.name]))
        self.args = tuple(s.name for s in self.symbols)

    @cached_property
    def _coefficients(self) -> list | None:
        """The polynomial's coefficients, or None if ``expr`` is not a polynomial."""
        poly = self.expr.as_poly(*self.symbols) if self.symbols else None
        return None if poly is None else poly.coeffs()

    @cached_property
    def _int_safe(self) -> bool:
        # A polynomial with integer coefficients prints without "/" and without
        # Fraction constants: Python ints in, exact int out, no Fraction arithmetic.
        c = self._coefficients
        return c is not None and all(x.is_Integer for x in c)

    @cached_property
    def _monotone(self) -> bool:
        # ... and with non-negative coefficients it grows in every (positive) input, so
        # its value at the inputs' maxima bounds every element of a sweep.
        return self._int_safe and all(x >= 0 for x in self._coefficients)

    @cached_property
    def _exact(self):
        # docstring_limit=0: no printed copy of the expression in the generated function's
        # docstring, which nobody reads (the Formula has its own repr): a third of the time.
        return sp.lambdify(self.symbols, self.expr, modules=[{"Fraction": Fraction}],
                           printer=_ExactPrinter, docstring_limit=0)

    @cached_property
    def _vector(self):
        return sp.lambdify(self.symbols, self.expr, modules=[{}], printer=_numpy_printer(),
                           docstring_limit=0)

    def __repr__(self) -> str:
        return f"Formula({self.name or 'expr'}: {self.expr})"

    def _repr_latex_(self) -> str:
        return f"${sp.latex(self.expr)}$"

    def subs(self, **values) -> sp.Expr:
        """Plain SymPy substitution: the slow reference the tests compare with."""
        return self.expr.subs({by_name(k).symbol: v for k, v in values.items()})

    def _check_names(self, values: dict) -> None:
        check_names(self.name or str(self.expr), self.args, values, _ORDER, _label)

    def __call__(self, **values):
        """Evaluate; exact for scalars, vectorised if any value is an ndarray."""
        self._check_names(values)
        if any(isinstance(v, np.ndarray) for v in values.values()):
            return self._call_vector(values)
        return exact_call(self._exact, self.args, self._int_safe, values, _INTEGER, _label)

    def _call_vector(self, values: dict) -> np.ndarray:
        arrays = {}
        for k, v in values.items():
            integer = _INTEGER[k]
            if isinstance(v, np.ndarray):
                check = validate.positive_int_array if integer else validate.positive_number_array
                arrays[k] = check(_label(k), v)
            elif integer:
                arrays[k] = np.int64(validate.positive_int(_label(k), v))
            else:  # 1/2 byte stays exact as a float; whole bytes keep the result int64
                exact = validate.positive_number(_label(k), v)
                arrays[k] = np.int64(exact) if exact.denominator == 1 else float(exact)
        if "N_g" in arrays and "N_h" in arrays:
            validate.check_divides("N_g (key/value heads)", arrays["N_g"],
                                   "N_h (query heads)", arrays["N_h"])
        args = [arrays[a] for a in self.args]
        # Guard int64: refuse rather than wrap around. A monotone formula is bounded by
        # its exact value at the inputs' maxima (no pass over the arrays); otherwise, or
        # if that bound is too large, estimate every element in float first.
        if self._monotone:
            top = [Fraction(np.max(a).item()) for a in args]
            if abs(self._exact(*top)) <= _INT64_MAX / 2:
                return self._vector(*args)
        estimate = self._vector(*(np.asarray(a, dtype=np.float64) for a in args))
        if np.any(np.abs(estimate) > _INT64_MAX / 2):
            raise ValueError(
                f"{self.name}: values too large for int64 arrays; call with Python ints instead"
            )
        return self._vector(*args)


@cache
def _generated(expr: sp.Expr):
    """``expr`` as Python (rationals as ``Fraction``; floor, ceiling as ``math.floor``,
    ``math.ceil``; Min, Max as ``min``, ``max``), its arguments its symbols by name."""
    symbols = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    fn = sp.lambdify(symbols, expr, modules=[{"Fraction": Fraction, "math": math}],
                     printer=_ExactPrinter, docstring_limit=0)
    return tuple(s.name for s in symbols), fn


def _call(expr: sp.Expr, values: dict, convert):
    return call(str(expr), *_generated(expr), values, convert)


def evaluate(expr: sp.Expr, **values):
    """``expr`` at ``values`` (every symbol's, by name), exactly, by Python code generated from
    it once: each value made a ``Fraction`` (a float by its exact value), so no quotient is a
    float; an ``int`` comes back when the value is whole, else a ``Fraction``::

        evaluate(sp.floor(x / y), x=7, y=2)  # -> 3
    """
    return whole(_call(expr, values, Fraction))


def evaluate_floats(expr: sp.Expr, **values):
    """``expr`` at ``values`` by the same generated code, every value a Python ``float``: the
    arithmetic of an engine that computes the expression in floats (a floor of a float is an
    ``int``)."""
    return _call(expr, values, float)
