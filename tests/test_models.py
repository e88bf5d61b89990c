"""Bundled models, the paper's Table 3 (simplified) and its correction, and estimate().

Independent values: blog post A's table (496 / 320 / 60 KiB, 62 / 40 / 7.5 GiB at
131,072 tokens, 1.55x, 8.3x, 8x, 2x) and hand arithmetic from the published configs.
"""

import json
from fractions import Fraction
from importlib import resources

import pytest

from kvlib import ratio
from kvlib.core.formulas import GQA, MHA
from kvlib.models.catalog import (
    BUNDLED,
    attention_label,
    bundled_config,
    load_model,
    reading,
    simplified,
)
from kvlib.models.estimate import estimate

KiB, GiB = 1024, 1024**3
T128K = 131072
BF16 = 2


def test_every_bundled_config_ships_and_loads():
    files = {p.name for p in (resources.files("kvlib.models") / "configs").iterdir()}
    assert files == {f"{name}.json" for name in BUNDLED}
    for name, m in BUNDLED.items():
        spec = load_model(name)
        assert spec.name == name and spec.source == m.repo and "/" in m.repo
        assert spec.params == m.params > 0
        assert spec.kv_bytes_per_token(BF16) > 0
        json.dumps(bundled_config(name))  # plain JSON data


def test_table_3_configs_match_the_issue():
    llama = bundled_config("llama-3-70b")
    assert (llama["num_hidden_layers"], llama["hidden_size"], llama["num_attention_heads"],
            llama["num_key_value_heads"]) == (80, 8192, 64, 8)
    g = bundled_config("gemma-3-27b")["text_config"]
    assert (g["num_hidden_layers"], g["hidden_size"], g["num_attention_heads"],
            g["num_key_value_heads"], g["head_dim"], g["sliding_window"]) == (
        62, 5376, 32, 16, 128, 1024)
    d = bundled_config("deepseek-v2")
    assert (d["num_hidden_layers"], d["hidden_size"], d["num_attention_heads"], d["kv_lora_rank"],
            d["q_lora_rank"], d["qk_nope_head_dim"], d["qk_rope_head_dim"], d["v_head_dim"]) == (
        60, 5120, 128, 512, 1536, 128, 64, 128)


def test_llama_3_1_8b_draft_model_shape():
    g = load_model("llama-3.1-8b").groups
    assert len(g) == 1 and g[0].layers == 32
    assert (g[0].sizes["N_g"], g[0].sizes["d_QK"]) == (8, 128)
    assert load_model("llama-3.1-8b").kv_bytes_per_token(BF16) == 32 * 2 * 8 * 128 * 2


def test_params_are_the_published_totals():
    assert load_model("llama-3.1-70b").params == 70_600_000_000
    assert load_model("llama-3-70b").params == 70_600_000_000
    assert load_model("deepseek-v2").params == 236_000_000_000
    assert BUNDLED["deepseek-v2"].active_params == 21_000_000_000


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError) as e:
        load_model("llama-5")
    msg = str(e.value)
    assert "'llama-5'" in msg
    for name in ("llama-3-70b", "gemma-3-27b", "deepseek-v2", "llama-3.1-8b"):
        assert name in msg


def test_a_missing_path_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_model(str(tmp_path / "config.json"))


def test_a_path_and_a_dict_load_too(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(bundled_config("gpt2")))
    assert load_model(str(p)).kv_bytes_per_token(BF16) == 12 * 2 * 12 * 64 * 2
    assert load_model(bundled_config("gpt2")).kv_bytes_per_token(BF16) == 36_864


# --- the paper's Table 3, as blog post A gives it ---------------------------------------------

def test_simplified_table_reproduces_blog_post_a():
    per_token = {n: simplified(load_model(n)).kv_bytes_per_token(BF16)
                 for n in ("gemma-3-27b", "llama-3-70b", "deepseek-v2")}
    assert per_token == {"gemma-3-27b": 496 * KiB, "llama-3-70b": 320 * KiB,
                         "deepseek-v2": 60 * KiB}
    at_128k = {n: simplified(load_model(n)).kv_bytes_per_sequence(T128K, BF16)
               for n in per_token}
    assert at_128k == {"gemma-3-27b": 62 * GiB, "llama-3-70b": 40 * GiB,
                       "deepseek-v2": Fraction(15, 2) * GiB}
    assert round(per_token["gemma-3-27b"] / per_token["llama-3-70b"], 2) == 1.55
    assert round(per_token["gemma-3-27b"] / per_token["deepseek-v2"], 1) == 8.3


