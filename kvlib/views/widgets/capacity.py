"""Notebook 06's planner: model, GPU, GPU count, TP, dtypes, context, vLLM release,
utilization -> plan.

:func:`planner` is the computation (plain, called by the widget and by a
compared notebook cell); :func:`planner_explorer` wires it to controls: every
bundled model by title, or a pasted ``config.json`` with its parameter count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import ipywidgets as widgets

from kvlib.core import validate
from kvlib.core.dtypes import DTYPE_BYTES
from kvlib.core.units import UNITS, fmt_bytes
from kvlib.models.catalog import BUNDLED, load_model
from kvlib.serving.deployment import CHECKPOINT, VLLM_DEFAULTS, Deployment
from kvlib.serving.gpus import CATALOG
from kvlib.serving.plan import Plan
from kvlib.serving.vllm_layout import vllm_release
from kvlib.views.figures.capacity import budget_segments, plot_budget
from kvlib.views.style import context_ticks, format_context
from kvlib.views.widgets.kit import Explorer, html_table
from kvlib.views.widgets.models import pasted_config_box, read_pasted

__all__ = ["PlannerResult", "planner", "render", "draw", "planner_explorer", "MODELS",
           "parse_params"]

MODELS = tuple(BUNDLED)  # every bundled model; the dropdown shows their titles
CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens
UNIT = "GB"  # GPU memory is sold in GB
GPU_COUNTS = TP_OPTIONS = (1, 2, 4, 8, 16)  # the GPUs and TP dropdowns
WEIGHT_OPTIONS = (CHECKPOINT, "bf16", "fp8", "int4")  # the weights dropdown
RELEASES = tuple(VLLM_DEFAULTS)  # the vLLM dropdown, the default release (the newest) first
# Plan fields of the budget bar that a planner's plan may leave at 0 (no draft model here)
_PLACEHOLDERS = ("overhead_bytes_per_gpu", "kv_used_bytes_per_gpu", "kv_free_bytes_per_gpu")


@dataclass(frozen=True)
class PlannerResult:
    """A plan, plus the longest context at which ``sessions`` sequences fit per replica."""

    plan: Plan
    sessions: int
    max_context: int
    max_position_embeddings: int | None = None


def parse_params(text: str) -> int:
    """The params box ('70.6B', '7e10'), read as ``kvlib plan --params`` reads it
    (:func:`kvlib.core.validate.parse_count`)."""
    return validate.parse_count("params", text)


def planner(model: str, gpu: str, gpus: int, tp: int, weight_dtype: str, kv_dtype: str,
            context: int, gpu_mem_util: float | None, sessions: int, config: str = "",
            params: str = "", vllm: str | None = None) -> PlannerResult:
    """The plan of ``model`` on ``gpus`` x ``gpu`` (TP ``tp``) at ``context`` tokens.

    vllm: the release whose budget rule and block size apply (default the newest,
    :data:`~kvlib.serving.deployment.VLLM_DEFAULTS`); gpu_mem_util None takes its default
    (1.0 under 0.34.0's extensible cache, where a smaller value shrinks the cache; 0.92 under
    0.33.0).

    config: a pasted config.json, planned instead of ``model`` when not blank; params: its
    parameter count as text ("70.6B"), needed for a pasted config only where kvlib cannot
    count it from the config (a count given overrides the count, as ``kvlib plan --params``
    does, and the weights are then params x ``weight_dtype``).
    """
    count = parse_params(params) if params.strip() else None
    pasted = read_pasted(config)
    spec, data = (load_model(model), None) if pasted is None else pasted
    d = Deployment(spec, gpu, gpus, tp, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                   gpu_mem_util=gpu_mem_util, params=count, config=data, vllm=vllm)
    # the explorer follows notebook 06's formula, sessions by bytes alone (the book's page
    # computes the same in the browser); kvlib plan's headline is vLLM's allocator
    return PlannerResult(d.plan(context, sessions="bytes"), sessions, d.max_context(sessions),
                         spec.max_position_embeddings)


def render(r: PlannerResult) -> str:
    """HTML: the budget per GPU, sessions, max context at the chosen concurrency, decode bound.

    Sizes in GB (GPU memory is sold in GB), MB or KB under 1 GB (never "0 GB"); a context
    beyond the model's ``max_position_embeddings`` is flagged, as ``kvlib plan`` notes it."""
    p = r.plan

    def gb(n):  # kit.fmt_size's rule in decimal units
        return fmt_bytes(n, next((u for u in ("GB", "MB", "KB") if n >= UNITS[u]), "B"))

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
    if limit is not None and p.context > limit:
        warn += (f"<p style='color:#b00;margin:2px 0'><b>context {p.context:,} exceeds the "
                 f"model's max_position_embeddings ({limit:,})</b></p>")
    return warn + html_table([f"{p.model}, per GPU", ""], rows, [False, True])


def draw(fig, r: PlannerResult) -> None:
    """The budget bar of one GPU: built once by :func:`plot_budget`, then updated in place.

    The first build has every segment of a planner's plan (a placeholder byte
    where this plan has none), so each later plan only moves and resizes the
    segments (one of 0 bytes is hidden), the two ticks, the verdict and the labels.
    """
    p = r.plan
    label = f"{p.gpus} x {p.gpu}, TP={p.tp}"
    heading = f"{p.model}: one GPU's memory at {format_context(p.context)}"
    if not fig.axes:
        skeleton = replace(p, **{f: getattr(p, f) or 1 for f in _PLACEHOLDERS})
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
    verdict.set_text(f"{p.max_sequences_per_replica:,} x {format_context(p.context)}"
                     if p.fits else "does not fit")  # as plot_budget writes it
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
                     gpu_mem_util=None, sessions=8, vllm=RELEASES[0]) -> Explorer:
    """Controls for every planner input, in two columns; a TP the heads do not allow, or a
    pasted config without a parameter count, shows its error. The utilization starts at the
    release's default (``gpu_mem_util`` None) and follows a change of release."""
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
        kv_dtype=dropdown(list(DTYPE_BYTES), kv_dtype, "KV dtype"),
        context=widgets.SelectionSlider(
            options=[(format_context(t), t) for t in CONTEXTS],
            value=context, description="context", style=style, layout=wide),
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
