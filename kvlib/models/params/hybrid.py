"""Counters for hybrids of attention and a state-space or linear-attention mixer
(:mod:`kvlib.models.params`): Nemotron-H, Qwen3-Next / Qwen3.5, Jamba, Kimi Linear and Kimi K3."""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.models.params.tally import _embed, _glu_experts, _gqa, _head_dim, _sizes, _Tally
from kvlib.models.readers.fields import Fields, describe


def _nemotron_h(t: _Tally) -> None:
    """vLLM nemotron_h.py + layers/mamba/mamba_mixer2.py. ``hybrid_override_pattern``: M Mamba2
    (in_proj d -> 2 d_in + 2 G N + heads, conv1d over d_in + 2 G N channels, A, D, dt_bias,
    gated norm d_in, out_proj), * attention, - MLP (up, down: relu2), E MoE (routed up/down
    experts, shared MLP, router d -> E plus e_score_correction_bias); one norm per block."""
    c = t.c
    blocks = c.data.get("layers_block_type")
    if isinstance(blocks, list):  # newer files: the same layout as a list of block names
        names = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*",
                 "mlp": "-", "moe": "E"}
        pattern = "".join(names.get(b, "?") for b in blocks)
        if not c.has("num_hidden_layers"):
            c = t.c = Fields({**c.data, "num_hidden_layers": len(blocks)}, c.prefix, c.outer)
    else:
        pattern = c.text("hybrid_override_pattern")
    d, n, h, kv = _sizes(c)
    if len(pattern) != n or set(pattern) - set("M*-E"):
        raise ValueError(f"{c.path('hybrid_override_pattern')} must give one of M * - E for each "
                         f"of the {n} layers, got {pattern!r}")
    _embed(t, d, False, p="backbone.")
    mb, ub = bool(c.flag("mlp_bias")), bool(c.flag("use_bias"))
    hd = c.int("head_dim", "attention_head_dim", required=False) or _head_dim(t, d, h)
    for j, kind in enumerate(pattern):
        p = f"backbone.layers.{j}.mixer"
        if kind == "M":
            heads, g, s = c.int("mamba_num_heads"), c.int("n_groups"), c.int("ssm_state_size")
            inner = heads * c.int("mamba_head_dim")
            conv = inner + 2 * g * s
            t.lin("mixers", f"{p}.in_proj", d, inner + conv + heads, ub)
            t.lin("mixers", f"{p}.out_proj", inner, d, ub)
            t.add(mixers=conv * c.int("conv_kernel") + 3 * heads + inner
                  + (conv if c.flag("use_conv_bias") is not False else 0))
        elif kind == "*":
            bias = bool(c.flag("attention_bias"))
            _gqa(t, p, d, h, kv or h, hd, bias, bias)
        elif kind == "-":
            i = c.int("intermediate_size")
            t.lin("mlp", f"{p}.up_proj", d, i, mb)
            t.lin("mlp", f"{p}.down_proj", i, d, mb)
        else:
            e, i, hid = c.int("n_routed_experts"), c.int("moe_intermediate_size"), d
            if c.has("moe_latent_size"):  # fc1/fc2 latent projections around the experts
                hid = c.int("moe_latent_size")
                t.lin("mlp", f"{p}.fc1_latent_proj", d, hid, mb)
                t.lin("mlp", f"{p}.fc2_latent_proj", hid, d, mb)
            t.experts(p, e, c.int("num_experts_per_tok"), (("up_proj", hid, i),
                                                            ("down_proj", i, hid)))
            si = c.int("moe_shared_expert_intermediate_size") \
                * (c.int("n_shared_experts", required=False, allow_zero=True) or 0)
            if si:
                t.lin("shared_experts", f"{p}.shared_experts.up_proj", d, si, mb)
                t.lin("shared_experts", f"{p}.shared_experts.down_proj", si, d, mb)
            t.lin("router", f"{p}.gate", d, e)
            t.add(router=e)
    t.add(norms=n * d + d)


