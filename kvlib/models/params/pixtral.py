"""Mistral 3's vision tower and projector as vLLM 0.34.0 loads them (:mod:`kvlib.models.params`,
issue 42): the Pixtral encoder of Devstral Small 2, Ministral 3 and Mistral Small 3.1 / 3.2
(``model_type`` mistral3, ``vision_config.model_type`` pixtral).

Shapes, d the tower's width, i its MLP width, p the patch, m the spatial merge, D the text
width, L the layers vLLM builds (up to ``vision_feature_layer``):

* patch_conv: C p^2 d (no bias), ln_pre: d (pixtral.py:1901-1908)
* per layer: attention_norm and ffn_norm (d each), qkv d -> 3 d and o_proj d -> d, gate_up
  d -> 2 i and down_proj i -> d, none with a bias (pixtral.py:1599-1770)
* projector: norm d, merging_layer d m^2 -> d (nn.Linear, no bias), linear_1 d -> D and
  linear_2 D -> D, biases when ``multimodal_projector_bias`` (mistral3.py:97-190)
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields, describe

__all__ = ["pixtral_tower"]


def _layers(outer: Fields, n: int) -> int:
    """The encoder layers vLLM builds: up to the deepest ``vision_feature_layer`` (mistral3.py:
    391-409, utils.py:1357-1368: a negative index -k keeps n - k + 1 layers)."""
    feature = outer.data.get("vision_feature_layer", -1)
    picks = feature if isinstance(feature, list | tuple) else [feature]
    if not picks or any(isinstance(x, bool) or not isinstance(x, int) or not -n <= x <= n
                        for x in picks):
        raise ValueError(f"{outer.path('vision_feature_layer')} must be a layer index (or a "
                         f"list of them) within the {n} layers, got {describe(feature)}")
    return max(n + x + 1 if x < 0 else x for x in picks)


def pixtral_tower(outer: Fields, d_text: int) -> tuple[int, int]:
    """Elements of Mistral 3's Pixtral tower and projector, as (held whole on every TP rank,
    split by TP). Whole: the patch conv, the norms, the merging layer (a plain nn.Linear) and
    linear_2's bias (a RowParallelLinear adds it after the reduction). Split: the encoder's
    qkv_proj, o_proj, gate_up_proj, down_proj (vLLM's parallel layers) and linear_1, linear_2.
    Absent keys take PixtralVisionConfig's and Mistral3Config's defaults (transformers 5.25.0),
    which vLLM reads the config through."""
    v = Fields(outer.data.get("vision_config") or {}, "vision_config.", outer)
    d = v.int("hidden_size", required=False) or 1024
    i = v.int("intermediate_size", required=False) or 4096
    heads = v.int("num_attention_heads", required=False) or 16
    p = v.int("patch_size", required=False) or 16
    c = v.int("num_channels", required=False) or 3
    n = _layers(outer, v.int("num_hidden_layers", required=False) or 24)
    m = outer.int("spatial_merge_size", required=False) or 2
    if d % heads:
        raise ValueError(f"{v.path('hidden_size')}={d} is not divisible by "
                         f"{v.path('num_attention_heads')}={heads}: vLLM's Pixtral attention "
                         "asserts it (pixtral.py:1649-1652)")
    hd = v.int("head_dim", required=False)
    if hd is not None and hd != d // heads:
        raise ValueError(f"{v.path('head_dim')}={hd}, but vLLM builds the Pixtral heads of "
                         f"hidden_size / num_attention_heads = {d // heads} (pixtral.py:1651)")
    bias = bool(outer.flag("multimodal_projector_bias"))
    whole = c * p * p * d + d + n * 2 * d + d + d * m * m * d + (d_text if bias else 0)
    split = (n * (3 * d * d + d * d + 2 * d * i + i * d)
             + d * d_text + (d_text if bias else 0) + d_text * d_text)
    return whole, split
