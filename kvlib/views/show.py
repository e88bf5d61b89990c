"""Small display helpers for derivation cells (all notebooks)."""

from __future__ import annotations

import re

import sympy as sp
from IPython.display import Math

__all__ = ["equation", "label_latex"]


_MATH = re.compile(r"(\\[A-Za-z]+(?:\{[^}]*\})?|\S*[_^]\S*)")


def label_latex(label: str) -> str:
    r"""A label as LaTeX: words in ``\text{}``, math tokens (``N_Q``, ``T^*``, ``\partial``)
    outside it, since MathJax refuses ``_``, ``^`` and math macros in text mode."""
    parts = []
    for i, piece in enumerate(_MATH.split(label)):
        if not piece:
            continue
        parts.append(piece if i % 2 else rf"\text{{{piece}}}")
    return " ".join(parts)


def equation(label: str, expr, rhs=None) -> Math:
    r"""``label = expr`` (or ``expr = rhs``) as LaTeX, without SymPy evaluating it; the label's
    words are set as text, its math tokens as math (:func:`label_latex`)."""
    left = f"{label_latex(label)} = " if label else ""
    body = sp.latex(expr) if rhs is None else f"{sp.latex(expr)} = {sp.latex(rhs)}"
    return Math(left + body)
