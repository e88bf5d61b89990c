"""Laguna (poolside): sliding and full layers, query heads per layer, one KV shape for all.

As vLLM 0.34.0 builds it (vllm/model_executor/models/laguna.py):

* layer i slides over ``sliding_window`` tokens iff ``layer_types[i] == "sliding_attention"``
  (laguna.py:299-304), else it is full attention;
* ``num_attention_heads_per_layer[i]`` overrides the query heads of layer i (:490-495); every
  layer keeps ``num_key_value_heads`` key/value heads of ``head_dim`` (:502-504), so the
  per-layer query heads change compute, not the cache (each must still be a multiple of the KV
  heads);
* ``gating`` (True, "per-head" or per element) adds a softplus output gate, a weight
  (``g_proj``, :327-351); ``swa_attention_sink_enabled`` a learned per-head bias on sliding
  layers (:354-360); ``gating_types`` and ``swa_rope_parameters`` are values of the same.
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.class_defaults import take
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, every_layer, from_layer_types
from kvlib.models.readers.registry import register

_IGNORES = ("gating", "gating_types", "swa_attention_sink_enabled", "swa_rope_parameters",
            "moe_apply_router_weight_on_input", "shared_expert_intermediate_size")


@register("laguna", ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h = c.int("num_attention_heads")
    n_g = c.int("num_key_value_heads", required=False)
    if n_g is None:  # vLLM reads the config object: LagunaConfig's default
        n_g = take("num_key_value_heads", c, notes) or c.int("num_key_value_heads")
    d = c.int("head_dim", required=False)
    if d is None:  # the config object's head_dim: LagunaConfig's default
        d = take("head_dim", c, notes)
    if d is None:  # LagunaAttention: head_dim or hidden_size // num_heads (laguna.py:290)
        hidden = c.int("hidden_size")
        d = hidden // n_h
        notes.append(f"no head_dim: hidden_size / num_attention_heads = {hidden} / {n_h} = {d}")
    per_layer = c.data.get("num_attention_heads_per_layer")
    if per_layer is not None:
        if not isinstance(per_layer, list) or len(per_layer) != n:
            raise ValueError(f"{c.path('num_attention_heads_per_layer')} must hold one head "
                             f"count for each of the {n} layers, got {describe(per_layer)}")
        for i, h in enumerate(per_layer):
            validate.check_divides(c.path("num_key_value_heads"), n_g,
                                   f"{c.path('num_attention_heads_per_layer')}[{i}]",
                                   validate.positive_int(
                                       f"{c.path('num_attention_heads_per_layer')}[{i}]", h))
        notes.append(f"num_attention_heads_per_layer ({min(per_layer)} to {max(per_layer)} query "
                     f"heads) read: every layer keeps the same {n_g} key/value heads of {d} "
                     "(vllm/model_executor/models/laguna.py:490-504), so the cache does not "
                     "change with them")
    else:
        validate.check_divides(c.path("num_key_value_heads"), n_g,
                               c.path("num_attention_heads"), n_h)
    if c.has("layer_types"):
        layers = from_layer_types(c, n, notes)
    else:  # laguna.py:304: no layer_types, no window in any layer
        layers = every_layer(n)
        notes.append("no layer_types: vLLM 0.34.0 gives no layer a window "
                     "(vllm/model_executor/models/laguna.py:299-304), every layer full attention"
                     + (f"; sliding_window={c.data['sliding_window']!r} is inert"
                        if c.has("sliding_window") else ""))
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, layers)
