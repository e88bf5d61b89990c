"""Parameters counted from a config.json, part by part (issue 24, "Weights from the checkpoint").

One counter per family, keyed by ``model_type`` like the readers; each follows its family's
modeling code (vLLM 0.33.0 ``vllm/model_executor/models/<family>.py``, transformers
``models/<family>/modeling_<family>.py``). Every count is an exact integer of elements:

    >>> count_params({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
    ...               "intermediate_size": 14336, "num_hidden_layers": 32,
    ...               "num_attention_heads": 32, "num_key_value_heads": 8}).total
    8030261248

``parts`` splits the model vLLM loads by default; ``mtp`` (next-n prediction layers, as the
checkpoint stores them) is apart and not in ``total``. ``active`` is what one text token
reads: everything but the routed experts, plus ``top_k`` of them per MoE layer (embedding
and head included, vision tower not). A family without a counter raises ValueError naming
its model_type: nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kvlib.core.compression import overlap
from kvlib.models.readers.deepseek import shared_indexer_layers
from kvlib.models.readers.deepseek_v4 import compress_ratios
from kvlib.models.readers.fields import Fields, describe, load_config

__all__ = ["PARTS", "Fixed", "Linear", "ParamCount", "count_params", "COUNTERS"]

PARTS = ("embedding", "lm_head", "attention", "mlp", "experts", "shared_experts", "router",
         "mixers", "norms", "vision")


@dataclass(frozen=True)
class Linear:
    """One linear layer's weight: ``count`` copies (routed experts) of (out_features,
    in_features), under its checkpoint module name (``model.layers.3.self_attn.q_proj``;
    experts as ``...mlp.experts.gate_proj``). Its bias is in ``ParamCount.parts``, not here."""

    name: str
    part: str
    in_features: int
    out_features: int
    count: int = 1

    @property
    def params(self) -> int:
        return self.count * self.in_features * self.out_features


@dataclass(frozen=True)
class Fixed:
    """A tensor (not a linear weight) that vLLM creates in a dtype of its own whatever the
    model's: ``elements`` of ``bytes_per`` bytes each (fp32 4, int32 4) under ``name``, kept
    whole on every TP rank when ``whole``. In ``ParamCount.parts`` too (its ``part``)."""

    name: str
    part: str
    elements: int
    bytes_per: int
    whole: bool = True


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts (elements) of one checkpoint.

    parts: elements per part (:data:`PARTS`); ``vision`` holds a multimodal wrapper's vision
    tower and projector when ``towers == "counted"``. towers: "none" (text model),
    "counted" (every tower counted exactly) or "text only" (a tower exists, not counted).
    linears: every linear weight of the text model (vision excluded), in ``parts`` too.
    mtp, mtp_linears: next-n / MTP layers as stored, excluded from ``total``.
    fixed, mtp_fixed: the :class:`Fixed` tensors of the model and of its MTP layers.
    active: elements read per text token. notes: what was assumed.
    """

    model_type: str
    parts: Mapping[str, int]
    active: int
    linears: tuple[Linear, ...] = ()
    mtp: int = 0
    mtp_linears: tuple[Linear, ...] = ()
    towers: str = "none"
    notes: tuple[str, ...] = ()
    fixed: tuple[Fixed, ...] = ()
    mtp_fixed: tuple[Fixed, ...] = ()

    @property
    def total(self) -> int:
        """Every element vLLM loads by default (vision included when counted, MTP not)."""
        return sum(self.parts.values())

    @property
    def text(self) -> int:
        """The language model alone: ``total`` less the vision tower."""
        return self.total - self.parts["vision"]


