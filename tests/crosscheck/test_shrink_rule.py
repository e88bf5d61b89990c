"""The shrinking rule (shrink.py) keeps the cache structure of every bundled model.

Two readers must agree that the tiny config is the real one cut short: kvlib (same
reader, attention kind, label, head ratio, layer kinds in order) and transformers
itself (``get_layer_types_and_kwargs``, what ``DynamicCache`` builds its layers from).
"""

from __future__ import annotations

import pytest
from shrink import (
    CHUNK,
    HEAD_DIM,
    WINDOW,
    loadable,
    pattern_period,
    shrink,
    smallest_period,
    tiny_layers,
)
from transformers import AutoConfig
from transformers.cache_utils import get_layer_types_and_kwargs

from kvlib import parse_config
from kvlib.models.catalog import BUNDLED, bundled_config, reading
from kvlib.models.spec import CacheKind

NAMES = list(BUNDLED)


def test_all_fourteen_bundled_models_are_crosschecked():
    assert len(NAMES) == 14


def test_smallest_period_by_hand():
    assert smallest_period(["s", "f", "s", "f"]) == 2
    assert smallest_period((["s"] * 5 + ["f"]) * 10 + ["s", "s"]) == 6  # Gemma 3's 62 layers
    assert smallest_period([1, 1, 1, 0] * 12) == 4  # Llama 4's no_rope_layers
    assert smallest_period(["f"] * 32) == 1


def test_tiny_layer_count_by_hand():
    assert tiny_layers(62, 6) == 6  # 2P = 12 > 8: one period
    assert tiny_layers(48, 4) == 8  # two periods
    assert tiny_layers(24, 2) == 4
    assert tiny_layers(80, 1) == 2
    assert tiny_layers(1, 1) == 1  # never more than the real count


def test_pattern_period_of_each_family():
    periods = {name: pattern_period(loadable(bundled_config(name))) for name in NAMES}
    assert periods == {
        "llama-3-70b": 1, "llama-3.1-70b": 1, "llama-3.1-8b": 1, "gemma-3-27b": 6,
        "deepseek-v2": 1, "deepseek-v3": 1, "gemma-2-9b": 2, "qwen3-32b": 1, "qwen2.5-7b": 1,
        "mistral-7b-v0.1": 1, "falcon-7b": 1, "gpt2": 1, "llama-4-scout": 4, "gpt-oss-20b": 2,
    }


def test_tiny_gemma3_by_hand():
    t = shrink(bundled_config("gemma-3-27b"))
    # 62 layers, period 6 -> 6; 32 : 16 heads -> 4 : 2; head_dim 128 stated, and
    # 5376 / 32 = 168 > 128, so hidden_size / heads = 16 + 8 = 24 -> 4 * 24 = 96.
    assert (t["model_type"], t["num_hidden_layers"], t["num_attention_heads"],
            t["num_key_value_heads"], t["head_dim"], t["hidden_size"], t["sliding_window"]) \
        == ("gemma3_text", 6, 4, 2, 16, 96, 8)
    assert "layer_types" not in t and "sliding_window_pattern" not in t  # as in the real file


def test_tiny_falcon_gpt2_llama4_deepseek_by_hand():
    f = shrink(bundled_config("falcon-7b"))
    assert (f["num_attention_heads"], f["multi_query"], f["new_decoder_architecture"],
            f["hidden_size"]) == (4, True, False, 64)
    assert "head_dim" not in f and "num_kv_heads" not in f
    g = shrink(bundled_config("gpt2"))
    assert (g["n_layer"], g["n_head"], g["n_embd"]) == (2, 4, 64)
    ll = shrink(bundled_config("llama-4-scout"))
    assert (ll["num_hidden_layers"], ll["num_attention_heads"], ll["num_key_value_heads"],
            ll["attention_chunk_size"], ll["no_rope_layers"], ll["hidden_size"]) \
        == (8, 10, 2, 12, [], 160)  # 40 : 8 = 5 : 1; 5120 = 40 x 128, so 10 x 16
    d = shrink(bundled_config("deepseek-v3"))
    assert (d["num_hidden_layers"], d["kv_lora_rank"], d["qk_rope_head_dim"],
            d["qk_nope_head_dim"], d["v_head_dim"], d["q_lora_rank"], d["first_k_dense_replace"],
            d["n_routed_experts"], d["num_experts_per_tok"]) == (2, 64, 8, 16, 16, 48, 1, 4, 2)
    assert "quantization_config" not in d and "quantization_config" not in shrink(
        bundled_config("gpt-oss-20b"))


@pytest.mark.parametrize("name", NAMES)
def test_kvlib_reads_the_tiny_config_as_the_real_one_cut_short(name):
    real = reading(name)
    tiny = parse_config(shrink(bundled_config(name)))
    n = tiny.num_layers
    assert 2 <= n <= 8
    assert (tiny.reader, tiny.family, tiny.attention, tiny.label) \
        == (real.reader, real.family, real.attention, real.label)
    kinds = [kind for kind, _ in tiny.layer_map()]
    assert kinds == [kind for kind, _ in real.layer_map()[:n]]
    assert set(kinds) == {kind for kind, _ in real.layer_map()}  # every kind shows
    for kind, window in tiny.layer_map():
        assert window == {CacheKind.SLIDING: WINDOW, CacheKind.CHUNKED: CHUNK}.get(kind)
    if real.attention == "MLA+RoPE":
        assert real.sizes["d_L"] * tiny.sizes["d_R"] == tiny.sizes["d_L"] * real.sizes["d_R"]
    else:  # MHA and MQA are kept by the label (N_g = N_h, N_g = 1); GQA keeps N_h : N_g
        if real.label == "GQA":
            assert real.sizes["N_h"] * tiny.sizes["N_g"] == tiny.sizes["N_h"] * real.sizes["N_g"]
        assert tiny.sizes["d_QK"] == tiny.sizes["d_V"] == HEAD_DIM
    # The same spoken assumptions about head_dim (stated and differing / derived).
    for words in ("wins over hidden_size", "derived as hidden_size", "multi_query is true",
                  "is inert", "no num_key_value_heads"):
        assert any(words in a for a in tiny.assumptions) \
            == any(words in a for a in real.assumptions), words


@pytest.mark.parametrize("name", NAMES)
def test_transformers_reads_the_tiny_layers_as_the_real_first_ones(name):
    real_fields, tiny_fields = loadable(bundled_config(name)), shrink(bundled_config(name))
    real_types, _ = get_layer_types_and_kwargs(
        AutoConfig.for_model(real_fields.pop("model_type"), **real_fields))
    tiny_types, tiny_kwargs = get_layer_types_and_kwargs(
        AutoConfig.for_model(tiny_fields.pop("model_type"), **tiny_fields))
    n, period = len(tiny_types), pattern_period(loadable(bundled_config(name)))
    assert tiny_types == real_types[:n]
    assert all(t == real_types[i % period] for i, t in enumerate(real_types))  # truly periodic
    assert n % period == 0
    for t, kw in zip(tiny_types, tiny_kwargs, strict=True):
        assert kw.get("sliding_window") == {"sliding_attention": WINDOW,
                                            "chunked_attention": CHUNK}.get(t)
