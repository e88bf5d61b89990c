"""Write docs/formula_sheet.md: every cache and state formula, generated from kvlib's derivations.

Each formula is the SymPy expression kvlib derived from its table, printed as LaTeX; each
worked number is that formula's generated function applied to a bundled model's sizes. A test
(tests/test_formula_sheet.py) regenerates the sheet and compares, so it cannot drift.

Usage: python scripts/formula_sheet.py [OUT]   (default: docs/formula_sheet.md)
"""

from __future__ import annotations

import sys
from pathlib import Path

import sympy as sp

from kvlib.core.compression import overlap
from kvlib.core.formulas import GQA, KINDS, STATES
from kvlib.core.notation import ALL_SYMBOLS, N_g, by_name
from kvlib.core.units import auto_unit, describe
from kvlib.models.catalog import BUNDLED, bundled_config, load_model
from kvlib.serving.engines.vllm import budget as cf
from kvlib.serving.engines.vllm.defaults import DEFAULT_GPU_MEM_UTIL
from kvlib.serving.engines.vllm.deployment import Deployment

ROOT = Path(__file__).resolve().parent.parent


def _v4_group(name: str, attention: str, ratio: int | None = None):
    """A bundled DeepSeek V4's group, as kvlib reads its config: its windows (``"V4 entry"``,
    no ratio), its compressed entries of ``ratio``, or the state of their own compressors
    (``"Compressor state"``: c_o x m slots, c_o x d_c wide; the indexer's compressor apart)."""
    groups = load_model(name).groups
    window = next(g for g in groups if g.attention == "V4 entry" and g.window is not None)
    if ratio is None:
        return window
    entries = next(g for g in groups if g.attention == "V4 entry" and g.ratio == ratio)
    if attention == "V4 entry":
        return entries
    c_o = overlap(ratio)
    return next(g for g in groups if g.attention == attention and g.window == c_o * ratio
                and g.sizes["d_c"] == c_o * entries.sizes["d_c"])


def _v4_windows(label: str, name: str):
    """An example: a bundled DeepSeek V4's windows, its sizes in ``label``'s fields."""
    def example() -> tuple[str, dict]:
        g = _v4_group(name, "V4 entry")
        sizes = {"N_L": g.layers, **g.sizes}
        return label.format(**sizes), sizes
    return example


def _v4_compressors(label: str, name: str, ratio: int):
    """An example: the compressors of a bundled DeepSeek V4's m = ``ratio`` layers. kvlib's
    group holds one row's width, c_o x head_dim; the sheet's d_c is head_dim (the entry's
    width), so the example gives d_c and c_o apart."""
    def example() -> tuple[str, dict]:
        g = _v4_group(name, "Compressor state", ratio)
        c_o = overlap(ratio)
        d_c = g.sizes["d_c"] // c_o
        sizes = {"N_L": g.layers, **g.sizes}  # kvlib's d_c here is the row, c_o x head_dim
        rows = f"{c_o} x {d_c} = {c_o * d_c:,}" if c_o > 1 else f"{d_c}"
        return label.format(m=ratio, N_L=g.layers, d_c=d_c, c_o=c_o, rows=rows,
                            kept=c_o * ratio), sizes
    return example


