"""transformers 5.25.0's families with cross-layer KV reuse and renamed window keys
(issue 31): each expected figure worked by hand from the family's config-class defaults."""

from __future__ import annotations

import pytest

from kvlib import parse_config


def kolibri_config(**extra):
    """Kolibri1_1Config's defaults (configuration_kolibri1_1.py:97-131), the cache's fields."""
    return {"model_type": "kolibri1_1", "num_hidden_layers": 50, "hidden_size": 2560,
            "num_attention_heads": 48, "num_key_value_heads": 4, "head_dim": 128,
            "sliding_window": 513, "max_position_embeddings": 262144,
            "index_topk": 2048, "index_pool_size": 16384, "index_compression": 16,
            "index_num_heads": 12, "index_num_local_tokens": 128, "index_num_sink_tokens": 8,
            "torch_dtype": "bfloat16", **extra}


def ergo_config(**extra):
    """ErgoConfig's defaults (configuration_ergo.py:74-96), the window under its checkpoint name."""
    return {"model_type": "ergo", "num_hidden_layers": 64, "hidden_size": 8192,
            "num_attention_heads": 64, "num_key_value_heads": 8, "local_attention_window": 512,
            "global_attention_every_n_layers": 4, "max_position_embeddings": 524288,
            "torch_dtype": "bfloat16", **extra}


def counts(r):
    return {(str(g.kind), g.window): g.layers for g in r.groups()}


def per_token(r, b=2):
    return sum(g.bytes_per_token(b) for g in r.groups())


def per_sequence(r, T, b=2):
    return sum(g.bytes_per_sequence(T, b) for g in r.groups() if g.grows)


def test_kolibri_defaults_share_six_of_ten_indexed_layers():
    r = parse_config(kolibri_config())
    # layers 4, 9, ..., 49 are indexed; of them the 2nd, 3rd, 7th-10th reuse another's K/V
    assert counts(r) == {("full", None): 4, ("sliding", 513): 40, ("shared", None): 6}
    layer = 2 * 4 * 128 * 2  # K and V, 4 heads of 128, bf16: 2048 bytes per token
    assert per_token(r) == (4 + 40) * layer == 90_112
    # T = 4096: the 4 indexed layers keep every token, the 40 sliding ones 513
    assert per_sequence(r, 4096) == 4 * 4096 * layer + 40 * 513 * layer == 75_579_392
    assert r.ignored == ()


def test_kolibri_explicit_sources_and_layer_types():
    types = ["sliding_attention", "indexed_attention"] * 3
    r = parse_config(kolibri_config(num_hidden_layers=6, layer_types=types,
                                    kv_source_layers=[0, 1, 2, 1, 4, 1]))
    assert counts(r) == {("full", None): 1, ("sliding", 513): 3, ("shared", None): 2}
    assert per_token(r) == 4 * 2048


@pytest.mark.parametrize("sources", [[0, 1, 0, 3], [0, 3, 2, 3], [0, 1, 2]])
def test_kolibri_refuses_sources_transformers_refuses(sources):
    types = ["sliding_attention", "indexed_attention"] * 2
    with pytest.raises(ValueError, match="kv_source_layers"):
        parse_config(kolibri_config(num_hidden_layers=4, layer_types=types,
                                    kv_source_layers=sources))


