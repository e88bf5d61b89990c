"""Reading config.json: every trap of the issue, bad input, and invariants.

Expected bytes are written by hand from the published configs, as
layers x 2 (K and V) x KV heads x head dim x bytes, or layers x (d_L + d_R) x bytes.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.catalog import bundled_config
from kvlib.models.readers import parse_config, read_config
from kvlib.models.spec import CacheKind

BF16 = 2


def cfg(name: str) -> dict:
    return bundled_config(name)


def text(c: dict) -> dict:
    return c["text_config"]


def groups(spec) -> dict:
    return {(str(g.kind), g.window): g.layers for g in spec.groups}


def said(spec, *words) -> bool:
    return any(all(w in a for w in words) for a in spec.assumptions)


# --- head_dim and KV heads ----------------------------------------------------------------

def test_head_dim_wins_over_hidden_over_heads_qwen3():
    spec = read_config(cfg("qwen3-32b"))  # hidden 5120 / 64 heads = 80, head_dim 128
    assert spec.kv_bytes_per_token(BF16) == 64 * 2 * 8 * 128 * 2 == 262_144
    assert said(spec, "head_dim=128", "80")


def test_head_dim_wins_gemma2_and_gpt_oss():
    assert read_config(cfg("gemma-2-9b")).kv_bytes_per_token(BF16) == 42 * 2 * 8 * 256 * 2
    assert read_config(cfg("gpt-oss-20b")).kv_bytes_per_token(BF16) == 24 * 2 * 8 * 64 * 2


def test_missing_head_dim_is_derived_and_reported():
    spec = read_config(cfg("llama-3-70b"))
    assert spec.groups[0].sizes["d_QK"] == 8192 // 64 == 128
    assert said(spec, "no head_dim", "8192 / 64 = 128")


def test_missing_kv_heads_means_mha_and_is_reported():
    c = cfg("llama-3-70b")
    del c["num_key_value_heads"]
    spec = read_config(c)
    assert spec.kv_bytes_per_token(BF16) == 80 * 2 * 64 * 128 * 2 == 2_621_440
    assert said(spec, "MHA")


def test_head_dim_null_counts_as_missing():
    c = cfg("llama-3-70b")
    c["head_dim"] = None
    assert read_config(c).kv_bytes_per_token(BF16) == 327_680


# --- nesting and old names ----------------------------------------------------------------

def test_text_config_is_read_gemma3():
    spec = read_config(cfg("gemma-3-27b"))
    assert spec.num_layers == 62
    assert spec.kv_bytes_per_token(BF16) == 62 * 2 * 16 * 128 * 2 == 507_904  # 496 KiB
    assert said(spec, "text_config")


def test_text_config_is_read_llama4():
    spec = read_config(cfg("llama-4-scout"))
    assert spec.kv_bytes_per_token(BF16) == 48 * 2 * 8 * 128 * 2 == 196_608


def test_gpt2_names():
    spec = read_config(cfg("gpt2"))
    assert spec.kv_bytes_per_token(BF16) == 12 * 2 * 12 * 64 * 2 == 36_864
    assert spec.max_position_embeddings == 1024  # n_positions


def test_falcon_multi_query_is_one_kv_head_whatever_num_kv_heads_says():
    c = cfg("falcon-7b")
    c["num_kv_heads"] = 71
    spec = read_config(c)
    assert spec.kv_bytes_per_token(BF16) == 32 * 2 * 1 * 64 * 2 == 8192  # 4544 / 71 = 64
    assert said(spec, "multi_query", "71")


def test_falcon_new_decoder_architecture_uses_num_kv_heads():
    # Falcon-40B: 60 layers, hidden 8192, 128 heads, 8 KV heads, new_decoder_architecture.
    c = {"model_type": "falcon", "num_hidden_layers": 60, "hidden_size": 8192,
         "num_attention_heads": 128, "num_kv_heads": 8, "multi_query": True,
         "new_decoder_architecture": True}
    assert read_config(c).kv_bytes_per_token(BF16) == 60 * 2 * 8 * 64 * 2


def test_falcon_without_multi_query_uses_its_default_and_says_so():
    c = cfg("falcon-7b")
    del c["multi_query"]
    spec = read_config(c)
    assert spec.kv_bytes_per_token(BF16) == 8192
    assert said(spec, "no multi_query")


# --- MLA ----------------------------------------------------------------------------------

def test_mla_counts_latent_plus_rope_key_deepseek_v2():
    spec = read_config(cfg("deepseek-v2"))
    assert spec.kv_bytes_per_token(BF16) == 60 * (512 + 64) * 2 == 69_120  # 67.5 KiB
    assert {str(g.kind) for g in spec.groups} == {"latent"}


def test_mla_ignores_num_key_value_heads():
    c = cfg("deepseek-v2")
    for kv in (1, 128, 7):
        c["num_key_value_heads"] = kv
        assert read_config(c).kv_bytes_per_token(BF16) == 69_120


def test_mla_deepseek_v3_and_mtp_layer_reported():
    spec = read_config(cfg("deepseek-v3"))
    assert spec.kv_bytes_per_token(BF16) == 61 * (512 + 64) * 2 == 70_272
    assert said(spec, "num_nextn_predict_layers")


def test_mla_needs_the_rope_width():
    c = cfg("deepseek-v2")
    del c["qk_rope_head_dim"]
    with pytest.raises(ValueError, match="qk_rope_head_dim"):
        read_config(c)


# --- windows ------------------------------------------------------------------------------

def test_gemma3_five_local_one_global_from_the_architecture():
    r = parse_config(cfg("gemma-3-27b"))
    kinds = [k for k, _ in r.layer_map()]
    assert [i for i, k in enumerate(kinds) if k is CacheKind.FULL] == [
        5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    spec = read_config(cfg("gemma-3-27b"))
    assert groups(spec) == {("full", None): 10, ("sliding", 1024): 52}
    per_layer = 2 * 16 * 128 * 2
    assert spec.kv_bytes_per_sequence(131072, BF16) == (
        10 * per_layer * 131072 + 52 * per_layer * 1024) == 11_173_625_856  # ~10.4 GiB
    assert said(spec, "(i + 1) % 6 == 0", "architecture")


def test_gemma3_pattern_field_is_used_when_written():
    c = cfg("gemma-3-27b")
    text(c)["sliding_window_pattern"] = 2
    assert groups(read_config(c)) == {("full", None): 31, ("sliding", 1024): 31}


def test_gemma2_alternates():
    spec = read_config(cfg("gemma-2-9b"))
    assert groups(spec) == {("full", None): 21, ("sliding", 4096): 21}
    assert [k for k, _ in parse_config(cfg("gemma-2-9b")).layer_map()][:2] == [
        CacheKind.SLIDING, CacheKind.FULL]
    per_layer = 2 * 8 * 256 * 2
    assert spec.kv_bytes_per_sequence(8192, BF16) == 21 * per_layer * 8192 + 21 * per_layer * 4096


def test_llama4_chunked_with_a_global_layer_every_fourth():
    spec = read_config(cfg("llama-4-scout"))
    assert groups(spec) == {("full", None): 12, ("chunked", 8192): 36}
    per_layer = 2 * 8 * 128 * 2
    assert spec.kv_bytes_per_sequence(131072, BF16) == (
        12 * per_layer * 131072 + 36 * per_layer * 8192)
    assert spec.kv_bytes_per_sequence(4096, BF16) == 48 * per_layer * 4096  # below one chunk


def test_llama4_explicit_no_rope_layers():
    c = cfg("llama-4-scout")
    text(c)["no_rope_layers"] = [1, 0] * 24  # every second layer global
    assert groups(read_config(c)) == {("full", None): 24, ("chunked", 8192): 24}


def test_layer_types_decide_gpt_oss():
    spec = read_config(cfg("gpt-oss-20b"))
    assert groups(spec) == {("full", None): 12, ("sliding", 128): 12}
    per_layer = 2 * 8 * 64 * 2
    assert spec.kv_bytes_per_sequence(131072, BF16) == (
        12 * per_layer * 131072 + 12 * per_layer * 128)


def test_layer_types_win_over_family_pattern():
    c = cfg("gemma-3-27b")
    text(c)["layer_types"] = ["full_attention"] * 62
    assert groups(read_config(c)) == {("full", None): 62}


def test_qwen2_use_sliding_window_false_makes_window_inert():
    spec = read_config(cfg("qwen2.5-7b"))
    assert groups(spec) == {("full", None): 28}
    assert spec.kv_bytes_per_sequence(32768, BF16) == 28 * 2 * 4 * 128 * 2 * 32768
    assert said(spec, "sliding_window=131072", "inert")


def test_qwen2_sliding_only_from_max_window_layers():
    c = cfg("qwen2.5-7b")
    c.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    spec = read_config(c)
    assert groups(spec) == {("full", None): 20, ("sliding", 4096): 8}
    assert [k for k, _ in parse_config(c).layer_map()].index(CacheKind.SLIDING) == 20


def test_mistral_slides_on_every_layer():
    spec = read_config(cfg("mistral-7b-v0.1"))
    assert groups(spec) == {("sliding", 4096): 32}
    assert spec.kv_bytes_per_sequence(32768, BF16) == 32 * 2 * 8 * 128 * 2 * 4096  # 512 MiB
    assert spec.kv_bytes_per_sequence(1000, BF16) == 32 * 2 * 8 * 128 * 2 * 1000


def test_unknown_family_sliding_window_is_ignored_and_reported():
    c = cfg("llama-3-70b")
    c["sliding_window"] = 4096
    spec = read_config(c)
    assert groups(spec) == {("full", None): 80}
    assert said(spec, "sliding_window=4096 ignored")


def test_gemma3_missing_max_positions_uses_architecture_default():
    spec = read_config(cfg("gemma-3-27b"))
    assert spec.max_position_embeddings == 131072
    assert said(spec, "max_position_embeddings")


# --- bad input: one ValueError naming the field and the value ------------------------------

@pytest.mark.parametrize("field, value, words", [
    ("num_hidden_layers", "80", ["num_hidden_layers", "'80'", "str"]),
    ("num_hidden_layers", 80.0, ["num_hidden_layers", "80.0", "float"]),
    ("num_hidden_layers", True, ["num_hidden_layers", "True", "bool"]),
    ("num_hidden_layers", 0, ["num_hidden_layers", "0"]),
    ("num_attention_heads", -64, ["num_attention_heads", "-64"]),
    ("num_key_value_heads", 5, ["num_key_value_heads=5", "num_attention_heads=64"]),
    ("num_key_value_heads", "8", ["num_key_value_heads", "'8'"]),
    ("hidden_size", 8001, ["hidden_size=8001", "num_attention_heads=64"]),
    ("head_dim", 0, ["head_dim", "0"]),
    ("sliding_window", -1, ["sliding_window", "-1"]),
    ("max_position_embeddings", 1.5, ["max_position_embeddings", "1.5"]),
])
def test_bad_field_names_field_and_value(field, value, words):
    c = cfg("llama-3-70b")
    c[field] = value
    with pytest.raises(ValueError) as e:
        read_config(c)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("field, value", [
    ("kv_lora_rank", -512), ("kv_lora_rank", "512"), ("qk_rope_head_dim", 0),
])
def test_bad_mla_sizes(field, value):
    c = cfg("deepseek-v2")
    c[field] = value
    with pytest.raises(ValueError, match=field):
        read_config(c)


def test_missing_field_is_named():
    c = cfg("llama-3-70b")
    del c["num_hidden_layers"]
    with pytest.raises(ValueError, match="num_hidden_layers or n_layer"):
        read_config(c)


def test_nested_errors_name_the_path():
    c = cfg("gemma-3-27b")
    text(c)["num_key_value_heads"] = 3
    with pytest.raises(ValueError, match=r"text_config\.num_key_value_heads=3"):
        read_config(c)
    c = cfg("gemma-3-27b")
    text(c)["sliding_window"] = -1024
    with pytest.raises(ValueError, match=r"text_config\.sliding_window.*-1024"):
        read_config(c)


@pytest.mark.parametrize("patch, words", [
    ({"text_config": [1, 2]}, ["text_config", "object"]),
    ({"layer_types": ["full_attention"] * 3}, ["layer_types", "3 entries", "80"]),
    ({"layer_types": ["full_attention"] * 79 + ["linear_attention"]}, ["linear_attention"]),
    ({"layer_types": ["sliding_attention"] * 80}, ["sliding_window"]),
    ({"multi_query": "yes"}, ["multi_query", "'yes'"]),
    ({"use_sliding_window": True}, ["sliding_window", "missing"]),
])
def test_bad_structure(patch, words):
    c = cfg("llama-3-70b")
    c.update(patch)
    with pytest.raises(ValueError) as e:
        read_config(c)
    for w in words:
        assert w in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        read_config(tmp_path / "nope.json")


def test_invalid_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{\"num_hidden_layers\": 80,")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_config(p)


def test_not_an_object(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[1, 2, 3]")
    with pytest.raises(ValueError, match="JSON object, got a list"):
        read_config(p)


def test_reads_a_path_and_a_model_directory(tmp_path):
    d = tmp_path / "Meta-Llama-3-70B"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg("llama-3-70b")))
    for source in (d / "config.json", str(d / "config.json"), d):
        spec = read_config(source)
        assert spec.kv_bytes_per_token(BF16) == 327_680
        assert spec.name == "Meta-Llama-3-70B"


def test_huge_values_stay_exact():
    c = cfg("llama-3-70b")
    c["num_hidden_layers"] = 10**30
    c["max_position_embeddings"] = 2**80
    spec = read_config(c)
    assert spec.kv_bytes_per_token(BF16) == 10**30 * 2 * 8 * 128 * 2
    assert spec.kv_bytes_per_sequence(2**80, BF16) == 10**30 * 2 * 8 * 128 * 2 * 2**80
    g = cfg("gemma-3-27b")
    text(g)["num_hidden_layers"] = 6 * 10**25
    assert groups(read_config(g)) == {("full", None): 10**25, ("sliding", 1024): 5 * 10**25}


# --- invariants ---------------------------------------------------------------------------

sizes = st.integers(1, 4096)


@settings(max_examples=60, deadline=None)
@given(n_l=st.integers(1, 200), n_g=st.integers(1, 16), group=st.integers(1, 8),
       d=st.integers(1, 512), window=sizes, t=st.integers(1, 1 << 20), pattern=st.integers(1, 9))
def test_window_bytes_never_exceed_full_and_sum_over_layers(n_l, n_g, group, d, window, t,
                                                            pattern):
    c = {"model_type": "gemma3_text", "num_hidden_layers": n_l, "num_attention_heads": n_g * group,
         "num_key_value_heads": n_g, "head_dim": d, "sliding_window": window,
         "sliding_window_pattern": pattern}
    spec = read_config(c)
    per_layer = 2 * n_g * d * 2
    assert spec.kv_bytes_per_token(BF16) == n_l * per_layer
    n_global = n_l // pattern
    assert groups(spec).get(("full", None), 0) == n_global
    assert spec.kv_bytes_per_sequence(t, BF16) == (
        n_global * per_layer * t + (n_l - n_global) * per_layer * min(t, window))
    assert spec.kv_bytes_per_sequence(t, BF16) <= spec.kv_bytes_per_token(BF16) * t
    layer_map = parse_config(c).layer_map()
    assert sum(k is CacheKind.FULL for k, _ in layer_map) == n_global


@settings(max_examples=40, deadline=None)
@given(n_l=st.integers(1, 200), d_l=sizes, d_r=sizes, kv=st.integers(1, 256))
def test_mla_bytes_are_layers_times_latent_plus_rope(n_l, d_l, d_r, kv):
    c = {"num_hidden_layers": n_l, "num_attention_heads": 16, "kv_lora_rank": d_l,
         "qk_rope_head_dim": d_r, "num_key_value_heads": kv}
    assert read_config(c).kv_bytes_per_token(BF16) == n_l * (d_l + d_r) * 2
