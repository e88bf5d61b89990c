"""Capacity-planning figures (notebook 06), drawn on a given Axes; ``FIGURES`` for ``make figures``.

* :func:`plot_budget`: one GPU's memory as stacked bars (weights, overhead, KV, free), with
  the most sessions that fit, or a chosen number of them (:func:`at_sessions`).
* :func:`plot_levers`: the cache a workload needs after each lever, with the budget.
* :func:`plot_paging_waste`: share of reserved cache slots that hold no token.
* :func:`plot_decode_roofline`: decode step time lower bound vs batch, per model.
* :func:`plot_crossover`: the batch at which the caches outweigh the weights, vs context.

Every number comes from :mod:`kvlib.serving` (layer groups over the generated formulas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kvlib.core.units import UNITS
from kvlib.serving.decode import cache_dominates_at, decode_step_seconds
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.serving.engines.vllm.plan import Plan
from kvlib.views.style import COLORS, context_axis, context_ticks, format_context, log_value_axis

__all__ = [
    "SEGMENT_COLORS", "budget_segments", "at_sessions", "budget_verdict", "plot_budget",
    "plot_levers", "plot_paging_waste",
    "plot_decode_roofline", "plot_crossover", "FIGURES",
]

SEGMENT_COLORS = {
    "weights": "#0072B2", "draft weights": "#56B4E9", "overhead": "#999999",
    "KV in use": "#D55E00", "KV free": "#F0E442",
}


def budget_segments(p: Plan) -> dict[str, int]:
    """One GPU's memory in the plan, by use (bytes): the bars of the budget figure and widget."""
    return {
        "weights": p.weights_bytes_per_gpu,
        "draft weights": p.draft_weights_bytes_per_gpu,
        "overhead": p.overhead_bytes_per_gpu,
        "KV in use": p.kv_used_bytes_per_gpu,
        "KV free": p.kv_free_bytes_per_gpu,
    }


def at_sessions(p: Plan, sessions: int) -> Plan:
    """The plan with ``sessions`` sequences per replica in use (notebook 06's sessions slider)
    instead of the most that fit: KV in use is sessions x (cache + state) per sequence, drawn
    at most up to the whole memory (so a count that does not fit runs past the dashed tick,
    and the bar stays on its axes); KV free is what the budget has left."""
    per_sequence = p.kv_bytes_per_sequence_per_gpu + p.state_bytes_per_sequence_per_gpu
    budget = p.kv_used_bytes_per_gpu + p.kv_free_bytes_per_gpu  # the budget, 0 when none
    room = max(0, p.total_memory_bytes_per_gpu - p.weights_bytes_per_gpu
               - p.draft_weights_bytes_per_gpu - p.overhead_bytes_per_gpu)
    used = min(sessions * per_sequence, room)
    return replace(p, kv_used_bytes_per_gpu=used, kv_free_bytes_per_gpu=max(0, budget - used))


def budget_verdict(p, sessions: int | None = None) -> str:
    """The text at the end of a budget bar: the most sessions that fit ("19 x 128K"), or with
    ``sessions`` chosen, that many and the most, on two lines ("8 x 128K" over "(19 fit)";
    "24 x 128K:" over "only 19 fit"), no wider than one, so that it stays in the Axes'
    margin."""
    context = format_context(p.context)
    if not p.fits:
        return "does not fit"
    most = p.max_sequences_per_replica
    if sessions is None:
        return f"{most:,} x {context}"
    if sessions <= most:
        return f"{sessions:,} x {context}\n({most:,} fit)"
    return f"{sessions:,} x {context}:\nonly {most:,} fit"


def plot_budget(ax, plans: Mapping[str, Plan], unit: str = "GB", title: str = "",
                sessions: int | None = None) -> None:
    """One horizontal bar per plan: what each GPU's memory holds, in ``unit``.

    A dashed tick marks the usable memory (gpu_memory_utilization x memory),
    a solid one the whole memory. Weights past the dashed tick do not fit.
    sessions: None, the KV in use is the most sessions that fit; a number, that many
    sequences per replica (:func:`at_sessions`), and the verdict names both.
    """
    labels = list(plans)
    y = np.arange(len(labels))[::-1]
    seen = set()
    for yi, label in zip(y, labels, strict=True):
        p, left = plans[label], 0.0
        if sessions is not None and p.fits:
            p = at_sessions(p, sessions)
        for name, value in budget_segments(p).items():
            width = value / UNITS[unit]
            if width <= 0:
                continue
            ax.barh(yi, width, left=left, color=SEGMENT_COLORS[name], height=0.6,
                    label=None if name in seen else name)
            seen.add(name)
            left += width
        usable = p.usable_bytes_per_gpu / UNITS[unit]
        hbm = p.total_memory_bytes_per_gpu / UNITS[unit]
        ax.plot([usable, usable], [yi - 0.4, yi + 0.4], color="black", ls="--", lw=1.8)
        ax.plot([hbm, hbm], [yi - 0.4, yi + 0.4], color="black", lw=1.8)
        ax.annotate(budget_verdict(p, sessions), (max(left, hbm), yi), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=13)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"memory per GPU ({unit}); dashed: usable, solid: all")
    ax.grid(axis="y", visible=False)
    # Above the Axes, so it covers nothing; drawn under the bars (zorder), so that a live
    # planner keeps it with the axes as pixels and redraws only the bars (widgets.frame)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, frameon=False,
              fontsize=12).set_zorder(0.9)
    ax.margins(x=0.18)
    if title:
        ax.set_title(title, pad=34)


