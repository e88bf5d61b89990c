"""DeepSeek V4's KV-cache groups as vLLM 0.34.0 builds them (kvlib/serving/engines/vllm/v4.py,
issue 33).

Expected values are worked by hand below from the configs' numbers (V4-Flash: 43 layers, 21
with m = 4, 20 with m = 128, window 128; V4-Pro: 61 layers, 30 with m = 4, 31 with m = 128)
and vLLM 0.34.0's rules (each cited in kvlib/serving/engines/vllm/v4.py), or were printed by vLLM
0.34.0's own code on this CPU (tests/oracle/engine: ``drive.build(config, N)`` with
``enable_jit_warmup`` off, then ``drive.plan_pool(cfg, specs, 40 GiB)``), as marked.
``make oracle`` checks the same figures for every context against vLLM's scheduler too.
"""

import pytest

from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.deployment import plan
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.engines.vllm.v4 import approximate_gcd, v4_packed_groups, v4_specs, v4_terms

GiB = 1024**3
POOL = 40 * GiB

# pages, each rounded up to a multiple of 576 B (kv_cache_interface.py:731-738)
WINDOW = 37440  # 64 tokens x 584 B = 37,376 -> 65 x 576
C4 = 37440  # 256 / 4 = 64 entries x 584 B = 37,376 -> 37,440
C128 = 1728  # 256 / 128 = 2 entries x 584 B = 1,168 -> 3 x 576
INDEXER = 8640  # 64 keys x 132 B = 8,448 -> 15 x 576
C4_STATE = 32832  # 4 slots x (2 x 2 x 512 x 4 B) = 32,768 -> 57 x 576
INDEXER_STATE = 8640  # 4 slots x (2 x 2 x 128 x 4 B) = 8,192 -> 15 x 576
C128_STATE = 32832  # 8 slots x (2 x 1 x 512 x 4 B) = 32,768 -> 57 x 576

# vLLM's groups (spec class, block size, layers), printed by drive.plan_pool (see docstring)
ORACLE_GROUPS = {
    "deepseek-v4-flash": [("SlidingWindowMLASpec", 64, 22), ("SlidingWindowMLASpec", 64, 21),
                          ("MLAAttentionSpec", 256, 62), ("SlidingWindowMLASpec", 4, 42),
                          ("SlidingWindowMLASpec", 8, 20)],
    "deepseek-v4-pro": [("SlidingWindowMLASpec", 64, 31), ("SlidingWindowMLASpec", 64, 30),
                        ("MLAAttentionSpec", 256, 91), ("SlidingWindowMLASpec", 8, 31),
                        ("SlidingWindowMLASpec", 4, 60)],
}
# (max_model_len, blocks for 40 GiB, logged concurrency), printed by drive.plan_pool
ORACLE_POOL = {
    "deepseek-v4-flash": (131072, 42853, 5.956769530164026),
    "deepseek-v4-pro": (1048576, 29909, 2.7750046390796066),
}


def test_pages_by_hand():
    got = {(s.name, s.page_bytes) for s in v4_specs(load_model("deepseek-v4-flash"))}
    assert got == {("window rows", WINDOW), ("compressed entries (m = 4)", C4),
                   ("compressed entries (m = 128)", C128), ("indexer keys", INDEXER),
                   ("compressor state (m = 4)", C4_STATE),
                   ("indexer compressor state", INDEXER_STATE),
                   ("compressor state (m = 128)", C128_STATE)}


def test_approximate_gcd_by_hand():
    # V4-Flash: balanced buckets of 43 (windows), 21 (m = 4 states, two page sizes: the
    # floor) and 20 (m = 128 states). Padding for d = 21: 20 + 0 + 1 = 21; d = 22: 1 + 1 + 2
    # = 4; d = 23: 3 + 2 + 3 = 8; d = 24: 5 + 3 + 4 = 12; ... d = 43: 0 + 22 + 23 = 45
    assert approximate_gcd([43, 21, 20], 21) == 22
    # V4-Pro: 61, 30 (floor), 31: d = 30: 29 + 0 + 29; d = 31: 1 + 1 + 0 = 2; d = 32: 3 + 2 + 1
    assert approximate_gcd([61, 30, 31], 30) == 31
    # [4, 6] from 2: only d = 2 pads nothing; [6, 6] from 2: d = 2, 3 and 6 pad nothing, and
    # a tie goes to the larger d
    assert approximate_gcd([4, 6], 2) == 2
    assert approximate_gcd([6, 6], 2) == 6


