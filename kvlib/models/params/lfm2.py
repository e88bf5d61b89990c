"""LFM2 and LFM2-VL as vLLM 0.34.0 builds them (:mod:`kvlib.models.params`, issue 42).

LFM2 (``model_type`` lfm2, vLLM models/lfm2.py): an embedding V x d read as the head too
(the head is always tied: ``lm_head.tie_weights(embed_tokens)``, :593-599), a final
``embedding_norm`` d (:457), and per layer, by ``layer_types``:

* "full_attention": qkv d -> (h + 2 kv) hd and out_proj h hd -> d, hd = d / h whatever the
  config's head_dim (:120-157), q_layernorm and k_layernorm (hd each, :173-174);
* "conv": ShortConv (layers/mamba/short_conv.py:57-81): conv (conv_dim x conv_L_cache),
  in_proj conv_dim -> 3 conv_dim, out_proj conv_dim -> conv_dim, biases when ``conv_bias``;
* both: operator_norm and ffn_norm (d each) and the gated MLP w1 / w3 (block_dim -> w) and w2
  (w -> block_dim), w = ``intermediate_size``, or with ``block_auto_adjust_ff_dim``
  int(2 i / 3), times ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``
  (:59-94).

LFM2-VL (lfm2_vl, vLLM models/lfm2_vl.py:493-525, 697-710; lfm2_siglip2.py): the text model
above from ``text_config``, the SigLIP2 NaViT tower (patch_embedding C p^2 -> d with bias,
position_embedding num_patches x d, per layer two LayerNorms, qkv d -> 3 d, out_proj, fc1 d ->
i, fc2 i -> d, all with biases, post_layernorm) and the projector (LayerNorm of d f^2 when
``projector_use_layernorm``, linear_1 d f^2 -> P and linear_2 P -> D, biases when
``projector_bias``; f = ``downsample_factor``).
"""

from __future__ import annotations

from kvlib.models.params.tally import _layer_list, _lin, _Tally
from kvlib.models.readers.fields import Fields, describe

__all__ = ["count_lfm2", "lfm2_vl_tower", "lfm2_mlp_width"]


