"""Sessions that share a prompt prefix, counted in vLLM's whole blocks (notebook 06, "Prefix
caching, counted").

With prefix caching on (vLLM's default), requests whose prompts begin with the same tokens (a
system prompt of ``N_pre`` tokens) share the cache blocks of that prefix: vLLM hashes a
request's tokens one *full* block at a time, each hash chained over the whole prefix ("We only
hash full blocks": ``get_request_block_hasher``, vllm/v1/core/kv_cache_utils.py:953-999 in
0.33.0, :953-995 in 0.34.0), and hands a new request the blocks already computed for the same
hashes (``KVCacheManager.get_computed_blocks``, v1/core/kv_cache_manager.py:288 in 0.34.0).
Only full blocks are shared: a prefix of ``N_pre`` tokens in blocks of ``N_blk`` gives
floor(N_pre / N_blk) shared blocks, and the rest of the prefix sits in each request's own
first partial block.

So ``n`` sessions of ``length`` tokens (``length - 1`` cached at full length, as
:meth:`kvlib.serving.engines.vllm.pages.VllmLayout.holding` counts them) need, per attention group,

    shared + n x (ceil((length - 1) / N_blk) - shared),   shared = floor(N_pre / N_blk)

blocks, and the pool holds floor((free - shared) / own) of them, ``own`` the blocks one
session keeps for itself. Every session is counted at full length here, with no room kept for
one being prefilled (``VllmLayout.sessions`` keeps that room); a window, a compressed cache or
a recurrent state shares differently and is refused, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvlib.core import validate

__all__ = ["PrefixSharing", "shared_prefix_blocks", "sessions_sharing_prefix", "prefix_sharing",
           "scheduler_sessions_sharing_prefix", "check_shareable"]

_SHAREABLE = {"full", "latent"}  # kinds that keep every block of a request


def shared_prefix_blocks(prefix_tokens: int, block_size: int) -> int:
    """Whole blocks of a ``prefix_tokens`` prefix: the blocks sessions can share."""
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must be >= 0, got {prefix_tokens}")
    return prefix_tokens // validate.positive_int("block_size", block_size)


def _request_blocks(length: int, block_size: int) -> int:
    """Blocks one request of ``length`` tokens keeps at full length: its ``length - 1`` cached
    tokens (the last sampled token is never fed back) in whole blocks."""
    return -(-max(1, length - 1) // block_size)


def _fit(free: int, shared: int, own: int) -> int:
    """Sessions in ``free`` blocks when ``shared`` are stored once and each keeps ``own``."""
    return 0 if free < shared + own else (free - shared) // own


def _check_prefix(length, prefix_tokens) -> int:
    length = validate.positive_int("length", length)
    if not 0 <= prefix_tokens < length:
        raise ValueError(f"prefix_tokens must be in [0, length), got {prefix_tokens}")
    return length


def sessions_sharing_prefix(free_blocks: int, block_size: int, length: int,
                            prefix_tokens: int) -> int:
    """Sessions of ``length`` tokens, at full length, that ``free_blocks`` blocks of one
    attention group hold when each begins with the same ``prefix_tokens`` tokens.

    Each keeps ceil((length - 1) / block_size) blocks, of which the prefix's whole blocks are
    stored once for all. ``prefix_tokens = 0`` is the count without sharing."""
    length = _check_prefix(length, prefix_tokens)
    shared = shared_prefix_blocks(prefix_tokens, block_size)
    return _fit(free_blocks, shared, _request_blocks(length, block_size) - shared)


@dataclass(frozen=True)
class PrefixSharing:
    """Sessions a vLLM pool holds at full length, without and with a shared prefix.

    blocks: the pool's blocks less vLLM's null block; shared, own: blocks of the prefix stored
    once, and blocks each session keeps for itself (summed over the attention groups)."""

    block_size: int
    blocks: int
    shared: int
    own: int
    alone: int
    sharing: int


def check_shareable(layout) -> None:
    """ValueError unless every group of ``layout`` keeps all of a request's blocks (full
    attention, MLA latent): a window, a compressed cache or a state shares otherwise."""
    kinds = {g.kind for g in layout.groups}
    if not kinds <= _SHAREABLE:
        raise ValueError(f"prefix sharing is counted for full-attention and latent groups only, "
                         f"not {sorted(kinds - _SHAREABLE)}")


def scheduler_sessions_sharing_prefix(layout, kv_budget_bytes: int, length: int,
                                      prefix_tokens: int) -> tuple[int, int]:
    """(sessions, shared blocks): requests of ``length`` tokens vLLM's scheduler carries at once
    when each begins with the same ``prefix_tokens`` tokens, counted as
    :meth:`~kvlib.serving.engines.vllm.pages.VllmLayout.sessions` counts them (``kvlib plan``,
    ``--shared-prefix``): n - 1 at full length while the n-th is prefilled, in the pool's blocks
    less the null block, at most ``max_num_seqs``; the prefix's whole blocks (``shared``,
    summed over the groups) are stored once and every request after the first finds them
    cached, so each keeps only its own blocks beyond them. The first request holds all of its
    blocks, prefix included. ``prefix_tokens = 0`` gives ``layout.sessions``."""
    check_shareable(layout)
    length = _check_prefix(length, prefix_tokens)
    hold = layout.holding(length)
    shared = sum(shared_prefix_blocks(prefix_tokens, g.block_size) for g in layout.groups)
    free = layout.num_blocks(kv_budget_bytes) - 1
    # full and latent groups hold every block, the prefix's among them, while prefilled and
    # after: hold.prefill and hold.decode both include the shared blocks
    n = 0 if free < hold.prefill else 1 + (free - hold.prefill) // (hold.decode - shared)
    return min(n, layout.max_num_seqs), shared


def prefix_sharing(layout, kv_budget_bytes: int, length: int, prefix_tokens: int
                   ) -> PrefixSharing:
    """:func:`sessions_sharing_prefix` on a :class:`kvlib.serving.engines.vllm.pages.VllmLayout`:
    every group must keep all of a request's blocks (full attention or an MLA latent), and
    each group takes its blocks from the same pool (``num_blocks`` less the null block)."""
    check_shareable(layout)
    length = _check_prefix(length, prefix_tokens)
    free = layout.num_blocks(kv_budget_bytes) - 1
    shared = sum(shared_prefix_blocks(prefix_tokens, g.block_size) for g in layout.groups)
    whole = sum(_request_blocks(length, g.block_size) for g in layout.groups)
    own = whole - shared
    return PrefixSharing(layout.block_size, free, shared, own, _fit(free, 0, whole),
                         _fit(free, shared, own))
