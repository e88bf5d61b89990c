"""Small display helpers for derivation cells (all notebooks)."""

from __future__ import annotations

import sympy as sp
from IPython.display import Math

__all__ = ["equation"]


def equation(label: str, expr, rhs=None) -> Math:
    r"""``\text{label} = expr`` (or ``expr = rhs``) as LaTeX, without SymPy evaluating it."""
    left = rf"\text{{{label}}} = " if label else ""
    body = sp.latex(expr) if rhs is None else f"{sp.latex(expr)} = {sp.latex(rhs)}"
    return Math(left + body)
