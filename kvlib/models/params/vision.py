"""Vision towers counted as vLLM loads them (:mod:`kvlib.models.params`), by the wrapper's
``model_type``: each takes the ``vision_config`` fields and the text width, returns elements."""

from __future__ import annotations

from kvlib.models.params.tally import _lin
from kvlib.models.readers.fields import Fields, describe


def _siglip(v: Fields, d_text: int) -> int:
    """Gemma 3's SigLIP tower (modeling_siglip.py: conv patch embedding with bias, learned
    positions, LayerNorm/attention/MLP with biases, post_layernorm, optional pooling head)
    plus Gemma3MultiModalProjector (mm_input_projection (d_v, d_text), mm_soft_emb_norm)."""
    d, i, p = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size")
    layer = 4 * _lin(d, d, True) + _lin(d, i, True) + _lin(i, d, True) + 4 * d
    head = d + 4 * _lin(d, d, True) + 2 * d + _lin(d, i, True) + _lin(i, d, True) \
        if v.flag("vision_use_head") is not False else 0
    return ((v.int("num_channels", required=False) or 3) * p * p * d + d
            + (v.int("image_size") // p) ** 2 * d + v.int("num_hidden_layers") * layer + 2 * d
            + head + d * d_text + d)


def _llama4_vision(v: Fields, d_text: int) -> int:
    """vLLM mllama4.py: unfold-conv patch linear, class embedding, positions ((s/p)^2 + 1),
    pre/post LayerNorms, layers (q/k/v/o and fc1/fc2 with biases, two LayerNorms), the
    pixel-shuffle adapter MLP, and the projector (vision_output_dim -> d_text)."""
    d, i, p = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size")
    pi, po = v.int("projector_input_dim"), v.int("projector_output_dim")
    bias = bool(v.flag("multi_modal_projector_bias"))
    layer = 4 * _lin(d, d, True) + _lin(d, i, True) + _lin(i, d, True) + 4 * d
    return ((v.int("num_channels", required=False) or 3) * p * p * d + d
            + ((v.int("image_size") // p) ** 2 + 1) * d + 4 * d
            + v.int("num_hidden_layers") * layer + _lin(i, pi, bias) + _lin(pi, po, bias)
            + v.int("vision_output_dim") * d_text)


def _gemma4_vision(v: Fields, d_text: int) -> int:
    """modeling_gemma4.py Gemma4VisionModel (patch input_proj, 2-axis position table, layers
    with q/k norms, four norms and a gated MLP, std_bias/std_scale) plus embed_vision."""
    d, i, p, h = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size"), \
        v.int("num_attention_heads")
    hd, kv = v.int("head_dim"), v.int("num_key_value_heads")
    clips = 7 * 4 if v.flag("use_clipped_linears") else 0  # four scalar buffers per linear
    layer = 2 * d * h * hd + 2 * d * kv * hd + 2 * hd + 4 * d + 3 * d * i + clips
    return (3 * p * p * d + 2 * v.int("position_embedding_size") * d
            + v.int("num_hidden_layers") * layer + (2 * d if v.flag("standardize") else 0)
            + d * d_text)


def _qwen3_vl_vision(v: Fields, d_text: int) -> int:
    """modeling_qwen3_vl.py Qwen3VLVisionModel / vLLM qwen3_vl.py: Conv3d patch embedding
    (in_channels x temporal_patch_size x p x p -> d, with bias), learned positions
    (num_position_embeddings x d; Qwen3VLVisionConfig's default 2304 when absent),
    ``depth`` blocks (two LayerNorms with biases, qkv d -> 3d and proj with biases, MLP
    linear_fc1/fc2 with biases), the merger (LayerNorm of d, fc1 over the m^2 merged
    patches, fc2 -> out_hidden_size) and one more merger per
    ``deepstack_visual_indexes`` entry (its LayerNorm over the merged m^2 d; the config
    class's [8, 16, 24] when absent: vLLM and transformers both read it through that class)."""
    d, i, p = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size")
    m = v.int("spatial_merge_size", required=False) or 2
    out, w = v.int("out_hidden_size", required=False) or d_text, d * m * m
    layer = 4 * d + _lin(d, 3 * d, True) + _lin(d, d, True) + _lin(d, i, True) + _lin(i, d, True)
    merger = _lin(w, w, True) + _lin(w, out, True)
    deep = v.data.get("deepstack_visual_indexes")
    deep = 3 if deep is None else len(deep)
    return ((v.int("in_channels", required=False) or 3)
            * (v.int("temporal_patch_size", required=False) or 2) * p * p * d + d
            + (v.int("num_position_embeddings", required=False) or 2304) * d
            + v.int("depth") * layer
            + 2 * d + merger + deep * (2 * w + merger))


def _qwen2_5_vl_vision(v: Fields, d_text: int) -> int:
    """modeling_qwen2_5_vl.py Qwen2_5_VisionTransformerPretrainedModel / vLLM qwen2_5_vl.py:
    Conv3d patch embedding without bias, ``depth`` blocks (two RMSNorms, qkv d -> 3d and proj
    with biases, a gated MLP of intermediate_size with biases), the merger (RMSNorm ln_q of d,
    two linears with biases over the m^2 merged patches, to out_hidden_size)."""
    d, i, p = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size")
    m = v.int("spatial_merge_size", required=False) or 2
    out, w = v.int("out_hidden_size", required=False) or d_text, d * m * m
    layer = 2 * d + _lin(d, 3 * d, True) + _lin(d, d, True) + 2 * _lin(d, i, True) \
        + _lin(i, d, True)
    return ((v.int("in_channels", required=False) or 3)
            * (v.int("temporal_patch_size", required=False) or 2) * p * p * d
            + v.int("depth") * layer + d + _lin(w, w, True) + _lin(w, out, True))


def _glm4v_vision(v: Fields, d_text: int) -> int:
    """modeling_glm4v_moe.py Glm4vMoeVisionModel / vLLM glm4_1v.py (GLM-4.5V): Conv3d patch
    embedding with bias, learned positions ((image_size / p)^2 x d), ``depth`` blocks (two
    RMSNorms, qkv d -> 3d with bias when ``attention_bias``, proj without, a gated MLP d ->
    out_hidden_size without biases), post-conv and post RMSNorms, the m x m Conv2d
    downsample (d -> out_hidden_size, with bias), the merger (proj out -> out, LayerNorm,
    a gated MLP of intermediate_size, no biases)."""
    d, i, p = v.int("hidden_size"), v.int("intermediate_size"), v.int("patch_size")
    m = v.int("spatial_merge_size", required=False) or 2
    out = v.int("out_hidden_size", required=False) or d_text
    layer = 2 * d + _lin(d, 3 * d, bool(v.flag("attention_bias"))) + d * d + 3 * d * out
    return ((v.int("in_channels", required=False) or 3)
            * (v.int("temporal_patch_size", required=False) or 2) * p * p * d + d
            + (v.int("image_size") // p) ** 2 * d + v.int("depth") * layer + 2 * d
            + d * out * m * m + out + out * out + 2 * out + 3 * out * i)


def _kimi_k3_vision(v: Fields, d_text: int) -> int:
    """Kimi K3's tower as vLLM 0.34.0 loads it (models/kimi_k3/nvidia/model.py:1731-1783),
    read through vLLM's KimiK3VisionConfig, whose defaults stand for absent keys
    (transformers_utils/configs/kimi_k3.py:16-83): MoonViT3dPretrainedModel
    (model_executor/models/kimi_k25_vit.py:689-735) with the patch Conv2d (3 x p x p -> d,
    a bias when ``patch_embed_proj_bias``; kimi_k25_vit.py:193-199), the learned positions
    (``init_pos_emb_height`` x ``init_pos_emb_width`` x d; the temporal table is a
    non-persistent buffer, kimi_k25_vit.py:121-128), ``vt_num_hidden_layers`` blocks (two
    norms; wqkv d -> 3 ``qkv_hidden_size`` and wo back, biases when ``attn_bias``; fc0
    d -> ``vt_intermediate_size`` and fc1 back, biases when ``linear_bias``;
    kimi_k25_vit.py:381-410), a final norm (``norm_type`` rmsnorm: d; layernorm: 2 d), and
    KimiK25MultiModalProjector over the m_h m_w d merged patches (kimi_k25_vit.py:871-925):
    "patchmergerv2" linear_1 (square) and linear_2 (-> the text width) without biases and a
    post RMSNorm of the text width; otherwise a LayerNorm of d and both linears with biases."""
    d = v.int("vt_hidden_size", "hidden_size", required=False) or 1024
    i = v.int("vt_intermediate_size", "intermediate_size", required=False) or 4096
    p = v.int("patch_size", required=False) or 14
    qkv = v.int("qkv_hidden_size", required=False) or 1536
    merge = v.data.get("merge_kernel_size") or [2, 2]
    if not (isinstance(merge, list) and len(merge) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in merge)):
        raise ValueError(f"{v.path('merge_kernel_size')} must be two positive ints, got "
                         f"{describe(merge)}")
    norm = {"rmsnorm": d, "layernorm": 2 * d}.get(v.data.get("norm_type") or "rmsnorm")
    if norm is None:
        raise ValueError(f"{v.path('norm_type')} must be rmsnorm or layernorm, got "
                         f"{describe(v.data.get('norm_type'))}")
    ab, lb = bool(v.flag("attn_bias")), bool(v.flag("linear_bias"))
    layer = 2 * norm + _lin(d, 3 * qkv, ab) + _lin(qkv, d, ab) + _lin(d, i, lb) + _lin(i, d, lb)
    w = d * merge[0] * merge[1]
    if (v.data.get("mm_projector_type") or "patchmergerv2") == "patchmergerv2":
        projector = w * w + w * d_text + d_text
    else:
        projector = 2 * d + _lin(w, w, True) + _lin(w, d_text, True)
    return (3 * p * p * d + (d if v.flag("patch_embed_proj_bias") else 0)
            + (v.int("init_pos_emb_height", required=False) or 64)
            * (v.int("init_pos_emb_width", required=False) or 64) * d
            + (v.int("vt_num_hidden_layers", "num_hidden_layers", required=False) or 27) * layer
            + norm + projector)


def _muse_glimmer_vision(v: Fields, d_text: int) -> int:
    """Muse Glimmer's tower as vLLM 0.34.0 loads it (model_executor/models/muse_glimmer.py),
    absent keys read as MuseGlimmerVisionConfig's / MuseGlimmerConfig's defaults (vLLM reads
    the config through transformers' class): MuseGlimmerVisionEncoder (:484-535) with the
    patch linear (``patch_temporal`` x 3 x p x p -> d, no bias), the learned positions
    (``pos_emb_height`` x ``pos_emb_width`` x d), ln_pre and ln_post (LayerNorms), and
    ``num_hidden_layers`` blocks (:443-459: two LayerNorms, qkv d -> 3d and o_proj with
    biases :366-381, c_fc / c_proj of ``intermediate_size`` with biases :433-437); the adapter
    (``out_hidden_size`` -> ``projector_hidden_size`` -> itself, no biases, :801-809), the
    projection to the text width (no bias, :1229-1233) and a weightless norm (:1234-1238).
    vLLM refuses a tower whose ``out_hidden_size`` is not d ``merge_size``^2 (:530-535) or
    whose ``layer_types`` do not list its layers (:498-502)."""
    w = v.outer
    d = v.int("hidden_size", required=False) or 1536
    i = v.int("intermediate_size", required=False) or 8960
    p = v.int("patch_size", required=False) or 14
    n = v.int("num_hidden_layers", required=False) or 50
    m = v.int("merge_size", required=False) or 2
    out = w.int("out_hidden_size", required=False) or 6144
    proj = w.int("projector_hidden_size", required=False) or 4096
    if out != d * m * m:
        raise ValueError(f"{w.path('out_hidden_size')}={out} is not {v.path('hidden_size')} "
                         f"x {v.path('merge_size')}^2 = {d * m * m}: vLLM refuses it "
                         "(muse_glimmer.py:530-535)")
    types = v.data.get("layer_types")
    if types is not None and (not isinstance(types, list) or len(types) != n):
        raise ValueError(f"{v.path('layer_types')} must list the {n} layers "
                         f"(muse_glimmer.py:498-502), got {describe(types)[:80]}")
    layer = 4 * d + _lin(d, 3 * d, True) + _lin(d, d, True) + _lin(d, i, True) \
        + _lin(i, d, True)
    return ((v.int("patch_temporal", required=False) or 2) * 3 * p * p * d
            + (v.int("pos_emb_height", required=False) or 32)
            * (v.int("pos_emb_width", required=False) or 32) * d
            + 4 * d + n * layer + out * proj + proj * proj + proj * d_text)


_TOWERS = {"gemma3": _siglip, "llama4": _llama4_vision, "gemma4": _gemma4_vision,
           "qwen3_vl": _qwen3_vl_vision, "qwen3_vl_moe": _qwen3_vl_vision,
           "qwen2_5_vl": _qwen2_5_vl_vision, "glm4v_moe": _glm4v_vision,
           "kimi_k3": _kimi_k3_vision, "muse_glimmer": _muse_glimmer_vision}