OVER, UNDER = "#D55E00", "#0072B2"  # levers: cache over / within the KV budget


def plot_levers(ax, labels: Sequence[str], values: Sequence[int], unit: str = "GiB",
                budget: int | None = None, title: str = "") -> None:
    """Bars of the cache per GPU after each lever (log scale), each with its factor.

    ``budget``: the KV budget per GPU (bytes), drawn as a dashed line; bars over
    it are orange, bars within it blue (both named in the legend). A bar whose
    label would cross the line carries its label inside, under its top.
    """
    y = np.array([float(v) for v in values]) / UNITS[unit]
    line = None if budget is None else budget / UNITS[unit]
    colors = [OVER if line is not None and v > line else UNDER for v in y]
    bars = ax.bar(range(len(labels)), y, color=colors)
    for i, (rect, val) in enumerate(zip(bars, y, strict=True)):
        text = f"{val:,.0f}" if val >= 100 else f"{val:.3g}"
        if i:
            text += f"\n/{y[i - 1] / val:.3g}"
        # two lines of text span about a factor 4 on these log axes
        inside = line is not None and val < line < 4 * val
        ax.annotate(text, (rect.get_x() + rect.get_width() / 2, val), ha="center",
                    va="top" if inside else "bottom", fontsize=12,
                    color="white" if inside else "black",
                    xytext=(0, -4 if inside else 3), textcoords="offset points")
    log_value_axis(ax)  # plain 1-2-5 labels, as every log value axis here
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    ax.set_ylabel(f"KV cache per GPU ({unit}, log scale)")
    ax.grid(axis="x", visible=False)
    ax.margins(y=0.25)
    if line is not None:
        ax.axhline(line, color="black", ls="--", lw=1.6)
        ax.legend(handles=[
            Line2D([], [], color="black", ls="--", lw=1.6,
                   label=f"KV budget per GPU ({line:,.1f} {unit})"),
            Patch(color=OVER, label="over the budget: does not fit"),
            Patch(color=UNDER, label="within the budget: fits"),
        ], loc="upper right", frameon=False)
    if title:
        ax.set_title(title)


def plot_paging_waste(ax, labels: Sequence[str], fractions: Sequence[float],
                      title: str = "") -> None:
    """Bars of the share of reserved slots left empty, in percent, each labelled."""
    pct = 100 * np.asarray(fractions, dtype=float)
    bars = ax.bar(labels, pct, color=["#D55E00"] * 2 + ["#0072B2"] * (len(labels) - 2))
    for rect, val in zip(bars, pct, strict=True):
        ax.annotate(f"{val:.2f}%", (rect.get_x() + rect.get_width() / 2, val), ha="center",
                    va="bottom", fontsize=13, xytext=(0, 3), textcoords="offset points")
    ax.set_ylabel("reserved but empty (%)")
    ax.set_ylim(0, 110)
    ax.grid(axis="x", visible=False)
    if title:
        ax.set_title(title)


