"""Falcon-H1 (``falcon_h1``): attention and Mamba2 side by side in every layer.

vLLM 0.33.0 builds every decoder layer as ``FalconH1ParallelHybrid`` (models/falcon_h1.py:313-
405): an attention block (``num_key_value_heads`` x ``head_dim``, no window) and a Mamba2 mixer
on the same input. So each layer keeps both a growing K/V cache and a constant Mamba2 state
(``get_mamba_state_shape_from_config``, models/falcon_h1.py:538-570, ``mamba2_state_shape``):
a convolution state of ``mamba_d_conv - 1`` rows over d_ssm + 2 ``mamba_n_groups``
``mamba_d_state`` channels, d_ssm being ``mamba_d_ssm`` or, when null, ``mamba_expand`` x
``hidden_size``, and an SSM state of ``mamba_n_heads`` x ``mamba_d_head`` x ``mamba_d_state``.
Both states are kept in the model dtype (``mamba2_state_dtype``: the SSM state follows the
conv state while ``--mamba-ssm-cache-dtype`` is "auto"; Falcon-H1 has no config hook).
``attn_layer_indices`` is not read by vLLM; kvlib refuses it when set (the closed world).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind

# Scalar multipliers (muP-style scaling of activations), the scan's chunk length and the
# gated norm's settings: values within a step, not shapes of what a layer keeps.
_IGNORES = ("mamba_chunk_size", "mamba_norm_before_gate", "mamba_rms_norm", "ssm_multipliers",
            "ssm_in_multiplier", "ssm_out_multiplier", "key_multiplier",
            "attention_in_multiplier", "attention_out_multiplier", "mamba_use_mlp",
            "mamba_expand")


@register("falcon_h1", handles=("mamba_d_state", "mamba_d_conv", "mamba_expand"),
          ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    d_ssm = c.int("mamba_d_ssm", required=False)
    if d_ssm is None:
        expand, hidden = c.data.get("mamba_expand"), c.int("hidden_size")
        if not isinstance(expand, int | float) or isinstance(expand, bool) or expand <= 0 \
                or expand * hidden != int(expand * hidden):
            raise ValueError(f"{c.path('mamba_expand')} must be a positive number that makes "
                             f"a whole width with hidden_size={hidden}, got {expand!r}")
        d_ssm = int(expand * hidden)
        notes.append(f"no mamba_d_ssm: d_ssm = mamba_expand x hidden_size = {d_ssm}")
    b = model_dtype_bytes(c, notes)
    heads, head_dim = c.int("mamba_n_heads"), c.int("mamba_d_head")
    mamba2 = layer(CacheKind.MAMBA, "Mamba2", d_conv=c.int("mamba_d_conv"), d_inner=d_ssm,
                   N_sg=c.int("mamba_n_groups"), d_state=c.int("mamba_d_state"), N_sh=heads,
                   d_sh=head_dim, b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    notes.append(f"every one of the {n} layers keeps both: an attention cache ({n_g} KV heads "
                 f"of {d}) and a Mamba2 state ({heads} heads of {head_dim}, both states in the "
                 f"model dtype, {b} B)")
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d},
                     Layers(lambda i: full, {full: n, mamba2: n}))
