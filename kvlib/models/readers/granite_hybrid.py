"""granite-4.0-h (``granitemoehybrid``): Mamba2 layers and full-attention layers by ``layer_types``.

As vLLM 0.34.0 builds it (vllm/model_executor/models/granitemoehybrid.py):

* layer i is built from ``layer_types[i]`` (:350): "full_attention" an attention layer,
  "linear_attention" a Mamba2 layer (:321-324); transformers 5.25.0's GraniteMoeHybridConfig
  maps the published key ``layers_block_type`` onto ``layer_types`` (attribute_map) and older
  files write "attention" / "mamba", read here as the same two kinds;
* an attention layer keeps ``num_key_value_heads`` key/value heads of
  ``hidden_size / num_attention_heads`` (:240-241: vLLM derives the head dim, whatever
  ``head_dim`` says), no window;
* a Mamba2 layer keeps (``get_mamba_state_shape_from_config``, :615-645, and
  layers/mamba/mamba_utils.py ``mamba2_state_shape``) a convolution state of ``mamba_d_conv - 1``
  rows over ``mamba_expand * hidden_size + 2 * mamba_n_groups * mamba_d_state`` channels and an
  SSM state of ``mamba_n_heads x mamba_d_head x mamba_d_state``, both in the model dtype (no
  Granite override of vLLM's "auto" state dtypes in models/config.py).
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind

_MAMBA = {"linear_attention", "mamba"}
_ATTN = {"full_attention", "attention"}


def _types(c: Fields, n: int) -> list:
    key = c.first("layer_types", "layers_block_type")
    if key is None:  # GraniteMoeHybridConfig would make every layer Mamba2: refused, not assumed
        raise ValueError(f"config has no {c.path('layer_types')} (granite-4.0-h lists its Mamba2 "
                         "and attention layers; vLLM 0.34.0 builds each from it, "
                         "granitemoehybrid.py:350); kvlib refuses rather than guess")
    types = c.data[key]
    if not isinstance(types, list) or len(types) != n or set(types) - _MAMBA - _ATTN:
        raise ValueError(f"{c.path(key)} must give one of {', '.join(sorted(_MAMBA | _ATTN))} for "
                         f"each of the {n} layers (vLLM 0.34.0 granitemoehybrid.py:350), got "
                         f"{describe(types)}")
    return types


# mamba_chunk_size: the scan's chunk (compute); mamba_conv_bias / mamba_proj_bias: weights;
# position_embedding_type: RoPE or none (values); the multipliers are scalars
@register("granitemoehybrid", handles=("mamba_d_state", "mamba_d_conv", "mamba_expand",
                                       "layers_block_type"),
          ignores=("mamba_chunk_size", "mamba_conv_bias", "mamba_proj_bias",
                   "position_embedding_type", "time_step_limit", "shared_intermediate_size"))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    types = _types(c, n)
    hidden = c.int("hidden_size")
    n_h = c.int("num_attention_heads")
    n_g = c.int("num_key_value_heads", required=False) or n_h
    validate.check_divides(c.path("num_key_value_heads"), n_g, c.path("num_attention_heads"), n_h)
    d = hidden // n_h
    if c.has("head_dim") and c.data["head_dim"] != d:
        notes.append(f"head_dim={c.data['head_dim']!r} not used: vLLM 0.34.0 derives hidden_size "
                     f"/ num_attention_heads = {d} (granitemoehybrid.py:240)")
    expand = c.int("mamba_expand", required=False) or 2
    heads = c.int("mamba_n_heads", required=False) or 128
    d_head = c.data.get("mamba_d_head")
    d_head = (expand * hidden // heads if d_head in (None, "auto")
              else validate.positive_int(c.path("mamba_d_head"), d_head))
    groups = c.int("mamba_n_groups", required=False) or 1
    d_state = c.int("mamba_d_state", required=False) or 256
    d_conv = c.int("mamba_d_conv", required=False) or 4
    b = model_dtype_bytes(c, notes)
    mamba2 = layer(CacheKind.MAMBA, "Mamba2", d_conv=d_conv, d_inner=expand * hidden, N_sg=groups,
                   d_state=d_state, N_sh=heads, d_sh=d_head, b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    n_attn = sum(t in _ATTN for t in types)
    conv = expand * hidden + 2 * groups * d_state
    notes.append(f"layer_types decides each layer: {n_attn} attention ({n_g} KV heads of {d}), "
                 f"{n - n_attn} Mamba2 (conv {d_conv - 1} x {conv}, SSM {heads} x {d_head} x "
                 f"{d_state}, both in {b} B)")
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d},
                     tally([full if t in _ATTN else mamba2 for t in types]))
