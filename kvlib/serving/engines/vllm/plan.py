"""vLLM's answer for one deployment and one context: a :class:`Plan` (``kvlib plan``,
notebook 06); ``Deployment.plan`` and :func:`kvlib.serving.engines.vllm.deployment.plan`
make one. Every byte count is per GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import kv_format
from kvlib.core.units import fmt_bytes
from kvlib.serving.decode import decode_step_seconds, expected_distinct_experts
from kvlib.serving.engines.vllm.defaults import VLLM_DEFAULTS
from kvlib.serving.engines.vllm.dtypes import vllm_kv_cache_dtype
from kvlib.serving.engines.vllm.max_model_len import check_max_model_len
from kvlib.serving.engines.vllm.pages import STATE_KINDS
from kvlib.serving.engines.vllm.sessions import vllm_sessions
from kvlib.serving.kv import sequence_shares
from kvlib.serving.prefix_sharing import scheduler_sessions_sharing_prefix

__all__ = ["Plan", "make_plan"]


def _gb(n: int) -> str:
    return fmt_bytes(n, "GB")


def _readable(n: int) -> str:
    """GB, or MB / KB below a GB (never "0 GB")."""
    return fmt_bytes(n, next((u for u, s in (("GB", 10**9), ("MB", 10**6)) if n >= s), "KB"))


@dataclass(frozen=True)
class Plan:
    """The answer for one deployment and one context; byte counts per GPU."""

    model: str
    gpu: str
    gpus: int
    tp: int
    replicas: int
    dcp: int
    context: int
    kv_dtype: str  # the KV dtype as given: vLLM's name (nvfp4) or kvlib's (bf16)
    weight_dtype: str
    gpu_mem_util: Fraction
    block_size: int
    params: int | None  # None: not counted (no counter; the budget was given outright)
    hbm_bytes_per_gpu: int
    total_memory_bytes_per_gpu: int
    memory_basis: str
    usable_bytes_per_gpu: int
    weights_bytes_per_gpu: int | None  # None: not counted (they do not enter the budget)
    draft_weights_bytes_per_gpu: int
    overhead_bytes_per_gpu: int
    kv_budget_bytes_per_gpu: int
    kv_bytes_per_sequence_per_gpu: int
    draft_kv_bytes_per_sequence_per_gpu: int
    live_kv_bytes_per_sequence_per_gpu: int
    max_sequences_per_replica: int
    max_sequences: int
    kv_used_bytes_per_gpu: int
    kv_free_bytes_per_gpu: int
    bandwidth_bytes_per_second: int
    decode_step_seconds_lower_bound: float | None
    active_params: int | None
    decode_weights_read_bytes_per_gpu: int | None
    decode_step_seconds_all_weights: float | None
    decode_step_seconds_uniform_routing: float | None
    expected_experts_per_layer: float | None
    routed_experts: int | None
    experts_per_token: int | None
    kv_replication: int
    draft: str | None = None
    fits: bool = True
    reason: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    state_bytes_per_sequence_per_gpu: int = 0
    vllm_max_concurrency: float | None = None
    vllm_block_size: int | None = None
    vllm_kv_cache_groups: int | None = None
    vllm_padding_layers: int | None = None
    vllm_blocks_per_request: int | None = None
    vllm_block_sizes: dict | None = None  # kind -> tokens per block, where groups differ
    # what vLLM's allocator holds per sequence, from the same layout as the logged figure
    vllm_num_blocks: int | None = None
    vllm_bytes_per_block: int | None = None
    vllm_blocks_per_sequence: int | None = None  # at full length (decode)
    vllm_prefill_blocks: int | None = None  # the peak while one prompt is prefilled
    vllm_max_num_seqs: int | None = None
    vllm_needed_bytes: int | None = None  # what its start-up check compares with the budget
    vllm_max_model_len: int | None = None  # the longest context that passes it (0: none)
    bytes_alone_sequences_per_replica: int | None = None  # budget // (cache + state bytes)
    sessions_basis: str = "bytes"  # "vllm": vLLM's allocator; "bytes": bytes alone
    vllm: str = ""  # the vLLM release whose defaults and budget rule apply
    budget_rule: str = ""  # "extensible" (0.34.0), "profiled" (0.33.0), "kv_cache_memory_bytes"
    in_use_bytes_per_gpu: int | None = None  # 0.34.0's terms, assumed (see assumptions)
    margin_bytes_per_gpu: int | None = None
    resident_bytes_per_gpu: int | None = None
    peak_bytes_per_gpu: int | None = None
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    kv_element_dtype: str = ""  # kvlib's element dtype behind kv_dtype (nvfp4: int4)
    # vLLM's start-up check of max_model_len (= context) against the config's derived maximum
    vllm_derived_max_model_len: int | None = None
    vllm_max_len_key: str | None = None
    vllm_rope_factor: float = 1.0
    vllm_refuses_max_model_len: bool = False  # it raises at start-up
    vllm_allow_long_max_model_len: bool = False  # it would, but the env var overrides it
    vllm_max_model_len_why: str = ""  # why, one line naming the override ("" within the limit)
    # a prompt prefix every request shares (prefix caching): its whole blocks, stored once
    shared_prefix_tokens: int = 0
    shared_prefix_blocks: int = 0
    max_sequences_per_replica_without_prefix: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready: ints stay exact, the utilization is a float, seconds a float."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["gpu_mem_util"] = float(self.gpu_mem_util)
        d["notes"] = list(self.notes)
        d["assumptions"] = list(self.assumptions)
        return d


def make_plan(dep, context: int, sessions: str = "vllm", shared_prefix: int = 0) -> Plan:
    """Budget, cache per sequence, sequence count and decode bound of ``dep`` (a
    :class:`~kvlib.serving.engines.vllm.deployment.Deployment`) at ``context`` tokens.

    sessions: "vllm" (default) counts what vLLM's allocator carries, in its blocks, with the
    bytes per sequence of its pages; "bytes" counts budget // (cache + state bytes), the
    formula notebook 06 builds up and its explorer (in the notebook and the book) follows.
    shared_prefix: tokens of a prompt prefix every request shares, counted as vLLM's prefix
    caching (on by default) shares it: its whole blocks once
    (:func:`kvlib.serving.prefix_sharing.scheduler_sessions_sharing_prefix`); vLLM's layout only.
    """
    context = validate.positive_int("context", context)
    shared_prefix = validate.positive_int("shared prefix tokens", shared_prefix, allow_zero=True)
    if sessions not in ("vllm", "bytes"):
        raise ValueError(f"sessions must be vllm or bytes, got {sessions!r}")
    gpu = dep.gpu
    usable, budget = dep.usable_bytes_per_gpu, dep.kv_budget_bytes_per_gpu
    notes = [_budget_note(dep)] + list(dep.model.assumptions)
    engine, vllm = vllm_sessions(dep, context, budget, notes)
    draft_per_seq = dep.draft_kv_per_sequence(context)
    state = dep.state_bytes_per_sequence_per_gpu
    # a decode step reads every live cache and reads (and writes) every state
    live = dep.kv_bytes_per_sequence_per_gpu(context, block_size=1) + state
    bytes_alone = max(0, budget) // (dep.kv_bytes_per_sequence_per_gpu(context) + state)
    if engine is not None and sessions == "vllm":
        # one layout for the whole plan: the sessions, the bytes per sequence and the logged
        # concurrency all come from vLLM's pages and blocks (one row size, one block size)
        hold = engine.holding(context)
        kinds = [g.kind in STATE_KINDS for g in engine.groups]
        state = sum(n for n, st in zip(hold.by_group, kinds, strict=True) if st) \
            * engine.bytes_per_block
        per_seq = sum(n for n, st in zip(hold.by_group, kinds, strict=True) if not st) \
            * engine.bytes_per_block
        per_replica = engine.sessions(budget, context)
        block_size, basis = engine.block_size, "vllm"
    else:
        per_seq = dep.kv_bytes_per_sequence_per_gpu(context)
        per_replica, block_size, basis = bytes_alone, dep.block_size, "bytes"
    alone, shared_blocks = None, 0
    if shared_prefix:
        per_replica, alone, shared_blocks = _sharing(dep, engine, basis, budget, context,
                                                     shared_prefix, per_replica, notes)
    fits, reason = True, ""
    weights = dep.weights_bytes_per_gpu
    fixed = ((weights or 0) + dep.draft_weights_bytes_per_gpu
             + dep.overhead_bytes_per_gpu)
    draft = (f" + draft weights {_gb(dep.draft_weights_bytes_per_gpu)}"
             if dep.draft is not None else "")
    if dep.rule == "kv_cache_memory_bytes" and (
            fixed + budget > dep.total_memory_bytes_per_gpu):
        fits = False
        what = (f"weights {_gb(weights)}{draft} + " if weights is not None else
                f"{draft[3:]} + " if draft else "")
        reason = (f"does not fit: {what}"
                  f"kv_cache_memory_bytes {_gb(budget)} exceed the "
                  f"{_gb(dep.total_memory_bytes_per_gpu)} of the {gpu.name}")
    elif budget <= 0:
        fits = False
        how = (f"gpu_memory_utilization {float(dep.gpu_mem_util):g} x "
               f"{_gb(dep.total_memory_bytes_per_gpu)} {gpu.name}")
        if dep.rule == "extensible":
            how = (f"vLLM {dep.vllm}: the smaller of {how} and the total less "
                   f"{_gb(dep.in_use_bytes)} in use at start and a margin of "
                   f"{_gb(dep.margin_bytes)}")
        reason = (f"does not fit: weights {_gb(dep.weights_bytes_per_gpu)}{draft} + "
                  f"overhead {_gb(dep.overhead_bytes_per_gpu)} = {_gb(fixed)} per GPU exceed "
                  f"the usable {_gb(usable)} ({how}); use "
                  f"more tensor parallelism, smaller weights or a larger GPU")
    elif basis == "vllm" and vllm["vllm_needed_bytes"] > budget - engine.bytes_per_block:
        fits = False
        longest = vllm["vllm_max_model_len"]
        reason = (f"vLLM {dep.vllm} would refuse to start: to serve one request of "
                  f"{context:,} tokens it needs {_gib(vllm['vllm_needed_bytes'])} of KV cache, "
                  f"more than the {_gib(max(0, budget - engine.bytes_per_block))} it has "
                  "(the budget less the null block; v1/core/kv_cache_planning.py:99-131)"
                  + (f"; the longest context that fits is {longest:,} tokens (its own search)"
                     if longest else ""))
    elif per_replica == 0:
        fits = False
        reason = (f"does not fit: the KV budget of {_gb(budget)} per GPU holds no "
                  f"sequence of {context:,} tokens (one needs {_gb(per_seq + state)} per GPU)")
    # vLLM raises while it builds its ModelConfig, before any memory: the Plan records it
    # (vllm_refuses_max_model_len, vllm_max_model_len_why) and kvlib plan refuses on it
    length = check_max_model_len(dep.config, context, release=dep.vllm,
                                 default_length=dep.model.max_position_embeddings)
    used = per_replica * (per_seq + state)
    if per_replica and shared_blocks:  # the prefix's blocks are held once, not per sequence
        used -= (per_replica - 1) * shared_blocks * engine.bytes_per_block
    bound = all_weights = uniform = experts = None
    read = dep.decode_read_bytes_per_gpu()
    layout = dep.routing()
    bandwidth = Fraction(gpu.bandwidth)
    if per_replica and read is not None:
        bound = float(decode_step_seconds(read, live, per_replica, bandwidth))
        all_weights = float(decode_step_seconds(
            dep.weights_bytes_per_gpu + dep.draft_weights_bytes_per_gpu,
            live, per_replica, bandwidth))
        if layout is not None:
            uniform = float(decode_step_seconds(
                dep.decode_read_bytes_per_gpu(per_replica), live, per_replica, bandwidth))
            experts = round(float(expected_distinct_experts(
                layout.experts, layout.per_token, per_replica)), 2)
    notes += _weights_notes(dep)
    notes += _kv_format_notes(dep)
    if basis == "bytes":
        notes.append("sessions: by bytes alone (budget // (cache + state))"
                     + (", vLLM's layout not computed" if engine is None else
                        f"; vLLM's allocator carries {engine.sessions(budget, context):,}"))
    limit = dep.model.max_position_embeddings
    if length.allowed or length.refuses:
        notes.append(length.why)
    elif (not length.refuses and limit is not None and context > limit
          and length.limit is not None):
        notes.append(f"context {context:,} exceeds the model's max_position_embeddings "
                     f"{limit:,}; vLLM accepts up to {length.limit:,} ({length.key} x RoPE "
                     f"factor {length.factor:g}, config/model.py:2642-2678)")
    replication = max(s.sharding.replicas for s in sequence_shares(
        dep.model, 1, dep.kv_dtype, dep.tp, 1, None, dep.dcp))
    return Plan(
        model=dep.model.name, gpu=gpu.name, gpus=dep.gpus, tp=dep.tp,
        replicas=dep.replicas, dcp=dep.dcp, context=context, kv_dtype=dep.kv_cache_dtype,
        kv_element_dtype=dep.kv_dtype,
        weight_dtype=dep.weights_label, gpu_mem_util=dep.gpu_mem_util,
        block_size=block_size, params=dep.params,
        hbm_bytes_per_gpu=gpu.hbm_bytes,
        total_memory_bytes_per_gpu=dep.total_memory_bytes_per_gpu,
        memory_basis=dep.memory_basis, usable_bytes_per_gpu=usable,
        weights_bytes_per_gpu=dep.weights_bytes_per_gpu,
        draft_weights_bytes_per_gpu=dep.draft_weights_bytes_per_gpu,
        overhead_bytes_per_gpu=dep.overhead_bytes_per_gpu, kv_budget_bytes_per_gpu=budget,
        kv_bytes_per_sequence_per_gpu=per_seq,
        draft_kv_bytes_per_sequence_per_gpu=draft_per_seq,
        live_kv_bytes_per_sequence_per_gpu=live,
        max_sequences_per_replica=per_replica,
        max_sequences=per_replica * dep.replicas,
        kv_used_bytes_per_gpu=used, kv_free_bytes_per_gpu=max(0, budget) - used,
        bandwidth_bytes_per_second=gpu.bandwidth,
        decode_step_seconds_lower_bound=bound, active_params=dep.active,
        decode_weights_read_bytes_per_gpu=read, decode_step_seconds_all_weights=all_weights,
        decode_step_seconds_uniform_routing=uniform, expected_experts_per_layer=experts,
        routed_experts=layout.experts if layout else None,
        experts_per_token=layout.per_token if layout else None,
        kv_replication=replication,
        draft=dep.draft.name if dep.draft is not None else None,
        fits=fits, reason=reason, notes=tuple(notes),
        state_bytes_per_sequence_per_gpu=state, **vllm,
        bytes_alone_sequences_per_replica=bytes_alone, sessions_basis=basis,
        vllm=dep.vllm, budget_rule=dep.rule,
        in_use_bytes_per_gpu=dep.in_use_bytes if dep.rule == "extensible" else None,
        margin_bytes_per_gpu=dep.margin_bytes, resident_bytes_per_gpu=dep.resident_bytes,
        peak_bytes_per_gpu=dep.peak_bytes, assumptions=tuple(_assumptions(dep)),
        **length.to_dict(),
        shared_prefix_tokens=shared_prefix, shared_prefix_blocks=shared_blocks,
        max_sequences_per_replica_without_prefix=alone,
    )


def _sharing(dep, engine, basis: str, budget: int, context: int, prefix: int, alone: int,
             notes: list[str]) -> tuple[int, int, int]:
    """(sessions, the same without the prefix, shared blocks) when every request begins with
    the same ``prefix`` tokens; ValueError naming the option where kvlib cannot count it."""
    what = f"--shared-prefix {prefix:,} (tokens every request shares)"
    if basis != "vllm" or engine is None:
        raise ValueError(f"{what}: counted in vLLM's blocks, and kvlib has no vLLM layout for "
                         "this plan (a draft model, DCP, a KV format with scales, or a layout "
                         "the notes name)")
    if prefix >= context:
        raise ValueError(f"{what}: must be shorter than the context, {context:,} tokens")
    try:
        n, shared = scheduler_sessions_sharing_prefix(engine, budget, context, prefix)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    own = engine.holding(context).decode - shared
    notes.append(f"shared prefix: every request begins with the same {prefix:,} tokens; vLLM's "
                 f"prefix caching (on by default) hashes whole blocks only "
                 f"(v1/core/kv_cache_utils.py:953-995), so {shared:,} blocks "
                 f"({shared * engine.block_size:,} tokens) are stored once and the last "
                 f"{prefix - shared * engine.block_size:,} prefix tokens sit in each request's "
                 f"own blocks: {own:,} blocks each beyond the shared ones, {n:,} sequences "
                 f"instead of {alone:,}")
    return n, alone, shared


def _kv_format_notes(dep) -> list[str]:
    """Which of vLLM's kv_cache_dtype values the plan's cache is, and how kvlib maps it."""
    name = vllm_kv_cache_dtype(dep.kv_dtype, dep.scales)
    if name is None or dep.scales is None:  # plain dtypes: b bytes per element, exact
        return []
    if kv_format(dep.kv_cache_dtype).scales is not None:  # as given: nvfp4_4over6 stays itself
        name = dep.kv_cache_dtype
    note = kv_format(name).note
    return [f"kv_cache_dtype: vLLM's {name}" + (f"; {note}" if note else "")]


def _gib(n: int) -> str:
    return fmt_bytes(n, "GiB")


def _budget_note(dep) -> str:
    """Which release and which budget rule the plan used (docs/capacity.md)."""
    if dep.rule == "kv_cache_memory_bytes":
        off = (", which also turns its extensible KV cache off"
               if VLLM_DEFAULTS[dep.vllm]["rule"] == "extensible" else "")
        return (f"budget: vLLM {dep.vllm} with kv_cache_memory_bytes {dep.kv_cache_memory:,} "
                f"B ({_gib(dep.kv_cache_memory)}) per GPU{off}: the KV budget is that, "
                "whatever the weights and the utilization")
    if dep.rule == "extensible":
        return (f"budget: vLLM {dep.vllm}'s extensible KV cache (its default on CUDA and "
                "ROCm), sized after warmup and CUDA-graph capture: min(ceil(u M), M - in use "
                "at start - margin) - weights - non-torch - graph pool - peak, margin = "
                f"max(1 GiB, 0.75 x peak), u = {float(dep.gpu_mem_util):g}"
                + (" (below 1.0 it shrinks the cache)" if dep.gpu_mem_util < 1 else
                   " (its default)"))
    return (f"budget: vLLM {dep.vllm}'s profiled budget: ceil(u M) - weights - overhead, "
            f"u = {float(dep.gpu_mem_util):g}")


def _assumptions(dep) -> list[str]:
    """What vLLM measures at start-up and kvlib can only assume, each with its value and the
    option that overrides it."""
    if dep.rule == "kv_cache_memory_bytes":
        return []
    if dep.rule == "profiled":
        return [f"non-KV memory besides the weights (activation peak, non-torch memory, "
                f"CUDA-graph estimate): {_gib(dep.overhead_bytes)} (--overhead-gib)"]
    return [f"in use when vLLM starts (CUDA context, other processes): {_gib(dep.in_use_bytes)} "
            "(--in-use-gib)",
            f"activation peak of the profiling run: {_gib(dep.activation_peak_bytes)} "
            "(--activation-peak-gib)",
            f"CUDA-graph pool (and vLLM's estimate of it): {_gib(dep.graph_pool_bytes)} "
            "(--graph-pool-gib)",
            f"non-torch memory (NCCL, cuBLAS): {_gib(dep.non_torch_bytes)} (--non-torch-gib)",
            f"peak kept free = activation peak + graph estimate = {_gib(dep.peak_bytes)}, "
            "warmup's own peak and torch's reservation growth assumed no larger"]


def _weights_notes(dep) -> list[str]:
    if dep.stored_in_use:
        st = dep.stored
        split = (f"; per GPU {_gb(dep.weights_bytes_per_gpu)}: split by TP {dep.tp}"
                 + (f", {_readable(dep.checkpoint.replicated)} of it held whole by every rank "
                    "(as counted from the config)" if dep.checkpoint is not None else
                    " evenly (kvlib cannot count this family, so no part is taken as "
                    "replicated)") if dep.tp > 1 else "")
        return [f"weights: {_gb(st.total)} ({st.total:,} B) read from the checkpoint's files, "
                f"{st.how}{split}; --params or --weight-dtype override"]
    if dep.params is None:
        family = (dep.config or {}).get("model_type") or dep.model.name
        return [f"weights: not counted (no parameter counter for {family}; --kv-cache-memory "
                "gives the KV budget, so they do not enter it)"]
    ck = dep.checkpoint
    if ck is None:
        how = ("--params given" if dep.params != dep.model.params or dep.config is None
               else "the published parameter count")
        dtype = "bf16" if dep.weight_dtype == "checkpoint" else dep.weight_dtype
        return [f"weights: {dep.params:,} parameters x {dtype} / TP {dep.tp} ({how}; "
                "--weight-dtype overrides the dtype)"]
    mtp = ", MTP layers not loaded" if dep.param_count.mtp else ""
    return [f"weights: counted from the config, {dep.params:,} parameters stored as "
            f"{ck.method} ({_gb(ck.total)} in all{mtp}); per GPU "
            f"{_gb(ck.per_gpu)}, of which {_readable(ck.replicated)} is held whole by every rank "
            f"({', '.join(ck.whole) or 'nothing'}); --weight-dtype overrides"] + [
        f"weights: {n}" for n in ck.notes]
