"""Counters for decoders of attention and a dense MLP in every layer (:mod:`kvlib.models.params`):
the standard Llama-shaped families by their table, GPT-2, Falcon, DeciLM (nemotron-nas), Gemma 4."""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.models.params.tally import _embed, _gqa, _head_dim, _sizes, _Tally
from kvlib.models.readers.class_defaults import take
from kvlib.models.readers.fields import Fields, describe

# Standard decoders: (q/k/v bias, o bias, q/k norm, norms per layer, tied head, default
# head_dim, default vocab). None for a bias: the config's attention_bias decides.
_STANDARD = {
    "llama": (None, None, False, 2, False, None, None),      # modeling_llama.py
    "mistral": (None, None, False, 2, False, None, None),    # modeling_mistral.py
    "qwen2": (True, False, False, 2, False, None, None),     # modeling_qwen2.py (qkv bias)
    "qwen3": (None, None, True, 2, False, 128, None),        # modeling_qwen3.py
    "gemma": (None, None, False, 2, True, 256, None),        # modeling_gemma.py
    "gemma2": (None, None, False, 4, True, 256, None),       # modeling_gemma2.py
    "gemma3": (None, None, True, 4, True, 256, 262208),      # modeling_gemma3.py
    # issue 42: dense families of the same shapes
    "phi3": (False, False, False, 2, False, None, None),     # modeling_phi3.py (qkv fused)
    "smollm3": (None, None, False, 2, True, None, None),     # modeling_smollm3.py
    # MiMo-7B: Qwen2's decoder; vLLM 0.34.0 mimo.py skips the checkpoint's mtp_layers
    "mimo": (True, False, False, 2, False, None, None),
    "qwen3_vl": (None, None, True, 2, False, 128, None),     # modeling_qwen3_vl.py: Qwen3
    "qwen2_5_vl": (True, False, False, 2, False, None, None),  # modeling_qwen2_5_vl.py: Qwen2
}


def _standard(t: _Tally) -> None:
    qkv_b, o_b, qk_norm, norms, tied, hd_default, vocab = _STANDARD[t.family]
    d, n, h, kv = _sizes(t.c)
    if kv is None:  # the config class's default, as vLLM 0.34.0 reads it (class_defaults.py)
        kv = take("num_key_value_heads", t.c, t.notes) or h
    hd, bias = _head_dim(t, d, h, hd_default), bool(t.c.flag("attention_bias"))
    _embed(t, d, tied, vocab)
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv, hd, bias if qkv_b is None else qkv_b,
             bias if o_b is None else o_b, qk_norm)
        t.glu("mlp", f"{p}.mlp", d, t.c.int("intermediate_size"), bool(t.c.flag("mlp_bias")))
    t.add(norms=n * norms * d + d)


def _gpt2(t: _Tally) -> None:
    """modeling_gpt2.py: token and position embeddings, tied head; per layer two LayerNorms,
    c_attn (d -> 3d) and c_proj with biases, an MLP of n_inner (default 4d) with biases."""
    c = t.c
    d, n, _, _ = _sizes(c)
    inner = c.int("n_inner", required=False) or 4 * d
    _embed(t, d, True)
    for i in range(n):
        p = f"h.{i}"
        t.lin("attention", f"{p}.attn.c_attn", d, 3 * d, True)
        t.lin("attention", f"{p}.attn.c_proj", d, d, True)
        t.lin("mlp", f"{p}.mlp.c_fc", d, inner, True)
        t.lin("mlp", f"{p}.mlp.c_proj", inner, d, True)
    t.add(embedding=c.int("n_positions") * d, norms=4 * n * d + 2 * d)


