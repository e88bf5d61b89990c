"""SGLang 0.5.23's pool for the sparse-attention (DSA) models, DeepSeek V3.2 and GLM-5.x, worked
by hand from the published configs and SGLang's source lines (issue 41 item 3); the same models
run through SGLang's DefaultPoolConfigurator in tests/oracle/test_sglang_oracle.py."""

import pytest

from kvlib.core.numeric import evaluate
from kvlib.models.catalog import bundled_config, load_model
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines.sglang import indexer


def test_deepseek_v32_cell_by_hand():
    """DeepSeek V3.2: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128,
    no index_kpool (1), no indexer_types (every layer has its indexer). bf16 latent row:
    (512 + 64) x 61 x 2 = 70,272 B; indexer: 128 fp8 bytes + 128 // 128 x 4 B of scale = 132 B
    a layer, x 61 = 8,052 B; 78,324 B a token. fp8 on Hopper (flashmla_kv's scaled layout):
    512 + 512 // 128 x 4 + 64 x 2 = 656 B a layer, x 61 = 40,016 B; the indexer is the same."""
    config = bundled_config("deepseek-v3.2")
    model = load_model("deepseek-v3.2")
    assert indexer.is_dsa(config)
    assert indexer.dsa_cells(model, config, 2) == (70_272, 8_052)
    assert indexer.dsa_cells(model, config, 1) == (40_016, 8_052)
    assert indexer.dsa_page(config) == 64


def test_glm_52_keeps_index_keys_only_on_its_full_indexer_layers():
    """GLM-5.2: 78 layers, indexer_types 21 "full" and 57 "shared"; a shared layer reuses the
    previous top-k and keeps no index keys (model_config.py:488-497; kv_cache_configurator.py:
    131-145): 132 x 21 = 2,772 B of indexer a token, beside (512 + 64) x 78 x 2 = 89,856 B."""
    config = bundled_config("glm-5.2")
    assert config["indexer_types"].count("full") == 21
    assert indexer.dsa_cells(load_model("glm-5.2"), config, 2) == (89_856, 2_772)


def test_the_page_aligned_tokens_of_a_budget():
    """40 GiB = 42,949,672,960 B over 78,324 B a token: 548,359 tokens, in pages of 64:
    8,568 pages = 548,352 tokens."""
    cell = 70_272 + 8_052
    from kvlib.serving.engines.sglang import pools

    assert evaluate(pools.TOKENS, B_KV=40 << 30, c=cell, p=64) == 548_352


def test_index_kpool_pools_the_rows_and_widens_the_page():
    """index_kpool k: ceil(132 / k) bytes a layer, pages of 64 k (deepseek_v2.py:161-173)."""
    assert evaluate(indexer.CELL_DSA_INDEXER, d_I=128, k_pool=4, N_I=10) == 33 * 10
    assert indexer.dsa_page({"index_kpool": 4}) == 256


def test_the_plan_on_h200_and_the_refusal_on_b200():
    plan = engine_tokens("deepseek-v3.2", "H200", "sglang", tp=8, context=8192)
    assert (plan.page, plan.cell) == (64, 78_324)
    with pytest.raises(ValueError, match="SM100"):
        engine_tokens("deepseek-v3.2", "B200", "sglang", tp=8, context=8192)
