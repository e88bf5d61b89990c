"""DeepSeek V4 (issue 33): compressed attention read as vLLM 0.34.0 stores it.

Expected bytes are worked by hand below from the configs' own numbers (tests/fixtures/configs/
corpus-2026.json.gz: deepseek-ai's V4-Flash and V4-Pro) and vLLM 0.34.0's code:

* entry: 448 fp8 NoPE + 64 bf16 RoPE (128 B) + 8 UE8M0 scale bytes = 584 B
  (models/deepseek_v4/attention.py:837-839), in the window of every layer
  (v1/attention/backends/mla/sparse_swa.py:76-147) and once per m tokens in a compressed layer
  (attention.py:817-840; an entry when (pos + 1) % m == 0, backends/mla/compressor_utils.py:84);
* indexer key, m = 4 layers only: 128 fp8 + 4 B fp32 scale = 132 B per 4 tokens
  (attention.py:303-322, 979-993);
* compressor state: window coff x m tokens, each slot 2 x coff x width fp32
  (models/deepseek_v4/compressor.py:156-158, 297-302; coff = 2 for m = 4).

The page bytes quoted in ORACLE_PAGES are vLLM 0.34.0's own ``get_kv_cache_spec`` run on this
CPU by tests/oracle/engine (``drive.build(config, 131072)``, kv_cache_dtype "auto", H200; also at
1048576 with the same pages; with ``kernel_config.enable_jit_warmup = False`` set after
``create_engine_config``, since the warm-up imports tilelang), printed by ``drive.spec_summary``:
(spec class, window, block size, page bytes, layers).
"""

import gzip
import json
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from kvlib import read_config
from kvlib.core.formulas import COMPRESSOR, V4, compressed
from kvlib.core.notation import N_KV, m
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec

CORPUS = json.loads(gzip.decompress(
    (Path(__file__).resolve().parent / "fixtures" / "configs" / "corpus-2026.json.gz")
    .read_bytes()))
FLASH = CORPUS["deepseek-ai--DeepSeek-V4-Flash"]["config"]
PRO = CORPUS["deepseek-ai--DeepSeek-V4-Pro"]["config"]
V4_NAMES = sorted(k for k, v in CORPUS.items() if v["config"].get("model_type") == "deepseek_v4")

ENTRY = (512 - 64) * 1 + 64 * 2 + (512 - 64) // 64 + 1  # 584
INDEXER_KEY = 128 + 128 // 128 * 4  # 132

# drive.spec_summary(drive.build(config, 131072)[1]) for V4-Flash and V4-Pro (see the docstring)
ORACLE_PAGES = {
    "flash": [["MLAAttentionSpec", None, 256, 1728, 20], ["MLAAttentionSpec", None, 256, 8640, 21],
              ["MLAAttentionSpec", None, 256, 37440, 21],
              ["SlidingWindowMLASpec", 8, 4, 8640, 21], ["SlidingWindowMLASpec", 8, 4, 32832, 21],
              ["SlidingWindowMLASpec", 128, 8, 32832, 20],
              ["SlidingWindowMLASpec", 128, 64, 37440, 43]],
    "pro": [["MLAAttentionSpec", None, 256, 1728, 31], ["MLAAttentionSpec", None, 256, 8640, 30],
            ["MLAAttentionSpec", None, 256, 37440, 30],
            ["SlidingWindowMLASpec", 8, 4, 8640, 30], ["SlidingWindowMLASpec", 8, 4, 32832, 30],
            ["SlidingWindowMLASpec", 128, 8, 32832, 31],
            ["SlidingWindowMLASpec", 128, 64, 37440, 61]],
}


def _layers(cfg):
    r = cfg["compress_ratios"][: cfg["num_hidden_layers"]]
    return len(r), r.count(4), r.count(128)


