"""Gemma 2: even layers slide, odd layers are global, by architecture (not in config.json).

transformers' Gemma2 modeling code alternates from the layer index; older
config files have no ``layer_types``, so the pattern is applied and reported.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import FULL, Layers, window_or_default
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

GEMMA2_WINDOW = 4096  # Gemma2Config's default sliding_window


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    w = window_or_default(c, "sliding_window", GEMMA2_WINDOW, family, notes)
    # Google's files also write sliding_window_size, which transformers' Gemma2Config and vLLM
    # do not read; kvlib accepts it only where it agrees.
    alias = c.int("sliding_window_size", required=False)
    if alias is not None and alias != w:
        raise ValueError(f"{c.path('sliding_window_size')}={alias} disagrees with the window "
                         f"transformers and vLLM read ({c.path('sliding_window')}={w})")
    slide = (CacheKind.SLIDING, w)
    notes.append(f"Gemma 2 alternates by architecture (not in config.json): even layers "
                 f"slide over {w} tokens, odd layers are global")
    return Layers(lambda i: slide if i % 2 == 0 else FULL, {slide: (n + 1) // 2, FULL: n // 2})


@register("gemma2")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)
