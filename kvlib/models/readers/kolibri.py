"""Kolibri 1.1 (Aleph Alpha): sliding layers, indexed (sparse) layers, and indexed layers
that reuse an earlier layer's keys and values (``kv_source_layers``).

As transformers 5.25.0 builds it (vLLM 0.34.0 has no Kolibri model file):

* ``layer_types`` defaults to layer i indexed iff (i + 1) % 5 == 0, else sliding
  (models/kolibri1_1/configuration_kolibri1_1.py:135-138); only those two values exist (:161);
* ``kv_source_layers[i]`` names the layer whose keys and values layer i attends to. The
  default maps the 10 indexed layers of Kolibri 1.1 to indexed layers (0, 0, 0, 3, 4, 5, 5,
  5, 5, 0) (:144-154); a sliding layer must be its own source (:171);
* a layer with another source is "reuse" (``kv_sharing_modes``, :192-199): it has no K/V
  projections and never calls ``cache.update`` (modeling_kolibri1_1.py:280-283, :314-315),
  and the cache builds a ``DummyLayer`` for it that stores nothing (cache_utils.py:2036-2043);
* an indexed layer that produces its own K/V keeps every token: ``DynamicIndexedLayer``
  (cache_utils.py:1529), whose extra indexer-key slot Kolibri never fills (its indexer scores
  the layer's own keys, modeling_kolibri1_1.py:324); a sliding layer keeps the last
  ``sliding_window`` tokens (default 513, configuration_kolibri1_1.py:108);
* every layer that caches keeps ``num_key_value_heads`` heads of ``head_dim`` (:100, :118;
  modeling_kolibri1_1.py:281-282). The ``index_*`` settings choose which cached keys a query
  attends to, not what is cached; the NVFP4 rounding of sparse layers (:331-333) is applied to
  what is read from the cache, which still holds the model's dtype. ``index_topk`` is read (it
  is the refused marker of indexers with a key cache of their own, which Kolibri's is not).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

KOLIBRI_WINDOW = 513  # Kolibri1_1Config.sliding_window
KOLIBRI_PERIOD = 5  # layer i is indexed iff (i + 1) % 5 == 0
KOLIBRI_SOURCES = (0, 0, 0, 3, 4, 5, 5, 5, 5, 0)  # of the indexed layers, in order
KOLIBRI_MAX_POSITIONS = 262144

_IGNORES = ("index_layers", "index_pool_size", "index_compression",
            "index_num_heads", "index_num_local_tokens", "index_num_sink_tokens",
            "mlp_only_layers", "mlp_only_intermediate_size", "shared_expert_intermediate_size")


def _types(c: Fields, n: int, notes: list[str]) -> list[str]:
    types = c.data.get("layer_types")
    if types is None:
        notes.append(f"no layer_types: Kolibri 1.1's layout applies, layer i indexed iff "
                     f"(i + 1) % {KOLIBRI_PERIOD} == 0, else sliding")
        return ["indexed_attention" if (i + 1) % KOLIBRI_PERIOD == 0 else "sliding_attention"
                for i in range(n)]
    c.touch("layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise ValueError(f"{c.path('layer_types')} must list each of the {n} layers, "
                         f"got {describe(types)}")
    unknown = sorted(set(types) - {"indexed_attention", "sliding_attention"})
    if unknown:
        raise ValueError(f"{c.path('layer_types')} holds {unknown[0]!r}; Kolibri 1.1 knows "
                         "indexed_attention, sliding_attention")
    return list(types)


def _sources(c: Fields, types: list[str], notes: list[str]) -> list[int]:
    indexed = [i for i, t in enumerate(types) if t == "indexed_attention"]
    sources = c.data.get("kv_source_layers")
    if sources is None:
        if len(indexed) > len(KOLIBRI_SOURCES):
            raise ValueError(f"config has {len(indexed)} indexed layers and no "
                             f"{c.path('kv_source_layers')}: the default covers "
                             f"{len(KOLIBRI_SOURCES)} (transformers refuses it too)")
        sources = list(range(len(types)))
        for i, s in zip(indexed, KOLIBRI_SOURCES, strict=False):
            sources[i] = indexed[s]
        notes.append("no kv_source_layers: Kolibri 1.1's default sharing applies")
        return sources
    c.touch("kv_source_layers")
    if (not isinstance(sources, list) or len(sources) != len(types)
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in sources)):
        raise ValueError(f"{c.path('kv_source_layers')} must hold one layer index per layer "
                         f"({len(types)}), got {describe(sources)}")
    for i, s in enumerate(sources):
        if (not 0 <= s <= i or sources[s] != s or types[s] != types[i]
                or (types[i] == "sliding_attention" and s != i)):
            raise ValueError(f"{c.path('kv_source_layers')}[{i}]={s}: a layer reads the K/V "
                             "of itself or of an earlier indexed layer that keeps its own "
                             "(configuration_kolibri1_1.py:170-176)")
    return sources


@register("kolibri1_1", max_positions=KOLIBRI_MAX_POSITIONS,
          handles=("kv_source_layers", "index_topk"), ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    c.touch("index_topk")  # its indexer scores the layer's own keys: no indexer-key cache
    types = _types(c, n, notes)
    sources = _sources(c, types, notes)
    sizes = {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}
    w = None
    if "sliding_attention" in types:
        w = c.int("sliding_window", required=False)
        if w is None:
            w = KOLIBRI_WINDOW
            notes.append(f"no sliding_window: Kolibri 1.1's default of {w} tokens applies")
    layers = []
    for i, t in enumerate(types):
        if sources[i] != i:
            layers.append(layer(CacheKind.SHARED))
        elif t == "sliding_attention":
            layers.append(layer(CacheKind.SLIDING, "GQA", w, **sizes))
        else:
            layers.append(layer(CacheKind.FULL, "GQA", **sizes))
    shared = sum(s != i for i, s in enumerate(sources))
    notes.append(f"{types.count('sliding_attention')} sliding layers (window {w}), "
                 f"{types.count('indexed_attention') - shared} indexed layers keeping every "
                 f"token, {shared} indexed layers reusing an earlier layer's K/V "
                 "(kv_source_layers) and keeping nothing")
    return Attention("GQA", label, sizes, tally(layers))
