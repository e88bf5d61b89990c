"""One house style for every figure: notebooks, README and ``make figures`` (notebooks 01-06).

Large type for a lecture hall, a log-2 context axis labelled 1K..128K, units in
every axis label, and a legend on every multi-series plot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib as mpl
import matplotlib.ticker as mticker
import numpy as np

from kvlib.core.units import UNITS
from kvlib.views.png import png_bytes, use_for_inline_figures

__all__ = [
    "STYLE", "COLORS", "apply_style", "context_ticks", "format_context", "context_axis",
    "log_value_axis", "plain_log_axis",
    "plot_cache_vs_context", "plot_bars", "show_figure",
]

STYLE = {
    "figure.figsize": (10, 5.6),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 14,
    "axes.titlesize": 17,
    "axes.titleweight": "bold",
    "axes.labelsize": 15,
    "legend.fontsize": 13,
    "xtick.labelsize": 13,
    "ytick.labelsize": 13,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 2.6,
    "lines.markersize": 7,
    "svg.hashsalt": "kvlib",
    # Glyphs unhinted: at 100-150 dpi hinting changes no visible pixel of this type size, and
    # Matplotlib 3.11 reloads every glyph through FreeType's hinter on each size change, that
    # is on every text it measures or draws. Unhinted, a figure draws in about 0.8x the time
    # (docs/benchmarks.md, "Run All, issue 14, third pass").
    "text.hinting": "no_hinting",
    # Grid and ticks under every artist (Matplotlib's default "line" draws them over bars and
    # patches): the usual look of a bar chart, and it lets a live figure keep them as pixels
    # while its bars move (kvlib.views.widgets.frame keeps what is drawn before the data).
    "axes.axisbelow": True,
}

# Colour-blind-safe (Okabe-Ito), one colour per attention kind across all figures.
COLORS = {
    "MHA": "#D55E00", "GQA": "#0072B2", "MQA": "#009E73", "MLA": "#CC79A7",
    "MLA+RoPE": "#E69F00", "other": "#56B4E9",
}


def apply_style() -> None:
    """Set the house rcParams; in a notebook, show constrained-layout figures drawn once
    (:func:`kvlib.views.png.use_for_inline_figures`). Idempotent."""
    mpl.rcParams.update(STYLE)
    use_for_inline_figures()


def show_figure(fig) -> None:
    """Display a figure in a notebook, drawn once (:func:`kvlib.views.png.png_bytes`), also
    where the inline backend's formatter is not kvlib's (a figure not made by pyplot)."""
    from IPython.display import Image, display

    display(Image(png_bytes(fig), format="png"))


def format_context(n: int) -> str:
    """1024 -> '1K', 131072 -> '128K', 1048576 -> '1M', 500 -> '500'."""
    n = int(n)
    if n >= 1024**2 and n % 1024**2 == 0:
        return f"{n // 1024**2}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


def context_ticks(lo: int = 1024, hi: int = 131072) -> list[int]:
    """Powers of two from ``lo`` to ``hi`` inclusive (1K, 2K, ... 128K)."""
    out, n = [], int(lo)
    while n <= hi:
        out.append(n)
        n *= 2
    return out


def context_axis(ax, lo: int = 1024, hi: int = 131072,
                 label: str = r"context length $N_{KV}$ (tokens, log scale)"):
    """Log-2 x axis with 1K..128K tick labels (a little margin so end markers show)."""
    ax.set_xscale("log", base=2)
    ticks = context_ticks(lo, hi)
    ax.set_xticks(ticks, [format_context(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(lo / 1.12, hi * 1.12)
    ax.set_xlabel(label)


def plain_log_axis(axis, subs: Sequence[float] = (1.0,), base: float = 10,
                   label: Callable[[float], str] = lambda v: f"{v:,.10g}") -> None:
    """A log ``axis`` (``ax.xaxis`` or ``ax.yaxis``) marked at ``subs`` x ``base``^k, labelled
    by ``label`` (default: plain numbers, 1, 10, 100, not powers of ten), without minor ticks.

    No minor ticks: between labelled marks and their grid lines, unlabelled marks add no
    reading, and each is a Tick (two texts, two marks, a grid line) to build and measure on
    every draw: a third of a figure's draw time."""
    getattr(axis.axes, f"set_{axis.axis_name}scale")("log")
    axis.set_major_locator(mticker.LogLocator(base=base, subs=tuple(subs)))
    axis.set_major_formatter(mticker.FuncFormatter(lambda v, _: label(v)))
    axis.set_minor_locator(mticker.NullLocator())


def log_value_axis(ax) -> None:
    """Log-10 y axis labelled 1, 2, 5, 10, 20, 50, ... in plain numbers (:func:`plain_log_axis`)."""
    plain_log_axis(ax.yaxis, subs=(1.0, 2.0, 5.0))


def plot_cache_vs_context(ax, contexts: Sequence[int], series: Mapping[str, np.ndarray],
                          unit: str = "GiB", title: str = "", logy: bool = True,
                          colors: Mapping[str, str] | None = None, hline=None):
    """Cache size vs context, one line per label; ``series`` values are bytes.

    ``hline``: optional (bytes, label) drawn dashed, e.g. a GPU's memory.
    Returns the list of Line2D so a widget can update them in place.
    """
    colors = {**COLORS, **(colors or {})}
    lines = []
    for label, values in series.items():
        y = np.asarray(values, dtype=float) / UNITS[unit]
        key = label.split(" ")[0].rstrip(":,")
        (ln,) = ax.plot(contexts, y, marker="o", label=label, color=colors.get(key))
        lines.append(ln)
    if hline is not None:
        ax.axhline(hline[0] / UNITS[unit], color="black", ls="--", lw=1.6, label=hline[1])
    context_axis(ax, min(contexts), max(contexts))
    if logy:
        log_value_axis(ax)
    ax.set_ylabel(f"KV cache ({unit}{', log scale' if logy else ''})")
    if title:
        ax.set_title(title)
    # Lines rise to the right, so the upper left corner is free (a framed box hides
    # the part of a dashed reference line that runs behind it).
    ax.legend(loc="upper left", frameon=True, framealpha=0.95, edgecolor="none")
    return lines


def plot_bars(ax, labels: Sequence[str], values: Sequence, unit: str, title: str,
              ylabel: str, colors: Sequence[str] | None = None, annotate: bool = True,
              log: bool = False):
    """Bar chart of byte values in ``unit``, each bar labelled with its value.

    ``log``: a log value axis, for bars far apart in size (notebook 03: 60 KiB beside
    4,800 KiB, a sliver on a linear axis); the axis label says so.
    """
    y = np.array([float(v) for v in values]) / UNITS[unit]
    bars = ax.bar(labels, y, color=colors)
    if annotate:
        for rect, val in zip(bars, y, strict=True):
            # One decimal, omitted when it is .0: "496 KiB", "4.7 MiB".
            text = f"{val:,.1f}".rstrip("0").rstrip(".")
            ax.annotate(f"{text} {unit}", (rect.get_x() + rect.get_width() / 2, val),
                        ha="center", va="bottom", fontsize=13, xytext=(0, 3),
                        textcoords="offset points")
    if log:
        log_value_axis(ax)
        lo, hi = y.min(), y.max()
        ax.set_ylim(10 ** np.floor(np.log10(lo)), hi * 2.5)  # room for the top label
    ax.set_ylabel(f"{ylabel} ({unit}{', log scale' if log else ''})")
    ax.set_title(title)
    ax.grid(axis="x", visible=False)
    return bars
