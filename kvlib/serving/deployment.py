"""A model on N GPUs, in vLLM's vocabulary: the memory budget and the cache per sequence.

Budget per GPU: floor(gpu_memory_utilization x memory) - weights - draft
weights - a non-KV overhead; sequences per TP group = floor(budget / KV per
sequence per GPU); GPUs / TP data-parallel replicas. A speculative-decoding
draft adds its weights and its own cache per sequence (sharded by its own TP,
by default the target's). The answer for one context is a
:class:`kvlib.serving.plan.Plan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import bytes_per_element
from kvlib.models.spec import ModelSpec
from kvlib.serving import context_search
from kvlib.serving.gpus import GPU, get_gpu
from kvlib.serving.kv import (
    DEFAULT_BLOCK_SIZE,
    KVScales,
    kv_bytes_per_sequence_per_gpu,
    kv_scales,
    sequence_shares,
)
from kvlib.serving.weights import weight_bytes_per_element, weights_bytes_per_gpu

__all__ = ["DEFAULT_GPU_MEM_UTIL", "DEFAULT_OVERHEAD_BYTES", "Deployment"]

GiB = 1024**3
DEFAULT_GPU_MEM_UTIL = Fraction(9, 10)  # vLLM's gpu_memory_utilization default
# Activations at the profiling batch, CUDA graphs, NCCL and allocator buffers: vLLM
# measures this at start-up. vLLM PR #10511 logs 1.79 GiB non-torch + 1.26 GiB
# activation peak for Llama-3-8B at TP=1 and 3.58 + 1.26 GiB at TP=2.
DEFAULT_OVERHEAD_BYTES = 4 * GiB


@dataclass(frozen=True)
class Deployment:
    """A model on ``gpus`` GPUs of one kind; everything but the context.

    gpu: a :class:`~kvlib.serving.gpus.GPU` or a catalog name. params overrides the
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
        util = validate.exact_fraction("gpu_memory_utilization", self.gpu_mem_util)
        if util > 1:
            raise ValueError(f"gpu_memory_utilization must be at most 1, got {self.gpu_mem_util!r}")
        set_(self, "gpu_mem_util", util)
        validate.positive_int("block_size", self.block_size)
        validate.positive_int("overhead bytes", self.overhead_bytes, allow_zero=True)
        bytes_per_element(self.kv_dtype)
        weight_bytes_per_element(self.weight_dtype)
        set_(self, "scales", kv_scales(self.scales))
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
        """The longest context (tokens) at which ``sequences`` sequences fit per replica.

        See :func:`kvlib.serving.context_search.max_context`.
        """
        return context_search.max_context(self, sequences, limit)

    def plan(self, context: int):
        """The :class:`~kvlib.serving.plan.Plan` for sequences of ``context`` tokens."""
        from kvlib.serving.plan import make_plan  # plan.py builds on this module

        return make_plan(self, context)
