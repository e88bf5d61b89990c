"""The six levers of blog post B (the estimator post), on one model and one workload (NB 06).

A workload is ``batch`` concurrent requests whose lengths follow a seeded
distribution, represented by a sample (:func:`kvlib.serving.paging.sample_lengths`).
A :class:`Setting` says how it is served (attention as shipped or as MHA, KV
dtype, paged or contiguous allocation, ``max_model_len``, an optional sliding
window, how many requests at once);
:func:`kv_bytes_per_gpu` is the cache it needs on each GPU of a TP group,
every sequence through :func:`kvlib.serving.kv.kv_bytes_per_sequences_per_gpu`
(the exact bytes of :func:`kvlib.serving.kv.kv_bytes_per_sequence_per_gpu`, for a
whole sample at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from kvlib.models.spec import CacheKind, ModelSpec
from kvlib.serving.kv import (
    DEFAULT_BLOCK_SIZE,
    kv_bytes_per_sequence_per_gpu,
    kv_bytes_per_sequences_per_gpu,
)
from kvlib.serving.sharding import as_mha

__all__ = ["Setting", "Step", "with_window", "kv_bytes_per_gpu", "decision_order", "one_at_a_time"]


@dataclass(frozen=True)
class Setting:
    """How the workload is served.

    mha: the model with one KV head per query head. paged: blocks of
    ``block_size`` tokens per request (else each request reserves
    ``max_model_len`` contiguous tokens, as before PagedAttention). window:
    a sliding window on every layer (changes the model). batch: how many
    requests run at once.
    """

    max_model_len: int
    batch: int
    kv_dtype: str = "bf16"
    mha: bool = False
    paged: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE
    window: int | None = None


def with_window(model: ModelSpec, window: int) -> ModelSpec:
    """Every full-attention group of ``model`` turned into a sliding window of ``window``."""
    groups = tuple(replace(g, kind=CacheKind.SLIDING, window=window)
                   if g.kind is CacheKind.FULL else g for g in model.groups)
    return replace(model, name=f"{model.name}, window {window}", groups=groups)


def kv_bytes_per_gpu(model: ModelSpec, lengths: np.ndarray, s: Setting, tp: int = 1) -> int:
    """Expected cache bytes on each GPU of one TP group for ``s.batch`` concurrent requests.

    ``lengths`` is a sample of the request-length distribution; the answer is
    ceil(batch x mean bytes per request over the sample). Requests longer than
    ``max_model_len`` are cut to it; contiguous allocation reserves
    ``max_model_len`` tokens per request whatever its length.
    """
    m = as_mha(model) if s.mha else model
    if s.window is not None:
        m = with_window(m, s.window)
    lengths = np.minimum(np.asarray(lengths), s.max_model_len)
    if not s.paged:
        per_request = Fraction(kv_bytes_per_sequence_per_gpu(m, s.max_model_len, s.kv_dtype, tp,
                                                             block_size=1))
    else:
        values, counts = np.unique(lengths, return_counts=True)
        if values.dtype.kind not in "iu":  # each length as int(t), as one call per length took it
            values = np.array([int(t) for t in values], dtype=np.int64)
        per_sequence = kv_bytes_per_sequences_per_gpu(m, values, s.kv_dtype, tp, s.block_size)
        total = int((per_sequence * counts.astype(object)).sum())
        per_request = Fraction(total, len(lengths))
    return math.ceil(s.batch * per_request)


@dataclass(frozen=True)
class Step:
    """One lever: its name, what it changes, the setting after it, and the bytes per GPU."""

    lever: str
    change: str
    setting: Setting
    kv_bytes_per_gpu: int


def decision_order(model: ModelSpec, lengths: np.ndarray, start: Setting, tp: int = 1, *,
                   short_context: int = 32768, batch_after: int | None = None) -> list[Step]:
    """Start, then blog post B's decision order applied one after another.

    1 paging, 2 FP8 KV, 3 GQA (the model as shipped, from MHA), 4 a shorter
    ``max_model_len``, 5 INT4 KV, 6 a smaller batch (half, unless given).
    """
    half = batch_after or max(1, start.batch // 2)
    changes = [
        ("start", "MHA, bf16, contiguous max-length reservation", {}),
        ("1 paging", f"{start.block_size}-token blocks", {"paged": True}),
        ("2 FP8 KV", "kv_cache_dtype fp8", {"kv_dtype": "fp8"}),
        ("3 GQA", "the model's own KV heads", {"mha": False}),
        ("4 shorter context", f"max_model_len {short_context:,}", {"max_model_len": short_context}),
        ("5 INT4 KV", "4-bit cache", {"kv_dtype": "int4"}),
        ("6 smaller batch", f"{start.batch} -> {half} requests", {"batch": half}),
    ]
    steps, s = [], replace(start, mha=True)
    for lever, change, kw in changes:
        s = replace(s, **kw)
        steps.append(Step(lever, change, s, kv_bytes_per_gpu(model, lengths, s, tp)))
    return steps


def one_at_a_time(model: ModelSpec, lengths: np.ndarray, start: Setting, tp: int = 1, *,
                  short_context: int = 32768, window: int = 4096) -> list[Step]:
    """Each lever alone on the start setting (MHA, bf16, contiguous)."""
    base = replace(start, mha=True)
    alone = [
        ("start", "MHA, bf16, contiguous", {}),
        ("paging", f"{base.block_size}-token blocks", {"paged": True}),
        ("FP8 KV", "kv_cache_dtype fp8", {"kv_dtype": "fp8"}),
        ("GQA", "the model's own KV heads", {"mha": False}),
        ("shorter context", f"max_model_len {short_context:,}", {"max_model_len": short_context}),
        ("sliding window", f"window {window:,} on every layer", {"window": window}),
        ("INT4 KV", "4-bit cache", {"kv_dtype": "int4"}),
        ("smaller batch", f"{base.batch} -> {base.batch // 2} requests",
         {"batch": base.batch // 2}),
    ]
    return [Step(lever, change, replace(base, **kw),
                 kv_bytes_per_gpu(model, lengths, replace(base, **kw), tp))
            for lever, change, kw in alone]
