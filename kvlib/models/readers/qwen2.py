"""Qwen2 / Qwen2.5 / Qwen3 (dense and MoE): windows only when ``use_sliding_window`` is true.

Then layers ``max_window_layers`` and above slide over ``sliding_window`` tokens
and the ones below are full (transformers' Qwen2Config builds ``layer_types``
this way); with ``use_sliding_window`` false the window is inert.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import FULL, Layers, every_layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

QWEN2_MAX_WINDOW_LAYERS = 28  # Qwen2Config's default


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    sliding = c.int("sliding_window", required=False)
    if not c.flag("use_sliding_window"):
        c.touch("max_window_layers")  # inert without use_sliding_window
        if sliding is not None:
            notes.append(f"sliding_window={sliding} is inert: use_sliding_window is "
                         "false, every layer keeps the whole context")
        return every_layer(n)
    if sliding is None:
        raise ValueError(f"{c.path('use_sliding_window')} is true but "
                         f"{c.path('sliding_window')} is missing")
    first = c.int("max_window_layers", required=False, allow_zero=True)
    if first is None:
        first = QWEN2_MAX_WINDOW_LAYERS
        notes.append(f"no max_window_layers: Qwen2's default of {first} applies")
    first = min(first, n)
    slide = (CacheKind.SLIDING, sliding)
    notes.append(f"use_sliding_window is true: layers {first} and above slide over "
                 f"{sliding} tokens (max_window_layers={first}), the {first} below are full")
    return Layers(lambda i: slide if i >= first else FULL, {FULL: first, slide: n - first})


@register("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", handles=("use_sliding_window",))
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)