def lfm2_mlp_width(c: Fields) -> int:
    """The MLP width vLLM builds (lfm2.py:71-78), from Lfm2Config's keys and defaults."""
    w = c.int("intermediate_size", required=False) or 12288
    if c.flag("block_auto_adjust_ff_dim") is not False:
        w = int(2 * w / 3)
        mult = c.data.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            if isinstance(mult, bool) or not isinstance(mult, int | float) or mult <= 0:
                raise ValueError(f"{c.path('block_ffn_dim_multiplier')} must be a positive "
                                 f"number, got {describe(mult)}")
            w = int(mult * w)
        of = c.int("block_multiple_of", required=False) or 256
        w = of * ((w + of - 1) // of)
    return w


def _same_width(c: Fields, key: str, d: int) -> None:
    """vLLM builds the conv and MLP blocks of ``conv_dim`` / ``block_dim``, transformers of
    hidden_size: the published files give them equal; another value is refused."""
    v = c.int(key, required=False)
    if v is not None and v != d:
        raise ValueError(f"{c.path(key)}={v} differs from {c.path('hidden_size')}={d}: vLLM "
                         f"builds that block {v} wide (lfm2.py), transformers {d} wide; "
                         "kvlib refuses rather than pick one")


def count_lfm2(t: _Tally) -> None:
    """LFM2's text model into ``t`` (module docstring)."""
    c = t.c
    d, n = c.int("hidden_size"), c.int("num_hidden_layers")
    h = c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", required=False) or h
    if d % h:
        raise ValueError(f"{c.path('hidden_size')}={d} is not divisible by "
                         f"{c.path('num_attention_heads')}={h}: vLLM's LFM2 heads are "
                         "hidden_size / num_attention_heads (lfm2.py:135)")
    if h % kv:
        raise ValueError(f"{c.path('num_attention_heads')}={h} is not a multiple of "
                         f"{c.path('num_key_value_heads')}={kv}")
    for key in ("conv_dim", "conv_dim_out", "block_dim"):
        _same_width(c, key, d)
    hd, cache = d // h, c.int("conv_L_cache", required=False) or 3
    types = _layer_list(t, "layer_types", n, {"full_attention", "conv"})
    if types is None:  # Lfm2Config.__post_init__: attention where full_attn_idxs says
        idx = c.data.get("full_attn_idxs")
        if idx is None:
            idx = list(range(n))
        if not isinstance(idx, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                            for x in idx):
            raise ValueError(f"{c.path('full_attn_idxs')} must list layer indices, got "
                             f"{describe(idx)[:80]}")
        types = ["full_attention" if i in idx else "conv" for i in range(n)]
        t.notes.append(f"no {c.path('layer_types')}: attention on the layers "
                       f"{c.path('full_attn_idxs')} lists (Lfm2Config)")
    tie = c.flag("tie_word_embeddings")
    if tie is False:
        t.notes.append(f"{c.path('tie_word_embeddings')}=False, but vLLM 0.34.0 always reads "
                       "the embedding as LFM2's head (lfm2.py:593-599): no lm_head counted")
    t.add(embedding=c.int("vocab_size") * d, norms=d)  # the head tied; embedding_norm
    bias, w = bool(c.flag("conv_bias")), lfm2_mlp_width(c)
    for i, kind in enumerate(types):
        p = f"model.layers.{i}"
        if kind == "full_attention":
            a = f"{p}.self_attn"
            t.lin("attention", f"{a}.q_proj", d, h * hd)
            t.lin("attention", f"{a}.k_proj", d, kv * hd)
            t.lin("attention", f"{a}.v_proj", d, kv * hd)
            t.lin("attention", f"{a}.out_proj", h * hd, d)
            t.add(norms=2 * hd)  # q_layernorm, k_layernorm: whole on every rank
        else:
            s = f"{p}.conv"
            t.add(mixers=d * cache + (d if bias else 0))  # conv1d: unquantized, split by TP
            t.lin("mixers", f"{s}.in_proj", d, 3 * d, bias)
            t.lin("mixers", f"{s}.out_proj", d, d, bias)
        for name, a, b in (("w1", d, w), ("w3", d, w), ("w2", w, d)):
            t.lin("mlp", f"{p}.feed_forward.{name}", a, b)
        t.add(norms=2 * d)


def lfm2_vl_tower(outer: Fields, d_text: int) -> tuple[int, int]:
    """LFM2-VL's SigLIP2 tower and projector (module docstring) as (held whole on every TP
    rank, split by TP). Whole: patch embedding (ReplicatedLinear), positions, the norms, the
    projector (ReplicatedLinear) and the row-parallel out_proj's and fc2's biases. Split:
    qkv_proj, out_proj, fc1, fc2 (vLLM's parallel layers) but for those biases. vLLM builds
    only a ``siglip2_vision_model`` tower (lfm2_vl.py:696-705); absent keys take
    Siglip2VisionConfig's and Lfm2VlConfig's defaults."""
    v = Fields(outer.data.get("vision_config") or {}, "vision_config.", outer)
    kind = v.data.get("model_type", "siglip2_vision_model")
    if kind != "siglip2_vision_model":
        raise ValueError(f"{v.path('model_type')}={kind!r}: vLLM 0.34.0 builds LFM2-VL's "
                         "tower only as siglip2_vision_model (lfm2_vl.py:696-705)")
    d = v.int("hidden_size", required=False) or 768
    i = v.int("intermediate_size", required=False) or 3072
    p = v.int("patch_size", required=False) or 16
    n = v.int("num_hidden_layers", required=False) or 12
    f = outer.int("downsample_factor", required=False) or 2
    hidden = outer.int("projector_hidden_size", required=False) or 2560
    bias = outer.flag("projector_bias") is not False
    norm = outer.flag("projector_use_layernorm") is not False
    w = d * f * f
    whole = ((v.int("num_channels", required=False) or 3) * p * p * d + d
             + (v.int("num_patches", required=False) or 256) * d
             + n * (4 * d + 2 * d) + 2 * d
             + (2 * w if norm else 0) + _lin(w, hidden, bias) + _lin(hidden, d_text, bias))
    split = n * (_lin(d, 3 * d, True) + d * d + _lin(d, i, True) + i * d)
    return whole, split