# kind -> [(label, sizes)] for two worked numbers; sizes of a bundled model come from its groups
ATTENTION_EXAMPLES = {
    "MHA": [("Llama 3 70B read as MHA (64 KV heads)", dict(N_L=80, N_h=64, d_QK=128, d_V=128)),
            ("GPT-2 (124M)", "gpt2")],
    "GQA": [("Llama 3.1 70B", "llama-3.1-70b"), ("Qwen3 32B", "qwen3-32b")],
    "MQA": [("Falcon 7B", "falcon-7b"), ("Llama 3 70B with one KV head",
                                          dict(N_L=80, N_h=64, d_QK=128, d_V=128))],
    "MLA": [("DeepSeek V2, latent alone", dict(N_L=60, d_L=512)),
            ("DeepSeek V2 Lite's shape (27 layers, latent 512), latent alone",
             dict(N_L=27, d_L=512))],
    "MLA+RoPE": [("DeepSeek V2", "deepseek-v2"), ("GLM-5", "glm-5")],
    "Indexer": [("DeepSeek V3.2", "deepseek-v3.2"), ("a 256-wide indexer key, 61 layers",
                                                     dict(N_L=61, d_I=256, b=1))],
    # DeepSeek V4 (issue 33; configs in tests/fixtures/configs/corpus-2026.json.gz)
    "V4 entry": [_v4_windows("DeepSeek V4-Flash's windows, {N_L} layers (head_dim {d_c}, RoPE "
                             "{d_R})", "deepseek-v4-flash"),
                 _v4_windows("DeepSeek V4-Pro's windows, {N_L} layers", "deepseek-v4-pro")],
    "Compressor state": [_v4_compressors("DeepSeek V4-Flash's m = {m} compressors, {N_L} layers "
                                         "(d_c = {d_c}, c_o = {c_o}: rows {rows} values wide, "
                                         "at most {kept} kept)", "deepseek-v4-flash", ratio)
                         for ratio in (4, 128)],
    # Inkling (issue 31): vLLM 0.34.0's conv window, 8 KV heads x 2,048 (1,792 padded), bf16;
    # Inkling 2's in transformers 5.25.0, 2 x 8 x 128 + 2 x 4,608 values in float32. No Inkling
    # config is bundled: these are the classes' defaults (tests/test_inkling.py reads them)
    "Short-conv window": [("InklingTextConfig's defaults, 66 layers (d_w = 16,384), bf16",
                           dict(N_L=66, d_w=16384, b=2)),
                          ("Inkling2TextConfig's defaults, 48 layers (d_w = 11,264), float32",
                           dict(N_L=48, d_w=11264, b=4))],
}
STATE_EXAMPLES = {
    "Mamba": [("JambaConfig's defaults (28 Mamba layers, d_inner 8,192, d_state 16), bf16",
               dict(N_L=28, d_inner=8192, d_conv=4, d_state=16, b_c=2, b_s=2)),
              ("the same with a float32 SSM state (--mamba-ssm-cache-dtype float32)",
               dict(N_L=28, d_inner=8192, d_conv=4, d_state=16, b_c=2, b_s=4))],
    "Mamba2": [("Nemotron-H 56B", "nemotron-h-56b"), ("Nemotron 3 Nano 30B-A3B",
                                                       "nemotron-3-nano-30b-a3b")],
    "Gated DeltaNet": [("Qwen3-Next 80B-A3B", "qwen3-next-80b-a3b"),
                       ("Qwen3.5 27B (float32 recurrent state, as its config asks)",
                        "qwen3.5-27b")],
    "Lightning attention": [("70 layers of 64 heads of 128, bf16",
                             dict(N_L=70, N_h=64, d_QK=128, d_V=128, b_s=2)),
                            ("the same in float32", dict(N_L=70, N_h=64, d_QK=128, d_V=128,
                                                          b_s=4))],
    "Short convolution": [("10 layers, d_in 1,024, kernel 3, bf16",
                           dict(N_L=10, d_in=1024, d_conv=3, b_c=2)),
                          ("22 layers, d_in 2,048, kernel 3, bf16",
                           dict(N_L=22, d_in=2048, d_conv=3, b_c=2))],
}


# Capacity (notebook 06): (label, model, GPU, GPUs, TP, context, options) for two plans each.
CAPACITY_EXAMPLES = [
    ("Llama 3.1 70B on 4 x H200, TP 4, 131,072 tokens (blog post A's node; the post sizes "
     "Llama 3 70B on one 564 GB pool)",
     "llama-3.1-70b", "H200", 4, 4, 131_072, {}),
    ("Qwen3 32B on 2 x H100 80GB, TP 2, fp8 cache, 65,536 tokens",
     "qwen3-32b", "H100-80GB", 2, 2, 65_536, {"kv_dtype": "fp8"}),
]
_DECIMAL = {"KiB": "KB", "MiB": "MB", "GiB": "GB", "TiB": "TB"}


def _readable(n_bytes: int) -> str:
    """Exact bytes, then the binary and decimal units a projector reads (870 MiB, not
    891,216 KiB)."""
    unit = auto_unit(n_bytes)
    return f"{n_bytes:,} B" if unit == "B" else describe(n_bytes, unit, _DECIMAL[unit])


