"""The shrinking rule (shrink.py) keeps the cache structure of every cross-checked model.

Two readers must agree that the tiny config is the real one cut short: kvlib (same
reader, attention kind, label, head ratio, layer kinds in order, the structure of every
state layer) and transformers itself (``get_layer_types_and_kwargs``, what ``DynamicCache``
builds its layers from). Shared layers (KV sharing) come last in both.
"""

from __future__ import annotations

import pytest
from allocation import TEXT_MODEL_TYPES, transformers_fields, transformers_window
from cases import (
    BUNDLED_NAMES,
    NAMES,
    NEW_IN_TRANSFORMERS,
    PUBLISHED,
    WRITTEN,
    real,
    text_model_type,
    tiny,
    unsupported,
)
from shrink import (
    CHUNK,
    HEAD_DIM,
    MAX_LAYERS,
    WINDOW,
    pattern,
    pattern_offset,
    pattern_period,
    shared_layers,
    shrink,
    smallest_period,
    tiny_layer_count,
    tiny_layers,
)
from transformers import AutoConfig
from transformers.cache_utils import get_layer_types_and_kwargs

from kvlib import parse_config
from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.spec import STATEFUL, CacheKind


def _runnable(name: str) -> None:
    reason = unsupported(name)
    if reason:
        pytest.skip(reason)


def test_every_bundled_model_is_crosschecked_or_named_as_skipped():
    assert BUNDLED_NAMES == list(BUNDLED) and len(BUNDLED_NAMES) == 34
    assert set(NAMES) - set(BUNDLED) == {"jamba", "lfm2", "gemma3n", "falcon_h1", "olmo3",
                                         "cohere2", "ergo", "kolibri1_1", "mistral_large4",
                                         "minimax_m3_vl", "inkling", "inkling2",
                                         "inkling2_loop", "gemma-4-26b-a4b+kv-sharing"} \
        | set(WRITTEN) | set(PUBLISHED)
    # issue 23's families, each from a published config
    new = [*PUBLISHED, "qwen3.5-27b", "nemotron-3-ultra-550b-a55b", "minimax-m2.5"]
    assert {real(name)["model_type"] for name in new} == {
        "qwen3_5_text", "qwen3_5_moe_text", "glm_moe_dsa", "nemotron_h", "kimi_linear",
        "minimax_m2"}


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
    periods = {name: pattern_period(real(name)) for name in NAMES if not unsupported(name)}
    assert periods == {
        "llama-3-70b": 1, "llama-3.1-70b": 1, "llama-3.1-8b": 1, "gemma-3-27b": 6,
        "deepseek-v2": 1, "deepseek-v3": 1, "gemma-2-9b": 2, "qwen3-32b": 1, "qwen2.5-7b": 1,
        "mistral-7b-v0.1": 1, "falcon-7b": 1, "gpt2": 1, "llama-4-scout": 4, "gpt-oss-20b": 2,
        "qwen3-next-80b-a3b": 4, "nemotron-h-56b": 112, "nemotron-3-nano-30b-a3b": 48,
        "deepseek-v3.2": 1, "gemma-4-26b-a4b": 6, "jamba": 8, "lfm2": 15, "gemma3n": 5,
        "falcon_h1": 1, "olmo3": 4, "cohere2": 4,
        "gemma-4-26b-a4b+kv-sharing": 6, "qwen3.5-27b": 4, "qwen3.5-35b-a3b": 4,
        "glm-5.1": 1, "nemotron-3-ultra-550b-a55b": 102, "nemotron-3.5-lightning-30b-a3b": 48,
        "kimi-k3": 93, "minimax-m2.5": 1, "glm-5": 1, "gpt-oss-120b": 2,
        "qwen3.6-35b-a3b": 4,
        # issue 31: after one full layer, 5 sliding : 1 full; after 2 full indexers, 3 shared :
        # 1 full (both periodic only past a prefix, shrink.periodic_tail)
        "mimo-v2-flash": 6, "glm-5.2": 4, "minimax-m2.7": 1, "kimi-k2.5": 1,
        # issue 33's bundles (Llama 2 all full, Gemma 3n E4B full every 5th); transformers
        # 5.25.0's Ergo: 3 sliding : 1 full
        "llama-2-7b": 1, "gemma-3n-e4b": 5, "ergo": 4,
        # transformers 5.25.0's other new families: Kolibri 1.1's layer_types (period 5) with
        # kv_source_layers (no period: 6 of its 10 indexed layers reuse another's K/V),
        # Mistral Large 4's NoPE every 4th layer, MiniMax M3's 3 full then sparse layers,
        # dots3 Note's 2 DSA, then (S S S DSA)
        "kolibri1_1": 50, "mistral_large4": 4, "minimax_m3_vl": 1, "dots3_note": 4,
        # DeepSeek V4's compress_ratios (its MTP entry dropped): Flash 0 0 then (4 128), Pro
        # 128 then (128 4)
        "deepseek-v4-flash": 2, "deepseek-v4-pro": 2,
        # Inkling's, Inkling 2's and Inkling 2 Loop's layer_types: 5 sliding : 1 full
        "inkling": 6, "inkling2": 6, "inkling2_loop": 6,
    }
    assert {name: pattern_offset(real(name)) for name in periods
            if pattern_offset(real(name))} == {"mimo-v2-flash": 1, "glm-5.2": 2,
                                               "minimax_m3_vl": 3, "dots3_note": 1,
                                               "deepseek-v4-flash": 2, "deepseek-v4-pro": 1}
    counts = {name: tiny_layer_count(real(name), real(name).get("num_hidden_layers"))
              for name in periods if "num_hidden_layers" in real(name)}
    assert {k: counts[k] for k in ("nemotron-h-56b", "nemotron-3-nano-30b-a3b", "lfm2",
                                   "gemma3n", "gemma-4-26b-a4b+kv-sharing",
                                   "nemotron-3.5-lightning-30b-a3b", "kimi-k3",
                                   "mimo-v2-flash", "glm-5.2", "kolibri1_1", "mistral_large4",
                                   "minimax_m3_vl", "dots3_note", "deepseek-v4-flash",
                                   "deepseek-v4-pro")} \
        == {"nemotron-h-56b": 8, "nemotron-3-nano-30b-a3b": 6, "lfm2": 3, "gemma3n": 5,
            "gemma-4-26b-a4b+kv-sharing": 6,  # these two: unshared layers
            "nemotron-3.5-lightning-30b-a3b": 6, "kimi-k3": 4,
            "mimo-v2-flash": 7, "glm-5.2": 6,  # k + P: 1 + 6, 2 + 4 (k + 2P > 8)
            "kolibri1_1": 10,  # the first reusing layer is layer 9
            "mistral_large4": 8, "minimax_m3_vl": 5, "dots3_note": 5,  # 2P; k + 2P; k + P
            "deepseek-v4-flash": 6, "deepseek-v4-pro": 5}  # k + 2P: 2 + 4, 1 + 4
    # Ultra writes no num_hidden_layers: its layers_block_type (108) counts them
    ultra = real("nemotron-3-ultra-550b-a55b")
    assert "num_hidden_layers" not in ultra \
        and tiny_layer_count(ultra, len(ultra["layers_block_type"])) == 8


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


