"""TensorRT-LLM's plan for one deployment and context (:func:`engine_plan`, the engine's answer to
the registry, :mod:`kvlib.serving.engines`), and what kvlib refuses because it has not traced
it in TensorRT-LLM (:func:`refuse_model`). Bytes per GPU (TP rank).

Two releases (``release``, as ``--vllm`` picks vLLM's): the commit kvlib reads
(:data:`~kvlib.serving.engines.trtllm.sources.PINNED`, the default) and 1.1.0rc3, whose logs
show every layer of a windowed model at full length. Both hold windowed models at full length
by default (:mod:`~kvlib.serving.engines.trtllm.windows`); the per-window split (VSWA) is what
``kv_cache_config.max_attention_window`` would give and is printed beside it. The Mamba state
(:mod:`~kvlib.serving.engines.trtllm.mamba`) and the fp8 context-MLA workspace
(:mod:`~kvlib.serving.engines.trtllm.workspace`) are traced at the pinned commit only.
"""

from __future__ import annotations

from kvlib.models.spec import STATEFUL, CacheKind
from kvlib.serving.engines import common
from kvlib.serving.engines.answer import DoesNotFit, EnginePlan, fmt_fraction
from kvlib.serving.engines.common import cell_bytes, gib, kv_heads, text_config
from kvlib.serving.engines.trtllm import mamba as mamba_rule
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
from kvlib.serving.engines.trtllm.sources import PINNED, RC3
from kvlib.serving.engines.trtllm.windows import vswa_pools, vswa_sessions, window_layers
from kvlib.serving.engines.trtllm.workspace import (
    FP8_CONTEXT_MLA_SMS,
    reserve,
    workspace_bytes_per_token,
)

__all__ = ["engine_plan", "refuse_model", "RELEASES", "resolve_release", "release_label"]

GiB = 1 << 30
NAME = "TensorRT-LLM"
COMMIT = PINNED
RELEASE = f"at {COMMIT[:12]}"
RELEASES = (PINNED[:7], RC3)  # the default first


def resolve_release(release: str | None) -> str:
    """The release a name picks: None or a prefix (7+ hex digits) of the pinned commit ->
    :data:`PINNED`; "1.1.0rc3" -> that; anything else a ValueError naming both."""
    if release is None:
        return PINNED
    text = str(release).strip().lower()
    if text.startswith("at "):
        text = text[3:]
    if text == RC3 or text == "v" + RC3:
        return RC3
    if len(text) >= 7 and PINNED.startswith(text):
        return PINNED
    raise ValueError(f"TensorRT-LLM release {release!r}: kvlib traces {PINNED[:12]} (the "
                     f"default) and {RC3}")


def release_label(release: str) -> str:
    """The plan's release line: ``at <commit>`` or ``1.1.0rc3``."""
    return RELEASE if release == PINNED else RC3


def _is_nemotron_h(config: dict | None) -> bool:
    return isinstance(text_config(config).get("hybrid_override_pattern"), str)


def refuse_model(model, config: dict | None, release: str | None = None) -> None:
    """Raise (ValueError, by name) what TensorRT-LLM's rule is not traced for in ``model``
    alone, whatever the GPU, TP and KV dtype (the book's planner reads it too): the state
    layers of any hybrid but Nemotron-H's Mamba2 (and those at 1.1.0rc3), per-kind head sizes
    (Gemma 4: KVCacheManagerV2), and every layer kind :func:`common.refuse_layers` names."""
    release = resolve_release(release)
    kinds = {g.kind for g in model.groups}
    if CacheKind.MAMBA in kinds and not _is_nemotron_h(config) and not (
            kinds & (STATEFUL - {CacheKind.MAMBA})):
        raise ValueError(f"{model.name}: Mamba2 state layers without a "
                         "hybrid_override_pattern: TensorRT-LLM's extract_mamba_kv_cache_params "
                         "reads that key (Nemotron-H); how it reads this config is not traced "
                         "by kvlib")
    if CacheKind.MAMBA in kinds and _is_nemotron_h(config) and not (
            kinds & (STATEFUL - {CacheKind.MAMBA})):
        if release == RC3:
            raise ValueError(f"{model.name}: TensorRT-LLM {RC3}'s Mamba state budget is not "
                             f"traced by kvlib (traced at {PINNED[:12]}, the default)")
        rest = [g for g in model.groups if g.kind not in (CacheKind.MAMBA, CacheKind.NONE)]
        common.refuse_layers(_Groups(model.name, rest), NAME)
        return
    common.refuse_layers(model, NAME)
    shapes = {(g.sizes.get("d_QK"), g.sizes.get("d_V")) for g in model.groups
              if g.kind in (CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED)}
    if len(shapes) > 1:
        raise ValueError(f"{model.name}: per-kind head sizes: TensorRT-LLM holds these "
                         "in KVCacheManagerV2 (Gemma 4 hybrids), whose pools kvlib has not "
                         "traced")


