"""TensorRT-LLM's defaults at the commit kvlib read (:data:`SOURCE`): free_gpu_memory_fraction
0.9 held as a float32, 32 tokens a block, trtllm-serve's max_batch_size, the KV dtypes its
per-token size is traced for, and the rest of the profiling peak kvlib assumes.
"""

from __future__ import annotations

import struct
from fractions import Fraction

from kvlib.serving.engines.startup import STARTUP_TOTAL

__all__ = ["SOURCE", "DEFAULT_FRACTION", "TOKENS_PER_BLOCK", "MAX_BATCH_SIZE",
           "TRTLLM_OTHER_PEAK", "float32", "kv_bytes"]

SOURCE = ("NVIDIA/TensorRT-LLM at 0004396720054fd8e205cbf616f21f0b57c6b412, "
          "tensorrt_llm/_torch/pyexecutor/_util.py and resource_manager.py")
# TensorRT-LLM's profiling peak besides the weights and its temporary cache: kvlib's assumed
# start-up terms (in use at start, activation peak, CUDA-graph pool, non-torch memory)
TRTLLM_OTHER_PEAK = STARTUP_TOTAL


def float32(x) -> Fraction:
    """The exact value of ``x`` stored as a float32 (the C++ KvCacheConfig's fraction)."""
    return Fraction(struct.unpack("f", struct.pack("f", float(x)))[0])


DEFAULT_FRACTION = float32(0.9)  # = 0.89999997615814208984375
TOKENS_PER_BLOCK = 32
MAX_BATCH_SIZE = 2048  # max_num_requests=2048 in trtllm-serve's default start-up line
_KV_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1}


def kv_bytes(kv_dtype: str) -> int:
    if kv_dtype not in _KV_BYTES:
        raise ValueError(f"--kv-dtype {kv_dtype}: TensorRT-LLM's per-token size is traced for "
                         "bf16, fp16 and fp8 only")
    return _KV_BYTES[kv_dtype]