def test_tiny_hybrids_by_hand():
    q = tiny("qwen3-next-80b-a3b")  # 48 layers, every 4th full -> 8; heads 16 : 2
    assert (q["num_hidden_layers"], q["full_attention_interval"], q["num_attention_heads"],
            q["num_key_value_heads"], q["head_dim"], q["hidden_size"],
            q["linear_num_key_heads"], q["linear_num_value_heads"], q["linear_key_head_dim"],
            q["linear_value_head_dim"], q["linear_conv_kernel_dim"]) \
        == (8, 4, 16, 2, 16, 128, 2, 4, 16, 8, 4)  # 2048 / 16 = 128 < 256: 16 x (16 - 8)
    h = tiny("nemotron-h-56b")  # no period of 8 or less: the first 8 hold M, - and *
    assert (h["hybrid_override_pattern"], h["num_hidden_layers"], h["head_dim"],
            h["mamba_num_heads"], h["n_groups"], h["mamba_head_dim"], h["ssm_state_size"],
            h["conv_kernel"], h["hidden_size"]) == ("M-M-M-M*", 8, 16, 64, 2, 8, 16, 4, 256)
    nano = tiny("nemotron-3-nano-30b-a3b")
    assert (nano["hybrid_override_pattern"], nano["mamba_num_heads"], nano["n_groups"],
            nano["mamba_ssm_cache_dtype"], nano["n_group"]) == ("MEMEM*", 16, 2, "float32", 1)
    g = tiny("gemma-4-26b-a4b")  # 16 : 8 : 2 heads / 2 = 8 : 4 : 1; 512 / 256 x 16 = 32
    assert (g["num_hidden_layers"], g["num_attention_heads"], g["num_key_value_heads"],
            g["num_global_key_value_heads"], g["head_dim"], g["global_head_dim"],
            g["sliding_window"], g["num_kv_shared_layers"], g["attention_k_eq_v"]) \
        == (6, 8, 4, 1, 16, 32, 8, 0, True)
    d = tiny("deepseek-v3.2")
    assert (d["index_head_dim"], d["index_n_heads"], d["index_topk"], d["kv_lora_rank"]) \
        == (128, 4, 4, 64)
    s = tiny("gemma-4-26b-a4b+kv-sharing")  # 20 unshared -> 6, then 6 of the 10 shared
    assert (s["num_hidden_layers"], s["num_kv_shared_layers"]) == (12, 6)
    n3 = tiny("gemma3n")  # 35 layers, 15 shared -> 5 + 5
    assert (n3["num_hidden_layers"], n3["num_kv_shared_layers"], n3["sliding_window"]) \
        == (10, 5, 8)
    j = tiny("jamba")  # attention every 8th at offset 4: one period
    assert (j["num_hidden_layers"], j["attn_layer_period"], j["attn_layer_offset"],
            j["mamba_expand"], j["mamba_d_conv"], j["mamba_d_state"], j["hidden_size"]) \
        == (8, 8, 4, 2, 4, 16, 128)
    lf = tiny("lfm2")
    assert (lf["layer_types"], lf["conv_L_cache"], lf["conv_dim"], lf["hidden_size"]) \
        == (["conv", "conv", "full_attention"], 3, 128, 128)