def hand_bytes(cfg, T):
    """Per kind, one sequence of T tokens, from the config's numbers."""
    n, n4, n128 = _layers(cfg)
    W = cfg["sliding_window"]
    d = cfg["head_dim"]
    d_I = cfg["index_head_dim"]
    return {
        "window": n * min(T, W) * ENTRY,
        "c4": n4 * (T // 4) * ENTRY,
        "c128": n128 * (T // 128) * ENTRY,
        "indexer": n4 * (T // 4) * INDEXER_KEY,
        "c4 state": n4 * min(T, 2 * 4) * (2 * 2 * d) * 4,
        "indexer state": n4 * min(T, 2 * 4) * (2 * 2 * d_I) * 4,
        "c128 state": n128 * min(T, 128) * (2 * 1 * d) * 4,
    }


def kvlib_bytes(spec, T):
    out = {}
    for g in spec.groups:
        if g.kind is CacheKind.COMPRESSED:
            key = "indexer" if g.attention == "Indexer" else f"c{g.ratio}"
        elif g.attention == "V4 entry":
            key = "window"
        else:
            key = {(8, 1024): "c4 state", (8, 256): "indexer state",
                   (128, 512): "c128 state"}[(g.window, g.sizes["d_c"])]
        assert key not in out
        out[key] = g.bytes_per_sequence(T, 2)  # the KV dtype plays no part: bytes, b = 1
    return out


@pytest.mark.parametrize("cfg", [FLASH, PRO], ids=["flash", "pro"])
@pytest.mark.parametrize("T", [1, 7, 128, 4096, 131072, 1000003, 1048576])
def test_bytes_per_kind_by_hand(cfg, T):
    spec = read_config(cfg)
    assert kvlib_bytes(spec, T) == hand_bytes(cfg, T)
    assert spec.kv_bytes_per_sequence(T, 2) == sum(hand_bytes(cfg, T).values())
    assert spec.kv_bytes_per_sequence(T, 1) == spec.kv_bytes_per_sequence(T, 2)


def test_flash_at_one_million_tokens_worked_out():
    T = 1048576
    assert hand_bytes(FLASH, T) == {
        "window": 43 * 128 * 584, "c4": 21 * 262144 * 584, "c128": 20 * 8192 * 584,
        "indexer": 21 * 262144 * 132, "c4 state": 21 * 8 * 8192,
        "indexer state": 21 * 8 * 2048, "c128 state": 20 * 128 * 4096}


@pytest.mark.parametrize("which", ["flash", "pro"])
def test_pages_match_vllm_spec_pages(which):
    """kvlib's bytes per entry x entries per block, padded to vLLM's 576-byte alignment
    (kv_cache_interface.py:731-738), give the oracle's page bytes, kind by kind and layer count."""
    spec = read_config(FLASH if which == "flash" else PRO)
    got = []
    for g in spec.groups:
        per_entry = LayerGroup(CacheKind.FULL, 1, g.attention, g.sizes).bytes_per_token(1)
        if g.kind is CacheKind.COMPRESSED:
            cls, window, block, entries = "MLAAttentionSpec", None, 256, 256 // g.ratio
        else:
            block = 64 if g.attention == "V4 entry" else (4 if g.window == 8 else 8)
            cls, window, entries = "SlidingWindowMLASpec", g.window, block
        page = -(-entries * per_entry // 576) * 576
        got.append([cls, window, block, page, g.layers])
    assert sorted(got, key=str) == sorted(ORACLE_PAGES[which], key=str)


@pytest.mark.parametrize("name", V4_NAMES)
def test_every_published_v4_config_is_read(name):
    cfg = CORPUS[name]["config"]
    spec = read_config(cfg)
    assert spec.num_layers == cfg["num_hidden_layers"]
    assert spec.kv_bytes_per_sequence(65536, 2) == sum(hand_bytes(cfg, 65536).values())
    assert any("compress_ratios" in a for a in spec.assumptions)


def test_symbolic_compressed_limit():
    """Per token, a compressed layer tends to (entry bytes) / m; exactly floor(N_KV / m) entries."""
    e = compressed(V4)
    per_token = sp.limit(e / N_KV.symbol, N_KV.symbol, sp.oo)
    assert sp.simplify(per_token - V4.symbolic.bytes_per_token / m.symbol) == 0
    assert V4.elements_per_token_layer(d_c=512, d_R=64) == 584
    assert COMPRESSOR.elements_per_token_layer(d_c=1024) == 8192


@given(T=st.integers(1, 1 << 22), r=st.sampled_from([2, 4, 128]), layers=st.integers(1, 64))
def test_compressed_group_properties(T, r, layers):
    g = LayerGroup(CacheKind.COMPRESSED, layers, "V4 entry", {"d_c": 512, "d_R": 64, "b": 1},
                   ratio=r)
    assert g.cached_tokens(T) == T // r
    assert g.bytes_per_sequence(T, 1) == layers * (T // r) * 584
    assert g.bytes_per_sequence(T + 1, 1) >= g.bytes_per_sequence(T, 1)  # monotone in T
    # per token it tends to entry / m from below, within one entry per layer
    assert 0 <= Fraction(layers * 584, r) * T - g.bytes_per_sequence(T, 1) < layers * 584
    assert g.bytes_per_token(1) == Fraction(layers * 584, r)


@given(T=st.integers(1, 1 << 21))
def test_v4_flash_monotone_in_T(T):
    spec = read_config(FLASH)
    assert spec.kv_bytes_per_sequence(T + 1, 2) >= spec.kv_bytes_per_sequence(T, 2)


@pytest.mark.parametrize("bad", [{"compress_ratios": [0, 0, 8] + [4] * 40},
                                 {"compress_ratios": [0, 4]},
                                 {"head_dim": 256},
                                 {"compress_ratios": None}])
def test_refusals_name_the_key(bad):
    cfg = {**FLASH, **bad}
    with pytest.raises(ValueError) as e:
        read_config(cfg)
    assert "refuse" in str(e.value) or "needed" in str(e.value)


def test_layer_types_form_reads_the_same():
    """transformers 5.25.0 writes layer_types + compress_rates instead of compress_ratios."""
    names = {0: "sliding_attention", 4: "compressed_sparse_attention",
             128: "heavily_compressed_attention"}
    cfg = {k: v for k, v in FLASH.items() if k != "compress_ratios"}
    cfg["layer_types"] = [names[r] for r in FLASH["compress_ratios"][:43]]
    assert read_config(cfg).kv_bytes_per_sequence(100000, 2) == \
        read_config(FLASH).kv_bytes_per_sequence(100000, 2)


def test_compressed_group_validation():
    with pytest.raises(ValueError, match="ratio"):
        LayerGroup(CacheKind.COMPRESSED, 1, "V4 entry", {"d_c": 512, "d_R": 64, "b": 1})
    with pytest.raises(ValueError, match="no ratio"):
        LayerGroup(CacheKind.FULL, 1, "MHA", {}, ratio=4)


def test_vllm_layout_lays_v4_out_with_vllms_pages():
    """The plan's layout now builds V4 (tests/test_vllm_v4.py: its groups, block bytes and
    blocks per request against vLLM's own); its pages are the oracle's above."""
    from kvlib.serving.engines.vllm.layout import vllm_layout
    from kvlib.serving.engines.vllm.v4 import v4_specs
    spec = read_config(FLASH)
    pages = {(s.spec, s.window, s.block_size, s.page_bytes) for s in v4_specs(spec)}
    assert pages == {tuple(p[:4]) for p in ORACLE_PAGES["flash"]}
    assert vllm_layout(spec, 131072, "fp8").bytes_per_block == 21 * 37440 + 20 * 1728 + 21 * 8640


def test_vllm_layout_refuses_compressed_without_a_window():
    from kvlib.serving.engines.vllm.layout import vllm_layout
    g = LayerGroup(CacheKind.COMPRESSED, 4, "V4 entry", {"d_c": 512, "d_R": 64, "b": 1}, ratio=4)
    # never laid out as full attention: refused, naming what is missing
    with pytest.raises(ValueError, match="compressed layers without"):
        vllm_layout(ModelSpec("toy", (g,)), 131072, "bf16")