def _capacity() -> list[str]:
    """Notebook 06's capacity formulas, as SymPy expressions built on the GQA cache formula,
    each with two plans from kvlib's planner that the formula must reproduce: vLLM 0.34.0's
    budget (the default release) and, labelled, 0.33.0's."""
    TP = by_name("TP").symbol
    per_gpu = GQA.symbolic.bytes_per_token.subs(N_g.symbol, N_g.symbol / sp.Min(TP, N_g.symbol))
    u, M, W, O, S, R, B, K, BW = (cf.SYMBOLS[k] for k in ("u", "M", "W", "O", "S", "R", "B",
                                                          "K", "BW"))
    M0, OR, Mpk, Mgr, Mfl = (cf.SYMBOLS[k] for k in ("M0", "OR", "P", "T", "F"))
    plans = [(label, Deployment(load_model(m), gpu, n, tp, **o).plan(T), tp, T)
             for label, m, gpu, n, tp, T, o in CAPACITY_EXAMPLES]
    old = [(label, Deployment(load_model(m), gpu, n, tp, vllm="0.33.0", **o).plan(T), tp, T)
           for label, m, gpu, n, tp, T, o in CAPACITY_EXAMPLES]
    assert all(p.vllm == "0.34.0" for _, p, _, _ in plans)  # the default release
    blocks = {p.vllm: p.block_size for _, p, _, _ in plans + old}
    lines = ["## Capacity: bytes per GPU, sessions, decode time (notebook 06)", "",
             "vLLM's accounting as kvlib's planner follows it (`kvlib.serving`, "
             "[capacity.md](capacity.md)): release 0.34.0, the default, and 0.33.0's rule "
             "where it differs, labelled. Each worked number is a `kvlib plan` that the "
             "formula reproduces exactly.", "",
             "### Cache per GPU under tensor parallelism", "",
             f"$$\\text{{bytes per token per GPU}} = {sp.latex(per_gpu)}$$", "",
             "Symbols: as above; $TP$ tensor-parallel size. Each GPU holds "
             r"$N_g / TP$ KV heads, and one whole head once $TP \ge N_g$ (vLLM replicates "
             "it). An MLA latent is not split: every GPU holds all of it.", ""]
    for label, plan, tp, T in plans:
        sizes = {"N_L": load_model(plan.model).groups[0].layers,
                 **load_model(plan.model).groups[0].sizes}
        b = 1 if plan.kv_dtype == "fp8" else 2
        value = per_gpu.subs({sp.Symbol(k, positive=True, integer=True): v
                              for k, v in sizes.items()} | {TP: tp})
        value = int(sp.sympify(value).subs({s: sizes.get(s.name, b) for s in value.free_symbols}))
        assert value * T == plan.kv_bytes_per_sequence_per_gpu, (label, value)
        lines.append(f"- {label}: {_readable(value)} per token per GPU")
    session = ("$S$ one session's bytes on one GPU: the cache per token per GPU above times its "
               "tokens, rounded up to whole blocks of {block} (vLLM {release}'s default block "
               "size), plus any constant state")
    lines += ["", "### Sessions per TP group", "",
              f"$$B_{{max}} = {sp.latex(cf.SESSIONS_EXTENSIBLE, order='none')}$$", "",
              "vLLM 0.34.0's extensible KV cache, on by default on CUDA and ROCm: the cache is "
              "sized after warmup and CUDA-graph capture from the memory measured then. "
              f"Symbols: $u$ `gpu_memory_utilization` ({float(plans[0][1].gpu_mem_util):g} "
              "unless set; a smaller value caps the cache); $M$ the memory CUDA reports for one "
              "GPU, not the datasheet's; $M_0$ the memory in use when vLLM starts; $M_{pk}$ the "
              "transient peak it keeps free (the profiling peak plus the CUDA-graph estimate); "
              "$M_{gr}$ the growth of torch's reservation over a sizing step; $M_{fl}$ the "
              f"margin's floor ({cf.MARGIN_FLOOR_BYTES // 2**30} GiB on CUDA); $W_{{GPU}}$ the "
              "weights one GPU holds; $O_R$ the non-KV memory resident after warmup besides "
              "the weights (non-torch memory, the CUDA-graph pool); "
              + session.format(block=blocks["0.34.0"], release="0.34.0") + ". `kvlib plan` "
              "assumes $M_0$, $M_{pk}$ and $O_R$ and says so (`assumed:` lines); "
              "`kvlib.serving.engines.vllm.budget` holds the expression.", ""]
    for label, plan, _, _ in plans:
        growth = 0  # kvlib assumes torch's reservation does not grow past the peak
        value = cf.SESSIONS_EXTENSIBLE.subs({
            u: plan.gpu_mem_util, M: plan.total_memory_bytes_per_gpu, M0: plan.in_use_bytes_per_gpu,
            W: plan.weights_bytes_per_gpu, OR: plan.resident_bytes_per_gpu,
            Mpk: plan.peak_bytes_per_gpu, Mgr: growth, Mfl: cf.MARGIN_FLOOR_BYTES,
            S: plan.kv_bytes_per_sequence_per_gpu})
        assert value == plan.max_sequences_per_replica, (label, value)
        assert plan.usable_bytes_per_gpu - plan.weights_bytes_per_gpu - \
            plan.resident_bytes_per_gpu - plan.peak_bytes_per_gpu == plan.kv_budget_bytes_per_gpu
        lines.append(f"- {label}: M = {_readable(plan.total_memory_bytes_per_gpu)}, "
                     f"M_0 = {_readable(plan.in_use_bytes_per_gpu)}, M_pk = "
                     f"{_readable(plan.peak_bytes_per_gpu)} (margin "
                     f"{_readable(plan.margin_bytes_per_gpu)}); min(ceil("
                     f"{float(plan.gpu_mem_util):g} M), M - M_0 - margin) = "
                     f"{plan.usable_bytes_per_gpu:,} B; minus the weights "
                     f"({_readable(plan.weights_bytes_per_gpu)}), O_R "
                     f"({_readable(plan.resident_bytes_per_gpu)}) and M_pk leaves "
                     f"{_readable(plan.kv_budget_bytes_per_gpu)}; one session is "
                     f"{_readable(plan.kv_bytes_per_sequence_per_gpu)} per GPU: "
                     f"**{value}** sessions")
    lines += ["", "### Sessions per TP group, vLLM 0.33.0's rule", "",
              f"$$B_{{max}} = {sp.latex(cf.SESSIONS, order='none')}$$", "",
              "The profiled budget of vLLM up to 0.33.0 (`kvlib plan --vllm 0.33`). Symbols: $u$ "
              f"`gpu_memory_utilization` ({float(DEFAULT_GPU_MEM_UTIL)} unless set, 0.20.0 to "
              "0.33.0); $M$ and $W_{GPU}$ as above; $O$ the non-KV memory vLLM measures at "
              "start-up (activations, CUDA graphs, NCCL buffers: `kvlib plan` takes 4 GiB "
              "unless told); " + session.format(block=blocks["0.33.0"], release="0.33.0") + ".",
              ""]
    for label, plan, _, _ in old:
        value = cf.SESSIONS.subs({u: plan.gpu_mem_util, M: plan.total_memory_bytes_per_gpu,
                                  W: plan.weights_bytes_per_gpu, O: plan.overhead_bytes_per_gpu,
                                  S: plan.kv_bytes_per_sequence_per_gpu})
        assert value == plan.max_sequences_per_replica, (label, value)
        lines.append(f"- {label}: M = {_readable(plan.total_memory_bytes_per_gpu)}; "
                     f"ceil({float(plan.gpu_mem_util):g} M) = "
                     f"{plan.usable_bytes_per_gpu:,} B; minus the weights "
                     f"({_readable(plan.weights_bytes_per_gpu)}) and the overhead "
                     f"({_readable(plan.overhead_bytes_per_gpu)}) leaves "
                     f"{_readable(plan.kv_budget_bytes_per_gpu)}; one session is "
                     f"{_readable(plan.kv_bytes_per_sequence_per_gpu)} per GPU: "
                     f"**{value}** sessions")
    lines += ["", "### Decode step, a lower bound", "",
              rf"$$t_{{step}} \ge {sp.latex(cf.STEP, order='none')}$$", "",
              "Symbols: $R_W$ the weight bytes one GPU reads per step (not the input "
              "embedding, a lookup of one row per token; an MoE reads only the experts its "
              "batch routes to); $B$ the sessions decoding together; $R_{KV}$ one session's cache "
              "bytes read per step on one GPU; $BW$ the "
              "GPU's memory bandwidth (bytes/s, its datasheet). Reading is the floor: the "
              "arithmetic and the kernels' overheads only add to it. The batch is the sessions "
              "vLLM 0.34.0 holds.", ""]
    for label, plan, _, _ in plans:
        n = plan.max_sequences_per_replica
        value = cf.STEP.subs({R: plan.decode_weights_read_bytes_per_gpu, B: n,
                              K: plan.live_kv_bytes_per_sequence_per_gpu,
                              BW: plan.bandwidth_bytes_per_second})
        assert abs(float(value) - plan.decode_step_seconds_lower_bound) < 1e-12, label
        read = int(value * plan.bandwidth_bytes_per_second)
        lines.append(f"- {label}, {n} sessions: reads {_readable(read)} per step at "
                     f"{plan.bandwidth_bytes_per_second / 1e12:g} TB/s: at least "
                     f"{float(value) * 1e3:.1f} ms")
    return lines + [""]


