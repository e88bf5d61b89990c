"""MiniMax M3 (issue 31): the nested sparse-index settings read as transformers 5.25.0's
MiniMaxM3VLTextConfig flattens them and vLLM 0.34.0 allocates them; each figure by hand."""

from __future__ import annotations

import pytest

from kvlib import parse_config, read_config


def m3(layers=4, freq=(0, 1, 1, 1), **extra):
    """A small MiniMax M3 text config in the published files' shape (sizes of the real one)."""
    nested = {"use_sparse_attention": True, "sparse_index_dim": 128,
              "sparse_num_index_heads": 4, "sparse_topk_blocks": 16, "sparse_block_size": 128,
              "sparse_local_block": 1, "sparse_init_block": 0, "sparse_score_type": "max",
              "sparse_disable_index_value": list(freq), "sparse_attention_freq": list(freq)}
    return {"model_type": "minimax_m3_vl",
            "text_config": {"num_hidden_layers": layers, "hidden_size": 6144,
                            "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
                            "attention_output_gate": False, "qk_norm_type": "per_head",
                            "sparse_attention_config": nested, **extra}}


def test_three_sparse_layers_of_four():
    s = read_config(m3())
    # 4 layers x K and V x 4 heads x 128 x 2 B = 8,192; 3 index keys x 128 x 2 B (bf16) = 768
    assert s.kv_bytes_per_token(2) == 4 * 2 * 4 * 128 * 2 + 3 * 128 * 2 == 8_960
    # an fp8 KV cache halves K and V, not the index keys (indexer_kv_dtype bf16)
    assert s.kv_bytes_per_token(1) == 4 * 2 * 4 * 128 + 3 * 128 * 2 == 4_864
    # T = 1000 tokens: every layer keeps them all
    assert s.kv_bytes_per_sequence(1000, 2) == 1000 * 8_960


def test_nested_index_dim_wins_over_the_flat_one():
    cfg = m3(index_head_dim=64)
    cfg["text_config"]["sparse_attention_config"]["sparse_index_dim"] = 256
    assert read_config(cfg).kv_bytes_per_token(2) == 4 * 2 * 4 * 128 * 2 + 3 * 256 * 2


def test_layer_types_win_over_the_freq_list():
    cfg = m3(layer_types=["full_attention"] * 3 + ["minimax_m3_sparse"])
    assert read_config(cfg).kv_bytes_per_token(2) == 8_192 + 1 * 128 * 2


def test_no_sparse_settings_is_full_attention_everywhere():
    cfg = m3()
    del cfg["text_config"]["sparse_attention_config"]
    r = parse_config(cfg)
    assert read_config(cfg).kv_bytes_per_token(2) == 8_192
    assert any("every layer is full attention" in a for a in r.assumptions)


def test_rocm_index_sharing_is_read_and_changes_nothing():
    cfg = m3(use_index_cache=True, index_topk_freq=4)
    assert read_config(cfg).kv_bytes_per_token(2) == 8_960


@pytest.mark.parametrize("extra, match", [
    ({"attention_output_gate": True}, r"attention_output_gate=True: vLLM 0\.34\.0 builds"),
    ({"layer_types": ["full_attention", "sliding_attention", "full_attention",
                      "full_attention"]}, r"text_config\.layer_types holds 'sliding_attention'"),
    ({"sparse_attention_config": {"sparse_attention_freq": [1, 1]}},
     r"sparse_attention_freq must describe each of the 4 layers"),
    ({"sparse_attention_config": [1]}, r"sparse_attention_config must be a JSON object"),
])
def test_refusals_name_the_key(extra, match):
    cfg = m3()
    cfg["text_config"].update(extra)
    with pytest.raises(ValueError, match=match) as e:
        parse_config(cfg)
    assert "\n" not in str(e.value)


def test_text_only_model_type_says_no_engine_registers_it():
    cfg = {**m3()["text_config"], "model_type": "minimax_m3"}
    r = parse_config(cfg)
    assert read_config(cfg).kv_bytes_per_token(2) == 8_960
    assert any("registered by neither" in a for a in r.assumptions)
