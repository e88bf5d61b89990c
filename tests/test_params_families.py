"""Parameter counts of the families issue 42 added, against hand arithmetic written out here
from the published config.json files (tests/fixtures/configs, the 2026 corpus). The same
counts equal transformers 5.25.0's meta-device models in ``make crosscheck``
(tests/crosscheck/test_params_meta.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from kvlib.models.catalog import bundled_config
from kvlib.models.params import count_params
from kvlib.serving.weights import checkpoint_weights

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"
CORPUS = json.loads(gzip.open(FIXTURES / "corpus-2026.json.gz").read())


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_qwen3_30b_a3b_by_hand():
    # vocab 151936, d 2048, 48 layers, 32 q heads, 4 KV heads, head_dim 128, 128 experts of
    # 768, 8 per token, untied head
    embed = 151936 * 2048                                   # 311,164,928 (and the head)
    attn = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128   # q, k+v, o, q/k norms
    experts = 128 * 3 * 2048 * 768                          # 603,979,776 per layer
    router = 2048 * 128
    norms = 48 * 2 * 2048 + 2048
    c = count_params(_fixture("qwen3-30b-a3b.json"))
    assert c.total == 2 * embed + 48 * (attn + experts + router) + norms == 30_532_122_624
    # one token reads 8 of the 128 experts: 3.35B, the "A3B"
    assert c.active == c.total - 48 * experts * 120 // 128 == 3_353_032_704


def test_mixtral_8x7b_by_hand():
    # vocab 32000, d 4096, 32 layers, 32 : 8 heads of 128, 8 experts of 14336, 2 per token
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    experts = 8 * 3 * 4096 * 14336
    layer = attn + experts + 4096 * 8 + 2 * 4096            # + router, two norms
    c = count_params(CORPUS["mistralai--Mixtral-8x7B-v0.1"]["config"])
    assert c.total == 2 * 32000 * 4096 + 32 * layer + 4096 == 46_702_792_704
    assert c.active == c.total - 32 * experts * 6 // 8 == 12_879_925_248


def test_qwen3_vl_8b_vision_tower_by_hand():
    # vision_config: depth 27, d 1152, MLP 4304, patch 16 x 16 x 2 frames x 3 channels,
    # 2304 positions, 2 x 2 merge to 4608, out 4096, deepstack mergers at [8, 16, 24]
    d, i, w = 1152, 4304, 4608
    patch = 3 * 2 * 16 * 16 * d + d
    block = 4 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * i + i) + (i * d + d)
    merger = (w * w + w) + (w * 4096 + 4096)
    c = count_params(_fixture("qwen3-vl-8b.json"))
    assert c.towers == "counted"
    assert c.parts["vision"] == (patch + 2304 * d + 27 * block + 2 * d + merger
                                 + 3 * (2 * w + merger)) == 576_388_336


def test_glm_4_7_flash_router_bias_always():
    """vLLM's Glm4MoE holds e_score_correction_bias whatever topk_method says
    (glm4_moe.py:148-150): 64 per MoE layer, 46 MoE layers (first_k_dense_replace 1)."""
    cfg = CORPUS["zai-org--GLM-4.7-Flash"]["config"]
    assert "topk_method" not in cfg
    c = count_params(cfg)
    assert c.parts["router"] == 46 * (2048 * 64 + 64)


def test_jamba_mamba_layer_by_hand():
    """One Jamba Mamba mixer (d 4096, expand 2, d_state 16, d_conv 4, dt_rank ceil(4096 /
    16) = 256): in_proj, x_proj, dt_proj with bias, out_proj, conv with bias, A_log, D,
    and the dt/B/C norms."""
    base = {"model_type": "jamba", "vocab_size": 65536, "hidden_size": 4096,
            "intermediate_size": 14336, "num_hidden_layers": 2, "num_attention_heads": 32,
            "num_key_value_heads": 8, "num_experts": 16, "num_experts_per_tok": 2,
            "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2,
            "expert_layer_offset": 1}
    inner = 8192
    mamba = (4096 * 2 * inner + inner * (256 + 32) + (256 * inner + inner)
             + inner * 4096 + (inner * 4 + inner) + inner * 16 + inner + 256 + 2 * 16)
    c = count_params(base)
    assert c.parts["mixers"] == mamba
    assert c.parts["experts"] == 16 * 3 * 4096 * 14336  # layer 1 only
    assert c.parts["mlp"] == 3 * 4096 * 14336           # layer 0's dense MLP


@pytest.mark.parametrize("name", [
    "Qwen--Qwen3-30B-A3B", "Qwen--Qwen3-235B-A22B", "Qwen--Qwen3-Coder-480B-A35B-Instruct",
    "mistralai--Mixtral-8x7B-v0.1", "mistralai--Mixtral-8x22B-v0.1",
    "Qwen--Qwen3-VL-2B-Instruct", "Qwen--Qwen3-VL-235B-A22B-Instruct", "zai-org--GLM-4.7-Flash",
    "zai-org--GLM-4.7-FP8", "XiaomiMiMo--MiMo-7B-Base",
])
def test_issue_42_models_counted(name):
    """The published files issue 42 lists as refused for lack of a counter are counted:
    a positive total, active at most total, every part non-negative."""
    c = count_params(CORPUS[name]["config"])
    assert 0 < c.active <= c.total
    assert min(c.parts.values()) >= 0


def test_qwen3_moe_head_dim_default_is_hidden_over_heads():
    """Qwen3-MoE without head_dim: hidden_size / heads (vLLM's Qwen3MoeAttention, transformers'
    Qwen3MoeConfig), not dense Qwen3's 128: 2048 / 32 = 64 per head."""
    cfg = {"model_type": "qwen3_moe", "vocab_size": 1000, "hidden_size": 2048,
           "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 4,
           "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 4,
           "num_experts_per_tok": 2}
    c = count_params(cfg)
    assert c.parts["attention"] == 2048 * 32 * 64 * 2 + 2 * 2048 * 4 * 64
    # the q and k norms (64 each) are norms, whole on every rank: 2 per layer, the final one
    assert c.parts["norms"] == 2 * 64 + 2 * 2048 + 2048


