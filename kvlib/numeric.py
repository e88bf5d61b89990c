"""Numeric functions generated from the SymPy expressions (notebook 01, "Evaluation").

:class:`Formula` wraps one expression and compiles it twice, once, at import:

* scalars: Python code in which every rational constant is a ``Fraction``, fed
  ``Fraction``/``int`` inputs, so byte counts come back as exact ``int``
  (or a ``Fraction`` when a 4-bit dtype leaves half a byte);
* arrays: a NumPy function (``sympy.lambdify``), vectorised over sweeps, int64.

There is no hand-typed copy of any formula: both are printed from ``expr``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from kvlib import validate
from kvlib.notation import SYMBOLS, by_name

__all__ = ["Formula"]

_ORDER = {s.name: i for i, s in enumerate(SYMBOLS)}
_INT64_MAX = float(np.iinfo(np.int64).max)


class _ExactPrinter(PythonCodePrinter):
    """Prints rationals as ``Fraction(p, q)`` so Python evaluation stays exact."""

    def _print_Rational(self, expr):
        return f"Fraction({expr.p}, {expr.q})"

    def _print_Half(self, expr):
        return self._print_Rational(expr)


def _label(name: str) -> str:
    return f"{name} ({by_name(name).meaning})"


class Formula:
    """A SymPy expression with exact scalar and vectorised numeric evaluation.

    Call it with the paper's symbol names as keywords::

        GQA.bytes_per_token(N_L=80, N_g=8, d_QK=128, d_V=128, b=2)  # -> 327680

    Extra keywords that name notation symbols (``N_h`` for a GQA formula) are
    validated and used for cross-checks (N_g must divide N_h) but not required.
    """

    def __init__(self, expr: sp.Expr, name: str = ""):
        self.expr = sp.sympify(expr)
        self.name = name
        self.symbols = tuple(sorted(self.expr.free_symbols, key=lambda s: _ORDER[s.name]))
        self.args = tuple(s.name for s in self.symbols)
        self._exact = sp.lambdify(
            self.symbols, self.expr, modules=[{"Fraction": Fraction}], printer=_ExactPrinter
        )
        self._vector = sp.lambdify(self.symbols, self.expr, modules="numpy")

    def __repr__(self) -> str:
        return f"Formula({self.name or 'expr'}: {self.expr})"

    def _repr_latex_(self) -> str:
        return f"${sp.latex(self.expr)}$"

    def subs(self, **values) -> sp.Expr:
        """Plain SymPy substitution: the slow reference the tests compare with."""
        return self.expr.subs({by_name(k).symbol: v for k, v in values.items()})

    def _check_names(self, values: dict) -> None:
        for k in values:
            if k not in _ORDER:
                raise ValueError(
                    f"unknown parameter {k!r} for {self.name or self.expr}; "
                    f"it takes {', '.join(self.args)}"
                )
        missing = [a for a in self.args if a not in values]
        if missing:
            raise ValueError(
                f"{self.name or self.expr} needs {', '.join(_label(m) for m in missing)}"
            )

    def __call__(self, **values):
        """Evaluate; exact for scalars, vectorised if any value is an ndarray."""
        self._check_names(values)
        if any(isinstance(v, np.ndarray) for v in values.values()):
            return self._call_vector(values)
        exact = {}
        for k, v in values.items():
            if by_name(k).integer:
                exact[k] = validate.positive_int(_label(k), v)
            else:
                exact[k] = validate.positive_number(_label(k), v)
        if "N_g" in exact and "N_h" in exact:
            validate.check_divides("N_g (key/value heads)", exact["N_g"],
                                   "N_h (query heads)", exact["N_h"])
        result = self._exact(*(Fraction(exact[a]) for a in self.args))
        result = Fraction(result)
        return int(result) if result.denominator == 1 else result

    def _call_vector(self, values: dict) -> np.ndarray:
        arrays = {}
        for k, v in values.items():
            integer = by_name(k).integer
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
        # Guard int64: estimate in float first, refuse rather than wrap around.
        estimate = self._vector(*(np.asarray(a, dtype=np.float64) for a in args))
        if np.any(np.abs(estimate) > _INT64_MAX / 2):
            raise ValueError(
                f"{self.name}: values too large for int64 arrays; call with Python ints instead"
            )
        return self._vector(*args)