def test_tiny_issue_23_families_by_hand():
    q = tiny("qwen3.5-27b")  # 64 layers, every 4th full -> 8; 24 : 4 heads -> 12 : 2
    assert (q["model_type"], q["num_hidden_layers"], q["layer_types"][:4],
            q["full_attention_interval"], q["num_attention_heads"], q["num_key_value_heads"],
            q["head_dim"], q["hidden_size"], q["linear_num_key_heads"],
            q["linear_num_value_heads"], q["mamba_ssm_dtype"], q["dtype"]) \
        == ("qwen3_5_text", 8, ["linear_attention"] * 3 + ["full_attention"], 4, 12, 2, 16,
            98, 2, 6, "float32", "bfloat16")  # 5120 / 24 is no whole number: 12 x 8 + 2
    m = tiny("qwen3.5-35b-a3b")  # 2048 / 16 = 128 < 256: 16 x 8, a whole number as in the file
    assert (m["model_type"], m["hidden_size"], m["num_experts"], m["num_experts_per_tok"],
            m["linear_num_value_heads"]) == ("qwen3_5_moe_text", 128, 4, 2, 4)
    g = tiny("glm-5.1")  # MLA 512 + 64 -> 64 + 8; head_dim = RoPE width, qk_head_dim = 16 + 8
    assert (g["num_hidden_layers"], g["kv_lora_rank"], g["qk_rope_head_dim"], g["head_dim"],
            g["qk_head_dim"], g["index_head_dim"], g["index_n_heads"], g["index_topk"],
            g["first_k_dense_replace"]) == (2, 64, 8, 8, 24, 128, 4, 4, 1)
    u = tiny("nemotron-3-ultra-550b-a55b")
    assert "num_hidden_layers" not in u and "hybrid_override_pattern" not in u
    assert (u["layers_block_type"], u["mamba_num_heads"], u["n_groups"], u["moe_latent_size"],
            u["head_dim"], u["num_attention_heads"]) \
        == (["mamba", "moe"] * 3 + ["mamba", "attention"], 64, 2, 16, 16, 64)
    li = tiny("nemotron-3.5-lightning-30b-a3b")
    assert (li["num_hidden_layers"], li["layers_block_type"]) \
        == (6, ["mamba", "moe"] * 2 + ["mamba", "attention"])
    k = tiny("kimi-k3")  # full_attn_layers 4, 8, ..., 92, 93 (1-based): no period of 8 or less
    la = k["linear_attn_config"]
    assert (k["model_type"], k["num_hidden_layers"], la["kda_layers"], la["full_attn_layers"],
            la["num_heads"], la["head_dim"], la["short_conv_kernel_size"], k["kv_lora_rank"],
            k["qk_rope_head_dim"], k["mla_use_nope"], k["hidden_act"], k["num_experts"],
            k["num_experts_per_token"]) \
        == ("kimi_linear", 4, [1, 2, 3], [4], 2, 16, 4, 64, 8, True, "silu", 4, 2)
    x = tiny("minimax-m2.5")  # 3072 / 48 = 64 < 128: 12 x 8; rotary_dim 64 / 128 -> 8 / 16
    assert (x["num_hidden_layers"], x["num_attention_heads"], x["num_key_value_heads"],
            x["head_dim"], x["hidden_size"], x["rotary_dim"]) == (2, 12, 2, 16, 96, 8)


