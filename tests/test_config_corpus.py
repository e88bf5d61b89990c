"""Published 2025-2026 configs kvlib was not written from, read exactly or refused (issue 23).

The files are in tests/fixtures/configs (SOURCES.md says where each came from). Every expected
figure is worked by hand below from the config's numbers and the family's modeling code in
vLLM 0.33.0 (file and line cited), not from kvlib. Bytes are bf16 (2 B) unless said.
"""

from pathlib import Path

import pytest

from kvlib import parse_config, read_config

CORPUS = Path(__file__).resolve().parent / "fixtures" / "configs"
BF16 = 2


def spec(name):
    return read_config(CORPUS / f"{name}.json")


def kinds(s):
    return {(str(g.kind), g.window): g.layers for g in s.groups}


def test_qwen3_5_moe_gated_deltanet_and_attention():
    """Qwen3.5-35B-A3B: 40 layers, every 4th full attention (layer_types), the rest Gated
    DeltaNet (vLLM models/qwen3_5.py:399-419, gated_delta_net_state_shape); recurrent state in
    mamba_ssm_dtype = float32 (models/config.py:953-977), conv in bf16."""
    s = spec("qwen3.5-35b-a3b")
    assert kinds(s) == {("full", None): 10, ("linear", None): 30}
    # 10 full layers x 2 (K, V) x 2 KV heads x 256 head dim x 2 B
    assert s.kv_bytes_per_token(BF16) == 10 * 2 * 2 * 256 * 2
    # per linear layer: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) x 2 B,
    # recurrent 32 x 128 x 128 x 4 B
    conv = 3 * (2 * 16 * 128 + 32 * 128) * 2
    recurrent = 32 * 128 * 128 * 4
    assert s.state_bytes_per_sequence() == 30 * (conv + recurrent)


def test_qwen3_5_397b():
    s = spec("qwen3.5-397b-a17b")
    assert kinds(s) == {("full", None): 15, ("linear", None): 45}
    assert s.kv_bytes_per_token(BF16) == 15 * 2 * 2 * 256 * 2
    assert s.state_bytes_per_sequence() == 45 * (3 * (2 * 16 * 128 + 64 * 128) * 2
                                                 + 64 * 128 * 128 * 4)


def test_glm_5_1_is_mla_with_a_sparse_indexer():
    """GLM-5.1: vLLM maps GlmMoeDsaForCausalLM to the DeepSeek V3.2 path (models/registry.py:126):
    78 layers, each a latent of kv_lora_rank + qk_rope_head_dim = 512 + 64 (KV dtype), plus an
    indexer key of 128 fp8 bytes + one 4-byte fp32 scale (models/deepseek_v32/attention.py)."""
    s = spec("glm-5.1")
    assert kinds(s) == {("latent", None): 78, ("indexer", None): 78}
    assert s.kv_bytes_per_token(BF16) == 78 * (512 + 64) * 2 + 78 * (128 + 4)
    assert s.kv_bytes_per_token(1) == 78 * (512 + 64) + 78 * 132


def test_kimi_linear_kda_and_mla_layers():
    """Kimi-K3 (text_config: kimi_linear): 1-based kda_layers / full_attn_layers; MLA caches
    512 + 64 (models/kimi_k3/nvidia/mla.py:160); KDA state (mamba_utils.py:296-319) conv
    (4 - 1) x 3 x 96 x 128 in bf16, recurrent 96 x 128 x 128 in float32 (kda_state_dtype)."""
    s = spec("kimi-k3")
    assert kinds(s) == {("latent", None): 24, ("linear", None): 69}
    assert s.kv_bytes_per_token(BF16) == 24 * (512 + 64) * 2
    assert s.state_bytes_per_sequence() == 69 * (3 * 3 * 96 * 128 * 2 + 96 * 128 * 128 * 4)


def test_nemotron_layers_block_type():
    """Nemotron 3.5 Lightning: layers_block_type, 52 entries (23 mamba, 23 moe, 6 attention);
    Mamba2 state (models/nemotron_h.py, mamba2_state_shape): conv (4 - 1) x (64 x 64 + 2 x 8 x
    128) in bf16, SSM 64 x 64 x 128 in float32 (mamba_ssm_cache_dtype)."""
    s = spec("nemotron-3.5-lightning-30b-a3b-nvfp4")
    assert kinds(s) == {("full", None): 6, ("mamba", None): 23, ("none", None): 23}
    assert s.kv_bytes_per_token(BF16) == 6 * 2 * 2 * 128 * 2
    assert s.state_bytes_per_sequence() == 23 * (3 * (64 * 64 + 2 * 8 * 128) * 2
                                                 + 64 * 64 * 128 * 4)


