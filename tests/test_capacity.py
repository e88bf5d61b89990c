"""Capacity planning rules, each pinned by hand arithmetic written out in the test."""

import functools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.serving import paging
from kvlib.serving.decode import cache_dominates_at, decode_step_seconds
from kvlib.serving.engines.vllm.deployment import Deployment, plan
from kvlib.serving.engines.vllm.pages import vllm_sliding_window_tokens
from kvlib.serving.gpus import get_gpu
from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu, paged_tokens
from kvlib.serving.sharding import as_mha, shard
from kvlib.serving.weights import weights_bytes_per_gpu

# These hand values are vLLM 0.33.0's profiled budget, ceil(0.92 M) - W - O (notebook 06 as it
# stands): pinned to that release since 0.34.0 became the default (tests/test_cli_plan.py and
# tests/test_capacity_formulas.py hold 0.34.0's).
Deployment = functools.partial(Deployment, vllm="0.33.0")
plan = functools.partial(plan, vllm="0.33.0")

GiB = 1024**3

# Built by hand from the published configs, so these tests do not depend on the config reader.
LLAMA_70B_GROUP = LayerGroup(CacheKind.FULL, 80, "GQA",
                             {"N_h": 64, "N_g": 8, "d_QK": 128, "d_V": 128})
LLAMA_70B = ModelSpec("llama-70b", (LLAMA_70B_GROUP,), params=70_600_000_000,
                      max_position_embeddings=131072)
LLAMA_8B = ModelSpec("llama-8b", (LayerGroup(CacheKind.FULL, 32, "GQA",
                                             {"N_h": 32, "N_g": 8, "d_QK": 128, "d_V": 128}),),
                     params=8_030_000_000, max_position_embeddings=131072)
DEEPSEEK_V2 = ModelSpec("deepseek-v2", (LayerGroup(CacheKind.LATENT, 60, "MLA+RoPE",
                                                   {"N_h": 128, "d_L": 512, "d_R": 64}),),
                        params=236_000_000_000, max_position_embeddings=163840)
GEMMA3_27B = ModelSpec("gemma-3-27b", (
    LayerGroup(CacheKind.FULL, 10, "GQA", {"N_h": 32, "N_g": 16, "d_QK": 128, "d_V": 128}),
    LayerGroup(CacheKind.SLIDING, 52, "GQA", {"N_h": 32, "N_g": 16, "d_QK": 128, "d_V": 128},
               window=1024),
), params=27_400_000_000)


def per_token(model, tp=1, kv_dtype="bf16", scales=None):
    return kv_bytes_per_sequence_per_gpu(model, 1, kv_dtype, tp, block_size=1, scales=scales)


# --- weights -------------------------------------------------------------------

def test_weights_split_over_tp_ranks():
    assert weights_bytes_per_gpu(70_600_000_000, "bf16", 4) == 70_600_000_000 * 2 // 4
    assert weights_bytes_per_gpu(70_600_000_000, "fp8", 4) == 70_600_000_000 // 4
    assert weights_bytes_per_gpu(70_600_000_000, "int4", 8) == 70_600_000_000 // 2 // 8
    assert weights_bytes_per_gpu(7, "int4", 1) == 4  # 3.5 bytes rounds up


def test_bad_weight_dtype_is_named():
    with pytest.raises(ValueError, match="weight dtype must be one of"):
        weights_bytes_per_gpu(10, "fp6")


# --- tensor parallelism -----------------------------------------------------------

@pytest.mark.parametrize("tp, kv_heads_per_gpu, replicas", [
    (1, 8, 1), (2, 4, 1), (4, 2, 1), (8, 1, 1),
    (16, 1, 2), (32, 1, 4), (64, 1, 8),  # TP > 8 KV heads: one whole head, replicated
])
def test_tp_shards_kv_heads_then_replicates(tp, kv_heads_per_gpu, replicas):
    _, s = shard(LLAMA_70B_GROUP, tp)
    assert (s.per_rank, s.replicas) == (kv_heads_per_gpu, replicas)
    assert per_token(LLAMA_70B, tp) == 2 * 80 * kv_heads_per_gpu * 128 * 2


