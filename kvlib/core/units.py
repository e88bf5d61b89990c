"""Byte units, binary and decimal, kept apart (notebook 01, "Units").

Binary: KiB = 1024 B, MiB = 1024^2 B, GiB = 1024^3 B, TiB = 1024^4 B.
Decimal: KB = 1000 B, MB = 1000^2 B, GB = 1000^3 B, TB = 1000^4 B.
Every conversion is exact (``Fraction``) until it is formatted for a reader.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["UNITS", "to_unit", "fmt_bytes", "describe", "auto_unit", "fmt_size"]

UNITS: dict[str, int] = {
    "B": 1,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4,
    "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
}


def to_unit(n_bytes, unit: str) -> Fraction:
    """``n_bytes`` expressed in ``unit``, exactly."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return Fraction(n_bytes) / UNITS[unit]


def fmt_bytes(n_bytes, unit: str, digits: int = 2) -> str:
    """``"2.5 MiB"``: exact values print without decimals, others rounded to ``digits``."""
    value = to_unit(n_bytes, unit)
    if value.denominator == 1:
        return f"{value.numerator:,} {unit}"
    text = f"{float(value):,.{digits}f}".rstrip("0").rstrip(".")
    return f"{text} {unit}"


def describe(n_bytes, binary: str = "KiB", decimal: str = "KB", digits: int = 2) -> str:
    """``"2,621,440 B = 2,560 KiB = 2,621.44 KB"``: the exact count, then both units."""
    exact = Fraction(n_bytes)
    head = f"{exact.numerator:,} B" if exact.denominator == 1 else f"{float(exact):,} B"
    return (f"{head} = {fmt_bytes(n_bytes, binary, digits)}"
            f" = {fmt_bytes(n_bytes, decimal, digits)}")


def auto_unit(n_bytes) -> str:
    """The largest binary unit (B, KiB, MiB, GiB, TiB) in which ``n_bytes`` is at least 1."""
    return next((u for u in ("TiB", "GiB", "MiB", "KiB") if n_bytes >= UNITS[u]), "B")


def fmt_size(n_bytes, digits: int = 2) -> str:
    """Bytes in :func:`auto_unit`: ``"640 KiB"``, ``"40.5 GiB"``, ``"128 B"`` (never
    ``"0 GiB"`` for a small value)."""
    return fmt_bytes(n_bytes, auto_unit(n_bytes), digits)
