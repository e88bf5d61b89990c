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

Qwen3.5 and Qwen3.6 (``qwen3_5``, ``qwen3_5_moe``; everything inside ``text_config``) have
the same layers (vLLM 0.33.0 models/qwen3_5.py:388-419 calls the same state shape and dtype
functions), with one difference: their config writes ``mamba_ssm_dtype`` ("float32"), which
vLLM takes for the recurrent state while ``--mamba-ssm-cache-dtype`` is "auto"
(``Qwen3_5ForConditionalGenerationConfig``, models/config.py:953-977); the conv state
stays in the model dtype. Their MTP layer (``mtp_num_hidden_layers``) caches only as a
speculative draft and is not counted.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import dtype_bytes, model_dtype_bytes
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
        every = c.int("full_attention_interval", required=False)
        if every is not None and types != _periodic(n, every):
            raise ValueError(f"{c.path('layer_types')} and {c.path('full_attention_interval')}"
                             f"={every} disagree on which layers are full attention")
        notes.append("layer_types decides each layer")
        return types
    every = c.int("full_attention_interval", why="Qwen3-Next needs it (or layer_types)")
    notes.append(f"no layer_types: layer i is full attention iff (i + 1) % "
                 f"full_attention_interval ({every}) == 0, Gated DeltaNet otherwise "
                 "(Qwen3NextConfig)")
    return _periodic(n, every)


def _periodic(n: int, every: int) -> list[str]:
    return ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]


# attn_output_gate: a gate on the attention output (weights; the cache keeps K and V alone)
@register("qwen3_next", "qwen3_5", "qwen3_5_moe", handles=_HANDLES,
          ignores=("attn_output_gate",))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    if c.flag("use_sliding_window"):
        raise ValueError(f"{c.path('use_sliding_window')}=true: sliding windows in Qwen3-Next's "
                         "attention layers are not modelled; kvlib refuses rather than guess")
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    b = model_dtype_bytes(c, notes)
    b_s, where = b, "the model dtype, as vLLM keeps it by default"
    if family.startswith("qwen3_5") and c.has("mamba_ssm_dtype"):
        b_s = dtype_bytes(c, "mamba_ssm_dtype", c.data["mamba_ssm_dtype"])
        where = "mamba_ssm_dtype, which vLLM 0.33.0 takes for Qwen3.5"
    deltanet = layer(CacheKind.LINEAR, "Gated DeltaNet",
                     d_conv=c.int("linear_conv_kernel_dim"), N_lk=c.int("linear_num_key_heads"),
                     d_lk=c.int("linear_key_head_dim"), N_lv=c.int("linear_num_value_heads"),
                     d_lv=c.int("linear_value_head_dim"), b_c=b, b_s=b_s)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    types = _types(c, n, notes)
    notes.append(f"Gated DeltaNet state: conv in the model dtype ({b} B per element), "
                 f"recurrent in {b_s} B per element ({where})")
    layers: Layers = tally([full if t == "full_attention" else deltanet for t in types])
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, layers)
