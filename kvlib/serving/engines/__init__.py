"""One model, three engines: the KV budget, pools and tokens of vLLM, SGLang and TensorRT-LLM
for the same model and GPU (``kvlib plan --engine``; docs/engines.md).

The bytes per token are the notebooks' (every engine caches the same keys and values); the
budget, the page and the pools are each engine's own, written once as SymPy expressions in
:mod:`kvlib.serving.engines.sglang` and :mod:`kvlib.serving.engines.trtllm` (vLLM's in
:mod:`kvlib.serving.capacity_formulas`), every term citing the engine's source line.

:func:`engine_plan` answers for a :class:`~kvlib.serving.deployment.Deployment` (its weights
per GPU, its GPU, TP and KV dtype); :func:`engine_tokens` is the one-call form notebook 06
uses. What an engine measures at start-up and kvlib cannot know is assumed aloud
(``assumptions``), each with the option that overrides it. A model or option whose pool rule
kvlib has not traced for that engine is refused by name (ValueError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.core.numeric import evaluate
from kvlib.core.units import fmt_bytes
from kvlib.models.spec import STATEFUL, CacheKind
from kvlib.serving.deployment import MEASURED_DEFAULTS, Deployment
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines import trtllm as trt

__all__ = ["ENGINES", "EnginePlan", "engine_plan", "engine_tokens", "refuse_model",
           "sglang_fraction", "sglang_groups", "sglang_page", "trtllm_groups", "sglang", "trtllm"]

sglang, trtllm = sg, trt
ENGINES = ("vllm", "sglang", "trtllm")
GiB = 1 << 30
MiB = 1 << 20
# TensorRT-LLM's profiling peak besides the weights and its temporary cache: the same terms
# vLLM 0.34.0 measures (in use at start, activation peak, CUDA-graph pool, non-torch memory)
TRTLLM_OTHER_PEAK = sum(MEASURED_DEFAULTS.values())


@dataclass(frozen=True)
class EnginePlan:
    """One engine's pools for one deployment and context, per GPU; bytes exact."""

    engine: str
    release: str
    model: str
    gpu: str
    tp: int
    context: int
    kv_dtype: str
    total_memory: int
    weights: int
    kv_budget: int
    cell: int  # bytes per token of the (full-attention) pool, every layer it holds
    page: int  # tokens per page (SGLang) or block (TensorRT-LLM, vLLM)
    tokens: int  # the token count the engine logs (SGLang #tokens, TensorRT-LLM's (N))
    sessions: int  # requests of `context` tokens at once
    swa_tokens: int | None = None
    swa_cell: int | None = None
    max_running_requests: int | None = None
    fraction: Fraction | None = None  # mem_fraction_static / free_gpu_memory_fraction
    terms: tuple = ()  # (label, bytes or value, source)
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["fraction"] = None if self.fraction is None else float(self.fraction)
        d["terms"] = [{"label": t[0], "value": t[1], "source": t[2]} for t in self.terms]
        d["assumptions"], d["notes"] = list(self.assumptions), list(self.notes)
        return d


def _arch(config: dict | None) -> str:
    arch = (config or {}).get("architectures") or [""]
    return arch[0] or ""


def _text(config: dict | None) -> dict:
    config = config or {}
    return config.get("text_config") or config


def _heads(group) -> int:
    s = group.sizes
    if "N_g" in s:
        return s["N_g"]
    if group.attention == "MHA":
        return s["N_h"]
    if group.attention == "MQA":
        return 1
    raise ValueError(f"attention {group.attention!r}: no KV-head count")


def _refuse_common(dep: Deployment, engine: str) -> None:
    """What neither SGLang's nor TensorRT-LLM's rule is traced for here."""
    name = {"sglang": f"SGLang {sg.RELEASE}", "trtllm": "TensorRT-LLM"}[engine]
    if dep.draft is not None:
        raise ValueError(f"--draft: {name}'s draft pools are not traced by kvlib")
    if dep.dcp > 1:
        raise ValueError(f"--dcp {dep.dcp}: {name}'s context-parallel pools are not traced")
    if dep.scales is not None:
        raise ValueError(f"--kv-scales/--kv-dtype {dep.kv_dtype} with scales: {name}'s "
                         "scaled KV formats are not traced by kvlib")
    refuse_model(dep.model, dep.config, engine)