def test_tiny_issue_31_families_by_hand():
    m = tiny("mimo-v2-flash")  # 0 1 1 1 1 0 then (1 1 1 1 1 0): 1 + 6 layers
    # heads 64 : 4 (full), 64 : 8 (sliding) / 2 -> 32 : 2, 32 : 4; K 192, V 128 -> 24, 16
    # (3 : 2); 4096 / 64 = 64 < 192: 32 x (24 - 8) = 512; windows 128 -> 8
    assert (m["num_hidden_layers"], m["hybrid_layer_pattern"], m["moe_layer_freq"],
            m["num_attention_heads"], m["num_key_value_heads"], m["swa_num_attention_heads"],
            m["swa_num_key_value_heads"], m["head_dim"], m["v_head_dim"], m["swa_head_dim"],
            m["swa_v_head_dim"], m["hidden_size"], m["sliding_window_size"]) \
        == (7, [0, 1, 1, 1, 1, 0, 1], [0] + [1] * 6, 32, 2, 32, 4, 24, 16, 24, 16, 512, 8)
    # transformers 5.24.0 reads none of hybrid_layer_pattern and swa_*: its own layer_types
    # rule (full at 0 and every 6th), 2 x num_key_value_heads and head_dim / v_head_dim on
    # sliding layers. The real file and the tiny one agree with it, so both build the same.
    for c in (real("mimo-v2-flash"), m):
        built = AutoConfig.for_model(**transformers_fields(c))
        assert built.layer_types == ["sliding_attention" if v else "full_attention"
                                     for v in c["hybrid_layer_pattern"]]
        assert c["swa_num_key_value_heads"] == 2 * c["num_key_value_heads"]
        assert (c["swa_head_dim"], c["swa_v_head_dim"]) == (c["head_dim"], c["v_head_dim"])
    g = tiny("glm-5.2")  # F F F then (S S S F): 2 + 4 layers
    assert (g["num_hidden_layers"], g["indexer_types"], g["mlp_layer_types"],
            g["first_k_dense_replace"]) \
        == (6, ["full"] * 3 + ["shared"] * 3, ["dense"] * 3 + ["sparse"] * 3, 3)
    x = tiny("minimax-m2.7")
    assert (x["num_hidden_layers"], x["attn_type_list"]) == (2, [1, 1])
    k = tiny("kimi-k2.5")  # the text model, kimi_k2 (DeepSeek V3's MLA), built as deepseek_v3
    assert (k["model_type"], transformers_fields(k)["model_type"], k["num_hidden_layers"],
            k["kv_lora_rank"], k["qk_rope_head_dim"]) == ("kimi_k2", "deepseek_v3", 2, 64, 8)
    assert "quantization_config" not in k


