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


# vLLM 0.34.0's own figures for nvidia/MiniMax-M3-NVFP4's config (tests/fixtures/configs/
# corpus-2026.json.gz), measured on this CPU by
#     cd tests/oracle/engine && ../../../.venv-oracle/bin/python minimax_m3.py
# (drive.build, spec_summary, plan_pool and carried with a fake GPU; CuTe DSL stand-ins, see
# that file): (GPU, kv_cache_dtype, TP, max_model_len, pool GiB) -> block size, specs (class,
# window, block, page bytes, layers), KV-cache groups (class, block, layers), blocks,
# the concurrency vLLM logs, and the requests its scheduler carried at once (None: not run).
# Backends on every case: FLASH_ATTN (dense), MINIMAX_M3_SPARSE_INDEXER, MINIMAX_M3_SPARSE.
_M3_BF16 = [["FullAttentionSpec", None, 128, 262144, 60],
            ["MLAAttentionSpec", None, 128, 32768, 57]]
_M3_TP4 = [["FullAttentionSpec", None, 128, 65536, 60], ["MLAAttentionSpec", None, 128, 32768, 57]]
ORACLE = {
    ("H200", "auto", 1, 131072, 64): (128, _M3_BF16, [["FullAttentionSpec", 128, 117]], 3905,
                                      3.8134765625, None),
    ("H200", "auto", 1, 32768, 40): (128, _M3_BF16, [["FullAttentionSpec", 128, 117]], 2440,
                                     9.53125, 9),
    ("H200", "fp8", 1, 32768, 40): (128, [["FullAttentionSpec", None, 128, 131072, 60],
                                          ["MLAAttentionSpec", None, 128, 32768, 57]],
                                    [["FullAttentionSpec", 128, 117]], 4413, 17.23828125, 17),
    ("H200", "auto", 4, 131072, 64): (128, _M3_TP4, [["FullAttentionSpec", 128, 117]], 11848,
                                      11.5703125, None),
    ("H200", "auto", 8, 131072, 64): (128, _M3_TP4, [["FullAttentionSpec", 128, 117]], 11848,
                                      11.5703125, None),
    ("A100", "auto", 1, 131072, 64): (128, _M3_BF16, [["FullAttentionSpec", 128, 117]], 3905,
                                      3.8134765625, None),
    ("B200", "auto", 1, 131072, 64): (128, _M3_BF16, [["FullAttentionSpec", 128, 117]], 3905,
                                      3.8134765625, None),
}
_GPU = {"H200": "H200", "A100": "A100-80GB", "B200": "B200"}


def _nvfp4_m3():
    import gzip
    import json
    from pathlib import Path
    corpus = Path(__file__).resolve().parent / "fixtures" / "configs" / "corpus-2026.json.gz"
    return json.loads(gzip.decompress(corpus.read_bytes()))["nvidia--MiniMax-M3-NVFP4"]["config"]


def test_oracle_pages_by_hand():
    """128-token blocks; a layer's K and V: 4 KV heads (1 a rank from TP 4 on: max(1, 4 // tp),
    nvidia/model.py:762-766) x 128 x 2 (K, V) x 2 B (1 with fp8); an index key: 1 x 128 x 2 B,
    bf16 whatever the KV dtype."""
    assert _M3_BF16[0][3] == 128 * 4 * 128 * 2 * 2 == 262_144
    assert ORACLE[("H200", "fp8", 1, 32768, 40)][1][0][3] == 128 * 4 * 128 * 2 * 1 == 131_072
    assert _M3_TP4[0][3] == 128 * 1 * 128 * 2 * 2 == 65_536
    assert _M3_BF16[1][3] == 128 * 1 * 128 * 2 == 32_768
    # one group of every layer's page: 60 x 262,144 + 57 x 32,768 = 17,596,416 B a block
    assert 64 * 1024**3 // (60 * 262_144 + 57 * 32_768) == 3905
    assert 3905 / (131072 // 128) == 3.8134765625


@pytest.mark.parametrize("case", sorted(ORACLE))
def test_vllm_layout_gives_vllms_m3_figures(case):
    from kvlib.serving.engines.vllm.layout import vllm_layout
    gpu, kv, tp, context, pool_gib = case
    block, specs, groups, blocks, concurrency, carried = ORACLE[case]
    L = vllm_layout(read_config(_nvfp4_m3()), context, "bf16" if kv == "auto" else kv, tp,
                    _GPU[gpu])
    pool = pool_gib * 1024**3
    assert L.block_size == block and L.group_size == 117 and L.padding_layers == 0
    assert [[g.kind, g.block_size, g.layers] for g in L.groups] == [["full", 128, 117]]
    assert groups == [["FullAttentionSpec", 128, 117]]
    assert L.bytes_per_block == sum(page * layers for *_, page, layers in specs)
    assert L.blocks_per_request == -(-context // 128)
    assert L.num_blocks(pool) == blocks
    assert float(L.max_concurrency(pool)) == concurrency
    if carried is not None:
        assert L.sessions(pool, context) == carried
    assert any("128-token blocks only" in n for n in L.notes)
    assert not any("fp8_ds_mla" in n for n in L.notes)  # no latent to store as such rows


def test_plan_takes_the_128_token_blocks():
    from kvlib.serving.engines.vllm.deployment import plan
    # the weights are a stated guess (kvlib cannot count M3's); the layout does not depend on it
    p = plan(read_config(_nvfp4_m3()), "H200", gpus=8, tp=8, context=131072,
             params=230_000_000_000, weight_dtype="fp8")
    assert p.vllm_block_size == 128 and p.vllm_kv_cache_groups == 1
    assert p.vllm_blocks_per_request == 131072 // 128 == 1024
    assert p.vllm_bytes_per_block == 60 * 65_536 + 57 * 32_768 == 5_799_936
    assert any("128-token blocks only" in n for n in p.notes)


@pytest.mark.parametrize("kwargs, match", [
    ({"release": "0.33.0"}, r"traced in vLLM 0\.34\.0 on CUDA GPUs .* not in vLLM 0\.33\.0"),
    ({"gpu": "MI300X"}, r"on MI300X .*minimax_m3/amd/"),
    ({"kv_dtype": "fp16"}, r"with fp16"),
    ({"block_size": 64}, r"--block-size 64: vLLM 0\.34\.0's MiniMax M3 backends take "
                         r"multiples of 128"),
])
def test_vllm_layout_refuses_what_is_not_traced_for_m3(kwargs, match):
    from kvlib.serving.engines.vllm.layout import vllm_layout
    with pytest.raises(ValueError, match=match) as e:
        vllm_layout(read_config(m3()), 131072, **kwargs)
    assert "\n" not in str(e.value)