def refuse_model(model, config: dict | None, engine: str) -> None:
    """Raise (ValueError, by name) what ``engine``'s rule is not traced for in ``model`` alone,
    whatever the GPU, TP and KV dtype: its layer kinds, and SGLang's multimodal and per-kind
    sliding pools or TensorRT-LLM's variable windows (the book's planner reads it too)."""
    name = {"sglang": f"SGLang {sg.RELEASE}", "trtllm": "TensorRT-LLM"}[engine]
    for g in model.groups:
        if g.kind in STATEFUL:
            raise ValueError(f"{model.name}: {name}'s pool for {g.attention} state layers "
                             "is not traced by kvlib (the per-request state size it budgets)")
        if g.kind in (CacheKind.NONE, CacheKind.SHARED):
            raise ValueError(f"{model.name}: {name}'s handling of {g.layers} layers that "
                             f"keep no cache ({g.kind}) is not traced by kvlib")
        if g.kind == CacheKind.INDEXER:
            raise ValueError(f"{model.name}: {name}'s sparse-attention indexer pool is "
                             "not traced by kvlib")
        if g.kind == CacheKind.COMPRESSED or g.ratio is not None or g.attention not in (
                "MHA", "GQA", "MQA", "MLA", "MLA+RoPE"):
            raise ValueError(f"{model.name}: {name}'s pool for {g.attention or g.kind} "
                             f"layers ({g.kind}) is not traced by kvlib")
    arch = _arch(config)
    if engine == "sglang":
        if arch.endswith("ForConditionalGeneration") and arch not in sg.HYBRID_SWA_ARCHS:
            raise ValueError(f"{model.name} ({arch}): SGLang {sg.RELEASE}'s multimodal "
                             "reserves (mem_fraction_static x 0.95 and more, "
                             "mm_runtime_reservation_gb) are not traced by kvlib")
        if sg.untraced_swa(arch):
            raise ValueError(f"{model.name} ({arch}): SGLang {sg.RELEASE} pools its sliding "
                             "layers with per-kind head sizes kvlib has not traced")
        return
    for g in model.groups:
        if g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
            raise ValueError(f"{model.name}: TensorRT-LLM sizes {g.kind}-window layers "
                             "(VSWA) by memory per window, a rule kvlib has not traced")


def sglang_page(model, gpu, config: dict | None) -> tuple[int, str]:
    """SGLang 0.5.23's page (tokens) on ``gpu`` when none is given, and why; ValueError where
    it is not traced (MLA other than DeepSeek's on SM100)."""
    arch = _arch(config)
    mla = any(g.kind == CacheKind.LATENT for g in model.groups)
    sm100 = gpu.cuda_capability is not None and gpu.cuda_capability[0] == 10
    if sm100 and not mla:
        return 64, ("its default attention backend on SM100 is trtllm_mha, which "
                    "needs pages of 16-128 tokens and gets 64 (arg_groups/"
                    "model_override_base.py:312-325, overrides.py:1176-1187)")
    if sm100 and arch in ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"):
        return 64, ("DeepSeek's default on SM100 is trtllm_mla, pages of 64 "
                    "(model_overrides/deepseek_v2.py:177-185, overrides.py:1155-1163)")
    if sm100:
        raise ValueError(f"{model.name} on {gpu.name}: SGLang {sg.RELEASE}'s MLA page size "
                         "on SM100 is traced for DeepSeek V2/V3 only; give --page-size")
    return 1, "1 token on CUDA (arg_groups/overrides.py:1341-1362)"