def test_minimax_m3_by_hand():
    # d 6144, 60 layers (3 dense of 12288, 57 MoE: 128 experts of 3072, 4 per token, one
    # shared MLP of 3072), 64 q heads : 4 KV heads of 128, q/k norms; 57 sparse layers with
    # an indexer of 4 heads x 128 (q, k, their norms); vocab 200064, untied
    d = 6144
    attn = d * 64 * 128 + 2 * d * 4 * 128 + 64 * 128 * d + 2 * 128
    index = d * 4 * 128 + d * 128 + 2 * 128
    experts = 128 * (d * 2 * 3072 + 3072 * d)
    moe = experts + d * 128 + 128 + (d * 2 * 3072 + 3072 * d)   # + router, bias, shared MLP
    dense = d * 2 * 12288 + 12288 * d
    c = count_params(CORPUS["MiniMaxAI--MiniMax-M3"]["config"])
    assert c.total == (2 * 200064 * d + 60 * (attn + 2 * d) + 57 * index + 3 * dense
                       + 57 * moe + d) == 426_174_572_928
    assert c.active == c.total - 57 * experts * 124 // 128


@pytest.mark.parametrize("sglang, deepseek", [
    ("sgl-project--DeepSeek-V4-Flash-FP8", "deepseek-ai--DeepSeek-V4-Flash"),
    ("sgl-project--DeepSeek-V4-Pro-FP8", "deepseek-ai--DeepSeek-V4-Pro"),
])
def test_deepseek_ref_counted_by_architecture(sglang, deepseek):
    """SGLang's V4 FP8 files (model_type deepseek_ref, DeepseekV4ForCausalLM) carry the same
    shapes as deepseek-ai's: counted as DeepSeek V4 by their architecture, saying so."""
    cfg = CORPUS[sglang]["config"]
    assert (cfg["model_type"], cfg["architectures"]) == ("deepseek_ref", ["DeepseekV4ForCausalLM"])
    c = count_params(cfg)
    assert c.model_type == "deepseek_v4"
    assert c.total == count_params(CORPUS[deepseek]["config"]).total
    assert any("architectures[0] 'DeepseekV4ForCausalLM'" in n for n in c.notes)


def test_unknown_model_type_and_architecture_still_refused():
    with pytest.raises(ValueError, match="model_type 'nope': kvlib has no parameter counter"):
        count_params({"model_type": "nope", "architectures": ["NopeForCausalLM"]})


