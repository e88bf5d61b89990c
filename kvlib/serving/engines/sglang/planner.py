"""SGLang 0.5.23's plan for one deployment and context (:func:`engine_plan`, the engine's answer to
the registry, :mod:`kvlib.serving.engines`), and what kvlib refuses because it has not traced
it in SGLang (:func:`refuse_model`). Bytes per GPU (TP rank).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kvlib.models.spec import STATEFUL, CacheKind
from kvlib.serving.engines import common
from kvlib.serving.engines.answer import DoesNotFit, EnginePlan, fmt_fraction
from kvlib.serving.engines.common import arch, cell_bytes, gib
from kvlib.serving.engines.sglang import dsv4, kept, pools
from kvlib.serving.engines.sglang import indexer as ix
from kvlib.serving.engines.sglang import multimodal as mm
from kvlib.serving.engines.sglang import state as st
from kvlib.serving.engines.sglang.budget import kv_budget, kv_rest
from kvlib.serving.engines.sglang.defaults import (
    HYBRID_SWA_ARCHS,
    RELEASE,
    SWA_FULL_TOKENS_RATIO,
    kv_bytes,
    model_path,
    sglang_fraction,
    sglang_page,
    untraced_swa,
)
from kvlib.serving.engines.sglang.pools import k_size_bytes, sglang_groups
from kvlib.serving.engines.startup import STARTUP_BYTES

__all__ = ["engine_plan", "refuse_model"]

GiB = 1 << 30
NAME = f"SGLang {RELEASE}"


def refuse_model(model, config: dict | None) -> None:
    """Raise (ValueError, by name) what SGLang's rule is not traced for in ``model`` alone,
    whatever the GPU, TP and KV dtype: its layer kinds, the multimodal architectures and the
    sliding pools of the architectures not traced (the book's planner reads it too). DeepSeek
    V4 is refused here too, by name: its pools are not layer groups (:func:`sglang_groups`
    cannot express them); :func:`engine_plan` plans it before asking this
    (:mod:`~kvlib.serving.engines.sglang.dsv4`)."""
    arch_ = arch(config)
    if dsv4.is_v4(config):
        raise ValueError(f"{model.name} ({arch_}): SGLang {RELEASE}'s DeepSeek V4 pools (SWA, "
                         "c4 and c128 compressed, indexer keys, compressor state) are not layer "
                         "groups; `kvlib plan --engine sglang` plans them (sglang.dsv4)")
    if arch_ in st.TRACED_STATE_ARCHS:  # its state layers go to the state pool; layers
        # without attention (Nemotron-H's MLP and MoE) keep nothing (pool_configurator.py:229-236)
        model = replace(model, groups=tuple(
            g for g in model.groups
            if not st.is_state_group(g, arch_) and g.kind != CacheKind.NONE))
    if ix.is_dsa(config):  # its indexer rows are priced in the one pool (sglang.indexer)
        model = replace(model, groups=tuple(g for g in model.groups
                                            if g.kind != CacheKind.INDEXER))
    common.refuse_layers(model, NAME)
    if mm.is_multimodal(config) and arch_ not in mm.TRACED_MM_ARCHS:
        raise ValueError(f"{model.name} ({arch_}): SGLang {RELEASE} serves it as multimodal; "
                         "its multimodal reserves (mem_fraction_static cut by the vision "
                         "tower, mm_runtime_reservation_gb, model overrides) are traced for "
                         "Gemma 4, Kimi K2.5, Qwen3-VL, Qwen3.5 and Qwen3.6 only")
    if untraced_swa(arch_):
        raise ValueError(f"{model.name} ({arch_}): SGLang {RELEASE} pools its sliding "
                         "layers with per-kind head sizes kvlib has not traced")


def engine_plan(dep, context: int, *, mem_fraction_static=None, in_use_bytes=None,
                other_bytes=0, page_size=None) -> EnginePlan:
    """SGLang's pools for ``dep`` (a Deployment: its weights per GPU, GPU, TP and KV dtype)
    at ``context`` tokens a request. in_use_bytes: memory in use before the weights load
    (default: kvlib's assumption, :mod:`kvlib.serving.engines.startup`); other_bytes: memory
    taken after the weights and before the pool; page_size, mem_fraction_static: SGLang's
    options (default: its own)."""
    common.refuse_options(dep, NAME)
    if dsv4.is_v4(dep.config):
        return _v4_plan(dep, context, mem_fraction_static=mem_fraction_static,
                        in_use_bytes=in_use_bytes, other_bytes=other_bytes, page_size=page_size)
    refuse_model(dep.model, dep.config)
    model, gpu, tp, config = dep.model, dep.gpu, dep.tp, dep.config
    arch_ = arch(config)
    b = kv_bytes(dep.kv_dtype)
    mla = any(g.kind == CacheKind.LATENT for g in model.groups)
    notes, terms = [], []
    if page_size is None:
        page, why = sglang_page(model, gpu, config)
        notes.append(f"page: {page} token{'s' if page > 1 else ''}: {why}")
    else:
        page = page_size
        notes.append(f"page: {page} tokens (--page-size)")
    hybrid = arch_ in HYBRID_SWA_ARCHS
    full = swa = 0
    window = None
    kv_heads = head_dim = layers_kv = None
    for g, key, v, pool in sglang_groups(model, config):
        cell = cell_bytes(pools, key, v, tp, b)
        if key == "CELL_MHA":
            kv_heads, head_dim = v["N_kv"], v["d_QK"]
        if pool == "swa":
            swa += cell
            window = g.window if window is None else max(window, g.window)
        else:
            full += cell
            if g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
                notes.append(f"{g.layers} {g.kind} layers (window {g.window:,}) sit in the one "
                             f"pool at full length: {arch_ or 'this architecture'} is not among "
                             "SGLang's hybrid-SWA architectures (configs/model_config.py:"
                             "2651-2697)")
    if ix.is_dsa(config):
        if gpu.cuda_capability is not None and gpu.cuda_capability[0] >= 10:
            raise ValueError(f"{model.name} on {gpu.name}: SGLang {RELEASE} gives DSA models an "
                             "fp8 KV cache and the trtllm backends on SM100 (arg_groups/"
                             "overrides.py:533-537, 712-726); kvlib traces its DSA pool below "
                             "SM100 only")
        mla_cell, index_cell = ix.dsa_cells(model, config, b)
        full = mla_cell + index_cell
        notes.append(f"DSA pool: latent {mla_cell:,} B + indexer keys {index_cell:,} B a token "
                     "(fp8 keys with a 4 B scale per 128, uint8 rows: pool_configurator.py:"
                     "400-409, 560-634; kv_cache_configurator.py:3411-3474)")
    layers_kv = sum(g.layers for g in model.groups
                    if g.kind not in STATEFUL and g.kind != CacheKind.NONE)
    if mla:
        kv_heads, head_dim = 1, None
    total = dep.total_memory_bytes_per_gpu
    in_use, free_before, fraction = _free_and_fraction(dep, mla, in_use_bytes,
                                                       mem_fraction_static, notes)
    assumptions = [f"free before the weights load (CUDA total less CUDA context, NCCL, other "
                   f"processes {gib(in_use)}): {gib(free_before)} (--in-use-gib)",
                   f"memory taken after the weights and before the KV pool: {gib(other_bytes)} "
                   "(--other-gib)"]
    reserve = mm.mm_reserve(config, gpu)
    budget = kv_budget(free_before, dep.weights_bytes_per_gpu, other_bytes, fraction, tp,
                       reserve)
    if reserve:
        notes.append(f"multimodal ({arch_}): {reserve >> 20} MiB of the budget held back "
                     + ("for the embedding cache (SGLANG_VLM_CACHE_SIZE_MB, environ.py:1598; "
                        if reserve == mm.MM_RESERVE else
                        "for the CUDA-IPC feature pool Qwen3-VL takes on a large Hopper GPU "
                        "(model_overrides/qwen3_vl.py:85-140; environ.py:1622; ")
                     + "configs/model_config.py:808-828)")
    terms += [("free before weights F_0", free_before, "distributed/bootstrap.py:193-223"),
              ("weights per GPU W", dep.weights_bytes_per_gpu, "kvlib (vLLM's split)"),
              (f"slack F_0 x (1 - {fmt_fraction(fraction)})",
               int(free_before * (1 - fraction)), "kv_cache_configurator.py:3007"),
              *([("multimodal reserve M_mm", reserve, "kv_cache_configurator.py:202-221, "
                  "3034-3038")] if reserve else []),
              ("KV budget", budget, "kv_cache_configurator.py:3038, 3060")]
    if budget <= 0:
        raise DoesNotFit(f"{model.name} on {gpu.name}, TP={tp}: SGLang would stop ('Loaded "
                         "weights leave no GPU memory for the KV cache', kv_cache_configurator.py:"
                         f"3041-3058): the weights {gib(dep.weights_bytes_per_gpu)} exceed "
                         f"mem_fraction_static x free memory {gib(free_before * fraction)}")
    states = [g for g in model.groups if g.kind in STATEFUL]
    slots = state_bytes = None
    kv_pool_budget = budget
    if states:
        state_bytes = sum(st.state_per_request(g, config or {}, tp) for g in states)
        rest = kv_rest(free_before, dep.weights_bytes_per_gpu, other_bytes, fraction, tp,
                       reserve)
        slots, kv_pool_budget = st.split_budget(rest, state_bytes)
        if slots <= 0:
            raise DoesNotFit(f"{model.name} on {gpu.name}, TP={tp}: SGLang would stop ('Not "
                             "enough GPU memory for hybrid (mamba/linear-attention) state "
                             f"cache', kv_cache_configurator.py:3387-3396): {slots} state slots")
        terms += [("state per request S", state_bytes, "configs/mamba_utils.py, "
                   "qwen3_next.py:288-313, nemotron_h.py:425-439"),
                  ("state pool (K + 1) x S", (slots + 1) * state_bytes,
                   "kv_cache_configurator.py:3397-3403"),
                  ("KV pool budget", kv_pool_budget, "kv_cache_configurator.py:3040, 3060")]
        notes.append(f"state pool: mamba_full_memory_ratio 0.9 gives the state r / (1 + r) of "
                     f"the budget: {slots:,} slots of {state_bytes:,} B (max_mamba_cache_size, "
                     "+1 padding slot); the KV pool holds only the full-attention layers "
                     "(kv_cache_configurator.py:3229-3403, pool_configurator.py:229-236)")
    p = pools.pool(kind="hybrid_swa" if hybrid and swa else "single", budget=kv_pool_budget,
                   page=page, context=context, fraction=fraction, full_cell=full, swa_cell=swa,
                   window=window, terms=terms, notes=notes)
    if states:
        ratio = st.mamba_ratio(arch_)
        cap = kept.evaluate("state.MAMBA_CAP", K=slots, q=ratio)
        uncapped = p.max_running_requests
        running = min(uncapped, cap)
        p = replace(p, max_running_requests=running, sessions=min(p.sessions, running))
        notes.append(f"max_running_requests capped at K // {ratio} = {cap:,} by the state "
                     f"slots ({ratio} a request: 3 + 2 extra-buffer tracking slots, "
                     "kv_cache_configurator.py:3062-3088, 3134-3150)")
    if hybrid and swa:
        both = kept.evaluate("pools.CELL_SWA", c_full=full, c_swa=swa, r=SWA_FULL_TOKENS_RATIO)
        notes.append(f"sliding-window pool: {p.swa_tokens:,} tokens = int(full x 0.8) in pages "
                     f"(swa_full_tokens_ratio, pool_configurator.py:881); full pool from "
                     f"budget // (full cell {full:,} + 0.8 x SWA cell {swa:,} = "
                     f"{float(both):,.1f} B) (pool_configurator.py:797-802, 915)")
    notes.append(f"max_running_requests {uncapped if states else p.max_running_requests:,}"
                 f"{' before the state cap' if states else ''}: min(max(min(int(tokens / "
                 f"{context:,} x 512), 4096), 2048), tokens // 2) (kv_cache_configurator.py:"
                 "3119-3132)")
    if kv_heads is not None and head_dim is not None and not (hybrid and swa):
        heads_rank = kept.evaluate("pools.HEADS_PER_RANK", N_kv=kv_heads, TP=tp)
        k = k_size_bytes(p.tokens, page, kv_heads, head_dim, layers_kv, b, tp)
        notes.append(f"SGLang would log: KV Cache is allocated. #tokens: {p.tokens}, K size: "
                     f"{k / GiB:.2f} GB (GB = 2^30; (tokens + {page}) x {heads_rank} heads x "
                     f"{head_dim} x {layers_kv} layers x {b} B, memory_pool.py:2574-2578)")
    if hybrid and swa:
        pools_ = (("full", p.tokens, full), ("sliding window", p.swa_tokens, swa))
        window_pool = (f"a pool of its own, {p.swa_tokens:,} tokens = 0.8 x the full pool "
                       "(swa_full_tokens_ratio)")
    else:
        pools_ = (("full", p.tokens, full),)
        window_pool = ("sliding layers at full length in the one pool" if window is None and any(
            g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED) for g in model.groups) else "")
    f = fmt_fraction(fraction)
    return EnginePlan(
        engine="sglang", release=RELEASE, model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=dep.kv_cache_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=full, page=page,
        tokens=p.tokens, sessions=p.sessions, swa_tokens=p.swa_tokens, swa_cell=p.swa_cell,
        max_running_requests=p.max_running_requests, fraction=fraction, terms=tuple(terms),
        assumptions=tuple(assumptions), notes=tuple(notes), gpus=dep.gpus,
        weight_dtype=dep.weights_label, budget_rule="mem_fraction_static",
        rule_text=f"mem_fraction_static {f}",
        budget_base=f"mem_fraction_static {f} of the memory free before the weights load, "
                    "less the weights",
        pools=pools_, window_pool=window_pool,
        state_pool=(f"{slots:,} request states of {state_bytes:,} B (max_mamba_cache_size: "
                    "mamba_full_memory_ratio 0.9 of the budget)" if states else ""),
        extras=(("max_running_requests", p.max_running_requests),
                *((("max_mamba_cache_size", slots), ("state_bytes_per_request", state_bytes),
                   ("kv_pool_budget", kv_pool_budget)) if states else ()),
                ("swa_tokens", p.swa_tokens), ("swa_bytes_per_token", p.swa_cell)))


def _free_and_fraction(dep, mla: bool, in_use_bytes, mem_fraction_static,
                       notes: list[str]) -> tuple[int, int, Fraction]:
    """The memory in use before the weights (kvlib's assumption unless given), the memory free
    then, and mem_fraction_static (SGLang's default for this GPU, TP and model unless given),
    its note appended to ``notes``: where every SGLang plan starts."""
    in_use = STARTUP_BYTES["in_use_bytes"] if in_use_bytes is None else in_use_bytes
    if mem_fraction_static is None:
        fraction, how = sglang_fraction(dep.gpu, dep.tp, mla, model_path(dep.model), dep.config)
        notes.append(f"mem_fraction_static {float(fraction):g}: SGLang's default, {how} "
                     "(arg_groups/memory_hook.py:281-343)")
    else:
        fraction = Fraction(mem_fraction_static)
        notes.append(f"mem_fraction_static {float(fraction):g} (--mem-fraction-static)")
    return in_use, dep.total_memory_bytes_per_gpu - in_use, fraction


def _v4_plan(dep, context: int, *, mem_fraction_static, in_use_bytes, other_bytes,
             page_size) -> EnginePlan:
    """:func:`engine_plan` for DeepSeek V4: the budget as for every model, the pools
    :mod:`~kvlib.serving.engines.sglang.dsv4`'s."""
    model, gpu, tp, config = dep.model, dep.gpu, dep.tp, dep.config
    if gpu.cuda_capability is None or gpu.cuda_capability[0] >= 10:
        raise ValueError(f"{model.name} on {gpu.name}: kvlib traces SGLang {RELEASE}'s DeepSeek "
                         "V4 pool on CUDA below SM100 (the flashmla backend and the V4 row "
                         "layout, arg_groups/deepseek_v4_hook.py:45-60)")
    page = dsv4.PAGE if page_size is None else page_size
    notes = [f"page: {page} tokens: " + ("DeepSeek V4's (arg_groups/model_overrides/"
                                         "deepseek_v4.py:51)" if page_size is None
                                         else "(--page-size)"),
             "kv dtype: SGLang resolves auto to fp8_e4m3 for DeepSeek V4; its flashmla pool "
             "stores the same V4 row whatever the dtype (pool_configurator.py:1104-1110, "
             "1178-1179)"]
    total = dep.total_memory_bytes_per_gpu
    # SGLang reads V4 as MHA (configs/model_config.py:1420-1431), not MLA
    in_use, free_before, fraction = _free_and_fraction(dep, False, in_use_bytes,
                                                       mem_fraction_static, notes)
    budget = kv_budget(free_before, dep.weights_bytes_per_gpu, other_bytes, fraction, tp)
    if budget <= 0:
        raise DoesNotFit(f"{model.name} on {gpu.name}, TP={tp}: SGLang would stop ('Loaded "
                         "weights leave no GPU memory for the KV cache', kv_cache_configurator.py:"
                         f"3041-3058): the weights {gib(dep.weights_bytes_per_gpu)} exceed "
                         f"mem_fraction_static x free memory {gib(free_before * fraction)}")
    v = dsv4.v4_pool(config, budget, page)
    terms = [("free before weights F_0", free_before, "distributed/bootstrap.py:193-223"),
             ("weights per GPU W", dep.weights_bytes_per_gpu, "kvlib (vLLM's split)"),
             (f"slack F_0 x (1 - {fmt_fraction(fraction)})", int(free_before * (1 - fraction)),
              "kv_cache_configurator.py:3007"),
             ("KV budget", budget, "kv_cache_configurator.py:3038, 3060"),
             ("c128 compressor state (fixed)", v.c128_state, "pool_configurator.py:1509-1528")]
    full_token = float(v.full_token)
    notes += [
        f"DeepSeek V4 row: {v.entry} B (448 fp8 + 64 bf16 RoPE + 8 B scales), {v.swa_row} B in "
        "its pages of 576-B multiples (pool_configurator.py:1106-1108, 1353-1370; kv_layout.py:"
        "49-105)",
        f"SWA pool: {v.swa_tokens:,} tokens = int(#tokens x 0.1) in pages of {page}, every one "
        f"of the {v.layers} layers a row, {float(v.swa_token):,.2f} B a slot with the c4 "
        "compressor state (swa_full_tokens_ratio 0.1, model_overrides/deepseek_v4.py:44-49; "
        "pool_configurator.py:1372-1388, 1457-1461)",
        f"compressed pools: c4 {v.c4_tokens:,} entries x {v.c4_layers} layers (row + 132 B of "
        f"fp8 indexer keys), c128 {v.c128_tokens:,} entries x {v.c128_layers} layers "
        "(pool_configurator.py:1390-1404, 1489-1500)",
        f"#tokens = (budget - c128 state {v.c128_state:,} B) // {full_token:,.2f} B a full "
        "token, in pages (pool_configurator.py:1437-1446, 1638-1701)",
        f"max_running_requests {v.max_running_requests:,}: min(256, #tokens // 2) (DeepSeek V4 "
        "sets 256, arg_groups/deepseek_v4_hook.py:138-146; kv_cache_configurator.py:3126-3129)"]
    # auto is SGLang's own here: fp8_e4m3, whatever vLLM's auto would be (the row is the same)
    auto = dep.kv_cache_dtype == "auto"
    kv_dtype = "fp8_e4m3" if auto else dep.kv_cache_dtype
    kv_auto = (("kv_dtype_auto", "SGLang's for DeepSeek V4, pool_configurator.py:1104-1110"),)
    sessions = min(v.max_running_requests, v.tokens // (-(-context // page) * page),
                   v.swa_tokens // (min(context, config["sliding_window"]) + page))
    f = fmt_fraction(fraction)
    return EnginePlan(
        engine="sglang", release=RELEASE, model=model.name, gpu=gpu.name, tp=tp,
        context=context, kv_dtype=kv_dtype, total_memory=total,
        weights=dep.weights_bytes_per_gpu, kv_budget=budget, cell=full_token, page=page,
        tokens=v.tokens, sessions=sessions, swa_tokens=v.swa_tokens,
        swa_cell=float(v.swa_token), max_running_requests=v.max_running_requests,
        fraction=fraction, terms=tuple(terms),
        assumptions=(f"free before the weights load (CUDA total less CUDA context, NCCL, other "
                     f"processes {gib(in_use)}): {gib(free_before)} (--in-use-gib)",
                     f"memory taken after the weights and before the KV pool: "
                     f"{gib(other_bytes)} (--other-gib)"),
        notes=tuple(notes), gpus=dep.gpus, weight_dtype=dep.weights_label,
        budget_rule="mem_fraction_static", rule_text=f"mem_fraction_static {f}",
        budget_base=f"mem_fraction_static {f} of the memory free before the weights load, "
                    "less the weights",
        pools=(("full (c4 + c128 compressed)", v.tokens, full_token),
               ("sliding window", v.swa_tokens, float(v.swa_token))),
        window_pool=f"a pool of its own, {v.swa_tokens:,} tokens = 0.1 x the full pool "
                    "(swa_full_tokens_ratio 0.1)",
        state_pool=f"compressor state: c4 {v.c4_state_rows:,} rows with the SWA pages, c128 "
                   f"{v.c128_state_rows:,} rows for 257 request slots",
        extras=(("max_running_requests", v.max_running_requests),
                ("swa_tokens", v.swa_tokens), ("swa_bytes_per_token", float(v.swa_token)),
                ("c4_tokens", v.c4_tokens), ("c128_tokens", v.c128_tokens),
                ("c128_state_bytes", v.c128_state), *(kv_auto if auto else ())))
