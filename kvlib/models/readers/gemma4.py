"""Gemma 4 and Gemma 3n: per-layer attention shapes and KV sharing.

``layer_types`` lists sliding and full layers. Gemma 4's full layers use their own
shape (transformers 5.24 Gemma4TextConfig ``per_layer_config``): head dim
``global_head_dim`` (default 512) and, when ``attention_k_eq_v`` is true (the
default if absent), ``num_global_key_value_heads`` key/value heads; K and V are
still cached separately (vLLM 0.33.0 models/gemma4.py loads the shared K weights
into both slots). The last ``num_kv_shared_layers`` layers reuse an earlier layer's
cache and allocate nothing (vLLM creates no cache spec for a layer with a
``kv_sharing_target_layer_name``: v1/worker/gpu_model_runner.py). Gemma 3n shares
the KV-sharing rule and has one shape for every layer.
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention, from_layer_types, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

GEMMA4_GLOBAL_HEAD_DIM = 512  # Gemma4TextConfig's default global_head_dim


def _shared(c: Fields, n: int, notes: list[str]) -> int:
    shared = c.int("num_kv_shared_layers", required=False, allow_zero=True) or 0
    if shared > n:
        raise ValueError(f"{c.path('num_kv_shared_layers')}={shared} exceeds the {n} layers")
    if shared:
        notes.append(f"num_kv_shared_layers={shared}: the last {shared} layers reuse an earlier "
                     "layer's cache and keep nothing of their own")
    return shared


def _read(c: Fields, family: str, n: int, notes: list[str], global_shape: bool) -> Attention:
    if c.has("per_layer_config"):
        raise ValueError(f"{c.path('per_layer_config')} is set: an explicit per-layer override "
                         "is not modelled; kvlib refuses rather than guess")
    n_h, n_g, d, label = attention.heads(c, notes, family=family)
    if not c.has("layer_types"):
        raise ValueError(f"config has no {c.path('layer_types')} ({family} lists its layers)")
    kinds = from_layer_types(c, n, notes)
    local = {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}
    full_sizes = dict(local)
    if global_shape:
        d_full = c.int("global_head_dim", required=False) or GEMMA4_GLOBAL_HEAD_DIM
        k_eq_v = c.flag("attention_k_eq_v")
        g_full = c.int("num_global_key_value_heads", required=False)
        if (k_eq_v is None or k_eq_v) and g_full is not None:
            validate.check_divides(c.path("num_global_key_value_heads"), g_full,
                                   c.path("num_attention_heads"), n_h)
            full_sizes["N_g"] = g_full
        full_sizes["d_QK"] = full_sizes["d_V"] = d_full
        notes.append(f"full layers: {full_sizes['N_g']} key/value heads of {d_full} "
                     f"(global_head_dim, num_global_key_value_heads); sliding layers: {n_g} of {d}"
                     + ("; attention_k_eq_v: K and V are still cached separately" if k_eq_v
                        else ""))
    shared = _shared(c, n, notes)
    layers = []
    for i in range(n):
        kind, window = kinds.layer(i)
        if i >= n - shared:
            layers.append(layer(CacheKind.SHARED))
        elif kind is CacheKind.FULL:
            layers.append(layer(CacheKind.FULL, "GQA", **full_sizes))
        else:
            layers.append(layer(kind, "GQA", window, **local))
    return Attention("GQA", label, local, tally(layers))


@register("gemma4", handles=("global_head_dim", "num_global_key_value_heads",
                             "num_kv_shared_layers"))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    return _read(c, family, n, notes, global_shape=True)


# AltUp and LAuReL (Gemma 3n): extra residual streams and a low-rank residual branch computed
# within a step (modeling_gemma3n.py), weights and activations, nothing kept between tokens
@register("gemma3n", handles=("num_kv_shared_layers",),
          ignores=("altup_active_idx", "altup_num_inputs", "altup_coef_clip",
                   "altup_correct_scale", "altup_lr_multiplier", "laurel_rank",
                   "activation_sparsity_pattern"))
def read_gemma3n(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    return _read(c, family, n, notes, global_shape=False)
