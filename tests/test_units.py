from fractions import Fraction

import pytest

from kvlib.core.units import describe, fmt_bytes, to_unit


def test_binary_and_decimal_units_differ_as_defined():
    assert to_unit(1024, "KiB") == 1 and to_unit(1024, "KB") == Fraction(128, 125)
    assert to_unit(2**30, "GiB") == 1 and to_unit(10**9, "GB") == 1


def test_formatting_of_the_seed_numbers():
    assert fmt_bytes(2_621_440, "MiB") == "2.5 MiB"
    assert fmt_bytes(2_621_440, "MB") == "2.62 MB"
    assert fmt_bytes(327_680, "KiB") == "320 KiB"
    assert fmt_bytes(21_474_836_480, "GB", 1) == "21.5 GB"
    assert fmt_bytes(343_597_383_680, "GB", 1) == "343.6 GB"
    assert describe(327_680) == "327,680 B = 320 KiB = 327.68 KB"


def test_unknown_unit_is_named():
    with pytest.raises(ValueError, match="'MIB'"):
        to_unit(1, "MIB")
