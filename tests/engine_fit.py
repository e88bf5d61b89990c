"""What the engine tests share (tests/oracle/test_sglang_oracle.py,
tests/test_trtllm_hand_trace.py): the TP a bundled model runs at, one rule so the two engines
are compared on the same deployments, and the float32 rounding both engines apply."""

import struct

from kvlib.serving.engines import engine_tokens


def float32(x) -> float:
    """``x`` rounded to a float32, as torch holds it (SGLang's all-reduce, TensorRT-LLM's
    fraction)."""
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def smallest_tp(name: str, engine: str, gpu: str, context: int) -> int:
    """The smallest TP (1, 2, 4, 8) at which ``engine`` plans ``name`` on ``gpu`` with the
    weights taking at most 60% of its memory; 8 if none does."""
    for tp in (1, 2, 4, 8):
        try:
            p = engine_tokens(name, gpu, engine, tp=tp, context=context)
        except ValueError:  # the weights leave nothing for the KV cache
            continue
        if p.weights <= 0.6 * p.total_memory:
            return tp
    return 8
