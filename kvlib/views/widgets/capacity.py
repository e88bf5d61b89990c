"""Notebook 06's planner: model, GPU, GPU count, TP, dtypes, context, engine, vLLM release,
utilization -> plan.

:func:`planner` is the computation (plain, called by the widget and by a
compared notebook cell); :func:`planner_explorer` wires it to controls: every
bundled model by title, or a pasted ``config.json`` with its parameter count. The engine
control plans the same deployment under SGLang or TensorRT-LLM
(:func:`kvlib.serving.engines.engine_plan`): its KV budget, tokens, page and sessions per
replica, with what it assumes; vLLM (the default) is the plan of the sections above.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import ipywidgets as widgets

from kvlib.core import validate
from kvlib.core.dtypes import VLLM_EXACT_KV_DTYPES
from kvlib.core.units import UNITS, fmt_bytes
from kvlib.models.catalog import BUNDLED, load_model
from kvlib.serving.engines import ENGINES, EnginePlan, engine_plan
from kvlib.serving.engines.sglang import sglang_groups
from kvlib.serving.engines.vllm.defaults import VLLM_DEFAULTS, vllm_release
from kvlib.serving.engines.vllm.deployment import CHECKPOINT, Deployment
from kvlib.serving.engines.vllm.plan import Plan
from kvlib.serving.gpus import CATALOG
from kvlib.views.figures.capacity import at_sessions, budget_segments, budget_verdict, plot_budget
from kvlib.views.style import context_ticks, format_context
from kvlib.views.widgets.kit import Explorer, html_table
from kvlib.views.widgets.models import pasted_config_box, read_pasted

__all__ = ["PlannerResult", "planner", "render", "draw", "planner_explorer", "MODELS",
           "ENGINES", "parse_params", "engine_used_bytes"]

MODELS = tuple(BUNDLED)  # every bundled model; the dropdown shows their titles
CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens
UNIT = "GB"  # GPU memory is sold in GB
GPU_COUNTS = TP_OPTIONS = (1, 2, 4, 8, 16)  # the GPUs and TP dropdowns
WEIGHT_OPTIONS = (CHECKPOINT, "bf16", "fp8", "int4")  # the weights dropdown
RELEASES = tuple(VLLM_DEFAULTS)  # the vLLM dropdown, the default release (the newest) first
# the engine dropdown (vLLM first, the default) and how the readout names each engine
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
# Plan fields of the budget bar that a planner's plan may leave at 0 (no draft model here)
_PLACEHOLDERS = ("overhead_bytes_per_gpu", "kv_used_bytes_per_gpu", "kv_free_bytes_per_gpu")


@dataclass(frozen=True)
class PlannerResult:
    """A plan, plus the longest context at which ``sessions`` sequences fit per replica."""

    plan: Plan | None  # None under SGLang or TensorRT-LLM: ``engine`` is their plan
    sessions: int
    max_context: int
    max_position_embeddings: int | None = None
    engine: EnginePlan | None = None
    gpus: int = 1
    weights_label: str = ""
    memory_basis: str = "cuda"
    swa_window: int | None = None  # SGLang's sliding-window pool: the layers' window


def parse_params(text: str) -> int:
    """The params box ('70.6B', '7e10'), read as ``kvlib plan --params`` reads it
    (:func:`kvlib.core.validate.parse_count`)."""
    return validate.parse_count("params", text)


def planner(model: str, gpu: str, gpus: int, tp: int, weight_dtype: str, kv_dtype: str,
            context: int, gpu_mem_util: float | None, sessions: int, config: str = "",
            params: str = "", vllm: str | None = None, engine: str = "vllm") -> PlannerResult:
    """The plan of ``model`` on ``gpus`` x ``gpu`` (TP ``tp``) at ``context`` tokens.

    vllm: the release whose budget rule and block size apply (default the newest,
    :data:`~kvlib.serving.engines.vllm.defaults.VLLM_DEFAULTS`); gpu_mem_util None takes its default
    (1.0 under 0.34.0's extensible cache, where a smaller value shrinks the cache; 0.92 under
    0.33.0).

    config: a pasted config.json, planned instead of ``model`` when not blank; params: its
    parameter count as text ("70.6B"), needed for a pasted config only where kvlib cannot
    count it from the config (a count given overrides the count, as ``kvlib plan --params``
    does, and the weights are then params x ``weight_dtype``).

    engine: "vllm" (the default), "sglang" or "trtllm": the same deployment's budget, pools
    and sessions under that engine at its defaults (:func:`kvlib.serving.engines.engine_plan`;
    ``vllm`` and ``gpu_mem_util`` do not apply there, nor ``sessions``' longest context); a
    model or setting kvlib has not traced for that engine raises its ValueError.
    """
    count = parse_params(params) if params.strip() else None
    pasted = read_pasted(config)
    spec, data = (load_model(model), None) if pasted is None else pasted
    d = Deployment(spec, gpu, gpus, tp, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                   gpu_mem_util=gpu_mem_util, params=count, config=data, vllm=vllm)
    if engine != "vllm":
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        return PlannerResult(None, sessions, 0, spec.max_position_embeddings,
                             engine=engine_plan(d, context, engine), gpus=d.gpus,
                             weights_label=d.weights_label,
                             swa_window=max((g.window for g, _, _, pool in
                                             sglang_groups(spec, d.config) if pool == "swa"),
                                            default=None),
                             memory_basis="cuda" if d.gpu.cuda_total_bytes is not None
                             else "datasheet")
    # the explorer follows notebook 06's formula, sessions by bytes alone (the book's page
    # computes the same in the browser); kvlib plan's headline is vLLM's allocator
    return PlannerResult(d.plan(context, sessions="bytes"), sessions, d.max_context(sessions),
                         spec.max_position_embeddings)


def render(r: PlannerResult) -> str:
    """HTML: the budget per GPU, sessions, max context at the chosen concurrency, decode bound.

    Sizes in GB (GPU memory is sold in GB), MB or KB under 1 GB (never "0 GB"); a context
    beyond the model's ``max_position_embeddings`` is flagged, as ``kvlib plan`` notes it.
    Under SGLang or TensorRT-LLM: :func:`render_engine`."""
    if r.engine is not None:
        return render_engine(r)
    p = r.plan

    rows = [
        ("memory per GPU (CUDA total)" if p.memory_basis == "cuda"
         else "memory per GPU (datasheet)", gb(p.total_memory_bytes_per_gpu)),
        (f"usable (x {float(p.gpu_mem_util):g})", gb(p.usable_bytes_per_gpu)),
        (f"weights ({p.weight_dtype}, / TP {p.tp})", gb(p.weights_bytes_per_gpu)),
        ("activations, NCCL, graphs", gb(p.overhead_bytes_per_gpu)),
        (f"KV budget (vLLM {p.vllm}, {p.budget_rule})", gb(p.kv_budget_bytes_per_gpu)),
        (f"KV per {format_context(p.context)} session ({p.kv_dtype})",
         gb(p.kv_bytes_per_sequence_per_gpu)),
        ("max concurrent sessions (bytes alone)",
         f"{p.max_sequences:,} ({p.replicas} replica{'s' if p.replicas > 1 else ''} x "
         f"{p.max_sequences_per_replica:,})"),
        (f"max context at {r.sessions} sessions per replica",
         f"{r.max_context:,} tokens" if r.max_context else "none fits"),
        ("decode step at full batch",
         f">= {p.decode_step_seconds_lower_bound * 1e3:.2f} ms"
         if p.decode_step_seconds_lower_bound is not None else "-"),
    ]
    if p.decode_step_seconds_uniform_routing is not None:
        rows.append((f"uniform routing ({p.expected_experts_per_layer:g} of "
                     f"{p.routed_experts} experts per layer)",
                     f"{p.decode_step_seconds_uniform_routing * 1e3:.2f} ms"))
    limit = r.max_position_embeddings
    warn = "" if p.fits else f"<p style='color:#b00;margin:2px 0'><b>{p.reason}</b></p>"
    warn += _warn_context(p.context, limit)
    return warn + html_table([f"{p.model}, per GPU", ""], rows, [False, True])


def gb(n) -> str:
    """Bytes in GB, MB or KB under 1 GB (never "0 GB"): kit.fmt_size's rule in decimal units."""
    return fmt_bytes(n, next((u for u in ("GB", "MB", "KB") if n >= UNITS[u]), "B"))


def _warn_context(context: int, limit: int | None) -> str:
    if limit is not None and context > limit:
        return (f"<p style='color:#b00;margin:2px 0'><b>context {context:,} exceeds the "
                f"model's max_position_embeddings ({limit:,})</b></p>")
    return ""


def render_engine(r: PlannerResult) -> str:
    """HTML for SGLang's or TensorRT-LLM's plan: the budget per GPU and the fraction it came
    from, the bytes per token, the page (block), the KV tokens the engine would log, its pools
    and sessions per replica; then the rule in a sentence and what kvlib assumed."""
    e = r.engine
    sglang = e.engine == "sglang"
    name = f"SGLang {e.release}" if sglang else "TensorRT-LLM"
    replicas = r.gpus // e.tp
    rows = [
        ("memory per GPU (CUDA total)" if r.memory_basis == "cuda"
         else "memory per GPU (datasheet)", gb(e.total_memory)),
        (f"weights ({r.weights_label}, / TP {e.tp})", gb(e.weights)),
        ("mem_fraction_static (its default)" if sglang
         else "free_gpu_memory_fraction (0.9 as a float32)",
         f"{float(e.fraction):g}" if sglang else f"{float(e.fraction):.16g}"),
        (f"KV budget ({name}, " + ("F_0 - W - F_0 (1 - f))" if sglang
                                   else "(M - W - O_T) x fraction)"), gb(e.kv_budget)),
        (f"KV per token ({e.kv_dtype}, " + ("full-attention pool)" if e.swa_tokens is not None
                                             else "every layer)"), f"{e.cell:,} B"),
        ("page" if sglang else "block", f"{e.page} token{'s' if e.page != 1 else ''}"),
        ("KV tokens (the #tokens it logs)" if sglang
         else "KV tokens (whole blocks, the (N) it logs)", f"{e.tokens:,}"),
    ]
    if e.swa_tokens is not None:
        rows.append((f"sliding-window pool ({e.swa_cell:,} B per token)",
                     f"{e.swa_tokens:,} tokens"))
    if e.max_running_requests is not None:
        rows.append(("max_running_requests (its default)", f"{e.max_running_requests:,}"))
    rows.append((f"max concurrent {format_context(e.context)} sessions",
                 f"{replicas * e.sessions:,} ({replicas} replica{'s' if replicas > 1 else ''} "
                 f"x {e.sessions:,})"))
    rule = ("SGLang keeps 1 - mem_fraction_static of the memory free before the weights load, "
            "and gives its KV pools the rest of what is free after them." if sglang else
            "TensorRT-LLM gives its KV cache free_gpu_memory_fraction of what is free after a "
            "profiling run with the weights loaded.")
    said = "".join(f"<li>{a}</li>" for a in e.assumptions)
    return (_warn_context(e.context, r.max_position_embeddings)
            + html_table([f"{e.model}, per GPU", ""], rows, [False, True])
            + f"<p style='margin:4px 0'>{rule} Assumed (kvlib plan --engine {e.engine} "
            f"overrides each):</p><ul style='margin:2px 0'>{said}</ul>")


def engine_used_bytes(e: EnginePlan, window: int | None = None,
                      sessions: int | None = None) -> int:
    """The KV bytes per GPU that ``sessions`` (default ``e.sessions``, the most the engine
    admits) requests of ``e.context`` tokens take: whole pages (blocks) of the full pool each,
    and min(context, window) + one page of a sliding-window pool (SGLang's admission floor)."""
    per_request = -(-e.context // e.page) * e.page * e.cell
    if e.swa_tokens is not None:
        per_request += (min(e.context, window) + e.page) * e.swa_cell
    return (e.sessions if sessions is None else sessions) * per_request


def _engine_bar(r: PlannerResult) -> SimpleNamespace:
    """An engine plan as the budget bar reads a Plan: the weights, the rest the engine keeps
    out of the KV cache ("overhead"), the KV of the slider's sessions (drawn at most up to
    the whole memory, as :func:`~kvlib.views.figures.capacity.at_sessions` draws vLLM's) and
    the budget left; both ticks at the CUDA total (the engine's fraction is inside its
    overhead)."""
    e = r.engine
    # the whole memory less the weights and the engine's overhead is its budget; an engine
    # that admits no session draws none
    used = min(engine_used_bytes(e, r.swa_window, r.sessions if e.sessions else 0),
               max(0, e.kv_budget))
    return SimpleNamespace(
        weights_bytes_per_gpu=e.weights, draft_weights_bytes_per_gpu=0,
        overhead_bytes_per_gpu=e.total_memory - e.weights - e.kv_budget,
        kv_used_bytes_per_gpu=used, kv_free_bytes_per_gpu=e.kv_budget - used,
        usable_bytes_per_gpu=e.total_memory, total_memory_bytes_per_gpu=e.total_memory,
        max_sequences_per_replica=e.sessions, context=e.context, fits=e.sessions > 0,
        model=e.model, gpus=r.gpus, gpu=e.gpu, tp=e.tp)


def draw(fig, r: PlannerResult) -> None:
    """The budget bar of one GPU with ``r.sessions`` sequences per replica in use (the sessions
    slider), as :func:`plot_budget` draws it with ``sessions``: built once, then updated in
    place.

    The first build has every segment of a planner's plan (a placeholder byte
    where this plan has none), so each later plan only moves and resizes the
    segments (one of 0 bytes is hidden), the two ticks, the verdict and the labels.
    """
    if r.engine is not None:
        p = _engine_bar(r)
    else:
        p = at_sessions(r.plan, r.sessions) if r.plan.fits else r.plan
    label = f"{p.gpus} x {p.gpu}, TP={p.tp}"
    heading = f"{p.model}: one GPU's memory at {format_context(p.context)}"
    if r.engine is not None:
        heading += f" under {ENGINE_NAMES[r.engine.engine]}"
    if not fig.axes:
        skeleton = (replace(p, **{f: getattr(p, f) or 1 for f in _PLACEHOLDERS})
                    if r.engine is None else
                    SimpleNamespace(**{**vars(p), **{f: getattr(p, f) or 1
                                                     for f in _PLACEHOLDERS}}))
        plot_budget(fig.add_subplot(), {label: skeleton}, unit=UNIT, title=heading)
    ax = fig.axes[0]
    bars = {c.get_label(): c.patches[0] for c in ax.containers}  # one plan: a bar per segment
    left = 0.0
    for name, value in budget_segments(p).items():
        width = value / UNITS[UNIT]
        if name not in bars:  # draft weights: the planner has no draft model
            continue
        bars[name].set_x(left)
        bars[name].set_width(max(width, 0.0))
        bars[name].set_visible(width > 0)
        left += max(width, 0.0)
    usable, hbm = p.usable_bytes_per_gpu / UNITS[UNIT], p.total_memory_bytes_per_gpu / UNITS[UNIT]
    dashed, solid = ax.lines[:2]  # plot_budget draws the usable tick first, then the whole
    dashed.set_xdata([usable, usable])
    solid.set_xdata([hbm, hbm])
    verdict = ax.texts[0]
    verdict.set_text(budget_verdict(p, r.sessions))  # as plot_budget writes it
    verdict.xy = (max(left, hbm), 0)
    ax.set_yticks([0], [label])
    ax.title.set_text(heading)
    ax.relim()
    ax.autoscale_view()


def _release_utilization(release: str) -> float:
    """The utilization slider's value for ``release``: its default gpu_memory_utilization."""
    return float(VLLM_DEFAULTS[vllm_release(release)]["gpu_mem_util"])


def follow_release(change, controls) -> None:
    """A new vLLM release puts the utilization slider at that release's default (1.0 for
    0.34.0's extensible cache, 0.92 for 0.33.0)."""
    if change["owner"] is controls["vllm"]:
        controls["gpu_mem_util"].value = _release_utilization(change["new"])


def planner_explorer(model="llama-3.1-70b", gpu="H200", gpus=4, tp=4,
                     weight_dtype=CHECKPOINT, kv_dtype="bf16", context=131072,
                     gpu_mem_util=None, sessions=8, vllm=RELEASES[0],
                     engine="vllm") -> Explorer:
    """Controls for every planner input, in two columns; a TP the heads do not allow, or a
    pasted config without a parameter count, shows its error. The utilization starts at the
    release's default (``gpu_mem_util`` None) and follows a change of release. The engine
    control (vLLM by default) plans the same deployment under SGLang or TensorRT-LLM."""
    vllm = vllm_release(vllm)
    if gpu_mem_util is None:
        gpu_mem_util = _release_utilization(vllm)
    style = {"description_width": "110px"}
    wide = widgets.Layout(width="98%")

    def dropdown(options, value, description):
        return widgets.Dropdown(options=options, value=value, description=description,
                                style=style, layout=wide)

    c = dict(
        model=dropdown([(BUNDLED[n].title, n) for n in MODELS], model, "model"),
        gpu=dropdown(list(CATALOG), gpu, "GPU"),
        gpus=dropdown(list(GPU_COUNTS), gpus, "GPUs"),
        tp=dropdown(list(TP_OPTIONS), tp, "TP"),
        weight_dtype=dropdown(list(WEIGHT_OPTIONS), weight_dtype, "weights"),
        kv_dtype=dropdown(list(VLLM_EXACT_KV_DTYPES.items()), kv_dtype, "KV dtype"),
        context=widgets.SelectionSlider(
            options=[(format_context(t), t) for t in CONTEXTS],
            value=context, description="context", style=style, layout=wide),
        engine=dropdown([(ENGINE_NAMES[k], k) for k in ENGINES], engine, "engine"),
        vllm=dropdown(list(RELEASES), vllm, "vLLM"),
        gpu_mem_util=widgets.FloatSlider(gpu_mem_util, min=0.5, max=1.0, step=0.01,
                                         description="gpu_memory_util", style=style,
                                         layout=wide),
        sessions=widgets.IntSlider(sessions, min=1, max=256, description="sessions",
                                   style=style, layout=wide),
        params=widgets.Text(value="", placeholder="e.g. 70.6B (for a pasted config)",
                            description="params", continuous_update=False, style=style,
                            layout=wide),
        config=pasted_config_box(style),
    )
    return Explorer(c, planner, render, draw, figsize=(9, 2.2), adjust=follow_release)
