"""Hybrid and heterogeneous models read exactly (issue 11): every figure by hand from the config.

Each expected value is written out from the numbers in the bundled config.json and the layer
shapes vLLM 0.33.0 allocates (vllm/model_executor/layers/mamba/mamba_utils.py): K and V of
N_g heads of d per attention layer per token; per state layer a convolution of d_conv - 1 rows
and a recurrent / SSM state.
"""

import json

import pytest

from kvlib import estimate, load_model, parse_config
from kvlib.cli import main
from kvlib.models.catalog import bundled_config
from kvlib.models.spec import CacheKind

GiB = 1024**3


def kinds(name):
    return {str(g.kind): g.layers for g in load_model(name).groups}


def test_qwen3_next_one_layer_in_four_keeps_k_and_v():
    spec = load_model("qwen3-next-80b-a3b")
    # 48 layers, full_attention_interval 4: 12 attention, 36 Gated DeltaNet
    assert kinds("qwen3-next-80b-a3b") == {"full": 12, "linear": 36}
    per_token = 12 * 2 * 2 * 256 * 2  # layers x (K, V) x 2 KV heads x head_dim 256 x bf16
    assert spec.kv_bytes_per_token(2) == per_token == 24_576
    conv = (4 - 1) * (2 * 16 * 128 + 32 * 128) * 2  # 49,152 B
    recurrent = 32 * 128 * 128 * 2  # 1,048,576 B: bf16, no override for Qwen3-Next in vLLM
    assert spec.state_bytes_per_sequence() == 36 * (conv + recurrent) == 39_518_208
    # read as 48 full-attention layers (the old silent answer) it was 4x too much
    assert 48 * 2 * 2 * 256 * 2 == 4 * spec.kv_bytes_per_token(2)


def test_nemotron_h_56b_pattern_and_fp32_ssm_state():
    spec = load_model("nemotron-h-56b")
    pattern = bundled_config("nemotron-h-56b")["hybrid_override_pattern"]
    assert (pattern.count("M"), pattern.count("*"), pattern.count("-")) == (54, 10, 54)
    assert kinds("nemotron-h-56b") == {"full": 10, "mamba": 54, "none": 54}
    assert spec.kv_bytes_per_token(2) == 10 * 2 * 8 * 128 * 2 == 40_960
    d_inner = 256 * 64  # mamba_num_heads x mamba_head_dim
    conv = 3 * (d_inner + 2 * 8 * 256) * 2  # conv_kernel 4, n_groups 8, ssm_state_size 256, bf16
    ssm = 256 * 64 * 256 * 4  # float32: vLLM's NemotronH default
    assert spec.state_bytes_per_sequence() == 54 * (conv + ssm) == 912_605_184


def test_nemotron_3_nano_ssm_dtype_from_the_config():
    spec = load_model("nemotron-3-nano-30b-a3b")
    assert bundled_config("nemotron-3-nano-30b-a3b")["mamba_ssm_cache_dtype"] == "float32"
    assert kinds("nemotron-3-nano-30b-a3b") == {"full": 6, "mamba": 23, "none": 23}
    assert spec.kv_bytes_per_token(2) == 6 * 2 * 2 * 128 * 2
    per_layer = 3 * (64 * 64 + 2 * 8 * 128) * 2 + 64 * 64 * 128 * 4
    assert spec.state_bytes_per_sequence() == 23 * per_layer == 49_082_368