class _Tally:
    """Running count for one config: parts, linears, routed experts not read per token."""

    def __init__(self, c: Fields, family: str, notes: list[str] | None = None):
        self.c, self.family = c, family
        self.parts = dict.fromkeys(PARTS, 0)
        self.linears: list[Linear] = []
        self.fixed: list[Fixed] = []
        self.idle, self.notes = 0, [] if notes is None else notes
        self.mtp: _Tally | None = None

    def add(self, **parts: int) -> None:
        for k, v in parts.items():
            self.parts[k] += v

    def lin(self, part: str, name: str, i: int, o: int, bias: bool = False, count: int = 1):
        """A Linear(i -> o) (weight (o, i), bias (o,)) x count under ``name``."""
        self.linears.append(Linear(name, part, i, o, count))
        self.parts[part] += count * (i * o + (o if bias else 0))

    def keep(self, part: str, name: str, elements: int, bytes_per: int = 4,
             whole: bool = True) -> None:
        """A :class:`Fixed` tensor of ``elements`` (fp32 or int32 by default) under ``name``."""
        self.fixed.append(Fixed(name, part, elements, bytes_per, whole))
        self.parts[part] += elements

    def glu(self, part: str, p: str, d: int, i: int, bias: bool = False, count: int = 1):
        """Gated MLP ``p``: gate_proj and up_proj (d -> i), down_proj (i -> d)."""
        for name, a, b in (("gate_proj", d, i), ("up_proj", d, i), ("down_proj", i, d)):
            self.lin(part, f"{p}.{name}", a, b, bias, count)

    def experts(self, p: str, n: int, top_k: int, shapes, bias: bool = False) -> None:
        """n routed experts under ``p``, each of the linears ``shapes`` ((name, in, out), ...);
        top_k read per token."""
        if top_k > n:
            raise ValueError(f"{top_k} experts per token exceeds the {n} experts")
        before = self.parts["experts"]
        for name, a, b in shapes:
            self.lin("experts", f"{p}.experts.{name}", a, b, bias, n)
        self.idle += (self.parts["experts"] - before) * (n - top_k) // n

    def opt(self, key: str, default: int) -> int:
        """An optional int field, the family default (said in the notes) when absent."""
        v = self.c.int(key, required=False, allow_zero=True)
        if v is None:
            self.notes.append(f"no {self.c.path(key)}: {self.family}'s default {default}")
            return default
        return v

    def fork(self) -> _Tally:
        """A tally for the MTP layers (kept apart from the model's)."""
        self.mtp = self.mtp or _Tally(self.c, self.family, self.notes)
        return self.mtp


def _lin(i: int, o: int, bias: bool = False) -> int:
    """Elements of a Linear(i -> o): weight (o, i) plus bias (o,)."""
    return i * o + (o if bias else 0)


def _head_dim(t: _Tally, d: int, h: int, default: int | None = None) -> int:
    if t.c.has("head_dim"):
        return t.c.int("head_dim")
    if default is not None:
        return t.opt("head_dim", default)
    if d % h:
        raise ValueError(f"{t.c.path('hidden_size')}={d} is not divisible by "
                         f"{t.c.path('num_attention_heads')}={h}; the config needs a head_dim")
    return d // h


def _embed(t: _Tally, d: int, tied: bool, vocab: int | None = None, p: str = "model.") -> int:
    """Input embedding (V, d) and an output head (V, d) unless tied; returns V."""
    v = t.c.int("vocab_size") if vocab is None else t.opt("vocab_size", vocab)
    tie = t.c.flag("tie_word_embeddings")
    if tie is None and t.c.outer is not None:
        tie = t.c.outer.flag("tie_word_embeddings")
    t.add(embedding=v * d)
    if not (tied if tie is None else tie):
        t.lin("lm_head", "lm_head", d, v)
    return v


def _gqa(t: _Tally, p: str, d: int, h: int, kv: int, hd: int, qkv_bias=False, o_bias=False,
         qk_norm=False, q_mult: int = 1, v_proj: bool = True) -> None:
    """Attention ``p``: q (d -> q_mult h hd; 2 with an output gate), k and v (d -> kv hd),
    o (h hd -> d), per-head q/k RMSNorm weights (hd each) when ``qk_norm``."""
    t.lin("attention", f"{p}.q_proj", d, q_mult * h * hd, qkv_bias)
    for name in ("k_proj", "v_proj") if v_proj else ("k_proj",):
        t.lin("attention", f"{p}.{name}", d, kv * hd, qkv_bias)
    t.lin("attention", f"{p}.o_proj", h * hd, d, o_bias)
    t.add(attention=2 * hd if qk_norm else 0)


