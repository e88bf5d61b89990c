"""Mistral and Mixtral: ``sliding_window`` applies to every layer.

transformers' MistralAttention passes ``config.sliding_window`` on every layer.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Layers, every_layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    sliding = c.int("sliding_window", required=False)
    if sliding is None:
        return every_layer(n)
    notes.append(f"{family} slides on every layer: each keeps the last {sliding} tokens")
    return every_layer(n, (CacheKind.SLIDING, sliding))


@register("mistral", "mixtral")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)