def _falcon(t: _Tally) -> None:
    """modeling_falcon.py: fused query_key_value (MQA: d + 2 hd; new architecture:
    (h + 2 kv) hd), dense, a 2-matrix MLP of ffn_hidden_size (4d), biases if ``bias``;
    LayerNorms: ln_attn and ln_mlp (new architecture), else input (+ post if not parallel)."""
    c = t.c
    d, n, h, _ = _sizes(c)
    hd, bias, new = d // h, bool(c.flag("bias")), bool(c.flag("new_decoder_architecture"))
    if new:
        qkv = (h + 2 * c.int("num_kv_heads")) * hd
    else:
        qkv = d + 2 * hd if c.flag("multi_query") is not False else 3 * d
    ffn = c.int("ffn_hidden_size", required=False) or 4 * d
    lns = 2 if (new and (c.int("num_ln_in_parallel_attn", required=False) or 2) == 2) \
        or c.flag("parallel_attn") is False else 1
    _embed(t, d, True)
    for i in range(n):
        p = f"transformer.h.{i}"
        t.lin("attention", f"{p}.self_attention.query_key_value", d, qkv, bias)
        t.lin("attention", f"{p}.self_attention.dense", d, d, bias)
        t.lin("mlp", f"{p}.mlp.dense_h_to_4h", d, ffn, bias)
        t.lin("mlp", f"{p}.mlp.dense_4h_to_h", ffn, d, bias)
    t.add(norms=n * lns * 2 * d + 2 * d)


