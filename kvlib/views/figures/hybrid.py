"""Figures of hybrid models (notebook 07): cache + state vs context, and the layer map.

* :func:`plot_memory_vs_context`: for each model, cache + state of one sequence
  (solid) and its constant state alone (dashed), log-log, so a reader sees where a
  hybrid's fixed cost stops mattering and where it crosses a pure-attention model.
* ``FIGURES`` for ``make figures``: ``hybrid_vs_context`` and ``hybrid_layer_map``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from kvlib.core.units import UNITS
from kvlib.models.catalog import BUNDLED, HYBRIDS, load_model
from kvlib.views.figures.models import plot_layer_map
from kvlib.views.style import context_axis, context_ticks, log_value_axis

__all__ = ["HYBRIDS", "COMPARE", "plot_memory_vs_context", "FIGURES"]

# A hybrid and a pure-attention model of similar total size: 80B vs 70.6B parameters.
COMPARE = ("qwen3-next-80b-a3b", "llama-3.1-70b", "nemotron-h-56b")
_COLORS = ("#882255", "#0072B2", "#44AA99", "#E69F00")


def plot_memory_vs_context(ax, names: Sequence[str] = COMPARE, lo: int = 256,
                           hi: int = 262144, b=2, unit: str = "GiB") -> None:
    """Cache + state of one sequence vs context (solid), the state alone (dashed), bf16."""
    contexts = np.array(context_ticks(lo, hi))
    for name, color in zip(names, _COLORS, strict=False):
        spec = load_model(name)
        total = np.array([spec.total_bytes_per_sequence(int(t), b) for t in contexts], float)
        state = spec.state_bytes_per_sequence()
        ax.plot(contexts, total / UNITS[unit], marker="o", color=color,
                label=f"{BUNDLED[name].title}: " + ("cache + state" if state else
                                                    "cache (every layer attention)"))
        if state:
            ax.axhline(state / UNITS[unit], color=color, ls="--", lw=1.8,
                       label=f"{BUNDLED[name].title}: state alone (constant)")
    context_axis(ax, lo, hi)
    log_value_axis(ax)
    ax.set_ylabel(f"memory of one sequence ({unit}, log scale)")
    ax.set_title("One sequence, bf16: a hybrid pays a fixed state, then grows slowly")
    ax.legend(loc="upper left", frameon=True, framealpha=0.95, edgecolor="none", fontsize=12)


def _memory_figure() -> Figure:
    fig = Figure(figsize=(11, 6), layout="constrained")
    plot_memory_vs_context(fig.add_subplot())
    return fig


def _layer_map_figure() -> Figure:
    fig = Figure(figsize=(15, 5.2), layout="constrained")
    plot_layer_map(fig.add_subplot(), ("qwen3-next-80b-a3b", "nemotron-3-nano-30b-a3b",
                                       "llama-3.3-nemotron-super-49b", "gemma-4-26b-a4b"),
                   title="What each layer keeps: a growing cache, a window, a fixed state, "
                         "or nothing")
    return fig


FIGURES = {"hybrid_vs_context": _memory_figure, "hybrid_layer_map": _layer_map_figure}
