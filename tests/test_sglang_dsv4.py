"""SGLang 0.5.23's DeepSeek V4 pools (issue 41 item 3 part 4), worked by hand from the published
configs and SGLang's source lines; the same models run through SGLang's own
DSV4PoolConfigurator in tests/oracle/test_sglang_oracle.py."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.catalog import bundled_config
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines.sglang import dsv4

GiB = 1 << 30


def test_flash_at_40_gib_by_hand():
    """DeepSeek V4 Flash: 43 layers, compress_ratios[:43] = 0, 0, then 4 and 128 alternating:
    21 c4 and 20 c128 layers; head_dim 512, qk_rope_head_dim 64 (d_nope 448), index_head_dim
    128, page 256, ratio 0.1, max_running_requests 256.

    Row: 448 + 2 x 64 + 8 = 584 B; in pages of 256 rows 256 x 584 = 149,504 B, padded to
    260 x 576 = 149,760 B: 585 B a row. c4 pages of 64: 37,376 -> 65 x 576 = 37,440, 585 B;
    c128 pages of 2: 1,168 -> 3 x 576 = 1,728, 864 B. Indexer: 128 + 4 = 132 B.
    SWA slot: 585 x 43 + 8 / 256 x (2 x 2 x 512 x 4 + 2 x 2 x 128 x 4) x 21
    = 25,155 + 320 x 21 = 31,875 B.
    Full token: 0.1 x 31,875 + 21 x (585 + 132) / 4 + 20 x 864 / 128
    = 3,187.5 + 3,764.25 + 135 = 7,086.75 B.
    c128 state: 257 x 128 + 128 + 1 = 33,025 rows -> 259 x 128 = 33,152, x 2 x 512 x 4 B x 20
    = 2,715,811,840 B.
    40 GiB = 42,949,672,960 B: (42,949,672,960 - 2,715,811,840) / 7,086.75 = 5,677,336.x,
    in pages of 256: 5,677,312 tokens; SWA int(567,731.2) -> 567,552; c4 1,419,328, c128
    44,354 entries; c4 state 2,217 pages x 8 = 17,736 rows, c128 257 x 128 = 32,896 rows;
    max_running_requests min(256, 2,838,656) = 256."""
    v = dsv4.v4_pool(bundled_config("deepseek-v4-flash"), 40 * GiB)
    assert (v.layers, v.c4_layers, v.c128_layers) == (43, 21, 20)
    assert (v.entry, v.swa_row) == (584, 585)
    assert v.swa_token == 31_875
    assert v.full_token == Fraction(708_675, 100)
    assert v.c128_state == 2_715_811_840
    assert (42_949_672_960 - 2_715_811_840) * 4 // 28_347 == 5_677_336
    assert v.tokens == 5_677_312
    assert (v.swa_tokens, v.c4_tokens, v.c128_tokens) == (567_552, 1_419_328, 44_354)
    assert (v.c4_state_rows, v.c128_state_rows, v.max_running_requests) == (17_736, 32_896, 256)


def test_pro_cells_by_hand():
    """DeepSeek V4 Pro: 61 layers, compress_ratios[:61] = 128, 128, then 4 and 128
    alternating: 30 c4, 31 c128 layers. SWA slot 585 x 61 + 320 x 30 = 45,285 B; full token
    4,528.5 + 30 x 179.25 + 31 x 6.75 = 10,115.25 B; c128 state 33,152 x 4,096 x 31 =
    4,209,508,352 B."""
    v = dsv4.v4_pool(bundled_config("deepseek-v4-pro"), 40 * GiB)
    assert (v.layers, v.c4_layers, v.c128_layers) == (61, 30, 31)
    assert (v.swa_token, v.full_token, v.c128_state) == (45_285, Fraction(1_011_525, 100),
                                                         4_209_508_352)


def test_a_budget_too_small_for_one_request_is_refused():
    """Below the c128 state and one SWA request (128 + 256 tokens) SGLang stops
    (validate_swa_pool_size, pool_configurator.py:198-216): kvlib says so."""
    with pytest.raises(ValueError, match="cannot hold one request"):
        dsv4.v4_pool(bundled_config("deepseek-v4-pro"), 3 * GiB)


def test_the_plan_on_8_h200s():
    """kvlib plan deepseek-v4-flash --engine sglang --gpu H200 --gpus 8 --tp 8 plans it: the
    pools are dsv4's for the plan's budget, the page 256, the SWA pool a tenth."""
    p = engine_tokens("deepseek-v4-flash", "H200", "sglang", tp=8, context=8192)
    v = dsv4.v4_pool(bundled_config("deepseek-v4-flash"), p.kv_budget)
    assert (p.page, p.tokens, p.swa_tokens, p.max_running_requests) == (
        256, v.tokens, v.swa_tokens, 256)
    assert p.cell == 7_086.75


def test_the_first_line_names_sglangs_own_auto(capsys):
    """Under auto, SGLang 0.5.23 stores DeepSeek V4 in fp8_e4m3 whatever vLLM's auto would be
    (pool_configurator.py:1104-1110): the plan's first line and its JSON say fp8_e4m3 and whose
    auto it is; a dtype given is printed as given."""
    import json

    from kvlib.cli import main

    argv = ["plan", "deepseek-v4-flash", "--gpu", "H200", "--gpus", "8", "--tp", "8",
            "--context", "8192", "--engine", "sglang"]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "kv fp8_e4m3 (auto: SGLang's for DeepSeek V4" in first and "bf16" not in first
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kv_dtype"] == "fp8_e4m3" and "kv_dtype_auto" in d["sglang"]
    assert main([*argv, "--kv-dtype", "fp8"]) == 0
    assert ", kv fp8, " in capsys.readouterr().out.splitlines()[0]


def test_sm100_is_refused_by_name():
    with pytest.raises(ValueError, match="below SM100"):
        engine_tokens("deepseek-v4-flash", "B200", "sglang", tp=8, context=8192)


@settings(max_examples=60, deadline=None)
@given(budget=st.integers(3 * GiB, 200 * GiB), name=st.sampled_from(
    ["deepseek-v4-flash", "deepseek-v4-pro"]))
def test_the_pools_fit_the_budget_and_a_page_more_would_not(budget, name):
    """Invariant of SGLang's sizing: whole pages, the state plus T full tokens within the
    budget, one page more over it, SWA a tenth in pages."""
    try:
        v = dsv4.v4_pool(bundled_config(name), budget)
    except ValueError:
        return
    assert v.tokens % 256 == 0 and v.swa_tokens % 256 == 0
    assert v.c128_state + v.tokens * v.full_token <= budget
    assert v.c128_state + (v.tokens + 256) * v.full_token > budget
    assert v.swa_tokens <= v.tokens / 10 < v.swa_tokens + 256