def _sizes(c: Fields) -> tuple[int, int, int, int]:
    return (c.int("hidden_size", "n_embd"), c.int("num_hidden_layers", "n_layer"),
            c.int("num_attention_heads", "n_head"), c.int("num_key_value_heads", required=False))


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
    hd, bias = _head_dim(t, d, h, hd_default), bool(t.c.flag("attention_bias"))
    _embed(t, d, tied, vocab)
    for i in range(n):
        p = f"model.layers.{i}"
        _gqa(t, f"{p}.self_attn", d, h, kv or h, hd, bias if qkv_b is None else qkv_b,
             bias if o_b is None else o_b, qk_norm)
        t.glu("mlp", f"{p}.mlp", d, t.c.int("intermediate_size"), bool(t.c.flag("mlp_bias")))
    t.add(norms=n * norms * d + d)


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


def _deepseek_layer(t: _Tally, i: int, d: int, indexer: bool = True) -> None:
    """One DeepSeek V2/V3/V3.2 decoder layer (vLLM deepseek_v2.py): MLA (q_a_proj, its norm,
    q_b_proj or one q_proj; kv_a_proj_with_mqa, its norm, kv_b_proj; o_proj), the V3.2
    indexer (wq_b, wk, k_norm LayerNorm, weights_proj) unless the layer shares an earlier one's
    (``indexer`` False), then a dense MLP or the MoE (routed, shared, router d -> E and, for
    noaux_tc routing, an e_score_correction_bias of E)."""
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
    t.add(attention=(qr or 0) + kvr, norms=2 * d)
    if c.has("index_n_heads") and indexer:
        ih, ihd = c.int("index_n_heads"), c.int("index_head_dim")
        t.lin("attention", f"{a}.indexer.wq_b", qr, ih * ihd)
        t.lin("attention", f"{a}.indexer.wk", d, ihd)
        t.lin("attention", f"{a}.indexer.weights_proj", d, ih)
        t.add(attention=2 * ihd)
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
        t.lin("router", f"{p}.mlp.gate", d, e)
        t.add(router=e if c.text("topk_method") == "noaux_tc" else 0)
    else:
        t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))


def _deepseek(t: _Tally) -> None:
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
        _deepseek_layer(t, i, d, i not in shared)
    t.add(norms=d)
    for i in range(n, n + (t.c.int("num_nextn_predict_layers", required=False,
                                   allow_zero=True) or 0)):
        m = t.fork()
        _deepseek_layer(m, i, d)
        m.lin("mlp", f"model.layers.{i}.eh_proj", 2 * d, d)
        m.lin("lm_head", f"model.layers.{i}.shared_head.head", d, v)
        m.add(norms=3 * d, embedding=v * d)


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


def _minimax_m2(t: _Tally) -> None:
    """vLLM minimax_m2.py: attention without biases, its q/k RMSNorm over all heads
    (``qk_norm_type`` "per_layer": h hd and kv hd weights); every layer a MoE block of
    ``num_local_experts`` experts (w1, w3: d -> i; w2: i -> d; i = ``intermediate_size``), a
    router d -> E and its score-correction bias (``use_routing_bias``); no shared expert
    (``shared_intermediate_size`` 0); two norms per layer. The MTP modules (``use_mtp``) load
    only for speculative decoding and are not counted."""
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
        t.lin("router", f"{p}.block_sparse_moe.gate", d, e)
        t.add(router=e if c.flag("use_routing_bias") else 0, norms=2 * d)
    t.add(norms=d)


