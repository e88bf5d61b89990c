"""Inkling 2 (``inkling2``): Inkling's layers with attention residuals, as transformers 5.25.0
builds it (vLLM 0.34.0 has no Inkling 2 model).

Per layer (transformers/models/inkling2/, the 5.25.0 wheel):

* attention, full ("hybrid") or sliding over ``sliding_window_size`` ("hybrid_sliding"):
  ``layer_types``, default layer i full iff (i + 1) % 6 == 0 (configuration_inkling2.py:
  123-127); a sliding layer keeps ``swa_num_key_value_heads`` x ``swa_head_dim``, a full one
  ``num_key_value_heads`` x ``head_dim`` (modeling_inkling2.py:598-604, 691-697), K and V both
  head_dim wide (:479-531), in the model dtype;
* four short-convolution streams, each keeping its last ``conv_kernel_size`` inputs in float32:
  keys and values (conv_idx 0 and 1, :607-614, 700-707; the full layers' "dynamic" convolution
  keeps the same inputs, :436-443) and the attention and MLP outputs (conv_idx 2 and 3,
  :915-922, 974-981), in one ``LinearAttentionAndFullAttentionLayer`` or
  ``...SlidingWindowAttentionLayer`` (cache_utils.py:1535-1536, 2052-2061, 1242-1301).
  kvlib counts them as a window of conv_kernel_size tokens (``KINDS["Short-conv window"]``),
  d_w = 2 KV heads x head_dim + 2 hidden_size values per token, b = 4 (float32).

The block attention residuals (``n_layers_per_attn_res_block``) mix earlier blocks' outputs at
the same position (:877-900): nothing kept across tokens. Attention sinks, the output gate, the
L2 clips and the log scaling change logits and outputs, not the cache.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields
from kvlib.models.readers.inkling import kernel, layer_types, window_size
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

__all__ = ["read", "layers", "INKLING2_IGNORES", "DEFAULTS"]

# Weights, routing, clips, softcaps and logits: no shape of what a layer keeps (d_rel and
# rel_extent: the relative-position bias over rel_extent tokens, modeling_inkling2.py:197-228)
INKLING2_IGNORES = (
    "d_rel", "rel_extent", "log_scaling_n_floor", "log_scaling_alpha", "qk_l2_clip_threshold",
    "rel_l2_clip_threshold", "n_layers_per_attn_res_block", "mlp_gate_softcap",
    "mlp_up_softcap", "scoring_func", "moe_intermediate_size", "n_routed_experts",
    "num_experts_per_tok", "route_scale", "unpadded_vocab_size", "number_of_conv_states",
    "vision_config", "image_token_id", "loop_gate_rank",
)
# The config classes' defaults (configuration_inkling2.py:85-98,
# configuration_inkling2_loop.py:97-114): (hidden, heads, KV heads, head dim) full, then sliding
DEFAULTS = {
    "inkling2": dict(hidden_size=4608, num_attention_heads=48, num_key_value_heads=8,
                     head_dim=128, swa_num_attention_heads=48, swa_num_key_value_heads=8,
                     swa_head_dim=128),
    "inkling2_loop": dict(hidden_size=2304, num_attention_heads=24, num_key_value_heads=8,
                          head_dim=128, swa_num_attention_heads=24, swa_num_key_value_heads=8,
                          swa_head_dim=128),
}
WINDOW = 1024  # sliding_window_size's default in both classes


def _get(c: Fields, key: str, family: str, notes: list[str]) -> int:
    v = c.int(key, required=False)
    if v is None:
        v = DEFAULTS[family][key]
        notes.append(f"no {key}: {family}'s default of {v} applies")
    return v


def layers(c: Fields, family: str, n: int, notes: list[str]) -> tuple[list[tuple], dict]:
    """(attention, conv window) of each of the ``n`` layers, and the sizes of the full layers."""
    hidden = _get(c, "hidden_size", family, notes)
    K = kernel(c, notes)
    types = layer_types(c, n)
    c.touch("layer_types")
    if types is None:
        types = ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(n)]
        notes.append(f"no layer_types: {family}'s default, layer i full iff (i + 1) % 6 == 0")
    W = window_size(c, WINDOW, notes if "hybrid_sliding" in types else [])
    out = {}
    for kind, p in (("hybrid", ""), ("hybrid_sliding", "swa_")):
        n_h = _get(c, f"{p}num_attention_heads", family, notes if kind in types else [])
        n_g = _get(c, f"{p}num_key_value_heads", family, notes if kind in types else [])
        d = _get(c, f"{p}head_dim", family, notes if kind in types else [])
        sizes = dict(N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
        att = (layer(CacheKind.SLIDING, "GQA", W, **sizes) if kind == "hybrid_sliding"
               else layer(CacheKind.FULL, "GQA", **sizes))
        conv = layer(CacheKind.SLIDING, "Short-conv window", K, d_w=2 * n_g * d + 2 * hidden,
                     b=4)
        out[kind] = (att, conv)
        if kind in types:
            notes.append(f"{types.count(kind)} {'sliding' if p else 'full'} layers also keep "
                         f"four short-convolution streams over the last {K} tokens "
                         f"(conv_kernel_size) in float32: 2 x {n_g} x {d} + 2 x {hidden} = "
                         f"{2 * n_g * d + 2 * hidden} values per token (transformers 5.25.0)")
    return [out[t] for t in types], dict(out["hybrid"][0][3])


def counts(per_layer: list[tuple]) -> dict:
    c: dict = {}
    for att, conv in per_layer:
        c[att] = c.get(att, 0) + 1
        c[conv] = c.get(conv, 0) + 1
    return c


def attention(per_layer: list[tuple], full: dict, counted: dict) -> Attention:
    n_h, n_g = full["N_h"], full["N_g"]
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, full, Layers(lambda i: per_layer[i][0], counted))


@register("inkling2", handles=("sconv_kernel_size", "conv_kernel_size"),
          ignores=INKLING2_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    per_layer, full = layers(c, family, n, notes)
    return attention(per_layer, full, counts(per_layer))
