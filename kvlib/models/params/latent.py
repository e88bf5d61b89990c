"""Counters for the latent-attention (MLA) families (:mod:`kvlib.models.params`): DeepSeek V2 / V3 /
V3.2 (GLM-5, Kimi K2), DeepSeek V4, GLM-4.7-Flash."""

from __future__ import annotations

from kvlib.core.compression import overlap
from kvlib.models.params.tally import _embed, _sizes, _Tally
from kvlib.models.readers.deepseek import shared_indexer_layers
from kvlib.models.readers.deepseek_v4 import compress_ratios
from kvlib.models.readers.fields import Fields, describe


def _deepseek_layer(t: _Tally, i: int, d: int, indexer: bool = True,
                    router_fp32: bool = False) -> None:
    """One DeepSeek V2/V3/V3.2 decoder layer (vLLM deepseek_v2.py): MLA (q_a_proj, its norm,
    q_b_proj or one q_proj; kv_a_proj_with_mqa, its norm, kv_b_proj; o_proj), the V3.2
    indexer unless the layer shares an earlier one's (``indexer`` False): wq_b, then wk and
    weights_proj fused into one wk_weights_proj built with ``quant_config=None``
    (deepseek_v2.py:710-718: an FP8 checkpoint's wk is upcast, so wk is a :class:`Fixed` in the
    model dtype, never quantized) and the k_norm LayerNorm in fp32 (weight and bias, :720);
    then a dense MLP or the MoE (routed, shared, router d -> E, in fp32 with
    ``router_fp32``, and, for noaux_tc routing, an fp32 e_score_correction_bias of E,
    :327-330)."""
    c, p = t.c, f"model.layers.{i}"
    h, nope, rope = c.int("num_attention_heads"), c.int("qk_nope_head_dim"), \
        c.int("qk_rope_head_dim")
    v, kvr, qr = c.int("v_head_dim"), c.int("kv_lora_rank"), c.int("q_lora_rank", required=False)
    if c.flag("attention_bias"):
        raise ValueError(f"{c.path('attention_bias')}=True: MLA biases are not counted")
    a = f"{p}.self_attn"
    if qr:
        t.lin("attention", f"{a}.q_a_proj", d, qr)
        t.lin("attention", f"{a}.q_b_proj", qr, h * (nope + rope))
    else:
        t.lin("attention", f"{a}.q_proj", d, h * (nope + rope))
    t.lin("attention", f"{a}.kv_a_proj_with_mqa", d, kvr + rope)
    t.lin("attention", f"{a}.kv_b_proj", kvr, h * (nope + v))
    t.lin("attention", f"{a}.o_proj", h * v, d)
    t.add(norms=2 * d + (qr or 0) + kvr)  # q_a_layernorm and kv_a_layernorm: whole
    if c.has("index_n_heads") and indexer:
        ih, ihd = c.int("index_n_heads"), c.int("index_head_dim")
        t.lin("attention", f"{a}.indexer.wq_b", qr, ih * ihd)
        t.keep("attention", f"{a}.indexer.wk", d * ihd, t.unquantized_bytes())
        t.lin("attention", f"{a}.indexer.weights_proj", d, ih)
        t.keep("attention", f"{a}.indexer.k_norm", 2 * ihd)
    e = c.int("n_routed_experts", required=False)
    freq = c.int("moe_layer_freq", required=False) or 1
    if e and i >= (c.int("first_k_dense_replace", required=False, allow_zero=True) or 0) \
            and i % freq == 0:
        im = c.int("moe_intermediate_size")
        t.experts(f"{p}.mlp", e, c.int("num_experts_per_tok"),
                  (("gate_proj", d, im), ("up_proj", d, im), ("down_proj", im, d)))
        shared = c.int("n_shared_experts", required=False, allow_zero=True) or 0
        if shared:
            t.glu("shared_experts", f"{p}.mlp.shared_experts", d, shared * im)
        t.router(f"{p}.mlp.gate", d, e, router_fp32)
        if c.text("topk_method") == "noaux_tc":
            t.keep("router", f"{p}.mlp.gate.e_score_correction_bias", e)
    else:
        t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))


def _deepseek(t: _Tally, router_fp32: bool = False) -> None:
    """DeepSeek V2, V3, V3.2, GLM-5.x, Kimi K2. A layer that shares an earlier layer's indexer
    (GLM-5.2's IndexShare: ``indexer_types``, ``index_topk_freq``) builds none, and vLLM 0.34.0
    drops its checkpoint indexer weights (deepseek_v2.py:1641-1643; which layers:
    :func:`kvlib.models.readers.deepseek.shared_indexer_layers`). The checkpoint's next-n layers
    (vLLM deepseek_mtp.py) each hold a decoder layer (always with an indexer), enorm, hnorm,
    eh_proj (2d -> d), a shared_head norm and head, and their own copy of the embedding: counted
    in ``mtp``."""
    d, n, _, _ = _sizes(t.c)
    v = _embed(t, d, False)
    shared, where = shared_indexer_layers(t.c, n)
    if shared and t.c.has("index_n_heads"):
        t.notes.append(f"{len(shared)} of {n} layers share an earlier layer's indexer ({where}): "
                       "their indexer weights are not loaded, so not counted")
    for i in range(n):
        _deepseek_layer(t, i, d, i not in shared, router_fp32)
    t.add(norms=d)
    for i in range(n, n + (t.c.int("num_nextn_predict_layers", required=False,
                                   allow_zero=True) or 0)):
        m = t.fork()
        _deepseek_layer(m, i, d, router_fp32=router_fp32)
        m.lin("mlp", f"model.layers.{i}.eh_proj", 2 * d, d)
        m.lin("lm_head", f"model.layers.{i}.shared_head.head", d, v)
        m.add(norms=3 * d, embedding=v * d)