def _nemotron_nas(t: _Tally) -> None:
    """vLLM nemotron_nas.py (DeciLM): per block, attention with h / n_heads_in_group KV heads
    and input_layernorm unless ``no_op``; a gated MLP of int(2 ffn_mult d / 3) rounded up to
    a multiple of 256, and post_attention_layernorm, unless ``no_op``."""
    c = t.c
    d, n, h, _ = _sizes(c)
    hd, bias = _head_dim(t, d, h), bool(c.flag("attention_bias"))
    blocks = c.data.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise ValueError(f"{c.path('block_configs')} must list {n} blocks, got {describe(blocks)}")
    _embed(t, d, False)
    for i, b in enumerate(blocks):
        where = c.path(f"block_configs[{i}]")
        if not (isinstance(b, Mapping) and isinstance(b.get("attention"), Mapping)
                and isinstance(b.get("ffn"), Mapping)):
            raise ValueError(f"{where} must hold attention and ffn objects, got {describe(b)}")
        a, f = Fields(b["attention"], f"{where}.attention."), Fields(b["ffn"], f"{where}.ffn.")
        for part in (a, f):
            if part.flag("replace_with_linear"):
                raise ValueError(f"{part.path('replace_with_linear')}=True: not counted")
        p = f"model.layers.{i}"
        if not a.flag("no_op"):
            _gqa(t, f"{p}.self_attn", d, h, h // a.int("n_heads_in_group"), hd, bias, bias)
            t.add(norms=d)
        if not f.flag("no_op"):
            mult = f.data.get("ffn_mult")
            if not isinstance(mult, int | float) or isinstance(mult, bool) or mult <= 0:
                raise ValueError(f"{f.path('ffn_mult')} must be a positive number, got "
                                 f"{describe(mult)}")
            inter = int(2 * mult * d / 3)
            t.glu("mlp", f"{p}.mlp", d, -(-inter // 256) * 256, bool(c.flag("mlp_bias")))
            t.add(norms=d)
    t.add(norms=d)


def _gemma4(t: _Tally) -> None:
    """modeling_gemma4.py Gemma4TextModel: per layer, attention (full layers: global_head_dim,
    and with attention_k_eq_v num_global_key_value_heads and no v_proj in the checkpoint; vLLM
    0.34.0 still builds the v shard of their qkv_proj and loads k into it, gemma4.py:89-121,
    440-454: counted, as the GPU holds it, ``v_proj`` of d -> kv hd), q/k norms, a dense
    gated MLP beside the MoE (router: proj d -> E, scale d, per_expert_scale E; experts;
    three more norms), four norms and the stored ``layer_scalar``; per-layer inputs (PLE)."""
    c = t.c
    d, n, h, kv = _sizes(c)
    types, bias = c.data.get("layer_types"), bool(c.flag("attention_bias"))
    if not isinstance(types, list) or len(types) != n:
        raise ValueError(f"{c.path('layer_types')} must list {n} layer types, got "
                         f"{describe(types)}")
    _embed(t, d, True)
    shared_from = n - (c.int("num_kv_shared_layers", required=False, allow_zero=True) or 0)
    k_eq_v = c.flag("attention_k_eq_v") is not False
    if k_eq_v and "full_attention" in types[:shared_from]:
        t.notes.append("attention_k_eq_v: the checkpoint stores no v_proj for the full-attention "
                       "layers; vLLM 0.34.0 builds their qkv_proj's v shard and copies k into it "
                       "(gemma4.py:89-121), counted as the GPU holds it")
    ple = c.int("hidden_size_per_layer_input", required=False, allow_zero=True) or 0
    for i, kind in enumerate(types):
        p, full = f"model.language_model.layers.{i}", kind != "sliding_attention"
        hd = t.opt("global_head_dim", 512) if full else c.int("head_dim")
        alt = k_eq_v and full
        g = c.int("num_global_key_value_heads") if alt else kv
        if i < shared_from:
            _gqa(t, f"{p}.self_attn", d, h, g, hd, bias, bias, True)
        else:  # KV-shared layers: q_proj, q_norm and o_proj only
            t.lin("attention", f"{p}.self_attn.q_proj", d, h * hd, bias)
            t.lin("attention", f"{p}.self_attn.o_proj", h * hd, d, bias)
            t.add(attention=hd)
        wide = 2 if c.flag("use_double_wide_mlp") and i >= shared_from > 0 else 1
        t.glu("mlp", f"{p}.mlp", d, wide * c.int("intermediate_size"))
        t.add(norms=4 * d + 1)
        if ple:
            t.lin("mlp", f"{p}.per_layer_input_gate", d, ple)
            t.lin("mlp", f"{p}.per_layer_projection", ple, d)
            t.add(norms=d)
        if c.flag("enable_moe_block"):
            e, im = c.int("num_experts"), c.int("moe_intermediate_size")
            t.experts(p, e, c.int("top_k_experts"), (("gate_up_proj", d, 2 * im),
                                                      ("down_proj", im, d)))
            t.lin("router", f"{p}.router.proj", d, e)
            # the router's scale and per_expert_scale, whole on every rank as its proj
            t.keep("router", f"{p}.router.scale", d + e, t.unquantized_bytes())
            t.add(norms=3 * d)
    if ple:
        t.add(embedding=c.int("vocab_size_per_layer_input") * n * ple, norms=ple)
        t.lin("mlp", "model.language_model.per_layer_model_projection", d, n * ple)
    t.add(norms=d)


def _muse_glimmer(t: _Tally) -> None:
    """Muse Glimmer's text model as vLLM 0.34.0 builds it (model_executor/models/
    muse_glimmer.py): an untied head (:1245-1250), the embedding and its weightless norm
    (:1038-1047), per layer q/k/v and o without biases whatever ``attention_bias`` says
    (:891-906), the sigmoid output gate d -> h hd (checkpoint ``self_attn.gate_proj``,
    :908-915), a weightless q/k norm (:888), a SiLU-gated MLP (:825-843) and four sandwich
    norms (:995-1006); the final norm (:1056-1058). Only ``silu`` is built (:839-843)."""
    c = t.c
    d, n, h, kv = _sizes(c)
    act = c.data.get("hidden_activation", "silu")
    if act != "silu":
        raise ValueError(f"{c.path('hidden_activation')}={act!r}: vLLM builds Muse Glimmer "
                         "with silu only (muse_glimmer.py:839-843)")
    hd, inter = _head_dim(t, d, h, 128), c.int("intermediate_size")
    _embed(t, d, False)
    for i in range(n):
        p = f"model.language_model.layers.{i}.self_attn"
        _gqa(t, p, d, h, kv or h, hd)
        t.lin("attention", f"{p}.gate_proj", d, h * hd)
        t.glu("mlp", f"model.language_model.layers.{i}.mlp", d, inter)
    t.add(norms=4 * n * d)
    # the final norm is fp32 in vLLM (:1056-1058), whole on every rank
    t.keep("norms", "model.language_model.norm", d)


def _gemma3n(t: _Tally) -> None:
    """Gemma 3n's text model as vLLM 0.34.0 builds it (model_executor/models/gemma3n.py),
    absent keys read as Gemma3nTextConfig's defaults (transformers' class, which vLLM reads):
    the embedding, its head tied (logits from embed_tokens, :1160-1163); the per-layer
    embeddings (``vocab_size_per_layer_input`` x n ``hidden_size_per_layer_input``), their
    projection d -> n ple and its norm, and AltUp's ``altup_num_inputs`` - 1 projections in and
    out (:604-673, :857-871); per layer AltUp (correction k -> k, prediction k -> k^2, the
    modality router d -> k and its norm, the fp32 ``correct_output_scale`` of d, :89-124),
    attention (q/k/v/o with ``attention_bias``, q and k norms; the last
    ``num_kv_shared_layers`` only q_proj, q_norm and o_proj, :316-347; vLLM drops the K/V
    the original checkpoints still ship for them, :803-823), a gated MLP of the layer's
    ``intermediate_size`` (:240-252), LAuReL (d -> ``laurel_rank`` -> d and a norm,
    :201-220), the per-layer input gate d -> ple and projection back, five norms
    (:493-530); the final norm (:907-910). ``active`` leaves out the per-layer embeddings: a
    token gathers its own rows of them, as of the input embedding (the head is tied to
    embed_tokens, so that one is read whole)."""
    c = t.c
    d, n, h, kv = _sizes(c)
    kv = kv or h
    hd = _head_dim(t, d, h, 256)
    act = c.data.get("hidden_activation", "gelu_pytorch_tanh")
    if act != "gelu_pytorch_tanh":
        raise ValueError(f"{c.path('hidden_activation')}={act!r}: vLLM builds Gemma 3n with "
                         "gelu_pytorch_tanh only (gemma3n.py:254-259)")
    inter = c.data.get("intermediate_size")
    if not isinstance(inter, list):
        inter = [c.int("intermediate_size", required=False) or 16384] * n
    if len(inter) != n or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0
                                  for x in inter):
        raise ValueError(f"{c.path('intermediate_size')} must be a positive int or one for "
                         f"each of the {n} layers, got {describe(inter)[:80]}")
    ple, k = t.opt("hidden_size_per_layer_input", 256), t.opt("altup_num_inputs", 4)
    rank, shared = t.opt("laurel_rank", 64), t.opt("num_kv_shared_layers", 15)
    if shared > n:
        raise ValueError(f"{c.path('num_kv_shared_layers')}={shared} exceeds the {n} layers")
    bias = bool(c.flag("attention_bias"))
    per_layer = t.opt("vocab_size_per_layer_input", 262144) * n * ple
    t.add(embedding=c.int("vocab_size") * d + per_layer)
    t.idle += per_layer  # a token gathers one row of it: not read whole per token (active)
    m = "model.language_model"
    t.lin("mlp", f"{m}.per_layer_model_projection", d, n * ple)
    for j in range(k - 1):
        t.lin("mlp", f"{m}.altup_projections.{j}", d, d)
        t.lin("mlp", f"{m}.altup_unembed_projections.{j}", d, d)
    for i in range(n):
        p = f"{m}.layers.{i}"
        t.lin("router", f"{p}.altup.correction_coefs", k, k)
        t.lin("router", f"{p}.altup.prediction_coefs", k, k * k)
        t.lin("router", f"{p}.altup.modality_router", d, k)
        t.keep("router", f"{p}.altup.correct_output_scale", d)  # fp32 (:122-124)
        if i < n - shared:
            _gqa(t, f"{p}.self_attn", d, h, kv, hd, bias, bias, True)
        else:  # KV-shared: q_proj, q_norm and o_proj only
            t.lin("attention", f"{p}.self_attn.q_proj", d, h * hd, bias)
            t.lin("attention", f"{p}.self_attn.o_proj", h * hd, d, bias)
            t.add(attention=hd)
        t.glu("mlp", f"{p}.mlp", d, inter[i])
        t.lin("mlp", f"{p}.laurel.linear_left", d, rank)
        t.lin("mlp", f"{p}.laurel.linear_right", rank, d)
        t.lin("mlp", f"{p}.per_layer_input_gate", d, ple)
        t.lin("mlp", f"{p}.per_layer_projection", ple, d)
        t.add(norms=7 * d)  # five layer norms, AltUp's router norm, LAuReL's norm
    t.add(norms=ple + d)
