"""What a serving process holds on one GPU besides the weights and the KV cache, as kvlib
assumes it when an engine measures it at start-up and kvlib cannot (bytes per GPU).

Every engine's budget subtracts some of these terms; the engines that lack a measurement of
their own (SGLang's memory in use before the weights, TensorRT-LLM's profiling peak) take
the same assumed values, so the three engines' plans differ by their rules, not by guesses.
The terms are the ones vLLM 0.34.0 measures (its engine folder, ``engines/vllm/defaults.py``,
cites the lines): memory in use when the engine starts (the CUDA context: 0.49 GiB in the
44.42 GiB start-up line of tests/fixtures/vllm_logs/qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log),
the activation peak of the profiling run, the CUDA-graph pool, and non-torch memory (NCCL,
cuBLAS): 4 GiB in all.
"""

from __future__ import annotations

__all__ = ["STARTUP_BYTES", "STARTUP_TOTAL"]

GiB = 1 << 30
# bytes per GPU, by the name of the Deployment option that overrides each
STARTUP_BYTES = {"in_use_bytes": GiB // 2, "activation_peak_bytes": 3 * GiB // 2,
                 "graph_pool_bytes": 2 * GiB, "non_torch_bytes": GiB // 2}
STARTUP_TOTAL = sum(STARTUP_BYTES.values())  # 4 GiB
