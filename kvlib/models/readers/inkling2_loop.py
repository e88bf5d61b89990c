"""Inkling 2 Loop (``inkling2_loop``): Inkling 2's layers, a block of them run several times.

As transformers 5.25.0 builds it (vLLM 0.34.0 has no such model): layers
``loop_layer_index_start`` to ``loop_layer_index_end`` - 1 run ``loop_num_passes`` times
(defaults 6, 18, 3; a checkpoint's ``loop_config`` with ``core_start``, ``core_end``,
``num_passes`` sets them: configuration_inkling2_loop.py:134-145), and each pass after the first
keeps its own copy of those layers' caches, appended after the model's layers
(modeling_inkling2_loop.py:1398-1401, 1449). So a looped layer's attention and its four
short-convolution streams (:mod:`.inkling2`) are counted ``loop_num_passes`` times.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.inkling2 import INKLING2_IGNORES, attention, counts, layers
from kvlib.models.readers.reading import Attention
from kvlib.models.readers.registry import register

__all__ = ["read", "loop"]

_LOOP = {"loop_layer_index_start": ("core_start", 6), "loop_layer_index_end": ("core_end", 18),
         "loop_num_passes": ("num_passes", 3)}


def loop(c: Fields, n: int, notes: list[str]) -> tuple[int, int, int]:
    """(start, end, passes) as transformers 5.25.0 reads them: ``loop_config`` wins over the
    flat keys (configuration_inkling2_loop.py:139-145)."""
    nested = c.data.get("loop_config")
    c.touch("loop_config")
    if nested is not None and not isinstance(nested, dict):
        raise ValueError(f"{c.path('loop_config')} must be an object, got {describe(nested)}")
    nested = nested or {}
    values = []
    for key, (inner, default) in _LOOP.items():
        c.touch(key)
        v = nested.get(inner, c.data.get(key))
        where = f"loop_config.{inner}" if inner in nested else key
        if v is None:
            v = default
            notes.append(f"no {key}: the default of {v} applies")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{c.path(where)} must be a non-negative integer, got {v!r}")
        values.append(v)
    start, end, passes = values
    if passes < 1 or not 0 < start <= end <= n:
        raise ValueError(f"{c.path('loop_num_passes')}={passes}, looped layers {start}..{end}: "
                         f"transformers 5.25.0 needs passes >= 1 and 0 < start <= end <= {n} "
                         "(configuration_inkling2_loop.py:151-165)")
    return start, end, passes


@register("inkling2_loop", handles=("sconv_kernel_size", "conv_kernel_size"),
          ignores=INKLING2_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    per_layer, full = layers(c, family, n, notes)
    start, end, passes = loop(c, n, notes)
    extra = per_layer[start:end] * (passes - 1)
    notes.append(f"layers {start} to {end - 1} run {passes} times, each pass after the first "
                 f"with its own caches: {len(extra)} more cache layers (modeling_inkling2_loop.py:"
                 "1398-1401)")
    return attention(per_layer, full, counts(per_layer + extra))
