"""Stored weight bytes of quantized checkpoints (kvlib.models.quantization).

Independent values: safetensors totals published for the checkpoints (collected in
/work/notes/params/PARAMS.md) and layers worked by hand from the storage layouts.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.catalog import bundled_config
from kvlib.models.params import count_params
from kvlib.models.quantization import Quantization, Scheme, checkpoint_bytes, read_quantization


def test_deepseek_v32_fp8_block_is_half_its_bf16_bytes_and_near_its_published_size():
    cfg = bundled_config("deepseek-v3.2")
    q = read_quantization(cfg)
    assert q.method == "fp8" and q.scheme.block == (128, 128) and q.scheme.scale_bytes == 4
    r = count_params(cfg)
    fp8 = checkpoint_bytes(cfg, r, include_mtp=True)
    assert 0.49 < fp8 / (2 * (r.total + r.mtp)) < 0.52
    # ~689.5 GB: third-party listing "DeepSeek-V3.2 685B / ~689.5 GB" (PARAMS.md section 2)
    assert abs(fp8 / 689.5e9 - 1) < 0.02


def test_deepseek_v3_fp8_matches_its_dtype_counts():
    # HF API dtype counts: BF16 3,918,786,560 x 2 + F8 680,571,043,840 + F32 41,555,600 x 4
    published = 3_918_786_560 * 2 + 680_571_043_840 + 41_555_600 * 4
    assert published == 688_574_839_360
    ours = checkpoint_bytes(bundled_config("deepseek-v3"), include_mtp=True)
    # exact: the 59 x 256 e_score_correction_bias values, stored in fp32, counted in fp32
    # (they were 59 x 256 x 2 B short when kvlib counted them in bf16)
    assert ours == published


def test_gpt_oss_20b_mxfp4_is_its_index_total_size():
    q = read_quantization(bundled_config("gpt-oss-20b"))
    assert q.method == "mxfp4" and q.experts_only
    assert q.bytes(2880, 5760, "model.layers.0.mlp.experts.gate_up_proj") == \
        2880 * 5760 // 2 + 5760 * (2880 // 32)              # values + one e8m0 per 32
    assert not q.quantized("model.layers.0.self_attn.q_proj")  # modules_to_not_convert
    total = checkpoint_bytes(bundled_config("gpt-oss-20b"))
    # openai/gpt-oss-20b model.safetensors.index.json total_size; the card's 12.8 GiB
    assert total == 13_761_264_768 and round(total / 2**30, 1) == 12.8


AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm"}


def test_awq_4bit_group_128_layer_by_hand():
    q = read_quantization({"model_type": "llama", "torch_dtype": "float16",
                           "quantization_config": AWQ})
    i, o = 8192, 1024
    qweight = i * (o // 8) * 4            # int32 (in, out/8): 8 values per word
    qzeros = (i // 128) * (o // 8) * 4    # int32 (in/128, out/8)
    scales = (i // 128) * o * 2           # fp16 (in/128, out)
    assert qweight + qzeros + scales == 4_358_144 == q.bytes(i, o, "model.layers.0.mlp.up_proj")
    assert q.bytes(i, o, "lm_head") == 2 * i * o


def test_awq_llama_31_70b_checkpoint():
    cfg = dict(bundled_config("llama-3.1-70b"), torch_dtype="float16", quantization_config=AWQ)
    # hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 index total_size
    assert checkpoint_bytes(cfg) == 39_767_785_472


def test_gptq_and_nvfp4_layers_by_hand():
    gptq = read_quantization({"quantization_config": {"quant_method": "gptq", "bits": 4,
                                                      "group_size": 128, "desc_act": True}})
    i, o = 4096, 4096
    assert gptq.bytes(i, o, "x.q_proj") == (i // 8 * 4 * o + 32 * (o // 8) * 4 + 32 * o * 2
                                            + 4 * i)  # qweight, qzeros, scales, g_idx
    nvfp4 = read_quantization({"quantization_config": {"quant_method": "modelopt",
                                                       "quant_algo": "NVFP4", "group_size": 16,
                                                       "kv_cache_quant_algo": "FP8"}})
    assert nvfp4.bytes(i, o, "x.q_proj") == i * o // 2 + o * (i // 16) + 4 + 4
    assert nvfp4.kv_cache == "fp8"


def test_compressed_tensors_and_kv_scheme():
    cfg = {"torch_dtype": "bfloat16", "quantization_config": {
        "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
            "symmetric": True}}},
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}
    q = read_quantization(cfg)
    assert q.kv_cache == "fp8"
    # weight_packed int32 (out, in/8), bf16 scales (out, in/128), weight_shape 2 x int64
    assert q.bytes(4096, 1024, "m.down_proj") == 1024 * 512 * 4 + 1024 * 32 * 2 + 16


@pytest.mark.parametrize("cfg, match", [
    ({"quant_method": "int3-magic"}, "'int3-magic'"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
    ({"quant_method": "bitsandbytes"}, "load_in_4bit"),
    ({"quant_method": "awq", "bits": 5, "group_size": 128}, "bits"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8"}, "quant_algo"),
])
def test_bad_and_unknown_methods_raise_one_line(cfg, match):
    with pytest.raises(ValueError, match=match) as e:
        read_quantization({"quantization_config": cfg})
    assert "\n" not in str(e.value)


def test_unquantized_checkpoint_is_its_dtype():
    assert read_quantization(bundled_config("llama-3.1-8b")) is None
    assert checkpoint_bytes(bundled_config("llama-3.1-8b")) == 16_060_522_496  # index total
    assert checkpoint_bytes(bundled_config("gemma-2-9b")) == 4 * 9_241_705_984   # float32


SCHEMES = [read_quantization({"quantization_config": c}).scheme for c in (
    {"quant_method": "fp8"},
    {"quant_method": "fp8", "weight_block_size": [128, 128]},
    {"quant_method": "mxfp4"},
    {"quant_method": "modelopt", "quant_algo": "NVFP4"},
    {"quant_method": "modelopt", "quant_algo": "FP8"},
    AWQ,
    {"quant_method": "gptq", "bits": 8, "group_size": 32},
    {"quant_method": "gptq", "bits": 3, "group_size": -1},
    {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
     "bnb_4bit_use_double_quant": True},
    {"quant_method": "bitsandbytes", "load_in_8bit": True},
)]

sizes = st.integers(1, 128).map(lambda k: 128 * k)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SCHEMES), sizes, sizes)
def test_quantized_is_smaller_than_bf16_and_grows_with_the_layer(scheme: Scheme, i, o):
    b = scheme.bytes(i, o)
    assert 0 < b <= 2 * i * o
    assert scheme.bytes(i + 128, o) > b and scheme.bytes(i, o + 128) > b
    q = Quantization("x", scheme)
    assert q.bytes(i, o, "lm_head") == 2 * i * o >= q.bytes(i, o, "m.layers.0.mlp.experts.w")


def test_kimi_k25_int4_experts_are_read_from_text_config_as_vllm_does():
    """Kimi K2.5 keeps its quantization_config inside text_config. vLLM 0.34.0 takes the top
    level's, else the text_config's (transformers_utils/model_arch_config_convertor.py:285-292
    ``get_quantization_config``; model_loader/weight_utils.py:256-260), so the routed experts
    are INT4: compressed-tensors pack-quantized, 4 bits, symmetric, one bf16 scale per 32
    inputs, plus ``weight_shape`` (2 x int64). The ignore list keeps attention (self_attn),
    the shared experts, layer 0's dense MLP and lm_head in bf16; routers are never quantized.

    By hand from the text_config (hidden 7168, 61 layers, layer 0 dense, 384 experts of 2048,
    1 shared expert, MLA q_lora 1536, kv_lora 512, nope 128, rope 64, v 128, 64 heads, vocab
    163,840):
    * one expert linear, 7168 x 2048 = 14,680,064 values: 7,340,032 B packed + 917,504 B of
      scales (14,680,064 / 32 x 2) + 16 B = 8,257,552 B; 3 per expert, 384 experts, 60 MoE
      layers: 24,772,656 x 23,040 = 570,761,994,240 B;
    * bf16, 11,722,208,768 parameters x 2 = 23,444,417,536 B: embeddings and lm_head
      2 x 163,840 x 7168 = 2,348,810,240; per layer MLA 7168 x 1536 + 1536 + 1536 x 12,288 +
      7168 x 576 + 512 + 512 x 16,384 + 8192 x 7168 = 101,124,096 and 2 norms of 7168, x 61 =
      6,169,444,352; layer 0's MLP 3 x 7168 x 18,432 = 396,361,728; per MoE layer the shared
      expert 3 x 7168 x 2048, router 384 x 7168 and its bias 384 = 46,793,088, x 60 =
      2,807,585,280; the final norm 7168; the 60 x 384 biases are fp32 as vLLM builds them
      (deepseek_v2.py:327-330): 46,080 B more.
    Sum: 594,206,457,856 B (594.2 GB) for the text model, against 2,052,816,464,896 B in bf16
    (1,026,408,232,448 parameters x 2). The MoonViT tower and projector vLLM 0.34.0 loads
    (kimi_k25.py:349-371), 471,143,920 parameters (by hand in tests/test_params_families.py),
    add 942,287,840 B in bf16. No published total_size of moonshotai/Kimi-K2.5 was found with
    the search tool; third-party pages quote ~0.6 TB, which agrees only roughly.
    """
    c = bundled_config("kimi-k2.5")
    assert "quantization_config" not in c and "quantization_config" in c["text_config"]
    q = read_quantization(c)
    assert q is not None and q.method == "compressed-tensors"
    assert (q.scheme.bits, q.scheme.strategy, q.scheme.group, q.scheme.scale_bytes,
            q.scheme.zero_bits, q.scheme.extra) == (4, "group", 32, 2, 0, 16)
    assert q.bytes(7168, 2048, "model.layers.5.mlp.experts.7.down_proj", "") == 8_257_552
    experts = 8_257_552 * 3 * 384 * 60
    dense = 2 * (2 * 163_840 * 7168 + 61 * (101_124_096 + 2 * 7168) + 3 * 7168 * 18_432
                 + 60 * (3 * 7168 * 2048 + 384 * 7168) + 7168) + 60 * 384 * 4
    assert (experts, dense) == (570_761_994_240, 23_444_463_616)
    tower = 471_143_920 * 2
    assert checkpoint_bytes(c) == experts + dense + tower == 595_148_745_696
    assert count_params(c).total * 2 == 2_052_816_464_896 + tower


def test_a_top_level_quantization_config_wins_over_text_config():
    """The order vLLM 0.34.0 reads them in (model_arch_config_convertor.py:285-292)."""
    c = bundled_config("kimi-k2.5")
    c["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    assert read_quantization(c).method == "fp8"
    c["text_config"].pop("quantization_config")
    c.pop("quantization_config")
    assert read_quantization(c) is None


def test_kimi_k25_fits_8_h200_with_its_int4_weights():
    """Counted in bf16 (2.05 TB) it planned 0 sessions on 8 x H200; its INT4 checkpoint
    (594.2 GB, 76.2 GB a GPU at TP 8) leaves room for a cache."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines.vllm.deployment import plan

    p = plan(load_model("kimi-k2.5"), "H200", gpus=8, tp=8, context=131072)
    assert p.weight_dtype == "checkpoint (compressed-tensors)"
    assert p.fits and p.max_sequences > 0 and p.weights_bytes_per_gpu < 80e9
