"""The cache one sequence holds on one GPU: paging, windows, TP shards, quantization scales.

Each layer group takes ceil(min(T, window) / block_size) blocks of
``block_size`` tokens per sequence (a paged allocator, engine-neutral: each engine's own
pages, groups and admission rules are in its folder, :mod:`kvlib.serving.engines`), sized by
the group's own generated formula at the per-rank head count
(:func:`kvlib.serving.sharding.shard`). Byte counts are exact Python ints
(the ceiling of exact Fractions where a 4-bit format leaves half bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from kvlib.core import validate
from kvlib.core.dtypes import KV_SCALES, KVScales, bytes_per_element, kv_format
from kvlib.models.spec import STATEFUL, CacheKind, LayerGroup, ModelSpec, scale_rows
from kvlib.serving.sharding import Sharding, shard, shard_state

__all__ = [
    "DEFAULT_BLOCK_SIZE", "KVScales", "KV_SCALES", "kv_scales", "kv_format_parts",
    "GroupShare",
    "paged_tokens",
    "sequence_shares", "kv_bytes_per_sequence_per_gpu", "kv_bytes_per_sequences_per_gpu",
    "slot_bytes", "state_bytes_per_sequence_per_gpu",
]

# tokens per page when none is given (vLLM 0.33.0's block size; each engine's own default is
# in its folder, kvlib/serving/engines/)
DEFAULT_BLOCK_SIZE = 16


def kv_format_parts(kv_dtype: str, scales=None) -> tuple[str, KVScales | None]:
    """kvlib's element dtype and scales for ``kv_dtype``, kvlib's name or vLLM's
    (:func:`kvlib.core.dtypes.kv_format`): ``int4_per_token_head`` -> (int4, per-token-head),
    ``nvfp4`` -> (int4, per-16-fp8), ``bfloat16`` -> (bf16, None). ``scales`` given with a vLLM
    format that has its own must be the same ones (ValueError otherwise)."""
    fmt = kv_format(kv_dtype)
    given = kv_scales(scales)
    if fmt.scales is None:
        return fmt.dtype, given
    own = KV_SCALES[fmt.scales]
    if given is not None and given != own:
        raise ValueError(f"kv dtype {fmt.name} stores its own scales ({own.name}); got "
                         f"scales {given.name!r}")
    return fmt.dtype, own


def kv_scales(scales) -> KVScales | None:
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



def paged_tokens(tokens: int, block_size: int = DEFAULT_BLOCK_SIZE) -> int:
    """Token slots of the whole blocks that hold ``tokens``: ceil(tokens / block) x block."""
    tokens = validate.positive_int("tokens", tokens)
    block_size = validate.positive_int("block_size", block_size)
    return -(-tokens // block_size) * block_size


def _held(group: LayerGroup, tokens: int, b) -> int | Fraction:
    """Bytes ``group`` holds for exactly ``tokens`` cached tokens (no window clamp)."""
    if not tokens:  # a compressed group before its first m tokens (DeepSeek V4)
        return 0
    kind = CacheKind.LATENT if group.kind is CacheKind.LATENT else CacheKind.FULL
    # a compressed group's tokens here are its entries, one per m tokens
    return replace(group, kind=kind, window=None, ratio=None).bytes_per_sequence(tokens, b)


def _scale_bytes(group: LayerGroup, tokens: int, scales: KVScales | None) -> int | Fraction:
    """Bytes of quantization scales for ``tokens`` tokens, through the same formula
    (:func:`kvlib.models.spec.scale_rows`)."""
    if scales is None:
        return 0
    rows, b = scale_rows(group, scales)
    return _held(rows, tokens, b)


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
    """Per growing layer group: what one sequence of ``context`` tokens caches on one TP rank.

    Constant-size states are not here (:func:`state_bytes_per_sequence_per_gpu`), nor
    groups that keep nothing.

    dcp: vLLM's ``decode_context_parallel_size``: the ranks that would hold
    copies of the same head split the tokens instead, ceil(T / dcp) each
    (``FullAttentionSpec.max_memory_usage_bytes``); it must divide the
    replication TP / heads, and vLLM does not support it for sliding windows.
    """
    kv_dtype, scales = kv_format_parts(kv_dtype, scales)
    b = bytes_per_element(kv_dtype)
    dcp = validate.positive_int("decode_context_parallel_size", dcp)
    out = []
    for g in model.groups:
        if not g.grows:  # constant states: state_bytes_per_sequence_per_gpu; empty: nothing
            continue
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
        slots = paged_tokens(cached, block_size) if cached else 0
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
    return math.ceil(Fraction(sum(s.kv_bytes + s.scale_bytes for s in shares)))


def state_bytes_per_sequence_per_gpu(model: ModelSpec, tp: int = 1) -> int:
    """Bytes of the constant-size states (Mamba, linear attention, convolution) of one
    sequence on one TP rank: every state's heads and channels split by TP
    (:func:`kvlib.serving.sharding.shard_state`), in the state's own dtypes."""
    return sum(shard_state(g, tp).state_bytes_per_sequence()
               for g in model.groups if g.kind in STATEFUL)


def slot_bytes(model: ModelSpec, kv_dtype: str, tp: int, scales, dcp: int) -> list:
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
    per_slot = slot_bytes(model, kv_dtype, tp, scales, dcp)
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
