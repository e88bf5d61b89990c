"""The book's live explorers: kvlib's formulas printed as JavaScript, and their data (issue 27).

One job: turn the SymPy expressions of :mod:`kvlib.core.formulas` (every attention kind of
``KINDS``, every state kind of ``STATES``) into a JavaScript file that a static page can run,
with no second, hand-typed copy of any formula. ``scripts/build_book.py`` writes
:func:`module_text` into the book's ``_static/kvlib_formulas.js``; the page's explorers
(``book/_static/kvlib_explorers.js``, plain JavaScript) call only what it defines.

Exact, as kvlib is: every formula is printed with SymPy's JavaScript printer
(``sympy.printing.jscode``) as a numerator and a denominator over JavaScript ``BigInt``
(integers of any size, so a count past 2^53 stays exact). A symbol that may be a fraction
(``b``: half a byte for int4) is passed as its own numerator and denominator, so::

    GQA.bytes_per_token = N_L N_g b (d_QK + d_V)
    ->  num: N_L*N_g*b__n*(d_QK + d_V)   den: b__d

The engines' rules (SGLang's and TensorRT-LLM's budgets, cells, tokens, sessions:
:mod:`kvlib.serving.engines.sglang`, :mod:`~kvlib.serving.engines.trtllm`) have floors,
ceilings, minima and maxima, which no numerator/denominator pair holds; :func:`js_exact` prints
each as one JavaScript expression over exact rationals (``R.floor(R.mul(v.B_KV, ...))``, the
helpers ``R`` the page supplies), and ``engines_sha256`` hashes them.

The file also holds the bundled models' layer groups, the KV dtypes and the sizes the
explorers offer (:func:`data`), and ``derivation_sha256``: the SHA-256 of every exported
expression (``sympy.srepr``), so a test can tell that the page's formulas are the ones
kvlib derives today (tests/book/test_explorers.py).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from fractions import Fraction

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from kvlib.core.decode_cost import PATHS
from kvlib.core.dtypes import DTYPE_BYTES, VLLM_EXACT_KV_DTYPES, bytes_per_element, kv_format
from kvlib.core.formulas import KINDS, STATES
from kvlib.core.notation import by_name
from kvlib.models.catalog import BUNDLED, attention_label, bundled_config, load_model
from kvlib.models.spec import EMPTY, GROWING, STATEFUL
from kvlib.serving.engines.vllm.defaults import (
    DEFAULT_OVERHEAD_BYTES,
    MEASURED_DEFAULTS,
    VLLM_DEFAULTS,
)
from kvlib.views.figures.models import KIND_COLORS
from kvlib.views.style import COLORS

__all__ = ["ATTENTION_QUANTITIES", "STATE_QUANTITIES", "ENGINE_QUANTITIES", "NOT_FOLLOWED",
           "sglang_unfollowed", "not_followed", "expressions",
           "derivation_sha256", "js_formula", "engine_expressions", "engines_sha256", "js_exact",
           "data", "module_text"]

ATTENTION_QUANTITIES = ("elements_per_token_layer", "bytes_per_token", "bytes_per_sequence",
                        "bytes_per_batch")
STATE_QUANTITIES = ("bytes_per_sequence", "bytes_per_batch")
# the engines' expressions the book's planner evaluates (kvlib.serving.engines.<engine>.<name>)
ENGINE_QUANTITIES = {
    "sglang": ("KV_BUDGET", "CELL_MHA", "CELL_MLA", "TOKENS", "FULL_TOKENS_SWA", "SWA_TOKENS",
               "MAX_RUNNING", "SESSIONS", "SESSIONS_SWA", "indexer.CELL_DSA_MLA_BF16",
               "indexer.CELL_DSA_MLA_FP8", "indexer.CELL_DSA_INDEXER", "state.STATE_PER_REQ",
               "state.MAMBA_CAP"),
    "trtllm": ("KV_BUDGET", "CELL_MHA", "CELL_MLA", "TOKENS", "SESSIONS", "W_MLA", "B_AFTER",
               "MAMBA_MAX_TOKENS"),
}


class _BigIntPrinter(JavascriptCodePrinter):
    """SymPy's JavaScript printer, with every integer a ``BigInt`` literal (``33n``) and
    integer powers as ``**``: BigInt arithmetic has no ``Math.pow`` and no mixing with
    Numbers. A rational constant is refused: the caller prints numerator and denominator."""

    def _print_Integer(self, expr):
        return f"{expr.p}n"

    _print_One = _print_Zero = _print_NegativeOne = _print_Integer

    def _print_Rational(self, expr):
        raise ValueError(f"a rational constant {expr} reached the BigInt printer")

    def _print_Half(self, expr):
        return self._print_Rational(expr)

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.args
        if not (exp.is_Integer and exp > 0):
            raise ValueError(f"only positive integer powers print as BigInt: {expr}")
        return f"({self._print(base)})**{exp.p}n"

    def _print_Symbol(self, expr):
        return f"v.{expr.name}"


def expressions() -> dict[str, sp.Expr]:
    """Every exported expression by its key ``"<kind>.<quantity>"`` ("GQA.bytes_per_sequence",
    "Mamba2.bytes_per_sequence"; a decode path of :data:`kvlib.core.decode_cost.PATHS`:
    ``"decode:<path>.flops"``, FLOPs of one decode step of one layer), in a fixed order."""
    out = {}
    for name, att in KINDS.items():
        for q in ATTENTION_QUANTITIES:
            out[f"{name}.{q}"] = getattr(att.symbolic, q)
    for name, state in STATES.items():
        for q in STATE_QUANTITIES:
            out[f"{name}.{q}"] = getattr(state.symbolic, q)
    for name, path in PATHS.items():
        out[f"decode:{name}.flops"] = path.flops
    return out


def derivation_sha256(exprs: dict[str, sp.Expr] | None = None) -> str:
    """SHA-256 of the exported expressions (their ``srepr``, by key): changes with the
    derivation, whatever the printer does."""
    exprs = expressions() if exprs is None else exprs
    text = "\n".join(f"{k} {sp.srepr(e)}" for k, e in exprs.items())
    return hashlib.sha256(text.encode()).hexdigest()


def js_formula(expr: sp.Expr) -> dict:
    """``{"args": [...], "fractional": [...], "num": "...", "den": "..."}`` for one expression.

    args: the symbol names it takes (kvlib's order); fractional: those passed as numerator and
    denominator (``b`` -> ``b__n``, ``b__d``); num, den: BigInt JavaScript expressions in
    ``v``, the object of arguments, whose quotient is the expression, exactly."""
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    fractional = [s for s in symbols if not by_name(s.name).integer]
    swap = {s: sp.Symbol(f"{s.name}__n", positive=True, integer=True)
            / sp.Symbol(f"{s.name}__d", positive=True, integer=True) for s in fractional}
    num, den = sp.fraction(sp.together(expr.subs(swap)))
    # a rational coefficient (DeepSeek V4's entry: 584 / 64 bytes an element) moves its
    # denominator to den, so both stay integer polynomials
    (cn, pn), (cd, pd) = num.as_content_primitive(), den.as_content_primitive()
    ratio = sp.Rational(cn) / sp.Rational(cd)
    num, den = sp.factor(pn) * ratio.p, sp.factor(pd) * ratio.q
    printer = _BigIntPrinter()
    return {"args": [s.name for s in symbols], "fractional": [s.name for s in fractional],
            "num": printer.doprint(num), "den": printer.doprint(den)}


def engine_expressions() -> dict[str, sp.Expr]:
    """The engines' expressions by key ``"<engine>.<NAME>"`` ("sglang.KV_BUDGET"), in order; a
    name ``"<module>.<NAME>"`` is read from that module of the engine's folder
    ("indexer.CELL_DSA_INDEXER": :mod:`kvlib.serving.engines.sglang.indexer`), keyed
    ``"<engine>.<NAME>"``."""
    import importlib

    def read(engine: str, name: str):
        module, _, attr = name.rpartition(".")
        path = f"kvlib.serving.engines.{engine}" + (f".{module}" if module else "")
        return getattr(importlib.import_module(path), attr)

    return {f"{e}.{name.rpartition('.')[2]}": read(e, name)
            for e, names in ENGINE_QUANTITIES.items() for name in names}


def engines_sha256(exprs: dict[str, sp.Expr] | None = None) -> str:
    """SHA-256 of the engines' exported expressions (``srepr``, by key)."""
    exprs = engine_expressions() if exprs is None else exprs
    text = "\n".join(f"{k} {sp.srepr(e)}" for k, e in exprs.items())
    return hashlib.sha256(text.encode()).hexdigest()


class _ExactPrinter:
    """An expression as one JavaScript expression over exact rationals: every value a
    ``[numerator, denominator]`` pair of BigInt, ``v.<symbol>`` the arguments, and ``R`` the
    page's helpers (add, mul, inv, pow, floor, ceil, min, max, mod, eq; a Piecewise as
    JavaScript's ``?:``). Anything else is refused."""

    _CALLS = {sp.Add: "add", sp.Mul: "mul", sp.Min: "min", sp.Max: "max",
              sp.floor: "floor", sp.ceiling: "ceil"}

    def doprint(self, e) -> str:
        if isinstance(e, sp.Piecewise):  # (value if condition else ...), the last one True
            *cases, (last, cond) = e.args
            if cond is not sp.true:
                raise ValueError(f"a Piecewise without a last True branch: {e}")
            out = self.doprint(last)
            for value, c in reversed(cases):
                out = f"({self.doprint(c)} ? {self.doprint(value)} : {out})"
            return out
        if isinstance(e, sp.Eq):
            return f"R.eq({self.doprint(e.lhs)}, {self.doprint(e.rhs)})"
        if isinstance(e, sp.Mod):
            return f"R.mod({self.doprint(e.args[0])}, {self.doprint(e.args[1])})"
        if e.is_Rational:
            return f"[{e.p}n, {e.q}n]"
        if e.is_Symbol:
            return f"v.{e.name}"
        if e.is_Pow:
            base, exp = e.args
            if not exp.is_Integer or exp == 0:
                raise ValueError(f"only integer powers print exactly: {e}")
            power = f"R.pow({self.doprint(base)}, {abs(exp.p)}n)" if abs(exp) > 1 \
                else self.doprint(base)
            return power if exp > 0 else f"R.inv({power})"
        for kind, name in self._CALLS.items():
            if isinstance(e, kind):
                return f"R.{name}({', '.join(self.doprint(a) for a in e.args)})"
        raise ValueError(f"{type(e).__name__} has no exact JavaScript form: {e}")


def js_exact(expr: sp.Expr) -> dict:
    """``{"args": [...], "value": "..."}``: the symbol names ``expr`` takes, and a JavaScript
    expression in ``v`` (arguments, rationals) and ``R`` (the page's rational helpers) whose
    value is ``expr``'s, exactly: floors, ceilings, minima and maxima included."""
    return {"args": sorted(s.name for s in expr.free_symbols),
            "value": _ExactPrinter().doprint(expr)}


def _number(x) -> str:
    """An exact number as text for the page: "2", "1/2"."""
    f = Fraction(x)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _rope() -> dict:
    """Notebook 04's explorer: DeepSeek V2's sizes, the three designs' decode paths, labels,
    the controls' choices and the value axes that span them all (kvlib.views.widgets.mla)."""
    from kvlib.views.widgets import mla

    designs = {k: next(name for name, q in PATHS.items() if q is p)
               for k, p in mla.DESIGNS.items()}
    return {"sizes": dict(mla.DEEPSEEK_V2), "designs": designs,
            "labels": dict(mla.LABELS), "legend": mla._LEGEND, "options": mla.OPTIONS,
            "start": dict(mla._START),
            "value_limits": mla.value_limits(*(mla.OPTIONS[k] for k in ("d_L", "d_R", "N_h")))}


def _group(g) -> dict:
    return {"kind": str(g.kind), "layers": g.layers, "attention": g.attention,
            "sizes": {k: _number(v) for k, v in g.sizes.items()}, "window": g.window,
            "ratio": g.ratio}



def _sm_key(gpu) -> str:
    """A GPU's compute capability as the page keys it ("90"; "none" off CUDA)."""
    cc = gpu.cuda_capability
    return "none" if cc is None else str(cc[0] * 10 + cc[1])


def _sm_gpus() -> dict:
    """One catalog GPU for each compute capability the catalog holds (the first of each)."""
    from kvlib.serving.gpus import CATALOG

    out = {}
    for gpu in CATALOG.values():
        out.setdefault(_sm_key(gpu), gpu)
    return out


def _weights_entry(spec, gpu, tp: int, w: str) -> dict:
    """The page's weights of ``spec`` at ``tp`` in weight dtype ``w`` on ``gpu``: per GPU, their
    label, what a decode step reads, the MoE layout; or the refusal."""
    from kvlib.serving.decode import read_params
    from kvlib.serving.engines.vllm.deployment import Deployment

    try:
        d = Deployment(spec, gpu, tp, tp, weight_dtype=w)
        weights = d.weights_bytes_per_gpu
    except ValueError as e:  # the engines' planner stops here too
        return {"error": str(e)}
    try:
        d.state_bytes_per_sequence_per_gpu  # noqa: B018 (raises for a bad split)
        layout = d.routing()
        return {"weights": weights, "label": d.weights_label,
                "read": d.decode_read_bytes_per_gpu(),
                "base": read_params(d.active, d.config),
                "bpw": _number(d.bytes_per_weight),
                "moe": None if layout is None else [
                    layout.experts, layout.per_token, layout.moe_layers, layout.expert_params]}
    except ValueError as e:  # vLLM's plan refuses; SGLang's and TRT-LLM's go on
        return {"error": str(e), "weights": weights, "label": d.weights_label}


def _planner() -> dict:
    """Notebook 06's planner: the GPU catalog, and what kvlib works out per model, weight dtype
    and TP before any context is chosen: the layer groups as one TP rank holds them
    (:func:`kvlib.serving.sharding.shard`, ``shard_state``), the weights per GPU, the weight
    bytes a decode step reads, the MoE layout for uniform routing, or the error kvlib raises
    for that combination (a TP the heads do not allow)."""
    from kvlib.serving.gpus import CATALOG
    from kvlib.serving.sharding import shard, shard_state
    from kvlib.views.widgets import capacity

    explorer = inspect.signature(capacity.planner_explorer).parameters
    gpus = {name: {"total": g.total_memory_bytes, "bandwidth": g.bandwidth,
                   "basis": "cuda" if g.cuda_total_bytes is not None else "datasheet",
                   "sm": None if g.cuda_capability is None else (
                       g.cuda_capability[0] * 10 + g.cuda_capability[1])}
            for name, g in CATALOG.items()}
    tps, weights = capacity.TP_OPTIONS, capacity.WEIGHT_OPTIONS
    models = {}
    for name in capacity.MODELS:
        spec = load_model(name)
        per_tp, per_weights = {}, {}
        for tp in tps:
            try:
                per_tp[tp] = {"groups": [_group(shard(g, tp)[0]) for g in spec.groups if g.grows],
                              "states": [_group(shard_state(g, tp)) for g in spec.groups
                                         if g.kind in STATEFUL]}
            except ValueError as e:
                per_tp[tp] = {"error": str(e)}
            for w in weights:
                # the weights per GPU depend on the GPU only through its MoE backend's padding
                # (compute capability: kvlib.models.quantization.mxfp4_moe_padding): one entry,
                # or one per compute capability ("by_sm") where they differ
                by_sm = {key: _weights_entry(spec, gpu, tp, w) for key, gpu in _sm_gpus().items()}
                first = next(iter(by_sm.values()))
                per_weights[f"{w} {tp}"] = first if all(e == first for e in by_sm.values()) \
                    else {"by_sm": by_sm}
        models[name] = {"tp": per_tp, "weights": per_weights,
                        "engines": _model_engines(spec, bundled_config(name))}
    start = {k: p.default for k, p in explorer.items()}
    start["gpu_mem_util"] = float(VLLM_DEFAULTS[start["vllm"]]["gpu_mem_util"])
    return {"gpus": gpus, "models": models, "tps": list(tps), "weight_dtypes": list(weights),
            "gpu_counts": list(capacity.GPU_COUNTS), "releases": _releases(), "start": start,
            "engines": _engines()}


def _model_engines(spec, config) -> dict:
    """One bundled model under SGLang and TensorRT-LLM (:mod:`kvlib.serving.engines`): the
    refusal of the model alone (``refuse``, checked before the KV dtype), else its layer groups
    as each engine's cell expression takes them (name, values by symbol, SGLang's pool), the
    window of SGLang's sliding-window pool, whether it is MLA (SGLang's default fraction), the
    page on the GPUs where it is not 1 token (or the refusal there), and TensorRT-LLM's refusal
    of its heads (``late``: checked after the KV dtype)."""
    from kvlib.serving import engines
    from kvlib.serving.gpus import CATALOG

    out = {}
    for engine in ("sglang", "trtllm"):
        # a pool kvlib plans before refuse_model (engine_plan takes DeepSeek V4 first) and the
        # page does not follow: the page says so (never a wrong number)
        unfollowed = sglang_unfollowed(spec, config) if engine == "sglang" else None
        if unfollowed:
            out[engine] = {"refuse": not_followed(spec.name, unfollowed)}
            continue
        try:
            engines.refuse_model(spec, config, engine)
        except ValueError as e:
            out[engine] = {"refuse": str(e)}
            continue
        if engine == "trtllm":
            try:
                groups = engines.trtllm.trtllm_groups(spec, config)
                out[engine] = {"groups": [[k, v] for k, v in groups],
                               **_trtllm_extras(spec, config)}
            except ValueError as e:
                out[engine] = {"late": str(e)}
            continue
        groups = engines.sglang.sglang_groups(spec, config)
        pages = {}
        for gpu in CATALOG.values():
            try:
                page, _ = engines.sglang.sglang_page(spec, gpu, config)
            except ValueError as e:
                pages[gpu.name] = str(e)
                continue
            if page != 1:
                pages[gpu.name] = page
        out[engine] = {
            "groups": [[k, v, pool] for _, k, v, pool in groups],
            "window": max((g.window for g, _, _, pool in groups if pool == "swa"), default=None),
            "mla": any(k == "CELL_MLA" for _, k, _, _ in groups), "pages": pages,
            # SGLang caps the prefill graphs of a "llama-2" model path (memory_hook.py:258-263)
            "llama2": "llama-2" in engines.sglang.model_path(spec).lower(),
            **_sglang_extras(spec, config)}
    return out


def _sglang_extras(spec, config) -> dict:
    """SGLang's terms beyond the layer groups' cells: a multimodal model's own default
    mem_fraction_static per GPU and TP (``fractions``: kvlib's ``sglang_fraction`` with the
    config, cut by the vision tower; a GPU that refuses every model is left to :func:`_engines`)
    and the budget it holds back per GPU
    (``reserve``, :mod:`kvlib.serving.engines.sglang.multimodal`); a state hybrid's state
    groups by ``STATE_PER_REQ``'s symbols, mamba_full_memory_ratio, the state slots a request
    holds and the TPs its state refuses (``state``, :mod:`kvlib.serving.engines.sglang.state`);
    a DSA model's latent and
    indexer fields by symbol, the KV bytes and GPUs its pool refuses (``dsa``,
    :mod:`kvlib.serving.engines.sglang.indexer`)."""
    from kvlib.models.spec import CacheKind
    from kvlib.serving.engines import sglang as sg
    from kvlib.serving.engines.common import arch
    from kvlib.serving.engines.sglang import indexer, multimodal, state
    from kvlib.serving.engines.vllm.deployment import Deployment
    from kvlib.serving.gpus import CATALOG
    from kvlib.views.widgets import capacity

    out = {}
    mla = any(g.kind == CacheKind.LATENT for g in spec.groups)
    arch_ = arch(config)
    states = [g for g in spec.groups if g.kind in STATEFUL]
    if states:  # refuse_model let them through: the state pool's (sglang.state)
        refuse_tp = {}
        for tp in capacity.TP_OPTIONS:
            try:
                for g in states:
                    state.state_per_request(g, config or {}, tp)
            except ValueError as e:
                refuse_tp[str(tp)] = str(e)
        # STATE_PER_REQ's values by symbol less TP: the shape SGLang builds for the group,
        # b_c 2 (its bfloat16 conv state, as state_per_request takes it), b_s the config's
        out["state"] = {"groups": [{**state._shape(g), "L_s": g.layers, "b_c": 2,
                                    "b_s": state.state_dtype_bytes(config or {})}
                                   for g in states],
                        "ratio": _number(state.MAMBA_FULL_MEMORY_RATIO),
                        "q": state.mamba_ratio(arch_), "refuse_tp": refuse_tp}
    if multimodal.is_multimodal(config):
        fractions = {}
        for gpu in CATALOG.values():
            try:
                fractions[gpu.name] = {str(tp): _number(sg.sglang_fraction(
                    gpu, tp, mla, sg.model_path(spec), config)[0]) for tp in capacity.TP_OPTIONS}
            except ValueError:  # the GPU's refusal, every model's: _engines' fractions hold it
                continue
        out["fractions"] = fractions
        out["reserve"] = {gpu.name: multimodal.mm_reserve(config, gpu)
                          for gpu in CATALOG.values()}
    if indexer.is_dsa(config):
        latent = next(g for g in spec.groups if g.attention in ("MLA", "MLA+RoPE"))
        index = next(g for g in spec.groups if g.attention == "Indexer")
        refuse_bytes = {}
        for b in sorted({v for v in map(sg.kv_bytes, ("bf16", "fp8", "fp32"))}):
            try:
                indexer.dsa_cells(spec, config, b)
            except ValueError as e:
                refuse_bytes[str(b)] = str(e)
        gpus = {}  # engine_plan's refusal of the DSA pool on SM100 and up, word for word
        for gpu in CATALOG.values():
            if gpu.cuda_capability is None or gpu.cuda_capability[0] < 10:
                continue
            for tp in capacity.TP_OPTIONS:
                try:
                    dep = Deployment(spec, gpu.name, tp, tp, kv_dtype="bf16")
                    sg.engine_plan(dep, 1024)
                except ValueError as e:
                    if "DSA" in str(e):
                        gpus[gpu.name] = str(e)
                        break
        out["dsa"] = {"latent": {"d_L": latent.sizes["d_L"], "d_R": latent.sizes.get("d_R", 0),
                                 "N_L": latent.layers},
                      "indexer": {"d_I": index.sizes["d_I"],
                                  "k_pool": config.get("index_kpool") or 1, "N_I": index.layers},
                      "refuse_bytes": refuse_bytes, "gpus": gpus}
    return out


# the SGLang pools kvlib plans that the book's planner (kvlib_explorers.js) does not follow yet
NOT_FOLLOWED = ("DeepSeek V4 pools",)


def sglang_unfollowed(spec, config) -> str | None:
    """The first of :data:`NOT_FOLLOWED` that SGLang's plan of ``spec`` takes, or None: the
    page refuses such a model under SGLang (:func:`not_followed`) instead of a wrong number."""
    try:  # DeepSeek V4's own pools (sglang.dsv4, where kvlib has it)
        from kvlib.serving.engines.sglang import dsv4
    except ImportError:
        dsv4 = None
    uses = {"DeepSeek V4 pools": dsv4 is not None and dsv4.is_v4(config)}
    return next((k for k in NOT_FOLLOWED if uses[k]), None)


def not_followed(model: str, pool: str) -> str:
    """The page's refusal of a model whose SGLang ``pool`` it does not follow."""
    from kvlib.serving.engines.sglang import RELEASE

    return (f"{model}: the book's planner does not follow SGLang {RELEASE}'s {pool} yet; "
            "`kvlib plan --engine sglang` does")


def _trtllm_extras(spec, config) -> dict:
    """TensorRT-LLM's terms beyond the cell: an MLA config's fields for the fp8 context-MLA
    workspace (``mla``, :mod:`kvlib.serving.engines.trtllm.workspace`) and a Nemotron-H's Mamba
    fields (``mamba``, :mod:`kvlib.serving.engines.trtllm.mamba`), by symbol name."""
    from kvlib.models.spec import CacheKind
    from kvlib.serving.engines.common import text_config
    from kvlib.serving.engines.trtllm import mamba

    out = {}
    t = text_config(config)
    keys = {"N_hq": "num_attention_heads", "d_rope": "qk_rope_head_dim",
            "d_nope": "qk_nope_head_dim", "d_vh": "v_head_dim"}
    if t.get("kv_lora_rank") is not None and all(isinstance(t.get(k), int)
                                                 for k in keys.values()):
        out["mla"] = {sym: t[k] for sym, k in keys.items()}
    if any(g.kind == CacheKind.MAMBA for g in spec.groups):
        p = mamba.mamba_params(spec.name, config)
        out["mamba"] = {k: v for k, v in p.items() if k != "attention_layers"}
    return out


def _engines() -> dict:
    """What SGLang's and TensorRT-LLM's plans take besides the model
    (:func:`kvlib.serving.engines.engine_plan` at its defaults): each KV dtype's bytes or its
    refusal; SGLang's default mem_fraction_static per GPU, TP and MLA or no (or the GPU's
    refusal), the memory in use before the weights, the sliding pool's ratio; TensorRT-LLM's
    float32 fraction, block, max batch and the rest of its profiling peak."""
    from kvlib.serving import engines
    from kvlib.serving.engines import sglang as sg
    from kvlib.serving.engines import trtllm as trt
    from kvlib.serving.engines.trtllm import workspace
    from kvlib.serving.gpus import CATALOG
    from kvlib.views.widgets import capacity

    def dtypes(kv_bytes):  # per value of the planner's KV dtype control
        out = {}
        for k in VLLM_EXACT_KV_DTYPES.values():
            try:
                out[k] = kv_bytes(kv_format(k).dtype)  # as Deployment hands it to the engine
            except ValueError as e:
                out[k] = str(e)
        return out

    fractions = {}
    for gpu in CATALOG.values():
        try:
            # [plain, MLA, plain "llama-2" path, MLA "llama-2" path] per TP
            fractions[gpu.name] = {
                str(tp): [_number(engines.sglang.sglang_fraction(gpu, tp, mla, path)[0])
                          for path in ("", "llama-2") for mla in (False, True)]
                for tp in capacity.TP_OPTIONS}
        except ValueError as e:
            fractions[gpu.name] = str(e)
    return {
        "names": dict(capacity.ENGINE_NAMES),
        "sglang": {"release": sg.RELEASE, "kv_bytes": dtypes(sg.kv_bytes),
                   "fractions": fractions, "in_use": MEASURED_DEFAULTS["in_use_bytes"],
                   "other": 0, "ratio": _number(sg.SWA_FULL_TOKENS_RATIO)},
        "trtllm": {"kv_bytes": dtypes(trt.kv_bytes), "fraction": _number(trt.DEFAULT_FRACTION),
                   "block": trt.TOKENS_PER_BLOCK, "max_batch": trt.MAX_BATCH_SIZE,
                   "other_peak": engines.trtllm.TRTLLM_OTHER_PEAK,
                   "fp8_mla_sms": sorted(workspace.FP8_CONTEXT_MLA_SMS),
                   "max_num_tokens": workspace.MAX_NUM_TOKENS},
    }


def _releases() -> dict:
    """Per vLLM release (the default first): its default utilization and block size, its budget
    rule, and the terms kvlib assumes for it, in bytes per GPU: 0.33.0's overhead; 0.34.0's
    memory in use at start-up, the margin max(1 GiB, 0.75 x peak), the resident non-KV memory
    and the peak kept free (:class:`~kvlib.serving.engines.vllm.deployment.Deployment`'s
    properties)."""
    from kvlib.serving.engines.vllm import budget as capacity_formulas

    out = {}
    for release, d in VLLM_DEFAULTS.items():
        r = {"gpu_mem_util": _number(d["gpu_mem_util"]), "block_size": d["block_size"],
             "rule": d["rule"]}
        if d["rule"] == "extensible":
            m = MEASURED_DEFAULTS
            peak = m["activation_peak_bytes"] + m["graph_pool_bytes"]
            r.update(in_use=m["in_use_bytes"], margin=capacity_formulas.margin(peak),
                     resident=m["non_torch_bytes"] + m["graph_pool_bytes"], peak=peak)
        else:
            r["overhead"] = DEFAULT_OVERHEAD_BYTES
        out[release] = r
    return out


def _compressed() -> dict:
    """Notebook 08's explorer: the (kind, bundled model) pairs of its sweep, in order
    (:data:`kvlib.views.figures.compressed.KINDS`), the slider's contexts, the KV dtypes it
    offers, one colour per kind, the kind every other is compared with, and the value axis
    (GiB) the notebook's figure keeps for every setting (read from its ``draw``)."""
    from matplotlib.figure import Figure

    from kvlib.views.figures import compressed as figure
    from kvlib.views.widgets import compressed as widget

    view = Figure()
    widget.draw(view, widget.compare())
    return {"kinds": [list(k) for k in figure.KINDS], "contexts": list(figure.CONTEXTS),
            "dtypes": list(figure.DTYPES), "colors": list(figure.COLORS),
            "reference": widget.REFERENCE,
            "value_limits": [float(v) for v in view.axes[0].get_ylim()]}


def data() -> dict:
    """What the explorers read besides the formulas: the bundled models (title, attention
    label, layer groups, longest context), the KV dtypes' bytes per element, the house colours,
    notebook 04's fixed sizes (:func:`_rope`), the planner's (:func:`_planner`) and notebook
    08's kinds (:func:`_compressed`)."""
    models = {}
    for name, bundled in BUNDLED.items():
        spec = load_model(name)
        models[name] = {
            "title": bundled.title,
            "label": attention_label(spec),
            "max_position_embeddings": spec.max_position_embeddings,
            "num_layers": spec.num_layers,
            "groups": [{"kind": str(g.kind), "layers": g.layers, "attention": g.attention,
                        "sizes": {k: _number(v) for k, v in g.sizes.items()},
                        "window": g.window, "ratio": g.ratio} for g in spec.groups],
        }
    return {
        "models": models,
        "kinds": {"growing": sorted(map(str, GROWING)), "stateful": sorted(map(str, STATEFUL)),
                  "empty": sorted(map(str, EMPTY))},
        "dtypes": {k: _number(v) for k, v in DTYPE_BYTES.items()},
        # the KV dtype control of notebooks 05 and 06's explorers: [value, vLLM's name, bytes]
        "kv_dtypes": [[v, name, _number(bytes_per_element(kv_format(v).dtype))]
                      for name, v in VLLM_EXACT_KV_DTYPES.items()],
        "colors": dict(COLORS),
        "kind_colors": {str(k): v for k, v in KIND_COLORS.items()},
        "rope": _rope(),
        "planner": _planner(),
        "compressed": _compressed(),
    }


def module_text() -> str:
    """The whole ``kvlib_formulas.js``: a classic script (it runs from ``file://``, where
    browsers refuse ES modules) that sets ``window.KVLIB_GENERATED``."""
    exprs = expressions()
    engine_exprs = engine_expressions()
    exact = ",\n  ".join(
        f"{json.dumps(k)}: {{args: {json.dumps(js_exact(e)['args'])},\n"
        f"    value: (v, R) => {js_exact(e)['value']}}}" for k, e in engine_exprs.items())
    formulas = {}
    for key, expr in exprs.items():
        f = js_formula(expr)
        args = ", ".join(json.dumps(a) for a in f["args"])
        frac = ", ".join(json.dumps(a) for a in f["fractional"])
        formulas[key] = (f"{{args: [{args}], fractional: [{frac}],\n"
                         f"    num: (v) => {f['num']},\n    den: (v) => {f['den']}}}")
    body = ",\n  ".join(f"{json.dumps(k)}: {v}" for k, v in formulas.items())
    return (
        "// Generated by kvlib.views.book_js at book build time from kvlib's SymPy expressions\n"
        "// (sympy.printing.jscode, BigInt). Do not edit: scripts/build_book.py writes it again.\n"
        "window.KVLIB_GENERATED = {\n"
        f"derivation_sha256: {json.dumps(derivation_sha256(exprs))},\n"
        f"sympy: {json.dumps(sp.__version__)},\n"
        f"formulas: {{\n  {body}\n}},\n"
        f"engines_sha256: {json.dumps(engines_sha256(engine_exprs))},\n"
        f"engine_formulas: {{\n  {exact}\n}},\n"
        f"data: {json.dumps(data(), sort_keys=True)}\n"
        "};\n"
    )
