"""Llama 1-3, GPT-2 and MiniMax-M2: standard attention on every layer, read by the generic
reader.

MiniMax-M2 (``minimax_m2``; M2.1, M2.5 the same): vLLM 0.33.0 models/minimax_m2.py builds
every layer as ``MiniMaxM2Attention`` with ``num_key_value_heads`` x ``head_dim`` and no
window; ``qk_norm_type`` ("per_layer") only says how the query/key norms are shaped (weights).
The older MiniMax-Text-01 / M1 (``minimax``, lightning attention) is refused
(:mod:`.refuse`).

Only families checked against transformers' modeling code are registered; an
unregistered ``model_type`` is still read by the generic reader, with the
assumption said aloud (see :func:`kvlib.models.readers.parse_config`).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.registry import register


@register("llama", "gpt2")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes)


@register("minimax_m2", ignores=("qk_norm_type",))
def read_minimax_m2(c, family, n, notes):
    return attention.read(c, family, n, notes)