def plot_decode_roofline(ax, series: Mapping[str, tuple[int, int, int]], bandwidth: int,
                         title: str = "") -> None:
    """Decode step lower bound (ms) vs batch, one line per model.

    series: label -> (weights bytes per GPU, KV bytes per sequence per GPU, the
    largest batch that fits). Dashed: the weights-only floor. A ring marks the
    batch from which the caches outweigh the weights; a cross, the largest batch
    that fits in memory, where the line stops. The legend names all three marks.
    """
    palette = [COLORS["GQA"], COLORS["MHA"], COLORS["MLA"], COLORS["MQA"]]
    top = max(max(fits for _, _, fits in series.values()), 1)
    ticks = 2 ** np.arange(0, int(np.ceil(np.log2(top))) + 1)
    for color, (label, (weights, per_seq, fits)) in zip(palette, series.items(), strict=False):
        b = np.unique(np.append(ticks[ticks < fits], max(fits, 1)))
        t = decode_step_seconds(weights, per_seq, b.astype(float), float(bandwidth)) * 1e3
        ax.plot(b, t, marker="o", color=color, label=f"{label} (fits {fits:,})")
        floor_ms = decode_step_seconds(weights, per_seq, 0, float(bandwidth)) * 1e3
        ax.axhline(floor_ms, color=color, ls="--", lw=1.4, label="_floor")
        if fits:
            ax.plot([b[-1]], [t[-1]], marker="X", ms=14, color=color)
        cross = cache_dominates_at(weights, per_seq)
        if cross <= fits:
            t_cross = float(decode_step_seconds(weights, per_seq, cross, bandwidth)) * 1e3
            ax.plot([cross], [t_cross], marker="o", ms=13, mfc="white", mec=color, mew=2.5)
            ax.annotate(f"cache > weights from batch {cross}", (cross, t_cross),
                        xytext=(12, -16), textcoords="offset points", ha="left",
                        fontsize=12, color=color)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(int(x)) for x in ticks])
    ax.minorticks_off()
    ax.set_xlabel("sequences decoded together (batch per TP group, log scale)")
    ax.set_ylabel("decode step, lower bound (ms)")
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [
        Line2D([], [], color="gray", ls="--", lw=1.4, label="weights only (no cache): the floor"),
        Line2D([], [], color="gray", ls="", marker="X", ms=12,
               label="full batch: every sequence that fits"),
        Line2D([], [], color="gray", ls="", marker="o", ms=11, mfc="white", mew=2.5,
               label="cache outweighs weights from here"),
    ], loc="upper left", frameon=False, fontsize=12)
    if title:
        ax.set_title(title)


def plot_crossover(ax, contexts: Sequence[int], series: Mapping[str, Sequence[int]],
                   title: str = "") -> None:
    """The batch from which the caches outweigh the weights, vs context (log-log)."""
    palette = [COLORS["GQA"], COLORS["MHA"], COLORS["MLA"], COLORS["MQA"]]
    for color, (label, values) in zip(palette, series.items(), strict=False):
        ax.plot(contexts, values, marker="o", color=color, label=label)
    context_axis(ax, min(contexts), max(contexts))
    ax.set_yscale("log", base=2)
    top = max(max(v) for v in series.values())
    ticks = [2**k for k in range(int(np.log2(top)) + 2)]
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel("batch where cache > weights (log scale)")
    ax.legend(loc="upper right", frameon=False)
    if title:
        ax.set_title(title)


# --- make figures ---------------------------------------------------------------------------

def _budget_figure() -> Figure:
    from kvlib.models.catalog import load_model

    m = load_model("llama-3.1-70b")
    fig = Figure(figsize=(11, 5.2), layout="constrained")
    ax = fig.add_subplot()
    plans = {
        "4 x H200, TP=4, bf16": Deployment(m, "H200", 4, 4).plan(131072),
        "4 x H200, TP=4, fp8 KV": Deployment(m, "H200", 4, 4, kv_dtype="fp8").plan(131072),
        "8 x H100, TP=8, bf16": Deployment(m, "H100-80GB", 8, 8).plan(131072),
        "1 x H200, TP=1, bf16": Deployment(m, "H200", 1, 1).plan(131072),
    }
    plot_budget(ax, plans, title="Llama 3.1 70B at 128K: one GPU's memory")
    return fig


def _roofline_figure() -> Figure:
    from kvlib.models.catalog import load_model

    fig = Figure(figsize=(10, 5.6), layout="constrained")
    ax = fig.add_subplot()
    series = {}
    for name, label, tp in (("llama-3.1-70b", "Llama 3.1 70B, TP=4", 4),
                            ("llama-3.1-8b", "Llama 3.1 8B, TP=1", 1)):
        d = Deployment(load_model(name), "H200", tp, tp)
        p = d.plan(8192)
        series[label] = (p.decode_weights_read_bytes_per_gpu, p.live_kv_bytes_per_sequence_per_gpu,
                         p.max_sequences_per_replica)
    plot_decode_roofline(ax, series, d.gpu.bandwidth,
                         title="Decode step on H200 at 8K context (bf16)")
    return fig


def _crossover_figure() -> Figure:
    from kvlib.models.catalog import load_model

    fig = Figure(figsize=(10, 5.6), layout="constrained")
    ax = fig.add_subplot()
    contexts = context_ticks(1024, 131072)
    series = {}
    for name, label, tp in (("llama-3.1-70b", "Llama 3.1 70B, TP=4", 4),
                            ("llama-3.1-8b", "Llama 3.1 8B, TP=1", 1)):
        d = Deployment(load_model(name), "H200", tp, tp)
        series[label] = [cache_dominates_at(d.decode_read_bytes_per_gpu(),
                                            d.kv_bytes_per_sequence_per_gpu(t, block_size=1))
                         for t in contexts]
    plot_crossover(ax, contexts, series, title="When the cache outweighs the weights")
    return fig


FIGURES = {
    "capacity_budget": _budget_figure,
    "decode_roofline": _roofline_figure,
    "cache_crossover": _crossover_figure,
}