def _mimo_v2_flash(t: _Tally) -> None:
    """vLLM 0.34.0 mimo_v2.py MiMoV2FlashDecoderLayer (lines 397-512): ``hybrid_layer_pattern``
    1 marks a sliding-window layer (``swa_num_attention_heads``, ``swa_num_key_value_heads``,
    ``swa_head_dim``, ``swa_v_head_dim``; a sink per query head when
    ``add_swa_attention_sink_bias``), 0 a full one (the model's heads and widths; sinks when
    ``add_full_attention_sink_bias``); q, k of ``head_dim`` and v of ``v_head_dim`` per head, o
    from the heads' values. ``moe_layer_freq`` lists 1 for a MoE layer (routed experts of
    ``moe_intermediate_size``, router d -> E without bias and its e_score_correction_bias of E;
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
        t.lin("attention", f"{p}.self_attn.k_proj", d, kvh * hd)
        t.lin("attention", f"{p}.self_attn.v_proj", d, kvh * vd)
        t.lin("attention", f"{p}.self_attn.o_proj", heads * vd, d)
        t.add(attention=heads if sinks else 0, norms=2 * d)
        if moe[i]:
            e, im = c.int("n_routed_experts"), c.int("moe_intermediate_size")
            t.experts(f"{p}.mlp", e, c.int("num_experts_per_tok"),
                      (("gate_proj", d, im), ("up_proj", d, im), ("down_proj", im, d)))
            t.lin("router", f"{p}.mlp.gate", d, e)
            t.add(router=e)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
    t.add(norms=d)


def _qwen3_next(t: _Tally) -> None:
    """vLLM qwen3_next.py + layers/mamba/gdn/qwen_gdn_linear_attn.py. Full attention every
    ``full_attention_interval`` layers (q doubled by the output gate, q/k norms); Gated
    DeltaNet elsewhere (in_proj_qkvz d -> 2 k_dim + 2 v_dim, in_proj_ba d -> 2 n_v, conv1d
    over 2 k_dim + v_dim channels, dt_bias, A_log, norm of d_v, out_proj); MoE with a
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
            into.add(mixers=(2 * kd + vd) * c.int("linear_conv_kernel_dim") + 2 * nv + dv)
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
    and with attention_k_eq_v no v_proj and num_global_key_value_heads), q/k norms, a dense
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
    ple = c.int("hidden_size_per_layer_input", required=False, allow_zero=True) or 0
    for i, kind in enumerate(types):
        p, full = f"model.language_model.layers.{i}", kind != "sliding_attention"
        hd = t.opt("global_head_dim", 512) if full else c.int("head_dim")
        alt = k_eq_v and full
        g = c.int("num_global_key_value_heads") if alt else kv
        if i < shared_from:
            _gqa(t, f"{p}.self_attn", d, h, g, hd, bias, bias, True, v_proj=not alt)
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
            t.add(router=d + e, norms=3 * d)
    if ple:
        t.add(embedding=c.int("vocab_size_per_layer_input") * n * ple, norms=ple)
        t.lin("mlp", "model.language_model.per_layer_model_projection", d, n * ple)
    t.add(norms=d)

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


