"""Qwen3-Next: gated attention every ``full_attention_interval``-th layer, Gated DeltaNet elsewhere.

transformers' Qwen3NextConfig builds ``layer_types`` as "full_attention" iff
(i + 1) % full_attention_interval == 0, else "linear_attention"; a file may also
list ``layer_types`` itself. The attention layers cache K and V (GQA, ``head_dim``);
each linear layer keeps a Gated DeltaNet state (vLLM 0.33.0
``gated_delta_net_state_shape``, models/qwen3_next.py ``get_mamba_state_shape_from_config``):
a convolution state of ``linear_conv_kernel_dim - 1`` rows over
2 x ``linear_num_key_heads`` x ``linear_key_head_dim`` + ``linear_num_value_heads`` x
``linear_value_head_dim`` channels, and one ``linear_key_head_dim`` x
``linear_value_head_dim`` matrix per value head, both in the model dtype (vLLM has no
override for Qwen3-Next).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind

_HANDLES = ("full_attention_interval", "linear_num_key_heads", "linear_key_head_dim",
            "linear_conv_kernel_dim", "use_sliding_window")


def _types(c: Fields, n: int, notes: list[str]) -> list[str]:
    if c.has("layer_types"):
        types = c.data["layer_types"]
        ok = isinstance(types, list) and len(types) == n and all(
            t in ("full_attention", "linear_attention") for t in types)
        if not ok:
            raise ValueError(f"{c.path('layer_types')} must list full_attention or "
                             f"linear_attention for each of the {n} layers, got {describe(types)}")
        notes.append("layer_types decides each layer")
        return types
    every = c.int("full_attention_interval", why="Qwen3-Next needs it (or layer_types)")
    notes.append(f"no layer_types: layer i is full attention iff (i + 1) % "
                 f"full_attention_interval ({every}) == 0, Gated DeltaNet otherwise "
                 "(Qwen3NextConfig)")
    return ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]


@register("qwen3_next", handles=_HANDLES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    if c.flag("use_sliding_window"):
        raise ValueError(f"{c.path('use_sliding_window')}=true: sliding windows in Qwen3-Next's "
                         "attention layers are not modelled; kvlib refuses rather than guess")
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    b = model_dtype_bytes(c, notes)
    deltanet = layer(CacheKind.LINEAR, "Gated DeltaNet",
                     d_conv=c.int("linear_conv_kernel_dim"), N_lk=c.int("linear_num_key_heads"),
                     d_lk=c.int("linear_key_head_dim"), N_lv=c.int("linear_num_value_heads"),
                     d_lv=c.int("linear_value_head_dim"), b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    types = _types(c, n, notes)
    notes.append(f"Gated DeltaNet state in the model dtype ({b} B per element, conv and "
                 "recurrent), as vLLM keeps it by default")
    layers: Layers = tally([full if t == "full_attention" else deltanet for t in types])
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, layers)
