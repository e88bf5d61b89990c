"""Notebook 08's explorer: seven ways of keeping the context, one sequence, 1K to 1M tokens.

:func:`compare` is the computation (:func:`kvlib.views.figures.compressed.sweep`, the curves
of notebook 08's figure, read at the chosen context); :func:`render` tabulates it with each
model's size against DeepSeek V4's; :func:`draw` shows the curves with the chosen context
marked on each; :func:`compressed_explorer` wires them to two controls (context, KV dtype).
The book's page explorer draws the same sweep from the same layer groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets

from kvlib.core.units import UNITS, fmt_size
from kvlib.views.figures.compressed import COLORS, CONTEXTS, DTYPES, Curve, sweep
from kvlib.views.style import context_axis, format_context, log_value_axis
from kvlib.views.widgets.kit import Explorer, html_table

__all__ = ["Comparison", "compare", "render", "draw", "compressed_explorer"]

GIB = UNITS["GiB"]
REFERENCE = "compressed"  # the kind every other is compared with


@dataclass(frozen=True)
class Comparison:
    """The curves at one context: ``at[i]`` is curve i's bytes there (exact)."""

    context: int
    kv_dtype: str
    curves: tuple[Curve, ...]
    at: tuple[int, ...]


def compare(context: int = 131072, kv_dtype: str = "bf16") -> Comparison:
    """Every curve of :func:`sweep` at ``kv_dtype``, read at ``context`` (one of
    :data:`CONTEXTS`; ValueError naming it otherwise)."""
    if context not in CONTEXTS:
        raise ValueError(f"context={context!r}: the explorer's contexts are the doublings "
                         f"from {CONTEXTS[0]:,} to {CONTEXTS[-1]:,} tokens")
    curves = sweep(kv_dtype)
    k = CONTEXTS.index(context)
    return Comparison(context, kv_dtype, curves, tuple(c.bytes[k] for c in curves))


def render(c: Comparison) -> str:
    """A table: kind, model, one sequence at the context, and how many times V4's."""
    ref = c.at[[x.kind for x in c.curves].index(REFERENCE)]
    rows = []
    for curve, v in zip(c.curves, c.at, strict=True):
        beyond = " (past its longest context)" if curve.longest and c.context > curve.longest \
            else ""
        rows.append((curve.kind, curve.title + beyond, fmt_size(v), f"{v / ref:.1f}x"))
    return (f"<p>One sequence of <b>{c.context:,}</b> tokens, {c.kv_dtype} cache (V4's entries "
            "always in vLLM's 584-byte layout):</p>"
            + html_table(("kind", "model", "one sequence", "x V4-Pro"), rows,
                         (False, False, True, True)))


def _build(ax, curves) -> None:
    for curve, color in zip(curves, COLORS, strict=True):
        ax.plot([], [], color=color, marker="o", ms=4, lw=3.2 if curve.kind == REFERENCE else 2,
                label=f"{curve.kind}: {curve.title}")
    for color in COLORS:  # past the model's longest context, dotted
        ax.plot([], [], color=color, ls=":", lw=2.2, alpha=0.85)
    for color in COLORS:
        ax.plot([], [], ls="none", marker="o", ms=10, color=color, markeredgecolor="white",
                markeredgewidth=1.5)
    ax.axvline(CONTEXTS[0], color="0.35", ls=":", lw=1.8)
    context_axis(ax, CONTEXTS[0], CONTEXTS[-1])
    log_value_axis(ax)
    ax.set_ylim(2.0**-8, 2.0**11)  # 4 MiB .. 2 TiB: every curve at both dtypes (tested)
    ax.set_ylabel("cache of one sequence (GiB, log scale)")
    ax.legend(loc="upper left", frameon=True, framealpha=0.95, edgecolor="none", fontsize=10)


def draw(fig, c: Comparison) -> None:
    """Each curve (solid up to the model's longest context), the chosen context marked on
    each; built once, then updated in place."""
    if not fig.axes:
        _build(fig.add_subplot(), c.curves)
    ax = fig.axes[0]
    n = len(c.curves)
    lines, beyond, dots = ax.lines[:n], ax.lines[n:2 * n], ax.lines[2 * n:3 * n]
    vline = ax.lines[3 * n]
    for line, past, dot, curve, v in zip(lines, beyond, dots, c.curves, c.at, strict=True):
        y = [x / GIB for x in curve.bytes]
        k = sum(1 for t in CONTEXTS if curve.longest is None or t <= curve.longest)
        line.set_data(CONTEXTS[:k], y[:k])
        past.set_data(CONTEXTS[max(k - 1, 0):], y[max(k - 1, 0):])
        dot.set_data([c.context], [v / GIB])
    vline.set_xdata([c.context, c.context])
    ax.set_title(f"One sequence at {format_context(c.context)} tokens, {c.kv_dtype} cache")


def compressed_explorer(context: int = 131072, kv_dtype: str = "bf16"):
    """Controls: context (1K..1M, doubling) and the KV dtype of the models that take one."""
    style = {"description_width": "90px"}
    c = dict(
        context=widgets.SelectionSlider(options=[(format_context(t), t) for t in CONTEXTS],
                                        value=context, description="context", style=style),
        kv_dtype=widgets.Dropdown(options=list(DTYPES), value=kv_dtype, description="KV dtype",
                                  style=style),
    )
    return Explorer(c, compare, render, draw, figsize=(10, 5.2))