def _glu_experts(t: _Tally, p: str, d: int, e: int, top_k: int, im: int,
                 names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")) -> None:
    """``e`` routed gated experts of width ``im`` under ``p`` (gate and up d -> im, down
    im -> d), ``top_k`` read per token."""
    g, u, dn = names
    t.experts(p, e, top_k, ((g, d, im), (u, d, im), (dn, im, d)))


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
    ``moe_intermediate_size``, ``n_shared_experts`` shared, router d -> E and its fp32
    e_score_correction_bias (E). The next-n layers (``num_nextn_predict_layers``) load only
    for speculative decoding: not counted."""
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
            t.lin("router", f"{p}.mlp.gate", d, e)
            t.add(router=e)
        else:
            t.glu("mlp", f"{p}.mlp", d, c.int("intermediate_size"))
    t.add(norms=2 * n * d + d)


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


def _minimax_m3(t: _Tally) -> None:
    """MiniMax-M3 as vLLM 0.34.0 builds it (vllm/models/minimax_m3/nvidia/model.py; the
    same tensors as transformers 5.25.0 modeling_minimax_m3_vl.py's text model). Per layer:
    attention without biases and per-head Gemma q/k norms (model.py:772-801); a sparse layer
    (``sparse_attention_config.sparse_attention_freq`` 1, or ``layer_types``
    "minimax_m3_sparse") adds the indexer's q (d -> index heads x index dim, split by TP)
    and k (d -> index dim, one head, whole on every rank), fused into qkv_proj, and their
    norms (model.py:898-947). A MoE layer (``moe_layer_freq`` 1, or ``mlp_layer_types``
    "sparse"; all of them when neither is given) holds ``num_local_experts`` experts of
    ``intermediate_size`` (gate_up, down), the fp32 router d -> E and its
    e_score_correction_bias, one shared MLP of ``intermediate_size`` (model.py:524-557); a
    dense layer a gated MLP of ``dense_intermediate_size``. Two norms a layer, a final one,
    an untied head. The MTP modules load only for speculative decoding: not counted."""
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
            t.lin("router", f"{q}.gate", d, e)
            t.add(router=e)
            t.lin("shared_experts", f"{q}.shared_experts.gate_up_proj", d, 2 * i)
            t.lin("shared_experts", f"{q}.shared_experts.down_proj", i, d)
        else:
            di = c.int("dense_intermediate_size")
            t.lin("mlp", f"{p}.mlp.gate_up_proj", d, 2 * di)
            t.lin("mlp", f"{p}.mlp.down_proj", di, d)
        t.add(norms=2 * d)
    t.add(norms=d)


def _glm4_moe_lite(t: _Tally) -> None:
    """GLM-4.7-Flash: DeepSeek V3's MLA and MoE (:func:`_deepseek`); vLLM 0.34.0
    glm4_moe_lite.py builds its MoE with glm4_moe.py's Glm4MoE, which always holds the
    router's e_score_correction_bias (glm4_moe.py:148-150), ``topk_method`` or not. Without
    ``first_k_dense_replace``, the leading "dense" entries of transformers'
    ``mlp_layer_types`` give it."""
    c, extra = t.c, {"topk_method": "noaux_tc"}
    types = c.data.get("mlp_layer_types")
    if not c.has("first_k_dense_replace") and isinstance(types, list):
        extra["first_k_dense_replace"] = next(
            (i for i, k in enumerate(types) if k != "dense"), len(types))
    t.c = Fields({**c.data, **extra}, c.prefix, c.outer)
    _deepseek(t)


def _layer_list(t: _Tally, key: str, n: int, allowed: set, default: list | None = None,
                trim: int = 0) -> list:
    """The per-layer list ``key`` (one of ``allowed`` for each of the ``n`` layers; a list
    ``trim`` entries longer, as files that pad it with their MTP layers write it, is cut to
    ``n``), or ``default`` (said in the notes) when absent."""
    c = t.c
    v = c.data.get(key)
    if v is None:
        if default is not None:
            t.notes.append(f"no {c.path(key)}: {t.family}'s default")
        return default
    if isinstance(v, list) and trim and len(v) == n + trim:
        v = v[:n]
    if not isinstance(v, list) or len(v) != n or any(x not in allowed for x in v):
        raise ValueError(f"{c.path(key)} must give one of {sorted(allowed, key=str)} for each "
                         f"of the {n} layers, got {describe(v)[:80]}")
    return v


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
    ``latent_moe_use_norm`` and routed_expert_up_proj (L -> d), replicated on every rank
    (model.py:479-510); E experts of ``moe_intermediate_size`` over L (else d; model.py:
    551-560); a dense layer a gated MLP of ``intermediate_size``. Two norms a layer; with
    ``attn_res_block_size`` (Kimi K3's attention residuals) two more norms and two
    projections d -> 1 a layer and the output's pair (model.py:822-846, 1089-1100); a final
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
            t.lin("mixers", f"{p}.self_attention_res_proj", d, 1)
            t.lin("mixers", f"{p}.mlp_res_proj", d, 1)
            t.add(norms=2 * d)
    t.add(norms=d)
    if res:
        t.lin("mixers", "model.output_attn_res_proj", d, 1)
        t.add(norms=d)


COUNTERS: dict[str, Callable[[_Tally], None]] = {
    **{k: _standard for k in _STANDARD}, "llama4": _llama4, "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek, "deepseek_v3": _deepseek, "deepseek_v32": _deepseek,
    # GLM-5: vLLM serves GlmMoeDsaForCausalLM with the DeepSeek V3.2 code (registry.py:126)
    "glm_moe_dsa": _deepseek,
    # Kimi K2 / K2.5's text model: vLLM serves it as DeepseekV2ForCausalLM (kimi_k25.py:376-380)
    "kimi_k2": _deepseek,
    "mimo_v2_flash": _mimo_v2_flash,
    # Qwen3.5 / 3.6 (vLLM qwen3_5.py): Qwen3-Next's layers, the Gated DeltaNet projections split
    # (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a) with the same sizes; dense or MoE
    "qwen3_5": _qwen3_next, "qwen3_5_moe": _qwen3_next,
    "minimax_m2": _minimax_m2,
    "gpt2": _gpt2, "falcon": _falcon, "nemotron_h": _nemotron_h, "qwen3_next": _qwen3_next,
    "nemotron-nas": _nemotron_nas, "gemma4": _gemma4, "deepseek_v4": _deepseek_v4,
    "qwen3_moe": _qwen3_moe, "qwen3_vl_moe": _qwen3_moe, "mixtral": _mixtral,
    "glm4_moe": _glm4_moe, "glm4v_moe": _glm4_moe, "jamba": _jamba,
    # GLM-4.7-Flash: DeepSeek V3's MLA and MoE (vLLM glm4_moe_lite.py subclasses deepseek_v2)
    "glm4_moe_lite": _glm4_moe_lite,
    # MiniMax-M3 (text file) and its VL wrapper's text model (minimax_m3_vl_text)
    "minimax_m3": _minimax_m3, "minimax_m3_vl": _minimax_m3,
    # issue 42: Laguna, Step 3.7 (flat file, or its step3p5 text model), Kimi Linear and
    # Kimi K3's text model
    "laguna": _laguna, "step3p7": _step3p7, "step3p5": _step3p7, "kimi_linear": _kimi_linear,
}

# vLLM dispatches on ``architectures``, not ``model_type`` (model_executor/models/
# registry.py): a file whose model_type kvlib does not know is counted by the family its
# architecture names. SGLang's DeepSeek V4 FP8 files say model_type "deepseek_ref" and
# DeepseekV4ForCausalLM (vLLM 0.34.0 registry.py:99).
BY_ARCHITECTURE = {"DeepseekV4ForCausalLM": "deepseek_v4"}


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
    d, p = v.int("vt_hidden_size", "hidden_size"), v.int("patch_size", required=False) or 14
    i = v.int("vt_intermediate_size", "intermediate_size")
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
            + v.int("vt_num_hidden_layers", "num_hidden_layers") * layer + norm + projector)


_TOWERS = {"gemma3": _siglip, "llama4": _llama4_vision, "gemma4": _gemma4_vision,
           "qwen3_vl": _qwen3_vl_vision, "qwen3_vl_moe": _qwen3_vl_vision,
           "qwen2_5_vl": _qwen2_5_vl_vision, "glm4v_moe": _glm4v_vision,
           "kimi_k3": _kimi_k3_vision}


def count_params(config) -> ParamCount:
    """Count the parameters of a config (path or dict) by its family's modeling code.

    Returns a :class:`ParamCount` (elements, exact ints). ValueError for a bad field (named
    with its value) or a ``model_type`` with no counter.
    """
    cfg = load_config(config)
    outer, c = Fields(cfg), Fields(cfg)
    if isinstance(cfg.get("text_config"), Mapping):
        c = Fields(cfg["text_config"], "text_config.", outer)
    family = (c.text("model_type") or outer.text("model_type")).removesuffix("_text")
    arch, notes = outer.data.get("architectures"), []
    if family not in COUNTERS and isinstance(arch, list) and arch and arch[0] in BY_ARCHITECTURE:
        notes.append(f"model_type {family!r} read by its architectures[0] {arch[0]!r}, as "
                     "vLLM dispatches (model_executor/models/registry.py)")
        family = BY_ARCHITECTURE[arch[0]]
    if family not in COUNTERS:
        raise ValueError(f"model_type {family or '(none)'!r}: kvlib has no parameter counter "
                         f"for it (counted: {', '.join(sorted(COUNTERS))})")
    t = _Tally(c, family, notes)
    COUNTERS[family](t)
    towers = "none"
    extra = [k for k in ("vision_config", "audio_config") if isinstance(cfg.get(k), Mapping)]
    if extra:
        tower = _TOWERS.get(outer.text("model_type"))
        if extra == ["vision_config"] and tower is not None:
            t.add(vision=tower(Fields(cfg["vision_config"], "vision_config.", outer),
                               c.int("hidden_size")))
            towers = "counted"
        else:
            towers = "text only"
            t.notes.append(f"{' and '.join(extra)} not counted: the text model only")
    active = sum(t.parts.values()) - t.parts["vision"] - t.idle
    m = t.mtp or _Tally(c, family)
    return ParamCount(family, dict(t.parts), active, tuple(t.linears), sum(m.parts.values()),
                      tuple(m.linears), towers, tuple(t.notes), tuple(t.fixed), tuple(m.fixed))
