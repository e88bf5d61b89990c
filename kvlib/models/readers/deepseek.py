"""Multi-head latent attention (DeepSeek V2/V3, Kimi K2: any config with ``kv_lora_rank``).

Each layer caches the latent (``kv_lora_rank`` = d_L) plus the decoupled RoPE
key (``qk_rope_head_dim`` = d_R) per token; the key/value head count plays no
part. Multi-token-prediction layers (``num_nextn_predict_layers``) cache only
when used as a speculative-decoding draft, so they are not counted.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention, every_layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind


@register("deepseek_v2", "deepseek_v3", "kimi_k2")
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
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