def test_ergo_local_attention_window():
    r = parse_config(ergo_config())
    assert counts(r) == {("full", None): 16, ("sliding", 512): 48}
    layer = 2 * 8 * (8192 // 64) * 2  # 4096 bytes per token per layer
    assert per_token(r) == 64 * layer == 262_144
    assert per_sequence(r, 4096) == 16 * 4096 * layer + 48 * 512 * layer == 369_098_752


def test_ergo_window_key_and_head_dim():
    r = parse_config(ergo_config(local_attention_window=1024, head_dim=256))
    assert counts(r) == {("full", None): 16, ("sliding", 1024): 48}
    assert per_token(r) == 64 * 4096  # head_dim is not read: 8192 / 64 = 128
    with pytest.raises(ValueError, match="disagree"):
        parse_config(ergo_config(sliding_window=256))


def mistral_large4_config(**extra):
    """MistralLarge4TextConfig's defaults (configuration_mistral_large4.py:89-139)."""
    return {"model_type": "mistral_large4_text", "num_hidden_layers": 72, "hidden_size": 6144,
            "num_attention_heads": 64, "num_key_value_heads": 64, "kv_lora_rank": 512,
            "qk_rope_head_dim": 64, "qk_nope_head_dim": 64, "v_head_dim": 128, "head_dim": 64,
            "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 32,
            "max_position_embeddings": 1048576, **extra}


def test_mistral_large4_defaults_nope_every_fourth_layer():
    r = parse_config(mistral_large4_config())
    # 72 layers; NoPE iff (i + 1) % 4 == 0: 18 cache the latent only (512), 54 latent + RoPE
    # key (576); every layer's indexer caches one 128-wide key, in the model's dtype (bf16)
    assert per_token(r) == 54 * 576 * 2 + 18 * 512 * 2 + 72 * 128 * 2 == 99_072


def test_mistral_large4_kv_sources_and_shared_indexers():
    # 4 layers, all RoPE; layer 2 reuses layer 0's latent but runs its own indexer
    # (reuse_but_indexer), layer 3 reuses layer 1's and shares an indexer: no cache at all
    r = parse_config(mistral_large4_config(
        num_hidden_layers=4, no_rope_layers=[1, 1, 1, 1], kv_source_layers=[0, 1, 0, 1],
        indexer_types=["full", "full", "full", "shared"]))
    assert counts(r)[("shared", None)] == 2
    assert per_token(r) == 2 * 576 * 2 + 3 * 128 * 2 == 3_072
    # index_topk_pattern "FSFS": two indexers
    r = parse_config(mistral_large4_config(num_hidden_layers=4, no_rope_layers=[1, 1, 1, 1],
                                           index_topk_pattern="FSFS"))
    assert per_token(r) == 4 * 576 * 2 + 2 * 128 * 2 == 5_120


@pytest.mark.parametrize("extra, match", [
    ({"kv_source_layers": [0, 0, 3, 0]}, r"kv_source_layers\[2\]=3"),
    ({"no_rope_layers": [1, 0, 1, 1], "kv_source_layers": [0, 0, 2, 3]},
     r"kv_source_layers\[1\]=0: layer 1 and its source differ in no_rope_layers"),
    ({"layer_types": ["full_attention"] * 4}, r"layer_types=.*'indexed_attention'"),
    ({"indexer_types": ["full", "full", "dense", "full"]}, r"indexer_types must hold"),
])
def test_mistral_large4_refusals(extra, match):
    with pytest.raises(ValueError, match=match):
        parse_config(mistral_large4_config(num_hidden_layers=4, **extra))


def dots3_config(**extra):
    """A dots3 Note file as vLLM 0.34.0 reads it: transformers 5.25.0's defaults
    (configuration_dots3_note.py:231-320) with layer_types and the swa_* keys written out."""
    types = ["indexed_attention" if i < 2 or i % 4 == 1 else "sliding_attention"
             for i in range(46)]
    return {"model_type": "dots3_note", "num_hidden_layers": 46, "hidden_size": 5120,
            "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
            "q_lora_rank": 1024, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
            "v_head_dim": 128, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64,
            "layer_types": types, "sliding_window_size": 512, "swa_kv_lora_rank": 1024,
            "swa_qk_rope_head_dim": 64, "swa_num_attention_heads": 64,
            "swa_qk_nope_head_dim": 192, "swa_v_head_dim": 128, "swa_q_lora_rank": 1024,
            **extra}


def test_dots3_note_pads_dsa_latents_to_the_sliding_width():
    r = parse_config(dots3_config())
    # 13 DSA layers (i < 2 or i % 4 == 1) and 33 sliding; vLLM pads every DSA entry to
    # 1024 + 64 = 1088 elements, the sliding layers' width: 46 x 1088 x 2 B = 100,096; the 13
    # DSA indexers add 128 fp8 bytes + one 4-byte scale each: 13 x 132 = 1,716
    assert counts(r) == {("sliding", 512): 33, ("latent", None): 13, ("indexer", None): 13}
    assert per_token(r) == 46 * 1088 * 2 + 13 * 132 == 101_812
    # T = 4096: sliding layers keep 512 tokens
    assert per_sequence(r, 4096) == (13 * 4096 + 33 * 512) * 1088 * 2 + 13 * 4096 * 132


@pytest.mark.parametrize("change, match", [
    ({"layer_types": None}, r"config has no layer_types: vLLM 0\.34\.0 reads it"),
    ({"use_dsa": False}, r"use_dsa=False: transformers 5\.25\.0 then builds dense"),
    ({"sliding_window": 1024}, r"sliding_window=1024 and sliding_window_size=512 disagree"),
    ({"swa_kv_lora_rank": None}, r"config has no swa_kv_lora_rank"),
])
def test_dots3_note_refusals(change, match):
    cfg = {k: v for k, v in {**dots3_config(), **change}.items() if v is not None}
    with pytest.raises(ValueError, match=match):
        parse_config(cfg)


@pytest.mark.parametrize("model_type, what", [
    ("blt", "DynamicCache(config=BltConfig) fails"),
])
def test_families_kvlib_cannot_count_are_refused_by_name(model_type, what):
    with pytest.raises(ValueError, match="model_type '") as e:
        parse_config({"model_type": model_type, "num_hidden_layers": 4, "hidden_size": 64,
                      "num_attention_heads": 4, "sliding_window_size": 512})
    assert what in str(e.value) and "\n" not in str(e.value)
