"""The exercises of notebooks 01-07: check a learner's answers, and fold away the solutions'.

- ``check("01.1", per_token, per_sequence)`` prints right, or not yet with the hint that
  names the usual slip (KiB vs KB, GiB vs GB, a factor 2 of K and V, the exercise's own
  trap), and returns whether every answer is right. It reads what learners type: numbers of
  any kind, "96 kib", "4,567 tokens", "40%", "12.3 ms", ``KeyError``. Anything else is
  answered with one line saying what was expected; it never raises on an answer.
- ``solution("01.1", ex1_token, ex1_seq, say=...)`` ends each solution cell in the notebooks:
  it checks the solution's values with the same :func:`verdict` (a disagreement fails the
  notebook) and shows the answer folded, behind "Show the answer", so Run All checks every
  answer and gives none away (an HTML ``<details>`` element: JupyterLab 4, Notebook 7,
  VS Code and the book render it; a plain-text front end sees one line saying it is folded).

The answers are :data:`.answers.ANSWERS`, computed by kvlib's formulas.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from fractions import Fraction

from kvlib.core.units import UNITS, fmt_size
from kvlib.views.exercises.answers import ANSWERS, Exercise, Part
from kvlib.views.exercises.reading import Reading, Unreadable, read

__all__ = ["ANSWERS", "Exercise", "Part", "check", "verdict", "solution", "Folded"]

# Binary and decimal units a learner may swap, as (binary, decimal).
_MIXUPS = (("KiB", "KB"), ("MiB", "MB"), ("GiB", "GB"), ("TiB", "TB"))


def _show(value, kind: str, unit: str = "") -> str:
    """An answer as the checker prints it: exact integers with separators; ratios and times
    to four significant digits (from the exact value, so the same on every machine)."""
    if unit:
        value = Fraction(value)
        number = f"{value.numerator:,}" if value.denominator == 1 else f"{float(value):.4g}"
        return f"{number} {unit}"
    if kind == "exception":
        return str(value)
    value = Fraction(value)
    if kind == "bytes":
        size = fmt_size(value)
        return f"{value.numerator:,} B" + ("" if size.endswith(" B") else f" ({size})") \
            if value.denominator == 1 else size
    if kind == "seconds":
        return f"{float(value) * 1e3:.4g} ms"
    if value.denominator == 1:
        return f"{value.numerator:,}" + ("x" if kind == "ratio" else "")
    return f"{float(value):.4g}" + (f" ({float(value):.1%})" if kind == "ratio" and value < 1
                                    else "x" if kind == "ratio" else "")


# Counts of things that fit (tokens, sequences, sessions): a fraction or one more is rounded
# the wrong way. Other counts (heads, widths, FLOPs) are not rounded at all.
_FITTING = ("tokens", "sequences", "sessions")
# Counts of operations: a factor 2 between them is FLOPs vs multiply-adds.
_OPERATIONS = ("FLOPs", "multiply-adds")


def _hint(part: Part, reading: Reading, want) -> str:
    """Why ``reading`` is not ``want``: the part's own slips first, then the general ones.
    Each general hint says only what the reading shows (issue 36: "3.05e4" was told to give
    three significant digits, which it has; tests/test_exercises.py holds every hint to the
    input that triggers it)."""
    for slip, hint in part.slips().items():
        if reading.matches(slip):
            return hint
    if part.kind == "exception":
        return "run the call and read the exception's type, on the last line of the traceback"
    want = Fraction(want)
    if part.kind == "bytes" and want:
        for level, (binary, decimal) in enumerate(_MIXUPS, start=1):
            factor = Fraction(UNITS[binary], UNITS[decimal])
            if reading.matches(want / factor) or reading.matches(want * factor):
                if reading.unit in ("", binary.lower(), decimal.lower()):
                    return (f"a unit mix-up, {binary} vs {decimal}: 1 {binary} = "
                            f"{UNITS[binary]:,} B, 1 {decimal} = {UNITS[decimal]:,} B")
                steps = ("one", "two", "three", "four")[level - 1]
                return (f"a unit mix-up: {steps} of the steps B, KiB, MiB, GiB, TiB taken as "
                        "1,000 instead of 1,024")
        for power in (1, 2, 3):
            for base in (1024, 1000):
                if reading.matches(want * base**power) or reading.matches(want / base**power):
                    return (f"off by a factor {base**power:,}: check the unit (1 KiB = 1,024 B, "
                            "1 MiB = 1,024 KiB, 1 GiB = 1,024 MiB; KB, MB, GB: 1,000)")

    def near(x) -> bool:  # a count computed from a wrong size may be off by one more
        return abs(reading.value - x) <= 1 if part.unit in _FITTING else reading.matches(x)

    if want and part.kind in ("bytes", "count") and (near(want * 2) or near(want / 2)):
        if part.unit in _OPERATIONS:
            return ("off by a factor 2: a multiply-add is two FLOPs (one multiply, one add); "
                    f"the question counts {part.unit}")
        return ("off by a factor 2: check what each token caches (a K and a V per KV head; "
                "one latent for MLA) and the bytes per element (2 in bf16, 1 in fp8)")
    if part.unit in _FITTING and (reading.value == want + 1 or (
            reading.value.denominator != 1 and reading.value // 1 == want)):
        return "round down: only whole ones fit"
    if part.kind == "ratio" and want and reading.value:
        if reading.matches(1 / want):
            return "upside down: the question's first quantity over its second"
        if want < 1 and reading.matches(want * 100):
            return "a share is a fraction: write it with a % sign, or as a decimal below 1"
    if part.kind == "seconds" and want and (reading.matches(want * 1000)
                                            or reading.matches(want / 1000)):
        if not reading.unit and reading.matches(want * 1000):
            return "that number is in milliseconds: write 'ms' after it (a bare number is seconds)"
        return "off by a factor 1,000: check the unit (1 s = 1,000 ms = 1,000,000 us)"
    zeros = reading.trailing_zeros
    if zeros is not None and abs(reading.value - want) <= Fraction(10) ** zeros / 2:
        # A whole number typed without a point is read as exact: 30,500 for 30,517 tokens,
        # 524,000 for 524,288 B, 13 for 13.3x; 30 for 32x has one significant digit.
        digits = len(str(abs(reading.value.numerator))) - zeros
        if part.kind == "count":
            return "close, but a count is exact: write the whole number, every digit"
        if part.kind == "bytes":
            return ("close, but a whole number of bytes is read as exact: give every digit, or "
                    "round it with a unit (KB, KiB, MB, ...)")
        if digits < (2 if part.kind == "ratio" else 3):
            return (f"close: give at least {'two' if part.kind == 'ratio' else 'three'} "
                    "significant digits, or the exact number")
        if want.denominator != 1:
            return ("close, but a whole number is read as exact and this answer is not whole: "
                    "give it with its decimals")
        return "close, but a whole number is read as exact: give the exact number"
    if reading.rounds_to(want):
        # Reached only when too few digits were typed to be judged right: a count must be
        # exact; a size or a time needs three significant digits, a ratio two.
        if part.kind == "count":
            return "close, but a count is exact: write the whole number, every digit"
        return (f"close: give at least {'two' if part.kind == 'ratio' else 'three'} "
                "significant digits, or the exact number")
    if reading.tolerance and abs(reading.value - want) <= 2 * reading.tolerance:
        return "close, but the last digit is off by one: round to the nearest, not down or up"
    return "recompute step by step"


def _judge(exercise: str, part: Part, answer) -> tuple[bool, str]:
    if answer is None or answer is Ellipsis:
        return False, f"{part.what}: no answer yet"
    try:
        reading = read(answer, part.kind, part.unit)
    except Unreadable as err:
        return False, f"{part.what}: {err}"
    want = part.value()
    if reading.matches(want):
        exact = reading.tolerance == 0 or reading.value == Fraction(want)
        return True, (f"{part.what}: right, {_show(want, part.kind, part.unit)}"
                      + ("" if exact else " (to the digits you gave)"))
    return False, f"{part.what}: not yet ({_hint(part, reading, want)})"


def _exercise_id(exercise) -> str:
    text = str(exercise).strip()
    m = re.fullmatch(r"0?(\d)\.(\d)", text)
    return f"0{m.group(1)}.{m.group(2)}" if m else text


def verdict(exercise, *answers) -> tuple[bool, str]:
    """(all right, a one-line message) for ``answers`` to ``exercise`` ("01.1", ...): one
    answer per part, in order (a single list or tuple of them is unpacked)."""
    key = _exercise_id(exercise)
    if key not in ANSWERS:
        return False, (f"{exercise!r} is not an exercise; they are {', '.join(ANSWERS)}")
    parts = ANSWERS[key].parts
    if len(parts) > 1 and len(answers) == 1 and isinstance(answers[0], list | tuple):
        answers = tuple(answers[0])
    names = ", ".join(p.name for p in parts)
    if not answers or all(a is None or a is Ellipsis for a in answers):
        return False, f"{key}: no answer yet (set {names} = ..., then run the cell)"
    if len(answers) != len(parts):
        asked = "; ".join(p.what for p in parts)
        recognised = [p.what for p in parts for a in answers
                      if a is not None and a is not Ellipsis and _judge(key, p, a)[0]]
        said = f"; right so far: {', '.join(recognised)}" if recognised else ""
        return False, (f"{key} asks for {len(parts)} answer{'s' * (len(parts) > 1)} "
                       f"({asked}), got {len(answers)}: check(\"{key}\", {names}){said}")
    judged = [_judge(key, p, a) for p, a in zip(parts, answers, strict=True)]
    right = all(ok for ok, _ in judged)
    if len(parts) == 1:
        _, message = judged[0]
        return right, f"{key}: {message.split(': ', 1)[1]}"
    return right, f"{key}: " + "; ".join(message for _, message in judged)


def check(exercise, *answers) -> bool:
    """Print right / not yet (with a hint) for ``answers`` to ``exercise``; return whether all
    are right. Never raises on what a learner passes."""
    try:
        right, message = verdict(exercise, *answers)
    except Exception as err:  # a bug of ours must not cost a learner a traceback
        right, message = False, f"{exercise}: could not check this answer ({err})"
    print(message)
    return right


@dataclass(frozen=True)
class Folded:
    """A solution's answer, shown only when asked for (see the module docstring)."""

    exercise: str
    text: str
    message: str

    def __repr__(self) -> str:
        return f"Answer to {self.exercise}: folded (open it in JupyterLab, VS Code or the book)"

    def _repr_html_(self) -> str:
        return (f'<details class="kvlib-answer"><summary>Show the answer to {self.exercise}'
                f"</summary><pre>{html.escape(self.text)}</pre>"
                f"<p><code>check</code> says: {html.escape(self.message)}</p></details>")


def solution(exercise: str, *values, say: str) -> Folded:
    """End a solution cell: ``values`` (its answers, in the order :func:`check` takes them)
    must pass :func:`verdict`, or this raises AssertionError; ``say`` is the answer in words,
    shown folded."""
    right, message = verdict(exercise, *values)
    if not right:
        raise AssertionError(f"the solution of {exercise} disagrees with kvlib's check: "
                             f"{message}")
    return Folded(_exercise_id(exercise), say, message)