def test_nemotron_layers_block_type_without_num_hidden_layers(tmp_path):
    """NemotronHConfig derives num_hidden_layers as len(layers_block_type) (Ultra's file has no
    num_hidden_layers key)."""
    import json

    cfg = json.loads((CORPUS / "nemotron-3.5-lightning-30b-a3b-nvfp4.json").read_text())
    del cfg["num_hidden_layers"]
    assert parse_config(cfg).num_layers == 52


def test_nemotron_super_hybrid_override_pattern():
    s = spec("nemotron-3-super-120b-a12b-fp8")
    assert kinds(s) == {("full", None): 8, ("mamba", None): 40, ("none", None): 40}
    assert s.kv_bytes_per_token(BF16) == 8 * 2 * 2 * 128 * 2
    assert s.state_bytes_per_sequence() == 40 * (3 * (128 * 64 + 2 * 8 * 128) * 2
                                                 + 128 * 64 * 128 * 4)


def test_an_unknown_family_with_standard_layer_types_is_read_exactly():
    """Step-3.7-Flash (step3p7, no reader): layer_types gives 12 full and 33 sliding layers
    (window 512), 8 KV heads of 128 each."""
    s = spec("step-3.7-flash")
    assert kinds(s) == {("full", None): 12, ("sliding", 512): 33}
    per_layer = 2 * 8 * 128 * 2
    assert s.kv_bytes_per_sequence(65536, BF16) == 12 * per_layer * 65536 + 33 * per_layer * 512


def test_llama_4_maverick_chunked_and_global():
    """No no_rope_layers: every 4th layer is NoPE and global, the rest chunked over 8,192 tokens
    (vLLM models/llama4.py: use_chunked_local_attn = not nope and attention_chunk_size)."""
    s = spec("llama-4-maverick")
    assert kinds(s) == {("full", None): 12, ("chunked", 8192): 36}
    assert s.kv_bytes_per_sequence(32768, BF16) == (12 * 32768 + 36 * 8192) * 2 * 8 * 128 * 2


def test_qwen3_vl_text_model_in_a_wrapper():
    s = spec("qwen3-vl-8b")
    assert kinds(s) == {("full", None): 36}
    assert s.kv_bytes_per_token(BF16) == 36 * 2 * 8 * 128 * 2


def test_qwen3_moe_inert_window():
    s = spec("qwen3-30b-a3b")
    assert kinds(s) == {("full", None): 48}
    assert s.kv_bytes_per_token(BF16) == 48 * 2 * 4 * 128 * 2


# Falcon-H1-7B's sizing fields as a public test module quotes its published config.json
# (ml-explore-style Swift tests, "the parts sizing reads"; no whole copy of the file was found)
FALCON_H1_7B = {"model_type": "falcon_h1", "max_position_embeddings": 262_144,
                "num_hidden_layers": 44, "num_attention_heads": 12, "num_key_value_heads": 2,
                "head_dim": 128, "hidden_size": 3072, "attn_layer_indices": None,
                "mamba_d_conv": 4, "mamba_d_head": 128, "mamba_d_ssm": 3072,
                "mamba_d_state": 256, "mamba_expand": 2, "mamba_n_groups": 1,
                "mamba_n_heads": 24, "torch_dtype": "bfloat16"}


def test_falcon_h1_keeps_both_cache_and_state_in_every_layer():
    """vLLM 0.33.0 models/falcon_h1.py:313-405 (attention and Mamba2 in every layer), :538-570
    (mamba2_state_shape with d_ssm = mamba_d_ssm); both states in the model dtype."""
    s = read_config(FALCON_H1_7B)
    assert kinds(s) == {("full", None): 44, ("mamba", None): 44} and s.num_layers == 44
    assert s.kv_bytes_per_token(BF16) == 44 * 2 * 2 * 128 * 2
    # per layer: conv (4 - 1) x (3072 + 2 x 1 x 256) x 2 B, SSM 24 x 128 x 256 x 2 B
    assert s.state_bytes_per_sequence() == 44 * (3 * (3072 + 2 * 256) * 2 + 24 * 128 * 256 * 2)
    # vLLM 0.34.0 does not read attn_layer_indices where it builds Falcon-H1's layers (every
    # layer keeps attention and Mamba2): listed as ignored, not refused (issue 31)
    layered = parse_config({**FALCON_H1_7B, "attn_layer_indices": [3, 7]})
    assert "attn_layer_indices" in layered.ignored
    assert layered.groups() == parse_config(FALCON_H1_7B).groups()


