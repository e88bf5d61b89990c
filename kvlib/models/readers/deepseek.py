"""Multi-head latent attention (DeepSeek V2/V3, Kimi K2: any config with ``kv_lora_rank``;
DeepSeek V3.2 and GLM-5 with a sparse-attention indexer).

Each layer caches the latent (``kv_lora_rank`` = d_L) plus the decoupled RoPE
key (``qk_rope_head_dim`` = d_R) per token; the key/value head count plays no
part. Multi-token-prediction layers (``num_nextn_predict_layers``) cache only
when used as a speculative-decoding draft, so they are not counted.
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, every_layer, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

# Query-side and value widths of MLA: weights and compute, not the cache (the latent and the
# RoPE key are all each layer keeps; vLLM 0.33.0 MLAAttentionSpec, head_size = d_L + d_R).
# GLM-5 also writes head_dim (= qk_rope_head_dim) and qk_head_dim (nope + rope).
_MLA_IGNORES = ("q_lora_rank", "qk_nope_head_dim", "v_head_dim", "qk_head_dim", "head_dim")


@register("deepseek_v2", "deepseek_v3", "kimi_k2", ignores=_MLA_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    return _mla(c, n, notes)


# index_n_heads: the indexer's query heads (computed per step, never cached)
# GLM-5 (glm_moe_dsa): vLLM 0.33.0 maps GlmMoeDsaForCausalLM to the DeepSeek V3.2 path
# (model_executor/models/registry.py), same key names.
_SKIP_LINE = "vllm/model_executor/models/utils.py:1019-1055"


def shared_indexer_layers(c: Fields, n: int) -> tuple[set[int], str]:
    """The layers (0-based, of ``n``) that share an earlier layer's indexer and build none of their
    own, as vLLM 0.34.0's ``compute_skip_topk_layers`` (model_executor/models/utils.py:1019-1055)
    decides, and which key decided. Such a layer caches no indexer key and loads no indexer weights
    (models/deepseek_v32/attention.py:171-193: ``indexer = None`` when ``skip_topk``).

    * ``indexer_types`` (one "full" or "shared" per layer) wins when present;
    * else layer i shares iff ``index_topk_pattern[i] == "S"`` when a pattern is given,
    * else iff ``max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0`` (offset 2 and
      frequency 1 by default: no layer shares).

    ValueError, naming the key and value, for a list or number vLLM would refuse.
    """
    if not c.has("index_topk"):
        return set(), "no index_topk"  # utils.py:1022: without index_topk no layer skips
    types = c.data.get("indexer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n or set(types) - {"full", "shared"}:
            raise ValueError(f"{c.path('indexer_types')} must hold 'full' or 'shared' for each "
                             f"of the {n} layers (vLLM 0.34.0, {_SKIP_LINE}), got "
                             f"{describe(types)}")
        return {i for i, kind in enumerate(types) if kind == "shared"}, "indexer_types"
    freq = c.data.get("index_topk_freq")
    freq = 1 if freq is None else validate.positive_int(c.path("index_topk_freq"), freq)
    pattern = c.data.get("index_topk_pattern")
    offset = c.data.get("index_skip_topk_offset")
    offset = 2 if offset is None else validate.positive_int(
        c.path("index_skip_topk_offset"), offset, allow_zero=True)
    if pattern is not None:
        if not isinstance(pattern, list | str):
            raise ValueError(f"{c.path('index_topk_pattern')} must list 'S' or another "
                             f"letter per layer, got {describe(pattern)}")
        return {i for i in range(min(n, len(pattern))) if pattern[i] == "S"}, "index_topk_pattern"
    return ({i for i in range(n) if max(i - offset + 1, 0) % freq != 0},
            f"index_topk_freq={freq}, index_skip_topk_offset={offset}")


def _indexer_layers(c: Fields, n: int, notes: list[str]) -> int:
    """Layers that build an indexer of their own (:func:`shared_indexer_layers`), the keys read
    marked and what was decided said in the notes."""
    shared_layers, where = shared_indexer_layers(c, n)
    shared = len(shared_layers)
    if where == "indexer_types":
        unread = [k for k in ("index_topk_freq", "index_topk_pattern", "index_skip_topk_offset")
                  if c.has(k)]
        c.touch(*unread)
        if unread:
            notes.append(f"{', '.join(unread)} not used: indexer_types decides which layers "
                         f"share an indexer (vLLM 0.34.0 reads them only without it, {_SKIP_LINE})")
    elif where == "index_topk_pattern":
        c.touch("index_topk_freq", "index_skip_topk_offset")  # not read with a pattern
    if shared:
        notes.append(f"{shared} of {n} layers share an earlier layer's indexer ({where}; vLLM "
                     f"0.34.0 {_SKIP_LINE}): they build no indexer and cache no indexer key, "
                     f"so {n - shared} layers cache one")
    return n - shared


# transformers 5.25.0 GlmMoeDsaConfig: every layer is DSA, "indexed_attention" by default
# (configuration_glm_moe_dsa.py:152-154); NVIDIA's GLM-5.2/5.3 files write the older name
_DSA_LAYERS = {"indexed_attention", "deepseek_sparse_attention"}


def _dsa_layer_types(c: Fields, n: int, notes: list[str]) -> None:
    """``layer_types`` that name the DSA layer for every layer (what this reader counts) are read;
    any other entry is refused, naming the transformers line that reads the list (vLLM 0.34.0's
    deepseek_v32 path does not read it)."""
    types = c.data.get("layer_types")
    if types is None:
        return
    where = "transformers/models/glm_moe_dsa/configuration_glm_moe_dsa.py:154"
    if not isinstance(types, list) or len(types) != n or set(types) - _DSA_LAYERS:
        raise ValueError(f"{c.path('layer_types')}={describe(types)[:60]}: transformers 5.25.0 "
                         f"reads it ({where}) and kvlib knows only {', '.join(sorted(_DSA_LAYERS))}"
                         f" for each of the {n} layers; kvlib refuses rather than guess")
    notes.append(f"layer_types is read: all {n} entries are {types[0]!r}, MLA with a sparse "
                 f"indexer in every layer ({where}; vLLM 0.34.0 does not read the list)")


@register("deepseek_v32", "glm_moe_dsa",
          handles=("index_head_dim", "index_n_heads", "index_topk"),
          ignores=(*_MLA_IGNORES, "index_n_heads", "indexer_rope_interleave"))
def read_sparse(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    """DeepSeek V3.2 and GLM-5.x: MLA in every layer, plus the lightning indexer's key cache in
    every layer that builds its own indexer (:func:`_indexer_layers`)."""
    mla = _mla(c, n, notes)
    _dsa_layer_types(c, n, notes)
    d_I = c.int("index_head_dim", why="DeepSeek V3.2's indexer caches a key per token")
    if d_I % 128:
        raise ValueError(f"{c.path('index_head_dim')}={d_I}: vLLM stores one fp32 scale per 128 "
                         "key values (index_head_dim // 128); kvlib counts only widths that are a "
                         "multiple of 128")
    top_k = c.int("index_topk", required=False)
    notes.append(f"sparse attention: each layer with an indexer also caches one indexer key per "
                 f"token (index_head_dim={d_I} fp8 values + one fp32 scale per 128 = "
                 f"{d_I + d_I // 128 * 4} bytes, whatever the KV dtype, as vLLM stores it)"
                 + (f"; each query attends to the top {top_k:,} latents only, which saves "
                    "reads and FLOPs, not memory" if top_k else ""))
    latent = (CacheKind.LATENT, None)
    keys = layer(CacheKind.INDEXER, "Indexer", d_I=d_I, b=1)  # stored as bytes (uint8)
    n_keys = _indexer_layers(c, n, notes)
    counts = {**mla.layers.counts, keys: n_keys}
    del counts[latent]
    full_latent = layer(CacheKind.LATENT, "MLA+RoPE", **mla.sizes)
    counts[full_latent] = n
    return Attention(mla.kind, mla.label, mla.sizes,
                     Layers(lambda i: full_latent, counts))


def _mla(c: Fields, n: int, notes: list[str]) -> Attention:
    d_L = c.int("kv_lora_rank", why="an MLA config caches the latent")
    d_R = c.int("qk_rope_head_dim", why="an MLA config caches the decoupled RoPE key too")
    c.int("num_attention_heads", "n_head")  # validated, though the latent cache ignores it
    c.int("hidden_size", required=False)
    kv = c.data.get("num_key_value_heads")
    notes.append(f"MLA (kv_lora_rank set): each layer caches the latent (kv_lora_rank="
                 f"{d_L}) plus the decoupled RoPE key (qk_rope_head_dim={d_R}) per token"
                 + (f"; num_key_value_heads={kv!r} plays no part" if kv is not None else ""))
    mtp = c.data.get("num_nextn_predict_layers")
    if mtp:
        notes.append(f"num_nextn_predict_layers={mtp!r} (multi-token prediction) not "
                     "counted: it caches only when used as a speculative-decoding draft")
    return Attention("MLA+RoPE", "MLA", {"d_L": d_L, "d_R": d_R},
                     every_layer(n, (CacheKind.LATENT, None)))
