"""LFM2: gated short-convolution layers and attention layers.

``layer_types`` lists "full_attention" or "conv" per layer (older files give the
attention layers as ``full_attn_idxs``). Each convolution layer keeps only the last
``conv_L_cache - 1`` inputs over ``conv_dim`` channels in the model dtype (vLLM 0.33.0
models/lfm2.py ``get_mamba_state_shape_from_config``, ``short_conv_state_shape``). A
``num_heads`` beside ``num_attention_heads`` (LFM2-1.2B's config) is inert: said, not refused.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind


def _attention_layers(c: Fields, n: int) -> set[int]:
    if c.has("layer_types"):
        types = c.data["layer_types"]
        if not (isinstance(types, list) and len(types) == n
                and set(types) <= {"full_attention", "conv"}):
            raise ValueError(f"{c.path('layer_types')} must list full_attention or conv for each "
                             f"of the {n} layers, got {describe(types)}")
        listed = {i for i, t in enumerate(types) if t == "full_attention"}
        older = c.data.get("full_attn_idxs")  # the older spelling: it must agree
        if older is not None and (not isinstance(older, list) or set(older) != listed):
            raise ValueError(f"{c.path('full_attn_idxs')}={older!r} disagrees with "
                             f"{c.path('layer_types')} (attention at {sorted(listed)})")
        return listed
    idxs = c.data.get("full_attn_idxs")
    if not (isinstance(idxs, list) and all(isinstance(i, int) and 0 <= i < n for i in idxs)):
        raise ValueError(f"config has no valid {c.path('layer_types')} or "
                         f"{c.path('full_attn_idxs')}, got {describe(idxs)}")
    return set(idxs)


# block_multiple_of, block_auto_adjust_ff_dim: how the feed-forward width is rounded (weights)
@register("lfm2", handles=("conv_L_cache", "full_attn_idxs"),
          ignores=("block_multiple_of", "block_auto_adjust_ff_dim", "block_ff_dim",
                   "block_ffn_dim_multiplier", "block_mlp_init_scale", "block_out_init_scale",
                   "block_use_swiglu", "block_dim", "block_norm_eps", "conv_bias"))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    b = model_dtype_bytes(c, notes)
    conv = layer(CacheKind.CONV, "Short convolution", d_conv=c.int("conv_L_cache"),
                 d_in=c.int("conv_dim"), b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    if c.has("num_heads"):  # LiquidAI/LFM2-1.2B writes it beside num_attention_heads
        c.touch("num_heads")
        notes.append(f"num_heads={c.raw['num_heads']!r} is inert: vLLM 0.34.0's lfm2 reads "
                     "num_attention_heads (models/lfm2.py:218), and transformers' Lfm2Config "
                     "has no num_heads; vLLM reads num_heads only where it builds mamba2's "
                     "layers (models/mamba2.py:207), another family")
    attn = _attention_layers(c, n)
    notes.append(f"{len(attn)} attention layers, {n - len(attn)} short-convolution layers "
                 f"(state in the model dtype, {b} B per element)")
    layers = [full if i in attn else conv for i in range(n)]
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, tally(layers))
