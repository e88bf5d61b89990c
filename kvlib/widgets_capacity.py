"""Notebook 06's planner: model, GPU, GPU count, TP, dtypes, context, utilization -> plan.

:func:`planner` is the computation (plain, called by the widget and by a
compared notebook cell); :func:`planner_explorer` wires it to controls.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets

from kvlib.capacity import Deployment, Plan
from kvlib.dtypes import DTYPE_BYTES
from kvlib.figures_capacity import plot_budget
from kvlib.gpus import CATALOG
from kvlib.models import load_model
from kvlib.plotting import context_ticks, format_context
from kvlib.units import fmt_bytes
from kvlib.widgetkit import Explorer

__all__ = ["PlannerResult", "planner", "render", "draw", "planner_explorer", "MODELS"]

MODELS = ("llama-3.1-70b", "llama-3.1-8b", "gemma-3-27b", "deepseek-v2", "qwen3-32b")


@dataclass(frozen=True)
class PlannerResult:
    """A plan, plus the longest context at which ``sessions`` sequences fit per replica."""

    plan: Plan
    sessions: int
    max_context: int


def planner(model: str, gpu: str, gpus: int, tp: int, weight_dtype: str, kv_dtype: str,
            context: int, gpu_mem_util: float, sessions: int) -> PlannerResult:
    """The plan of ``model`` on ``gpus`` x ``gpu`` (TP ``tp``) at ``context`` tokens."""
    d = Deployment(load_model(model), gpu, gpus, tp, kv_dtype=kv_dtype,
                   weight_dtype=weight_dtype, gpu_mem_util=gpu_mem_util)
    return PlannerResult(d.plan(context), sessions, d.max_context(sessions))


def render(r: PlannerResult) -> str:
    """HTML: the budget per GPU, sessions, max context at the chosen concurrency, decode bound."""
    p = r.plan

    def gb(n):
        return fmt_bytes(n, "GB")

    rows = [
        ("memory per GPU", gb(p.hbm_bytes_per_gpu)),
        (f"usable (x {float(p.gpu_mem_util):g})", gb(p.usable_bytes_per_gpu)),
        (f"weights ({p.weight_dtype}, / TP {p.tp})", gb(p.weights_bytes_per_gpu)),
        ("overhead", gb(p.overhead_bytes_per_gpu)),
        ("KV budget", gb(p.kv_budget_bytes_per_gpu)),
        (f"KV per {format_context(p.context)} session ({p.kv_dtype})",
         gb(p.kv_bytes_per_sequence_per_gpu)),
        ("max concurrent sessions",
         f"{p.max_sequences:,} ({p.replicas} replica{'s' if p.replicas > 1 else ''} x "
         f"{p.max_sequences_per_replica:,})"),
        (f"max context at {r.sessions} sessions per replica",
         f"{r.max_context:,} tokens" if r.max_context else "none fits"),
        ("decode step at full batch",
         f">= {p.decode_step_seconds_lower_bound * 1e3:.2f} ms"
         if p.decode_step_seconds_lower_bound is not None else "-"),
    ]
    body = "".join(f"<tr><td>{k}</td><td style='text-align:right'>{v}</td></tr>"
                   for k, v in rows)
    warn = "" if p.fits else f"<p style='color:#b00'><b>{p.reason}</b></p>"
    return f"{warn}<table><tr><th>per GPU</th><th></th></tr>{body}</table>"


def draw(fig, r: PlannerResult) -> None:
    """The budget bar of one GPU (redrawn: its segments change in number)."""
    fig.clear()
    ax = fig.add_subplot()
    p = r.plan
    plot_budget(ax, {f"{p.gpus} x {p.gpu}, TP={p.tp}": p},
                title=f"{p.model}: one GPU's memory at {format_context(p.context)}")


def planner_explorer(model="llama-3.1-70b", gpu="H200", gpus=4, tp=4, weight_dtype="bf16",
                     kv_dtype="bf16", context=131072, gpu_mem_util=0.9,
                     sessions=8) -> Explorer:
    """Controls for every planner input; a TP the heads do not allow shows its error."""
    style = {"description_width": "120px"}
    c = dict(
        model=widgets.Dropdown(options=list(MODELS), value=model, description="model",
                               style=style),
        gpu=widgets.Dropdown(options=list(CATALOG), value=gpu, description="GPU", style=style),
        gpus=widgets.Dropdown(options=[1, 2, 4, 8, 16], value=gpus, description="GPUs",
                              style=style),
        tp=widgets.Dropdown(options=[1, 2, 4, 8, 16], value=tp, description="TP", style=style),
        weight_dtype=widgets.Dropdown(options=["bf16", "fp8", "int4"], value=weight_dtype,
                                      description="weight dtype", style=style),
        kv_dtype=widgets.Dropdown(options=list(DTYPE_BYTES), value=kv_dtype,
                                  description="KV dtype", style=style),
        context=widgets.SelectionSlider(
            options=[(format_context(t), t) for t in context_ticks(1024, 131072)],
            value=context, description="context", style=style),
        gpu_mem_util=widgets.FloatSlider(gpu_mem_util, min=0.5, max=0.98, step=0.01,
                                         description="gpu_memory_util", style=style),
        sessions=widgets.IntSlider(sessions, min=1, max=256, description="sessions",
                                   style=style),
    )
    return Explorer(c, planner, render, draw, figsize=(10, 3.6))
