"""How many concurrent sequences fit on N GPUs, in vLLM's vocabulary (notebook 06).

One question, one path: a :class:`~kvlib.spec.ModelSpec` (layer groups over the
generated formulas) and a deployment (GPU, GPU count, ``tensor_parallel_size``,
``kv_cache_dtype``, weight dtype, ``gpu_memory_utilization``, ``block_size``)
give a :class:`Plan`. The rules, each pinned by a test:

* **Weights** per GPU: ceil(parameters x bytes per weight / TP).
* **Tensor parallelism** as vLLM shards attention (``QKVParallelLinear``,
  ``ModelConfig.get_num_kv_heads``): each rank holds KV heads / TP heads; when TP
  exceeds the KV-head count each rank holds one whole head, replicated
  TP / heads times; TP must divide the head count or be a multiple of it, and
  must divide the query heads. The per-rank cache is the group's own formula
  with the head count replaced by the per-rank count. A latent (MLA) or a
  single KV head (MQA) is not split: every rank holds all of it, unless
  decode context parallelism (``decode_context_parallel_size``) splits the
  tokens of those copies instead.
* **Paging**: each group takes ceil(min(T, window) / block_size) blocks of
  ``block_size`` tokens per sequence.
* **Budget** per GPU: floor(gpu_memory_utilization x memory) - weights -
  draft weights - a non-KV overhead; sequences per TP group =
  floor(budget / KV per sequence per GPU); GPUs / TP data-parallel replicas.
* **Speculative decoding**: a draft model adds its weights and its own cache
  per sequence (sharded by its own TP, by default the target's).
* **Decode lower bound**: a step reads the weights and every live sequence's
  cache once, so step time >= bytes per GPU / bandwidth per GPU.

Byte counts are exact Python ints (ceil of exact Fractions where a 4-bit
format leaves half bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from kvlib import validate
from kvlib.dtypes import DTYPE_BYTES, bytes_per_element
from kvlib.gpus import GPU, get_gpu
from kvlib.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.units import fmt_bytes

__all__ = [
    "DEFAULT_GPU_MEM_UTIL", "DEFAULT_BLOCK_SIZE", "DEFAULT_OVERHEAD_BYTES",
    "KVScales", "KV_SCALES", "Sharding", "GroupShare", "Deployment", "Plan",
    "weight_bytes_per_element", "weights_bytes_per_gpu", "shard", "paged_tokens",
    "sequence_shares", "kv_bytes_per_sequence_per_gpu", "kv_bytes_per_sequences_per_gpu",
    "decode_step_seconds",
    "cache_dominates_at", "vllm_sliding_window_tokens", "as_mha", "plan",
]

GiB = 1024**3
DEFAULT_GPU_MEM_UTIL = Fraction(9, 10)  # vLLM's gpu_memory_utilization default
DEFAULT_BLOCK_SIZE = 16  # vLLM's block_size default on CUDA
# Activations at the profiling batch, CUDA graphs, NCCL and allocator buffers: vLLM
# measures this at start-up. vLLM PR #10511 logs 1.79 GiB non-torch + 1.26 GiB
# activation peak for Llama-3-8B at TP=1 and 3.58 + 1.26 GiB at TP=2.
DEFAULT_OVERHEAD_BYTES = 4 * GiB

_WIDTHS = ("d_QK", "d_V", "d_L", "d_R")  # per-head / per-vector widths of the cache rows


def _fraction(field_name: str, value) -> Fraction:
    """An exact Fraction; floats go through their decimal text (0.9 -> 9/10)."""
    if isinstance(value, str):
        try:
            value = Fraction(value)
        except ValueError:
            raise ValueError(f"{field_name} must be a number, got {value!r}") from None
    if isinstance(value, float):
        value = Fraction(repr(value))
    return validate.positive_number(field_name, value)


def _gb(n: int) -> str:
    return fmt_bytes(n, "GB")


def _ceil(x) -> int:
    return math.ceil(Fraction(x))


# --- weights -----------------------------------------------------------------

def weight_bytes_per_element(dtype: str) -> Fraction:
    """Bytes per weight for ``dtype`` (bf16/fp16 2, fp8/int8 1, int4 1/2)."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(
            f"weight dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}"
        ) from None


