"""Checkpoint formats read from quantization_config as vLLM 0.34.0 reads them (issue 42, "read
what vLLM reads"): five published configs of corpus-2026.json.gz that kvlib refused.

* compressed-tensors with several config groups, each module matched to its group as vLLM's
  ``CompressedTensorsConfig`` matches it (RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8);
* DeepSeek V4 with ModelOpt's ``moe_quant_algo`` NVFP4 (nvidia/DeepSeek-V4-Flash-NVFP4, -Pro-);
* ModelOpt MIXED_PRECISION mixing FP8 and W4A16_NVFP4 (nvidia/Qwen3.6-27B-NVFP4, -35B-A3B-);
* a config naming no quant_method (Qwen/Qwen3-32B-FP8-Static-PerTensor), which vLLM serves
  with no method at all: refused.

Independent values: each layer's bytes worked by hand from the storage layout (written out
below), and vLLM 0.34.0's own model classes built on the meta device from the same published
configs (its quantization config choosing every layer's parameters: the oracle's boot.py and
drive.py, ``initialize_model``; the totals are quoted here with what differs, term by term).
Bytes are exact integers; GB = 1e9 bytes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_plan import run, run_json

from kvlib.models.params import count_params
from kvlib.models.quantization import (
    _fp8_moe_block,
    allocated_linear_bytes,
    checkpoint_bytes,
    linear_bytes,
    mxfp4_moe_padding,
    read_quantization,
    vllm_module,
    vllm_quantization,
)
from kvlib.serving.weights import _kda_padding, checkpoint_weights

CORPUS = Path(__file__).resolve().parent / "fixtures" / "configs" / "corpus-2026.json.gz"


def corpus(name: str) -> dict:
    return json.loads(gzip.open(CORPUS).read())[name]["config"]


def without_quantization(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k != "quantization_config"}


def text_bytes(cfg: dict) -> int:
    """checkpoint_bytes less a counted vision tower (bf16: vLLM quantizes no tower here)."""
    r = count_params(cfg)
    return checkpoint_bytes(cfg) - (r.parts["vision"] * 2 if r.towers == "counted" else 0)


# Mixtral, 1 layer: hidden 64, 2 heads and 1 KV head of 32, 2 experts of 32, vocab 100, bf16.
# Its linears (in -> out): q 64 -> 64, k and v 64 -> 32, o 64 -> 64, per expert w1 and w3
# 64 -> 32 and w2 32 -> 64, router 64 -> 2, lm_head 64 -> 100.
TINY = {"model_type": "mixtral", "torch_dtype": "bfloat16", "vocab_size": 100,
        "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32,
        "num_local_experts": 2, "num_experts_per_tok": 1}
EMBED = 100 * 64 * 2           # bf16 embedding
HEAD = 100 * 64 * 2            # bf16 lm_head
ROUTER = 64 * 2 * 2            # bf16, never quantized
NORMS = (64 + 64 + 64) * 2     # two per layer and the final one, bf16


def test_vllm_module_names():
    """The module vLLM builds a kvlib linear into (packed_modules_mapping: qwen3_5.py:305-313,
    479-482; models/deepseek_v4/nvidia/model.py:1332-1336), and the name vLLM asks for one
    routed expert's projection (compressed_tensors_moe.py:36-43)."""
    assert vllm_module("model.layers.3.self_attn.k_proj") == (
        "model.layers.3.self_attn.qkv_proj", ("model.layers.3.self_attn.q_proj",
                                              "model.layers.3.self_attn.k_proj",
                                              "model.layers.3.self_attn.v_proj"))
    assert vllm_module("model.layers.0.attn.wkv", "deepseek_v4")[0] == \
        "model.layers.0.attn.fused_wqa_wkv"
    assert vllm_module("model.layers.2.attn.compressor.wkv", "deepseek_v4")[0] == \
        "model.layers.2.attn.compressor.fused_wkv_wgate"
    # MiniMax M3's one qkv_proj GEMM holds the indexer's k (models/minimax_m3/nvidia/
    # model.py:900-912); DeepSeek V3.2's indexer.wk is a linear of its own
    assert vllm_module("model.layers.3.self_attn.indexer.wk", "minimax_m3")[0] == \
        "model.layers.3.self_attn.qkv_proj"
    assert vllm_module("model.layers.3.self_attn.indexer.wk", "deepseek_v32") == \
        ("model.layers.3.self_attn.indexer.wk", ())
    assert vllm_module("model.layers.0.ffn.experts.w1") == ("model.layers.0.ffn.experts.0.w1",
                                                            ())
    assert vllm_module("model.layers.0.linear_attn.in_proj_qkvz")[1] == (
        "model.layers.0.linear_attn.in_proj_qkv", "model.layers.0.linear_attn.in_proj_z")
    assert vllm_module("model.layers.0.self_attn.o_proj") == ("model.layers.0.self_attn.o_proj",
                                                              ())


# --- compressed-tensors, several config groups --------------------------------------------

FP8_BLOCK = {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [32, 32],
             "symmetric": True, "dynamic": False}
NVFP4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
         "symmetric": True, "dynamic": False, "scale_dtype": "torch.float8_e4m3fn"}
INT8_CHANNEL = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}


def _ct(groups: dict, ignore=()) -> dict:
    return {**TINY, "quantization_config": {
        "quant_method": "compressed-tensors", "format": "mixed-precision",
        "ignore": list(ignore), "config_groups": groups}}