def _v4_layer(name: str, ratio: int, T: int) -> int:
    """One layer of ``ratio`` of a bundled DeepSeek V4, from kvlib's reading of its config: its
    window, its compressed entries and its own compressor's state (the indexer apart)."""
    return sum(g.bytes_per_sequence(T, 1) // g.layers
               for g in (_v4_group(name, "V4 entry"), _v4_group(name, "V4 entry", ratio),
                         _v4_group(name, "Compressor state", ratio)))


def _v4_sizes(name: str) -> dict:
    """One layer's sizes of a bundled DeepSeek V4 for :mod:`kvlib.core.compression`: its entry
    (d_c, d_R) and window (N_W), read from its window group."""
    window = _v4_group(name, "V4 entry")
    return dict(d_c=window.sizes["d_c"], d_R=window.sizes["d_R"], N_W=window.window, N_L=1)


def _compressed() -> list[str]:
    """Notebook 08's three ideas (:mod:`kvlib.core.compression`), each formula with two worked
    numbers that kvlib's reading of a bundled model reproduces."""
    from kvlib.core import compression as C

    def at(expr, **values):
        return expr.subs({by_name(k).symbol: v for k, v in values.items()})

    lines = ["## Compressed, shared and selected caches (notebook 08)", "",
             "DeepSeek V4's compressed layers (its technical report; as vLLM 0.34.0 stores them), "
             "an indexer's reads (DeepSeek V3.2), and cross-layer KV sharing (Gemma 3n), derived "
             "in `kvlib.core.compression` from the tables above.", "",
             "### One compressed layer, one sequence", "",
             f"$$\\text{{bytes per sequence}} = {sp.latex(C.COMPRESSED_LAYER)}$$", "",
             f"Symbols: {_symbols(C.COMPRESSED_LAYER)}. Window, entries, compressor state; the "
             "indexer of an $m = 4$ layer comes on top (the Indexer row, one key per 4 tokens).",
             ""]
    for label, name, ratio, T in (("DeepSeek V4-Flash, an m = 4 layer, 131,072 tokens",
                                   "deepseek-v4-flash", 4, 131_072),
                                  ("DeepSeek V4-Pro, an m = 128 layer, 1,048,576 tokens",
                                   "deepseek-v4-pro", 128, 1 << 20)):
        value = int(at(C.COMPRESSED_LAYER, **_v4_sizes(name), m=ratio, c_o=overlap(ratio),
                       N_KV=T))
        assert value == _v4_layer(name, ratio, T), (label, value)
        lines.append(f"- {label} (`{name}`): {_readable(value)}")
    limit = C.COMPRESSED_LIMIT
    lines += ["", "### What one more token costs, past the window", "",
              f"$$\\lim_{{N_{{KV}} \\to \\infty}} \\frac{{\\text{{bytes}}}}{{N_{{KV}}}} = "
              f"{sp.latex(limit)}$$", "", "The entry's bytes over m, per layer.", ""]
    flash = load_model("deepseek-v4-flash").groups
    for ratio in sorted(g.ratio for g in flash if g.attention == "V4 entry" and g.ratio):
        value = at(limit, **_v4_sizes("deepseek-v4-flash"), m=ratio)
        lines.append(f"- DeepSeek V4, m = {ratio}: {float(value):g} B per token per layer")
    lines += ["", "### Selection: bytes one decode step reads", "",
              f"$$\\text{{dense}} = {sp.latex(C.DENSE_READS)}, \\quad "
              f"\\text{{selected}} = {sp.latex(C.SELECTED_READS)}$$", "",
              f"Symbols: {_symbols(C.SELECTED_READS)}. Memory does not shrink: every entry stays "
              "cached, and the indexer keys add "
              f"${sp.latex(C.SELECTED_MEMORY_RATIO)}$ times the memory.", ""]
    latent, indexer = (next(g for g in load_model("deepseek-v3.2").groups if g.attention == a)
                       for a in ("MLA+RoPE", "Indexer"))
    assert latent.layers == indexer.layers  # one indexer per MLA layer: one N_L
    v32 = dict(**latent.sizes, d_I=indexer.sizes["d_I"], b=2, N_L=latent.layers,
               N_top=bundled_config("deepseek-v3.2")["index_topk"])
    for T in (131_072, 1 << 20):
        dense, sel = at(C.DENSE_READS, **v32, N_KV=T), at(C.SELECTED_READS, **v32, N_KV=T)
        lines.append(f"- DeepSeek V3.2 (`deepseek-v3.2`), bf16 latent, {T:,} tokens: "
                     f"{_readable(int(sel))} instead of {_readable(int(dense))}")
    lines += ["", "### Sharing: memory divided, reads not", "",
              f"$$\\frac{{\\text{{unshared}}}}{{\\text{{shared}}}} = "
              f"{sp.latex(C.SHARED_MEMORY_RATIO)}$$", "",
              f"Symbols: {_symbols(C.SHARED)}. A decode step still reads one cache per layer.",
              ""]
    config = load_model("gemma-3n-e4b")
    shared = sum(g.layers for g in config.groups if str(g.kind) == "shared")
    layers = sum(g.layers for g in config.groups)
    for T in (4096, 8192):  # not 32K: exercise 08.3 asks for it
        kept = config.total_bytes_per_sequence(T, 2)
        lines.append(f"- Gemma 3n E4B (`gemma-3n-e4b`, {shared} of {layers} layers shared), "
                     f"{T:,} tokens: "
                     f"{_readable(kept)} per sequence")
    return lines + [""]


