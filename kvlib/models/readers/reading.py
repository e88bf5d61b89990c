"""What a family reader returns: layer kinds and sizes, before they become a ModelSpec."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvlib.models.readers.fields import Fields, describe
from kvlib.models.spec import CacheKind, LayerGroup

__all__ = ["Layer", "Layers", "Attention", "ConfigReading", "tally", "periodic", "layer",
           "every_layer", "window_or_default", "from_layer_types", "LAYER_TYPES"]

# (kind, window) of one layer of the reader's one attention shape, or, for a model whose
# layers differ in more than the window (hybrids, per-layer heads), (kind, window,
# formula, sizes) with sizes a sorted tuple of (symbol, value) pairs: see :func:`layer`.
Layer = tuple
FULL: Layer = (CacheKind.FULL, None)


def layer(kind: CacheKind, formula: str = "", window: int | None = None, **sizes) -> Layer:
    """A layer with its own formula and sizes (a key of ``KINDS`` or ``STATES``, or "")."""
    return (kind, window, formula, tuple(sorted(sizes.items())))

# layer_types values kvlib reads (transformers' names); any other value is refused.
LAYER_TYPES = {
    "full_attention": CacheKind.FULL,
    "sliding_attention": CacheKind.SLIDING,
    "chunked_attention": CacheKind.CHUNKED,
}
_ORDER = {k: i for i, k in enumerate(CacheKind)}  # full, sliding, chunked, latent, mamba, ...


@dataclass(frozen=True)
class Layers:
    """layer(i) -> (kind, window) of layer i (0-based); ``counts`` maps each (kind,
    window) to its number of layers, computed without listing layers, so a huge
    (valid) layer count stays cheap and exact."""

    layer: Callable[[int], Layer]
    counts: dict


@dataclass(frozen=True)
class Attention:
    """A family reader's answer: the attention kind (a key of ``kvlib.core.formulas.KINDS``),
    the label readers know (MHA, GQA, MQA, MLA), the sizes in the notation's symbols, the layers."""

    kind: str
    label: str
    sizes: dict
    layers: Layers


@dataclass(frozen=True)
class ConfigReading:
    """What a config says about the cache, before it becomes a :class:`ModelSpec`."""

    name: str
    family: str
    reader: str  # the module that read it (kvlib.models.readers.<reader>)
    num_layers: int
    attention: str  # key of kvlib.core.formulas.KINDS
    label: str  # MHA, GQA, MQA or MLA, for readers
    sizes: dict
    counts: dict
    layer: Callable[[int], Layer]
    max_position_embeddings: int | None
    assumptions: tuple[str, ...]
    ignored: tuple[str, ...] = ()  # unknown keys judged harmless (:mod:`.closed`), by path

    def _group(self, key: Layer, n: int) -> LayerGroup:
        if len(key) == 2:
            kind, window = key
            return LayerGroup(kind, n, self.attention, dict(self.sizes), window)
        kind, window, formula, sizes = key
        sizes = dict(sizes)
        # a compressed layer's m travels with its sizes (:func:`layer`) and becomes its ratio
        ratio = sizes.pop("m") if kind is CacheKind.COMPRESSED else None
        return LayerGroup(kind, n, formula, sizes, window, ratio)

    def groups(self) -> tuple[LayerGroup, ...]:
        """One group per distinct layer: full first, then sliding, chunked, latent, states."""
        def order(item):
            key = item[0]
            return (_ORDER[key[0]], key[1] or 0, str(key[2:]))

        return tuple(self._group(key, n) for key, n in sorted(self.counts.items(), key=order)
                     if n)

    def layer_map(self) -> list[tuple[CacheKind, int | None]]:
        """(kind, window) of every layer, in order (for the layer-map figure)."""
        return [self.layer(i)[:2] for i in range(self.num_layers)]


def tally(layers: list[Layer]) -> Layers:
    counts: dict = {}
    for layer in layers:
        counts[layer] = counts.get(layer, 0) + 1
    return Layers(layers.__getitem__, counts)


def every_layer(n: int, layer: Layer = FULL) -> Layers:
    return Layers(lambda i: layer, {layer: n})


def periodic(n: int, period: int, local: Layer, every: Layer) -> Layers:
    """Layer i is ``every`` iff (i + 1) % period == 0, else ``local``."""
    n_every = n // period
    return Layers(lambda i: every if (i + 1) % period == 0 else local,
                  {local: n - n_every, every: n_every})


def window_or_default(c: Fields, key: str, default: int, family: str, notes: list[str]) -> int:
    """The window ``key`` from the config, else the family's transformers default (said aloud)."""
    w = c.int(key, required=False)
    if w is None:
        notes.append(f"no {key}: {family}'s default of {default} tokens applies")
        return default
    return w


def from_layer_types(c: Fields, n: int, notes: list[str]) -> Layers:
    """``layer_types`` decides each layer (transformers' names); unknown values are refused."""
    types = c.data["layer_types"]
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ValueError(f"{c.path('layer_types')} must be a list of strings, "
                         f"got {describe(types)}")
    if len(types) != n:
        raise ValueError(f"{c.path('layer_types')} has {len(types)} entries for "
                         f"{n} layers (num_hidden_layers)")
    unknown = sorted({t for t in types if t not in LAYER_TYPES})
    if unknown:
        raise ValueError(f"{c.path('layer_types')} holds {unknown[0]!r}; kvlib knows "
                         f"{', '.join(LAYER_TYPES)}")
    window = {CacheKind.FULL: None}
    if "sliding_attention" in types:
        window[CacheKind.SLIDING] = c.int("sliding_window", why="layer_types has sliding layers")
    if "chunked_attention" in types:
        window[CacheKind.CHUNKED] = c.int("attention_chunk_size",
                                          why="layer_types has chunked layers")
    for key, kind in (("sliding_window", "sliding_attention"),
                      ("attention_chunk_size", "chunked_attention")):
        if kind not in types and c.has(key):
            notes.append(f"{key}={c.data[key]!r} is inert: layer_types has no {kind} layer")
    layers = [(LAYER_TYPES[t], window[LAYER_TYPES[t]]) for t in types]
    counted = ", ".join(f"{types.count(t)} {t}" for t in LAYER_TYPES if t in types)
    notes.append(f"layer_types decides each layer: {counted}")
    return tally(layers)