def test_mixtral_router_whole_on_every_rank():
    """vLLM's Mixtral router is a GateLinear (ReplicatedLinear; mixtral.py:111): at TP 8 each
    rank holds all 32 routers (4096 x 8, bf16) and the norms (32 x 2 x 4096 + 4096) whole."""
    from kvlib.serving.weights import checkpoint_weights

    w = checkpoint_weights(CORPUS["mistralai--Mixtral-8x7B-v0.1"]["config"], tp=8)
    assert w.replicated == 32 * 4096 * 8 * 2 + (32 * 2 * 4096 + 4096) * 2 == 2_629_632
    assert w.total == 46_702_792_704 * 2


def _mixed(layers: dict) -> dict:
    return {"model_type": "mixtral", "torch_dtype": "bfloat16", "vocab_size": 100,
            "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
            "num_local_experts": 2, "num_experts_per_tok": 1,
            "quantization_config": {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
                                    "exclude_modules": ["lm_head", "model.embed_tokens",
                                                        "model.layers.0.block_sparse_moe.gate"],
                                    "quantized_layers": layers}}


def test_modelopt_mixed_precision_by_hand():
    """MIXED_PRECISION as nvidia/MiniMax-M3-NVFP4 writes it: NVFP4 routed experts, MXFP8 for
    the other listed linears (e4m3 + one e8m0 byte per 32 inputs), the rest bf16."""
    from kvlib.models.quantization import checkpoint_bytes, read_quantization

    cfg = _mixed({**{f"model.layers.0.self_attn.{p}": {"quant_algo": "MXFP8"}
                     for p in ("q_proj", "k_proj", "v_proj", "o_proj")},
                  **{f"model.layers.0.block_sparse_moe.experts.{e}.w{k}":
                     {"quant_algo": "NVFP4", "group_size": 16} for e in (0, 1) for k in (1, 2, 3)}})
    embed_and_head = 2 * 100 * 64 * 2
    # MXFP8 (out, in): out x in bytes + out x ceil(in / 32) scales
    attn = (64 * 64 + 64 * 2) + 2 * (32 * 64 + 32 * 2) + (64 * 64 + 64 * 2)
    # NVFP4 (out, in): out x in / 2 + out x ceil(in / 16) fp8 scales + 8 (two fp32 scales)
    experts = 2 * ((32 * 64 // 2 + 32 * 4 + 8) * 2 + (64 * 32 // 2 + 64 * 2 + 8))
    router, norms = 64 * 2 * 2, (2 * 64 + 64) * 2
    assert checkpoint_bytes(cfg) == embed_and_head + attn + experts + router + norms == 45_872
    q = read_quantization(cfg)
    assert (q.scheme.name, q.experts.name) == ("mxfp8", "nvfp4")
    assert any("MIXED_PRECISION" in n for n in q.notes)


def test_modelopt_mixed_precision_refuses_a_third_algorithm():
    from kvlib.models.quantization import read_quantization

    cfg = _mixed({"model.layers.0.self_attn.q_proj": {"quant_algo": "MXFP8"},
                  "model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"}})
    with pytest.raises(ValueError, match=r"quantization_config.quantized_layers: the other "
                                         r"modules mix \['FP8 group_size None', 'MXFP8 "
                                         r"group_size None'\]"):
        read_quantization(cfg)


def test_laguna_xs2_by_hand():
    # vocab 100352, d 2048, 40 layers: full attention every 4th with 48 query heads, sliding
    # ones with 64 (num_attention_heads_per_layer), 8 KV heads of 128, q/k norms, a per-head
    # output gate (gating true: d -> heads); layer 0 dense (8192), 39 MoE layers of 256
    # experts of 512, 8 per token, a router with its fp32 score-correction bias, one shared
    # expert of 512; untied head
    d = 2048

    def attn(heads):
        return d * heads * 128 + 2 * d * 8 * 128 + heads * 128 * d + 2 * 128 + d * heads

    experts = 256 * 3 * d * 512
    moe = experts + d * 256 + 256 + 3 * d * 512
    c = count_params(CORPUS["poolside--Laguna-XS.2-FP8"]["config"])
    assert c.total == (2 * 100352 * d + 10 * attn(48) + 30 * attn(64) + 3 * d * 8192
                       + 39 * moe + 40 * 2 * d + d) == 33_442_617_088
    assert c.active == c.total - 39 * experts * 248 // 256 == 3_017_135_872
    # the bias is kept in fp32 (laguna.py:202-205), one per MoE layer
    assert {(f.elements, f.bytes_per) for f in c.fixed} == {(256, 4)} and len(c.fixed) == 39


def test_laguna_s21_per_head_gate_and_dense_first_layer():
    """Laguna-S.2.1 writes gating "per-head" (vLLM: d -> heads, laguna.py:336-341) and
    mlp_layer_types with layer 0 dense: 48 layers, 48 heads on full and 72 on sliding ones."""
    d = 3072
    gates = 12 * d * 48 + 36 * d * 72
    c = count_params(CORPUS["poolside--Laguna-S-2.1-FP8"]["config"])
    assert sum(lin.params for lin in c.linears if lin.name.endswith("g_proj")) == gates
    assert c.parts["mlp"] == 3 * d * 12288


def test_step_3_7_flash_by_hand():
    # vocab 128896, d 4096, 45 layers of 64 query heads (the sliding ones too: no
    # num_sliding_attention_heads), 8 KV heads of 128, q/k norms, the head-wise gate
    # d -> 64; layers 0-2 dense (11264), 3-44 MoE: 288 experts of 1280, 8 per token, an fp32
    # router (288 x 4096) and router_bias, one shared expert of 1280; untied head
    d = 4096
    attn = d * 64 * 128 + 2 * d * 8 * 128 + 64 * 128 * d + 2 * 128 + d * 64
    experts = 288 * 3 * d * 1280
    moe = experts + d * 288 + 288 + 3 * d * 1280
    c = count_params(CORPUS["stepfun-ai--Step-3.7-Flash"]["config"])
    assert c.total == (2 * 128896 * d + 45 * attn + 3 * 3 * d * 11264 + 42 * moe
                       + 45 * 2 * d + d) == 195_844_508_736
    assert c.active == c.total - 42 * experts * 280 // 288 == 10_875_702_336
    # vLLM keeps router and bias in fp32, whole on every rank (step3p5.py:339-352)
    assert sum(f.elements * f.bytes_per for f in c.fixed if f.whole) == 42 * (d * 288 + 288) * 4
    assert c.mtp == 0  # the 3 next-n layers load only for speculative decoding


def test_kimi_k3_by_hand():
    # text_config: d 7168, 93 layers, vocab 163840, untied; 24 MLA layers (4, 8, ..., 92, 93
    # 1-based), 96 heads, q_lora 1536, kv_lora 512, nope 128 + rope 64, v 128, output gate
    # d -> 96 x 128; 69 KDA layers of 96 heads x 128 (P = 12288), conv 4, full-rank gate;
    # layer 0 dense (33792), 92 MoE layers: 896 experts of 3072 over the latent 3584 (down,
    # norm, up), 16 per token, router + fp32 bias, 2 shared experts (6144); attention
    # residuals (attn_res_block_size 12): two norms and two d -> 1 projections a layer, and
    # the output's pair
    d, P = 7168, 12288
    mla = (d * 1536 + 1536 + 1536 * 96 * 192 + d * (512 + 64) + d * 96 * 128 + 512
           + 512 * 96 * (128 + 128) + 96 * 128 * d)
    kda = (3 * d * P + d * P + d * 96 + d * 128 + 128 * P + 3 * P * 4 + P + 96 + 128 + P * d)
    experts = 896 * 3 * 3584 * 3072
    moe = d * 896 + 896 + 3 * d * 6144 + (d * 3584 + 3584 + 3584 * d) + experts
    c = count_params(CORPUS["moonshotai--Kimi-K3"]["config"])
    assert c.model_type == "kimi_linear" and c.towers == "counted"
    assert c.text == (2 * 163840 * d + 24 * mla + 69 * kda + 3 * d * 33792 + 92 * moe
                      + 93 * (2 * d + 2 * d + 2 * d) + d + d + d) == 2_779_484_476_000
    assert c.active == c.text - 92 * experts * 880 // 896 == 105_364_017_760
    # the MoonViT tower vLLM loads: patch 3 x 14 x 14 -> 1024 (no bias), positions 64 x 64,
    # 27 blocks (two RMSNorms, wqkv 1024 -> 3 x 1536, wo, fc0 1024 -> 4096, fc1; no biases),
    # a final RMSNorm, and patchmergerv2 over 2 x 2 x 1024 = 4096 (linear_1, linear_2 ->
    # 7168, post RMSNorm of 7168)
    v = 1024
    block = 2 * v + v * 3 * 1536 + 1536 * v + v * 4096 + 4096 * v
    assert c.parts["vision"] == (3 * 14 * 14 * v + 64 * 64 * v + 27 * block + v
                                 + 4096 * 4096 + 4096 * 7168 + 7168) == 447_358_976


def test_kimi_linear_dsa_refused():
    """Kimi K3.1's DSA layers (dsa_config) are not counted: refused by name."""
    cfg = {**CORPUS["moonshotai--Kimi-K3"]["config"]["text_config"],
           "dsa_config": {"dsa_layers": [4]}}
    with pytest.raises(ValueError, match="dsa_config: Kimi K3.1's DSA layers"):
        count_params(cfg)


def test_step3p7_bad_mlp_layer_types_named():
    cfg = {**CORPUS["stepfun-ai--Step-3.7-Flash"]["config"], "mlp_layer_types": ["moe"] * 45}
    with pytest.raises(ValueError, match=r"mlp_layer_types must give one of \['dense', 'sparse'\]"):
        count_params(cfg)


def test_kimi_k3_tower_defaults_are_vllm_config_class():
    """Absent vision keys read as vLLM's KimiK3VisionConfig defaults (configs/kimi_k3.py:16-44:
    1024 wide, 27 layers, MLP 4096, qkv 1536, patch 14, 64 x 64 positions, RMSNorms, no
    biases, patchmergerv2), which K3's published vision_config repeats: the same tower."""
    cfg = CORPUS["moonshotai--Kimi-K3"]["config"]
    bare = count_params({**cfg, "vision_config": {}})
    assert bare.parts["vision"] == count_params(cfg).parts["vision"] == 447_358_976
    with_biases = count_params({**cfg, "vision_config": {"attn_bias": True, "linear_bias": True}})
    # biases of wqkv (3 x 1536), wo (1024), fc0 (4096) and fc1 (1024) in each of 27 blocks
    assert with_biases.parts["vision"] - bare.parts["vision"] == 27 * (3 * 1536 + 1024 + 4096
                                                                       + 1024)


def test_muse_glimmer_30b_by_hand():
    """Muse-Glimmer-30B (corpus): the text model as vLLM 0.34.0 builds it (muse_glimmer.py),
    d 6656, 52 layers, 32 q heads and 2 KV heads of 128, MLP 19968, vocab 202048, untied;
    the tower 1536 wide, 50 layers, MLP 8960, patches 2 frames x 3 x 14 x 14, 32 x 32
    positions, merged 2 x 2 to 6144, adapter to 4096, projection to 6656."""
    d, n, v, i = 6656, 52, 202048, 19968
    attn = 6656 * 4096 + 2 * 6656 * 256 + 4096 * 6656 + 6656 * 4096  # q, k+v, o, output gate
    assert attn == 85_196_800
    layer = attn + 3 * d * i + 4 * d                        # gated MLP, four sandwich norms
    text = 2 * v * d + n * layer + d                        # embedding and head, final norm
    w, wi = 1536, 8960
    block = 4 * w + (w * 3 * w + 3 * w) + (w * w + w) + (w * wi + wi) + (wi * w + w)
    tower = (2 * 3 * 14 * 14 * w + 32 * 32 * w + 4 * w + 50 * block
             + 6144 * 4096 + 4096 * 4096 + 4096 * d)         # adapter fc1/fc2, projection
    c = count_params(CORPUS["meta-models--Muse-Glimmer-30B"]["config"])
    assert (c.text, c.parts["vision"]) == (text, tower) == (27_854_780_928, 1_921_845_760)
    assert c.total == c.active + tower == 29_776_626_688 and c.towers == "counted"
    # only the tower's q/k/v and o are vLLM's parallel layers, o_proj's bias whole (a
    # RowParallelLinear adds it after the reduction); the rest is whole on each rank
    split = 50 * ((w * 3 * w + 3 * w) + w * w)
    # the final norm fp32 (muse_glimmer.py:1056-1058); the tower's attention split where TP
    # divides its 16 heads, else whole on every rank (vision.py:141-156, muse_glimmer.py:360)
    assert [(f.elements, f.bytes_per, f.whole, f.heads) for f in c.fixed] == [
        (d, 4, True, 0), (tower - split, 2, True, 0), (split, 2, False, 16)]
    cfg = CORPUS["meta-models--Muse-Glimmer-30B"]["config"]
    w8, w32 = checkpoint_weights(cfg, tp=8), checkpoint_weights(cfg, tp=32)
    # whole on every rank: the norms, 4 x 52 x 6656 in bf16 and the final 6656 in fp32, and the
    # tower's whole part; at TP 32 (16 heads do not divide) the attention too
    assert w8.replicated == 4 * n * d * 2 + d * 4 + (tower - split) * 2
    assert w32.replicated == w8.replicated + split * 2


def test_muse_glimmer_refusals_name_the_field():
    cfg = CORPUS["meta-models--Muse-Glimmer-30B"]["config"]
    with pytest.raises(ValueError, match="out_hidden_size=4096 .* 6144"):
        count_params({**cfg, "out_hidden_size": 4096})
    with pytest.raises(ValueError, match="hidden_activation='gelu'"):
        count_params({**cfg, "text_config": {**cfg["text_config"], "hidden_activation": "gelu"}})
    with pytest.raises(ValueError, match=r"vision_config\.layer_types must list the 50"):
        count_params({**cfg, "vision_config": {**cfg["vision_config"], "layer_types": []}})


def test_gemma_3n_e4b_by_hand():
    """Gemma 3n E4B (bundled; Gemma3nConfig's defaults, google/gemma-3n-E4B's shapes) as vLLM
    0.34.0 loads it (gemma3n.py, gemma3n_mm.py): text d 2048, 35 layers, 8 q heads and 2 KV
    heads of 256, MLP 16384, vocab 262400 (head tied), per-layer embeddings 262144 x 35 x
    256, AltUp of 4 inputs, LAuReL rank 64, the last 15 layers sharing KV (q and o only);
    the audio tower 1536 wide, 12 conformer blocks; the timm encoder (MobileNetV5-300M,
    294,126,912 in timm 1.0.31); the two embedders."""
    d, n, hd, k, ple = 2048, 35, 256, 4, 256
    altup = k * k + k * k * k + d * k + d                   # coefs, router, fp32 output scale
    common = altup + 3 * d * 16384 + 2 * d * 64 + 2 * d * ple + 7 * d  # MLP, LAuReL, PLE, norms
    full = d * 8 * hd + 2 * d * 2 * hd + 8 * hd * d + 2 * hd  # q, k, v, o, q/k norms
    shared = d * 8 * hd + 8 * hd * d + hd                   # q, o, q norm
    text = (262400 * d + 262144 * n * ple + d * n * ple + 2 * 3 * d * d
            + 20 * (common + full) + 15 * (common + shared) + ple + d)
    a = 1536
    sscp = (1 * 128 * 9 + 128) + (128 * 32 * 9 + 32) + 32 * 32 * a  # 128 -> 64 -> 32 bins
    block = (2 * (a * 4 * a + 4 * a * a + 2 * a)             # two feed-forwards
             + a + 3 * a * a + a * a + a // 8 + a * a + a   # attention: q/k/v, pos, post
             + a + a * 2 * a + a * 5 + a + a * a + a)      # light conv, block norm
    audio = sscp + 12 * block
    embedders = (128 * 2048 + 2 * 2048 + 2048 * d) + (128 * a + 2 * a + a * d)
    c = count_params(bundled_config("gemma-3n-e4b"))
    assert (c.text, audio) == (text, 681_348_640) and text == 6_835_235_568
    assert c.parts["vision"] == audio + embedders + 294_126_912
    assert c.total == 7_818_517_072 and c.towers == "counted"
    # the audio tower and the timm encoder are plain modules, whole on every TP rank
    whole = {f.name: f.elements for f in c.fixed if f.part == "vision"}
    assert whole == {"model.vision_tower": 294_126_912, "model.audio_tower": audio}


def test_gemma_3n_refusals_name_the_field():
    cfg = bundled_config("gemma-3n-e4b")
    with pytest.raises(ValueError, match=r"vision_config\.architecture='mobilenetv5_base'"):
        count_params({**cfg, "vision_config": {**cfg["vision_config"],
                                               "architecture": "mobilenetv5_base"}})
    with pytest.raises(ValueError, match=r"text_config\.intermediate_size must be"):
        count_params({**cfg, "text_config": {**cfg["text_config"], "intermediate_size": [1]}})
    with pytest.raises(ValueError, match=r"audio_config\.sscp_conv_kernel_size"):
        count_params({**cfg, "audio_config": {**cfg["audio_config"],
                                              "sscp_conv_kernel_size": [3, 3]}})


def test_kimi_k2_5_tower_by_hand():
    """Kimi K2.5's MoonViT tower and projector, which vLLM 0.34.0 loads (kimi_k25.py:349-371),
    read as its Kimi_K25VisionConfig gives them: width 1152, MLP 4304, patch 14, 27 layers,
    64 x 64 positions, qkv the width, LayerNorms and biases (vLLM's defaults), the
    "patchmerger" projector over 2 x 2 merged patches (4608) to the text width 7168."""
    d, i, w, t = 1152, 4304, 4608, 7168
    patch = 3 * 14 * 14 * d + d
    layer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * i + i) + (i * d + d)
    projector = 2 * d + (w * w + w) + (w * t + t)
    tower = patch + 64 * 64 * d + 27 * layer + 2 * d + projector
    for name in ("moonshotai--Kimi-K2.5", "nvidia--Kimi-K2.6-NVFP4"):
        c = count_params(CORPUS[name]["config"])
        assert (c.towers, c.parts["vision"]) == ("counted", tower) and tower == 471_143_920
    c = count_params(bundled_config("kimi-k2.5"))
    assert c.total - c.text == 471_143_920 and c.active == 32_861_500_928  # tower not active
    # held whole on every rank: the patch conv, positions, norms and the ReplicatedLinear
    # projector; wqkv, wo, fc0 and fc1 are vLLM's parallel layers (kimi_k25_vit.py:316-410)
    # projector, and the row-parallel wo's and fc1's biases (added after the reduction)
    whole = patch + 64 * 64 * d + 27 * 2 * 2 * d + 2 * d + projector + 27 * 2 * d
    # split by TP where TP divides the tower's 16 heads, else whole (kimi_k25_vit.py:368)
    assert [(f.elements, f.whole, f.heads) for f in c.fixed if f.part == "vision"] == [
        (whole, True, 0), (tower - whole, False, 16)] and whole == 59_863_936
    # and the text model's fp32 e_score_correction_bias, one of 384 a MoE layer (layers 1-60;
    # deepseek_v2.py:327-330)
    assert [(f.elements, f.bytes_per) for f in c.fixed if f.part == "router"] == [(384, 4)] * 60


def test_kimi_k2_5_legacy_key_that_vllm_does_not_read_is_refused():
    cfg = CORPUS["moonshotai--Kimi-K2.5"]["config"]
    with pytest.raises(ValueError, match=r"vision_config\.vt_hidden_size=1024, but vLLM"):
        count_params({**cfg, "vision_config": {**cfg["vision_config"], "vt_hidden_size": 1024}})


def test_an_absent_kv_head_count_is_the_config_class_default():
    """Mistral 7B's config without num_key_value_heads: MistralConfig fills 8
    (configuration_mistral.py), which vLLM 0.34.0 reads, not the 32 query heads. Per layer the
    k and v projections are 4096 x (8 x 128) each; with 32 KV heads they would be 4096 x 4096:
    32 layers x 2 x 4096 x (4096 - 1024) = 805,306,368 parameters too many."""
    cfg = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
           "tie_word_embeddings": False}
    with_key = count_params({**cfg, "num_key_value_heads": 8})
    without = count_params(cfg)
    assert without.total == with_key.total
    assert count_params({**cfg, "num_key_value_heads": 32}).total - without.total \
        == 32 * 2 * 4096 * (4096 - 1024) == 805_306_368
    assert any("num_key_value_heads" in n and "8" in n for n in without.notes)
