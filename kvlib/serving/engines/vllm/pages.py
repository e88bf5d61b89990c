"""vLLM's pool as blocks: a KV-cache group, what a request holds in it, and the layout's
counts (blocks, the concurrency vLLM logs, the sessions its scheduler carries), per GPU.

:func:`kvlib.serving.engines.vllm.layout.vllm_layout` and the DeepSeek V4 layout
(:mod:`kvlib.serving.engines.vllm.v4`) build these; paths under vllm/ in 0.33.0 unless a line
says 0.34.0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.core import validate
from kvlib.models.spec import STATEFUL
from kvlib.serving.engines.vllm.defaults import DEFAULT_BLOCK

__all__ = ["VllmGroup", "VllmLayout", "Holding", "STATE_KINDS", "largest_fitting_len",
           "vllm_sliding_window_tokens"]


@dataclass(frozen=True)
class VllmGroup:
    """One KV-cache group: its kind, the real layers in it, its slots (group size), the
    blocks one request may need, and its block size in tokens (``kv_cache_spec.block_size``:
    groups differ when vLLM scales a smaller page up, and a state group's is
    ``mamba_block_size``)."""

    kind: str
    layers: int
    slots: int
    blocks_per_request: int
    block_size: int
    window: int | None = None

    def held(self, end: int, processed: int, chunk: tuple[int, int] | None, mode: str | None,
             lag: int) -> int:
        """Blocks one request holds in this group once ``end`` of its tokens are scheduled
        and ``processed`` of them committed (vLLM frees out-of-window blocks only up to the
        committed tokens: v1/core/single_type_kv_cache_manager.py:687-716, 1153-1189).

        chunk: while a prompt is prefilled, (the previous chunks of the last ``lag`` that
        ended on a block boundary, whether this chunk is the prompt's last); None in decode.
        Full attention, latents and indexers keep every block; a sliding window drops the
        blocks wholly before ``processed - W + 1``, chunked local attention those before the
        current chunk. A state layer in align mode keeps one
        block in decode; while a prompt is prefilled it keeps the state saved at each block
        boundary until the commit catches up and, on the last chunk, a checkpoint block
        (``MambaManager``, :1433-1800; measured by make oracle: 1, 2, 3, ..., 4 for a long
        prompt in 64-token-aligned chunks with async scheduling)."""
        if self.kind in STATE_KINDS:
            if chunk is None or mode != "align":
                return 1
            saved, last = chunk
            return 1 + saved + last
        blocks = -(-end // self.block_size)
        if self.kind in ("sliding", "compressor"):  # a V4 compressor state is a window too
            blocks -= max(0, processed - self.window + 1) // self.block_size
        elif self.kind == "chunked":  # the tokens left of the current chunk (:1386-1432)
            blocks -= processed // self.window * self.window // self.block_size
        return blocks


STATE_KINDS = {str(k) for k in STATEFUL}


@dataclass(frozen=True)
class Holding:
    """What one request of ``length`` tokens holds in vLLM's pool, in blocks summed over the
    KV-cache groups: ``decode`` at full length (its ``length - 1`` cached tokens; the last
    sampled token is never fed back), ``prefill`` at the peak of its prompt's chunked
    prefill (``length - 1`` prompt tokens, ``chunk`` a step, committed ``lag`` steps late).
    ``by_group``: the decode blocks of each group, in :attr:`VllmLayout.groups` order."""

    length: int
    decode: int
    prefill: int
    chunk: int
    lag: int
    by_group: tuple[int, ...] = ()



def largest_fitting_len(needed, budget: int, max_len: int) -> int:
    """vLLM's ``estimate_max_model_len`` (v1/core/kv_cache_planning.py:142-193 in 0.34.0): the
    largest length in 1..``max_len`` whose ``needed(length)`` bytes fit in ``budget``, by its
    binary search; 0 when 1 does not fit."""
    left, right = 1, max_len
    if needed(left) > budget:
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if needed(mid) <= budget:
            result = mid
            left = mid + 1
        else:
            right = mid - 1
    return result


@dataclass(frozen=True)
class VllmLayout:
    """Blocks, groups and the start-up concurrency vLLM would log; bytes per GPU.

    block_size: the smallest attention group's block size, the ``cache_config.block_size``
    vLLM sets after planning (v1/engine/core.py); each group's own is
    ``VllmGroup.block_size``.
    """

    block_size: int
    page_bytes: int  # one layer's page (after padding or scaling); 0 for a single summed group
    bytes_per_block: int
    groups: tuple[VllmGroup, ...]
    group_size: int
    padding_layers: int
    blocks_per_request: int
    in_flight_tokens: int
    mamba_cache_mode: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    chunk_tokens: int = 8192  # max_num_batched_tokens: prompt tokens one step may prefill
    max_num_seqs: int = 1024

    def num_blocks(self, kv_budget_bytes: int) -> int:
        return max(0, kv_budget_bytes) // self.bytes_per_block

    def max_concurrency(self, kv_budget_bytes: int) -> Fraction:
        """num_blocks / blocks_per_request, exactly (vLLM logs it to 2 decimals)."""
        return Fraction(self.num_blocks(kv_budget_bytes), self.blocks_per_request)

    def holding(self, length: int) -> Holding:
        """Blocks one request of ``length`` tokens holds (:class:`Holding`).

        The prefill is stepped as vLLM's scheduler steps it: ``chunk_tokens`` prompt tokens a
        step (in align mode a chunk ends on the last block boundary within reach, or at the
        budget when none is: ``Scheduler._mamba_block_aligned_split``,
        v1/core/sched/scheduler.py:563), and with async scheduling a step is scheduled before
        the previous one's output is applied, so what is committed lags two steps behind what
        is scheduled (one without). The peak is the largest sum over groups at any step."""
        length = validate.positive_int("length", length)
        cached = max(1, length - 1)
        lag = 2 if self.in_flight_tokens > self.chunk_tokens else 1
        chunk, ends, start, bs = self.chunk_tokens, [], 0, self.block_size
        mode = self.mamba_cache_mode
        align = mode == "align" and any(g.kind in STATE_KINDS for g in self.groups)
        while cached - start > chunk:  # a prompt longer than one step's budget
            # in align mode a chunk ends on the last block boundary within reach, if any
            last = (start + chunk) // bs * bs
            start = last if align and last > start else start + chunk
            ends.append(start)
        ends.append(cached)
        on_boundary = [align and end % bs == 0 for end in ends]
        peak = max(sum(g.held(end, ends[k - lag] if k >= lag else 0,
                              (sum(on_boundary[max(0, k - lag):k]), k == len(ends) - 1),
                              mode, lag)
                       for g in self.groups) for k, end in enumerate(ends))
        by_group = tuple(g.held(cached, cached - (lag - 1), None, mode, lag)
                         for g in self.groups)
        decode = sum(by_group)
        return Holding(length, decode, max(peak, decode), chunk, lag, by_group)

    def needed_bytes(self) -> int:
        """What vLLM checks at start-up against the KV memory it has: the blocks one request of
        ``max_model_len`` tokens may need, whole blocks of every group
        (``_max_memory_usage_bytes_from_groups``, v1/core/kv_cache_planning.py:1297-1330)."""
        return self.bytes_per_block * self.blocks_per_request

    def sessions(self, kv_budget_bytes: int, length: int) -> int:
        """Requests of ``length`` tokens vLLM's scheduler carries at once under its own
        allocator: n - 1 of them at full length while the n-th is prefilled, in the pool's
        blocks less the null block (block 0, never handed out: v1/core/block_pool.py), and at
        most ``max_num_seqs``. ``make oracle`` checks it against vLLM's scheduler."""
        h = self.holding(length)
        free = self.num_blocks(kv_budget_bytes) - 1
        n = 0 if free < h.prefill else 1 + (free - h.prefill) // h.decode
        return min(n, self.max_num_seqs)


def vllm_sliding_window_tokens(window: int, block_size: int = DEFAULT_BLOCK["0.33.0"],
                               max_num_batched_tokens: int = 8192,
                               max_model_len: int | None = None) -> int:
    """Token slots vLLM budgets per sequence for a sliding-window layer.

    ``SlidingWindowSpec.max_admission_blocks_per_request`` (vllm 0.33.0
    v1/kv_cache_interface.py): during chunked prefill a step may hold W - 1 computed
    tokens plus the tokens in flight, capped at ``max_model_len``, plus one block
    because the window need not start at a block boundary. ``max_num_batched_tokens``
    here is the in-flight count (``VllmConfig.max_in_flight_tokens``: the batched-token
    budget times the concurrent batches, 2 with async scheduling); see also
    :mod:`kvlib.serving.engines.vllm.layout`.
    """
    window = validate.positive_int("window", window)
    block_size = validate.positive_int("block_size", block_size)
    tokens = window - 1 + validate.positive_int("max_num_batched_tokens", max_num_batched_tokens)
    if max_model_len is not None:
        tokens = min(tokens, validate.positive_int("max_model_len", max_model_len))
    return (-(-tokens // block_size) + 1) * block_size
