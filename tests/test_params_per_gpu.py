"""Weights per GPU: what every TP rank holds whole, worked by hand from the published configs
(vLLM 0.34.0's layers: a ReplicatedLinear, a parameter built in a dtype of its own, a vision
tower that falls back to data parallelism). tests/test_quant_oracle.py measures the same
models built by vLLM's own classes on the meta device. Bytes are exact integers.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from kvlib.models.catalog import bundled_config
from kvlib.models.params import count_params
from kvlib.models.quantization import checkpoint_bytes
from kvlib.serving.weights import checkpoint_weights

CORPUS = Path(__file__).resolve().parent / "fixtures" / "configs" / "corpus-2026.json.gz"


def corpus(name: str) -> dict:
    return json.loads(gzip.open(CORPUS).read())[name]["config"]


def test_kimi_k3_whole_on_every_rank_by_hand():
    """moonshotai/Kimi-K3 at TP 8: hidden 7168, 93 layers (69 KDA of 96 heads x 128, 24 MLA
    with q_lora 1536 and kv_lora 512 + rope 64), 92 MoE layers of 896 experts over the latent
    3584, the vision tower's 12 heads. Whole on every rank:

    * the routers, 92 x 896 x 7168 bf16, and their fp32 biases 92 x 896 x 4;
    * routed_expert_down_proj and _up_proj (ReplicatedLinear, kimi_k3/nvidia/model.py:
      479-503), 92 x 2, in bf16 as vLLM holds them: it rewrites K3's compressed-tensors
      mxfp4-pack-quantized to mxfp4, which quantizes the routed experts only
      (models/config.py:786-816, layers/quantization/mxfp4.py:92-108), 3584 x 7168 x 2 B;
    * KDA's f_a_proj (the replicated shard of in_proj_qkvgfab, nvidia/kda.py:115-131), 69 x
      7168 x 128 bf16; MLA's q_a and kv_a, 24 x 7168 x (1536 + 576) bf16;
    * the attention-residual projections d -> 1, quant_config=None (model.py:834-846,
      1094-1100): 93 x 2 + 1, bf16;
    * the whole tower, 447,358,976 elements bf16: 12 heads do not divide TP 8
      (is_vit_use_data_parallel, model_executor/models/vision.py:141-156);
    * the norms: 93 x 4 x 7168 (input, post-attention and the two residual norms), the final
      and the output residual norm, 69 x 128 (KDA o_norm), 24 x (1536 + 512), 92 x 3584
      (routed_expert_norm) = 3,068,544, bf16.

    At TP 4 the 12 heads divide: the tower's wqkv, wo, fc0 and fc1 (27 x (1024 x 4608 + 1536 x
    1024 + 2 x 1024 x 4096) = 396,361,728) are split and leave the whole part."""
    cfg = corpus("moonshotai--Kimi-K3")
    norms = 93 * 4 * 7168 + 2 * 7168 + 69 * 128 + 24 * (1536 + 512) + 92 * 3584
    assert norms == 3_068_544
    whole = (92 * 896 * 7168 * 2 + 92 * 896 * 4
             + 92 * 2 * 3584 * 7168 * 2
             + 69 * 7168 * 128 * 2 + 24 * 7168 * (1536 + 576) * 2
             + (93 * 2 + 1) * 7168 * 2 + 447_358_976 * 2 + norms * 2)
    w8 = checkpoint_weights(cfg, tp=8)
    assert w8.replicated == whole == 12_392_850_688
    assert set(w8.whole) == {"routers", "latent-MoE projections", "KDA gate projections",
                             "MLA down projections", "attention-residual projections",
                             "vision tower", "norms"}
    split = 27 * (1024 * 4608 + 1536 * 1024 + 2 * 1024 * 4096)
    assert checkpoint_weights(cfg, tp=4).replicated == whole - split * 2
    assert split == 396_361_728


def test_gemma3n_altup_and_per_layer_inputs_whole_by_hand():
    """Gemma 3n E4B (bundled) at TP 2: per layer the AltUp correction (4 -> 4), prediction
    (4 -> 16) and modality router (2048 -> 4), the per_layer_input_gate (2048 -> 256) and
    per_layer_projection (256 -> 2048) are ReplicatedLinear (gemma3n.py:89-110, 490-507), bf16,
    and AltUp's correct_output_scale (2048) fp32: 2,121,888 B a layer, 74,266,080 for the 35;
    the timm encoder and the audio tower (plain modules) and the norms whole too."""
    cfg = bundled_config("gemma-3n-e4b")
    per_layer = (4 * 4 + 4 * 16 + 2048 * 4 + 2 * 2048 * 256) * 2 + 2048 * 4
    assert 35 * per_layer == 74_266_080
    norms = count_params(cfg).parts["norms"]
    w = checkpoint_weights(cfg, tp=2)
    assert w.replicated == 35 * per_layer + (294_126_912 + 681_348_640 + norms) * 2
    assert w.whole == ("AltUp and per-layer-input projections", "vision tower", "audio tower",
                       "norms")


def test_gemma4_31b_v_shard_by_hand():
    """nvidia/Gemma-4-31B-IT-NVFP4: the 10 full-attention layers set attention_k_eq_v and ship
    no v_proj; vLLM 0.34.0 builds their v shard all the same (gemma4.py:89-121, 440-454) and
    excludes the attention from NVFP4 here, so the GPU holds 10 x 5376 x (4 x 512) bf16 more
    than the checkpoint: 220,200,960 B."""
    cfg = corpus("nvidia--Gemma-4-31B-IT-NVFP4")
    r = count_params(cfg)
    v = [x for x in r.linears if x.name.endswith("v_proj")]
    full = [x for x in v if x.out_features == 4 * 512]
    assert len(full) == 10 and {(x.in_features, x.out_features) for x in full} == {(5376, 2048)}
    assert sum(x.params for x in full) * 2 == 220_200_960
    assert any("attention_k_eq_v" in n for n in r.notes)


def test_fp32_routers_and_biases_by_hand():
    """Routers vLLM builds with params_dtype float32 and the e_score_correction_bias it always
    builds in fp32, against the same count at the checkpoint's bf16: MiniMax-M2.5 (62 layers,
    3072 -> 256: minimax_m2.py:85-117) 62 x 256 x (3072 + 1) x 2 B more = 97,549,312;
    DeepSeek V3 (58 MoE layers of 256: deepseek_v2.py:327-330) 58 x 256 x 2 = 29,696;
    Kimi-K2-Instruct (60 of 384) 46,080; MiMo-V2-Flash (47 MoE layers, 4096 -> 256,
    mimo_v2.py:159-171: moe_router_dtype float32 when absent) 47 x 256 x 4097 x 2 =
    98,590,208."""
    for name, more in (("MiniMaxAI--MiniMax-M2.5", 62 * 256 * 3073 * 2),
                       ("deepseek-ai--DeepSeek-V3", 58 * 256 * 2),
                       ("moonshotai--Kimi-K2-Instruct", 60 * 384 * 2),
                       ("XiaomiMiMo--MiMo-V2-Flash", 47 * 256 * 4097 * 2)):
        r = count_params(corpus(name))
        fp32 = sum(f.elements for f in r.fixed if f.part == "router" and f.bytes_per == 4)
        assert fp32 * 2 == more, name
    assert 62 * 256 * 3073 * 2 == 97_549_312 and 47 * 256 * 4097 * 2 == 98_590_208
    # MiMo's moe_router_dtype, when a config gives bfloat16, keeps the router a bf16 linear
    cfg = {**corpus("XiaomiMiMo--MiMo-V2-Flash"), "moe_router_dtype": "bfloat16"}
    assert checkpoint_bytes(corpus("XiaomiMiMo--MiMo-V2-Flash")) - checkpoint_bytes(cfg) \
        == 47 * 256 * 4096 * 2


def test_dsa_indexer_unquantized_by_hand():
    """DeepSeek-V3.2 (FP8, 128 x 128 blocks): vLLM fuses the indexer's wk (7168 -> 128) with
    weights_proj (7168 -> 64) into wk_weights_proj with quant_config=None (deepseek_v2.py:
    710-718) and keeps k_norm (weight and bias of 128) in fp32 (:720). Per layer, against wk
    in FP8 (7168 x 128 + 56 x 1 fp32 block scales = 917,728 B): 1,835,008 - 917,728 =
    917,280 B more, and 2 x 128 x 2 = 512 for the norm; 61 layers: 55,985,312. GLM-5 (6144,
    78 indexers): 78 x (6144 x 128 - 48 x 4 + 512) = 61,366,656."""
    for name, layers, d in (("deepseek-ai--DeepSeek-V3.2", 61, 7168), ("zai-org--GLM-5-FP8", 78,
                                                                        6144)):
        r = count_params(corpus(name))
        wk = [f for f in r.fixed if f.name.endswith("indexer.wk")]
        norm = [f for f in r.fixed if f.name.endswith("indexer.k_norm")]
        assert {(f.elements, f.bytes_per, f.whole) for f in wk} == {(d * 128, 2, True)}
        assert {(f.elements, f.bytes_per) for f in norm} == {(256, 4)}
        assert len(wk) == len(norm) == layers
    assert 61 * (7168 * 128 * 2 - (7168 * 128 + 56 * 4) + 512) == 55_985_312
    assert 78 * (6144 * 128 - 48 * 4 + 512) == 61_366_656


def test_biases_of_row_parallel_and_replicated_linears_whole_by_hand():
    """openai/gpt-oss-120b at TP 8: a RowParallelLinear adds its bias once, after the
    reduction, so every rank holds it whole (o_proj's 2880 a layer; the routed experts' w2_bias,
    128 x 2880 a layer), as the replicated router's (128). Whole on every rank: the routers
    36 x 2880 x 128, those biases 36 x (128 + 2880 + 128 x 2880) and the norms 36 x 2 x 2880 +
    2880, bf16."""
    w = checkpoint_weights(corpus("openai--gpt-oss-120b"), tp=8)
    assert w.replicated == (36 * 2880 * 128 + 36 * (128 + 2880 + 128 * 2880)
                            + 36 * 2 * 2880 + 2880) * 2 == 53_721_216
    assert w.whole == ("routers", "biases of row-parallel and replicated linears", "norms")


def test_qk_norms_whole_by_hand():
    """Qwen/Qwen3-32B-FP8 at TP 8: the per-head q and k RMSNorms (128 each, vLLM's RMSNorm of
    head_dim) are whole on every rank like the layer norms: 64 x (2 x 5120 + 2 x 128) + 5120
    norm weights, bf16."""
    w = checkpoint_weights(corpus("Qwen--Qwen3-32B-FP8"), tp=8)
    assert w.replicated == (64 * (2 * 5120 + 2 * 128) + 5120) * 2 == 1_353_728


def test_gemma4_tower_and_router_whole_by_hand():
    """google/gemma-4-26B-A4B at TP 8: vLLM builds the vision tower with transformers' classes
    (AutoModel.from_config, gemma4_mm.py:1120) and its embedder's projection as a
    ReplicatedLinear: all 572,794,416 tower parameters on every rank; the router's proj
    (2816 -> 128), scale (2816) and per_expert_scale (128) whole too, 30 layers, bf16."""
    cfg = corpus("google--gemma-4-26B-A4B")
    r = count_params(cfg)
    assert [(f.elements, f.whole) for f in r.fixed if f.part == "vision"] == [(572_794_416, True)]
    router = 30 * (2816 * 128 + 2816 + 128)
    w = checkpoint_weights(cfg, tp=8)
    assert w.replicated == (572_794_416 + router + r.parts["norms"]) * 2
    assert w.whole == ("routers", "vision tower", "norms")