def test_compressed_tensors_groups_by_hand():
    """group_0 (FP8, 32 x 32 blocks) targets vLLM's fused ``qkv_proj`` by regex, group_1
    (NVFP4) the routed experts as vLLM asks for them (``experts.0.w1``), group_2 (INT8 per
    channel) o_proj by its path; lm_head is targeted by none and stays bf16.

    * q_proj 64 -> 64: 4,096 fp8 values + 2 x 2 blocks x 2 B (bf16 scales) = 4,104;
      k_proj and v_proj 64 -> 32: 2,048 + 1 x 2 blocks x 2 B = 2,052 each;
    * o_proj 64 -> 64 in INT8: 4,096 + 64 bf16 scales x 2 B = 4,224;
    * each expert linear (64 -> 32 or 32 -> 64): 2,048 values x 4 bits = 1,024 B + 2,048 / 16
      = 128 fp8 scales + 2 fp32 global scales (8 B) = 1,160; x 3 linears x 2 experts = 6,960.
    """
    cfg = _ct({"group_0": {"format": "float-quantized", "weights": FP8_BLOCK,
                           "targets": ["re:.*self_attn\\.qkv_proj$"]},
               "group_1": {"format": "nvfp4-pack-quantized", "weights": NVFP4,
                           "targets": ["re:.*experts.*\\.w[123]$"]},
               "group_2": {"format": "int-quantized", "weights": INT8_CHANNEL,
                           "targets": ["model.layers.0.self_attn.o_proj"]}})
    q = read_quantization(cfg)
    assert q.bytes(64, 64, "model.layers.0.self_attn.q_proj") == 4096 + 4 * 2 == 4104
    assert q.bytes(64, 32, "model.layers.0.self_attn.v_proj") == 2048 + 2 * 2 == 2052
    assert q.bytes(64, 64, "model.layers.0.self_attn.o_proj") == 4096 + 64 * 2 == 4224
    assert q.bytes(32, 64, "model.layers.0.block_sparse_moe.experts.w2") == 1024 + 128 + 8
    assert q.scheme_for("lm_head", "lm_head") is None
    assert checkpoint_bytes(cfg) == (EMBED + HEAD + 4104 + 2 * 2052 + 4224 + 6960 + ROUTER
                                     + NORMS) == 45_632


def test_compressed_tensors_match_order_as_vllm():
    """vLLM tries every target on the module's name before any class name
    (utils.py:101-108): o_proj named by group_1 is FP8 though group_0's ``Linear`` comes first;
    ``Linear`` reaches the routed experts too (compressed_tensors.py:221-232). A fused module
    matched through its shards needs every shard (utils.py:133-157): q and k listed without v
    leave qkv_proj unquantized; ``ignore`` wins over both."""
    per_channel_fp8 = {"num_bits": 8, "type": "float", "strategy": "channel"}
    cfg = _ct({"group_0": {"weights": INT8_CHANNEL, "targets": ["Linear"]},
               "group_1": {"weights": per_channel_fp8, "targets": ["re:.*o_proj$"]}})
    q = read_quantization(cfg)
    assert "float8" in q.scheme_for("model.layers.0.self_attn.o_proj").name
    assert "int8" in q.scheme_for("model.layers.0.block_sparse_moe.experts.w1").name
    assert q.scheme_for("lm_head", "lm_head") is None  # ParallelLMHead: no "Linear" in its class
    shards = [f"model.layers.0.self_attn.{p}_proj" for p in "qk"]
    cfg = _ct({"group_0": {"weights": INT8_CHANNEL, "targets": shards},
               "group_1": {"weights": per_channel_fp8, "targets": ["re:.*o_proj$"]}})
    q = read_quantization(cfg)
    assert q.scheme_for("model.layers.0.self_attn.q_proj") is None
    cfg["quantization_config"]["config_groups"]["group_0"]["targets"].append(
        "model.layers.0.self_attn.v_proj")
    assert "int8" in read_quantization(cfg).scheme_for("model.layers.0.self_attn.k_proj").name
    cfg["quantization_config"]["ignore"] = ["re:.*o_proj$"]
    assert read_quantization(cfg).scheme_for("model.layers.0.self_attn.o_proj") is None


def test_one_compressed_tensors_group_quantizes_only_its_targets():
    """One group is matched the same way: targeting the experts alone leaves attention in
    bf16 (q, k, v, o: 4,096 + 2,048 + 2,048 + 4,096 elements x 2 B = 24,576), the experts NVFP4
    (6,960 as above)."""
    cfg = _ct({"group_0": {"format": "nvfp4-pack-quantized", "weights": NVFP4,
                           "targets": ["re:.*experts.*"]}})
    assert checkpoint_bytes(cfg) == EMBED + HEAD + 24_576 + 6960 + ROUTER + NORMS == 57_776


def test_compressed_tensors_expert_projections_in_two_groups_are_refused():
    """vLLM asks for all three of an expert's projections and refuses differing schemes
    (compressed_tensors_moe.py:45-55): w2 in group_1, w1 and w3 in none."""
    cfg = _ct({"group_0": {"weights": INT8_CHANNEL, "targets": ["re:.*self_attn.*"]},
               "group_1": {"weights": NVFP4, "targets": ["re:.*experts.*\\.w2$"]}})
    with pytest.raises(ValueError, match=r"the routed experts model.layers.0.block_sparse_moe."
                                         r"experts match w1: no group, w3: no group, w2: "
                                         r"group_1; vLLM 0.34.0 refuses"):
        checkpoint_bytes(cfg)


