"""vLLM 0.33.0's block layout and start-up concurrency, recomputed by hand (issues 11 and 12).

Each expectation is written out from the rules in kvlib/serving/engines/vllm/layout.py's docstring
(read in vLLM 0.33.0's source: v1/kv_cache_interface.py, v1/core/kv_cache_planning.py,
platforms/interface.py _align_hybrid_block_size) and the config's numbers.
"""

import json
from fractions import Fraction

import pytest

from kvlib import bundled_config, load_model, read_config
from kvlib.cli import main
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.serving.engines.vllm.deployment import plan
from kvlib.serving.engines.vllm.layout import vllm_layout

GiB = 1024**3
BUDGET = 100 * GiB  # 107,374,182,400 B of KV memory per GPU


def test_qwen3_next_on_h200_prefix_caching_on():
    L = vllm_layout(load_model("qwen3-next-80b-a3b"), 262144, gpu="H200", release="0.33.0")
    # attention: 2 KV heads x (256 + 256) x 2 B = 2,048 B per token per layer
    # GDN page: 3 x 8,192 x 2 + 32 x 128 x 128 x 2 = 1,097,728 B
    # Hopper FlashInfer GDN prefill: K = lcm(16, 64) = 64; 64 x ceil(1,097,728 / (64 x 2,048)) = 576
    assert L.block_size == 64 * -(-1_097_728 // (64 * 2048)) == 576
    assert L.page_bytes == 576 * 2048 == 1_179_648
    assert L.group_size == 12 and [g.kind for g in L.groups] == ["full"] + ["linear"] * 3
    assert L.bytes_per_block == 12 * 1_179_648
    # per request: ceil(262,144 / 576) = 456 attention blocks + 3 GDN groups x (2 + 1 checkpoint)
    assert L.blocks_per_request == 456 + 3 * 3 == 465
    assert L.num_blocks(BUDGET) == BUDGET // (12 * 1_179_648) == 7585
    assert round(float(L.max_concurrency(BUDGET)), 2) == 16.31


def test_qwen3_next_without_prefix_caching_off_hopper():
    L = vllm_layout(load_model("qwen3-next-80b-a3b"), 262144, gpu="A100-80GB",
                    prefix_caching=False, release="0.33.0")
    assert L.block_size == 16 * -(-1_097_728 // (16 * 2048)) == 544
    assert L.blocks_per_request == -(-262144 // 544) + 3 * 1 == 485


NEMOTRON_H_8B = {
    "model_type": "nemotron_h", "num_hidden_layers": 52, "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "conv_kernel": 4,
    "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128,
    "torch_dtype": "bfloat16", "max_position_embeddings": 8192,
}


def test_nemotron_h_8b_mamba2_checkpoint_block():
    spec = read_config(NEMOTRON_H_8B)
    assert {str(g.kind): g.layers for g in spec.groups} == {"full": 4, "mamba": 24, "none": 24}
    L = vllm_layout(spec, 8192, gpu="H200", release="0.33.0")
    page = 3 * (128 * 64 + 2 * 8 * 128) * 2 + 128 * 64 * 128 * 4  # 61,440 + 4,194,304
    assert page == 4_255_744
    assert L.block_size == 16 * -(-page // (16 * 4096)) == 1040
    assert L.bytes_per_block == 4 * 1040 * 4096 == 17_039_360
    assert L.blocks_per_request == -(-8192 // 1040) + 6 * 3 == 26  # Mamba2: 2 + 1 checkpoint
    assert round(float(L.max_concurrency(BUDGET)), 2) == round(6301 / 26, 2) == 242.35


def test_gemma3_groups_and_padding():
    """The issue's figures: 10 full, 52 sliding -> 6 sliding groups, 8 padding layers (15.38%)."""
    L = vllm_layout(load_model("gemma-3-27b"), 131072, gpu="H200", release="0.33.0")
    assert L.group_size == 10 and L.padding_layers == 6 * 10 - 52 == 8
    assert round(100 * 8 / 52, 2) == 15.38
    assert [g.layers for g in L.groups] == [10, 9, 9, 9, 9, 8, 8]  # layers[i::6]
    in_flight = 8192 * 2  # vllm serve on H200, async scheduling
    sliding = -(-min(1024 - 1 + in_flight, 131072) // 16) + 1  # 1,089 blocks
    assert L.blocks_per_request == -(-131072 // 16) + 6 * sliding == 14_726
    page = 16 * 2 * 16 * 128 * 2  # 16 tokens x (K, V) x 16 KV heads x 128 x bf16
    assert L.bytes_per_block == 10 * page


def test_plain_attention_is_one_group_of_all_layers():
    L = vllm_layout(load_model("llama-3.1-70b"), 131072, tp=4, gpu="H200", release="0.33.0")
    # TP 4: 2 of the 8 KV heads per GPU; 80 layers x 16 tokens x 2 x 2 x 128 x 2 B
    assert L.bytes_per_block == 80 * 16 * 2 * 2 * 128 * 2
    assert L.blocks_per_request == 131072 // 16
    assert L.max_concurrency(BUDGET) == Fraction(BUDGET // (80 * 16 * 1024), 8192)


def test_mla_block_size_follows_the_kv_dtype_on_hopper():
    spec = load_model("deepseek-v3")
    # 0.33.0: FLASH_ATTN_MLA takes 16 (the default then), FLASHMLA only 64
    assert vllm_layout(spec, 8192, "bf16", gpu="H200", release="0.33.0").block_size == 16
    assert vllm_layout(spec, 8192, "fp8", gpu="H200", release="0.33.0").block_size == 64
    # 0.34.0: the default is 64, which both take
    assert vllm_layout(spec, 8192, "bf16", gpu="H200").block_size == 64
    assert vllm_layout(spec, 8192, "fp8", gpu="H200").block_size == 64


def test_mla_block_size_elsewhere_as_vllm_0_33_picks_it():
    # vLLM 0.33.0, platforms/cuda.py _get_backend_priorities: the first valid MLA backend by
    # compute capability; v1/attention/backend.py get_preferred_block_size: 16 if the
    # backend takes 16, else its smallest supported size.
    v3, v32 = load_model("deepseek-v3"), load_model("deepseek-v3.2")
    # SM100: FLASHINFER_MLA first, get_supported_kernel_block_sizes [32, 64] (flashinfer_mla.py)
    for gpu in ("B200", "B300", "GB200"):
        L = vllm_layout(v3, 8192, "bf16", gpu=gpu, release="0.33.0")
        assert L.block_size == 32 and any("FLASHINFER_MLA" in n for n in L.notes)
    # SM80 / SM89 / SM120: only TRITON_MLA is valid, MultipleOf(16) (triton_mla.py)
    for gpu in ("A100-80GB", "L4", "RTX-5090"):
        L = vllm_layout(v3, 8192, "fp8", gpu=gpu, release="0.33.0")
        assert L.block_size == 16 and any("TRITON_MLA" in n for n in L.notes)
    # sparse MLA (an indexer) rules the dense backends out ("sparse not supported",
    # backend.py validate_configuration); on SM90 FLASH_ATTN_MLA_SPARSE (bf16 only) and
    # FLASHMLA_SPARSE take MultipleOf(64)
    L = vllm_layout(v32, 8192, "bf16", gpu="H200", release="0.33.0")
    # one group of 61 layers: latent (512 + 64) x 2 B, indexer 128 fp8 + one fp32 scale
    assert (L.block_size, L.bytes_per_block) == (64, 61 * 64 * ((512 + 64) * 2 + 128 + 4))
    L = vllm_layout(v32, 8192, "fp8", gpu="H200", release="0.33.0")
    # fp8_ds_mla: 512 fp8 + 4 fp32 scales + 64 bf16 = 656 B (vLLM's flashmla_sparse.py docstring)
    assert (L.block_size, L.bytes_per_block) == (64, 61 * 64 * (656 + 132))
    assert any("656 B" in n for n in L.notes)
    # SM100, bf16: FLASH_ATTN_MLA_SPARSE_FA4 (<= 16 heads per rank) or FLASHMLA_SPARSE, both
    # MultipleOf(64) (flashattn_mla_sparse.py, flashmla_sparse.py); rows of (512 + 64) x 2 B
    for gpu in ("B200", "B300", "GB200"):
        L = vllm_layout(v32, 8192, "bf16", gpu=gpu, release="0.33.0")
        assert (L.block_size, L.bytes_per_block) == (64, 61 * 64 * ((512 + 64) * 2 + 132))
    # SM100, fp8: FLASHINFER_MLA_SPARSE first (quantized caches, platforms/cuda.py), MultipleOf(32),
    # and it keeps plain fp8 rows, 576 x 1 B ("Using standard fp8 KV cache format"); the
    # indexer's backend takes [64] only (indexer.py), and two backends get lcm(32, 64) = 64
    # (platforms/interface.py, _preferred_block_size_for_backends)
    L = vllm_layout(v32, 8192, "fp8", gpu="B200", release="0.33.0")
    assert (L.block_size, L.bytes_per_block) == (64, 61 * 64 * (576 + 132))
    assert not any("656" in n for n in L.notes)
    # SM120: FLASHINFER_MLA_SPARSE_SM120 only, MultipleOf(64), and it turns auto (bf16) and
    # fp8 caches into fp8_ds_mla (mla_attention.py, _canonicalize_sparse_mla_kv_cache_dtype)
    for dtype, plain in (("bf16", 1152), ("fp8", 576)):
        L = vllm_layout(v32, 8192, dtype, gpu="RTX-5090", release="0.33.0")
        assert (L.block_size, L.bytes_per_block) == (64, 61 * 64 * (656 + 132))
        assert any("656 B per token per layer" in n and f"not {plain} B" in n for n in L.notes)
    # another cache dtype on CUDA: the latent's backend is not traced, said so; the block is
    # still the indexer backend's 64
    L = vllm_layout(v32, 8192, "fp16", gpu="B200", release="0.33.0")
    assert L.block_size == 64 and any("not traced" in n for n in L.notes)
    # Ampere and Ada: no sparse backend supports compute capability 8.x, so vLLM cannot serve
    # it; refused, naming the GPU (and plan says vLLM's figure is not computed)
    for gpu, cap in (("A100-80GB", "8.0"), ("L40S", "8.9")):
        with pytest.raises(ValueError, match=f"no sparse MLA backend for {gpu} .*{cap}"):
            vllm_layout(v32, 8192, "bf16", gpu=gpu, release="0.33.0")
    p = plan(v32, "A100-80GB", gpus=8, tp=8, context=8192, vllm="0.33.0")
    assert p.vllm_max_concurrency is None
    assert any(n.startswith("vllm_max_concurrency: not computed (vLLM 0.33.0 has no sparse MLA")
               for n in p.notes)
    # another latent width has another row, not traced: refused, naming it
    other = ModelSpec("sparse-mla-256", (LayerGroup(CacheKind.LATENT, 4, "MLA+RoPE",
                                                    {"d_L": 256, "d_R": 64}),
                                         LayerGroup(CacheKind.INDEXER, 4, "Indexer",
                                                    {"d_I": 128, "b": 1})))
    with pytest.raises(ValueError, match="d_L=256, d_R=64"):
        vllm_layout(other, 8192, "fp8", gpu="H200", release="0.33.0")
    # ROCm (platforms/rocm.py) is not traced: said, not guessed silently
    L = vllm_layout(v3, 8192, "bf16", gpu="MI300X", release="0.33.0")
    assert L.block_size == 16 and any("not traced" in n for n in L.notes)


def test_max_num_batched_tokens_depends_on_the_gpu():
    g3 = load_model("gemma-3-27b")
    assert vllm_layout(g3, 131072, gpu="B200", release="0.33.0").in_flight_tokens == 2 * 16384
    assert vllm_layout(g3, 131072, gpu="A100-80GB", release="0.33.0").in_flight_tokens == 2 * 2048
    assert vllm_layout(g3, 131072, gpu="H100-80GB", async_scheduling=False,
                       batched_tokens=4096, release="0.33.0").in_flight_tokens == 4096


def test_plan_counts_each_sequences_state_and_shows_vllms_figure(capsys):
    """Qwen3-Next on 4 x H200, TP 4, 256K: kvlib's count and vLLM's, by hand, under vLLM
    0.33.0's profiled budget and 16-token attention blocks (the layout this test teaches);
    the default release, 0.34.0, below."""
    assert main(["plan", "qwen3-next-80b-a3b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                 "--context", "256K", "--weight-dtype", "bf16", "--json", "--vllm", "0.33"]) == 0
    d = json.loads(capsys.readouterr().out)
    usable = -(-150_119_844_413 * 92 // 100)  # ceil(0.92 x the H200's CUDA total)
    # the published 80B in bf16, split 4 ways; 4 GiB overhead
    budget = usable - 80_000_000_000 * 2 // 4 - 4 * GiB
    assert d["kv_budget_bytes_per_gpu"] == budget == 93_815_289_564
    cache = 12 * 2 * 1 * 256 * 2 * 262144  # 2 KV heads over TP 4: one whole head per GPU
    state = 36 * (3 * (8192 // 4) * 2 + (32 // 4) * 128 * 128 * 2)  # heads and channels / 4
    # by bytes alone (no blocks, no null block, no prefill peak)
    assert (cache, state) == (3_221_225_472, 9_879_552)
    assert d["bytes_alone_sequences_per_replica"] == budget // (cache + state) == 29
    # vLLM: page 274,432 B per GDN layer per GPU; K = lcm(16, 64) = 64; 64 x ceil(274,432 / 65,536)
    block = 64 * -(-274_432 // (64 * 1024))
    assert d["vllm_block_size"] == block == 320
    blocks = budget // (12 * block * 1024)
    per_request = -(-262144 // block) + 3 * 3
    assert d["vllm_blocks_per_request"] == per_request == 829
    assert d["vllm_max_concurrency"] == round(blocks / per_request, 2) == 28.78
    assert d["vllm_kv_cache_groups"] == 4 and d["vllm_padding_layers"] == 0
    # what vLLM's allocator holds: at full length the attention group keeps every block of
    # its 262,143 cached tokens, each GDN group one state block; on the last chunk of a long
    # prompt (chunks end on 320-token boundaries) a GDN group keeps its running state, the
    # states saved at the two previous chunk ends (not yet committed: async scheduling) and
    # a checkpoint block, 4 in all (align mode). One block is the null block.
    decode, prefill = -(-262_143 // block) + 3, -(-262_143 // block) + 3 * (1 + 2 + 1)
    assert (d["vllm_blocks_per_sequence"], d["vllm_prefill_blocks"]) == (decode, prefill) \
        == (823, 832)
    assert d["vllm_num_blocks"] == blocks == 23_858
    assert d["max_sequences"] == 1 + (blocks - 1 - prefill) // decode == 28
    # the plan's bytes per sequence are those blocks: pages padded to the attention page
    assert d["kv_bytes_per_sequence_per_gpu"] == 820 * 12 * block * 1024
    assert d["state_bytes_per_sequence_per_gpu"] == 3 * 12 * block * 1024

    # vLLM 0.34.0 (the default): u = 1.0 and the measured budget (docs/capacity.md, "The
    # budget per vLLM release"), kvlib's assumed terms in deployment.MEASURED_DEFAULTS:
    # usable = min(M, M - 0.5 GiB in use - max(1 GiB, 0.75 x (1.5 + 2) GiB peak))
    assert main(["plan", "qwen3-next-80b-a3b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                 "--context", "256K", "--weight-dtype", "bf16", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["vllm"] == "0.34.0"
    peak, resident = 3 * GiB // 2 + 2 * GiB, GiB // 2 + 2 * GiB
    usable = min(150_119_844_413, 150_119_844_413 - GiB // 2 - max(GiB, 3 * peak // 4))
    budget = usable - 80_000_000_000 * 2 // 4 - resident - peak
    assert d["kv_budget_bytes_per_gpu"] == budget == 100_321_950_269
    # the same 320-token blocks (K = 64 either way); by bytes alone, and by vLLM's allocator
    assert d["vllm_block_size"] == 320
    assert d["bytes_alone_sequences_per_replica"] == budget // (cache + state) == 31
    blocks = budget // (12 * block * 1024)
    assert d["max_sequences"] == 1 + (blocks - 1 - prefill) // decode == 30


def test_a_state_only_layout_is_refused_clearly():
    spec = read_config({"model_type": "lfm2", "num_hidden_layers": 2, "hidden_size": 64,
                        "num_attention_heads": 4, "num_key_value_heads": 2, "conv_L_cache": 3,
                        "conv_dim": 64, "layer_types": ["conv", "conv"]})
    with pytest.raises(ValueError, match="has no attention layers"):
        vllm_layout(spec, 4096, release="0.33.0")


# Gemma 4 26B-A4B (kvlib/models/configs/gemma-4-26b-a4b.json, text_config): 30 layers, 5
# full_attention (every 6th) and 25 sliding_attention (sliding_window 1024); sliding layers
# 8 KV heads of head_dim 256, full layers num_global_key_value_heads 2 of global_head_dim 512
# (attention_k_eq_v: vLLM still caches K and V, models/gemma4.py:536-550);
# num_kv_shared_layers 0. Paths and line numbers below are in vLLM 0.33.0's wheel.
#
# Backends: Gemma4Config (model_executor/models/config.py:301-369) sees two head sizes; FA4
# is available on compute capability 9.x (vllm_flash_attn/flash_attn_interface.py:72-85), so
# with a bf16 cache it sets flash_attn_version = 4 for every layer (config.py:334-350). Gemma 4
# is a multimodal prefix LM (use_bidirectional_attention "vision",
# transformers_utils/model_arch_config_convertor.py:782-788), so on Hopper TRITON_FLASH_ATTN
# comes first (platforms/cuda.py:170-181); Triton and FlashAttention both take MultipleOf(16)
# (triton_attn.py:340, flash_attn.py:367), so the default block is 16
# (v1/attention/backend.py get_preferred_block_size), and a sliding layer's block is the
# largest multiple of 16 within 16 tokens of its page: 16 (layers/attention/attention.py:
# 656-665, 101-130). Neither backend declares a KV layout: LBNHC, block-compact, not
# block-outermost (v1/attention/backends/utils.py:229-236, 337-379), so
# _get_packed_kv_cache_groups returns None (v1/core/kv_cache_planning.py:931) and
# get_kv_cache_groups unifies the pages (:1170), then groups them (:1176).
G4_FULL, G4_SLIDING, G4_W = 5, 25, 1024


def _g4_pages(tp):
    """One layer's page at 16 tokens per rank: num_heads x block x (K + V) x 2 B
    (v1/kv_cache_interface.py:590-594); KV heads max(1, total // tp) (models/gemma4.py:393)."""
    full = max(1, 2 // tp) * 16 * (512 + 512) * 2
    sliding = max(1, 8 // tp) * 16 * (256 + 256) * 2
    return full, sliding


def test_gemma4_on_h200_unifies_pages_with_a_block_size_per_group():
    spec = load_model("gemma-4-26b-a4b")
    full, sliding = _g4_pages(1)
    assert (full, sliding) == (2 * 16 * 2048, 8 * 16 * 1024) == (65_536, 131_072)
    # unify_kv_cache_spec_page_size (kv_cache_planning.py:375, 392-395): the largest page is
    # the sliding one; the full layers' block grows 131,072 / 65,536 = 2 times
    assert 16 * (131_072 // 65_536) == 32  # the sliding layers keep 16
    # buckets of 5 and 25: 25 >= 1.5 x 5, so groups of 5 (:522-524); 25 / 5 = 5 sliding
    # groups, 1 full group, no padding (:535-555)
    bytes_per_block = 5 * 131_072  # max over groups of the summed pages (:580-583)
    assert bytes_per_block == 655_360
    in_flight = 8192 * 2  # vllm serve on an H200 (< 160 GiB), async scheduling
    for N, full_need, conc in ((32_768, 1024, 25.33), (262_144, 8192, 12.01)):
        L = vllm_layout(spec, N, gpu="H200", release="0.33.0")
        assert [(g.kind, g.layers, g.slots, g.block_size) for g in L.groups] == \
            [("full", 5, 5, 32)] + [("sliding", 5, 5, 16)] * 5
        assert (L.group_size, L.padding_layers, L.page_bytes) == (5, 0, 131_072)
        assert L.bytes_per_block == bytes_per_block
        # vLLM's cache_config.block_size after planning: the smallest group's (engine/core.py:347)
        assert L.block_size == 16
        # full: cdiv(N, 32) (kv_cache_interface.py:648); sliding: cdiv(min(1023 + 16,384, N),
        # 16) + 1 = cdiv(17,407, 16) + 1 = 1,089 (:935-944); summed over the 6 groups
        # (kv_cache_utils.py:1078-1087)
        assert N // 32 == full_need
        sliding_need = -(-min(G4_W - 1 + in_flight, N) // 16) + 1
        assert sliding_need == 1089
        assert [g.blocks_per_request for g in L.groups] == [full_need] + [1089] * 5
        assert L.blocks_per_request == full_need + 5 * 1089 == {32_768: 6469,
                                                                 262_144: 13_637}[N]
        # 100 GiB / 640 KiB = 163,840 blocks (kv_cache_planning.py:681)
        assert L.num_blocks(BUDGET) == BUDGET // 655_360 == 163_840
        assert L.max_concurrency(BUDGET) == Fraction(163_840, L.blocks_per_request)
        assert round(163_840 / L.blocks_per_request, 2) == conc
    assert any("TRITON_FLASH_ATTN" in n for n in L.notes)
    assert any("scales their block to 32 tokens" in n for n in L.notes)


def test_gemma4_tensor_parallel_pages():
    spec = load_model("gemma-4-26b-a4b")
    # TP 2: 1 full KV head (2 / 2), 4 sliding (8 / 2): pages 32,768 and 65,536, ratio 2 again
    full, sliding = _g4_pages(2)
    assert (full, sliding) == (32_768, 65_536)
    L = vllm_layout(spec, 32_768, tp=2, gpu="H200", release="0.33.0")
    assert [g.block_size for g in L.groups] == [32] + [16] * 5
    assert L.bytes_per_block == 5 * 65_536 == 327_680
    assert L.blocks_per_request == 32_768 // 32 + 5 * 1089 == 6469
    assert L.num_blocks(BUDGET) == BUDGET // 327_680 == 327_680
    assert round(float(L.max_concurrency(BUDGET)), 2) == round(327_680 / 6469, 2) == 50.65
    # TP 4: 1 full head (2 < 4: replicated), 2 sliding: both 32,768 B, nothing to scale
    assert _g4_pages(4) == (32_768, 32_768)
    L = vllm_layout(spec, 32_768, tp=4, gpu="H200", release="0.33.0")
    assert [g.block_size for g in L.groups] == [16] * 6
    assert L.blocks_per_request == 32_768 // 16 + 5 * 1089 == 7493
    # TP 8: 1 head each, the sliding page (16,384 B) is now the smaller: its block doubles,
    # cdiv(17,407, 32) + 1 = 545 blocks a request
    assert _g4_pages(8) == (32_768, 16_384)
    L = vllm_layout(spec, 32_768, tp=8, gpu="H200", release="0.33.0")
    assert [g.block_size for g in L.groups] == [16] + [32] * 5
    assert L.blocks_per_request == 32_768 // 16 + 5 * (-(-17_407 // 32) + 1) == 4773
    assert L.bytes_per_block == 5 * 32_768


def test_gemma4_elsewhere_triton_or_refused_by_name():
    spec = load_model("gemma-4-26b-a4b")
    # no FA4 below 9.x or on SM120: Gemma4Config forces TRITON_ATTN (config.py:362-363),
    # MultipleOf(16): 16-token blocks; 2,048 x 2 in flight on an A100: cdiv(5,119, 16) + 1
    for gpu in ("A100-80GB", "L40S", "RTX-5090"):
        L = vllm_layout(spec, 32_768, gpu=gpu, release="0.33.0")
        assert [g.block_size for g in L.groups] == [32] + [16] * 5
        assert any("TRITON_ATTN" in n for n in L.notes)
    L = vllm_layout(spec, 32_768, gpu="A100-80GB", release="0.33.0")
    assert L.blocks_per_request == 1024 + 5 * (-(-(1023 + 4096) // 16) + 1) == 1024 + 5 * 321
    # not traced: each refused in one line, naming what
    for gpu, dtype, what in (("B200", "bf16", "Blackwell"), ("H200", "fp8", "fp8 cache on Hopper"),
                             ("MI300X", "bf16", "MI300X")):
        with pytest.raises(ValueError, match=what) as e:
            vllm_layout(spec, 32_768, dtype, gpu=gpu, release="0.33.0")
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="multiples of 16"):
        vllm_layout(spec, 32_768, gpu="H200", block_size=24, release="0.33.0")


def test_plan_gives_gemma4_a_vllm_concurrency(capsys):
    assert main(["plan", "--vllm", "0.33", "gemma-4-26b-a4b", "--gpu", "H200", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    # the config's 262,144 tokens: 8,192 full blocks of 32 + 5 x 1,089 sliding blocks of 16
    assert d["context"] == 262_144
    assert (d["vllm_block_size"], d["vllm_kv_cache_groups"], d["vllm_padding_layers"],
            d["vllm_blocks_per_request"]) == (16, 6, 0, 13_637)
    blocks = d["kv_budget_bytes_per_gpu"] // 655_360
    assert d["vllm_max_concurrency"] == round(blocks / 13_637, 2) > 0


def test_gemma4_kv_shared_layers_hold_no_pages():
    """num_kv_shared_layers: a layer with a kv_sharing_target_layer_name gets no spec
    (v1/worker/gpu/attn_utils.py:143-145; models/gemma4.py:470-491)."""
    cfg = json.loads(json.dumps(bundled_config("gemma-4-26b-a4b")))
    cfg["text_config"]["num_kv_shared_layers"] = 10
    # layers 20-29 share: two of them (23, 29) were full, so 3 full and 17 sliding remain
    L = vllm_layout(read_config(cfg), 32_768, gpu="H200", release="0.33.0")
    # groups of 3 (17 >= 1.5 x 3): ceil(17 / 3) = 6 sliding groups, 18 - 17 = 1 padding slot
    assert [(g.kind, g.layers, g.block_size) for g in L.groups] == \
        [("full", 3, 32)] + [("sliding", 3, 16)] * 5 + [("sliding", 2, 16)]
    assert (L.group_size, L.padding_layers) == (3, 1)
    assert L.bytes_per_block == 3 * 131_072
    assert L.blocks_per_request == 32_768 // 32 + 6 * 1089 == 7558


def test_plan_names_each_groups_block_size_where_they_differ(capsys):
    """Gemma 4 on an H200: vLLM doubles the full layers' block (page unification), so the plan
    says 32 (full) and 16 (sliding), in the text and in --json."""
    assert main(["plan", "--vllm", "0.33",
                 "gemma-4-26b-a4b", "--gpu", "H200", "--context", "32K", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vllm_block_sizes"] == {"full": 32, "sliding": 16}
    assert main(["plan", "--vllm", "0.33",
                 "gemma-4-26b-a4b", "--gpu", "H200", "--context", "32K"]) == 0
    assert "blocks of 32 (full) / 16 (sliding)" in capsys.readouterr().out
    assert main(["plan", "--vllm", "0.33",
                 "llama-3.1-8b", "--gpu", "H200", "--context", "32K", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vllm_block_sizes"] is None  # one size: block 16
