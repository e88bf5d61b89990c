"""Vision towers counted as vLLM loads them (:mod:`kvlib.models.params`), by the wrapper's
``model_type``: each takes the ``vision_config`` fields and the text width, returns elements
(:data:`_TOWERS`); Gemma 3n's vision and audio towers, held whole on every rank, are added to
the tally itself (:data:`_TALLY_TOWERS`)."""

from __future__ import annotations

from collections.abc import Mapping

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


def _moonvit(v: Fields, d_text: int, *, d: int, i: int, p: int, layers: int, qkv: int,
             norm: str, attn_bias: bool, linear_bias: bool, patch_bias: bool, pos: int,
             projector: str) -> tuple[int, int]:
    """MoonViT3dPretrainedModel and KimiK25MultiModalProjector as vLLM 0.34.0 builds them
    (model_executor/models/kimi_k25_vit.py:689-735, :871-925), from the values the caller
    read with its config class's defaults: the patch Conv2d (3 x p x p -> d, a bias when
    ``patch_bias``; :193-199), the learned positions (``pos`` = height x width of them, x d;
    the temporal table is a non-persistent buffer, :121-128), ``layers`` blocks (two norms;
    wqkv d -> 3 qkv and wo back, biases when ``attn_bias``; fc0 d -> i and fc1 back, biases
    when ``linear_bias``; :381-410), a final norm (rmsnorm: d; layernorm: 2 d, :341-346), the
    projector over the m_h m_w d merged patches: "patchmergerv2" linear_1 (square) and
    linear_2 (-> the text width) without biases and a post RMSNorm of the text width;
    otherwise a LayerNorm of d and both linears with biases. Returns (elements held whole on
    every rank: the patch conv, positions, norms and the ReplicatedLinear projector; elements
    split by TP: wqkv, wo, fc0 and fc1, vLLM's parallel layers, :316-330, :386-410, but for
    the row-parallel wo's and fc1's biases, whole on every rank)."""
    merge = v.data.get("merge_kernel_size") or [2, 2]
    if not (isinstance(merge, list | tuple) and len(merge) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in merge)):
        raise ValueError(f"{v.path('merge_kernel_size')} must be two positive ints, got "
                         f"{describe(merge)}")
    norm_size = {"rmsnorm": d, "layernorm": 2 * d}.get(norm)
    if norm_size is None:
        raise ValueError(f"{v.path('norm_type')} must be rmsnorm or layernorm, got "
                         f"{describe(norm)}")
    # the row-parallel wo and fc1 keep their biases whole on every rank (RowParallelLinear
    # adds the bias after the reduction): only their weights are split
    parallel = (_lin(d, 3 * qkv, attn_bias) + qkv * d + _lin(d, i, linear_bias) + i * d)
    row_bias = (d if attn_bias else 0) + (d if linear_bias else 0)
    w = d * merge[0] * merge[1]
    if projector == "patchmergerv2":
        proj = w * w + w * d_text + d_text
    else:
        proj = 2 * d + _lin(w, w, True) + _lin(w, d_text, True)
    whole = (3 * p * p * d + (d if patch_bias else 0) + pos * d + layers * 2 * norm_size
             + norm_size + proj + layers * row_bias)
    return whole, layers * parallel


def _kimi_k3_vision(v: Fields, d_text: int) -> tuple[int, int]:
    """Kimi K3's tower as vLLM 0.34.0 loads it (models/kimi_k3/nvidia/model.py:1731-1783):
    :func:`_moonvit`, read through vLLM's KimiK3VisionConfig, whose defaults stand for
    absent keys (transformers_utils/configs/kimi_k3.py:16-83): width 1024, MLP 4096, patch
    14, 27 layers, qkv 1536, rmsnorm, no biases, 64 x 64 positions, "patchmergerv2"."""
    d = v.int("vt_hidden_size", "hidden_size", required=False) or 1024
    return _moonvit(
        v, d_text, d=d,
        i=v.int("vt_intermediate_size", "intermediate_size", required=False) or 4096,
        p=v.int("patch_size", required=False) or 14,
        layers=v.int("vt_num_hidden_layers", "num_hidden_layers", required=False) or 27,
        qkv=v.int("qkv_hidden_size", required=False) or 1536,
        norm=v.data.get("norm_type") or "rmsnorm", attn_bias=bool(v.flag("attn_bias")),
        linear_bias=bool(v.flag("linear_bias")),
        patch_bias=bool(v.flag("patch_embed_proj_bias")),
        pos=(v.int("init_pos_emb_height", required=False) or 64)
        * (v.int("init_pos_emb_width", required=False) or 64),
        projector=v.data.get("mm_projector_type") or "patchmergerv2")


