"""vLLM's answer to the registry (:mod:`kvlib.serving.engines`): its :class:`Plan` for one
deployment and context, read as the :class:`~kvlib.serving.engines.answer.EnginePlan` every
engine gives, so vLLM's pools sit beside SGLang's and TensorRT-LLM's. Bytes per GPU.
"""

from __future__ import annotations

from kvlib.serving.engines.answer import EnginePlan

__all__ = ["engine_plan"]


def engine_plan(dep, context: int, **options) -> EnginePlan:
    """vLLM ``dep.vllm``'s pools for ``dep`` (a
    :class:`~kvlib.serving.engines.vllm.deployment.Deployment`) at ``context`` tokens a
    request; its options are the Deployment's, so none is taken here (ValueError)."""
    if options:
        raise ValueError(f"{', '.join(options)}: not an option of the vLLM engine plan")
    plan = dep.plan(context)
    tokens = (plan.vllm_num_blocks or 0) * (plan.vllm_block_size or plan.block_size)
    return EnginePlan(
        engine="vllm", release=dep.vllm, model=plan.model, gpu=plan.gpu, tp=plan.tp,
        context=context, kv_dtype=plan.kv_dtype, total_memory=plan.total_memory_bytes_per_gpu,
        weights=plan.weights_bytes_per_gpu, kv_budget=plan.kv_budget_bytes_per_gpu,
        cell=dep.kv_bytes_per_sequence_per_gpu(1, block_size=1), page=plan.block_size,
        tokens=tokens, sessions=plan.max_sequences_per_replica,
        fraction=plan.gpu_mem_util, assumptions=plan.assumptions, notes=plan.notes)
