"""Serving: GPUs, tensor-parallel shards, paged cache per sequence, weights, the memory
budget of a deployment, plans, context search, decode bounds and levers, in vLLM's terms.

May import :mod:`kvlib.core`, :mod:`kvlib.reference` and :mod:`kvlib.models`.
"""