def _kimi_k25_vision(v: Fields, d_text: int) -> tuple[int, int]:
    """Kimi K2.5's tower as vLLM 0.34.0 loads it (kimi_k25.py:349-371, vision_tower and
    mm_projector, not left out by default): :func:`_moonvit`, read through transformers'
    Kimi_K25VisionConfig (vLLM's config class for kimi_k25, transformers_utils/config.py:145),
    so by its new-schema keys, absent ones at the class's defaults (configuration_kimi_k25.py:
    width 1152, MLP 4304, patch 14, 27 layers) and vLLM's getattr defaults (kimi_k25_vit.py:
    706-735, 884: qkv the width, layernorm, biases, "patchmerger"); the positions
    ``init_pos_emb_*`` (the published files' legacy keys) else ``pos_emb_*`` (:50-55).
    The published files' ``vt_*`` keys are not read by vLLM: where one disagrees with what
    vLLM builds, the count refuses the file rather than pick."""
    d = v.int("hidden_size", required=False) or 1152
    i = v.int("intermediate_size", required=False) or 4304
    layers = v.int("num_hidden_layers", required=False) or 27
    for old, value in (("vt_hidden_size", d), ("vt_intermediate_size", i),
                       ("vt_num_hidden_layers", layers)):
        legacy = v.int(old, required=False)
        if legacy is not None and legacy != value:
            raise ValueError(f"{v.path(old)}={legacy}, but vLLM builds the tower from "
                             f"{v.path(old[3:])}={value} (Kimi_K25VisionConfig)")
    pos = 1
    for dim in ("height", "width"):
        pos *= (v.int(f"init_pos_emb_{dim}", required=False)
                or v.int(f"pos_emb_{dim}", required=False) or 64)
    flags = {k: v.flag(k) is not False for k in ("attn_bias", "linear_bias",
                                                   "patch_embed_proj_bias")}
    return _moonvit(v, d_text, d=d, i=i, p=v.int("patch_size", required=False) or 14,
                    layers=layers, qkv=v.int("qkv_hidden_size", required=False) or d,
                    norm=v.data.get("norm_type") or "layernorm",
                    attn_bias=flags["attn_bias"], linear_bias=flags["linear_bias"],
                    patch_bias=flags["patch_embed_proj_bias"], pos=pos,
                    projector=v.data.get("mm_projector_type") or "patchmerger")


