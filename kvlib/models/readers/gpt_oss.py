"""gpt-oss: ``layer_types`` alternates sliding (128 tokens) and full layers.

Without ``layer_types`` (older files) the modeling code's alternation applies:
even layers slide.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import FULL, Layers, window_or_default
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

GPT_OSS_WINDOW = 128


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    w = window_or_default(c, "sliding_window", GPT_OSS_WINDOW, family, notes)
    slide = (CacheKind.SLIDING, w)
    notes.append(f"no layer_types: gpt-oss alternates, even layers slide over {w} tokens")
    return Layers(lambda i: slide if i % 2 == 0 else FULL, {slide: (n + 1) // 2, FULL: n // 2})


@register("gpt_oss")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)
