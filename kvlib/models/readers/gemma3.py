"""Gemma 3: five local (sliding) layers to one global, by architecture.

Layer i is global iff (i + 1) % pattern == 0, the pattern from
``sliding_window_pattern`` (or ``_sliding_window_pattern``), else 6
(Gemma3TextConfig). Wrapped configs keep the language model in ``text_config``.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import FULL, Layers, periodic, window_or_default
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

GEMMA3_WINDOW = 4096
GEMMA3_PATTERN = 6  # layer i is global iff (i + 1) % 6 == 0
GEMMA3_MAX_POSITIONS = 131072  # Gemma3TextConfig's default max_position_embeddings


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    w = window_or_default(c, "sliding_window", GEMMA3_WINDOW, family, notes)
    key = c.first("sliding_window_pattern", "_sliding_window_pattern")
    period = c.int(key) if key else None
    where = key
    if period is None:
        period, where = GEMMA3_PATTERN, "the architecture, not config.json"
    notes.append(f"Gemma 3 pattern from {where}: layer i is global iff (i + 1) % "
                 f"{period} == 0 ({period - 1} local : 1 global), local layers slide "
                 f"over {w} tokens")
    return periodic(n, period, (CacheKind.SLIDING, w), FULL)


@register("gemma3", max_positions=GEMMA3_MAX_POSITIONS)
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)