def _qwen3_next(t: _Tally) -> None:
    """vLLM qwen3_next.py + layers/mamba/gdn/qwen_gdn_linear_attn.py. Full attention every
    ``full_attention_interval`` layers (q doubled by the output gate, q/k norms); Gated
    DeltaNet elsewhere (in_proj_qkvz d -> 2 k_dim + 2 v_dim, in_proj_ba d -> 2 n_v, conv1d
    over 2 k_dim + v_dim channels, dt_bias, A_log in fp32, norm of d_v, out_proj); MoE with a
    shared expert and its sigmoid gate (d -> 1). The MTP block (qwen3_next_mtp.py: fc 2d -> d,
    two pre-fc norms, one full-attention MoE layer, a norm; embedding and head shared) is
    counted in ``mtp``; ``num_nextn_predict_layers`` defaults to 1 as vLLM reads it."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = _head_dim(t, d, h)
    _embed(t, d, False)
    every = c.int("full_attention_interval", required=False) or 4
    types = c.data.get("layer_types") or ["full_attention" if (i + 1) % every == 0
                                          else "linear_attention" for i in range(n)]
    nk, nv, dv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads"), \
        c.int("linear_value_head_dim")
    kd, vd = nk * c.int("linear_key_head_dim"), nv * dv
    only = c.data.get("mlp_only_layers") or []
    step = c.int("decoder_sparse_step", required=False) or 1

    def layer(into: _Tally, i: int, kind: str, p: str) -> None:
        if kind == "full_attention":
            _gqa(into, f"{p}.self_attn", d, h, kv, hd, bool(c.flag("attention_bias")), False,
                 True, 2)
        else:
            into.lin("mixers", f"{p}.linear_attn.in_proj_qkvz", d, 2 * kd + 2 * vd)
            into.lin("mixers", f"{p}.linear_attn.in_proj_ba", d, 2 * nv)
            into.lin("mixers", f"{p}.linear_attn.out_proj", vd, d)
            into.add(mixers=(2 * kd + vd) * c.int("linear_conv_kernel_dim") + nv + dv)
            # A_log in fp32, split by TP (qwen_gdn_linear_attn.py:807-812); dt_bias in the
            # model dtype
            into.keep("mixers", f"{p}.linear_attn.A_log", nv, whole=False)
        e = c.int("num_experts", required=False, allow_zero=True) or 0
        if e and i not in only and (i + 1) % step == 0:
            im = c.int("moe_intermediate_size")
            into.experts(f"{p}.mlp", e, c.int("num_experts_per_tok"),
                         (("gate_proj", d, im), ("up_proj", d, im), ("down_proj", im, d)))
            into.glu("shared_experts", f"{p}.mlp.shared_expert", d,
                     c.int("shared_expert_intermediate_size"))
            into.lin("shared_experts", f"{p}.mlp.shared_expert_gate", d, 1)
            into.lin("router", f"{p}.mlp.gate", d, e)
        else:
            into.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
        into.add(norms=2 * d)

    for i, kind in enumerate(types):
        layer(t, i, kind, f"model.layers.{i}")
    t.add(norms=d)
    for i in range(t.opt("num_nextn_predict_layers", 1)):
        m = t.fork()
        layer(m, n + i, "full_attention", f"mtp.layers.{i}")
        m.lin("mlp", "mtp.fc", 2 * d, d)
        m.add(norms=3 * d)


def _jamba(t: _Tally) -> None:
    """modeling_jamba.py / vLLM jamba.py: attention (no biases) where i % attn_layer_period
    == attn_layer_offset, Mamba elsewhere (in_proj d -> 2 d_in, conv1d d_in x d_conv plus
    bias, x_proj d_in -> dt_rank + 2 N, dt_proj dt_rank -> d_in with bias, A_log d_in x N,
    D, dt/B/C RMSNorms, out_proj; d_in = mamba_expand d, dt_rank "auto" = ceil(d / 16));
    experts (router d -> E) where i % expert_layer_period == expert_layer_offset, else a
    gated MLP; two norms per layer and a final one."""
    c = t.c
    d, n, h, kv = _sizes(c)
    hd = d // h
    _embed(t, d, False)
    ap, ao = t.opt("attn_layer_period", 8), t.opt("attn_layer_offset", 4)
    ep, eo = t.opt("expert_layer_period", 2), t.opt("expert_layer_offset", 1)
    inner, s = t.opt("mamba_expand", 2) * d, t.opt("mamba_d_state", 16)
    k = t.opt("mamba_d_conv", 4)
    r = c.data.get("mamba_dt_rank", "auto")
    r = -(-d // 16) if r == "auto" else c.int("mamba_dt_rank")
    pb, cb = bool(c.flag("mamba_proj_bias")), c.flag("mamba_conv_bias") is not False
    e, im = t.opt("num_experts", 16), c.int("intermediate_size")
    for i in range(n):
        p = f"model.layers.{i}"
        if i % ap == ao:
            _gqa(t, f"{p}.self_attn", d, h, kv or h, hd)
        else:
            m = f"{p}.mamba"
            t.lin("mixers", f"{m}.in_proj", d, 2 * inner, pb)
            t.lin("mixers", f"{m}.x_proj", inner, r + 2 * s)
            t.lin("mixers", f"{m}.dt_proj", r, inner, True)
            t.lin("mixers", f"{m}.out_proj", inner, d, pb)
            t.add(mixers=inner * k + (inner if cb else 0) + inner * s + inner + r + 2 * s)
        if e > 1 and i % ep == eo:
            _glu_experts(t, f"{p}.feed_forward", d, e, c.int("num_experts_per_tok"), im)
            t.lin("router", f"{p}.feed_forward.router", d, e)
        else:
            t.glu("mlp", f"{p}.feed_forward", d, im)
    t.add(norms=2 * n * d + d)


def _kimi_linear(t: _Tally) -> None:
    """Kimi Linear and Kimi K3's text model (``kimi_linear``) as vLLM 0.34.0 builds them
    (vllm/models/kimi_k3/nvidia/model.py, registry.py:147-150, with vLLM's KimiLinearConfig,
    transformers_utils/configs/kimi_linear.py). Layer i is Kimi Delta Attention when i + 1
    is in ``linear_attn_config.kda_layers``, else MLA (configs/kimi_linear.py:225-235;
    model.py:724-790). KDA of H = ``num_heads`` heads of ``head_dim`` (P = H x head_dim):
    q, k, v (d -> P), b (d -> H), f_a (d -> head_dim), f_b (head_dim -> P), the q/k/v short
    convolutions (3 P x ``short_conv_kernel_size``, fp32), dt_bias (P, fp32), A_log (H,
    fp32), the output norm (head_dim), o (P -> d), and the gate: with ``use_full_rank_gate``
    (Kimi K3) g_proj d -> P (nvidia/kda.py:641-700, 821-823, 879-903), else g_a (d ->
    head_dim) and g_b (head_dim -> P) (layers/mamba/gdn/kimi_gdn_linear_attn.py:196-312).
    MLA (nvidia/mla.py:220-306): with ``q_lora_rank`` q_a (d -> q_lora_rank), its norm, q_b;
    else q_proj (d -> heads x (nope + rope)); kv_a_proj_with_mqa (d -> kv_lora_rank + rope),
    its norm, kv_b, o; g_proj d -> heads x v_head_dim when ``mla_use_output_gate``. A layer
    is MoE when ``num_experts`` is set, i >= ``first_k_dense_replace`` and i %
    ``moe_layer_freq`` == 0 (model.py:710-715): the router d -> E and its fp32
    e_score_correction_bias (model.py:440-450), shared experts of ``moe_intermediate_size``
    x ``num_shared_experts`` (model.py:452-470), and, with ``routed_expert_hidden_size`` L
    (Kimi K3's latent MoE), routed_expert_down_proj (d -> L), its norm when
    ``latent_moe_use_norm`` and routed_expert_up_proj (L -> d), ReplicatedLinear, whole on
    every rank (model.py:479-510); E experts of ``moe_intermediate_size`` over L (else d; model.py:
    551-560); a dense layer a gated MLP of ``intermediate_size``. Two norms a layer; with
    ``attn_res_block_size`` (Kimi K3's attention residuals) two more norms and two
    projections d -> 1 a layer and the output's pair (model.py:822-846, 1089-1100), the
    projections ReplicatedLinear with ``quant_config=None``: whole, in the model dtype; a final
    norm, an untied head (model.py:1012-1016, 1523-1528). Kimi K3.1's DSA layers
    (``dsa_config``) are refused; MTP layers load only for speculative decoding."""
    c = t.c
    d, n, h, _ = _sizes(c)
    if c.has("dsa_config"):
        raise ValueError(f"{c.path('dsa_config')}: Kimi K3.1's DSA layers are not counted")
    la = c.data.get("linear_attn_config")
    kda: set = set()
    if la is not None:
        if not isinstance(la, Mapping) or not isinstance(la.get("kda_layers"), list):
            raise ValueError(f"{c.path('linear_attn_config')} must hold a kda_layers list, got "
                             f"{describe(la)[:80]}")
        kda = set(la["kda_layers"])
        lc = Fields(la, c.path("linear_attn_config."), c.outer)
        kh, khd, conv = lc.int("num_heads"), lc.int("head_dim"), lc.int("short_conv_kernel_size")
        full_rank = bool(lc.flag("use_full_rank_gate"))
    if not c.flag("mla_use_nope") and any(i + 1 not in kda for i in range(n)):
        raise ValueError(f"{c.path('mla_use_nope')}={describe(c.data.get('mla_use_nope'))}: "
                         "vLLM 0.34.0 builds Kimi's MLA layers NoPE only (nvidia/model.py:753)")
    e = c.int("num_experts", required=False)
    first = c.int("first_k_dense_replace", required=False, allow_zero=True) or 0
    freq = c.int("moe_layer_freq", required=False) or 1
    res = c.int("attn_res_block_size", required=False) is not None
    _embed(t, d, False)
    for i in range(n):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        if i + 1 in kda:
            pk = kh * khd
            for name in ("q_proj", "k_proj", "v_proj"):
                t.lin("mixers", f"{a}.{name}", d, pk)
            t.lin("mixers", f"{a}.b_proj", d, kh)
            t.lin("mixers", f"{a}.f_a_proj", d, khd)
            t.lin("mixers", f"{a}.f_b_proj", khd, pk)
            if full_rank:
                t.lin("mixers", f"{a}.g_proj", d, pk)
            else:
                t.lin("mixers", f"{a}.g_a_proj", d, khd)
                t.lin("mixers", f"{a}.g_b_proj", khd, pk)
            t.keep("mixers", f"{a}.conv1d", 3 * pk * conv, whole=False)
            t.keep("mixers", f"{a}.dt_bias", pk, whole=False)
            t.keep("mixers", f"{a}.A_log", kh, whole=False)
            t.lin("mixers", f"{a}.o_proj", pk, d)
            t.add(norms=khd)
        else:
            nope, rope = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim")
            v, kvr = c.int("v_head_dim"), c.int("kv_lora_rank")
            qr = c.int("q_lora_rank", required=False)
            if qr:
                t.lin("attention", f"{a}.q_a_proj", d, qr)
                t.lin("attention", f"{a}.q_b_proj", qr, h * (nope + rope))
                t.add(norms=qr)
            else:
                t.lin("attention", f"{a}.q_proj", d, h * (nope + rope))
            t.lin("attention", f"{a}.kv_a_proj_with_mqa", d, kvr + rope)
            if c.flag("mla_use_output_gate"):
                t.lin("attention", f"{a}.g_proj", d, h * v)
            t.lin("attention", f"{a}.kv_b_proj", kvr, h * (nope + v))
            t.lin("attention", f"{a}.o_proj", h * v, d)
            t.add(norms=kvr)
        if e and i >= first and i % freq == 0:
            m, im = f"{p}.block_sparse_moe", c.int("moe_intermediate_size")
            t.lin("router", f"{m}.gate", d, e)
            t.keep("router", f"{m}.gate.e_score_correction_bias", e)
            shared = c.int("num_shared_experts", required=False, allow_zero=True) or 0
            if shared:
                t.glu("shared_experts", f"{m}.shared_experts", d, shared * im)
            lat = c.int("routed_expert_hidden_size", required=False) or d
            if c.has("routed_expert_hidden_size"):
                t.lin("mlp", f"{m}.routed_expert_down_proj", d, lat)
                t.lin("mlp", f"{m}.routed_expert_up_proj", lat, d)
                t.add(norms=lat if c.flag("latent_moe_use_norm") else 0)
            _glu_experts(t, m, lat, e, c.int("num_experts_per_token", "num_experts_per_tok"),
                         im, ("w1", "w3", "w2"))
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
        t.add(norms=2 * d)
        if res:
            for name in ("self_attention_res_proj", "mlp_res_proj"):
                t.keep("mixers", f"{p}.{name}", d, t.unquantized_bytes())
            t.add(norms=2 * d)
    t.add(norms=d)
    if res:
        t.keep("mixers", "model.output_attn_res_proj", d, t.unquantized_bytes())
        t.add(norms=d)