def _compressor_note() -> str:
    """What one compressor row holds, its widths read from DeepSeek V4-Flash's groups: c_o x
    head_dim for the attention's compressors, c_o x index_head_dim for the indexer's."""
    rows = [g for g in load_model("deepseek-v4-flash").groups if g.attention == "Compressor state"]
    w4, w128 = (_v4_group("deepseek-v4-flash", "Compressor state", r).sizes["d_c"]
                for r in (4, 128))
    indexer = next(g.sizes["d_c"] for g in rows if g.window == overlap(4) * 4
                   and g.sizes["d_c"] != w4)
    d_I = next(g.sizes["d_I"] for g in load_model("deepseek-v4-flash").groups
               if g.attention == "Indexer")
    assert indexer == overlap(4) * d_I
    return (" Stored as bytes (fp32): b = 1. One row is a token's projected values and its gate "
            "scores, $c_o d_c$ fp32 values each: $c_o d_c$ = "
            f"{overlap(4)} x {w4 // overlap(4)} = {w4:,} wide for $m = 4$ (whose windows "
            f"overlap), {w128:,} for $m = 128$; the indexer of an $m = 4$ layer has a compressor "
            f"of its own, rows $c_o d_I$ = {overlap(4)} x {d_I} = {indexer} wide (DeepSeek V4's "
            "compressor as vLLM 0.34.0 keeps it; `kvlib.core.compression`).")