def _muse_glimmer_vision(v: Fields, d_text: int) -> tuple[int, int]:
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
    whose ``layer_types`` do not list its layers (:498-502). Returns (elements held whole on
    every rank, elements split by TP: the attention projections but for o_proj's bias, which
    a RowParallelLinear holds whole)."""
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
    attention = _lin(d, 3 * d, True) + d * d  # o_proj's bias is whole (RowParallelLinear)
    whole = ((v.int("patch_temporal", required=False) or 2) * 3 * p * p * d
             + (v.int("pos_emb_height", required=False) or 32)
             * (v.int("pos_emb_width", required=False) or 32) * d
             + 4 * d + n * (5 * d + _lin(d, i, True) + _lin(i, d, True))
             + out * proj + proj * proj + proj * d_text)
    return whole, n * attention



# timm encoders by the ``architecture`` a vision_config names, as timm 1.0.31 builds them
# (vLLM builds Gemma 3n's tower with AutoModel -> transformers' TimmWrapperModel ->
# timm.create_model; the architecture, not the config's numbers, sets its shapes): parameters
# of ``timm.create_model(name)`` on the meta device, no buffers; make crosscheck compares
# them with transformers' model where timm is installed (tests/crosscheck/test_params_meta.py)
TIMM_PARAMS = {"mobilenetv5_300m_enc": 294_126_912}


def _gemma3n_audio(a: Fields) -> int:
    """Gemma 3n's audio tower as vLLM 0.34.0 loads it: transformers' Gemma3nAudioEncoder
    (gemma3n_mm.py:622-627 builds it with AutoModel; absent keys are Gemma3nAudioConfig's
    defaults), modeling_gemma3n.py: two SSCP convolutions (no bias, kernels and channels
    from ``sscp_conv_*``, each with a per-channel group-norm weight) over the
    ``input_feat_size`` mel bins padded by 1 each side, the projection of c x f -> d
    (:641-781); ``conf_num_hidden_layers`` conformer blocks (:783-905): two feed-forwards
    (d -> 4d -> d and two norms each), attention (pre-norm, q/k/v, the relative-position
    projection, a per-dim scale of d / heads, post d -> d and its norm), the light conv
    (norm, d -> 2d, the depthwise kernel of ``conf_conv_kernel_size``, norm, d -> d) and a
    block norm."""
    d = a.int("hidden_size", required=False) or 1536
    heads = a.int("conf_num_attention_heads", required=False) or 8
    kernel = a.int("conf_conv_kernel_size", required=False) or 5
    chans = a.data.get("sscp_conv_channel_size") or [128, 32]
    kernels = a.data.get("sscp_conv_kernel_size") or [[3, 3], [3, 3]]
    strides = a.data.get("sscp_conv_stride_size") or [[2, 2], [2, 2]]

    def pos(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x > 0

    for key, v, pair in (("sscp_conv_channel_size", chans, False),
                         ("sscp_conv_kernel_size", kernels, True),
                         ("sscp_conv_stride_size", strides, True)):
        if not (isinstance(v, list | tuple) and len(v) == 2 and all(
                (isinstance(x, list | tuple) and len(x) == 2 and all(map(pos, x))) if pair
                else pos(x) for x in v)):
            raise ValueError(f"{a.path(key)} must give the two SSCP convolutions' "
                             f"{'(height, width) pairs' if pair else 'channels'}, got "
                             f"{describe(v)}")
    f, c_in, convs = a.int("input_feat_size", required=False) or 128, 1, 0
    for c, (kh, kw), (_, sw) in zip(chans, kernels, strides, strict=True):
        convs += c_in * c * kh * kw + c
        f, c_in = (f + 2 - kw) // sw + 1, c
    block = (2 * (8 * d * d + 2 * d)                   # feed-forwards
             + 5 * d * d + d // heads + 2 * d           # attention
             + 3 * d * d + d * kernel + 2 * d + d)      # light conv, block norm
    return convs + c_in * f * d + (a.int("conf_num_hidden_layers", required=False) or 12) * block


def _gemma3n_towers(t, outer: Fields, d_text: int) -> None:
    """Gemma 3n's towers as vLLM 0.34.0 loads them (gemma3n_mm.py:616-627): the timm vision
    encoder its ``vision_config.architecture`` names (:data:`TIMM_PARAMS`) and the audio
    tower (:func:`_gemma3n_audio`), both plain torch modules held whole on every TP rank (a
    :class:`~kvlib.models.params.tally.Fixed` of 2 bytes: the model's dtype, bf16 under
    ``auto``), and the two Gemma3nMultimodalEmbedder (:494-538: an embedding of the tower's
    ``vocab_size`` x its width, two norms, a projection to the text width; split as
    vLLM's parallel layers are)."""
    v = Fields(outer.data.get("vision_config") or {}, "vision_config.", outer)
    a = Fields(outer.data.get("audio_config") or {}, "audio_config.", outer)
    arch = v.data.get("architecture") or "mobilenetv5_300m_enc"
    if arch not in TIMM_PARAMS:
        raise ValueError(f"{v.path('architecture')}={arch!r}: kvlib counts the timm encoders "
                         f"{', '.join(sorted(TIMM_PARAMS))} only")
    if v.data.get("model_args"):
        raise ValueError(f"{v.path('model_args')}={describe(v.data.get('model_args'))[:60]}: "
                         "timm arguments that reshape the encoder are not counted")
    t.keep("vision", "model.vision_tower", TIMM_PARAMS[arch], 2)
    t.keep("vision", "model.audio_tower", _gemma3n_audio(a), 2)
    for tower, default in ((v, 2048), (a, 1536)):
        w = tower.int("hidden_size", required=False) or default
        t.add(vision=(tower.int("vocab_size", required=False) or 128) * w + 2 * w + w * d_text)


_TOWERS = {"gemma3": _siglip, "llama4": _llama4_vision,
           "qwen3_vl": _qwen3_vl_vision, "qwen3_vl_moe": _qwen3_vl_vision,
           "qwen2_5_vl": _qwen2_5_vl_vision, "glm4v_moe": _glm4v_vision}


def _split_tower(count, heads):
    """A tally tower of a ``count(v, d_text) -> (whole, split)``: the part held whole on
    every rank as one 2-byte :class:`~kvlib.models.params.tally.Fixed` (the model's dtype;
    vLLM quantizes no tower here), the rest as another, split by TP where TP divides the
    tower's ``heads(v)`` attention heads and whole on every rank where it does not (vLLM
    falls back to data parallelism for the encoder: ``is_vit_use_data_parallel(num_heads)``,
    model_executor/models/vision.py:141-156, called by kimi_k25_vit.py:368 for its attention
    and MLP, muse_glimmer.py:360 for its attention)."""
    def add(t, outer: Fields, d_text: int) -> None:
        v = Fields(outer.data.get("vision_config") or {}, "vision_config.", outer)
        whole, split = count(v, d_text)
        t.keep("vision", "vision tower (whole on every rank)", whole, 2)
        t.keep("vision", "vision tower (split by TP where it divides the heads)", split, 2,
               whole=False, heads=heads(v))
    return add


def _whole_tower(count):
    """A tally tower of a ``count(v, d_text) -> elements`` that vLLM builds with transformers'
    own classes (``AutoModel.from_config``: plain torch modules, no TP) and a projection it
    does not split: all of it one 2-byte Fixed held whole on every rank."""
    def add(t, outer: Fields, d_text: int) -> None:
        v = Fields(outer.data.get("vision_config") or {}, "vision_config.", outer)
        t.keep("vision", "vision tower (whole on every rank)", count(v, d_text), 2)
        if isinstance(outer.data.get("audio_config"), Mapping):
            t.notes.append("audio_config not counted: the vision tower only")
    return add


def _heads(key: str, default: int):
    """The tower's attention heads as vLLM's config class reads them: ``key``, else
    ``default``."""
    return lambda v: v.int(key, required=False) or default


# wrappers whose towers (vision and audio) are added to the tally itself, with what vLLM
# holds whole on every rank as Fixed tensors. The heads: Kimi K3's vt_num_attention_heads
# (KimiK3VisionConfig: 12 by default, transformers_utils/configs/kimi_k3.py:23, 80), Kimi
# K2.5's num_attention_heads (Kimi_K25VisionConfig: 16), Muse Glimmer's num_attention_heads
# (MuseGlimmerVisionConfig: 16)
_TALLY_TOWERS = {"gemma3n": _gemma3n_towers,
                 # Gemma 4: AutoModel.from_config (gemma4_mm.py:1120) and the embedder's
                 # projection, whole on every rank (measured on vLLM 0.34.0's rank 0 at TP 8)
                 "gemma4": _whole_tower(_gemma4_vision),
                 "muse_glimmer": _split_tower(_muse_glimmer_vision,
                                              _heads("num_attention_heads", 16)),
                 "kimi_k3": _split_tower(_kimi_k3_vision, _heads("vt_num_attention_heads", 12)),
                 "kimi_k25": _split_tower(_kimi_k25_vision,
                                          _heads("num_attention_heads", 16))}