def weights_bytes_per_gpu(params: int, dtype: str = "bf16", tp: int = 1) -> int:
    """ceil(params x bytes per weight / tp): weights split evenly over the TP ranks.

    An approximation: vLLM replicates the small parts (norms, and the K/V
    projections when TP exceeds the KV heads), and int4 checkpoints add scales.
    """
    params = validate.positive_int("parameter count", params)
    tp = validate.positive_int("tensor_parallel_size", tp)
    return _ceil(params * weight_bytes_per_element(dtype) / tp)


# --- KV quantization scales ----------------------------------------------------

@dataclass(frozen=True)
class KVScales:
    """Scales a quantized KV format stores beside the cache.

    scale_bytes: bytes of one scale. elements: cached elements one scale covers;
    None means one scale per cached vector per token (per KV head, for K and for
    V; for MLA, one for the latent and one for the RoPE key).
    """

    name: str
    scale_bytes: Fraction
    elements: int | None = None

    def __post_init__(self):
        _fraction(f"{self.name} scale bytes", self.scale_bytes)
        if self.elements is not None:
            validate.positive_int(f"{self.name} elements per scale", self.elements)


KV_SCALES: dict[str, KVScales] = {
    # vLLM kv_cache_dtype int8_per_token_head / fp8_per_token_head: one fp32 scale
    # per token per KV head, for K and V (vllm/v1/kv_cache_interface.py, AttentionSpec).
    "per-token-head": KVScales("per-token-head", Fraction(4)),
    # NVFP4: one fp8 scale per 16 elements (vllm/v1/kv_cache_interface.py, nvfp4 layout).
    "per-16-fp8": KVScales("per-16-fp8", Fraction(1), 16),
}


def _scales(scales) -> KVScales | None:
    if scales is None or isinstance(scales, KVScales):
        return scales
    if scales == "none":
        return None
    try:
        return KV_SCALES[scales]
    except (KeyError, TypeError):
        raise ValueError(
            f"kv scales must be one of none, {', '.join(KV_SCALES)}, got {scales!r}"
        ) from None


# --- tensor parallelism --------------------------------------------------------

@dataclass(frozen=True)
class Sharding:
    """How one layer group's cache is spread over ``tp`` ranks.

    kv_heads: heads in the cache (1 for MQA and for an MLA latent); per_rank:
    heads each rank holds; replicas: how many ranks hold each head.
    """

    tp: int
    kv_heads: int
    per_rank: int
    replicas: int


def _kv_symbol(group: LayerGroup) -> str | None:
    """The symbol that counts cached heads in this group's formula, if any."""
    args = group.formulas.elements_per_token_layer.args
    if "N_g" in args:
        return "N_g"
    if "N_h" in args:
        return "N_h"  # MHA: every query head has its own key/value head
    return None  # MQA or a latent: one cached vector per token, not split


def shard(group: LayerGroup, tp: int) -> tuple[LayerGroup, Sharding]:
    """The group as one TP rank holds it, and its :class:`Sharding`.

    The returned group has the same kind and formula; only N_h (query heads,
    N_h / tp) and the cached head count (heads / tp, at least 1) change.
    """
    tp = validate.positive_int("tensor_parallel_size", tp)
    sizes = dict(group.sizes)
    q_heads = sizes.get("N_h")
    if q_heads is not None and q_heads % tp:
        raise ValueError(
            f"tensor_parallel_size={tp} must divide the query heads N_h={q_heads} "
            f"(vLLM splits query heads evenly)"
        )
    symbol = _kv_symbol(group)
    heads = sizes[symbol] if symbol else 1
    if tp <= heads:
        if heads % tp:
            raise ValueError(
                f"tensor_parallel_size={tp} must divide the KV-head count {heads} "
                f"or be a multiple of it"
            )
        per_rank, replicas = heads // tp, 1
    else:
        if tp % heads:
            raise ValueError(
                f"tensor_parallel_size={tp} must divide the KV-head count {heads} "
                f"or be a multiple of it"
            )
        per_rank, replicas = 1, tp // heads
    if q_heads is not None:
        sizes["N_h"] = q_heads // tp
    if symbol:
        sizes[symbol] = per_rank
    return replace(group, sizes=sizes), Sharding(tp, heads, per_rank, replicas)


# --- one sequence ---------------------------------------------------------------