def test_tiny_transformers_5_25_families_by_hand():
    k = tiny("kolibri1_1")  # 50 layers: the first 10 hold sliding, indexed, reusing layers
    # 48 : 4 heads -> 24 : 2 (index_num_heads 12 <= 24 / 2, as its class requires); 2560 / 48
    # is no whole number and below head_dim 128: 24 x (16 - 8) + 2
    assert (k["num_hidden_layers"], k["kv_source_layers"], k["index_layers"],
            k["mlp_only_layers"], k["num_attention_heads"], k["num_key_value_heads"],
            k["head_dim"], k["hidden_size"], k["sliding_window"]) \
        == (10, [0, 1, 2, 3, 4, 5, 6, 7, 8, 4], [4], [0, 1], 24, 2, 16, 194, 8)
    m = tiny("mistral_large4")  # NoPE every 4th layer: 8 layers; MLA 512 + 64 -> 64 + 8
    assert (m["num_hidden_layers"], m["no_rope_layers"], m["indexer_types"],
            m["kv_source_layers"], m["kv_lora_rank"], m["qk_rope_head_dim"], m["head_dim"],
            m["index_head_dim"]) \
        == (8, [1, 1, 1, 0] * 2, ["full"] * 8, list(range(8)), 64, 8, 8, 128)
    x = tiny("minimax_m3_vl")  # 3 full, then sparse: 3 + 2; 64 : 4 -> 32 : 2
    assert (x["num_hidden_layers"], x["layer_types"], x["num_attention_heads"],
            x["num_key_value_heads"], x["head_dim"], x["index_head_dim"]) \
        == (5, ["full_attention"] * 3 + ["minimax_m3_sparse"] * 2, 32, 2, 16, 128)
    d = tiny("dots3_note")  # DSA, then (DSA S S S): 1 + 4; DSA latent 512 -> 64, sliding
    # 1024 -> 128 (their 2 : 1 kept), both RoPE keys 64 -> 8; head_dim 256 -> 32 (its RoPE
    # turns head_dim x 0.25 dims: 8)
    assert (d["num_hidden_layers"], d["layer_types"], d["kv_lora_rank"], d["swa_kv_lora_rank"],
            d["qk_rope_head_dim"], d["swa_qk_rope_head_dim"], d["qk_nope_head_dim"],
            d["swa_qk_nope_head_dim"], d["head_dim"], d["swa_head_dim"],
            d["sliding_window_size"]) \
        == (5, ["indexed_attention"] * 2 + ["sliding_attention"] * 3, 64, 128, 8, 8, 16, 24, 32,
            32, 8)
    i = tiny("inkling")  # 66 layers, 5 sliding : 1 full -> 6; heads 64 : 8 full, 64 : 16
    # sliding -> 16 : 2, 16 : 4; 6144 / 64 = 96 < 128: 16 x (16 - 8); local_layer_ids cut
    assert (i["num_hidden_layers"], i["layer_types"], i["local_layer_ids"],
            i["num_attention_heads"], i["num_key_value_heads"], i["swa_num_attention_heads"],
            i["swa_num_key_value_heads"], i["head_dim"], i["swa_head_dim"], i["hidden_size"],
            i["sliding_window_size"], i["conv_kernel_size"]) \
        == (6, ["hybrid_sliding"] * 5 + ["hybrid"], [0, 1, 2, 3, 4], 16, 2, 16, 4, 16, 16, 128,
            8, 4)
    i2 = tiny("inkling2")  # 48 : 8 both -> 12 : 2; 4608 / 48 = 96 < 128: 12 x 8
    assert (i2["num_hidden_layers"], i2["layer_types"], i2["num_key_value_heads"],
            i2["swa_num_key_value_heads"], i2["hidden_size"], i2["unpadded_vocab_size"]) \
        == (6, ["hybrid_sliding"] * 5 + ["hybrid"], 2, 2, 96, 128)
    lp = tiny("inkling2_loop")  # 24 : 8 -> 6 : 2, hidden 6 x 8; the loop 6..18 of 24 in blocks
    # of 6 (1 and 3 blocks) -> 2..6 in blocks of 2, at most n = 6; three passes kept
    assert (lp["num_hidden_layers"], lp["loop_layer_index_start"], lp["loop_layer_index_end"],
            lp["loop_num_passes"], lp["n_layers_per_attn_res_block"], lp["hidden_size"]) \
        == (6, 2, 6, 3, 2, 48)
    assert real("inkling2_loop")["loop_layer_index_start"] == 6 \
        and real("inkling2_loop")["loop_layer_index_end"] == 18
    # each pass after the first keeps its own caches: 6 + 2 x 4 cache layers, the full one (5)
    # in every pass
    assert [parse_config(t).num_layers for t in (i, i2, lp)] == [6, 6, 6]
    assert {g.attention: g.layers for g in parse_config(lp).groups()
            if g.kind is CacheKind.FULL or g.attention == "Short-conv window"} \
        == {"GQA": 3, "Short-conv window": 14}
    for name, ratios in (("deepseek-v4-flash", [0, 0, 4, 128, 4, 128]),
                         ("deepseek-v4-pro", [128, 128, 4, 128, 4])):
        v = tiny(name)  # 64 : 1 (Flash), 128 : 1 (Pro) heads -> 4 : 1; the entry kept 512 + 64
        assert (v["num_hidden_layers"], v["compress_ratios"], v["head_dim"],
                v["qk_rope_head_dim"], v["index_head_dim"], v["num_attention_heads"],
                v["num_key_value_heads"], v["hidden_size"], v["sliding_window"]) \
            == (len(ratios), ratios, 512, 64, 128, 4, 1, 64, 8)
        types = AutoConfig.for_model(**transformers_fields(v)).layer_types
        assert types == [{0: "sliding_attention", 4: "compressed_sparse_attention",
                          128: "heavily_compressed_attention"}[r] for r in ratios]


