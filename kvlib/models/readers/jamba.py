"""Jamba: attention every ``attn_layer_period``-th layer, Mamba (v1) layers elsewhere.

transformers' JambaConfig: layer i is attention iff i % attn_layer_period ==
attn_layer_offset. Each Mamba layer keeps (vLLM 0.33.0 models/jamba.py
``get_mamba_state_shape_from_config``, ``mamba1_state_shape``) a convolution state of
``mamba_d_conv - 1`` rows over ``mamba_expand x hidden_size`` channels and an SSM
state of ``mamba_expand x hidden_size`` x ``mamba_d_state``, both in the model dtype.
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind


# mamba_dt_rank: the time-step projection's rank (weights); use_mambapy: which kernel runs
@register("jamba", handles=("attn_layer_period", "attn_layer_offset", "mamba_d_state",
                            "mamba_d_conv", "mamba_expand"),
          ignores=("mamba_dt_rank", "use_mambapy"))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    period = c.int("attn_layer_period")
    offset = c.int("attn_layer_offset", allow_zero=True)
    if offset >= period:
        raise ValueError(f"{c.path('attn_layer_offset')}={offset} must be below "
                         f"{c.path('attn_layer_period')}={period}")
    b = model_dtype_bytes(c, notes)
    expand = c.int("mamba_expand")
    mamba = layer(CacheKind.MAMBA, "Mamba", d_conv=c.int("mamba_d_conv"),
                  d_inner=expand * c.int("hidden_size"), d_state=c.int("mamba_d_state"),
                  b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    layers = [full if i % period == offset else mamba for i in range(n)]
    notes.append(f"layer i is attention iff i % attn_layer_period ({period}) == "
                 f"attn_layer_offset ({offset}), Mamba otherwise (JambaConfig); Mamba states in "
                 f"the model dtype ({b} B per element)")
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, tally(layers))