def _group_sizes(name: str, kind: str) -> dict:
    """The sizes of the model's group read with this formula (or its first attention group:
    GPT-2 and Falcon are read as GQA with N_g = N_h or 1)."""
    groups = [g for g in load_model(name).groups if g.attention == kind] or \
        [g for g in load_model(name).groups if g.grows]
    return {"N_L": groups[0].layers, **groups[0].sizes}


def _sizes(example, kind: str) -> tuple[str, dict]:
    if callable(example):  # a bundled model's group other than its first of this kind
        return example()
    label, sizes = example
    if isinstance(sizes, str):
        return f"{label} (`{sizes}`, {BUNDLED[sizes].repo})", _group_sizes(sizes, kind)
    return label, dict(sizes)


def _symbols(expr) -> str:
    used = {s.name for s in expr.free_symbols}
    return "; ".join(f"${sp.latex(s.symbol)}$ {s.meaning} ({s.unit}; {s.source})"
                     for s in ALL_SYMBOLS if s.name in used)


def sheet() -> str:
    lines = [
        "# Formula sheet", "",
        "Every cache and state formula of the collection, as kvlib derives it from its tensor "
        "tables (`kvlib.core`), with two worked numbers each. Generated by "
        "`scripts/formula_sheet.py`; `tests/test_formula_sheet.py` fails if it is not current. "
        "Bytes are exact; KiB = 1,024 B, KB = 1,000 B; b is 2 (bf16) unless said. Each symbol "
        "says whose it is: the paper's (Serret, arXiv:2604.00965), DeepSeek's (the DeepSeek-V2 "
        "paper, arXiv:2405.04434), vLLM's, or ours (kvlib's).", "",
        "## Growing caches: bytes one token adds to all layers", "",
    ]
    c_o, d_c = by_name("c_o").symbol, by_name("d_c").symbol
    for kind, examples in ATTENTION_EXAMPLES.items():
        f = KINDS[kind]
        expr = f.symbolic.bytes_per_token
        per = "token"
        if kind == "Compressor state":  # kvlib's table is written per row of c_o d_c values
            expr, per = expr.subs(d_c, c_o * d_c), "row kept"
        stored = {
            "Indexer": " The indexer is stored as bytes (fp8 keys and fp32 scales): b = 1 "
                       "whatever the KV dtype.",
            "V4 entry": " Stored as bytes in vLLM 0.34.0's fp8_ds_mla layout: b = 1 whatever "
                        "the KV dtype. A compressed layer keeps "
                        "$\\lfloor N_{KV} / m \\rfloor$ entries.",
            "Short-conv window": " A window of d_conv tokens: vLLM keeps it in bf16 (b = 2) "
                                 "whatever the KV dtype.",
            "Compressor state": _compressor_note(),
        }.get(kind, "")
        if kind == "Compressor state":
            times = (r"One sequence keeps $\min(N_{KV}, c_o m)$ rows: the last $c_o m$ tokens "
                     f"({overlap(4) * 4} for $m = 4$, {overlap(128) * 128} for $m = 128$), "
                     "however long the context.")
        else:
            times = (r"One sequence of $N_{KV}$ tokens: times $N_{KV}$ (a sliding window keeps "
                     r"$\min(N_{KV}, N_W)$).")
        lines += [f"### {kind}", "", f"$$\\text{{bytes per {per}}} = {sp.latex(expr)}$$", "",
                  f"Symbols: {_symbols(expr)}. {times}{stored}", ""]
        for example in examples:
            label, sizes = _sizes(example, kind)
            value = f.bytes_per_token(**{k: v for k, v in {"b": 2, **sizes}.items()
                                         if k in f.bytes_per_token.args or k == "N_h"})
            lines.append(f"- {label}: {_readable(value)} per {per}")
        lines.append("")
    lines += ["## Constant states: bytes per sequence, whatever the context", "",
              "$b_c$: bytes per convolution-state element; $b_s$: per SSM / recurrent-state "
              "element (vLLM's state dtypes: the model dtype by default, float32 for "
              "Nemotron-H's SSM state).", ""]
    for kind, examples in STATE_EXAMPLES.items():
        f = STATES[kind]
        expr = f.symbolic.bytes_per_sequence
        lines += [f"### {kind}", "", f"$$\\text{{bytes per sequence}} = {sp.latex(expr)}$$",
                  "", f"Symbols: {_symbols(expr)}. $\\partial / \\partial N_{{KV}} = "
                  f"{sp.latex(f.symbolic.growth)}$.", ""]
        for example in examples:
            label, sizes = _sizes(example, kind)
            value = f.bytes_per_sequence(**{k: v for k, v in sizes.items()
                                            if k in f.bytes_per_sequence.args})
            lines.append(f"- {label}: {_readable(value)} per sequence")
        lines.append("")
    lines += _compressed()
    lines += _capacity()
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)  # the Usage line
        return 0 if args in (["-h"], ["--help"]) else 2
    out = Path(args[0] if args else ROOT / "docs" / "formula_sheet.md")
    out.write_text(sheet(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