def test_every_new_transformers_family_is_compared_or_refused():
    """issue 31: `make crosscheck` covers every new family transformers 5.25.0 has."""
    from kvlib.models.readers.refuse import FAMILIES_REFUSED
    from kvlib.models.readers.registry import FAMILIES

    for family, case in NEW_IN_TRANSFORMERS.items():
        if case == "refused":
            assert family in FAMILIES_REFUSED, family
            continue
        assert case in NAMES and text_model_type(real(case)).removesuffix("_text") == family
        assert not unsupported(case), (family, unsupported(case))
    # DeepSeek V4 too: its per-layer cache objects are split into kvlib's window, compressed,
    # indexer and compressor-state groups by allocation.v4_rule (compare_v4), at every step of
    # test_cache_allocation.py; worked by hand there (test_deepseek_v4_by_hand_at_21_tokens)
    assert {NEW_IN_TRANSFORMERS["deepseek_v4"], "deepseek-v4-pro"} <= set(NAMES)
    # Inkling, Inkling 2 and Inkling 2 Loop too: K/V as every attention layer, the four conv
    # states by allocation.conv_window_rule, the loop's passes by cache_layer_sources (worked
    # by hand in test_inkling_by_hand_at_21_tokens)
    assert {f: NEW_IN_TRANSFORMERS[f] for f in ("inkling", "inkling2", "inkling2_loop")} \
        == {"inkling": "inkling", "inkling2": "inkling2", "inkling2_loop": "inkling2_loop"}
    assert set(NEW_IN_TRANSFORMERS.values()) <= set(NAMES) | {"refused"}
    assert all(family in FAMILIES for family, case in NEW_IN_TRANSFORMERS.items()
               if case != "refused")


def test_text_model_types_are_what_the_wrappers_build():
    """allocation.TEXT_MODEL_TYPES is what transformers' own wrapper class does (Kimi K2.5)."""
    assert {real(name)["model_type"]: text_model_type(bundled_config(name))
            for name in BUNDLED_NAMES if "text_config" in bundled_config(name)
            and real(name)["model_type"] in TEXT_MODEL_TYPES} == TEXT_MODEL_TYPES


def _structure(key, reading) -> tuple:
    """What a layer's cache looks like, sizes aside: kind, formula, kernel, dtypes, ratios."""
    if len(key) == 2:
        return (key[0], reading.attention, reading.label)
    kind, _, formula, sizes = key
    s = dict(sizes)
    ratios = tuple(s[a] // s[b] for a, b in (("N_h", "N_g"), ("N_lv", "N_lk"), ("N_sh", "N_sg"))
                   if a in s and b in s)
    return (kind, formula, s.get("d_conv"), s.get("b_c"), s.get("b_s"), ratios, s.get("m"))