def test_gqa_savings_8x_and_2x():
    f = ratio(MHA, GQA)
    llama = load_model("llama-3-70b").groups[0].sizes
    gemma = load_model("gemma-3-27b").groups[0].sizes
    assert f(N_h=llama["N_h"], N_g=llama["N_g"]) == 8
    assert f(N_h=gemma["N_h"], N_g=gemma["N_g"]) == 2


def test_simplified_uses_mla_without_rope_and_drops_windows():
    s = simplified(load_model("deepseek-v2"))
    assert [g.attention for g in s.groups] == ["MLA"] and s.groups[0].sizes == {"d_L": 512}
    g = simplified(load_model("gemma-3-27b"))
    assert [(str(x.kind), x.layers, x.window) for x in g.groups] == [("full", 62, None)]


# --- the corrected table -------------------------------------------------------------------

def test_corrected_deepseek_v2_is_67_5_kib():
    assert load_model("deepseek-v2").kv_bytes_per_token(BF16) == Fraction(135, 2) * KiB


def test_corrected_gemma3_at_128k_is_about_10_4_gib():
    b = load_model("gemma-3-27b").kv_bytes_per_sequence(T128K, BF16)
    assert b == 10 * 2 * 16 * 128 * 2 * T128K + 52 * 2 * 16 * 128 * 2 * 1024
    assert b == 10 * GiB + 416 * 1024**2
    assert round(b / GiB, 1) == 10.4


def test_corrected_llama_is_unchanged():
    assert load_model("llama-3-70b").kv_bytes_per_sequence(T128K, BF16) == 40 * GiB


def test_layer_map_of_gemma3():
    kinds = [str(k) for k, _ in reading("gemma-3-27b").layer_map()]
    assert len(kinds) == 62 and kinds.count("full") == 10
    assert all(kinds[i] == "full" for i in range(5, 62, 6))


# --- estimate -------------------------------------------------------------------------------

def test_estimate_defaults_to_the_configs_context():
    e = estimate("llama-3.1-70b")
    assert (e.context, e.batch, e.kv_dtype) == (131072, 1, "bf16")
    assert e.kv_bytes_per_sequence == 80 * 2 * 8 * 128 * 2 * 131072 == 40 * GiB


def test_estimate_batch_and_dtype():
    e = estimate("llama-3.1-70b", context=8192, batch=4, kv_dtype="fp8")
    assert e.kv_bytes_per_token == 80 * 2 * 8 * 128 * 1
    assert e.kv_bytes_total == 4 * 80 * 2 * 8 * 128 * 1 * 8192
    groups = estimate("gemma-3-27b", context=T128K).groups
    assert [(g.group.layers, g.cached_tokens) for g in groups] == [(10, T128K), (52, 1024)]
    whole = estimate("gemma-3-27b").kv_bytes_per_sequence
    assert sum(g.bytes_per_sequence for g in groups) == whole
    # by hand: 10 full layers keep 131,072 tokens, 52 sliding layers keep 1,024
    assert whole == 10 * 2 * 16 * 128 * 2 * T128K + 52 * 2 * 16 * 128 * 2 * 1024
    assert [g.bytes_per_sequence for g in groups] == [10 * 2 * 16 * 128 * 2 * T128K,
                                                      52 * 2 * 16 * 128 * 2 * 1024]


def test_estimate_rejects_bad_values():
    with pytest.raises(ValueError, match="kv dtype"):
        estimate("gpt2", kv_dtype="fp7")
    with pytest.raises(ValueError, match="context"):
        estimate("gpt2", context=0)
    with pytest.raises(ValueError, match="batch"):
        estimate("gpt2", batch=-1)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        estimate({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 4})


def test_attention_labels():
    assert [attention_label(load_model(n)) for n in ("gpt2", "falcon-7b", "llama-3-70b",
                                                     "deepseek-v2")] == ["MHA", "MQA", "GQA", "MLA"]


def test_batch_bytes_come_from_the_batch_formula():
    # Gemma 3 27B, 4 sequences of 131,072 tokens, bf16: 10 global layers keep every token,
    # 52 sliding layers keep 1,024; 16 KV heads x (128 + 128) x 2 bytes per layer-token.
    spec = load_model("gemma-3-27b")
    per_layer_token = 16 * (128 + 128) * 2
    expected = 4 * (10 * per_layer_token * 131072 + 52 * per_layer_token * 1024)
    assert spec.kv_bytes_per_batch(131072, 4, 2) == expected
    assert [g.bytes_per_batch(131072, 4, 2) for g in spec.groups if g.window] == [
        4 * 52 * per_layer_token * 1024]