def test_tp_per_gpu_numbers_written_out():
    assert per_token(LLAMA_70B, 1) == 2 * 80 * 8 * 128 * 2 == 327_680  # 320 KiB
    assert per_token(LLAMA_70B, 4) == 2 * 80 * 2 * 128 * 2 == 81_920  # 80 KiB
    assert per_token(LLAMA_70B, 8) == 2 * 80 * 1 * 128 * 2 == 40_960
    # replication: 16 GPUs hold 16 x 40,960 B per token, twice the model's 327,680
    assert 16 * per_token(LLAMA_70B, 16) == 2 * 327_680


def test_tp_shards_query_heads_too():
    rank, _ = shard(LLAMA_70B_GROUP, 4)
    assert rank.sizes == {"N_h": 64 // 4, "N_g": 8 // 4, "d_QK": 128, "d_V": 128}
    assert rank.kind is CacheKind.FULL and rank.layers == 80


def test_mha_shards_its_heads():
    mha = ModelSpec("mha", (LayerGroup(CacheKind.FULL, 32, "MHA",
                                       {"N_h": 32, "d_QK": 128, "d_V": 128}),), params=1)
    assert per_token(mha, 4) == 2 * 32 * (32 // 4) * 128 * 2
    assert shard(mha.groups[0], 4)[1].replicas == 1


def test_mqa_single_head_is_replicated_on_every_rank():
    mqa = ModelSpec("mqa", (LayerGroup(CacheKind.FULL, 32, "MQA",
                                       {"N_h": 32, "d_QK": 128, "d_V": 128}),), params=1)
    assert per_token(mqa, 8) == per_token(mqa, 1) == 2 * 32 * 1 * 128 * 2
    assert shard(mqa.groups[0], 8)[1].replicas == 8


@pytest.mark.parametrize("sizes, tp, match", [
    ({"N_h": 64, "N_g": 8}, 3, "must divide the query heads N_h=64"),
    ({"N_h": 48, "N_g": 8}, 12, "must divide the KV-head count 8 or be a multiple of it"),
    ({"N_h": 48, "N_g": 12}, 8, "must divide the KV-head count 12 or be a multiple of it"),
])
def test_tp_that_neither_divides_nor_is_a_multiple_is_an_error(sizes, tp, match):
    g = LayerGroup(CacheKind.FULL, 4, "GQA", {**sizes, "d_QK": 64, "d_V": 64})
    with pytest.raises(ValueError, match=match):
        shard(g, tp)


def test_mla_latent_is_replicated_across_tp_ranks():
    latent = 60 * (512 + 64) * 2  # layers x (d_L + d_R) x bf16
    assert latent == 69_120  # 67.5 KiB
    for tp in (1, 2, 8, 16, 128):
        assert per_token(DEEPSEEK_V2, tp) == latent
        assert shard(DEEPSEEK_V2.groups[0], tp)[1].replicas == tp


def test_mla_per_gpu_advantage_shrinks_as_tp_grows():
    # TP=1: GQA 70B holds 327,680 / 69,120 = 4.74x more per token than DeepSeek V2
    assert Fraction(per_token(LLAMA_70B, 1), per_token(DEEPSEEK_V2, 1)) == Fraction(327680, 69120)
    # TP=8: each GPU holds one Llama KV head (40,960 B) but the whole latent (69,120 B)
    assert per_token(LLAMA_70B, 8) == 40_960 < per_token(DEEPSEEK_V2, 8) == 69_120


def test_decode_context_parallelism_splits_replicated_copies_by_tokens():
    # DeepSeek V2, TP=8: 8 copies of the latent; DCP=8 gives each rank ceil(T/8) tokens
    assert kv_bytes_per_sequence_per_gpu(DEEPSEEK_V2, 131072, tp=8, dcp=8) == (
        131072 // 8 * 60 * (512 + 64) * 2)
    # T = 1001 tokens: ceil(1001 / 8) = 126 tokens per rank -> 8 blocks of 16 = 128 slots
    assert kv_bytes_per_sequence_per_gpu(DEEPSEEK_V2, 1001, tp=8, dcp=8) == 128 * 69_120
    # Llama 70B at TP=16 holds each KV head twice: DCP=2 removes the copy
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 4096, tp=16, dcp=2) == (
        4096 // 2 * 2 * 80 * 1 * 128 * 2)
    assert plan(DEEPSEEK_V2, "H200", 8, 8, 4096, dcp=8).kv_replication == 1


@pytest.mark.parametrize("model, tp, dcp, match", [
    (LLAMA_70B, 4, 2, "must divide the KV replication tensor_parallel_size / heads = 1"),
    (DEEPSEEK_V2, 8, 3, "must divide the KV replication tensor_parallel_size / heads = 8"),
    (GEMMA3_27B, 32, 2, "not supported for sliding layers"),
])
def test_dcp_limits(model, tp, dcp, match):
    with pytest.raises(ValueError, match=match):
        kv_bytes_per_sequence_per_gpu(model, 4096, tp=tp, dcp=dcp)


# --- paging ----------------------------------------------------------------------

def test_block_rounding_full_group():
    assert paged_tokens(1000, 16) == 63 * 16 == 1008
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 1000, block_size=16) == 1008 * 327_680
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 1000, block_size=1) == 1000 * 327_680
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 1, block_size=16) == 16 * 327_680


