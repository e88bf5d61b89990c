"""Llama 4: RoPE layers attend within chunks, NoPE layers are global.

``no_rope_layers`` (1 = a RoPE layer, chunked; 0 = a global NoPE layer) decides
when present; otherwise every ``no_rope_layer_interval``-th layer (default 4)
is global. The chunk is ``attention_chunk_size`` (default 8192).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import FULL, Layers, periodic, tally, window_or_default
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

LLAMA4_CHUNK = 8192
LLAMA4_GLOBAL_EVERY = 4  # no_rope_layer_interval: layer i is global iff (i + 1) % 4 == 0


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    chunk = window_or_default(c, "attention_chunk_size", LLAMA4_CHUNK, "llama4", notes)
    local = (CacheKind.CHUNKED, chunk)
    flags = c.data.get("no_rope_layers")
    if flags:
        ok = isinstance(flags, list) and len(flags) == n and all(
            isinstance(f, int) and not isinstance(f, bool) and f in (0, 1) for f in flags)
        if not ok:
            raise ValueError(f"{c.path('no_rope_layers')} must list 0 or 1 for each of the "
                             f"{n} layers, got {describe(flags)}")
        notes.append("no_rope_layers decides: RoPE layers attend within chunks of "
                     f"{chunk} tokens, NoPE layers are global")
        return tally([local if f else FULL for f in flags])
    period = c.int("no_rope_layer_interval", required=False) or LLAMA4_GLOBAL_EVERY
    notes.append(f"Llama 4 pattern from the architecture (no_rope_layers empty): layer i is "
                 f"global iff (i + 1) % {period} == 0, the others attend within chunks of "
                 f"{chunk} tokens")
    return periodic(n, period, local, FULL)


@register("llama4")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes, windows=windows)