@pytest.mark.parametrize("name", NAMES)
def test_kvlib_reads_the_tiny_config_as_the_real_one_cut_short(name):
    _runnable(name)
    real_r, tiny_r = parse_config(real(name)), parse_config(tiny(name))
    n = tiny_r.num_layers
    s = shared_layers(tiny(name))
    # at most 8 unshared layers, or, where the pattern has no period of 8 or less, the
    # shortest prefix holding every kind (Kolibri 1.1's first reusing layer is its 10th)
    assert 2 <= n <= 2 * MAX_LAYERS
    assert n - s <= MAX_LAYERS or pattern_period(real(name)) > MAX_LAYERS
    assert (tiny_r.reader, tiny_r.family, tiny_r.attention, tiny_r.label) \
        == (real_r.reader, real_r.family, real_r.attention, real_r.label)
    kinds = [kind for kind, _ in tiny_r.layer_map()]
    real_kinds = [kind for kind, _ in real_r.layer_map()]
    assert kinds[:n - s] == real_kinds[:n - s]
    assert kinds[n - s:] == real_kinds[len(real_kinds) - s:] == [CacheKind.SHARED] * s
    assert set(kinds) == set(real_kinds)  # every kind shows
    for i in range(n - s):  # each layer's structure: kind, formula, kernel, dtypes, ratios
        assert _structure(tiny_r.layer(i), tiny_r) == _structure(real_r.layer(i), real_r)
    for kind, window in tiny_r.layer_map():
        assert window == {CacheKind.SLIDING: WINDOW, CacheKind.CHUNKED: CHUNK}.get(kind)
    if real_r.attention == "MLA+RoPE":
        assert real_r.sizes["d_L"] * tiny_r.sizes["d_R"] \
            == tiny_r.sizes["d_L"] * real_r.sizes["d_R"]
    elif real_r.attention == "V4 entry":  # vLLM's fp8_ds_mla entry: 512 + 64, kept
        assert tiny_r.sizes == real_r.sizes == {"d_c": 512, "d_R": 64, "b": 1}
    else:  # MHA and MQA are kept by the label (N_g = N_h, N_g = 1); GQA keeps N_h : N_g
        if real_r.label == "GQA":
            assert real_r.sizes["N_h"] * tiny_r.sizes["N_g"] \
                == tiny_r.sizes["N_h"] * real_r.sizes["N_g"]
        # values HEAD_DIM wide, keys in the real d_QK : d_V (MiMo-V2: 192 : 128 -> 24 : 16)
        assert tiny_r.sizes["d_V"] == HEAD_DIM
        assert tiny_r.sizes["d_QK"] * real_r.sizes["d_V"] \
            == real_r.sizes["d_QK"] * tiny_r.sizes["d_V"]
    assert any(g.kind in STATEFUL for g in tiny_r.groups()) \
        == any(g.kind in STATEFUL for g in real_r.groups())
    # The same spoken assumptions about head_dim (stated and differing / derived).
    for words in ("wins over hidden_size", "derived as hidden_size", "multi_query is true",
                  "is inert", "no num_key_value_heads", "no torch_dtype"):
        assert any(words in a for a in tiny_r.assumptions) \
            == any(words in a for a in real_r.assumptions), words


def _types(fields: dict):
    fields = transformers_fields(fields)
    return get_layer_types_and_kwargs(AutoConfig.for_model(fields.pop("model_type"), **fields))


@pytest.mark.parametrize("name", NAMES)
def test_transformers_reads_the_tiny_layers_as_the_real_first_ones(name):
    _runnable(name)
    real_types, _ = _types(real(name))
    tiny_types, tiny_kwargs = _types(tiny(name))
    n, s, period = len(tiny_types), shared_layers(tiny(name)), pattern_period(real(name))
    k = pattern_offset(real(name))  # layers before the period (MiMo-V2 1, GLM-5.2 2)
    assert tiny_types[:n - s] == real_types[:n - s]
    assert tiny_types[n - s:] == real_types[len(real_types) - s:] == ["dummy"] * s
    assert set(tiny_types) == set(real_types)
    unshared = real_types[:len(real_types) - shared_layers(real(name))]
    if period <= MAX_LAYERS:  # periodic after k layers, and whole periods kept
        assert all(t == unshared[i - period] for i, t in enumerate(unshared) if i >= k + period)
        assert (n - s - k) % period == 0
    else:  # no short period: the shortest prefix with every kind of layer
        assert set(tiny_types) == set(unshared) and set(tiny_types[:n - 1]) != set(unshared)
        assert len(pattern(real(name))) == len(real_types)
    for t, kw in zip(tiny_types, tiny_kwargs, strict=True):
        # MiMo-V2: transformers slides over sliding_window_size + 1 (allocation.py)
        assert kw.get("sliding_window") == {"sliding_attention": transformers_window(
            tiny(name), WINDOW), "hybrid_sliding": WINDOW, "chunked_attention": CHUNK}.get(t)


def test_docs_count_what_the_check_builds():
    """docs/crosscheck.md's "It builds N configs: M of the K bundled models" is these lists."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "crosscheck.md").read_text()
    n, m, k = map(int, re.search(r"It builds (\d+) configs: (\d+) of the (\d+) bundled",
                                 text).groups())
    built = [name for name in NAMES if not unsupported(name)]
    assert (n, m, k) == (len(built), len([b for b in BUNDLED_NAMES if b in built]),
                         len(BUNDLED_NAMES))