def test_block_rounding_per_layer_group_with_window():
    full, sliding = 2 * 10 * 16 * 128 * 2, 2 * 52 * 16 * 128 * 2  # bytes per token per group
    # T = 5000: full group ceil(5000/16) = 313 blocks; window 1024 = 64 blocks exactly
    assert kv_bytes_per_sequence_per_gpu(GEMMA3_27B, 5000) == 313 * 16 * full + 1024 * sliding
    # T = 1000 < window: both groups round 1000 up to 1008
    assert kv_bytes_per_sequence_per_gpu(GEMMA3_27B, 1000) == 1008 * full + 1008 * sliding


def test_block_rounding_of_a_window_that_is_not_a_block_multiple():
    g = LayerGroup(CacheKind.SLIDING, 2, "GQA", {"N_h": 4, "N_g": 2, "d_QK": 8, "d_V": 8},
                   window=1000)
    m = ModelSpec("w", (g,), params=1)
    # ceil(min(5000, 1000) / 16) = 63 blocks = 1008 slots, not clamped back to 1000
    assert kv_bytes_per_sequence_per_gpu(m, 5000) == 1008 * (2 * 2 * 2 * 8 * 2)


@settings(max_examples=60, deadline=None)
@given(T=st.integers(1, 300_000), block=st.sampled_from([1, 16, 32, 128, 256]),
       tp=st.sampled_from([1, 2, 4, 8, 16]))
def test_rounding_adds_less_than_one_block_per_group(T, block, tp):
    exact = kv_bytes_per_sequence_per_gpu(GEMMA3_27B, T, tp=tp, block_size=1)
    paged = kv_bytes_per_sequence_per_gpu(GEMMA3_27B, T, tp=tp, block_size=block)
    one_block = sum(kv_bytes_per_sequence_per_gpu(ModelSpec("g", (g,)), block, tp=tp,
                                                  block_size=1) for g in GEMMA3_27B.groups)
    assert exact <= paged < exact + one_block


def test_vllm_sliding_window_reserve():
    # SlidingWindowSpec: ceil(min(W - 1 + max_num_batched_tokens, max_model_len) / block) + 1
    assert vllm_sliding_window_tokens(1024, 16, 8192) == (-(-(1023 + 8192) // 16) + 1) * 16
    assert vllm_sliding_window_tokens(1024, 16, 8192) == 577 * 16
    assert vllm_sliding_window_tokens(1024, 16, 8192, max_model_len=4096) == (256 + 1) * 16


# --- KV dtypes and scales ---------------------------------------------------------------

def test_fp8_halves_and_int4_quarters_the_cache():
    bf16 = kv_bytes_per_sequence_per_gpu(LLAMA_70B, 131072, "bf16", 4)
    assert bf16 == 2 * 80 * 2 * 128 * 2 * 131072
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 131072, "fp8", 4) * 2 == bf16
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 131072, "int4", 4) * 4 == bf16


def test_per_token_head_scales_add_one_fp32_per_head_vector():
    # vLLM int8/fp8_per_token_head: per token per layer, 2 x N_g scales of 4 bytes
    assert per_token(LLAMA_70B, 1, "fp8", "per-token-head") == 80 * (2 * 8 * 128 * 1 + 2 * 8 * 4)
    assert per_token(LLAMA_70B, 4, "fp8", "per-token-head") == 80 * (2 * 2 * 128 + 2 * 2 * 4)
    # MLA: one scale for the latent and one for the RoPE key
    assert per_token(DEEPSEEK_V2, 8, "fp8", "per-token-head") == 60 * (576 + 2 * 4)