def test_nemotron_super_skips_attention_in_31_layers():
    spec = load_model("llama-3.3-nemotron-super-49b")
    blocks = bundled_config("llama-3.3-nemotron-super-49b")["block_configs"]
    no_op = [i for i, b in enumerate(blocks) if b["attention"]["no_op"]]
    assert len(no_op) == 31 and no_op[:3] == [6, 7, 11]
    assert kinds("llama-3.3-nemotron-super-49b") == {"full": 49, "none": 31}
    assert spec.kv_bytes_per_token(2) == 49 * 2 * (64 // 8) * 128 * 2 == 200_704
    # without block_configs (num_key_value_heads is null: read as MHA on 80 layers) it was 13x
    assert 80 * 2 * 64 * 128 * 2 == 2_621_440 and 2_621_440 // 200_704 == 13


def test_deepseek_v32_counts_the_indexer_keys():
    spec = load_model("deepseek-v3.2")
    assert kinds("deepseek-v3.2") == {"latent": 61, "indexer": 61}
    assert spec.num_layers == 61
    latent = 61 * (512 + 64) * 2  # kv_lora_rank + qk_rope_head_dim, bf16
    indexer = 61 * (128 + 128 // 128 * 4)  # fp8 values + fp32 scale per 128: 132 B
    assert spec.kv_bytes_per_token(2) == latent + indexer == 78_324
    # the indexer is stored as bytes: an fp8 KV cache halves the latent only
    assert spec.kv_bytes_per_token(1) == 61 * 576 + indexer


def test_gemma4_global_layers_have_their_own_shape():
    spec = load_model("gemma-4-26b-a4b")
    by_kind = {str(g.kind): g for g in spec.groups}
    assert (by_kind["full"].layers, by_kind["sliding"].layers) == (5, 25)
    full = 5 * 2 * 2 * 512 * 2  # num_global_key_value_heads 2, global_head_dim 512
    sliding = 25 * 2 * 8 * 256 * 2  # num_key_value_heads 8, head_dim 256
    assert spec.kv_bytes_per_token(2) == full + sliding == 225_280
    assert spec.kv_bytes_per_sequence(131072, 2) == full * 131072 + sliding * 1024


def test_gemma_kv_shared_layers_keep_nothing():
    cfg = bundled_config("gemma-4-26b-a4b")
    cfg["text_config"] = {**cfg["text_config"], "num_kv_shared_layers": 10}
    r = parse_config(cfg)
    counts = {str(g.kind): g.layers for g in r.groups()}
    # layers 20-29 share: of them, 23 and 29 are full, the other 8 sliding
    assert counts == {"full": 3, "sliding": 17, "shared": 10}
    assert any("num_kv_shared_layers=10" in a for a in r.assumptions)


def jamba_config(**extra):
    """JambaConfig's defaults (transformers), the fields that decide the cache."""
    return {"model_type": "jamba", "num_hidden_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_key_value_heads": 8, "attn_layer_period": 8,
            "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
            "torch_dtype": "bfloat16", "max_position_embeddings": 262144, **extra}


def test_jamba_mamba1_layers():
    spec = parse_config(jamba_config())
    counts = {str(g.kind): g.layers for g in spec.groups()}
    assert counts == {"full": 4, "mamba": 28}  # layers 4, 12, 20, 28 are attention
    d_inner = 2 * 4096
    state = 28 * ((4 - 1) * d_inner * 2 + d_inner * 16 * 2)
    groups = spec.groups()
    assert sum(g.state_bytes_per_sequence() for g in groups) == state == 8_716_288
    assert sum(g.bytes_per_token(2) for g in groups) == 4 * 2 * 8 * 128 * 2


def test_lfm2_short_convolutions():
    types = ["conv", "conv", "full_attention"] * 5 + ["conv"]
    cfg = {"model_type": "lfm2", "num_hidden_layers": 16, "hidden_size": 1024,
           "num_attention_heads": 16, "num_key_value_heads": 8, "conv_L_cache": 3,
           "conv_dim": 1024, "layer_types": types, "torch_dtype": "bfloat16"}
    groups = parse_config(cfg).groups()
    assert {str(g.kind): g.layers for g in groups} == {"full": 5, "conv": 11}
    assert sum(g.state_bytes_per_sequence() for g in groups) == 11 * (3 - 1) * 1024 * 2
    legacy = {k: v for k, v in cfg.items() if k != "layer_types"} | {"full_attn_idxs": [2, 5]}
    assert {str(g.kind): g.layers for g in parse_config(legacy).groups()} == {"full": 2,
                                                                            "conv": 14}


@pytest.mark.parametrize("bad, words", [
    ({"hybrid_override_pattern": "M*X"}, ["hybrid_override_pattern", "one of M, *, -, E"]),
    ({"mamba_ssm_cache_dtype": "float8"}, ["mamba_ssm_cache_dtype", "float8"]),
])
def test_nemotron_h_bad_fields_name_themselves(bad, words):
    cfg = {**bundled_config("nemotron-3-nano-30b-a3b"), **bad}
    with pytest.raises(ValueError) as e:
        parse_config(cfg)
    assert all(w in str(e.value) for w in words)


def test_estimate_json_reports_state_and_total(capsys):
    assert main(["estimate", "qwen3-next-80b-a3b", "--context", "262144", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    kv = 24_576 * 262_144
    assert d["kv_bytes_per_sequence"] == kv == 6 * GiB
    assert d["state_bytes_per_sequence"] == 39_518_208
    assert d["total_bytes_per_sequence"] == kv + 39_518_208
    kinds_ = {g["kind"]: g for g in d["groups"]}
    assert kinds_["linear"]["bytes_per_token"] == 0
    assert kinds_["linear"]["state_bytes_per_sequence"] == 39_518_208
    assert d["attention"] == "GQA + Gated DeltaNet"


def test_a_pure_attention_model_has_no_state(capsys):
    assert main(["estimate", "llama-3.1-8b", "--context", "8K", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["state_bytes_per_sequence"] == 0
    per_seq = 32 * 2 * 8 * 128 * 2 * 8192
    assert d["total_bytes_per_sequence"] == d["kv_bytes_per_sequence"] == per_seq


def test_state_does_not_grow_with_the_context():
    e1, e2 = (estimate("nemotron-h-56b", context=T) for T in (1024, 8192))
    assert e1.state_bytes_per_sequence == e2.state_bytes_per_sequence == 912_605_184
    assert e2.kv_bytes_per_sequence == 8 * e1.kv_bytes_per_sequence


def test_every_group_kind_is_documented():
    doc = open("docs/cli.md").read()
    for kind in CacheKind:
        assert f"`{kind}`" in doc, kind


def test_nemotron_h_reads_head_dim_as_transformers_and_vllm_do():
    cfg = bundled_config("nemotron-h-56b")
    assert "head_dim" not in cfg and cfg["attention_head_dim"] == 128
    odd = {**cfg, "attention_head_dim": 64}  # ignored by NemotronHConfig: 128 applies
    r = parse_config(odd)
    full = next(g for g in r.groups() if str(g.kind) == "full")
    assert full.sizes["d_QK"] == 128
    assert any("attention_head_dim=64 is ignored" in a for a in r.assumptions)


def test_an_indexer_width_off_the_scale_block_is_refused():
    cfg = {**bundled_config("deepseek-v3.2"), "index_head_dim": 96}
    with pytest.raises(ValueError, match=r"^index_head_dim=96: vLLM stores one fp32 scale per 128"):
        parse_config(cfg)


def test_the_indexer_keeps_its_bytes_on_the_serving_path_too():
    """kvlib plan (paged, per GPU) counts the indexer's 132 B per token per layer at any KV
    dtype, as the estimate does: one fixed element size, held by the group itself."""
    from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu

    spec = load_model("deepseek-v3.2")
    for kv_dtype, b in (("bf16", 2), ("fp8", 1)):
        # 61 layers x (576 latent + RoPE key elements x b + 132 indexer bytes) x 1,024 tokens
        expected = 61 * (576 * b + 132) * 1024
        assert kv_bytes_per_sequence_per_gpu(spec, 1024, kv_dtype, tp=8) == expected


def test_mamba2_d_inner_is_heads_times_head_dim_as_vllm_reads_it():
    # vLLM 0.33.0 model_executor/models/nemotron_h.py:394: intermediate_size =
    # config.mamba_num_heads * config.mamba_head_dim. Nemotron 3 Nano: 64 x 64 = 4,096, not
    # expand x hidden_size = 2 x 2,688 = 5,376.
    from kvlib.core.notation import d_inner
    from kvlib.core.state_tables import MAMBA2

    config = bundled_config("nemotron-3-nano-30b-a3b")
    (mamba2,) = [g for g in load_model("nemotron-3-nano-30b-a3b").groups if g.attention == "Mamba2"]
    assert mamba2.sizes["d_inner"] == 64 * 64 == 4096 != config["expand"] * config["hidden_size"]
    assert "mamba_num_heads x mamba_head_dim" in d_inner.meaning
    assert r"\left(d_{conv} - 1\right) \times \left(" in MAMBA2._repr_markdown_()
