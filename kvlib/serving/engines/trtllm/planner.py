"""TensorRT-LLM's plan for one deployment and context (:func:`engine_plan`, the engine's answer to
the registry, :mod:`kvlib.serving.engines`), and what kvlib refuses because it has not traced
it in TensorRT-LLM (:func:`refuse_model`). Bytes per GPU (TP rank).
"""

from __future__ import annotations

from kvlib.models.spec import CacheKind
from kvlib.serving.engines import common
from kvlib.serving.engines.answer import EnginePlan, fmt_fraction
from kvlib.serving.engines.common import cell_bytes, gib, kv_heads
from kvlib.serving.engines.trtllm import pools
from kvlib.serving.engines.trtllm.budget import kv_budget
from kvlib.serving.engines.trtllm.defaults import (
    DEFAULT_FRACTION,
    MAX_BATCH_SIZE,
    SOURCE,
    TOKENS_PER_BLOCK,
    TRTLLM_OTHER_PEAK,
    float32,
    kv_bytes,
)
from kvlib.serving.engines.trtllm.pools import trtllm_groups

__all__ = ["engine_plan", "refuse_model"]

GiB = 1 << 30
NAME = "TensorRT-LLM"
# the release line names the commit kvlib read (SOURCE: "NVIDIA/TensorRT-LLM at <sha>, ...")
COMMIT = SOURCE.split(" at ", 1)[1].split(",", 1)[0]
RELEASE = f"at {COMMIT[:12]}"


def refuse_model(model, config: dict | None) -> None:
    """Raise (ValueError, by name) what TensorRT-LLM's rule is not traced for in ``model``
    alone, whatever the GPU, TP and KV dtype: its layer kinds and variable windows (the book's
    planner reads it too)."""
    common.refuse_layers(model, NAME)
    for g in model.groups:
        if g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
            raise ValueError(f"{model.name}: TensorRT-LLM sizes {g.kind}-window layers "
                             "(VSWA) by memory per window, a rule kvlib has not traced")


def engine_plan(dep, context: int, *, free_gpu_memory_fraction=None, other_peak_bytes=None,
                tokens_per_block=None) -> EnginePlan:
    """TensorRT-LLM's pools for ``dep`` (a Deployment: its weights per GPU, GPU, TP and KV
    dtype) at ``context`` tokens a request. other_peak_bytes: the profiling peak less the
    weights and the temporary cache (default :data:`TRTLLM_OTHER_PEAK`); the fraction and the
    block: TensorRT-LLM's options (default: its own)."""
    common.refuse_options(dep, NAME)
    refuse_model(dep.model, dep.config)
    model, gpu, tp = dep.model, dep.gpu, dep.tp
    b = kv_bytes(dep.kv_dtype)
    cell = sum(cell_bytes(pools, key, v, tp, b) for key, v in trtllm_groups(model, dep.config))
    block = tokens_per_block or TOKENS_PER_BLOCK
    fraction = DEFAULT_FRACTION if free_gpu_memory_fraction is None else float32(
        free_gpu_memory_fraction)
    other = TRTLLM_OTHER_PEAK if other_peak_bytes is None else other_peak_bytes
    total = dep.total_memory_bytes_per_gpu
    budget = kv_budget(total, dep.weights_bytes_per_gpu, other, fraction)
    terms = [("CUDA total M", total, "torch.cuda.mem_get_info"),
             ("weights per GPU W", dep.weights_bytes_per_gpu, "kvlib (vLLM's split)"),
             ("rest of the profiling peak O_T", other, "assumed"),
             (f"KV budget (M - W - O_T) x {fmt_fraction(fraction)}", budget,
              "_util.py KvCacheCreator._cal_max_memory")]
    if budget <= 0:
        raise ValueError(f"{model.name} on {gpu.name}, TP={tp}: nothing is left for the KV "
                         f"cache: weights {gib(dep.weights_bytes_per_gpu)} + the rest of the "
                         f"profiling peak {gib(other)} exceed the {gib(total)} CUDA total")
    p = pools.pool(budget=budget, cell=cell, context=context, block=block, fraction=fraction,
                   terms=terms)
    notes = [f"free_gpu_memory_fraction {fmt_fraction(fraction)}"
             + (": its default, held as a float32" if free_gpu_memory_fraction is None
                else ": --free-gpu-memory-fraction, held as a float32"),
             f"tokens: max_tokens = budget // {cell:,} B = {p.max_tokens:,}, allocated in "
             f"{p.blocks:,} blocks of {block} (rounded up): {p.tokens:,}",
             f"TensorRT-LLM would log: [MemUsageChange] Allocated {p.tokens * cell / GiB:.2f} "
             f"GiB for max tokens in paged KV cache ({p.tokens})",
             f"sessions: blocks // ceil({context:,} / {block}), at most max_batch_size "
             f"{MAX_BATCH_SIZE:,}"]
    if any(g.kind == CacheKind.LATENT for g in model.groups):
        notes.append("MLA: one latent per token per layer, not split by TP "
                     "(get_cache_size_per_token, kv_factor 1)")
    elif tp > 1 and any(kv_heads(g) < tp for g in model.groups if g.kind != CacheKind.LATENT):
        notes.append("fewer KV heads than TP ranks: TensorRT-LLM's sizing counts head_dim x "
                     "heads // TP per rank, a fraction of the head each rank keeps")
    assumptions = [f"TensorRT-LLM's profiling peak less the weights and its temporary cache "
                   f"(CUDA context, activations, CUDA graphs, NCCL): {gib(other)} "
                   "(--trtllm-peak-gib)"]
    return EnginePlan(
        engine="trtllm", release=RELEASE, model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=dep.kv_cache_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=cell, page=block,
        tokens=p.tokens, sessions=p.sessions, fraction=fraction, terms=tuple(terms),
        assumptions=tuple(assumptions), notes=tuple(notes), gpus=dep.gpus,
        weight_dtype=dep.weights_label, budget_rule="free_gpu_memory_fraction",
        rule_text=f"free_gpu_memory_fraction {fmt_fraction(fraction).split(' (')[0]}",
        budget_base=f"free_gpu_memory_fraction {fmt_fraction(fraction)} of the CUDA total "
                    "less the weights and the profiling peak",
        pools=(("blocks", p.tokens, cell),),
        extras=(("source", SOURCE), ("blocks", p.blocks), ("max_tokens", p.max_tokens),
                ("max_batch_size", MAX_BATCH_SIZE)))
