"""What the engines' log readers share: one checked quantity of a start-up line
(:class:`EngineCheck`), the checks of one log (:class:`EngineExplanation`), and the rounding
a printed two-decimal GiB figure allows. Each engine reads its own lines in its folder
(``engines/sglang/log.py``, ``engines/trtllm/log.py``; vLLM's ``engines/vllm/log/``); the
registry, :mod:`kvlib.serving.engines`, tells the engines' logs apart (``kvlib explain-log``,
issue 35).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["EngineCheck", "EngineExplanation", "GiB", "HALF", "gib_ok"]

GiB = 1 << 30
HALF = Fraction(5, 1000)  # half a unit in the last of two printed decimals


@dataclass(frozen=True)
class EngineCheck:
    line: int
    text: str
    quantity: str
    printed: str
    kvlib: str
    status: str  # ok, mismatch, info
    how: str = ""


@dataclass
class EngineExplanation:
    engine: str  # "sglang" or "trtllm"
    checks: list[EngineCheck] = field(default_factory=list)

    @property
    def mismatches(self) -> list[EngineCheck]:
        return [c for c in self.checks if c.status == "mismatch"]

    @property
    def checked(self) -> int:
        """How many numbers were worked out again (agreeing or not; info is no check)."""
        return sum(c.status in ("ok", "mismatch") for c in self.checks)

    @property
    def verdict(self) -> str:
        """``explained`` (one number or more recomputed, none disagrees), ``DISAGREES`` or
        ``nothing checked``."""
        return "DISAGREES" if self.mismatches else "explained" if self.checked else \
            "nothing checked"

    @property
    def ok(self) -> bool:
        return self.verdict == "explained"


def gib_ok(printed: str, exact) -> bool:
    """Whether ``printed`` (GiB, two decimals) is ``exact`` bytes, within its rounding."""
    return abs(Fraction(printed) - Fraction(exact) / GiB) <= HALF
