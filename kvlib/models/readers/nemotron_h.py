"""Nemotron-H (and Nemotron 3 Nano, Super, Ultra): Mamba2, attention and MLP layers in a
written pattern.

``hybrid_override_pattern`` has one character per layer: ``M`` a Mamba2 layer, ``*``
an attention layer, ``-`` an MLP and ``E`` a mixture-of-experts layer (the last two
keep nothing). Newer files list the same in ``layers_block_type`` ("mamba", "attention",
"mlp", "moe"; transformers' NemotronHConfig also takes "linear_attention" and
"full_attention"), and may leave out ``num_hidden_layers``, which NemotronHConfig derives as
``len(layers_block_type)``; vLLM 0.33.0 counts attention layers from that list
(config/model.py:1752-1764). Attention layers cache K and V (``num_key_value_heads`` x
``head_dim``; older files write ``attention_head_dim``, which transformers 5.x ignores: the
config class's default head_dim of 128 applies, and vLLM 0.33.0 reads that config).
Each Mamba2 layer keeps (vLLM 0.33.0 models/nemotron_h.py ``get_mamba_state_shape_from_config``) a
convolution state of ``conv_kernel - 1`` rows over ``mamba_num_heads`` x
``mamba_head_dim`` + 2 ``n_groups`` ``ssm_state_size`` channels in the model dtype,
and an SSM state of ``mamba_num_heads`` x ``mamba_head_dim`` x ``ssm_state_size`` in
**float32** unless the config sets ``mamba_ssm_cache_dtype`` (vLLM's NemotronH config
hook, models/config.py: DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32").
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.class_defaults import default, take
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import dtype_bytes, model_dtype_bytes
from kvlib.models.spec import CacheKind

NEMOTRON_H_HEAD_DIM = 128  # NemotronHConfig's default head_dim
_KINDS = {"M": "Mamba2", "*": "attention", "-": "MLP", "E": "mixture of experts"}
_BLOCKS = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*",
           "mlp": "-", "moe": "E"}


def _block_types(c: Fields) -> list | None:
    types = c.data.get("layers_block_type")
    if types is None:
        return None
    if not isinstance(types, list) or not types or any(t not in _BLOCKS for t in types):
        bad = next((t for t in types if t not in _BLOCKS), types) if isinstance(types, list) \
            else types
        raise ValueError(f"{c.path('layers_block_type')} must list {', '.join(_BLOCKS)} for "
                         f"each layer, got {describe(bad)}")
    return types


def _count(c: Fields) -> int | None:
    types = _block_types(c)
    return None if types is None else len(types)


def _pattern(c: Fields, n: int) -> str:
    types = _block_types(c)
    if types is None:
        return c.data.get("hybrid_override_pattern")
    if len(types) != n:
        raise ValueError(f"{c.path('layers_block_type')} has {len(types)} entries for {n} "
                         "layers (num_hidden_layers)")
    pattern = "".join(_BLOCKS[t] for t in types)
    written = c.data.get("hybrid_override_pattern")
    if written is not None and written != pattern:
        raise ValueError(f"{c.path('layers_block_type')} and "
                         f"{c.path('hybrid_override_pattern')} disagree")
    return pattern


# chunk_size: the Mamba2 scan's chunk length (compute only; the states do not depend on it);
# expand: vLLM sizes the Mamba2 state by mamba_num_heads x mamba_head_dim, not expand x hidden;
# moe_latent_size: the MoE's down/up projections around the experts (weights); mtp_*: the
# multi-token-prediction block's own layout (it caches only as a speculative-decoding draft)
@register("nemotron_h", handles=("hybrid_override_pattern", "layers_block_type",
                                 "mamba_num_heads"),
          ignores=("chunk_size", "expand", "moe_latent_size", "mtp_hybrid_override_pattern",
                   "mtp_layers_block_type"), count_layers=_count)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    pattern = _pattern(c, n)
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set(_KINDS):
        raise ValueError(f"{c.path('hybrid_override_pattern')} must have one of "
                         f"{', '.join(_KINDS)} for each of the {n} layers, got {describe(pattern)}")
    n_h = c.int("num_attention_heads")
    n_g = c.int("num_key_value_heads", required=False)
    if n_g is None:  # vLLM reads the config object: NemotronHConfig's default
        n_g = take("num_key_value_heads", c, notes) or c.int("num_key_value_heads")
    d = c.int("head_dim", required=False)
    if d is None:  # NemotronHConfig (transformers 5.x) reads head_dim only, default 128
        found = default("head_dim", c)  # configuration_nemotron_h.py:109 (class_defaults.json)
        if found is not None and found.rule != "constant":
            raise found.refusal(c)
        d = found.value if found is not None else NEMOTRON_H_HEAD_DIM
        notes.append(f"no head_dim: NemotronHConfig's default of {d} applies (vLLM reads the "
                     "same config)")
    older = c.data.get("attention_head_dim")
    if older is not None and older != d:
        notes.append(f"attention_head_dim={older!r} is ignored: transformers' NemotronHConfig and "
                     f"vLLM read head_dim ({d})")
    b = model_dtype_bytes(c, notes)
    if c.has("mamba_ssm_cache_dtype"):
        b_s = dtype_bytes(c, "mamba_ssm_cache_dtype", c.data["mamba_ssm_cache_dtype"])
        where = "mamba_ssm_cache_dtype"
    else:
        b_s, where = 4, "vLLM's NemotronH default, float32"
    mamba2 = layer(CacheKind.MAMBA, "Mamba2", d_conv=c.int("conv_kernel"),
                   d_inner=c.int("mamba_num_heads") * c.int("mamba_head_dim"),
                   N_sg=c.int("n_groups"), d_state=c.int("ssm_state_size"),
                   N_sh=c.int("mamba_num_heads"), d_sh=c.int("mamba_head_dim"), b_c=b, b_s=b_s)
    full = layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
    empty = layer(CacheKind.NONE)
    counts = {k: pattern.count(k) for k in _KINDS if k in pattern}
    said = "layers_block_type" if c.has("layers_block_type") else "hybrid_override_pattern"
    notes.append(f"{said} decides each layer: " + ", ".join(
        f"{v} {_KINDS[k]}" for k, v in counts.items()) + " (MLP and MoE layers keep nothing)")
    notes.append(f"Mamba2 states: convolution in the model dtype ({b} B), SSM state in "
                 f"{b_s} B per element ({where})")
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    validate.check_divides(c.path("num_key_value_heads"), n_g,
                           c.path("num_attention_heads"), n_h)
    layers = tally([mamba2 if k == "M" else full if k == "*" else empty for k in pattern])
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, layers)