def test_mimo_v2_flash_sliding_and_full_layers_with_their_own_shapes():
    """MiMo-V2-Flash (vLLM 0.34.0 models/mimo_v2.py:419-451, :512): hybrid_layer_pattern 1 =
    sliding over sliding_window_size = 128 tokens with 8 KV heads, K 192 + V 128 (swa_*);
    0 = full with 4 KV heads, K 192 + V 128 (head_dim, v_head_dim). 9 zeros, 39 ones."""
    s = spec("mimo-v2-flash")
    assert kinds(s) == {("full", None): 9, ("sliding", 128): 39}
    assert s.kv_bytes_per_token(BF16) == 9 * 4 * (192 + 128) * 2 + 39 * 8 * (192 + 128) * 2
    assert s.kv_bytes_per_sequence(65536, BF16) == (9 * 4 * 320 * 2 * 65536
                                                    + 39 * 8 * 320 * 2 * 128)


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.json")), ids=lambda p: p.stem)
def test_every_corpus_config_is_read_with_nothing_dropped_silently(path):
    """Read or refused by name. A read config has every key accounted for (read, or known
    harmless: none is left over as ignored) and every layer of the file read."""
    import json

    try:
        r = parse_config(path)
    except ValueError as e:
        raise AssertionError(f"{path.stem}: {e}") from None
    assert r.ignored == ()
    cfg = json.loads(path.read_text(encoding="utf-8"))
    text = cfg.get("text_config", cfg)
    layers = text.get("num_hidden_layers") or len(text["layers_block_type"])
    assert r.num_layers == layers == len(r.layer_map())


# granite-4.0-h: no published config.json was found (SOURCES.md); these fields are hand-made in
# the family's shape to check the reader against vLLM 0.34.0's granitemoehybrid.py
GRANITE_H = {"model_type": "granitemoehybrid", "num_hidden_layers": 8, "hidden_size": 1024,
             "num_attention_heads": 16, "num_key_value_heads": 4,
             "layer_types": ["mamba"] * 3 + ["attention"] + ["mamba"] * 3 + ["attention"],
             "mamba_n_heads": 32, "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 128,
             "mamba_d_conv": 4, "mamba_expand": 2, "torch_dtype": "bfloat16"}


def test_granite_4_h_mamba2_and_attention_layers():
    """granitemoehybrid.py:240-241 (head dim = hidden / heads = 64, 4 KV heads), :615-645 (conv
    (4 - 1) x (2 x 1024 + 2 x 1 x 128), SSM 32 x 64 x 128, both bf16)."""
    s = read_config(GRANITE_H)
    assert kinds(s) == {("full", None): 2, ("mamba", None): 6}
    assert s.kv_bytes_per_token(BF16) == 2 * 2 * 4 * 64 * 2
    assert s.state_bytes_per_sequence() == 6 * (3 * (2048 + 256) * 2 + 32 * 64 * 128 * 2)
    no_types = {k: v for k, v in GRANITE_H.items() if k != "layer_types"}
    with pytest.raises(ValueError, match="layer_types"):
        parse_config(no_types)


def test_laguna_per_layer_query_heads_one_kv_shape():
    """Laguna-XS.2 (laguna.py:490-504): 40 layers, 10 full and 30 sliding over 512 tokens, every
    layer 8 KV heads of 128 whatever its query heads."""
    from test_config_corpus_2026 import CORPUS as C26

    s = read_config(C26["poolside--Laguna-XS.2-FP8"]["config"])
    assert kinds(s) == {("full", None): 10, ("sliding", 512): 30}
    assert s.kv_bytes_per_sequence(4096, BF16) == (10 * 4096 + 30 * 512) * 2 * 8 * 128 * 2