def test_redhat_deepseek_v4_flash_nvfp4_fp8():
    """RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8: group_0 (FP8 128 x 128 blocks) targets
    ``re:.*attn.*(fused_wqa_wkv|wq_b|wo_a|wo_b)$``, group_1 (NVFP4) ``re:.*ffn.*(gate|up|down)
    _proj$``. As vLLM 0.34.0 matches them: the attention's fused wq_a + wkv, wq_b, wo_a, wo_b
    and the indexer's wq_b are FP8; the shared experts (gate_up_proj, down_proj) NVFP4; the
    routed experts, which vLLM looks up as ``ffn.experts.0.w1`` / ``w3`` / ``w2``, match no
    group and are built unquantized in bf16 (UnquantizedFusedMoEMethod), as the compressors,
    the indexer's weights_proj, the routers and lm_head.

    By hand, each quantized linear against its bf16 bytes (hidden 4096, 43 layers, 21 with an
    indexer; FP8 block scales bf16, 2 B per 128 x 128 block):
    * wq_a 4096 -> 1024: 4,194,304 + 8 x 32 blocks x 2 = 4,194,816; wkv 4096 -> 512:
      2,097,152 + 4 x 32 x 2 = 2,097,408; wq_b 1024 -> 32768: 33,554,432 + 256 x 8 x 2 =
      33,558,528; wo_a 4096 -> 8192: 33,554,432 + 64 x 32 x 2 = 33,558,528; wo_b 8192 -> 4096:
      the same; indexer wq_b 1024 -> 8192: 8,388,608 + 64 x 8 x 2 = 8,389,632;
    * shared experts gate and up 4096 -> 2048: 4,194,304 + 524,288 fp8 scales + 8 =
      4,718,600 each; down 2048 -> 4096: the same 4,718,600.
    """
    cfg = corpus("RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8")
    bf16 = checkpoint_bytes(without_quantization(cfg))
    fp8 = {(4096, 1024): 4_194_816, (4096, 512): 2_097_408, (1024, 32768): 33_558_528,
           (4096, 8192): 33_558_528, (8192, 4096): 33_558_528}
    saved = 43 * sum(2 * i * o - b for (i, o), b in fp8.items())
    saved += 21 * (2 * 1024 * 8192 - 8_389_632)
    saved += 43 * 3 * (2 * 4096 * 2048 - 4_718_600)
    assert checkpoint_bytes(cfg) == bf16 - saved == 562_414_226_788  # 562.41 GB
    # routed experts in bf16: 43 layers x 256 experts x 3 x 4096 x 2048 x 2 B = 554.05 GB
    q = read_quantization(cfg)
    assert q.scheme_for("model.layers.7.ffn.experts.w1", "experts") is None
    # vLLM 0.34.0's own classes on the meta device: 562,951,680,612 B of parameters and
    # buffers = kvlib's + two RoPE cos/sin caches (1,048,576 x 64 fp32 each) + 291,456 FP8
    # block scales vLLM keeps in fp32 where the checkpoint has bf16 (43 x 6,528 + 21 x 512)
    assert 562_951_680_612 == 562_414_226_788 + 2 * 1_048_576 * 64 * 4 + 291_456 * 2
    notes = " ".join(q.notes)
    assert "group_1" in notes and "<experts>.0.<projection>" in notes
    # the plan says which linears stay bf16: lm_head, and w1, w3, w2 of 43 layers' experts
    from kvlib.serving.weights import checkpoint_weights
    w = checkpoint_weights(cfg, tp=8)
    assert w.total == 562_414_226_788
    assert any(n.endswith("config): 1 lm_head linear, 129 routed-expert linears")
               for n in w.notes)


# --- DeepSeek V4 with ModelOpt NVFP4 experts ------------------------------------------------

