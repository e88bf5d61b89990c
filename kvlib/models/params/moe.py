"""Counters for attention decoders with routed experts (:mod:`kvlib.models.params`): Llama 4,
gpt-oss, MiniMax-M2 / M3, MiMo-V2-Flash, Qwen3-MoE, Mixtral, GLM-4.5, Laguna, Step 3.7."""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.models.params.tally import (
    _embed,
    _glu_experts,
    _gqa,
    _head_dim,
    _layer_list,
    _sizes,
    _Tally,
)
from kvlib.models.readers.fields import Fields, describe


def _llama4(t: _Tally) -> None:
    """modeling_llama4.py / vLLM llama4.py: MoE layers every ``interleave_moe_layer_step``
    (routed experts, one shared expert, router d -> E), dense layers of
    ``intermediate_size_mlp``; the q/k L2 norm has no weight."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd, bias = _head_dim(t, d, h), bool(c.flag("attention_bias"))
    _embed(t, d, False, p="language_model.model.")
    e, i_moe = c.int("num_local_experts"), c.int("intermediate_size")
    step = c.int("interleave_moe_layer_step", required=False) or 1
    moe = c.data.get("moe_layers") or list(range(step - 1, n, step))
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd, bias, bias)
        if i in moe:
            t.experts(f"{p}.feed_forward", e, c.int("num_experts_per_tok"),
                      (("gate_proj", d, i_moe), ("up_proj", d, i_moe), ("down_proj", i_moe, d)))
            t.glu("shared_experts", f"{p}.feed_forward.shared_expert", d, i_moe)
            t.lin("router", f"{p}.feed_forward.router", d, e)
        else:
            t.glu("mlp", f"{p}.feed_forward", d, c.int("intermediate_size_mlp"))
    t.add(norms=2 * n * d + d)


def _gpt_oss(t: _Tally) -> None:
    """modeling_gpt_oss.py: attention with biases and one sink per head; router d -> E with
    bias; experts gate_up (d -> 2I) and down (I -> d), both with biases."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd, bias, e, i = _head_dim(t, d, h), bool(c.flag("attention_bias")), \
        c.int("num_local_experts"), c.int("intermediate_size")
    _embed(t, d, False)
    for j in range(n):
        p = f"model.layers.{j}"
        _gqa(t, f"{p}.self_attn", d, h, kv, hd, bias, bias)
        t.experts(f"{p}.mlp", e, c.int("num_experts_per_tok", "experts_per_token"),
                  (("gate_up_proj", d, 2 * i), ("down_proj", i, d)), bias=True)
        t.lin("router", f"{p}.mlp.router", d, e, True)
    t.add(attention=n * h, norms=2 * n * d + d)


