"""Falcon and GPTBigCode: ``multi_query`` defaults to true (one key/value head).

FalconConfig: ``multi_query`` with ``new_decoder_architecture`` false is one
key/value head whatever ``num_kv_heads`` says; the 40B/180B files set
``new_decoder_architecture`` and read ``num_kv_heads``. Falcon's default
``max_position_embeddings`` is 2048.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.registry import register

FALCON_MAX_POSITIONS = 2048


@register("falcon", "RefinedWebModel", "RefinedWeb", max_positions=FALCON_MAX_POSITIONS)
def read_falcon(c, family, n, notes):
    return attention.read(c, family, n, notes, multi_query_default=True)


@register("gpt_bigcode")
def read_bigcode(c, family, n, notes):
    return attention.read(c, family, n, notes, multi_query_default=True)

