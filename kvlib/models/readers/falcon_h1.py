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
d_ssm, the Mamba heads and their width take FalconH1Config's defaults where the config leaves
them out, and a config its ``validate_architecture`` rejects is refused, naming the check.
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


_CONFIG = "transformers 5.25.0 models/falcon_h1/configuration_falcon_h1.py"


def _d_ssm(c: Fields, notes: list[str]) -> int:
    """d_ssm as FalconH1Config reads it: ``mamba_d_ssm``; absent, its default 1024 (:77); null,
    ``mamba_expand`` x ``hidden_size`` (:109)."""
    if "mamba_d_ssm" not in c.raw:
        notes.append(f"no mamba_d_ssm: FalconH1Config's default of 1024 applies ({_CONFIG}:77)")
        return 1024
    if c.raw["mamba_d_ssm"] is not None:
        return c.int("mamba_d_ssm")
    c.touch("mamba_d_ssm")
    expand, hidden = c.data.get("mamba_expand", 2), c.int("hidden_size")
    if not isinstance(expand, int | float) or isinstance(expand, bool) or expand <= 0 \
            or expand * hidden != int(expand * hidden):
        raise ValueError(f"{c.path('mamba_expand')} must be a positive number that makes "
                         f"a whole width with hidden_size={hidden}, got {expand!r}")
    d_ssm = int(expand * hidden)
    notes.append(f"mamba_d_ssm null: d_ssm = mamba_expand x hidden_size = {d_ssm}")
    return d_ssm


def _validate(c: Fields, d_ssm: int, heads: int, head_dim: int) -> None:
    """FalconH1Config.validate_architecture (configuration_falcon_h1.py:122-130), which
    transformers runs when it builds the config, so vLLM (which loads it through transformers)
    refuses the same config: its Mamba2 heads must tile d_ssm exactly."""
    check = f"transformers' FalconH1Config.validate_architecture ({_CONFIG}:122-130)"
    if d_ssm % heads:
        raise ValueError(f"{c.path('mamba_n_heads')}={heads} does not divide d_ssm={d_ssm}: "
                         f"{check} rejects it (\"mamba_n_heads must divide mamba_expand * "
                         "hidden_size\"), so neither transformers nor vLLM builds this config")
    if heads * head_dim != d_ssm:
        raise ValueError(f"{c.path('mamba_n_heads')} x {c.path('mamba_d_head')} = {heads} x "
                         f"{head_dim} = {heads * head_dim} is not d_ssm = {d_ssm}: {check} "
                         "rejects it (\"The dimensions for the Mamba head state do not match "
                         "the model intermediate_size\"), so neither transformers nor vLLM "
                         "builds this config")


@register("falcon_h1", handles=("mamba_d_state", "mamba_d_conv", "mamba_expand"),
          ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    d_ssm = _d_ssm(c, notes)
    b = model_dtype_bytes(c, notes)
    heads = c.int("mamba_n_heads", required=False)
    if heads is None:
        heads = 128
        notes.append(f"no mamba_n_heads: FalconH1Config's default of 128 applies ({_CONFIG}:78)")
    if c.data.get("mamba_d_head", "auto") == "auto":
        head_dim = d_ssm // heads
        notes.append(f"mamba_d_head 'auto': d_ssm // mamba_n_heads = {d_ssm} // {heads} = "
                     f"{head_dim} ({_CONFIG}:110-111)")
    else:
        head_dim = c.int("mamba_d_head")
    _validate(c, d_ssm, heads, head_dim)
    mamba2 = layer(CacheKind.MAMBA, "Mamba2", d_conv=c.int("mamba_d_conv"), d_inner=d_ssm,
                   N_sg=c.int("mamba_n_groups"), d_state=c.int("mamba_d_state"), N_sh=heads,
                   d_sh=head_dim, b_c=b, b_s=b)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    notes.append(f"every one of the {n} layers keeps both: an attention cache ({n_g} KV heads "
                 f"of {d}) and a Mamba2 state ({heads} heads of {head_dim}, both states in the "
                 f"model dtype, {b} B)")
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d},
                     Layers(lambda i: full, {full: n, mamba2: n}))