def _minimax_m2(t: _Tally) -> None:
    """vLLM minimax_m2.py: attention without biases, its q/k RMSNorm over all heads
    (``qk_norm_type`` "per_layer": h hd and kv hd weights); every layer a MoE block of
    ``num_local_experts`` experts (w1, w3: d -> i; w2: i -> d; i = ``intermediate_size``), a
    router d -> E and its score-correction bias (``use_routing_bias``), both built in fp32
    (GateLinear ``params_dtype=torch.float32``, minimax_m2.py:110-117; the bias :85-89); no
    shared expert (``shared_intermediate_size`` 0); two norms per layer. The MTP modules
    (``use_mtp``) load only for speculative decoding and are not counted."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = _head_dim(t, d, h)
    if c.int("shared_intermediate_size", required=False, allow_zero=True):
        raise ValueError(f"{c.path('shared_intermediate_size')}: a shared expert is not counted "
                         "for minimax_m2")
    _embed(t, d, bool(c.flag("tie_word_embeddings")))
    e, i = c.int("num_local_experts"), c.int("intermediate_size")
    for j in range(n):
        p = f"model.layers.{j}"
        _gqa(t, f"{p}.self_attn", d, h, kv, hd)
        if c.flag("use_qk_norm"):
            t.add(attention=h * hd + kv * hd)
        t.experts(f"{p}.block_sparse_moe", e, c.int("num_experts_per_tok"),
                  (("w1", d, i), ("w3", d, i), ("w2", i, d)))
        t.router(f"{p}.block_sparse_moe.gate", d, e, fp32=True)
        if c.flag("use_routing_bias"):
            t.keep("router", f"{p}.block_sparse_moe.e_score_correction_bias", e)
        t.add(norms=2 * d)
    t.add(norms=d)


def _mimo_v2_flash(t: _Tally) -> None:
    """vLLM 0.34.0 mimo_v2.py MiMoV2FlashDecoderLayer (lines 397-512): ``hybrid_layer_pattern``
    1 marks a sliding-window layer (``swa_num_attention_heads``, ``swa_num_key_value_heads``,
    ``swa_head_dim``, ``swa_v_head_dim``; a sink per query head when
    ``add_swa_attention_sink_bias``), 0 a full one (the model's heads and widths; sinks when
    ``add_full_attention_sink_bias``); q, k of ``head_dim`` and v of ``v_head_dim`` per head, o
    from the heads' values. ``moe_layer_freq`` lists 1 for a MoE layer (routed experts of
    ``moe_intermediate_size``, router d -> E without bias in ``moe_router_dtype`` (float32
    when absent, mimo_v2.py:159-167) and its fp32 e_score_correction_bias of E (:169-171);
    no shared expert), 0 for a dense gated MLP of ``intermediate_size``; vLLM's ``is_moe_layer``
    reads a plain int as no MoE layer at all. Two RMSNorms per layer, a final one, an untied
    head. The MTP layers (mimo_v2_mtp.py) load only for speculative decoding: not counted."""
    c = t.c
    d, n, h, kv = _sizes(c)
    pattern, moe = c.data.get("hybrid_layer_pattern"), c.data.get("moe_layer_freq")
    if not isinstance(pattern, list) or len(pattern) != n or set(pattern) - {0, 1}:
        raise ValueError(f"{c.path('hybrid_layer_pattern')} must give 0 (full) or 1 (sliding) "
                         f"for each of the {n} layers, got {describe(pattern)}")
    if isinstance(moe, int) and not isinstance(moe, bool):
        moe = [0] * n  # mimo_v2.py:503-509: an int moe_layer_freq makes no layer MoE
        t.notes.append(f"{c.path('moe_layer_freq')} is a number: vLLM 0.34.0's MiMo reads it as "
                       "no MoE layer (mimo_v2.py:503-509)")
    if not isinstance(moe, list) or len(moe) != n or set(moe) - {0, 1}:
        raise ValueError(f"{c.path('moe_layer_freq')} must give 0 (dense) or 1 (MoE) for each of "
                         f"the {n} layers, got {describe(moe)}")
    if c.flag("attention_bias"):
        raise ValueError(f"{c.path('attention_bias')}=True: MiMo's q/k/v biases are not counted")
    router_dtype = c.data.get("moe_router_dtype", "float32")
    if router_dtype not in ("float32", "bfloat16", "float16"):
        raise ValueError(f"{c.path('moe_router_dtype')} must be float32, bfloat16 or float16, "
                         f"got {describe(router_dtype)}")
    router_fp32 = router_dtype == "float32"
    _embed(t, d, False)
    full = (h, kv, c.int("head_dim"), c.int("v_head_dim", required=False),
            bool(c.flag("add_full_attention_sink_bias")))
    swa = (c.int("swa_num_attention_heads"), c.int("swa_num_key_value_heads"),
           c.int("swa_head_dim"), c.int("swa_v_head_dim", required=False),
           bool(c.flag("add_swa_attention_sink_bias")))
    for i in range(n):
        p = f"model.layers.{i}"
        heads, kvh, hd, vd, sinks = swa if pattern[i] == 1 else full
        vd = vd or hd
        t.lin("attention", f"{p}.self_attn.q_proj", d, heads * hd)
        t.lin("attention", f"{p}.self_attn.k_proj", d, kvh * hd, kv_heads=kvh)
        t.lin("attention", f"{p}.self_attn.v_proj", d, kvh * vd, kv_heads=kvh)
        t.lin("attention", f"{p}.self_attn.o_proj", heads * vd, d)
        t.add(attention=heads if sinks else 0, norms=2 * d)
        if moe[i]:
            e, im = c.int("n_routed_experts"), c.int("moe_intermediate_size")
            t.experts(f"{p}.mlp", e, c.int("num_experts_per_tok"),
                      (("gate_proj", d, im), ("up_proj", d, im), ("down_proj", im, d)))
            t.router(f"{p}.mlp.gate", d, e, fp32=router_fp32)
            t.keep("router", f"{p}.mlp.gate.e_score_correction_bias", e)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
    t.add(norms=d)


def _qwen3_moe(t: _Tally) -> None:
    """modeling_qwen3_moe.py / vLLM qwen3_moe.py (also Qwen3-VL-MoE's text model): Qwen3's
    attention (q/k RMSNorm per head; without ``head_dim``, hidden_size / heads, as vLLM's
    Qwen3MoeAttention and Qwen3MoeConfig take it); a layer is MoE unless listed in
    ``mlp_only_layers`` and when (i + 1) % ``decoder_sparse_step`` == 0: ``num_experts``
    routed experts of ``moe_intermediate_size``, router d -> E, no shared expert; else a
    gated MLP of ``intermediate_size``."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd, bias = _head_dim(t, d, h), bool(c.flag("attention_bias"))
    _embed(t, d, False)
    e = c.int("num_experts", "num_local_experts")  # transformers 5 writes the second
    only = c.data.get("mlp_only_layers") or []
    step = c.int("decoder_sparse_step", required=False) or 1
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd, bias, bias, True)
        if i not in only and (i + 1) % step == 0:
            _glu_experts(t, f"{p}.mlp", d, e, c.int("num_experts_per_tok"),
                         c.int("moe_intermediate_size"))
            t.lin("router", f"{p}.mlp.gate", d, e)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
    t.add(norms=2 * n * d + d)


