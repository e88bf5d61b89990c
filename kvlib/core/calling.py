"""Calling generated code by its symbols' names: what :func:`kvlib.core.numeric.evaluate` does
with the code it generates from an expression, and every kept file (``kept.py``, written by
``python -m kvlib.core.keep``) with the code it keeps. One place, imported by both; no SymPy.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["call", "evaluators", "whole"]


def call(label: str, names: tuple[str, ...], fn, values: dict, convert):
    """``fn`` (arguments ``names``, in its order) at ``values`` (every argument's, by name),
    each value passed through ``convert``; ValueError naming ``label`` and what is missing or
    extra."""
    if set(values) != set(names):
        missing = [n for n in names if n not in values]
        extra = [n for n in values if n not in names]
        raise ValueError(f"{label}: " + "; ".join(
            part for part in (missing and f"needs {', '.join(missing)}",
                              extra and f"takes no {', '.join(extra)}") if part))
    return fn(*(convert(values[n]) for n in names))


def whole(result):
    """An exact result as it is returned: an ``int`` when the ``Fraction`` is whole."""
    if type(result) is Fraction and result.denominator == 1:
        return result.numerator
    return result


def evaluators(expressions: dict):
    """``(evaluate, evaluate_floats)`` for a kept file's ``EXPRESSIONS`` (name -> (argument
    names, function)): ``evaluate(name, **values)`` exactly (each value a ``Fraction``; an
    ``int`` back when whole), ``evaluate_floats(name, **values)`` with every value a ``float``
    (:func:`kvlib.core.numeric.evaluate`'s and ``evaluate_floats``' semantics)."""

    def evaluate(name: str, **values):
        return whole(call(name, *expressions[name], values, Fraction))

    def evaluate_floats(name: str, **values):
        return call(name, *expressions[name], values, float)

    return evaluate, evaluate_floats
