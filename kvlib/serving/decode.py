"""Decode-step lower bound from bytes read (notebook 06, "How fast can it decode")."""

from __future__ import annotations

from kvlib.core import validate

__all__ = ["decode_step_seconds", "cache_dominates_at"]


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
