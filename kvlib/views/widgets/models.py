"""Notebook 05's explorer: a bundled model's cache, broken down by layer group.

:func:`breakdown` is the computation (it is :func:`kvlib.models.estimate`, the
same one ``kvlib estimate`` prints); :func:`render` and :func:`draw` show it, and
:func:`model_explorer` wires it to controls (model, context, batch, KV dtype).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from kvlib.core.dtypes import DTYPE_BYTES
from kvlib.core.units import UNITS, fmt_bytes
from kvlib.models.catalog import BUNDLED, attention_label, title
from kvlib.models.estimate import Estimate, estimate
from kvlib.views.figures.models import KIND_COLORS
from kvlib.views.style import context_ticks, format_context

__all__ = ["CONTEXTS", "breakdown", "render", "draw", "model_explorer"]

CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens


def breakdown(model: str, context: int, batch: int, kv_dtype: str) -> Estimate:
    """The cache of ``batch`` sequences of ``context`` tokens of a bundled model, per group."""
    return estimate(model, context=context, batch=batch, kv_dtype=kv_dtype)


def _group_name(g) -> str:
    window = f" {g.group.window:,}" if g.group.window else ""
    return f"{g.group.layers} {g.group.kind}{window}"


def _held(e: Estimate, g) -> int:
    """What the group holds for the whole batch: its growing cache plus its constant states."""
    return g.bytes_per_batch + e.batch * g.state_bytes_per_sequence


def render(e: Estimate) -> str:
    """HTML table: one row per layer group (layers, window, tokens kept, bytes), then totals.

    A constant-size state shows "state" instead of tokens kept and per-token bytes."""
    rows = "".join(
        f"<tr><td>{g.group.kind}</td><td>{g.group.layers}</td>"
        f"<td>{'' if g.group.window is None else f'{g.group.window:,}'}</td>"
        + (f"<td>{g.cached_tokens:,}</td><td>{fmt_bytes(g.bytes_per_token, 'KiB')}</td>"
           if g.group.grows else "<td>state</td><td>-</td>")
        + f"<td>{fmt_bytes(_held(e, g), 'GiB')}</td></tr>"
        for g in e.groups)
    limit = e.spec.max_position_embeddings
    warn = (f"<p><b>Beyond this model's max_position_embeddings ({limit:,}).</b></p>"
            if limit is not None and e.context > limit else "")
    return (
        f"<p><b>{title(e.spec)}</b> ({attention_label(e.spec)}), {e.kv_dtype}, "
        f"{e.context:,} tokens x {e.batch} sequence{'s' if e.batch > 1 else ''}</p>{warn}"
        "<table><tr><th>kind</th><th>layers</th><th>window</th><th>tokens kept</th>"
        f"<th>per token</th><th>x {e.batch} sequences</th></tr>{rows}"
        f"<tr><td><b>all</b></td><td>{e.spec.num_layers}</td><td></td><td></td>"
        f"<td><b>{fmt_bytes(e.kv_bytes_per_token, 'KiB')}</b></td>"
        f"<td><b>{fmt_bytes(e.total_bytes, 'GiB')}</b></td></tr></table>")


def draw(fig, e: Estimate) -> None:
    """Horizontal bars: each group's share of the batch's cache (GiB), first group on top.

    Built once, then updated in place; a model with another number of layer
    groups replaces the bars and their labels.
    """
    if not fig.axes:
        ax = fig.add_subplot()
        ax.invert_yaxis()
        ax.margins(x=0.25)
        ax.set_xlabel("KV cache (and state) of the batch (GiB)")
        ax.grid(axis="y", visible=False)
    ax = fig.axes[0]
    values = np.array([float(_held(e, g)) for g in e.groups]) / UNITS["GiB"]
    y = np.arange(len(values))
    if len(ax.patches) != len(values):
        for artist in [*ax.containers, *ax.texts]:
            artist.remove()
        ax.barh(y, values)
        for yi in y:
            ax.annotate("", (0, yi), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=13)
    for rect, text, g, v, yi in zip(ax.patches, ax.texts, e.groups, values, y, strict=True):
        rect.set_width(v)
        rect.set_facecolor(KIND_COLORS[g.group.kind])
        text.set_text(f"{v:,.2f} GiB")
        text.xy = (v, yi)
    ax.set_yticks(y, [_group_name(g) for g in e.groups])
    ax.relim()
    ax.autoscale_view()
    ax.set_title(f"{title(e.spec)}: {format_context(e.context)} tokens x {e.batch}, "
                 f"{e.kv_dtype}; total {fmt_bytes(e.total_bytes, 'GiB')}")


def model_explorer(model="gemma-3-27b", context=131072, batch=1, kv_dtype="bf16"):
    """Controls: bundled model, context (1K..1M), batch (1..256), KV dtype."""
    from kvlib.views.widgets.kit import Explorer

    style = {"description_width": "90px"}
    c = dict(
        model=widgets.Dropdown(options=[(m.title, n) for n, m in BUNDLED.items()], value=model,
                               description="model", style=style),
        context=widgets.SelectionSlider(options=[(format_context(t), t) for t in CONTEXTS],
                                        value=context, description="context", style=style),
        batch=widgets.IntSlider(batch, min=1, max=256, description="batch", style=style),
        kv_dtype=widgets.Dropdown(options=list(DTYPE_BYTES), value=kv_dtype,
                                  description="KV dtype", style=style),
    )
    return Explorer(c, breakdown, render, draw, figsize=(10, 4.2))
