"""A check's result, and the rounding of printed figures: a GiB figure printed to 2 decimals
stands for every byte count within 0.005 GiB of it (GiB = 2^30 bytes)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvlib.serving.engines.vllm.log.reading import LogLine

__all__ = ["Check", "Explanation", "GiB", "HALF"]

GiB = 1024**3
HALF = Fraction(5, 1000)  # half the step of a GiB figure printed to 2 decimals



@dataclass(frozen=True)
class Check:
    """One number of the log and kvlib's figure for it.

    status: ``ok`` (agrees within the printed rounding), ``mismatch``, ``info`` (shown
    beside kvlib's figure, never a failure: measured weights), ``unexplained``
    (recognised, but kvlib cannot work it out: ``reason`` says why).
    """

    line: LogLine
    quantity: str
    printed: str
    kvlib: str
    formula: str
    status: str
    reason: str = ""


@dataclass(frozen=True)
class Explanation:
    """Every check of one log, and the settings they used."""

    checks: tuple[Check, ...]
    rules: str
    model: str | None
    settings: dict
    notes: tuple[str, ...]

    @property
    def mismatches(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "mismatch")

    @property
    def checked(self) -> int:
        """How many numbers were worked out again (agreeing or not); info and unexplained
        lines are not checks."""
        return sum(c.status in ("ok", "mismatch") for c in self.checks)

    @property
    def verdict(self) -> str:
        """``explained`` (at least one number recomputed, none disagrees), ``DISAGREES``, or
        ``nothing checked`` (no number recomputed: nothing is called explained)."""
        return "DISAGREES" if self.mismatches else "explained" if self.checked else \
            "nothing checked"

    @property
    def ok(self) -> bool:
        """The verdict is ``explained``: something was checked and nothing disagrees."""
        return self.verdict == "explained"


# ----------------------------------------------------------------------------- intervals

def _frac(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _gib_range(text: str) -> tuple[Fraction, Fraction]:
    """GiB values a 2-decimal figure stands for: [x - 0.005, x + 0.005]."""
    x = _frac(text)
    return x - HALF, x + HALF


def _bytes_range(text: str) -> tuple[int, int]:
    lo, hi = _gib_range(text)
    return math.ceil(lo * GiB), math.floor(hi * GiB)


def _g(x) -> str:
    """A GiB figure for a reader: 2 decimals."""
    return f"{float(x):.2f}"


def _near(printed: str, lo: Fraction, hi: Fraction, half: Fraction = HALF) -> bool:
    """Whether a printed value (± half) meets the interval [lo, hi]."""
    x = _frac(printed)
    return x + half >= lo and x - half <= hi


def _round2_matches(printed: str, value: Fraction) -> bool:
    """Whether ``value`` printed with ``%.2f`` can read ``printed`` (ties either way)."""
    return abs(value - _frac(printed)) <= HALF

