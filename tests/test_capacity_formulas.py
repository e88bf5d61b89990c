"""kvlib.serving.capacity_formulas: the planner's arithmetic, exact, against hand values."""

from fractions import Fraction

import numpy as np

from kvlib.serving import capacity_formulas as cf


def test_usable_is_vllms_ceiling_of_the_share():
    # H200's CUDA total, 139.81 GiB (floored to bytes), x 0.92, rounded up: notebook 06.
    total = 13981 * 2**30 // 100
    assert cf.usable(Fraction(92, 100), total) == -(-total * 92 // 100) == 138_110_256_860


def test_sessions_are_whole_and_never_negative():
    # Blog post A's 4 x H200: 98,536,457,948 B left, 10 GiB a session -> 9 (9.18 floored).
    total = 13981 * 2**30 // 100
    weights = (70_553_706_496 - 1_318_912) * 2 // 4 + 1_318_912 * 2
    assert cf.kv_budget(0.92, total, weights, 4 * 2**30) == 98_536_457_948
    assert cf.sessions(0.92, total, weights, 4 * 2**30, 10 * 2**30) == 9
    assert cf.sessions(0.92, total, 10**12, 0, 10 * 2**30) == 0  # weights do not fit


def test_exact_past_floating_point():
    # (2^60 - 1) / 2^59 floors to 1; in float64, 2^60 - 1 rounds to 2^60 and gives 2.
    assert cf.sessions(1, 2**60 - 1, 0, 0, 2**59) == 1
    assert cf.sessions(1, 2**60, 0, 0, 2**59) == 2


def test_step_floor_and_arrays():
    # 16.06 GB of weights read + 43 sessions x 512 MiB at 864 GB/s (an L40S).
    assert cf.step_seconds(16_060_000_000, 2**29, 43, 864 * 10**9) == \
        (16_060_000_000 + 43 * 2**29) / (864 * 10**9)
    assert list(cf.step_seconds(10, 2, np.array([1, 2]), 4)) == [3.0, 3.5]