@pytest.mark.parametrize("name", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_groups_are_vllms(name):
    groups = v4_packed_groups(v4_specs(load_model(name)))
    got = sorted((g.layers[0][0].spec, g.first_block, g.count) for g in groups)
    assert got == sorted(ORACLE_GROUPS[name])


def test_flash_block_bytes_and_blocks_per_request_by_hand():
    layout = vllm_layout(load_model("deepseek-v4-flash"), 131072, "fp8", gpu="H200")
    # the widest group: 21 m = 4 entries + 20 m = 128 entries + 21 indexer pages
    widest = 21 * C4 + 20 * C128 + 21 * INDEXER
    assert widest == 1_002_240
    assert max(22 * WINDOW, 21 * (C4_STATE + INDEXER_STATE), 20 * C128_STATE) < widest
    assert layout.bytes_per_block == widest
    # per group at N = 131,072 with 2 x 8,192 tokens in flight (H200, async scheduling):
    # windows ceil(min(127 + 16384, N) / 64) + 1 = 259 (two groups), m = 4 states
    # ceil((7 + 16384) / 4) + 1 = 4,099, m = 128 states ceil((127 + 16384) / 8) + 1 = 2,065,
    # compressed ceil(131072 / 256) = 512
    assert layout.blocks_per_request == 2 * 259 + 4099 + 2065 + 512 == 7194
    assert sorted(g.blocks_per_request for g in layout.groups) == [259, 259, 512, 2065, 4099]
    assert layout.block_size == 4  # the smallest prefix-cacheable group's (core.py:367-378)


@pytest.mark.parametrize("name", sorted(ORACLE_POOL))
def test_pool_is_vllms(name):
    N, blocks, logged = ORACLE_POOL[name]
    layout = vllm_layout(load_model(name), N, "fp8", gpu="H200")
    assert layout.num_blocks(POOL) == blocks
    assert float(layout.max_concurrency(POOL)) == pytest.approx(logged, rel=1e-12)


def test_pro_at_one_million_by_hand():
    layout = vllm_layout(load_model("deepseek-v4-pro"), 1048576, "fp8", gpu="H200")
    assert layout.bytes_per_block == 30 * C4 + 31 * C128 + 30 * INDEXER == 1_435_968
    # compressed ceil(2^20 / 256) = 4,096; windows and states as at 128K (in flight < N)
    assert layout.blocks_per_request == 2 * 259 + 4099 + 2065 + 4096 == 10778
    assert layout.num_blocks(POOL) == POOL // 1_435_968 == 29909


def test_decode_holds_the_windows_blocks_only():
    """At full length a request holds every compressed block and a window's worth of the
    others: committed = 131,070 (two steps behind 131,071 cached)."""
    hold = vllm_layout(load_model("deepseek-v4-flash"), 131072, "fp8").holding(131072)
    # windows: ceil(131071 / 64) - floor((131070 - 127) / 64) = 2048 - 2045 = 3;
    # m = 4 states: ceil(131071 / 4) - floor((131070 - 7) / 4) = 32768 - 32765 = 3;
    # m = 128 states: ceil(131071 / 8) - floor((131070 - 127) / 8) = 16384 - 16367 = 17
    assert sorted(hold.by_group) == sorted([3, 3, 3, 17, 512])


def test_terms_at_one_million_by_hand():
    """The public claims: V4-Pro ~5.40 GiB and V4-Flash ~3.77 GiB at 1M are the entries in
    vLLM's fp8_ds_mla format (584 B), indexer keys (132 B), windows and fp32 states, without
    page padding; "8.7 GiB" for V4-Pro is bf16 entries (1,024 B) plus the indexer keys."""
    T = 1048576
    pro = {t.name: t for t in v4_terms(load_model("deepseek-v4-pro"), T)}
    entries = (30 * (T // 4) * 584 + 31 * (T // 128) * 584 + 30 * (T // 4) * 132
               + 61 * 128 * 584 + 30 * 8 * 8192 + 30 * 8 * 2048 + 31 * 128 * 4096)
    assert sum(t.entry_total for t in pro.values()) == entries == 5_802_431_488
    assert round(entries / GiB, 2) == 5.40
    stored = (30 * 4096 * C4 + 31 * 4096 * C128 + 30 * 4096 * INDEXER + 61 * 3 * WINDOW
              + 30 * 3 * C4_STATE + 30 * 3 * INDEXER_STATE + 31 * 17 * C128_STATE)
    assert sum(t.stored for t in pro.values()) == stored  # 5.50 GiB with padding
    bf16 = 30 * (T // 4) * 1024 + 31 * (T // 128) * 1024 + 30 * (T // 4) * 132
    assert round(bf16 / GiB, 1) == 8.7
    assert pro["indexer keys"].entries == T // 4 and pro["indexer keys"].entry_bytes == 132
    flash = v4_terms(load_model("deepseek-v4-flash"), T)
    flash_entries = (21 * (T // 4) * (584 + 132) + 20 * (T // 128) * 584 + 43 * 128 * 584
                     + 21 * 8 * (8192 + 2048) + 20 * 128 * 4096)
    assert sum(t.entry_total for t in flash) == flash_entries
    assert round(flash_entries / GiB, 2) == 3.77


def test_terms_refuse_a_model_without_compressed_layers():
    with pytest.raises(ValueError, match="no compressed layers"):
        v4_terms(load_model("deepseek-v3.2"), 4096)
    with pytest.raises(ValueError, match="context"):
        v4_terms(load_model("deepseek-v4-flash"), 0)


@pytest.mark.parametrize("kwargs, match", [
    ({"gpu": "B200"}, "Hopper"), ({"kv_dtype": "int8"}, "refuses"),
    ({"block_size": 64}, "256-token"), ({"release": "0.33"}, "0.34.0 only")])
def test_untraced_is_refused_in_one_line(kwargs, match):
    args = {"kv_dtype": "fp8", "gpu": "H200", **kwargs}
    with pytest.raises(ValueError, match=match) as e:
        vllm_layout(load_model("deepseek-v4-flash"), 131072, args.pop("kv_dtype"),
                    1, args.pop("gpu"), **args)
    assert "\n" not in str(e.value)


def test_plan_gives_vllms_figures():
    p = plan(load_model("deepseek-v4-flash"), "H200", kv_cache_memory=POOL,
             context=131072, params=284_000_000_000, weight_dtype="fp8")
    assert p.vllm_num_blocks == 42853
    assert p.vllm_max_concurrency == 5.96
    assert p.sessions_basis == "vllm"
    # n - 1 at 538 blocks while the n-th prefills at its peak, in 42,852 blocks
    hold = vllm_layout(load_model("deepseek-v4-flash"), 131072, "fp8").holding(131072)
    assert p.max_sequences_per_replica == 1 + (42853 - 1 - hold.prefill) // hold.decode
