"""Mistral Large 4: MLA with a sparse-attention indexer in every layer, NoPE layers, and layers
that reuse an earlier layer's latent (``kv_source_layers``).

As transformers 5.25.0 builds it (models/mistral_large4/; vLLM 0.34.0 has no Mistral Large 4
model file, so its cache is transformers'):

* every layer is DSA, ``layer_types`` "indexed_attention" (configuration_mistral_large4.py:
  180-181), a ``DynamicIndexedLayer`` in the cache;
* a layer that owns its latent caches ``kv_lora_rank`` plus ``qk_rope_head_dim`` per token,
  except a NoPE layer (``no_rope_layers[i] == 0``), whose RoPE key is 0 wide
  (modeling_mistral_large4.py:332, :340-343, :426): it caches the latent only.
  ``no_rope_layers`` defaults to NoPE iff (i + 1) % ``no_rope_layer_interval`` == 0, interval 4
  (configuration_mistral_large4.py:150-154);
* ``kv_source_layers[i] != i``: layer i has no ``kv_a_proj_with_mqa`` and reads its source's
  latent (modeling :325, :340-344, :408-409), never updating the cache (:425-426); its source
  must be an earlier layer that is its own source (configuration :192-197). Default: every
  layer its own (:156-157);
* a layer whose ``indexer_types[i]`` is "full" runs an indexer that caches one key of
  ``index_head_dim`` per token (modeling :207, :262-263), in the model's dtype; "shared" reuses
  the previous full layer's choice and caches nothing (:362-363). A layer reusing its latent
  still caches its indexer keys when its indexer is full (``reuse_but_indexer``,
  configuration :200-211; cache_utils.py:2039-2043 makes only "reuse" a ``DummyLayer``).
  ``indexer_types`` defaults to ``index_topk_pattern`` ("F" / "S" per layer), else layer i full
  iff max(i - ``index_skip_topk_offset`` + 1, 0) % ``index_topk_freq`` == 0, offset 2 and
  frequency 1 by default (configuration :158-171).
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

MISTRAL_LARGE4_MAX_POSITIONS = 1048576
NOPE_INTERVAL = 4  # no_rope_layer_interval's default
_TF = "transformers 5.25.0 models/mistral_large4/configuration_mistral_large4.py"
# query-side and value widths (weights and compute), the indexer's query heads and top-k
_IGNORES = ("q_lora_rank", "qk_nope_head_dim", "v_head_dim", "qk_head_dim", "head_dim",
            "index_n_heads", "index_topk", "mlp_layer_types", "n_group", "topk_group",
            "num_key_value_heads")


def _per_layer(c: Fields, key: str, n: int) -> list | None:
    value = c.data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) < n:
        raise ValueError(f"{c.path(key)} must hold one entry for each of the {n} layers, got "
                         f"{describe(value)[:80]}")
    return value


def _rope(c: Fields, n: int, notes: list[str]) -> list[bool]:
    flags = _per_layer(c, "no_rope_layers", n)
    if flags is None:
        every = c.int("no_rope_layer_interval", required=False) or NOPE_INTERVAL
        notes.append(f"no no_rope_layers: layer i is NoPE iff (i + 1) % {every} == 0 "
                     f"({_TF}:150-154)")
        return [(i + 1) % every != 0 for i in range(n)]
    c.touch("no_rope_layer_interval")
    if not all(f in (0, 1) for f in flags[:n]):
        raise ValueError(f"{c.path('no_rope_layers')} must hold 1 (RoPE) or 0 (NoPE) per layer, "
                         f"got {describe(flags)[:80]}")
    return [bool(f) for f in flags[:n]]


def _sources(c: Fields, n: int, rope: list[bool]) -> list[int]:
    sources = _per_layer(c, "kv_source_layers", n)
    if sources is None:
        return list(range(n))
    if len(sources) != n or not all(isinstance(s, int) and not isinstance(s, bool)
                                    for s in sources):
        raise ValueError(f"{c.path('kv_source_layers')} must hold one layer index per layer "
                         f"({n}), got {describe(sources)[:80]}")
    for i, s in enumerate(sources):
        if not 0 <= s <= i or sources[s] != s:
            raise ValueError(f"{c.path('kv_source_layers')}[{i}]={s}: a layer reads the latent of "
                             f"itself or of an earlier layer that keeps its own ({_TF}:192-197)")
        if rope[s] != rope[i]:
            raise ValueError(f"{c.path('kv_source_layers')}[{i}]={s}: layer {i} and its source "
                             "differ in no_rope_layers, and transformers hands a layer the latent "
                             "of its own kind (modeling_mistral_large4.py:409); kvlib refuses "
                             "rather than guess")
    return list(sources)


def _indexers(c: Fields, n: int, notes: list[str]) -> list[bool]:
    """True where layer i runs (and caches) an indexer of its own."""
    types = _per_layer(c, "indexer_types", n)
    where = "indexer_types"
    if types is None and c.has("index_topk_pattern"):
        pattern = c.data["index_topk_pattern"]
        where = "index_topk_pattern"
        if isinstance(pattern, str):
            if set(pattern) - {"F", "S"} or len(pattern) < n:
                raise ValueError(f"{c.path(where)} must hold 'F' or 'S' for each of the {n} "
                                 f"layers, got {pattern[:60]!r}")
            types = [{"F": "full", "S": "shared"}[ch] for ch in pattern]
        else:
            types = _per_layer(c, where, n)
    if types is None:
        freq = max(validate.positive_int(c.path("index_topk_freq"),
                                         c.data.get("index_topk_freq", 1)), 1)
        offset = c.data.get("index_skip_topk_offset", 2)
        offset = validate.positive_int(c.path("index_skip_topk_offset"), offset, allow_zero=True)
        full = [max(i - offset + 1, 0) % freq == 0 for i in range(n)]
        if freq > 1:
            notes.append(f"index_topk_freq={freq}, index_skip_topk_offset={offset}: "
                         f"{sum(full)} of {n} layers run an indexer of their own ({_TF}:165-171)")
        return full
    c.touch("index_topk_freq", "index_skip_topk_offset")
    if set(types[:n]) - {"full", "shared"}:
        raise ValueError(f"{c.path(where)} must hold 'full' or 'shared' for each of the {n} "
                         f"layers, got {describe(types)[:80]}")
    return [t == "full" for t in types[:n]]


@register("mistral_large4", max_positions=MISTRAL_LARGE4_MAX_POSITIONS,
          handles=("kv_lora_rank", "index_head_dim", "index_n_heads", "index_topk"),
          ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    d_L = c.int("kv_lora_rank", why="Mistral Large 4 caches the latent")
    d_R = c.int("qk_rope_head_dim", why="a RoPE layer caches the decoupled RoPE key too")
    d_I = c.int("index_head_dim", why="every full indexer caches a key per token")
    c.int("num_attention_heads")  # validated, though the latent cache ignores it
    types = c.data.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != n
                              or set(types) != {"indexed_attention"}):
        raise ValueError(f"{c.path('layer_types')}={describe(types)[:60]}: Mistral Large 4's "
                         "attention is DSA in every layer and its cache needs an "
                         f"'indexed_attention' entry for each of the {n} layers ({_TF}:180-181)")
    rope = _rope(c, n, notes)
    sources = _sources(c, n, rope)
    indexed = _indexers(c, n, notes)
    with_rope = layer(CacheKind.LATENT, "MLA+RoPE", d_L=d_L, d_R=d_R)
    nope = layer(CacheKind.LATENT, "MLA", d_L=d_L)
    layers = [layer(CacheKind.SHARED) if sources[i] != i else with_rope if rope[i] else nope
              for i in range(n)]
    counts = dict(tally(layers).counts)
    keys = layer(CacheKind.INDEXER, "MLA", d_L=d_I)  # one key per token, in the model's dtype
    if any(indexed):
        counts[keys] = sum(indexed)
    shared = sum(s != i for i, s in enumerate(sources))
    own = n - shared
    nope_own = sum(1 for i in range(n) if sources[i] == i and not rope[i])
    notes.append(f"MLA: {own - nope_own} layers cache the latent ({d_L}) plus the RoPE key "
                 f"({d_R}) per token, {nope_own} NoPE layers the latent only, {shared} reuse an "
                 f"earlier layer's latent (kv_source_layers) and keep none of their own")
    notes.append(f"{sum(indexed)} of {n} layers run an indexer of their own and cache one "
                 f"index_head_dim={d_I} key per token in the model's dtype (transformers; vLLM "
                 "0.34.0 has no Mistral Large 4 model)")
    return Attention("MLA+RoPE", "MLA", {"d_L": d_L, "d_R": d_R},
                     Layers(layers.__getitem__, counts))
