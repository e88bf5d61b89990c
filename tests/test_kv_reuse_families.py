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