def sglang_fraction(gpu, tp: int, mla: bool, model_path: str = "") -> tuple[Fraction, str]:
    """SGLang 0.5.23's default mem_fraction_static on ``gpu`` at ``tp`` and how it came
    (:func:`~kvlib.serving.engines.sglang.default_mem_fraction`); ValueError for a GPU whose
    nvidia-smi memory.total kvlib does not know."""
    if gpu.reported_bytes is None:
        raise ValueError(f"--gpu {gpu.name}: kvlib has no nvidia-smi memory.total for it, "
                         f"which SGLang {sg.RELEASE}'s default mem_fraction_static needs; "
                         "give --mem-fraction-static")
    return sg.default_mem_fraction(Fraction(gpu.reported_bytes, MiB), tp, mla, model_path)


def _model_path(model) -> str:
    """The --model-path SGLang would be given: a bundled model's Hugging Face repository,
    else the model's name."""
    from kvlib.models.catalog import BUNDLED

    return BUNDLED[model.name].repo if model.name in BUNDLED else model.name


def sglang_groups(model, config: dict | None) -> list[tuple]:
    """Per layer group of ``model``: (group, the cell expression's name in
    :mod:`~kvlib.serving.engines.sglang` ("CELL_MLA" or "CELL_MHA"), its values by symbol name
    less TP and b, the pool: "swa" for the sliding layers of SGLang's hybrid-SWA
    architectures, else "full")."""
    hybrid = _arch(config) in sg.HYBRID_SWA_ARCHS
    out = []
    for g in model.groups:
        if g.kind == CacheKind.LATENT:
            key, values = "CELL_MLA", {"d_L": g.sizes["d_L"], "d_R": g.sizes.get("d_R", 0),
                                       "N_L": g.layers}
        else:
            key, values = "CELL_MHA", {"N_kv": _heads(g), "d_QK": g.sizes["d_QK"],
                                       "d_V": g.sizes["d_V"], "N_L": g.layers}
        sliding = g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED)
        out.append((g, key, values, "swa" if hybrid and sliding else "full"))
    return out