def _mixtral(t: _Tally) -> None:
    """modeling_mixtral.py / vLLM mixtral.py: Llama's attention without biases; every layer
    ``num_local_experts`` experts (w1, w3: d -> ``intermediate_size``, w2 back), router
    d -> E."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = _head_dim(t, d, h)
    _embed(t, d, False)
    e = c.int("num_local_experts")
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd)
        _glu_experts(t, f"{p}.block_sparse_moe", d, e, c.int("num_experts_per_tok"),
                     c.int("intermediate_size"), ("w1", "w3", "w2"))
        t.lin("router", f"{p}.block_sparse_moe.gate", d, e)
    t.add(norms=2 * n * d + d)


def _glm4_moe(t: _Tally) -> None:
    """modeling_glm4_moe.py / vLLM glm4_moe.py (GLM-4.5, 4.6, 4.7; GLM-4.5V's text model):
    attention with q/k/v biases when ``attention_bias`` (o without), per-head q/k RMSNorm
    when ``use_qk_norm``; the first ``first_k_dense_replace`` layers a gated MLP of
    ``intermediate_size``, the rest MoE: ``n_routed_experts`` experts of
    ``moe_intermediate_size``, ``n_shared_experts`` shared, router d -> E in fp32
    (GateLinear ``params_dtype=torch.float32``, glm4_moe.py:139-145) and its fp32
    e_score_correction_bias (E, :148-150). The next-n layers (``num_nextn_predict_layers``)
    load only for speculative decoding: not counted."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = _head_dim(t, d, h)
    _embed(t, d, False)
    bias, qk = bool(c.flag("attention_bias")), bool(c.flag("use_qk_norm"))
    e, dense = c.int("n_routed_experts"), c.int("first_k_dense_replace", required=False,
                                                 allow_zero=True) or 0
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd, bias, False, qk)
        if i >= dense:
            im = c.int("moe_intermediate_size")
            _glu_experts(t, f"{p}.mlp", d, e, c.int("num_experts_per_tok"), im)
            shared = c.int("n_shared_experts", required=False, allow_zero=True) or 0
            if shared:
                t.glu("shared_experts", f"{p}.mlp.shared_experts", d, shared * im)
            t.router(f"{p}.mlp.gate", d, e, fp32=True)
            t.keep("router", f"{p}.mlp.gate.e_score_correction_bias", e)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
    t.add(norms=2 * n * d + d)