def test_per_16_element_fp8_scales_on_int4():
    # 0.5 byte per element + 1 byte per 16 elements = 0.5625 = 9/16 byte per element
    assert per_token(LLAMA_70B, 1, "int4", "per-16-fp8") == 2 * 80 * 8 * 128 * 9 // 16


def test_unknown_scales_named():
    with pytest.raises(ValueError, match="kv scales must be one of"):
        per_token(LLAMA_70B, 1, "fp8", "per-block")


# --- budget, sequences, replicas ------------------------------------------------------------

# vLLM multiplies the total CUDA reports: 139.81 GiB on an H200 (its start-up log), kept as
# floor(13981 x 2^30 / 100) = floor(15,011,984,441,344 / 100) B, and rounds up.
H200_CUDA_TOTAL = 13981 * 1024**3 // 100
# vLLM 0.33.0's default gpu_memory_utilization, 0.92 (vllm/config/cache.py:215)
H200_USABLE = -(-H200_CUDA_TOTAL * 92 // 100)  # ceil(13,811,025,685,996 / 100)
H200_DATASHEET_USABLE = 141_000_000_000 * 92 // 100  # 0.92 x 141 GB = 129.72 GB
WEIGHTS_TP4 = 70_600_000_000 * 2 // 4  # 35.3 GB
BUDGET_TP4 = H200_USABLE - WEIGHTS_TP4 - 4 * GiB
SEQ_128K_TP4 = 2 * 80 * 2 * 128 * 2 * 131072  # 10 GiB per GPU


def test_four_h200_tp4_budget_and_sequences():
    p = plan(LLAMA_70B, "H200", gpus=4, tp=4, context=131072)
    assert p.hbm_bytes_per_gpu == 141_000_000_000
    assert p.total_memory_bytes_per_gpu == H200_CUDA_TOTAL == 150_119_844_413
    assert p.memory_basis == "cuda"
    assert p.usable_bytes_per_gpu == H200_USABLE == 138_110_256_860
    assert p.weights_bytes_per_gpu == WEIGHTS_TP4 == 35_300_000_000
    assert p.overhead_bytes_per_gpu == 4 * 1024**3
    assert p.kv_budget_bytes_per_gpu == BUDGET_TP4 == 98_515_289_564
    assert p.kv_bytes_per_sequence_per_gpu == SEQ_128K_TP4 == 10 * GiB
    # 98,515,289,564 // 10,737,418,240 = 9 (9 x 10 GiB = 96,636,764,160)
    assert p.max_sequences_per_replica == BUDGET_TP4 // SEQ_128K_TP4 == 9
    assert p.replicas == 1 and p.max_sequences == 9
    assert p.kv_free_bytes_per_gpu == BUDGET_TP4 - 9 * SEQ_128K_TP4
    assert p.fits and p.reason == ""


def test_datasheet_memory_on_request():
    p = plan(LLAMA_70B, "H200", gpus=4, tp=4, context=131072, memory="datasheet")
    assert p.memory_basis == "datasheet" and p.total_memory_bytes_per_gpu == 141_000_000_000
    assert p.usable_bytes_per_gpu == H200_DATASHEET_USABLE == 129_720_000_000
    assert p.kv_budget_bytes_per_gpu == 129_720_000_000 - 35_300_000_000 - 4 * GiB
    assert p.max_sequences == 90_125_032_704 // SEQ_128K_TP4 == 8


def test_gpu_without_a_cuda_total_keeps_the_datasheet():
    p = plan(LLAMA_70B, "H100-NVL", gpus=8, tp=8, context=32768)
    assert p.memory_basis == "datasheet" and p.total_memory_bytes_per_gpu == 94 * 10**9
    assert p.usable_bytes_per_gpu == 94 * 10**9 * 92 // 100 == 86_480_000_000


def test_exact_sessions_before_flooring():
    d = Deployment(LLAMA_70B, "H200", gpus=4, tp=4)
    assert d.sessions(131072) == Fraction(BUDGET_TP4, SEQ_128K_TP4)
    assert d.max_sequences_per_replica(131072) == 9 < d.sessions(131072) < 10


def test_replicas_multiply_sequences():
    p = plan(LLAMA_70B, "H200", gpus=8, tp=4, context=131072)
    assert p.replicas == 8 // 4 == 2
    assert p.max_sequences == 2 * (BUDGET_TP4 // SEQ_128K_TP4) == 18


def test_gpus_must_be_a_multiple_of_tp():
    with pytest.raises(ValueError, match="gpus=6 must be a multiple of tensor_parallel_size=4"):
        Deployment(LLAMA_70B, "H200", gpus=6, tp=4)


def test_utilization_is_exact_and_at_most_one():
    d = Deployment(LLAMA_70B, "H200", gpus=4, tp=4, gpu_mem_util=0.95)
    assert d.gpu_mem_util == Fraction(95, 100)
    # ceil(0.95 x 150,119,844,413) = ceil(142,613,852,192.35)
    assert d.usable_bytes_per_gpu == -(-H200_CUDA_TOTAL * 95 // 100) == 142_613_852_193
    with pytest.raises(ValueError, match="at most 1"):
        Deployment(LLAMA_70B, "H200", gpu_mem_util=1.2)


def test_overridden_memory_and_overhead():
    p = plan(LLAMA_70B, get_gpu("H200", hbm_bytes=140 * GiB), gpus=4, tp=4, context=131072,
             overhead_bytes=0)
    usable = -(-140 * GiB * 92 // 100)  # ceil(138,297,946,931.2)
    assert p.usable_bytes_per_gpu == usable == 138_297_946_932
    assert p.kv_budget_bytes_per_gpu == usable - WEIGHTS_TP4


def test_unknown_params_need_to_be_given():
    bare = ModelSpec("bare", LLAMA_70B.groups)
    with pytest.raises(ValueError,
                       match="parameter count of bare is unknown and kvlib cannot count it"):
        Deployment(bare, "H200")
    assert Deployment(bare, "H200", params=8_000_000_000).weights_bytes_per_gpu == 16 * 10**9


def test_max_context_at_a_given_concurrency():
    d = Deployment(LLAMA_70B, "H200", gpus=4, tp=4)
    per_token_tp4 = 2 * 80 * 2 * 128 * 2
    # 16 sequences: the largest whole-block context with 16 x slots x 81,920 <= budget
    # 98,515,289,564 // 1,310,720 = 75,161 tokens, whole blocks: 4,697 x 16
    assert d.max_context(16) == BUDGET_TP4 // (16 * per_token_tp4) // 16 * 16 == 75_152
    assert d.max_context(8) == 131072  # capped at max_position_embeddings
    assert d.max_context(10**6) == 0


def test_fp8_kv_doubles_sequences_at_the_same_budget():
    bf16 = plan(LLAMA_70B, "H200", 4, 4, 32768)
    fp8 = plan(LLAMA_70B, "H200", 4, 4, 32768, kv_dtype="fp8")
    assert fp8.kv_bytes_per_sequence_per_gpu * 2 == bf16.kv_bytes_per_sequence_per_gpu
    assert bf16.max_sequences == BUDGET_TP4 // (81_920 * 32768) == 36
    assert fp8.max_sequences == BUDGET_TP4 // (40_960 * 32768) == 73


# --- speculative decoding --------------------------------------------------------------------

def test_draft_model_adds_its_weights_and_its_cache():
    p = plan(LLAMA_70B, "H200", 4, 4, 32768, kv_dtype="fp8", draft=LLAMA_8B)
    draft_weights = 8_030_000_000 * 2 // 4
    target_seq, draft_seq = 2 * 80 * 2 * 128 * 1 * 32768, 2 * 32 * 2 * 128 * 1 * 32768
    assert p.draft_weights_bytes_per_gpu == draft_weights == 4_015_000_000
    assert p.draft_kv_bytes_per_sequence_per_gpu == draft_seq
    assert p.kv_bytes_per_sequence_per_gpu == target_seq + draft_seq
    budget = H200_USABLE - WEIGHTS_TP4 - draft_weights - 4 * GiB
    assert p.kv_budget_bytes_per_gpu == budget
    # 94,500,289,564 // 1,879,048,192 = 50 (50 x 1,879,048,192 = 93,952,409,600)
    assert p.max_sequences == budget // (target_seq + draft_seq) == 50


def test_llama_8b_draft_adds_40_percent_not_10_to_15():
    ratio = Fraction(per_token(LLAMA_8B), per_token(LLAMA_70B))
    assert ratio == Fraction(32 * 8 * 128, 80 * 8 * 128) == Fraction(2, 5)


def test_draft_on_fewer_ranks_holds_more_per_gpu():
    p = plan(LLAMA_70B, "H200", 4, 4, 1024, draft=LLAMA_8B, draft_tp=1)
    assert p.draft_weights_bytes_per_gpu == 8_030_000_000 * 2
    assert p.draft_kv_bytes_per_sequence_per_gpu == 2 * 32 * 8 * 128 * 2 * 1024


# --- not fitting ----------------------------------------------------------------------------------

def test_weights_alone_exceed_the_budget():
    p = plan(LLAMA_70B, "A100-80GB", gpus=1, tp=1, context=8192)
    # 79.25 GiB as CUDA reports it: floor(7925 x 2^30 / 100) = 85,094,039,552 B; x 0.92, up
    usable = -(-(7925 * GiB // 100) * 92 // 100)
    assert p.usable_bytes_per_gpu == usable == 78_286_516_388
    assert p.kv_budget_bytes_per_gpu == usable - 141_200_000_000 - 4 * GiB < 0
    assert not p.fits and p.max_sequences == 0
    assert p.reason.startswith("does not fit: weights 141.2 GB")
    assert p.decode_step_seconds_lower_bound is None


def test_budget_too_small_for_one_sequence():
    p = plan(LLAMA_70B, "H200", 1, 1, 200_000, weight_dtype="fp8")
    budget = 138_110_256_860 - 70_600_000_000 - 4 * GiB
    assert p.kv_budget_bytes_per_gpu == budget
    assert budget < 200_000 * 327_680  # 65.5 GB for one sequence
    # vLLM's start-up check: one request of 200,000 tokens needs ceil(200,000 / 16) = 12,500
    # blocks of 16 x 327,680 B = 65,536,000,000 B = 61.04 GiB, more than the budget less the
    # null block; it raises (v1/core/kv_cache_planning.py:99-131)
    assert 12_500 * 16 * 327_680 == 65_536_000_000 > budget - 16 * 327_680
    assert not p.fits and p.reason.startswith("vLLM 0.33.0 would refuse to start")
    assert "it needs 61.04 GiB of KV cache" in p.reason
    # its own search for the longest fitting length, in whole blocks of 16 tokens
    assert f"longest context that fits is {(budget - 16 * 327_680) // 327_680 // 16 * 16:,}" \
        in p.reason
    assert any("max_position_embeddings" in n for n in p.notes)


# --- decode bound -------------------------------------------------------------------------------

def test_decode_step_lower_bound_reads_weights_and_live_caches():
    p = plan(LLAMA_70B, "H200", 4, 4, 131072)
    expected = (35_300_000_000 + 9 * 81_920 * 131072) / 4_800_000_000_000
    assert p.decode_step_seconds_lower_bound == pytest.approx(expected, rel=1e-12)


def test_decode_bound_vectorises_over_batch():
    t = decode_step_seconds(100, 10, np.array([0, 1, 10]), 10)
    assert t.tolist() == [10.0, 11.0, 20.0]


def test_cache_dominates_after_weights_over_per_sequence_cache():
    per_seq = 81_920 * 8192  # 70B, TP=4, 8K context
    assert cache_dominates_at(35_300_000_000, per_seq) == 35_300_000_000 // per_seq + 1 == 53


# --- the blog posts' claims -------------------------------------------------------------------

def test_post_b_340_gb_holds_only_as_mha():
    mha = as_mha(LLAMA_70B)
    assert mha.groups[0].attention == "MHA"
    at_128k = kv_bytes_per_sequence_per_gpu(mha, 131072)
    assert at_128k == 2 * 80 * 8192 * 2 * 131072 == 343_597_383_680  # "340 GB"
    assert kv_bytes_per_sequence_per_gpu(LLAMA_70B, 131072) == at_128k // 8  # 42.9 GB


def test_post_b_7b_at_128k_outweighs_70b_at_2k():
    small = kv_bytes_per_sequence_per_gpu(LLAMA_8B, 131072)
    big = kv_bytes_per_sequence_per_gpu(LLAMA_70B, 2048)
    assert small == 2 * 32 * 8 * 128 * 2 * 131072 == 16 * GiB
    assert big == 2 * 80 * 8 * 128 * 2 * 2048 == 640 * 1024**2
    assert Fraction(small, big) == Fraction(32 * 131072, 80 * 2048) == Fraction(128, 5)  # 25.6x


# --- paging simulation ------------------------------------------------------------------------

def test_sampled_lengths_are_seeded_and_bounded():
    a = paging.sample_lengths(1000, seed=7, median=2048, max_len=32768)
    b = paging.sample_lengths(1000, seed=7, median=2048, max_len=32768)
    assert a.dtype == np.int64 and np.array_equal(a, b)
    assert a.min() >= 1 and a.max() <= 32768


def test_paged_and_contiguous_slots_by_hand():
    lengths = np.array([1, 16, 17, 1000])
    assert paging.paged_slots(lengths, 16).tolist() == [16, 16, 32, 1008]
    assert paging.contiguous_slots(lengths, 2048).tolist() == [2048] * 4
    # blog post B's example: 512 tokens in a 1,024-token reservation wastes half
    assert paging.waste_fraction(np.array([512]), np.array([1024])) == 0.5


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 100_000), min_size=1, max_size=50),
       st.sampled_from([16, 32, 256]))
def test_paged_waste_is_under_one_block_per_request(lengths, block):
    lengths = np.array(lengths)
    slots = paging.paged_slots(lengths, block)
    assert np.all(slots - lengths < block) and np.all(slots >= lengths)
    bound = (block - 1) * len(lengths) / slots.sum()  # at most block - 1 empty slots each
    assert paging.waste_fraction(lengths, slots) <= bound + 1e-12  # float division


def test_contiguous_rejects_requests_longer_than_the_reservation():
    with pytest.raises(ValueError, match="exceeds max_len=100"):
        paging.contiguous_slots(np.array([50, 101]), 100)


# --- the six levers -----------------------------------------------------------------------------

def test_lever_start_is_contiguous_mha_reservations():
    from kvlib.serving import levers
    s = levers.Setting(max_model_len=131072, batch=64, mha=True)
    lengths = np.array([100, 2000, 50_000])
    per_gpu_mha = 2 * 80 * (64 // 4) * 128 * 2  # MHA: 64 KV heads, 16 per GPU at TP=4
    assert levers.kv_bytes_per_gpu(LLAMA_70B, lengths, s, tp=4) == 64 * 131072 * per_gpu_mha
    assert 64 * 131072 * per_gpu_mha == 5120 * GiB


def test_lever_paging_is_batch_times_mean_of_block_rounded_lengths():
    from kvlib.serving import levers
    s = levers.Setting(max_model_len=131072, batch=3, paged=True)
    lengths = np.array([1000, 16, 17])  # 1008, 16 and 32 slots
    per_token_tp4 = 2 * 80 * 2 * 128 * 2
    assert levers.kv_bytes_per_gpu(LLAMA_70B, lengths, s, tp=4) == (1008 + 16 + 32) * per_token_tp4
    # batch 6 from the same distribution: twice as much
    s6 = levers.Setting(max_model_len=131072, batch=6, paged=True)
    assert levers.kv_bytes_per_gpu(LLAMA_70B, lengths, s6, tp=4) == 2 * 1056 * per_token_tp4


def test_lever_window_and_max_model_len_clamp_requests():
    from kvlib.serving import levers
    lengths = np.array([100_000])
    per_token = 2 * 80 * 8 * 128 * 2
    short = levers.Setting(max_model_len=32768, batch=1, paged=True)
    window = levers.Setting(max_model_len=131072, batch=1, paged=True, window=4096)
    assert levers.kv_bytes_per_gpu(LLAMA_70B, lengths, short) == 32768 * per_token
    assert levers.kv_bytes_per_gpu(LLAMA_70B, lengths, window) == 4096 * per_token


def test_decision_order_factors():
    from kvlib.serving import levers
    lengths = paging.sample_lengths(200, seed=1, median=2048, max_len=131072)
    steps = levers.decision_order(LLAMA_70B, lengths, levers.Setting(131072, 64), tp=4)
    assert [s.lever for s in steps] == ["start", "1 paging", "2 FP8 KV", "3 GQA",
                                        "4 shorter context", "5 INT4 KV", "6 smaller batch"]
    b = [s.kv_bytes_per_gpu for s in steps]
    assert abs(b[1] - 2 * b[2]) <= 1  # FP8 halves (each a ceil of a mean)
    assert abs(b[2] - 8 * b[3]) <= 8  # GQA: 64 query heads / 8 KV heads
    assert b[4] <= b[3] and abs(b[4] - 2 * b[5]) <= 2 and abs(b[5] - 2 * b[6]) <= 1
    assert b[0] == 64 * 131072 * 2 * 80 * 16 * 128 * 2
