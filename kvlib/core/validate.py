"""Checks on user-supplied sizes: one clear ``ValueError`` naming the field and value."""

from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction

import numpy as np

__all__ = ["positive_int", "positive_number", "exact_fraction", "parse_count",
           "check_divides"]


def _describe(value) -> str:
    return f"{value!r} ({type(value).__name__})"


def positive_int(field: str, value, *, allow_zero: bool = False) -> int:
    """``value`` as a Python int, or ValueError naming ``field``.

    Rejects bools, floats (even 2.0), strings and values below 1 (below 0 with
    ``allow_zero``). Python ints have no size limit, so huge values stay exact.
    """
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    lowest = 0 if allow_zero else 1
    if not ok or int(value) < lowest:
        kind = "a non-negative integer" if allow_zero else "a positive integer"
        raise ValueError(f"{field} must be {kind}, got {_describe(value)}")
    return int(value)


def positive_number(field: str, value) -> Fraction:
    """``value`` as an exact positive Fraction (ints, Fractions, finite floats)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{field} must be a positive number, got {_describe(value)}")
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        raise ValueError(f"{field} must be a positive number, got {_describe(value)}")
    exact = Fraction(value)
    if exact <= 0:
        raise ValueError(f"{field} must be a positive number, got {_describe(value)}")
    return exact


def exact_fraction(field: str, value) -> Fraction:
    """A positive exact Fraction; floats go through their decimal text (0.9 -> 9/10),
    strings through ``Fraction`` ("0.9", "9/10")."""
    if isinstance(value, str):
        try:
            value = Fraction(value)
        except ValueError:
            raise ValueError(f"{field} must be a number, got {value!r}") from None
    if isinstance(value, float):
        value = Fraction(repr(value))
    return positive_number(field, value)


def positive_int_array(field: str, value: np.ndarray) -> np.ndarray:
    """An integer array with every element >= 1, or ValueError naming ``field``."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{field} must hold positive integers, got an array of {arr.dtype}")
    if arr.size and arr.min() < 1:
        raise ValueError(f"{field} must hold positive integers, got a minimum of {arr.min()}")
    return arr.astype(np.int64, copy=False)


def positive_number_array(field: str, value: np.ndarray) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or (arr.size and not np.all(np.isfinite(arr))):
        raise ValueError(f"{field} must hold positive numbers, got an array of {arr.dtype}")
    if arr.size and arr.min() <= 0:
        raise ValueError(f"{field} must hold positive numbers, got a minimum of {arr.min()}")
    return arr


def check_divides(kv_field: str, kv_heads, q_field: str, q_heads) -> None:
    """Key/value heads must divide query heads (each KV head serves a whole group)."""
    kv, q = np.asarray(kv_heads), np.asarray(q_heads)
    bad = (q % kv) != 0
    if np.any(bad):
        if bad.ndim:
            i = tuple(np.argwhere(bad)[0])
            kv_v = kv[i] if kv.ndim else kv
            q_v = q[i] if q.ndim else q
        else:
            kv_v, q_v = kv, q
        raise ValueError(
            f"{kv_field}={int(kv_v)} must divide {q_field}={int(q_v)} "
            f"(each key/value head serves a whole group of query heads)"
        )


_COUNT_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}


def parse_count(field: str, text) -> int:
    """A parameter count as people write it: '70600000000', '70.6B', '7e10', '8.03e9' -> an
    exact positive int (decimal suffixes K, M, B or G, T), or ValueError naming ``field``."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([KMBGT]?)\s*", str(text), flags=re.I)
    try:
        value = Fraction(m.group(1)) * _COUNT_SUFFIX[m.group(2).upper()] if m else None
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or value.denominator != 1 or value <= 0:
        raise ValueError(f"{field} must be a positive whole count such as 70600000000 or "
                         f"70.6B, got {text!r}")
    return int(value)
