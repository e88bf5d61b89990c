"""What every parameter counter shares (:mod:`kvlib.models.params`): the count's types
(:class:`Linear`, :class:`Fixed`, :class:`ParamCount`), the running tally a counter adds to,
and the pieces most families are made of (embedding and head, GQA attention, gated MLPs and
routed experts, per-layer lists)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kvlib.models.readers.fields import Fields, describe

PARTS = ("embedding", "lm_head", "attention", "mlp", "experts", "shared_experts", "router",
         "mixers", "norms", "vision")


@dataclass(frozen=True)
class Linear:
    """One linear layer's weight: ``count`` copies (routed experts) of (out_features,
    in_features), under its checkpoint module name (``model.layers.3.self_attn.q_proj``;
    experts as ``...mlp.experts.gate_proj``). Its bias is in ``ParamCount.parts``, not here.
    ``kv_heads``: for a K or V projection, the KV heads it holds (vLLM's QKVParallelLinear gives
    each rank max(1, heads / TP) of them, replicating a head over TP / heads ranks); 0 where
    the config's ``num_key_value_heads`` stands for every layer. ``bias``: it has one (of
    ``out_features`` a copy, counted in ``parts``)."""

    name: str
    part: str
    in_features: int
    out_features: int
    count: int = 1
    kv_heads: int = 0
    bias: bool = False

    @property
    def params(self) -> int:
        return self.count * self.in_features * self.out_features


@dataclass(frozen=True)
class Fixed:
    """A tensor (not a linear weight) that vLLM creates in a dtype of its own whatever the
    model's (fp32 4, int32 4), or a weight it builds unquantized (``quant_config=None``) in the
    model dtype whatever the checkpoint's format: ``elements`` of ``bytes_per`` bytes each
    under ``name``, kept whole on every TP rank when ``whole``, else split by TP; with
    ``heads`` (a vision tower's attention heads) split only where TP divides them, else whole
    on every rank (vLLM's ``is_vit_use_data_parallel``, model_executor/models/vision.py:
    141-156). In ``ParamCount.parts`` too (its ``part``)."""

    name: str
    part: str
    elements: int
    bytes_per: int
    whole: bool = True
    heads: int = 0

    def whole_at(self, tp: int) -> bool:
        """Whether every rank holds it whole at tensor parallelism ``tp``."""
        return self.whole or (self.heads > 0 and self.heads % tp != 0)


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts (elements) of one checkpoint.

    parts: elements per part (:data:`PARTS`); ``vision`` holds a multimodal wrapper's vision
    tower and projector (and Gemma 3n's audio tower and embedders) when ``towers ==
    "counted"``. towers: "none" (text model),
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

    def lin(self, part: str, name: str, i: int, o: int, bias: bool = False, count: int = 1,
            kv_heads: int = 0):
        """A Linear(i -> o) (weight (o, i), bias (o,)) x count under ``name``."""
        self.linears.append(Linear(name, part, i, o, count, kv_heads, bias))
        self.parts[part] += count * (i * o + (o if bias else 0))

    def keep(self, part: str, name: str, elements: int, bytes_per: int = 4,
             whole: bool = True, heads: int = 0) -> None:
        """A :class:`Fixed` tensor of ``elements`` (fp32 or int32 by default) under ``name``."""
        self.fixed.append(Fixed(name, part, elements, bytes_per, whole, heads))
        self.parts[part] += elements

    def router(self, name: str, d: int, e: int, fp32: bool = False) -> None:
        """A MoE router d -> E under ``name`` (``...gate``): a :class:`Linear` in the model
        dtype, or, where vLLM builds its GateLinear with ``params_dtype=torch.float32``, a
        :class:`Fixed` fp32 weight ``name.weight`` whole on every rank (never quantized)."""
        if fp32:
            self.keep("router", f"{name}.weight", d * e)
        else:
            self.lin("router", name, d, e)

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

    def unquantized_bytes(self) -> int:
        """Bytes per element of a weight vLLM builds with ``quant_config=None`` in the model
        dtype whatever the checkpoint's format: the config's dtype (bf16 when it gives none;
        an fp32 config as bf16, which vLLM's dtype "auto" loads it in)."""
        from kvlib.models.readers.state import model_dtype_bytes

        b = model_dtype_bytes(self.c, [])
        return 2 if b == 4 else b

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
    o (h hd -> d), per-head q/k RMSNorm weights (hd each, norms: whole on every rank) when
    ``qk_norm``."""
    t.lin("attention", f"{p}.q_proj", d, q_mult * h * hd, qkv_bias)
    for name in ("k_proj", "v_proj") if v_proj else ("k_proj",):
        t.lin("attention", f"{p}.{name}", d, kv * hd, qkv_bias, kv_heads=kv)
    t.lin("attention", f"{p}.o_proj", h * hd, d, o_bias)
    t.add(norms=2 * hd if qk_norm else 0)  # RMSNorm(head_dim): whole on every rank


def _sizes(c: Fields) -> tuple[int, int, int, int]:
    return (c.int("hidden_size", "n_embd"), c.int("num_hidden_layers", "n_layer"),
            c.int("num_attention_heads", "n_head"), c.int("num_key_value_heads", required=False))


def _glu_experts(t: _Tally, p: str, d: int, e: int, top_k: int, im: int,
                 names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj")) -> None:
    """``e`` routed gated experts of width ``im`` under ``p`` (gate and up d -> im, down
    im -> d), ``top_k`` read per token."""
    g, u, dn = names
    t.experts(p, e, top_k, ((g, d, im), (u, d, im), (dn, im, d)))


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