def _minimax_m3(t: _Tally) -> None:
    """MiniMax-M3 as vLLM 0.34.0 builds it (vllm/models/minimax_m3/nvidia/model.py; the
    same tensors as transformers 5.25.0 modeling_minimax_m3_vl.py's text model). Per layer:
    attention without biases and per-head Gemma q/k norms (model.py:772-801); a sparse layer
    (``sparse_attention_config.sparse_attention_freq`` 1, or ``layer_types``
    "minimax_m3_sparse") adds the indexer's q (d -> index heads x index dim, split by TP)
    and k (d -> index dim, one head, whole on every rank), fused into qkv_proj, and their
    norms (model.py:898-947). A MoE layer (``moe_layer_freq`` 1, or ``mlp_layer_types``
    "sparse"; all of them when neither is given) holds ``num_local_experts`` experts of
    ``intermediate_size`` (gate_up, down), the router d -> E and its
    e_score_correction_bias, both fp32 (model.py:524-536), one shared MLP of
    ``intermediate_size`` (model.py:524-557); a dense layer a gated MLP of
    ``dense_intermediate_size``. Two norms a layer, a final one, an untied head. The MTP
    modules load only for speculative decoding: not counted."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = _head_dim(t, d, h)
    sparse_cfg = c.data.get("sparse_attention_config")
    sc = Fields(sparse_cfg if isinstance(sparse_cfg, Mapping) else {},
                c.path("sparse_attention_config."), c)

    def per_layer(key: str, nested: Fields | None, layer_key: str, yes: str) -> list[bool]:
        src = nested if nested is not None else c
        v = src.data.get(key)
        if v is None and isinstance(c.data.get(layer_key), list):
            v = [x == yes for x in c.data[layer_key]]
        if v is None:
            return []
        if not isinstance(v, list) or len(v) != n or set(v) - {0, 1}:  # True == 1
            raise ValueError(f"{src.path(key)} must give 0 or 1 for each of the {n} layers, "
                             f"got {describe(v)}")
        return [bool(x) for x in v]

    sparse = per_layer("sparse_attention_freq", sc, "layer_types", "minimax_m3_sparse") \
        or [False] * n
    moe = per_layer("moe_layer_freq", None, "mlp_layer_types", "sparse") or [True] * n
    if any(sparse):
        ih = sc.int("sparse_num_index_heads", required=False) or c.int("index_n_heads")
        ihd = sc.int("sparse_index_dim", required=False) or c.int("index_head_dim")
    _embed(t, d, False)
    e, i = c.int("num_local_experts"), c.int("intermediate_size")
    for j in range(n):
        p = f"model.layers.{j}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd, qk_norm=True)
        if sparse[j]:
            t.lin("attention", f"{p}.self_attn.index_q_proj", d, ih * ihd)
            t.lin("attention", f"{p}.self_attn.indexer.wk", d, ihd)
            t.add(attention=2 * ihd)
        if moe[j]:
            q = f"{p}.block_sparse_moe"
            t.experts(q, e, c.int("num_experts_per_tok"), (("gate_up_proj", d, 2 * i),
                                                           ("down_proj", i, d)))
            t.router(f"{q}.gate", d, e, fp32=True)
            t.keep("router", f"{q}.e_score_correction_bias", e)
            t.lin("shared_experts", f"{q}.shared_experts.gate_up_proj", d, 2 * i)
            t.lin("shared_experts", f"{q}.shared_experts.down_proj", i, d)
        else:
            di = c.int("dense_intermediate_size")
            t.lin("mlp", f"{p}.mlp.gate_up_proj", d, 2 * di)
            t.lin("mlp", f"{p}.mlp.down_proj", di, d)
        t.add(norms=2 * d)
    t.add(norms=d)


def _laguna(t: _Tally) -> None:
    """Laguna (poolside) as vLLM 0.34.0 builds it (vllm/model_executor/models/laguna.py; the
    same tensors as transformers 5.25.0 modeling_laguna.py). Per layer: attention of
    ``num_attention_heads_per_layer[i]`` query heads (else ``num_attention_heads``;
    laguna.py:491-496) and ``num_key_value_heads`` of ``head_dim`` (LagunaConfig's 128 when
    absent), q/k/v/o with biases when ``attention_bias`` (laguna.py:307-324), per-head q/k
    RMSNorms (laguna.py:423-424) and, when ``gating`` is truthy, the output gate g_proj:
    d -> heads for True or "per-head", d -> heads x head_dim otherwise (laguna.py:331-349;
    LagunaConfig's default True); a sink per head on sliding layers when
    ``swa_attention_sink_enabled`` (laguna.py:486-488). ``mlp_layer_types`` (LagunaConfig's
    "dense" then "sparse" when absent: configuration_laguna.py:128-129; laguna.py:59-67)
    marks the MoE layers (vLLM: "sparse" and ``num_experts`` > 0, laguna.py:517-520): the
    router d -> E (GateLinear, whole on every rank; laguna.py:176-180), its fp32
    e_score_correction_bias (laguna.py:202-205), the shared expert of
    ``shared_expert_intermediate_size`` when > 0 (laguna.py:184-194) and E experts of
    ``moe_intermediate_size`` (laguna.py:215-220); a dense layer a gated MLP of
    ``intermediate_size``. Two RMSNorms a layer, a final one, the head (laguna.py:538-541,
    605-627, 716-723)."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = t.opt("head_dim", 128)
    heads = c.data.get("num_attention_heads_per_layer")
    if heads is None:
        heads = [h] * n
    elif not (isinstance(heads, list) and len(heads) == n
              and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in heads)):
        raise ValueError(f"{c.path('num_attention_heads_per_layer')} must give a positive "
                         f"number of heads for each of the {n} layers, got "
                         f"{describe(heads)[:80]}")
    types = c.data.get("layer_types") or ["full_attention"] * n
    mlp = _layer_list(t, "mlp_layer_types", n, {"dense", "sparse"},
                      ["dense"] + ["sparse"] * (n - 1))
    gating = c.data.get("gating", True)
    bias, sinks = bool(c.flag("attention_bias")), bool(c.flag("swa_attention_sink_enabled"))
    e = c.int("num_experts", required=False, allow_zero=True) or 0
    _embed(t, d, False)
    for i in range(n):
        p, hi = f"model.layers.{i}", heads[i]
        _gqa(t, f"{p}.self_attn", d, hi, kv or h, hd, bias, bias, True)
        if gating:
            per_head = gating is True or gating == "per-head"
            t.lin("attention", f"{p}.self_attn.g_proj", d, hi if per_head else hi * hd)
        if sinks and i < len(types) and types[i] == "sliding_attention":
            t.add(attention=hi)
        if mlp[i] == "sparse" and e:
            _glu_experts(t, f"{p}.mlp", d, e, c.int("num_experts_per_tok"),
                         c.int("moe_intermediate_size"))
            t.lin("router", f"{p}.mlp.gate", d, e)
            t.keep("router", f"{p}.mlp.experts.e_score_correction_bias", e)
            si = c.int("shared_expert_intermediate_size", required=False, allow_zero=True)
            if si:
                t.glu("shared_experts", f"{p}.mlp.shared_expert", d, si)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
        t.add(norms=2 * d)
    t.add(norms=d)


