"""Multi-head latent attention (DeepSeek V2/V3, Kimi K2: any config with ``kv_lora_rank``;
DeepSeek V3.2 and GLM-5 with a sparse-attention indexer).

Each layer caches the latent (``kv_lora_rank`` = d_L) plus the decoupled RoPE
key (``qk_rope_head_dim`` = d_R) per token; the key/value head count plays no
part. Multi-token-prediction layers (``num_nextn_predict_layers``) cache only
when used as a speculative-decoding draft, so they are not counted.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields
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
@register("deepseek_v32", "glm_moe_dsa",
          handles=("index_head_dim", "index_n_heads", "index_topk"),
          ignores=(*_MLA_IGNORES, "index_n_heads", "indexer_rope_interleave"))
def read_sparse(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    """DeepSeek V3.2: MLA plus, in every layer, the lightning indexer's key cache."""
    mla = _mla(c, n, notes)
    d_I = c.int("index_head_dim", why="DeepSeek V3.2's indexer caches a key per token")
    if d_I % 128:
        raise ValueError(f"{c.path('index_head_dim')}={d_I}: vLLM stores one fp32 scale per 128 "
                         "key values (index_head_dim // 128); kvlib counts only widths that are a "
                         "multiple of 128")
    top_k = c.int("index_topk", required=False)
    notes.append(f"sparse attention: every layer also caches one indexer key per token "
                 f"(index_head_dim={d_I} fp8 values + one fp32 scale per 128 = "
                 f"{d_I + d_I // 128 * 4} bytes, whatever the KV dtype, as vLLM stores it)"
                 + (f"; each query attends to the top {top_k:,} latents only, which saves "
                    "reads and FLOPs, not memory" if top_k else ""))
    latent = (CacheKind.LATENT, None)
    keys = layer(CacheKind.INDEXER, "Indexer", d_I=d_I, b=1)  # stored as bytes (uint8)
    counts = {**mla.layers.counts, keys: n}
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
