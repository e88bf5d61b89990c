"""kvlib.serving.engines.vllm.budget: the planner's arithmetic, exact, against hand values."""

from fractions import Fraction

import numpy as np

from kvlib.serving.engines.vllm import budget as cf


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


def test_extensible_budget_of_vllm_0_34_by_hand():
    """vLLM 0.34.0's measured budget (extensible_kv_cache.py:592-618) on an H200, by hand.

    M: the CUDA total, 139.81 GiB; in use at start M_0 = 0.5 GiB; weights Llama 3.1 70B bf16
    over TP 4; resident non-KV O_R = 2.5 GiB; peak P = 3.5 GiB -> margin max(1 GiB, 0.75 P)
    = 2.625 GiB. u = 1.0 (its default): min(M, M - 0.5 - 2.625 GiB) = M - 3.125 GiB.
    """
    total = 13981 * 2**30 // 100
    weights = (70_553_706_496 - 1_318_912) * 2 // 4 + 1_318_912 * 2
    peak, resident, in_use = 7 * 2**29, 5 * 2**29, 2**29
    assert cf.margin(peak) == 2_818_572_288 == 21 * 2**27
    assert cf.margin(2**29) == 2**30  # the floor: 0.75 x 0.5 GiB < 1 GiB
    usable = total - in_use - 21 * 2**27
    assert cf.usable_extensible(1, total, in_use, peak) == usable == 146_764_401_213
    budget = usable - weights - resident - peak
    assert cf.kv_budget_extensible(1, total, in_use, weights, resident, peak) == budget \
        == 105_043_118_653
    # 10 GiB a session (131,072 tokens, 80 KiB per token per GPU): 9 (9.78 floored)
    assert budget // (10 * 2**30) == 9
    # torch's reservation growth counts only when larger than the peak
    assert cf.kv_budget_extensible(1, total, in_use, weights, resident, peak, 2**30) == budget
    assert cf.kv_budget_extensible(1, total, in_use, weights, resident, peak,
                                   4 * 2**30) == budget - 2**29


def test_an_explicit_utilization_below_one_caps_the_0_34_budget():
    # u = 0.92: ceil(0.92 M) < M - M_0 - margin, so the request binds (the cache shrinks)
    total = 13981 * 2**30 // 100
    peak, resident, in_use = 7 * 2**29, 5 * 2**29, 2**29
    requested = -(-total * 92 // 100)
    assert requested == 138_110_256_860
    assert cf.usable_extensible(Fraction(92, 100), total, in_use, peak) == requested
    assert cf.kv_budget_extensible(Fraction(92, 100), total, in_use, 0, resident, peak) == \
        requested - resident - peak
    # ROCm's 3 GiB floor is a parameter
    assert cf.margin(2**30, floor=3 * 2**30) == 3 * 2**30


def test_one_rule_per_release():
    assert set(cf.RULES) == {"0.33.0", "0.34.0"}
    assert cf.RULES["0.33.0"][2] is cf.KV_BUDGET
    assert cf.RULES["0.34.0"][0] == "extensible"
    assert cf.SYMBOLS["P"] in cf.KV_BUDGET_EXTENSIBLE.free_symbols


def test_extensible_results_are_ints():
    # JSON needs ints: max(P, T) of a Fraction peak must not leak a Fraction
    for value in (cf.margin(3), cf.usable_extensible(1, 10**12, 1, 3),
                  cf.kv_budget_extensible(1, 10**12, 1, 2, 3, 5)):
        assert type(value) is int