def _v4_layer(t: _Tally, p: str, d: int, m: int, hash_moe: bool) -> None:
    """One DeepSeek V4 decoder layer of compression ratio ``m`` (1: none) as vLLM 0.34.0 builds
    it (paths under vllm/models/deepseek_v4/):

    * attention (attention.py:253-290): wq_a (d -> q_lora_rank) and wkv (d -> head_dim),
      loaded fused as ``fused_wqa_wkv``, replicated (disable_tp); q_norm and kv_norm; wq_b
      (q_lora_rank -> h head_dim, column-parallel); wo_a, o_groups blocks of (h head_dim /
      o_groups -> o_lora_rank), stored as one (o_groups o_lora_rank, h head_dim / o_groups)
      weight (common/grouped_wo_a.py:15-26, column-parallel); wo_b (o_groups o_lora_rank -> d,
      row-parallel); one fp32 sink per head (attention.py:247-251).
    * m > 1: a compressor (attention.py:364-372; compressor.py:270-294): ape, fp32 (m, c
      head_dim) with c = 2 for m = 4 (overlapping windows) else 1; wkv and wgate (d -> c
      head_dim), loaded fused and unquantized (quant_config=None, disable_tp); its norm.
    * m = 4: the indexer (attention.py:304-322, 947-1004): wq_b (q_lora_rank -> index_n_heads
      index_head_dim) and weights_proj (d -> index_n_heads, unquantized), both replicated, and
      a compressor of its own at index_head_dim with m = 4.
    * the MoE (nvidia/model.py:270-336, 426-437): gate (d -> E, GateLinear, replicated);
      an fp32 e_score_correction_bias of E (``topk_method`` noaux_tc) except on a hash layer,
      which holds instead the int32 token -> expert table tid2eid (vocab, top_k); the shared
      expert (gated MLP of n_shared x moe_intermediate_size); E routed experts w1, w3 (d -> I)
      and w2 (I -> d), top_k of them read per token.
    * attn_norm and ffn_norm; the hyper-connections (nvidia/model.py:617-667): for the
      attention and the FFN each an fp32 fn ((2 + hc) hc, hc d), base ((2 + hc) hc) and
      scale (3), hc = ``hc_mult``, replicated.
    """
    c = t.c
    h, hd, qr = c.int("num_attention_heads"), c.int("head_dim"), c.int("q_lora_rank")
    o_r, g = c.int("o_lora_rank"), c.int("o_groups")
    if (h * hd) % g:
        raise ValueError(f"{c.path('o_groups')}={g} must divide num_attention_heads x head_dim "
                         f"= {h * hd} (vLLM's grouped wo_a)")
    a = f"{p}.attn"
    t.lin("attention", f"{a}.wq_a", d, qr)
    t.lin("attention", f"{a}.wkv", d, hd)
    t.lin("attention", f"{a}.wq_b", qr, h * hd)
    t.lin("attention", f"{a}.wo_a", h * hd // g, g * o_r)
    t.lin("attention", f"{a}.wo_b", g * o_r, d)
    t.keep("attention", f"{a}.attn_sink", h, whole=False)
    t.add(norms=qr + hd)

    def compressor(q: str, width: int) -> None:
        coff = overlap(m)  # vLLM's coff (compressor.py:247-248)
        t.keep("attention", f"{q}.compressor.ape", m * coff * width)
        t.lin("attention", f"{q}.compressor.wkv", d, coff * width)
        t.lin("attention", f"{q}.compressor.wgate", d, coff * width)
        t.add(norms=width)

    if m > 1:
        compressor(a, hd)
    if m == 4:
        ih, ihd = c.int("index_n_heads"), c.int("index_head_dim")
        t.lin("attention", f"{a}.indexer.wq_b", qr, ih * ihd)
        t.lin("attention", f"{a}.indexer.weights_proj", d, ih)
        compressor(f"{a}.indexer", ihd)
    e, im, k = c.int("n_routed_experts"), c.int("moe_intermediate_size"), \
        c.int("num_experts_per_tok")
    f = f"{p}.ffn"
    t.lin("router", f"{f}.gate", d, e)
    if hash_moe:
        t.keep("router", f"{f}.gate.tid2eid", c.int("vocab_size") * k)
    elif c.text("topk_method") == "noaux_tc":
        t.keep("router", f"{f}.gate.e_score_correction_bias", e)
    shared = c.int("n_shared_experts", required=False, allow_zero=True) or 0
    if shared:
        t.glu("shared_experts", f"{f}.shared_experts", d, shared * im)
    t.experts(f, e, k, (("w1", d, im), ("w3", d, im), ("w2", im, d)))
    hc = c.int("hc_mult")
    mix = (2 + hc) * hc
    for side in ("attn", "ffn"):
        t.keep("mixers", f"{p}.hc_{side}_fn", mix * hc * d)
        t.keep("mixers", f"{p}.hc_{side}_base", mix)
        t.keep("mixers", f"{p}.hc_{side}_scale", 3)
    t.add(norms=2 * d)


def _deepseek_v4(t: _Tally) -> None:
    """DeepSeek V4 (V4-Flash, V4-Pro) as vLLM 0.34.0 builds it (vllm/models/deepseek_v4/
    nvidia/model.py; transformers 5.25.0 modeling_deepseek_v4.py has the same tensors).
    Embedding and untied head (nvidia/model.py:866-872, 1353-1358); per layer
    :func:`_v4_layer` by its ratio (:func:`kvlib.models.readers.deepseek_v4.compress_ratios`);
    the first ``num_hash_layers`` (or ``mlp_layer_types``' "hash_moe") layers route by hash
    (nvidia/model.py:286, 614); a final norm and the fp32 hc_head (fn (hc, hc d), base hc,
    scale 1: nvidia/model.py:890-913). The next-n layers (nvidia/mtp.py:95-135): a decoder
    layer without compressor (attention.py:239-243: m = 1 past num_hidden_layers), e_proj and
    h_proj (d -> d, FP8), enorm, hnorm, an hc_head and the shared head's norm: counted in
    ``mtp``. Embedding and head are the main model's: vLLM installs the target's lm_head as
    each MTP layer's shared_head.head (v1/worker/gpu/spec_decode/eagle/utils.py:145-160; V4
    has no head of its own, model_executor/models/interfaces.py:1557) and its embedding
    (nvidia/mtp.py:301-302), and the Hub's count of the Pro checkpoint (861.6B as stored,
    tests/test_params_v4.py) has neither."""
    c = t.c
    d, n = c.int("hidden_size"), c.int("num_hidden_layers")
    ratios = compress_ratios(c, n, [])
    types = c.data.get("mlp_layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) < n or set(types[:n]) - {"hash_moe", "moe"}:
            raise ValueError(f"{c.path('mlp_layer_types')} must give hash_moe or moe for each of "
                             f"the {n} layers, got {describe(types)[:60]}")
        hashed = types[:n].count("hash_moe")  # vLLM: the first that many (nvidia/model.py:614)
    else:
        hashed = t.opt("num_hash_layers", 3)  # transformers' default_num_hash_layers
    _embed(t, d, False)
    for i, m in enumerate(ratios):
        _v4_layer(t, f"model.layers.{i}", d, max(m, 1), i < hashed)
    hc = c.int("hc_mult")
    t.keep("mixers", "model.hc_head_fn", hc * hc * d)
    t.keep("mixers", "model.hc_head_base", hc)
    t.keep("mixers", "model.hc_head_scale", 1)
    t.add(norms=d)
    for i in range(n, n + (c.int("num_nextn_predict_layers", required=False,
                                 allow_zero=True) or 0)):
        mt, p = t.fork(), f"model.layers.{i}"
        _v4_layer(mt, f"{p}.mtp_block", d, 1, False)
        mt.lin("mlp", f"{p}.e_proj", d, d)
        mt.lin("mlp", f"{p}.h_proj", d, d)
        mt.keep("mixers", f"{p}.hc_head_fn", hc * hc * d)
        mt.keep("mixers", f"{p}.hc_head_base", hc)
        mt.keep("mixers", f"{p}.hc_head_scale", 1)
        mt.add(norms=3 * d)


def _glm4_moe_lite(t: _Tally) -> None:
    """GLM-4.7-Flash: DeepSeek V3's MLA and MoE (:func:`_deepseek`); vLLM 0.34.0
    glm4_moe_lite.py builds its MoE with glm4_moe.py's Glm4MoE, which always holds the
    router's e_score_correction_bias (glm4_moe.py:148-150), ``topk_method`` or not, and its
    router in fp32 (:139-145). Without
    ``first_k_dense_replace``, the leading "dense" entries of transformers'
    ``mlp_layer_types`` give it."""
    c, extra = t.c, {"topk_method": "noaux_tc"}
    types = c.data.get("mlp_layer_types")
    if not c.has("first_k_dense_replace") and isinstance(types, list):
        extra["first_k_dense_replace"] = next(
            (i for i, k in enumerate(types) if k != "dense"), len(types))
    t.c = Fields({**c.data, **extra}, c.prefix, c.outer)
    _deepseek(t, router_fp32=True)