def _step3p7(t: _Tally) -> None:
    """Step 3.7 (StepFun; ``step3p7``, its text model ``step3p5``): vLLM 0.34.0 serves the
    text model as Step3p5ForCausalLM (registry.py:214, 652; step3p7.py:69-74) with
    transformers' Step3p7TextConfig (transformers_utils/config.py:171), which reads the
    experts from ``n_routed_experts`` / ``moe_num_experts`` / ``num_local_experts`` (not
    ``num_experts``) and the KV heads from ``num_key_value_heads``. Per layer
    (step3p5.py:418-486): attention of ``num_attention_heads`` (sliding layers:
    ``num_sliding_attention_heads``, else ``attention_other_setting.num_attention_heads``;
    step3p5.py:71-83) of ``head_dim`` (the class's 128), q/k/v with biases when
    ``attention_bias``, o without (step3p5.py:224-239), per-head Gemma q/k norms
    (step3p5.py:247-248) and the head-wise output gate g_proj d -> heads
    (step3p5.py:250-257: when ``use_head_wise_attn_gate``; transformers builds it for every
    Step 3.7 checkpoint, modeling_step3p7.py:701-703, so kvlib counts it unless the file
    says false). MoE layers by ``mlp_layer_types`` (else ``moe_layers_enum``, else layers 3
    on: configuration_step3p7.py:212-224; step3p5.py:112-122): the fp32 router d -> E
    (GateLinear, params_dtype float32, step3p5.py:339-345) and fp32 router_bias of E
    (step3p5.py:349-352), both whole on every rank, the shared expert of
    ``share_expert_dim`` (step3p5.py:381-389) and E experts of ``moe_intermediate_size``
    (step3p5.py:390-395); dense layers a gated MLP of ``intermediate_size``. Two norms a
    layer, a final one, an untied head (step3p5.py:526-542, 870-876). The
    ``num_nextn_predict_layers`` MTP layers load only for speculative decoding: not
    counted."""
    c = t.c
    d, n, h, kv = _sizes(c)
    kv = kv or c.int("num_attention_groups")
    hd = t.opt("head_dim", 128)
    mtp = c.int("num_nextn_predict_layers", required=False, allow_zero=True) or 0
    types = _layer_list(t, "layer_types", n, {"full_attention", "sliding_attention"},
                        ["full_attention"] * n, mtp)
    other = c.data.get("attention_other_setting")
    swa = c.int("num_sliding_attention_heads", required=False) \
        or (Fields(other, c.path("attention_other_setting."), c.outer).int("num_attention_heads")
            if isinstance(other, Mapping) else h)
    mlp = c.data.get("mlp_layer_types")
    if mlp is not None:
        mlp = _layer_list(t, "mlp_layer_types", n, {"dense", "sparse"}, trim=mtp)
    else:
        enum = c.data.get("moe_layers_enum")
        items = enum.split(",") if isinstance(enum, str) else enum
        if enum is not None and not (isinstance(items, list) and all(
                str(x).strip().isdigit() for x in items if str(x).strip())):
            raise ValueError(f"{c.path('moe_layers_enum')} must list layer numbers, got "
                             f"{describe(enum)[:80]}")
        moe = {int(x) for x in items if str(x).strip()} if enum is not None \
            else set(range(3, n))
        if enum is None:
            t.notes.append(f"no {c.path('mlp_layer_types')} or moe_layers_enum: "
                           "Step3p7TextConfig's MoE layers 3 on (configuration_step3p7.py:220)")
        mlp = ["sparse" if i in moe else "dense" for i in range(n)]
    e = c.int("n_routed_experts", "moe_num_experts", "num_local_experts", required=False)
    if e is None:
        e = 288
        t.notes.append("no n_routed_experts: Step3p7TextConfig's default 288 "
                       "(configuration_step3p7.py:168)")
    if c.has("num_experts") and c.data["num_experts"] != e:
        t.notes.append(f"{c.path('num_experts')}={describe(c.data['num_experts'])} is not read: "
                       f"vLLM takes {e} experts from n_routed_experts")
    gate = c.flag("use_head_wise_attn_gate")
    if gate is None:
        t.notes.append(f"no {c.path('use_head_wise_attn_gate')}: the head-wise output gate "
                       "counted, as transformers builds it for Step 3.7")
    bias = bool(c.flag("attention_bias"))
    _embed(t, d, False)
    for i in range(n):
        p = f"model.layers.{i}"
        hi = swa if types[i] == "sliding_attention" else h
        _gqa(t, f"{p}.self_attn", d, hi, kv, hd, bias, False, True)
        if gate is not False:
            t.lin("attention", f"{p}.self_attn.g_proj", d, hi)
        if mlp[i] == "sparse":
            q = f"{p}.moe"
            t.keep("router", f"{q}.gate.weight", d * e)
            t.keep("router", f"{q}.router_bias", e)
            t.glu("shared_experts", f"{p}.share_expert", d, t.opt("share_expert_dim", 1280))
            _glu_experts(t, q, d, e, c.int("num_experts_per_tok", "moe_top_k"),
                         t.opt("moe_intermediate_size", 1280))
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
        t.add(norms=2 * d)
    t.add(norms=d)
