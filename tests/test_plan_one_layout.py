"""A plan's lines come from one layout (issue 32): one row size, one block size, and sessions,
bytes per sequence and logged concurrency that agree with each other, for every bundled model,
context and KV dtype. The figures are checked against vLLM's own code by ``make oracle``; here
they are checked against each other."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.catalog import BUNDLED, load_model
from kvlib.serving.engines.vllm.deployment import plan
from kvlib.serving.engines.vllm.v4 import is_v4

GiB = 1024**3


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(sorted(BUNDLED)),
       context=st.sampled_from([4096, 8192, 32768, 131072]),
       kv_dtype=st.sampled_from(["bf16", "fp8"]),
       budget_gib=st.integers(min_value=8, max_value=120))
def test_every_line_of_a_plan_follows_one_layout(model, context, kv_dtype, budget_gib):
    try:
        p = plan(load_model(model), "H200", gpus=8, tp=8, context=context, kv_dtype=kv_dtype,
                 kv_cache_memory=budget_gib * GiB)
    except ValueError as e:  # a deployment kvlib refuses says why, naming the value
        assert str(e)
        return
    if p.sessions_basis != "vllm":
        assert any(n.startswith("vllm_max_concurrency: not computed") for n in p.notes)
        return
    block = p.vllm_bytes_per_block
    # one block size and one row size: the bytes per sequence are the layout's blocks
    assert p.block_size == p.vllm_block_size
    assert p.kv_bytes_per_sequence_per_gpu % block == 0
    assert p.state_bytes_per_sequence_per_gpu % block == 0
    held = (p.kv_bytes_per_sequence_per_gpu + p.state_bytes_per_sequence_per_gpu) // block
    assert held == p.vllm_blocks_per_sequence <= p.vllm_prefill_blocks
    # the logged concurrency is the same pool's blocks over the same blocks per request
    assert p.vllm_num_blocks == p.kv_budget_bytes_per_gpu // block
    assert p.vllm_max_concurrency == round(float(Fraction(p.vllm_num_blocks,
                                                          p.vllm_blocks_per_request)), 2)
    # the sessions: n - 1 at full length plus one prefill fit in the pool less the null block,
    # and one more would not (or max_num_seqs binds)
    n, free = p.max_sequences_per_replica, p.vllm_num_blocks - 1
    if n:
        assert (n - 1) * p.vllm_blocks_per_sequence + p.vllm_prefill_blocks <= free
    assert (n == p.vllm_max_num_seqs
            or n * p.vllm_blocks_per_sequence + p.vllm_prefill_blocks > free)
    # never more than the bytes alone allow (but where vLLM stores fewer bytes than kvlib's
    # dtype: fp8 rows, and DeepSeek V4's fp8_ds_mla entries whatever --kv-dtype)
    assert n <= p.bytes_alone_sequences_per_replica or kv_dtype == "fp8" \
        or is_v4(load_model(model))
    assert p.max_sequences == n * p.replicas


@pytest.mark.parametrize("model", ["deepseek-v3.2", "glm-5"])
def test_sparse_mla_fp8_plans_with_vllms_row_throughout(model):
    """The issue's example: DeepSeek V3.2 with an fp8 cache on 8 x H200 at 128K. vLLM stores
    fp8_ds_mla rows of 512 fp8 + 4 fp32 scales + 64 bf16 = 656 B per layer, and 132 B of
    indexer key, in 64-token blocks: the bytes per sequence are those, not 576-byte rows."""
    p = plan(load_model(model), "H200", gpus=8, tp=8, context=131072, kv_dtype="fp8")
    layers = {"deepseek-v3.2": 61, "glm-5": 78}[model]
    assert p.block_size == 64
    assert p.vllm_bytes_per_block == layers * 64 * ((512 + 16 + 128) + 132)
    assert p.kv_bytes_per_sequence_per_gpu == 131072 // 64 * p.vllm_bytes_per_block
