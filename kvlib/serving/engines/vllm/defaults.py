"""vLLM's defaults per release: which releases kvlib follows, and what each takes when an
option is not given (gpu_memory_utilization, block size, budget rule, ``vllm serve``'s batch
limits), each with its source line (paths under vllm/ in the release's wheel).

The budget rules themselves are :mod:`kvlib.serving.engines.vllm.budget`; the terms vLLM
measures at start-up and kvlib assumes are :data:`MEASURED_DEFAULTS`.
"""

from __future__ import annotations

from fractions import Fraction

from kvlib.serving.engines.startup import STARTUP_BYTES
from kvlib.serving.gpus import GPU

__all__ = ["VLLM_RELEASE", "VLLM_RELEASES", "vllm_release", "DEFAULT_BLOCK",
           "DEFAULT_GPU_MEM_UTIL", "DEFAULT_OVERHEAD_BYTES", "VLLM_DEFAULTS",
           "MEASURED_DEFAULTS", "max_num_batched_tokens", "max_num_seqs"]

GiB = 1024**3
VLLM_RELEASES = ("0.34.0", "0.33.0")  # newest first; the first is the default
VLLM_RELEASE = "0.33.0"  # the release the layout rules were traced in (0.34.0: see release=)


def vllm_release(release: str | None) -> str:
    """The vLLM release named by ``release`` ("0.34", "0.34.0", "v0.33.0"; None: the
    newest, the first of :data:`VLLM_RELEASES`); ValueError naming the value otherwise."""
    if release is None:
        return VLLM_RELEASES[0]
    text = str(release).strip().lstrip("v")
    for r in VLLM_RELEASES:
        if text in (r, r.rsplit(".", 1)[0]):
            return r
    raise ValueError(f"vLLM release must be one of {', '.join(VLLM_RELEASES)}, "
                     f"got {release!r}")


# CacheConfig.DEFAULT_BLOCK_SIZE: 16 in 0.33.0, 64 in 0.34.0 (vllm/config/cache.py:185). A
# backend takes it when it supports it, else its smallest size
# (AttentionBackend.get_preferred_block_size, v1/attention/backend.py:158-166 in 0.34.0).
DEFAULT_BLOCK = {"0.34.0": 64, "0.33.0": 16}

# vLLM 0.33.0's gpu_memory_utilization default: vllm/config/cache.py:215 (CacheConfig),
# vllm/entrypoints/llm.py:196 (LLM), inherited by EngineArgs (engine/arg_utils.py:614);
# 0.9 up to 0.19.1, 0.92 from 0.20.0. 0.34.0 keeps 0.92 only with the extensible KV cache off
# (CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION, vllm/config/cache.py:186).
DEFAULT_GPU_MEM_UTIL = Fraction(92, 100)
# Activation peak at the profiling batch + non-torch memory (NCCL, cuBLAS) + the
# CUDA-graph estimate: vLLM measures these at start-up. vLLM PR #10511 logs 1.79 GiB
# non-torch + 1.26 GiB activation peak for Llama-3-8B at TP=1 and 3.58 + 1.26 GiB at TP=2.
DEFAULT_OVERHEAD_BYTES = 4 * GiB

# Per release: gpu_memory_utilization, block size and budget rule when none is given.
# 0.34.0: u resolves to 1.0 with the extensible cache (resolved_gpu_memory_utilization,
# vllm/config/cache.py:495-502), which is on by default on CUDA and ROCm
# (_resolve_extensible_kv_cache, vllm/config/vllm.py:3180-3269); DEFAULT_BLOCK_SIZE 64
# (vllm/config/cache.py:185). 0.33.0: 0.92 (vllm/config/cache.py:215), 16 (:185).
VLLM_DEFAULTS = {
    "0.34.0": {"gpu_mem_util": Fraction(1), "block_size": DEFAULT_BLOCK["0.34.0"],
               "rule": "extensible"},
    "0.33.0": {"gpu_mem_util": DEFAULT_GPU_MEM_UTIL, "block_size": DEFAULT_BLOCK["0.33.0"],
               "rule": "profiled"},
}
# What vLLM 0.34.0 measures and kvlib must assume, per GPU (the same 4 GiB as 0.33.0's lump,
# split; the values are kvlib/serving/engines/startup.py's, shared by every engine): memory
# in use when vLLM starts, the activation peak of the profiling run, the CUDA-graph pool,
# non-torch memory (NCCL, cuBLAS). The peak kept free is activation + graph estimate
# (vllm/v1/worker/gpu_worker.py:771-773, 946); the resident non-KV memory is non-torch +
# graph pool.
MEASURED_DEFAULTS = dict(STARTUP_BYTES)


def _tier(gpu: GPU) -> int:
    """``EngineArgs.get_batch_defaults``'s tier for this GPU (engine/arg_utils.py:2995-3043 in
    0.34.0, the same in 0.33.0): 2 for 160 GiB or more, 1 for 70 GiB or more but an A100 or a
    GB10, 0 otherwise; by the device's total memory as CUDA reports it
    (``get_device_total_memory``: the catalog's CUDA total, else its datasheet)."""
    memory = gpu.total_memory_bytes
    if memory >= 160 * GiB:
        return 2
    if memory >= 70 * GiB and not gpu.name.startswith("A100") and gpu.name != "GB10":
        return 1
    return 0


def max_num_batched_tokens(gpu: GPU) -> int:
    """``vllm serve``'s default (OPENAI_API_SERVER): prompt tokens one step may hold."""
    return (2048, 8192, 16384)[_tier(gpu)]


def max_num_seqs(gpu: GPU) -> int:
    """``vllm serve``'s default (OPENAI_API_SERVER): requests running at once."""
    return (256, 1024, 1024)[_tier(gpu)]