def paged_tokens(tokens: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """Token slots of the whole blocks that hold ``tokens``: ceil(tokens / block) x block."""
    tokens = validate.positive_int("tokens", tokens)
    block_size = validate.positive_int("block_size", block_size)
    return -(-tokens // block_size) * block_size


def _held(group: LayerGroup, tokens: int, b) -> int | Fraction:
    """Bytes ``group`` holds for exactly ``tokens`` cached tokens (no window clamp)."""
    kind = CacheKind.LATENT if group.kind is CacheKind.LATENT else CacheKind.FULL
    return replace(group, kind=kind, window=None).bytes_per_sequence(tokens, b)


def _scale_bytes(group: LayerGroup, tokens: int, scales: KVScales | None) -> int | Fraction:
    """Bytes of quantization scales for ``tokens`` tokens, through the same formula.

    Per-vector scales: the cache formula with every width set to 1 counts the
    cached vectors (2 N_g per token per layer for GQA), each one scale.
    Per-group scales: every ``elements`` cached elements share one scale.
    """
    if scales is None:
        return 0
    if scales.elements is None:
        ones = {k: 1 for k in _WIDTHS if k in group.sizes}
        return _held(replace(group, sizes={**group.sizes, **ones}), tokens, scales.scale_bytes)
    return _held(group, tokens, Fraction(scales.scale_bytes) / scales.elements)


@dataclass(frozen=True)
class GroupShare:
    """One layer group's part of one sequence on one GPU.

    cached: tokens the group keeps (min(T, window)); slots: block-rounded
    tokens; kv_bytes: cache bytes at ``slots`` on one rank; scale_bytes: the
    scales of a quantized format; sharding: how TP spreads it.
    """

    group: LayerGroup
    cached: int
    slots: int
    kv_bytes: int | Fraction
    scale_bytes: int | Fraction
    sharding: Sharding


def sequence_shares(model: ModelSpec, context: int, kv_dtype: str = "bf16", tp: int = 1,
                    block_size: int = DEFAULT_BLOCK_SIZE, scales=None,
                    dcp: int = 1) -> list[GroupShare]:
    """Per layer group: what one sequence of ``context`` tokens holds on one TP rank.

    dcp: vLLM's ``decode_context_parallel_size``: the ranks that would hold
    copies of the same head split the tokens instead, ceil(T / dcp) each
    (``FullAttentionSpec.max_memory_usage_bytes``); it must divide the
    replication TP / heads, and vLLM does not support it for sliding windows.
    """
    b = bytes_per_element(kv_dtype)
    scales = _scales(scales)
    dcp = validate.positive_int("decode_context_parallel_size", dcp)
    out = []
    for g in model.groups:
        rank_group, sharding = shard(g, tp)
        cached = g.cached_tokens(context)
        if dcp > 1:
            if g.window is not None:
                raise ValueError(f"decode_context_parallel_size={dcp} is not supported for "
                                 f"{g.kind} layers (vLLM asserts it)")
            if sharding.replicas % dcp:
                raise ValueError(
                    f"decode_context_parallel_size={dcp} must divide the KV replication "
                    f"tensor_parallel_size / heads = {sharding.replicas}")
            cached = -(-cached // dcp)
            sharding = replace(sharding, replicas=sharding.replicas // dcp)
        slots = paged_tokens(cached, block_size)
        out.append(GroupShare(g, cached, slots, _held(rank_group, slots, b),
                              _scale_bytes(rank_group, slots, scales), sharding))
    return out


def kv_bytes_per_sequence_per_gpu(model: ModelSpec, context: int, kv_dtype: str = "bf16",
                                  tp: int = 1, block_size: int = DEFAULT_BLOCK_SIZE,
                                  scales=None, dcp: int = 1) -> int:
    """Bytes one sequence of ``context`` tokens holds on each GPU of a TP group.

    Block-rounded per layer group; ``block_size=1`` gives the unrounded bytes.
    """
    shares = sequence_shares(model, context, kv_dtype, tp, block_size, scales, dcp)
    return _ceil(sum(s.kv_bytes + s.scale_bytes for s in shares))


def _slot_bytes(model: ModelSpec, kv_dtype: str, tp: int, scales, dcp: int) -> list:
    """Per layer group: (group, exact bytes of one cached token slot on one rank, scales included).

    One slot is :func:`sequence_shares` at one token, unrounded. A group holding n
    slots holds n times that: ``derive`` checks that the cache is linear in N_KV.
    """
    return [(s.group, Fraction(s.kv_bytes + s.scale_bytes))
            for s in sequence_shares(model, 1, kv_dtype, tp, 1, scales, dcp)]


def kv_bytes_per_sequences_per_gpu(model: ModelSpec, contexts: np.ndarray,
                                   kv_dtype: str = "bf16", tp: int = 1,
                                   block_size: int = DEFAULT_BLOCK_SIZE, scales=None,
                                   dcp: int = 1) -> np.ndarray:
    """:func:`kv_bytes_per_sequence_per_gpu` for many contexts at once, equally exact.

    contexts: integer array of shape (n,), tokens. Returns shape (n,), dtype object,
    exact Python ints. Each group's formula is evaluated once, for one slot
    (:func:`sequence_shares`); the slots of each context follow the same rules
    (window clamp, DCP split, whole blocks), and the sum is ceiled per sequence.
    """
    per_slot = _slot_bytes(model, kv_dtype, tp, scales, dcp)
    block_size = validate.positive_int("block_size", block_size)
    contexts = np.asarray(contexts)
    if contexts.dtype.kind not in "iu":
        raise ValueError(f"contexts must hold integers, got an array of {contexts.dtype}")
    if contexts.size and contexts.min() < 1:
        validate.positive_int("context", int(contexts.min()))  # the scalar path's error
    contexts = contexts.astype(np.int64, copy=False)
    dcp = validate.positive_int("decode_context_parallel_size", dcp)
    denominator = math.lcm(*(c.denominator for _, c in per_slot))
    numerator = np.zeros(contexts.shape, dtype=object)
    for g, c in per_slot:
        cached = contexts if g.window is None else np.minimum(contexts, g.window)
        cached = -(-cached // dcp)
        slots = -(-cached // block_size) * block_size
        numerator += slots.astype(object) * int(c * denominator)
    return -(-numerator // denominator)


def _last_at_most(terms: list, const, most, k_max: int) -> int:
    """The largest integer k in [0, k_max] with const + sum(a min((k + s) / d, cap)) <= most.

    terms: (a, d, s, cap), a >= 0, cap None for no cap; -1 if even k = 0 exceeds
    ``most``. A sum of capped rising lines is linear between the points where a
    term reaches its cap, so it is solved exactly (Fractions) on the segment
    where it crosses ``most``.
    """
    def value(k):
        return const + sum(a * (Fraction(k + s, d) if cap is None
                                else min(Fraction(k + s, d), cap))
                           for a, d, s, cap in terms)

    if value(0) > most:
        return -1
    ends = sorted({cap * d - s for _, d, s, cap in terms
                   if cap is not None and 0 < cap * d - s < k_max})
    prev, v_prev = 0, value(0)
    for x in [*ends, k_max]:
        v = value(x)
        if v > most:
            return math.floor(prev + Fraction(most - v_prev) * (x - prev) / (v - v_prev))
        prev, v_prev = x, v
    return k_max


def as_mha(model: ModelSpec) -> ModelSpec:
    """The same model with one key/value head per query head (GQA/MQA groups -> MHA)."""
    groups = []
    for g in model.groups:
        if g.attention in ("GQA", "MQA"):
            sizes = {k: v for k, v in g.sizes.items() if k != "N_g"}
            g = replace(g, attention="MHA", sizes=sizes)
        groups.append(g)
    return replace(model, name=f"{model.name} as MHA", groups=tuple(groups))


def vllm_sliding_window_tokens(window: int, block_size: int = DEFAULT_BLOCK_SIZE,
                               max_num_batched_tokens: int = 8192,
                               max_model_len: int | None = None) -> int:
    """Token slots vLLM budgets per sequence for a sliding-window layer.

    ``SlidingWindowSpec.max_memory_usage_bytes`` (vllm/v1/kv_cache_interface.py):
    during chunked prefill a step may hold W - 1 computed tokens plus the newly
    scheduled ones, capped at ``max_model_len``, plus one block because the
    window need not start at a block boundary.
    """
    window = validate.positive_int("window", window)
    block_size = validate.positive_int("block_size", block_size)
    tokens = window - 1 + validate.positive_int("max_num_batched_tokens", max_num_batched_tokens)
    if max_model_len is not None:
        tokens = min(tokens, validate.positive_int("max_model_len", max_model_len))
    return (-(-tokens // block_size) + 1) * block_size


# --- decode -----------------------------------------------------------------------

def decode_step_seconds(weights_bytes, kv_bytes_per_sequence, batch, bandwidth):
    """Lower bound of one decode step: (weights + batch x cache) / bandwidth, per GPU.

    Every argument is per GPU; ``batch`` may be a NumPy array (returns floats).
    For a mixture of experts a small batch reads fewer weights than all of them.
    """
    return (weights_bytes + batch * kv_bytes_per_sequence) / bandwidth


def cache_dominates_at(weights_bytes: int, kv_bytes_per_sequence: int) -> int:
    """The smallest batch whose caches outweigh the weights in a decode step's reads."""
    validate.positive_int("KV bytes per sequence", kv_bytes_per_sequence)
    return weights_bytes // kv_bytes_per_sequence + 1


# --- the plan ------------------------------------------------------------------------

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
    kv_dtype: str
    weight_dtype: str
    gpu_mem_util: Fraction
    block_size: int
    params: int
    hbm_bytes_per_gpu: int
    usable_bytes_per_gpu: int
    weights_bytes_per_gpu: int
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
    kv_replication: int
    draft: str | None = None
    fits: bool = True
    reason: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """JSON-ready: ints stay exact, the utilization is a float, seconds a float."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["gpu_mem_util"] = float(self.gpu_mem_util)
        d["notes"] = list(self.notes)
        return d


@dataclass(frozen=True)
class Deployment:
    """A model on ``gpus`` GPUs of one kind; everything but the context.

    gpu: a :class:`~kvlib.gpus.GPU` or a catalog name. params overrides the
    model's parameter count. draft: a speculative-decoding draft model, with
    ``draft_tp`` ranks (default: the target's TP). scales: a :data:`KV_SCALES`
    name or :class:`KVScales` for the quantization scales of ``kv_dtype``.
    dcp: vLLM's decode_context_parallel_size for the target (see :func:`sequence_shares`).
    """

    model: ModelSpec
    gpu: GPU | str
    gpus: int = 1
    tp: int = 1
    kv_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    gpu_mem_util: Fraction | float | str = DEFAULT_GPU_MEM_UTIL
    block_size: int = DEFAULT_BLOCK_SIZE
    overhead_bytes: int = DEFAULT_OVERHEAD_BYTES
    params: int | None = None
    draft: ModelSpec | None = None
    draft_tp: int | None = None
    scales: KVScales | str | None = None
    dcp: int = 1

    def __post_init__(self):
        set_ = object.__setattr__
        if not isinstance(self.gpu, GPU):
            set_(self, "gpu", get_gpu(self.gpu))
        validate.positive_int("gpus", self.gpus)
        validate.positive_int("tensor_parallel_size", self.tp)
        if self.gpus % self.tp:
            raise ValueError(
                f"gpus={self.gpus} must be a multiple of tensor_parallel_size={self.tp} "
                f"(each data-parallel replica is one TP group)"
            )
        util = _fraction("gpu_memory_utilization", self.gpu_mem_util)
        if util > 1:
            raise ValueError(f"gpu_memory_utilization must be at most 1, got {self.gpu_mem_util!r}")
        set_(self, "gpu_mem_util", util)
        validate.positive_int("block_size", self.block_size)
        validate.positive_int("overhead bytes", self.overhead_bytes, allow_zero=True)
        bytes_per_element(self.kv_dtype)
        weight_bytes_per_element(self.weight_dtype)
        set_(self, "scales", _scales(self.scales))
        params = self.params if self.params is not None else self.model.params
        if params is None:
            raise ValueError(
                f"the parameter count of {self.model.name} is unknown; give it (--params)"
            )
        set_(self, "params", validate.positive_int("parameter count", params))
        if self.draft is not None:
            if self.draft.params is None:
                raise ValueError(f"the draft model {self.draft.name} has no parameter count")
            set_(self, "draft_tp", validate.positive_int("draft tensor_parallel_size",
                                                         self.draft_tp or self.tp))
            if self.tp % self.draft_tp:
                raise ValueError(f"draft tensor_parallel_size={self.draft_tp} must divide "
                                 f"tensor_parallel_size={self.tp}")
        # fail early on a TP (or DCP) the heads do not allow
        sequence_shares(self.model, 1, self.kv_dtype, self.tp, self.block_size, self.scales,
                        self.dcp)

    @property
    def replicas(self) -> int:
        return self.gpus // self.tp

    @property
    def usable_bytes_per_gpu(self) -> int:
        return math.floor(self.gpu_mem_util * self.gpu.hbm_bytes)

    @property
    def weights_bytes_per_gpu(self) -> int:
        return weights_bytes_per_gpu(self.params, self.weight_dtype, self.tp)

    @property
    def draft_weights_bytes_per_gpu(self) -> int:
        if self.draft is None:
            return 0
        return weights_bytes_per_gpu(self.draft.params, self.weight_dtype, self.draft_tp)

    @property
    def kv_budget_bytes_per_gpu(self) -> int:
        """Usable memory left for the cache; negative when the weights do not fit."""
        return (self.usable_bytes_per_gpu - self.weights_bytes_per_gpu
                - self.draft_weights_bytes_per_gpu - self.overhead_bytes)

    def target_kv_per_sequence(self, context: int, block_size: int | None = None) -> int:
        bs = self.block_size if block_size is None else block_size
        return kv_bytes_per_sequence_per_gpu(self.model, context, self.kv_dtype, self.tp, bs,
                                             self.scales, self.dcp)

    def draft_kv_per_sequence(self, context: int, block_size: int | None = None) -> int:
        if self.draft is None:
            return 0
        bs = self.block_size if block_size is None else block_size
        # With draft_tp < tp the draft lives on draft_tp of the ranks: count the fullest GPU.
        return kv_bytes_per_sequence_per_gpu(self.draft, context, self.kv_dtype,
                                             self.draft_tp, bs, self.scales)

    def kv_bytes_per_sequence_per_gpu(self, context: int, block_size: int | None = None) -> int:
        """Target + draft cache of one sequence on one GPU, block-rounded."""
        return (self.target_kv_per_sequence(context, block_size)
                + self.draft_kv_per_sequence(context, block_size))

    def sessions(self, context: int) -> Fraction:
        """KV budget / cache per sequence, exactly: the fractional count before flooring."""
        return Fraction(max(0, self.kv_budget_bytes_per_gpu),
                        self.kv_bytes_per_sequence_per_gpu(context))

    def max_sequences_per_replica(self, context: int) -> int:
        budget = self.kv_budget_bytes_per_gpu
        return max(0, budget) // self.kv_bytes_per_sequence_per_gpu(context)

    def max_context(self, sequences: int, limit: int | None = None) -> int:
        """The longest context at which ``sequences`` sequences fit per replica (0: none).

        Searched up to ``limit`` (default: the model's max_position_embeddings,
        else 2^24 tokens); the cache per sequence never shrinks as T grows, and
        is the same for every T in one block of ``block_size`` tokens, so the
        answer is a whole number of blocks (or ``limit``). Linear bounds on the
        cache (:meth:`_block_bracket`) leave a block or two (a few with DCP) to bisect, with the
        exact bytes per sequence.
        """
        sequences = validate.positive_int("sequences", sequences)
        hi = limit or self.model.max_position_embeddings or 2**24
        budget = self.kv_budget_bytes_per_gpu

        def fits(t: int) -> bool:
            return sequences * self.kv_bytes_per_sequence_per_gpu(t) <= budget

        if budget <= 0 or not fits(1):
            return 0
        if hi <= 1:
            return 1
        bs = self.block_size
        lo, top = self._block_bracket(budget // sequences, -(-hi // bs))
        lo = max(lo, 1)  # one block fits: fits(1)
        while lo < top:
            mid = (lo + top + 1) // 2
            lo, top = (mid, top) if fits(min(mid * bs, hi)) else (lo, mid - 1)
        return min(hi, lo * bs)

    def _block_bracket(self, most: int, blocks: int) -> tuple[int, int]:
        """Block counts (lo, hi) around the most blocks k <= ``blocks`` whose cache is <= ``most``.

        A context of k blocks holds, per part (target, draft), ceil(sum over groups
        of a_g min(ceil(k / dcp), K_g)) bytes: a_g the bytes of one block of group g
        (its formula at one slot, times block_size), K_g its window in blocks. Since
        k / dcp <= ceil(k / dcp) <= (k + dcp - 1) / dcp and a ceil adds less than a
        byte, two piecewise-linear functions of k bound the cache from below and above;
        where the upper one reaches ``most`` is ``lo``, where the lower one does, ``hi``.
        """
        bs = self.block_size
        parts = [(_slot_bytes(self.model, self.kv_dtype, self.tp, self.scales, self.dcp),
                  self.dcp)]
        if self.draft is not None:
            parts.append((_slot_bytes(self.draft, self.kv_dtype, self.draft_tp, self.scales, 1),
                          1))
        below, above = [], []
        for per_slot, dcp in parts:
            for g, c in per_slot:
                cap = None if g.window is None else -(-g.window // bs)
                below.append((c * bs, dcp, 0, cap))
                above.append((c * bs, dcp, dcp - 1, cap))
        return (_last_at_most(above, len(parts), most, blocks),
                _last_at_most(below, 0, most, blocks))

    def plan(self, context: int) -> Plan:
        context = validate.positive_int("context", context)
        gpu = self.gpu
        usable, budget = self.usable_bytes_per_gpu, self.kv_budget_bytes_per_gpu
        per_seq = self.kv_bytes_per_sequence_per_gpu(context)
        draft_per_seq = self.draft_kv_per_sequence(context)
        live = self.kv_bytes_per_sequence_per_gpu(context, block_size=1)
        per_replica = max(0, budget) // per_seq
        fits, reason = True, ""
        fixed = (self.weights_bytes_per_gpu + self.draft_weights_bytes_per_gpu
                 + self.overhead_bytes)
        if budget <= 0:
            fits = False
            draft = (f" + draft weights {_gb(self.draft_weights_bytes_per_gpu)}"
                     if self.draft is not None else "")
            reason = (f"does not fit: weights {_gb(self.weights_bytes_per_gpu)}{draft} + "
                      f"overhead {_gb(self.overhead_bytes)} = {_gb(fixed)} per GPU exceed the "
                      f"usable {_gb(usable)} (gpu_memory_utilization "
                      f"{float(self.gpu_mem_util):g} x {_gb(gpu.hbm_bytes)} {gpu.name}); use "
                      f"more tensor parallelism, smaller weights or a larger GPU")
        elif per_replica == 0:
            fits = False
            reason = (f"does not fit: the KV budget of {_gb(budget)} per GPU holds no "
                      f"sequence of {context:,} tokens (one needs {_gb(per_seq)} per GPU)")
        used = per_replica * per_seq
        bound = None
        if per_replica:
            bound = float(decode_step_seconds(
                self.weights_bytes_per_gpu + self.draft_weights_bytes_per_gpu,
                live, per_replica, Fraction(gpu.bandwidth)))
        notes = list(self.model.assumptions)
        limit = self.model.max_position_embeddings
        if limit is not None and context > limit:
            notes.append(f"context {context:,} exceeds the model's max_position_embeddings "
                         f"{limit:,}")
        replication = max(s.sharding.replicas for s in sequence_shares(
            self.model, 1, self.kv_dtype, self.tp, 1, None, self.dcp))
        return Plan(
            model=self.model.name, gpu=gpu.name, gpus=self.gpus, tp=self.tp,
            replicas=self.replicas, dcp=self.dcp, context=context, kv_dtype=self.kv_dtype,
            weight_dtype=self.weight_dtype, gpu_mem_util=self.gpu_mem_util,
            block_size=self.block_size, params=self.params,
            hbm_bytes_per_gpu=gpu.hbm_bytes, usable_bytes_per_gpu=usable,
            weights_bytes_per_gpu=self.weights_bytes_per_gpu,
            draft_weights_bytes_per_gpu=self.draft_weights_bytes_per_gpu,
            overhead_bytes_per_gpu=self.overhead_bytes, kv_budget_bytes_per_gpu=budget,
            kv_bytes_per_sequence_per_gpu=per_seq,
            draft_kv_bytes_per_sequence_per_gpu=draft_per_seq,
            live_kv_bytes_per_sequence_per_gpu=live,
            max_sequences_per_replica=per_replica,
            max_sequences=per_replica * self.replicas,
            kv_used_bytes_per_gpu=used, kv_free_bytes_per_gpu=max(0, budget) - used,
            bandwidth_bytes_per_second=gpu.bandwidth,
            decode_step_seconds_lower_bound=bound, kv_replication=replication,
            draft=self.draft.name if self.draft is not None else None,
            fits=fits, reason=reason, notes=tuple(notes),
        )


def plan(model: ModelSpec, gpu: GPU | str, gpus: int = 1, tp: int = 1, context: int = 8192,
         **options) -> Plan:
    """``Deployment(model, gpu, gpus, tp, **options).plan(context)``."""
    return Deployment(model, gpu, gpus, tp, **options).plan(context)

