"""vLLM's answer to the registry (:mod:`kvlib.serving.engines`): its :class:`Plan` for one
deployment and context, read as the :class:`~kvlib.serving.engines.answer.EnginePlan` every
engine gives, so vLLM's pools sit beside SGLang's and TensorRT-LLM's. Bytes per GPU.
"""

from __future__ import annotations

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.answer import EnginePlan, fmt_fraction, plural

__all__ = ["engine_plan", "RULE_NAMES", "budget_base"]

# vLLM's budget rules (Plan.budget_rule) as the plan's first line names them
RULE_NAMES = {"extensible": "extensible KV cache, measured after warmup",
              "profiled": "profiled budget",
              "kv_cache_memory_bytes": "kv_cache_memory_bytes"}


def budget_base(rule: str, gpu_mem_util, memory_basis: str) -> str:
    """What vLLM's budget is a fraction of, in words (``kvlib plan --engine all``)."""
    total = "CUDA total" if memory_basis == "cuda" else "datasheet memory"
    u = fmt_fraction(gpu_mem_util)
    if rule == "extensible":
        return (f"gpu_memory_utilization {u} of the {total}, less the weights and what "
                "warmup measures")
    if rule == "profiled":
        return f"gpu_memory_utilization {u} of the {total}, less the weights and the profile"
    return "given (kv_cache_memory_bytes)"


def engine_plan(dep, context: int, **options) -> EnginePlan:
    """vLLM ``dep.vllm``'s pools for ``dep`` (a
    :class:`~kvlib.serving.engines.vllm.deployment.Deployment`) at ``context`` tokens a
    request; its options are the Deployment's, so none is taken here (ValueError)."""
    if options:
        raise ValueError(f"{', '.join(options)}: not an option of the vLLM engine plan")
    return from_plan(dep, dep.plan(context), context)


def from_plan(dep, plan, context: int) -> EnginePlan:
    """:func:`engine_plan` from ``plan``, the :class:`Plan` of ``dep`` at ``context`` already
    made (``kvlib plan`` prints both)."""
    block = plan.vllm_block_size or plan.block_size
    tokens = (plan.vllm_num_blocks or 0) * block
    cell = dep.kv_bytes_per_sequence_per_gpu(1, block_size=1)
    groups = plan.vllm_kv_cache_groups
    name = (f"shared blocks, {plural(groups, 'group')}" if groups
            else "blocks (layout not modelled)")
    windows = any(g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED) for g in dep.model.groups)
    return EnginePlan(
        engine="vllm", release=dep.vllm, model=plan.model, gpu=plan.gpu, tp=plan.tp,
        context=context, kv_dtype=plan.kv_dtype, total_memory=plan.total_memory_bytes_per_gpu,
        weights=plan.weights_bytes_per_gpu, kv_budget=plan.kv_budget_bytes_per_gpu,
        cell=cell, page=plan.block_size, tokens=tokens,
        sessions=plan.max_sequences_per_replica, fraction=plan.gpu_mem_util,
        assumptions=plan.assumptions, notes=plan.notes, gpus=plan.gpus,
        weight_dtype=plan.weight_dtype, budget_rule=plan.budget_rule,
        rule_text=RULE_NAMES.get(plan.budget_rule, plan.budget_rule),
        budget_base=budget_base(plan.budget_rule, plan.gpu_mem_util, plan.memory_basis),
        pools=((name, tokens, cell),),
        window_pool=("window + in-flight tokens a request, in the shared blocks"
                     if windows else ""),
        state_pool=("one state per request, in pages of the shared blocks"
                    if plan.state_bytes_per_sequence_per_gpu else ""))