@pytest.mark.parametrize("name, layers, experts, hidden, inter, vllm_meta, rope_caches", [
    ("nvidia--DeepSeek-V4-Flash-NVFP4", 43, 256, 4096, 2048, 165_200_568_540, 2),
    ("nvidia--DeepSeek-V4-Pro-NVFP4", 61, 384, 7168, 3072, 899_364_025_292, 1),
])
def test_deepseek_v4_nvfp4_experts(name, layers, experts, hidden, inter, vllm_meta,
                                   rope_caches):
    """``quant_method`` fp8 with ``moe_quant_algo`` NVFP4: vLLM 0.34.0's DeepSeek V4 config
    builds the routed experts NVFP4 (ModelOptNvFp4FusedMoE, group 16) and every other linear as
    without it (FP8 128 x 128, e8m0 scales since expert_dtype is fp4). So against the same
    config without moe_quant_algo (MXFP4 experts: 4 bits + one e8m0 byte per 32 inputs), each
    expert linear of in x out weights stores in x out / 16 fp8 scales instead of in x out / 32,
    plus two fp32 per-tensor scales: in x out / 32 + 8 bytes more, x 3 linears x experts x
    layers. vLLM's own classes on the meta device hold exactly kvlib's bytes plus their RoPE
    cos/sin caches (1,048,576 x 64 fp32 each)."""
    cfg = corpus(name)
    mxfp4 = json.loads(json.dumps(cfg))
    mxfp4["quantization_config"].pop("moe_quant_algo")
    assert read_quantization(mxfp4).experts.name == "mxfp4"
    q = read_quantization(cfg)
    assert (q.method, q.experts.name, q.experts.group, q.scheme.scale_bytes) == \
        ("deepseek_v4_fp8", "nvfp4", 16, 1)
    more = layers * experts * 3 * (hidden * inter // 32 + 8)
    total = checkpoint_bytes(cfg)
    assert total == checkpoint_bytes(mxfp4) + more
    assert total == vllm_meta - rope_caches * 1_048_576 * 64 * 4
    assert any("moe_quant_algo='NVFP4'" in n for n in q.notes)


def test_deepseek_v4_moe_quant_algo_as_vllm_reads_it():
    """fp8 experts (expert_dtype "fp8") never read moe_quant_algo (quant_config.py:228-230);
    an ignore pattern that keeps some layers' experts in MXFP4 is refused by name."""
    cfg = corpus("nvidia--DeepSeek-V4-Flash-NVFP4")
    fp8 = dict(cfg, expert_dtype="fp8")
    assert read_quantization(fp8).experts is None
    bad = json.loads(json.dumps(cfg))
    bad["quantization_config"]["ignore"].append("layers.4*.ffn.experts")
    with pytest.raises(ValueError, match=r"quantization_config.ignore entry 'layers.4\*.ffn."
                                         r"experts' keeps some routed experts in MXFP4"):
        read_quantization(bad)


# --- ModelOpt MIXED_PRECISION ---------------------------------------------------------------

def _mixed(layers: dict) -> dict:
    return {**TINY, "quantization_config": {"quant_method": "modelopt",
                                            "quant_algo": "MIXED_PRECISION",
                                            "quantized_layers": layers}}


def test_modelopt_mixed_per_module_by_hand():
    """Each module in its own algorithm: q, k, v FP8 (e4m3 values, fp32 weight_scale and
    input_scale: 8 B), o_proj and lm_head W4A16_NVFP4 (4-bit values, one fp8 scale per 16
    inputs, an fp32 weight_scale_2, no input_scale), the experts (listed as their module)
    NVFP4 (plus input_scale: 8 B); the router, not listed, bf16.

    * q 64 -> 64: 4,096 + 8 = 4,104; k, v 64 -> 32: 2,048 + 8 = 2,056 each;
    * o_proj 64 -> 64: 2,048 + 256 + 4 = 2,308; lm_head 64 -> 100: 3,200 + 400 + 4 = 3,604;
    * each expert linear: 1,024 + 128 + 8 = 1,160, x 6 = 6,960.
    """
    cfg = _mixed({"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
                  "model.layers.0.self_attn.k_proj": {"quant_algo": "FP8"},
                  "model.layers.0.self_attn.v_proj": {"quant_algo": "FP8"},
                  "model.layers.0.self_attn.o_proj": {"quant_algo": "W4A16_NVFP4",
                                                      "group_size": 16},
                  "model.layers.0.block_sparse_moe.experts": {"quant_algo": "NVFP4",
                                                              "group_size": 16},
                  "lm_head": {"quant_algo": "W4A16_NVFP4", "group_size": 16}})
    q = read_quantization(cfg)
    assert q.bytes(64, 64, "model.layers.0.self_attn.o_proj") == 2308
    assert q.bytes(64, 100, "lm_head", "lm_head") == 3604
    assert checkpoint_bytes(cfg) == (EMBED + 3604 + 4104 + 2 * 2056 + 2308 + 6960 + ROUTER
                                     + NORMS) == 34_528


def test_modelopt_mixed_fused_shards_must_agree():
    """vLLM refuses shards of one fused module in different algorithms (modelopt.py:1896-1900)
    ; kvlib names the fused module and its shards."""
    cfg = _mixed({"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
                  "model.layers.0.self_attn.k_proj": {"quant_algo": "W4A16_NVFP4"}})
    with pytest.raises(ValueError, match=r"within the fused layer model.layers.0.self_attn."
                                         r"qkv_proj \(k_proj, q_proj\)"):
        read_quantization(cfg)


# Qwen3.6 (qwen3_5): in -> out of the quantized linears, and how many of each.
# 27B: 64 layers (48 linear attention, 16 full), hidden 5120, intermediate 17408, vocab 248,320;
# 35B-A3B: 40 layers (30 + 10), hidden 2048, 256 experts of 512 and a shared expert of 512.
QWEN36 = {
    "nvidia--Qwen3.6-27B-NVFP4": {
        "fp8": [(48, 5120, 16384, 2), (48, 6144, 5120, 1),           # in_proj_qkv + _z, out
                (16, 5120, 12288, 1), (32, 5120, 1024, 1), (16, 6144, 5120, 1)],  # q, k+v, o
        "w4a16": [(128, 5120, 17408), (64, 17408, 5120), (1, 5120, 248320)],  # mlp, lm_head
        # A_log in fp32 as vLLM builds it (48 layers x 48 heads x 4 B, in kvlib's total)
        "total": 20_150_572_932, "vllm_meta": 20_217_683_334,
        # vLLM beyond kvlib: RoPE cache 262,144 x 64 fp32; the attention's q/k/v/prob scales
        # (16 layers x (4 fp32 + 4 bf16) = 384 B); W4A16 input_scale in bf16, one per shard
        # ((64 x 3 + 1) x 2 = 386); in_proj_qkvz built as 4 FP8 shards where the checkpoint
        # has 2 modules (48 x 2 x 8 = 768)
        "vllm_more": 67_108_864 + 384 + 386 + 768},
    "nvidia--Qwen3.6-35B-A3B-NVFP4": {
        "fp8": [(30, 2048, 12288, 2), (30, 4096, 2048, 1),
                (10, 2048, 8192, 1), (20, 2048, 512, 1), (10, 4096, 2048, 1)],
        "w4a16": [(40 * 256 * 2, 2048, 512), (40 * 256, 512, 2048),   # routed experts
                  (40 * 2, 2048, 512), (40, 512, 2048), (1, 2048, 248320)],  # shared, head
        # A_log in fp32 (30 layers x 32 heads x 4 B, in kvlib's total)
        "total": 20_825_035_380, "vllm_meta": 20_892_268_006,
        # RoPE cache; the attention's 4 fp32 scales (10 x 16 = 160); W4A16 input_scale in
        # bf16 ((40 x 3 + 1) x 2 = 242); the experts' input_scale vLLM allocates in fp32
        # (40 layers x 256 x 3 x 4 = 122,880); in_proj_qkvz's 2 extra shards (30 x 16 = 480)
        "vllm_more": 67_108_864 + 160 + 242 + 122_880 + 480},
}


@pytest.mark.parametrize("name", sorted(QWEN36))
def test_qwen36_mixed_fp8_and_w4a16_nvfp4(name):
    """nvidia/Qwen3.6-27B-NVFP4 and -35B-A3B-NVFP4: ``quantized_layers`` lists the attention
    and linear-attention projections in FP8 and the MLPs / experts and lm_head in
    W4A16_NVFP4; in_proj_b and in_proj_a (kvlib's in_proj_ba) are not listed: bf16, as vLLM
    builds them. By hand against the bf16 checkpoint: an FP8 linear stores in x out bytes plus
    8 B per checkpoint module (in_proj_qkvz is two: in_proj_qkv and in_proj_z); a W4A16_NVFP4
    one in x out / 2 + in x out / 16 + 4."""
    cfg = corpus(name)
    shapes = QWEN36[name]
    saved = sum(n * (2 * i * o - (i * o + 8 * modules)) for n, i, o, modules in shapes["fp8"])
    saved += sum(n * (2 * i * o - (i * o // 2 + i * o // 16 + 4)) for n, i, o in shapes["w4a16"])
    total = text_bytes(cfg)  # the text model, which vLLM built (language_model_only)
    assert total == text_bytes(without_quantization(cfg)) - saved == shapes["total"]
    assert shapes["vllm_meta"] == total + shapes["vllm_more"]
    q = read_quantization(cfg)
    assert q.scheme_for("model.layers.0.linear_attn.in_proj_ba", "mixers") is None
    assert q.scheme_for("lm_head", "lm_head").name == "w4a16 nvfp4"
    r = count_params(cfg)
    # lm_head, 2 per linear-attention layer, q/k/v/o per full-attention layer, and the MLP's 3
    # (27B) or the routed experts' 3 and the shared expert's 3 (35B-A3B) per layer
    assert sum(1 for lin in r.linears if q.quantized(lin.name, lin.part)) == (
        1 + 2 * 48 + 4 * 16 + 3 * 64 if "27B" in name else 1 + 2 * 30 + 4 * 10 + 6 * 40)


MINIMAX = "nvidia--MiniMax-M3-NVFP4"
MINIMAX_M3_VLLM_META = 248_625_535_936


def test_minimax_m3_mixed_as_vllm_resolves_it():
    """nvidia/MiniMax-M3-NVFP4 lists q/k/v/o, the indexer's q and k, the shared experts and
    the dense MLPs in MXFP8 and every expert's w1, w2, w3 in NVFP4. vLLM 0.34.0 resolves its
    fused modules through their shards: qkv_proj (which also holds the indexer's q and k),
    gate_up_proj of the shared experts and the MLPs, all MXFP8; kvlib's fused expert
    gate_up_proj is two checkpoint modules per expert (w1, w3), each with its two fp32 scales.
    vLLM's own classes on the meta device hold kvlib's bytes (its routers and their
    e_score_correction_bias in fp32 as vLLM builds them: 57 MoE layers x 128 x (6144 + 1) x
    4 B) plus its RoPE cache (1,048,576 x 64 fp32) and the attention's 4 fp32 scales (60 x
    16); and one fp32 input_scale and weight_scale_2 per fused w13 shard, as the checkpoint."""
    cfg = corpus(MINIMAX)
    q = read_quantization(cfg)
    assert q.scheme_for("model.layers.5.self_attn.indexer.wk", "attention").name == "mxfp8"
    assert q.scheme_for("model.layers.5.block_sparse_moe.shared_experts.gate_up_proj",
                        "shared_experts").name == "mxfp8"
    gate_up = q.scheme_for("model.layers.5.block_sparse_moe.experts.gate_up_proj", "experts")
    assert (gate_up.name, gate_up.extra) == ("nvfp4", 16)  # 2 modules x 8 B
    total = checkpoint_bytes(cfg)
    assert MINIMAX_M3_VLLM_META == total + 1_048_576 * 64 * 4 + 60 * 16
    # against the same count with the routers and biases at the checkpoint's bf16
    assert total == 248_267_431_680 + 57 * 128 * (6144 + 1) * 2 == 248_357_099_520
    r = count_params(cfg)
    assert sum(f.elements * f.bytes_per for f in r.fixed if f.part == "router") \
        == 57 * 128 * (6144 + 1) * 4


# NVFP4 checkpoints whose exclusions name the multimodal wrapper's paths: vLLM 0.34.0's own
# classes on the meta device (text model only), and what they hold beyond kvlib's text model:
# the RoPE cache (262,144 x 64 fp32) and the attention's 4 fp32 + 4 bf16 scales (24 B a
# layer); Qwen3.5's A_log and Kimi's e_score_correction_bias kvlib counts in fp32 as vLLM
# builds them (they were 36 x 64 x 2 B and 60 x 384 x 2 B short)
PREFIXED = {"nvidia--Qwen3.5-122B-A10B-NVFP4": (77_592_044_320, 67_108_864 + 12 * 24),
            "nvidia--Kimi-K2.6-NVFP4": (594_273_015_224, 67_108_864 + 61 * 24)}


def test_exclusions_under_a_multimodal_prefix_by_hand():
    """``language_model.model.layers.0.self_attn*`` excludes kvlib's ``model.layers.0.self_attn.
    q_proj``: vLLM maps the wrapper's paths onto its modules, and its own exclusion test also
    drops ``language_model.`` (modelopt.py:198-233). Attention stays bf16 (24,576 B as in
    test_one_compressed_tensors_group_quantizes_only_its_targets), the experts NVFP4 (6,960)."""
    cfg = {**TINY, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
        "ignore": ["language_model.lm_head", "language_model.model.layers.0.self_attn*"]}}
    assert checkpoint_bytes(cfg) == EMBED + HEAD + 24_576 + 6960 + ROUTER + NORMS == 57_776
    cfg["quantization_config"]["ignore"] = ["model.language_model.layers.0.self_attn*"]
    assert not read_quantization(cfg).quantized("model.layers.0.self_attn.o_proj")


@pytest.mark.parametrize("name", sorted(PREFIXED))
def test_prefixed_exclusions_as_vllm_builds_them(name):
    """nvidia/Qwen3.5-122B-A10B-NVFP4 excludes ``model.language_model.layers.N.linear_attn*``
    and the shared experts, nvidia/Kimi-K2.6-NVFP4 ``language_model.model.layers.0*`` and every
    layer's self_attn and shared experts: matched against kvlib's ``model.layers.N`` names,
    counted bf16 as vLLM builds them (before: NVFP4, 6.59 GB and 13.24 GB short of vLLM's text
    model)."""
    vllm_meta, more = PREFIXED[name]
    assert vllm_meta == text_bytes(corpus(name)) + more


# --- no quant_method ------------------------------------------------------------------------

def test_no_quant_method_is_refused_as_vllm_cannot_serve_it():
    """Qwen/Qwen3-32B-FP8-Static-PerTensor's quantization_config has config_groups, a top-level
    quant_algo FP8 and producer modelopt, but no quant_method and no ``quantization`` section:
    vLLM 0.34.0 derives no method from it (model_arch_config_convertor.py:241-283), none of its
    methods claims it (config/model.py:1403-1470), so it builds the model unquantized, where
    the checkpoint's FP8 weight_scale tensors do not load (its own loader, run on the meta
    device, fails on q_proj.weight_scale), and any --quantization is refused as not matching
    the config's None (:1473-1482). kvlib refuses, naming the field."""
    with pytest.raises(ValueError) as e:
        read_quantization(corpus("Qwen--Qwen3-32B-FP8-Static-PerTensor"))
    msg = str(e.value)
    assert msg.startswith("quantization_config.quant_method is missing (producer.name "
                          "'modelopt' without a quantization.quant_algo")
    assert "\n" not in msg and "--quantization" in msg
    # the way out it names: vLLM then takes ModelOpt FP8 (per-tensor weight_scale and
    # input_scale: 8 B a module), and its loader takes the scales (test_quant_oracle)
    assert msg.endswith('with "quant_method": "modelopt" in it, vLLM (and kvlib) read it as '
                        "ModelOpt FP8")
    fixed = json.loads(json.dumps(corpus("Qwen--Qwen3-32B-FP8-Static-PerTensor")))
    fixed["quantization_config"]["quant_method"] = "modelopt"
    q = read_quantization(fixed)
    assert (q.method, q.scheme.name, q.skip) == ("modelopt", "fp8 per-tensor (modelopt)",
                                                 ("lm_head",))
    assert q.bytes(5120, 8192, "model.layers.0.self_attn.q_proj") == 5120 * 8192 + 8
    cfg = {**TINY, "quantization_config": {"config_groups": {"group_0": {
        "targets": ["Linear"], "weights": INT8_CHANNEL}}}}
    with pytest.raises(ValueError, match=r"^quantization_config.quant_method is missing: "):
        read_quantization(cfg)
    cfg["quantization_config"]["quant_method"] = "compressed-tensors"
    assert read_quantization(cfg).method == "compressed-tensors"


# --- weights memory: what vLLM allocates, beside the checkpoint's bytes --------------------
# checkpoint_bytes and CheckpointWeights.total are the files' bytes; CheckpointWeights.per_gpu
# is what vLLM 0.34.0 allocates on one rank (the plan subtracts it). Where they differ, by hand;
# tests/test_quant_oracle.py measures each per_gpu against vLLM's own classes on the meta device.

def _expert_delta(cfg: dict, tp: int) -> int:
    """One rank's routed-expert bytes as vLLM allocates them less the checkpoint's split by tp."""
    q, vq = read_quantization(cfg), vllm_quantization(cfg)
    experts = [x for x in count_params(cfg).linears if x.part == "experts"]
    return sum(allocated_linear_bytes(vq, x, 2, tp) - linear_bytes(q, x, 2)
               for x in experts) // tp


def test_compressed_tensors_fp8_scales_in_fp32_by_hand():
    """compressed-tensors FP8 stores its 128 x 128 block scales in the model dtype (bf16);
    vLLM 0.34.0 allocates every FP8 weight scale in fp32 (create_fp8_scale_parameter,
    utils/fp8_utils.py:1396-1405; the routed experts' compressed_tensors_moe_w8a8_fp8.py:
    170-230): 2 B more a block.

    * poolside/Laguna-XS.2-FP8 (hidden 2048, 40 layers, layer 0 dense of 8192, 39 MoE layers of
      256 experts of 512 and a shared expert of 512; attention ignored): per expert w13 2 x 4 x
      16 blocks and w2 16 x 4; the dense MLP 3 x 16 x 64 = 3 x 1024; the shared expert 3 x 4 x
      16 = 3 x 64: 39 x 256 x 192 x 2 + 3 x 1024 x 2 + 39 x 3 x 64 x 2 = 3,854,976 B;
    * poolside/Laguna-S-2.1-FP8 (hidden 3072, 48 layers, 47 MoE layers of 256 experts of 1024;
      the dense layer 0, the shared experts and the attention ignored): 47 x 256 x (2 x 8 x 24
      + 24 x 8) x 2 = 13,860,864 B;
    * RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8's FP8 linears (test_redhat_deepseek_v4_flash_nvfp4
      _fp8): 43 x 6,528 + 21 x 512 = 291,456 blocks, 582,912 B."""
    xs2 = corpus("poolside--Laguna-XS.2-FP8")
    fp32 = 39 * 256 * (2 * 4 * 16 + 16 * 4) * 2 + 3 * 1024 * 2 + 39 * 3 * 64 * 2
    assert fp32 == 3_854_976
    assert checkpoint_weights(xs2, 1).per_gpu == checkpoint_bytes(xs2) + fp32
    assert checkpoint_weights(xs2, 1).total == checkpoint_bytes(xs2)
    assert checkpoint_weights(xs2, 4).per_gpu - checkpoint_weights(
        without_quantization(xs2), 4).per_gpu == -(checkpoint_bytes(without_quantization(xs2))
                                                   - checkpoint_bytes(xs2) - fp32) // 4
    s21 = corpus("poolside--Laguna-S-2.1-FP8")
    assert checkpoint_weights(s21, 1).per_gpu - checkpoint_bytes(s21) \
        == 47 * 256 * (2 * 8 * 24 + 24 * 8) * 2 == 13_860_864
    redhat = corpus("RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8")
    assert (43 * 6_528 + 21 * 512) * 2 == 582_912
    assert checkpoint_weights(redhat, 1).per_gpu == 562_414_226_788 + 582_912
    # the scheme: bf16 in the file, fp32 on the GPU; an INT8 channel scheme keeps its scales
    q = read_quantization(xs2)
    s = q.scheme_for("model.layers.3.mlp.experts.w2", "experts")
    assert (s.scale_bytes, s.loaded_scale_bytes) == (2, 4)
    assert s.bytes(512, 2048) == 512 * 2048 + 16 * 4 * 2
    assert s.bytes(512, 2048, loaded=True) == 512 * 2048 + 16 * 4 * 4
    int8 = read_quantization(_ct({"g": {"weights": INT8_CHANNEL, "targets": ["Linear"]}}))
    assert int8.scheme.loaded_scale_bytes == 0


def test_fp8_moe_scale_grid_refined_at_tp_by_hand():
    """vLLM 0.34.0's Fp8MoEMethod (quant_method fp8, 128 x 128 blocks): where a rank's
    intermediate rows do not divide 128, it refines the scale grid to gcd(128, 128, rows,
    hidden) square (fused_moe/oracle/fp8.py:298-320, 362-401; layers/quantization/fp8.py:
    553-565), fp32 scales.

    * Qwen3-30B-A3B-FP8 at TP 4 (hidden 2048, 48 layers of 128 experts of 768): 192 rows a
      rank, gcd 64. A rank's w13 holds 2 x 3 x 32 = 192 scales and its w2 32 x 3 = 96, where
      the checkpoint's grid split by 4 is 2 x 6 x 16 / 4 = 48 and 16 x 6 / 4 = 24:
      48 x 128 x ((192 - 48) + (96 - 24)) x 4 B = 5,308,416 B more a GPU;
    * MiniMax-M2.5 at TP 8 (hidden 3072, 62 layers of 256 experts of 1536): 192 rows, gcd 64:
      w13 2 x 3 x 48 = 288 against 2 x 12 x 24 / 8 = 72, w2 48 x 3 = 144 against 24 x 12 / 8 =
      36: 62 x 256 x (216 + 108) x 4 = 20,570,112 B;
    * at TP 1 (768 rows) and TP 2 (384 rows) Qwen3's rows divide 128: no refinement;
    * Step-3.7-Flash-FP8 at TP 8 (hidden 4096, 42 MoE layers of 288 experts of 1280): 160 rows,
      gcd 32: w13 2 x 5 x 128 = 1,280 against 2 x 10 x 32 / 8 = 80, w2 128 x 5 = 640 against
      32 x 10 / 8 = 40: 42 x 288 x (1200 + 600) x 4 = 87,091,200 B (by hand only: vLLM
      0.34.0 has no Step3p7FlashForCausalLM class for the oracle to build)."""
    qwen = corpus("Qwen--Qwen3-30B-A3B-FP8")
    assert _expert_delta(qwen, 4) == 48 * 128 * ((192 - 48) + (96 - 24)) * 4 == 5_308_416
    assert _expert_delta(qwen, 2) == _expert_delta(qwen, 1) == 0
    minimax = corpus("MiniMaxAI--MiniMax-M2.5")
    assert _expert_delta(minimax, 8) == 62 * 256 * (216 + 108) * 4 == 20_570_112
    step = corpus("stepfun-ai--Step-3.7-Flash-FP8")
    assert _expert_delta(step, 8) == 42 * 288 * (1200 + 600) * 4 == 87_091_200


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(1, 4096), hidden=st.sampled_from([2048, 2880, 3072, 4096, 7168]),
       tp=st.sampled_from([1, 2, 4, 8, 16]))
def test_fp8_moe_grid_property(rows, hidden, tp):
    """The grid vLLM allocates a rank's FP8 expert scales on is the checkpoint's 128 x 128
    where the rows divide 128, else a square that divides 128, the rows and hidden (so each
    checkpoint scale upsamples exactly), or the checkpoint's when none of at least 32 does
    (vLLM then refuses the shape in validate_fp8_block_shape_moe)."""
    bn, bk = _fp8_moe_block((128, 128), rows, hidden, tp)
    if rows % 128 == 0:
        assert (bn, bk) == (128, 128)
    elif (bn, bk) != (128, 128):
        assert bn == bk >= 32 and 128 % bn == 0 and rows % bn == 0 and hidden % bn == 0


@settings(max_examples=200, deadline=None)
@given(hidden=st.integers(1, 16384), rows=st.integers(1, 16384), sm=st.sampled_from([90, 100]))
def test_mxfp4_padding_property(hidden, rows, sm):
    """Padding only grows a dimension, to the next multiple of the backend's alignment."""
    h, r = mxfp4_moe_padding(hidden, rows, sm)
    ah, ar = {90: (1, 64), 100: (256, 128)}[sm]
    assert hidden <= h < hidden + ah and h % ah == 0
    assert rows <= r < rows + ar and r % ar == 0


def test_gpt_oss_mxfp4_padding_by_gpu_by_hand():
    """gpt-oss's MXFP4 experts as its backend pads each rank's (hidden, intermediate rows)
    (mxfp4_round_up_hidden_size_and_intermediate_size, fused_moe/oracle/mxfp4.py:822-901):
    kvlib assumes a Hopper GPU (sm 90: H100, H200), where gpt-oss runs on OpenAI's Triton
    kernels (:421-458) and the rows round up to 64; datacenter Blackwell (sm 100) runs the
    TRT-LLM kernels, hidden to 256 and rows to 128 (notebooks/engines/01's 2880 x 2880 ->
    3072 x 2944 for gpt-oss-20b at TP 1); Ampere and Ada run Marlin, hidden to 256 and rows to
    128 (:850-855). Only sm 90 is measured (tests/test_quant_oracle.py).

    gpt-oss-120b at TP 8 on an H200 (hidden 2880, 36 layers of 128 experts of 2880, MXFP4:
    half a byte a value and one e8m0 byte per 32 inputs): 360 rows -> 384. Per expert, w13
    gains 2 x 24 rows of 2880 / 2 + 90 B, its bf16 bias 2 x 24 x 2 B, and w2's 2880 rows of
    384 / 2 + 12 = 204 B where 360 / 2 + 11.25 = 191.25: 36 x 128 x (48 x 1530 + 2880 x 12.75
    + 96) = 508,059,648 B more a GPU. gpt-oss-20b at TP 2 (24 layers of 32 experts): 1440 ->
    1472 (a multiple of 128 would be 1536): 24 x 32 x (64 x 1530 + 2880 x 17 + 128) =
    112,902,144 B."""
    assert mxfp4_moe_padding(2880, 360) == (2880, 384)
    assert mxfp4_moe_padding(2880, 1440) == (2880, 1472)
    assert mxfp4_moe_padding(2880, 2880, sm=100) == (3072, 2944)
    assert mxfp4_moe_padding(2880, 1440, sm=89) == (3072, 1536)  # Marlin on an L40S
    with pytest.raises(ValueError, match="compute capability sm 120"):
        mxfp4_moe_padding(2880, 360, sm=120)
    big, small = corpus("openai--gpt-oss-120b"), corpus("openai--gpt-oss-20b")
    assert vllm_quantization(big).method == "gpt_oss_mxfp4"
    assert 36 * 128 * (48 * 1530 + 2880 * 51 // 4 + 96) == 508_059_648
    # on a B200 (sm 100): hidden 2880 -> 3072 and 384 rows; per expert w13 2 x 384 x (192 / 2
    # + 6) B, w2 192 more rows of 204 B and its bias (whole on every rank) 192 x 2 B
    assert checkpoint_weights(big, 8, sm=100).per_gpu - checkpoint_weights(big, 8).per_gpu \
        == 36 * 128 * (768 * 102 + 192 * 204 + 192 * 2) == 543_227_904
    assert _expert_delta(big, 8) == 508_059_648
    assert _expert_delta(small, 2) == 24 * 32 * (64 * 1530 + 2880 * 17 + 128) == 112_902_144
    assert checkpoint_weights(big, 8).total == checkpoint_bytes(big)


def test_kimi_k3_as_vllm_holds_it_by_hand():
    """moonshotai/Kimi-K3 (compressed-tensors mxfp4-pack-quantized for every Linear not
    ignored: the routed experts and the latent-MoE routed_expert_down/up_proj). The file
    stores MXFP4 as 4-bit values and one e8m0 byte per 32 inputs, no global scale: 3584 x 7168
    / 2 + 3584 x 224 = 13,647,872 B a latent projection. vLLM 0.34.0 rewrites the method to
    mxfp4 (models/config.py:786-816), which quantizes the routed experts only (mxfp4.py:
    92-108): each of the 92 x 2 latent projections is 3584 x 7168 x 2 = 51,380,224 B on every
    rank (ReplicatedLinear). Each KDA layer's fused in_proj_qkvgfab pads a rank's rows to 16
    (nvidia/kda.py:640-669): at TP 8 4 x 1536 + 128 + 12 = 6,284 -> 6,288, 4 rows x 7168 x
    2 B x 69 layers = 3,956,736 B; at TP 1 49,376 rows divide 16. One rank at TP 8 holds
    92 x 2 x (51,380,224 - 13,647,872) + 3,956,736 = 6,946,709,504 B more than the file's
    format; 6,946,460,736 B more than kvlib counted before, which gave every MXFP4 module an
    8 B global scale (92 x 2 x 8 on the projections, 92 x 896 x 3 x 8 / 8 = 247,296 B a GPU
    on the experts) that MXFP4 does not store."""
    cfg = corpus("moonshotai--Kimi-K3")
    q, vq = read_quantization(cfg), vllm_quantization(cfg)
    assert (q.method, vq.method) == ("compressed-tensors", "mxfp4")
    name = "model.layers.1.block_sparse_moe.routed_expert_down_proj"
    assert q.bytes(7168, 3584, name) == 3584 * 7168 // 2 + 3584 * 224 == 13_647_872
    assert vq.bytes(7168, 3584, name) == 3584 * 7168 * 2
    assert vq.bytes(3584, 3072, "model.layers.1.block_sparse_moe.experts.w1", "experts") \
        == q.bytes(3584, 3072, "model.layers.1.block_sparse_moe.experts.w1", "experts") \
        == 3072 * 3584 // 2 + 3072 * 112
    linears = count_params(cfg).linears
    assert _kda_padding(linears, 8, vq, 2) // 8 == 4 * 7168 * 2 * 69 == 3_956_736
    assert _kda_padding(linears, 1, vq, 2) == 0
    assert 92 * 2 * (51_380_224 - 13_647_872) + 3_956_736 == 6_946_709_504
    assert 92 * 2 * (51_380_224 - 13_647_880) + 3_956_736 - 92 * 896 * 3 * 8 // 8 \
        == 6_946_460_736
    assert any("rewrites Kimi K3's method to mxfp4" in n
               for n in checkpoint_weights(cfg, 8).notes)


# --- the plans ------------------------------------------------------------------------------

PLANNED = {  # checkpoint bytes (GB = 1e9 B), from the tests above
    "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8": 562_414_226_788,
    "nvidia--DeepSeek-V4-Flash-NVFP4": 164_663_697_628,
    "nvidia--DeepSeek-V4-Pro-NVFP4": 899_095_589_836,
    "nvidia--Qwen3.6-27B-NVFP4": 20_150_572_932,
    "nvidia--Qwen3.6-35B-A3B-NVFP4": 20_825_035_380,
}


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_plans_on_8_h200(tmp_path, capsys, name):
    """``kvlib plan <config.json> --gpu H200 --gpus 8 --tp 8 --context 8K`` answers (exit 0, or 1
    for "does not fit"), its weights per GPU at least an eighth of the checkpoint and within
    what the ranks hold whole (routers, DeepSeek V4's fused wq_a + wkv, compressors and
    indexer projections, norms) or padded (the vocabulary): under 10% more here."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(corpus(name)))
    rc, d, err = run_json(capsys, str(path), "--gpu", "H200", "--gpus", "8", "--tp", "8",
                          "--context", "8K")
    assert rc in (0, 1), err
    per_gpu = d["weights_bytes_per_gpu"]
    assert PLANNED[name] / 8 <= per_gpu < PLANNED[name] / 8 * 1.10


def test_plan_refuses_the_config_without_a_method(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(corpus("Qwen--Qwen3-32B-FP8-Static-PerTensor")))
    rc, _, err = run(capsys, str(path), "--gpu", "H200", "--gpus", "8", "--tp", "8",
                     "--context", "8K")
    assert rc == 2 and err.count("\n") == 1
    assert "quantization_config.quant_method is missing" in err
