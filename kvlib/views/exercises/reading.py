"""Read what a learner typed as an answer: a number, its unit, and how precise it is.

``read(" 96 kib ", "bytes")`` is 98,304 B exactly; ``read("4,567 tokens", "count")`` is
4,567; ``read("12.3%", "ratio")`` is 0.123 give or take 0.0005 (the last digit typed);
``read(ValueError, "exception")`` is the name ``"ValueError"``. Anything that is not an
answer of that kind raises :class:`Unreadable`, whose message is one line saying what was
expected: the checker prints it instead of a traceback.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from kvlib.core.units import UNITS

__all__ = ["KINDS", "Reading", "Unreadable", "read"]


class Unreadable(ValueError):
    """The answer is not a number of the kind asked for; the message says what was expected."""


# What each kind of answer may be written with (lower case), and its factor to the base unit.
_BYTES = {u.lower(): f for u, f in UNITS.items()} | {"byte": 1, "bytes": 1}
_RATIO = {"x": 1, "×": 1, "times": 1, "%": Fraction(1, 100), "percent": Fraction(1, 100)}
_SECONDS = {"s": 1, "sec": 1, "second": 1, "seconds": 1, "ms": Fraction(1, 1000),
            "millisecond": Fraction(1, 1000), "milliseconds": Fraction(1, 1000),
            "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6)}
_PER_BYTE = {"flop/b", "flops/b", "flop/byte", "flops/byte", "flops per byte"}
_COUNTED = {"token", "tokens", "sequence", "sequences", "seqs", "session", "sessions",
            "request", "requests", "head", "heads", "kv heads", "element", "elements", "flop",
            "flops", "multiply-adds", "multiply-add", "macs", "mac", "layers"}
KINDS = ("bytes", "count", "ratio", "seconds", "exception")
# Examples in messages are no exercise's answer (tests/test_exercises.py checks).
_EXAMPLE = {"bytes": "98304, '96 KiB' or '2.5 MB'", "count": "4567 or '4,567 tokens'",
            "ratio": "2.5, '2.5x', '40%' or '2/5'", "seconds": "0.0123 or '12.3 ms'",
            "exception": "KeyError"}

# A number as people type it: 30517, 30,517, 30_517, 30 517, 2.5, .5, 2.5e9.
_NUMBER = re.compile(r"^(?P<num>[+-]?(?:\d[\d,_' \u00a0\u2009\u202f]*)?(?:\.\d+)?"
                     r"(?:[eE][+-]?\d+)?)\s*(?P<unit>.*?)\s*$")
_FRACTION = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_GROUPED = re.compile(r"^\d{1,3}(?:[,_' \u00a0\u2009\u202f]\d{3})+$")


@dataclass(frozen=True)
class Reading:
    """An answer read: ``value`` in the base unit (bytes, 1, seconds) and ``tolerance``, half
    the last digit the learner typed when at least three significant digits were typed (0 for
    an exact answer), or a relative 1e-9 for a Python float. ``half_ulp``: half the last
    digit typed, however few digits (0 for a number that is not text). ``name``: an
    exception's name (kind "exception"). For the hints: ``unit``, the unit typed (lower case,
    "" for none); ``trailing_zeros``, for a whole number typed without a point, an exponent or
    a unit that scales it (30,500 or the int 30500: read as exact), how many zeros end it."""

    value: Fraction | None
    tolerance: Fraction = Fraction(0)
    half_ulp: Fraction = Fraction(0)
    name: str | None = None
    unit: str = ""
    trailing_zeros: int | None = None

    def matches(self, target) -> bool:
        """Whether this reading is ``target`` (a number, or an exception's name)."""
        if self.name is not None or isinstance(target, str):
            return self.name is not None and isinstance(target, str) and \
                self.name.lower() == target.lower()
        return abs(self.value - Fraction(target)) <= self.tolerance

    def rounds_to(self, target) -> bool:
        """``target`` rounded to the digits typed is this reading, however few they are."""
        if self.value is None or isinstance(target, str):
            return False
        return abs(self.value - Fraction(target)) <= max(self.tolerance, self.half_ulp)


def _expected(kind: str) -> str:
    what = {"bytes": "a size in bytes", "count": "a whole number", "ratio": "a ratio",
            "seconds": "a time", "exception": "an exception type"}[kind]
    return f"{what}, such as {_EXAMPLE[kind]}"


def _number(answer, kind: str) -> Reading:
    """A Python, NumPy, SymPy or Decimal number (never a bool)."""
    if isinstance(answer, bool):
        raise Unreadable(f"expected {_expected(kind)}; got {answer!r}")
    if hasattr(answer, "p") and hasattr(answer, "q"):  # a SymPy Rational or Integer
        return Reading(Fraction(int(answer.p), int(answer.q)))
    if isinstance(answer, numbers.Integral) or hasattr(answer, "__index__"):
        try:
            whole = answer.__index__()
            return Reading(Fraction(whole), trailing_zeros=_trailing_zeros(str(abs(whole))))
        except (TypeError, ValueError):  # e.g. a NumPy array of several numbers
            raise Unreadable(f"expected {_expected(kind)}; got {type(answer).__name__} "
                             f"{answer!r}") from None
    if isinstance(answer, Fraction | Decimal):
        return Reading(Fraction(answer))
    if isinstance(answer, numbers.Real):
        x = float(answer)
        if x != x or x in (float("inf"), float("-inf")):
            raise Unreadable(f"expected {_expected(kind)}; got {answer!r}")
        # Read as typed: 0.111 is "0.111", three digits, not the binary float nearest it;
        # a computed float keeps a relative 1e-9 for its last bits of round-off.
        typed = _text(repr(x), kind)
        return Reading(typed.value, max(typed.tolerance, abs(typed.value) / 10**9),
                       typed.half_ulp)
    raise Unreadable(f"expected {_expected(kind)}; got {type(answer).__name__} {answer!r}")


def _text(text: str, kind: str, named: str = "") -> Reading:
    fraction = _FRACTION.match(text)
    if fraction and kind == "ratio":
        return Reading(Fraction(int(fraction.group(1)), int(fraction.group(2))))
    m = _NUMBER.match(text.strip())
    num, unit = (m.group("num").strip(), m.group("unit").lower()) if m else ("", "")
    if not num or not any(c.isdigit() for c in num):
        raise Unreadable(f"expected {_expected(kind)}; got {text!r}")
    mantissa, _, exponent = num.replace("E", "e").partition("e")
    whole, _, decimals = mantissa.lstrip("+-").partition(".")
    if whole and not whole.isdigit():
        if not _GROUPED.match(whole):
            raise Unreadable(f"cannot read {text!r}: group thousands by three "
                             "(30,517) and write decimals with a point (2.5)")
        whole = re.sub(r"\D", "", whole)
    plain = f"{mantissa[0] if mantissa[0] in '+-' else ''}{whole or '0'}.{decimals or '0'}"
    value = Fraction(plain) * Fraction(10) ** int(exponent or 0)
    factor = _unit_factor(unit, kind, text, named)
    significant = len((whole + decimals).lstrip("0")) or 1
    ulp = Fraction(1, 10 ** len(decimals)) * Fraction(10) ** int(exponent or 0) * factor
    # A rounded answer is right to the digits typed: 7.63 GiB, 524 KB, 3.76x, 3.8x. A count is
    # a whole number and must be exact (3.05e4 is not 30,517 tokens).
    rounded = bool(decimals or exponent or factor != 1)
    enough = significant >= (2 if kind == "ratio" else 3)
    tolerance = ulp / 2 if rounded and enough and kind != "count" else Fraction(0)
    return Reading(value * factor, tolerance, ulp / 2, unit=unit.strip(),
                   trailing_zeros=None if rounded else _trailing_zeros(whole))


def _trailing_zeros(digits: str) -> int:
    return len(digits) - len(digits.rstrip("0")) if digits.strip("0") else 0


def _unit_factor(unit: str, kind: str, text: str, named: str = "") -> Fraction:
    unit = unit.strip().rstrip(".")
    if not unit or unit == named.lower() or (named == "FLOP/B" and unit in _PER_BYTE):
        return Fraction(1)
    table = {"bytes": _BYTES, "ratio": _RATIO, "seconds": _SECONDS}.get(kind, {})
    if unit in table:
        return Fraction(table[unit])
    if kind == "count" and unit in _COUNTED:
        return Fraction(1)  # a count's unit is a name only ("K" or "M" are refused below)
    if unit in _BYTES:
        raise Unreadable(f"expected {_expected(kind)}, not a size in bytes; got {text!r}")
    raise Unreadable(f"cannot read the unit {unit!r} in {text!r}; expected {_expected(kind)}")


def read(answer, kind: str, named: str = "") -> Reading:
    """``answer`` (a number, or text such as "96 KiB", "4,567 tokens", "40%") read as
    ``kind`` ("bytes", "count", "ratio", "seconds" or "exception"); ``named``: one more unit
    word the answer may carry ("FLOP/B", "sessions"). Raises Unreadable."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "exception":
        if isinstance(answer, type) and issubclass(answer, BaseException):
            return Reading(None, name=answer.__name__)
        if isinstance(answer, BaseException):
            return Reading(None, name=type(answer).__name__)
        if isinstance(answer, str) and answer.strip().replace(" ", "").isidentifier():
            return Reading(None, name=answer.strip().replace(" ", ""))
        raise Unreadable(f"expected {_expected(kind)} (the class, or its name); got {answer!r}")
    if isinstance(answer, str):
        return _text(answer, kind, named)
    return _number(answer, kind)