def trtllm_groups(model, config: dict | None) -> list[tuple[str, dict]]:
    """Per layer group: (the cell expression's name in :mod:`~kvlib.serving.engines.trtllm`,
    its values by symbol name less TP and b); ValueError for the heads and head sizes
    TensorRT-LLM's cell is not traced for (checked after the KV dtype, as it plans)."""
    text = _text(config)
    out = []
    for g in model.groups:
        if g.kind == CacheKind.LATENT:
            out.append(("CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                     "d_R": g.sizes.get("d_R", 0)}))
            continue
        heads = _heads(g)
        if "num_key_value_heads" not in text and heads != g.sizes.get("N_h", heads):
            raise ValueError(f"{model.name}: its config has no num_key_value_heads, so "
                             "TensorRT-LLM reads num_attention_heads for the cache, which "
                             "kvlib has not traced against this model's KV heads")
        if g.sizes["d_QK"] != g.sizes["d_V"]:
            raise ValueError(f"{model.name}: TensorRT-LLM's cell has one head_dim; "
                             "K and V head sizes differ here")
        out.append(("CELL_MHA", {"N_L": g.layers, "d_QK": g.sizes["d_QK"], "N_kv": heads}))
    return out


def _cell(engine, key: str, values: dict, tp: int, b: int) -> int:
    """One layer group's bytes per token: ``engine``'s cell expression ``key`` at the group's
    values, TP (the MHA cell's heads per rank) and b."""
    extra = {"TP": tp} if key == "CELL_MHA" else {}
    return evaluate(getattr(engine, key), **values, **extra, b=b)


def _gib(n) -> str:
    return fmt_bytes(n, "GiB")


def _sglang(dep: Deployment, context: int, *, mem_fraction_static=None, in_use_bytes=None,
            other_bytes=0, page_size=None) -> EnginePlan:
    _refuse_common(dep, "sglang")
    model, gpu, tp, config = dep.model, dep.gpu, dep.tp, dep.config
    arch = _arch(config)
    b = sg.kv_bytes(dep.kv_dtype)
    mla = any(g.kind == CacheKind.LATENT for g in model.groups)
    notes, terms = [], []
    if page_size is None:
        page, why = sglang_page(model, gpu, config)
        notes.append(f"page: {page} token{'s' if page > 1 else ''}: {why}")
    else:
        page = page_size
        notes.append(f"page: {page} tokens (--page-size)")
    hybrid = arch in sg.HYBRID_SWA_ARCHS
    full = swa = 0
    window = None
    kv_heads = head_dim = layers_kv = None
    for g, key, v, pool in sglang_groups(model, config):
        cell = _cell(sg, key, v, tp, b)
        if key == "CELL_MHA":
            kv_heads, head_dim = v["N_kv"], v["d_QK"]
        if pool == "swa":
            swa += cell
            window = g.window if window is None else max(window, g.window)
        else:
            full += cell
            if g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
                notes.append(f"{g.layers} {g.kind} layers (window {g.window:,}) sit in the one "
                             f"pool at full length: {arch or 'this architecture'} is not among "
                             "SGLang's hybrid-SWA architectures (configs/model_config.py:"
                             "2651-2697)")
    layers_kv = sum(g.layers for g in model.groups)
    if mla:
        kv_heads, head_dim = 1, None
    total = dep.total_memory_bytes_per_gpu
    in_use = MEASURED_DEFAULTS["in_use_bytes"] if in_use_bytes is None else in_use_bytes
    free_before = total - in_use
    assumptions = [f"free before the weights load (CUDA total less CUDA context, NCCL, other "
                   f"processes {_gib(in_use)}): {_gib(free_before)} (--in-use-gib)",
                   f"memory taken after the weights and before the KV pool: {_gib(other_bytes)} "
                   "(--other-gib)"]
    if mem_fraction_static is None:
        fraction, how = sglang_fraction(gpu, tp, mla, _model_path(model))
        notes.append(f"mem_fraction_static {float(fraction):g}: SGLang's default, {how} "
                     "(arg_groups/memory_hook.py:281-343)")
    else:
        fraction = Fraction(mem_fraction_static)
        notes.append(f"mem_fraction_static {float(fraction):g} (--mem-fraction-static)")
    budget = sg.kv_budget(free_before, dep.weights_bytes_per_gpu, other_bytes, fraction, tp)
    terms += [("free before weights F_0", free_before, "distributed/bootstrap.py:193-223"),
              ("weights per GPU W", dep.weights_bytes_per_gpu, "kvlib (vLLM's split)"),
              (f"slack F_0 x (1 - {float(fraction):g})",
               int(free_before * (1 - fraction)), "kv_cache_configurator.py:3007"),
              ("KV budget", budget, "kv_cache_configurator.py:3038, 3060")]
    if budget <= 0:
        raise ValueError(f"{model.name} on {gpu.name}, TP={tp}: SGLang would stop ('Loaded "
                         "weights leave no GPU memory for the KV cache', kv_cache_configurator.py:"
                         f"3041-3058): the weights {_gib(dep.weights_bytes_per_gpu)} exceed "
                         f"mem_fraction_static x free memory {_gib(free_before * fraction)}")
    p = sg.pool(kind="hybrid_swa" if hybrid and swa else "single", budget=budget, page=page,
                context=context, fraction=fraction, full_cell=full, swa_cell=swa,
                window=window, terms=terms, notes=notes)
    if hybrid and swa:
        both = evaluate(sg.CELL_SWA, c_full=full, c_swa=swa, r=sg.SWA_FULL_TOKENS_RATIO)
        notes.append(f"sliding-window pool: {p.swa_tokens:,} tokens = int(full x 0.8) in pages "
                     f"(swa_full_tokens_ratio, pool_configurator.py:881); full pool from "
                     f"budget // (full cell {full:,} + 0.8 x SWA cell {swa:,} = "
                     f"{float(both):,.1f} B) (pool_configurator.py:797-802, 915)")
    notes.append(f"max_running_requests {p.max_running_requests:,}: min(max(min(int(tokens / "
                 f"{context:,} x 512), 4096), 2048), tokens // 2) (kv_cache_configurator.py:"
                 "3119-3132)")
    if kv_heads is not None and head_dim is not None and not (hybrid and swa):
        heads_rank = evaluate(sg.HEADS_PER_RANK, N_kv=kv_heads, TP=tp)
        k = sg.k_size_bytes(p.tokens, page, kv_heads, head_dim, layers_kv, b, tp)
        notes.append(f"SGLang would log: KV Cache is allocated. #tokens: {p.tokens}, K size: "
                     f"{k / GiB:.2f} GB (GB = 2^30; (tokens + {page}) x {heads_rank} heads x "
                     f"{head_dim} x {layers_kv} layers x {b} B, memory_pool.py:2574-2578)")
    return EnginePlan(
        engine="sglang", release=sg.RELEASE, model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=dep.kv_cache_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=full, page=page,
        tokens=p.tokens, sessions=p.sessions, swa_tokens=p.swa_tokens, swa_cell=p.swa_cell,
        max_running_requests=p.max_running_requests, fraction=fraction, terms=tuple(terms),
        assumptions=tuple(assumptions), notes=tuple(notes))


def _trtllm(dep: Deployment, context: int, *, free_gpu_memory_fraction=None,
            other_peak_bytes=None, tokens_per_block=None) -> EnginePlan:
    _refuse_common(dep, "trtllm")
    model, gpu, tp = dep.model, dep.gpu, dep.tp
    b = trt.kv_bytes(dep.kv_dtype)
    cell = sum(_cell(trt, key, v, tp, b) for key, v in trtllm_groups(model, dep.config))
    block = tokens_per_block or trt.TOKENS_PER_BLOCK
    fraction = trt.DEFAULT_FRACTION if free_gpu_memory_fraction is None else trt.float32(
        free_gpu_memory_fraction)
    other = TRTLLM_OTHER_PEAK if other_peak_bytes is None else other_peak_bytes
    total = dep.total_memory_bytes_per_gpu
    budget = trt.kv_budget(total, dep.weights_bytes_per_gpu, other, fraction)
    terms = [("CUDA total M", total, "torch.cuda.mem_get_info"),
             ("weights per GPU W", dep.weights_bytes_per_gpu, "kvlib (vLLM's split)"),
             ("rest of the profiling peak O_T", other, "assumed"),
             (f"KV budget (M - W - O_T) x {float(fraction):.16g}", budget,
              "_util.py KvCacheCreator._cal_max_memory")]
    if budget <= 0:
        raise ValueError(f"{model.name} on {gpu.name}, TP={tp}: nothing is left for the KV "
                         f"cache: weights {_gib(dep.weights_bytes_per_gpu)} + the rest of the "
                         f"profiling peak {_gib(other)} exceed the {_gib(total)} CUDA total")
    p = trt.pool(budget=budget, cell=cell, context=context, block=block, fraction=fraction,
                 terms=terms)
    notes = [f"free_gpu_memory_fraction {float(fraction):.16g}"
             + (" (its default 0.9, held as a float32)" if free_gpu_memory_fraction is None
                else " (--free-gpu-memory-fraction, as a float32)"),
             f"tokens: max_tokens = budget // {cell:,} B = {p.max_tokens:,}, allocated in "
             f"{p.blocks:,} blocks of {block} (rounded up): {p.tokens:,}",
             f"TensorRT-LLM would log: [MemUsageChange] Allocated {p.tokens * cell / GiB:.2f} "
             f"GiB for max tokens in paged KV cache ({p.tokens})",
             f"sessions: blocks // ceil({context:,} / {block}), at most max_batch_size "
             f"{trt.MAX_BATCH_SIZE:,}"]
    if any(g.kind == CacheKind.LATENT for g in model.groups):
        notes.append("MLA: one latent per token per layer, not split by TP "
                     "(get_cache_size_per_token, kv_factor 1)")
    elif tp > 1 and any(_heads(g) < tp for g in model.groups if g.kind != CacheKind.LATENT):
        notes.append("fewer KV heads than TP ranks: TensorRT-LLM's sizing counts head_dim x "
                     "heads // TP per rank, a fraction of the head each rank keeps")
    assumptions = [f"TensorRT-LLM's profiling peak less the weights and its temporary cache "
                   f"(CUDA context, activations, CUDA graphs, NCCL): {_gib(other)} "
                   "(--trtllm-peak-gib)"]
    return EnginePlan(
        engine="trtllm", release=trt.SOURCE, model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=dep.kv_cache_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=cell, page=block,
        tokens=p.tokens, sessions=p.sessions, fraction=fraction, terms=tuple(terms),
        assumptions=tuple(assumptions), notes=tuple(notes))


def _vllm(dep: Deployment, context: int) -> EnginePlan:
    plan = dep.plan(context)
    tokens = (plan.vllm_num_blocks or 0) * (plan.vllm_block_size or plan.block_size)
    return EnginePlan(
        engine="vllm", release=dep.vllm, model=plan.model, gpu=plan.gpu, tp=plan.tp,
        context=context, kv_dtype=plan.kv_dtype, total_memory=plan.total_memory_bytes_per_gpu,
        weights=plan.weights_bytes_per_gpu, kv_budget=plan.kv_budget_bytes_per_gpu,
        cell=dep.kv_bytes_per_sequence_per_gpu(1, block_size=1), page=plan.block_size,
        tokens=tokens, sessions=plan.max_sequences_per_replica,
        fraction=plan.gpu_mem_util, assumptions=plan.assumptions, notes=plan.notes)


def engine_plan(dep: Deployment, context: int, engine: str = "vllm", **options) -> EnginePlan:
    """``engine``'s pools for ``dep`` at ``context`` tokens per request.

    options: SGLang: mem_fraction_static, in_use_bytes (memory in use before the weights),
    other_bytes, page_size; TensorRT-LLM: free_gpu_memory_fraction, other_peak_bytes (the
    profiling peak less the weights and the temporary cache), tokens_per_block."""
    if engine == "sglang":
        return _sglang(dep, context, **options)
    if engine == "trtllm":
        return _trtllm(dep, context, **options)
    if engine == "vllm":
        if options:
            raise ValueError(f"{', '.join(options)}: not an option of the vLLM engine plan")
        return _vllm(dep, context)
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")


def engine_tokens(model, gpu, engine: str = "vllm", *, tp: int = 1, context: int | None = None,
                  kv_dtype: str = "bf16", **options) -> EnginePlan:
    """The KV tokens (and pools, budget, sessions) ``engine`` would hold for ``model`` on one
    ``gpu`` with ``tp`` ranks: ``engine_tokens("llama-3.1-8b", "H200", "sglang").tokens``.

    model: a bundled name or a :class:`~kvlib.models.spec.ModelSpec`; context: tokens per
    request (default: the model's max_position_embeddings). Options as :func:`engine_plan`;
    vLLM options (vllm=..., gpu_mem_util=...) go to its Deployment."""
    from kvlib.models.catalog import load_model

    spec = load_model(model) if isinstance(model, str) else model
    vllm_keys = {"vllm", "gpu_mem_util", "block_size", "in_use_bytes",
                 "activation_peak_bytes", "graph_pool_bytes", "non_torch_bytes",
                 "overhead_bytes", "kv_cache_memory"} if engine == "vllm" else set()
    dep_opts = {k: options.pop(k) for k in list(options) if k in vllm_keys}
    dep = Deployment(spec, gpu, gpus=tp, tp=tp, kv_dtype=kv_dtype, **dep_opts)
    if context is None:
        context = spec.max_position_embeddings
        if context is None:
            raise ValueError(f"{spec.name}: no max_position_embeddings; give context")
    return engine_plan(dep, context, engine, **options)