class _Groups:
    """A stand-in model holding a hybrid's attention groups, for the shared refusals."""

    def __init__(self, name: str, groups: list):
        self.name, self.groups = name, groups


def engine_plan(dep, context: int, *, free_gpu_memory_fraction=None, other_peak_bytes=None,
                tokens_per_block=None, release=None, max_batch_size=None,
                vswa: bool = False) -> EnginePlan:
    """TensorRT-LLM's pools for ``dep`` (a Deployment: its weights per GPU, GPU, TP and KV
    dtype) at ``context`` tokens a request. other_peak_bytes: the profiling peak less the
    weights and the temporary cache (default :data:`TRTLLM_OTHER_PEAK`); the fraction, the
    block and max_batch_size: TensorRT-LLM's options (default: its own); release: the pinned
    commit (default) or "1.1.0rc3"; vswa: plan the per-window pools that
    ``kv_cache_config.max_attention_window`` set to the config's windows gives (V1)."""
    release = resolve_release(release)
    common.refuse_options(dep, NAME)
    model, gpu, tp = dep.model, dep.gpu, dep.tp
    refuse_model(model, dep.config, release)
    b = kv_bytes(dep.kv_dtype)
    hybrid = any(g.kind == CacheKind.MAMBA for g in model.groups)
    groups = trtllm_groups(model, dep.config)
    cell = sum(cell_bytes(pools, key, v, tp, b) for key, v in groups)
    block = tokens_per_block or TOKENS_PER_BLOCK
    batch = max_batch_size or MAX_BATCH_SIZE
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
        raise DoesNotFit(f"{model.name} on {gpu.name}, TP={tp}: nothing is left for the KV "
                         f"cache: weights {gib(dep.weights_bytes_per_gpu)} + the rest of the "
                         f"profiling peak {gib(other)} exceed the {gib(total)} CUDA total")
    notes = [f"free_gpu_memory_fraction {fmt_fraction(fraction)}"
             + (": its default, held as a float32" if free_gpu_memory_fraction is None
                else ": --free-gpu-memory-fraction, held as a float32")]
    sm = _sm(gpu)
    mla_fp8 = (any(g.kind == CacheKind.LATENT for g in model.groups)
               and dep.kv_dtype in ("fp8", "fp8_e4m3") and sm in FP8_CONTEXT_MLA_SMS)
    pool_budget = budget
    if mla_fp8 and release == RC3:
        raise ValueError(f"{model.name}: an fp8 MLA cache on SM {sm}: TensorRT-LLM {RC3}'s "
                         "context-MLA workspace is not traced by kvlib (traced at "
                         f"{PINNED[:12]}, the default)")
    w = workspace_bytes_per_token(model.name, dep.config, tp, dep.kv_dtype, sm) if (
        release == PINNED) else 0
    if w:
        pool_budget, reserved = reserve(budget, cell, w, context, batch)
        terms.append(("fp8 context-MLA workspace reserve", reserved,
                      "_util.py get_mla_context_workspace_reserve"))
        notes.append(f"fp8 context-MLA workspace: w = {w:,} B a token (heads per rank x "
                     f"(rope + nope + v) dims, fp8), reserve min(w x min({batch:,}, 8,192) x "
                     f"{context:,}, budget x w / ({cell:,} + {w:,})) = {gib(reserved)}")
    window_pool = state_pool = ""
    state = None
    windows = window_layers(model, context) if not hybrid else {}
    swa = any(g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED) for g in model.groups)
    if hybrid:
        mp = mamba_rule.mamba_params(model.name, dep.config)
        state = mamba_rule.state_bytes(mp, tp)
        fixed = mamba_rule.intercept(mp, tp, batch)
        max_tokens = mamba_rule.max_tokens(mp, tp, batch, pool_budget, cell)
        blocks = -(-max_tokens // block)
        p_tokens = blocks * block
        per_request = -(-context // block) * block
        sessions = min(batch, p_tokens // per_request)
        terms.append((f"Mamba state, {batch + 1:,} slots", fixed,
                      "mamba common.py _estimate_mamba_hybrid_cache_cost"))
        state_pool = (f"{mp['L_M']} Mamba2 layers x {state // mp['L_M']:,} B = {state:,} B a "
                      f"request, reserved for max_batch_size + 1 = {batch + 1:,} slots before "
                      "any token")
        notes.append(f"tokens: max((budget - {fixed:,}) // {cell:,}, 0) = {max_tokens:,} "
                     f"(the attention layers' cell), in {blocks:,} blocks of {block}")
        fit = mamba_rule.largest_batch(mp, tp, pool_budget, cell, per_request)
        notes.append(f"the largest max_batch_size whose pool holds that many requests of "
                     f"{context:,} tokens beside their state: {fit:,}")
        pool_rows = (("blocks", p_tokens, cell),)
        extras = (("blocks", blocks), ("max_tokens", max_tokens), ("state_bytes", state),
                  ("state_slots", batch + 1))
    elif vswa and len(windows) > 1:
        wp = vswa_pools(model, context, pool_budget, tp, b, block)
        sessions = vswa_sessions(wp, context, block, batch)
        p_tokens = min(p.blocks for p in wp) * block
        window_pool = ("VSWA: " + ", ".join(f"window {p.window:,}: {p.blocks:,} blocks" for p in wp)
                       + f" (an equal 1/{len(wp)} of the budget each)")
        pool_rows = tuple((f"window {p.window:,}", p.blocks * block, p.cell) for p in wp)
        extras = tuple((f"blocks_window_{p.window}", p.blocks) for p in wp)
        cell = wp[-1].cell
    else:
        p = pools.pool(budget=pool_budget, cell=cell, context=context, block=block,
                       fraction=fraction, max_batch_size=batch, terms=terms)
        p_tokens, sessions = p.tokens, p.sessions
        notes.append(f"tokens: max_tokens = budget // {cell:,} B = {p.max_tokens:,}, "
                     f"allocated in {p.blocks:,} blocks of {block} (rounded up): {p.tokens:,}")
        notes.append(f"TensorRT-LLM would log: [MemUsageChange] Allocated "
                     f"{p.tokens * cell / GiB:.2f} GiB for max tokens in paged KV cache "
                     f"({p.tokens})")
        pool_rows = (("blocks", p.tokens, cell),)
        extras = (("blocks", p.blocks), ("max_tokens", p.max_tokens))
        if swa:
            window_pool = ("full length: every layer holds every token (no "
                           "max_attention_window set; V1 derives no windows)")
            if len(windows) > 1:
                try:
                    wp = vswa_pools(model, context, pool_budget, tp, b, block)
                    alt = vswa_sessions(wp, context, block, batch)
                    notes.append("with max_attention_window set to the config's windows (VSWA,"
                                 " an equal share each): " + ", ".join(
                                     f"window {q.window:,} {q.blocks:,} blocks" for q in wp)
                                 + f"; {alt:,} requests of {context:,} at once")
                except ValueError as err:
                    notes.append(f"VSWA: {err}")
    notes.append(f"sessions: blocks // ceil({context:,} / {block}), at most max_batch_size "
                 f"{batch:,}")
    if any(g.kind == CacheKind.LATENT for g in model.groups):
        notes.append("MLA: one latent per token per layer, not split by TP "
                     "(get_cache_size_per_token, kv_factor 1)")
    elif tp > 1 and any(kv_heads(g) < tp for g in model.groups
                        if g.kind in (CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED)):
        notes.append("fewer KV heads than TP ranks: TensorRT-LLM's sizing counts head_dim x "
                     "heads // TP per rank, a fraction of the head each rank keeps")
    assumptions = [f"TensorRT-LLM's profiling peak less the weights and its temporary cache "
                   f"(CUDA context, activations, CUDA graphs, NCCL): {gib(other)} "
                   "(--trtllm-peak-gib)"]
    if hybrid:
        assumptions.append("the Mamba pool's tokens rounded up to whole blocks as the plain "
                           "pool's are (not traced for the hybrid manager)")
    return EnginePlan(
        engine="trtllm", release=release_label(release), model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=dep.kv_cache_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=cell, page=block,
        tokens=p_tokens, sessions=sessions, fraction=fraction, terms=tuple(terms),
        assumptions=tuple(assumptions), notes=tuple(notes), gpus=dep.gpus,
        weight_dtype=dep.weights_label, budget_rule="free_gpu_memory_fraction",
        rule_text=f"free_gpu_memory_fraction {fmt_fraction(fraction).split(' (')[0]}",
        budget_base=f"free_gpu_memory_fraction {fmt_fraction(fraction)} of the CUDA total "
                    "less the weights and the profiling peak",
        pools=pool_rows, window_pool=window_pool, state_pool=state_pool,
        extras=(("source", SOURCE), ("release", release), *extras,
                ("max_batch_size", batch)))


def _sm(gpu) -> int | None:
    cc = getattr(gpu, "cuda_capability", None)
    return None if cc is None else cc[0] * 10 + cc[1]
