"""Kimi Linear (``kimi_linear``, also inside Kimi-K3's ``text_config``): Kimi Delta Attention
(KDA) layers with a constant-size state, and MLA layers with a latent cache.

``linear_attn_config`` lists the layers by **1-based** index: layer i (0-based) is KDA iff
``i + 1`` is in ``kda_layers``, MLA iff it is in ``full_attn_layers``
(vLLM 0.33.0 transformers_utils/configs/kimi_linear.py:157-161, ``is_kda_layer``); kvlib
requires the two lists to cover every layer once.

* An MLA layer caches ``kv_lora_rank + qk_rope_head_dim`` per token (vLLM 0.33.0
  models/kimi_k3/nvidia/mla.py:160, ``head_size``), even when ``mla_use_nope`` is true and
  no RoPE is applied: the slot keeps its RoPE width.
* A KDA layer keeps (``kda_state_shape``, model_executor/layers/mamba/mamba_utils.py:296-319,
  called with ``num_heads``, ``head_dim`` and ``short_conv_kernel_size`` from
  models/kimi_k3/nvidia/model.py:1517-1523) a convolution state of
  ``short_conv_kernel_size - 1`` rows over 3 x ``num_heads`` x ``head_dim`` channels (q, k
  and v) and one ``head_dim`` x ``head_dim`` matrix per head: the Gated DeltaNet table with
  N_lk = N_lv = ``num_heads`` and d_lk = d_lv = ``head_dim``. The convolution is kept in the
  model dtype, the recurrent matrix in **float32** while ``--mamba-ssm-cache-dtype`` is "auto"
  (``kda_state_dtype``, mamba_utils.py:132-149).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.readers.state import model_dtype_bytes
from kvlib.models.spec import CacheKind

KDA_RECURRENT_BYTES = 4  # float32, kda_state_dtype's "auto"
# linear_attn_config keys kvlib reads, and those that leave the state alone
_READS = {"kda_layers", "full_attn_layers", "num_heads", "head_dim", "short_conv_kernel_size"}
_LEAVES = {"gate_lower_bound": "a bound on the decay gate's values",
           "use_full_rank_gate": "the gate's projection (weights)"}


def _layers(c: Fields, la: Mapping, key: str, n: int) -> set[int]:
    value = la.get(key)
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                              and 1 <= i <= n for i in value):
        raise ValueError(f"{c.path('linear_attn_config')}.{key} must list layer numbers "
                         f"1..{n}, got {describe(value)}")
    return set(value)


def _int(c: Fields, la: Mapping, key: str) -> int:
    value = la.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{c.path('linear_attn_config')}.{key} must be a positive integer, "
                         f"got {describe(value)}")
    return value


# mla_use_output_gate: a gate on the attention output (weights); attn_res_block_size: attention
# residuals over depth, activations of one forward pass (vLLM 0.33.0 models/kimi_k3/nvidia/
# model.py:796-803), nothing kept between steps; q_lora_rank, qk_nope_head_dim, v_head_dim:
# MLA's query and value widths (weights, not the latent cache); latent_moe_use_norm: a norm in
# the MoE's latent projection (weights).
@register("kimi_linear", handles=("linear_attn_config", "kv_lora_rank"),
          ignores=("mla_use_output_gate", "attn_res_block_size", "q_lora_rank",
                   "qk_nope_head_dim", "v_head_dim", "latent_moe_use_norm"))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    la = c.data.get("linear_attn_config")
    if not isinstance(la, Mapping):
        raise ValueError(f"{c.path('linear_attn_config')} must be a JSON object, got "
                         f"{describe(la)}")
    unknown = sorted(set(la) - _READS - set(_LEAVES))
    if unknown:
        raise ValueError(f"{c.path('linear_attn_config')}.{unknown[0]}={la[unknown[0]]!r}: "
                         "kvlib does not know this key of Kimi Linear's KDA layers and "
                         "refuses rather than guess its state")
    kda, full = _layers(c, la, "kda_layers", n), _layers(c, la, "full_attn_layers", n)
    if kda & full or len(kda) + len(full) != n:
        raise ValueError(f"{c.path('linear_attn_config')}: kda_layers ({len(kda)}) and "
                         f"full_attn_layers ({len(full)}) must name each of the {n} layers once")
    d_L = c.int("kv_lora_rank", why="Kimi Linear's attention layers are MLA")
    d_R = c.int("qk_rope_head_dim", why="the MLA cache slot keeps the RoPE key's width")
    c.int("num_attention_heads")
    c.touch("num_key_value_heads")  # MLA: the latent is shared by all heads
    nope = c.flag("mla_use_nope")
    heads, d = _int(c, la, "num_heads"), _int(c, la, "head_dim")
    b = model_dtype_bytes(c, notes)
    kda_layer = layer(CacheKind.LINEAR, "Gated DeltaNet",
                      d_conv=_int(c, la, "short_conv_kernel_size"), N_lk=heads, d_lk=d,
                      N_lv=heads, d_lv=d, b_c=b, b_s=KDA_RECURRENT_BYTES)
    mla = layer(CacheKind.LATENT, "MLA+RoPE", d_L=d_L, d_R=d_R)
    notes.append(f"linear_attn_config decides each layer (1-based lists): {len(full)} MLA, "
                 f"{len(kda)} Kimi Delta Attention")
    notes.append(f"MLA layers cache kv_lora_rank + qk_rope_head_dim = {d_L} + {d_R} per token"
                 + (" (mla_use_nope: no RoPE is applied, but vLLM's slot keeps its width)"
                    if nope else ""))
    notes.append(f"KDA state: the Gated DeltaNet shapes with {heads} key and value heads of "
                 f"{d}; conv in the model dtype ({b} B), recurrent in float32 (vLLM's default)")
    layers = tally([kda_layer if i + 1 in kda else mla for i in range(n)])
    return Attention("MLA+RoPE", "MLA", {"d_L": d_L, "d_R": d_R}, layers)
