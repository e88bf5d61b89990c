"""Notebook 07's explorer: a model's growing cache, constant state and total at a context.

:func:`split` is the computation (:func:`kvlib.models.estimate.estimate` of a bundled
model, or of a pasted ``config.json``); :func:`render` and :func:`draw` show it, and
:func:`hybrid_explorer` wires it to controls (model, pasted config, context).
"""

from __future__ import annotations

import ipywidgets as widgets

from kvlib.core.units import UNITS, fmt_size
from kvlib.models.catalog import BUNDLED, attention_label, title
from kvlib.models.estimate import Estimate, estimate
from kvlib.views.style import context_ticks, format_context
from kvlib.views.widgets.kit import labelled_hbars
from kvlib.views.widgets.models import pasted_config_box, read_pasted

__all__ = ["CONTEXTS", "split", "render", "draw", "hybrid_explorer"]

CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens
_BARS = (("growing cache", "#0072B2"), ("constant state", "#882255"))


def split(model: str, config: str, context: int) -> Estimate:
    """The bf16 cache and state of one sequence of ``context`` tokens.

    config: a pasted config.json (JSON text); when not blank it is read instead of ``model``.
    """
    pasted = read_pasted(config)  # notebook 05's reader of a pasted config
    return estimate(model if pasted is None else pasted[0], context=context)


def render(e: Estimate) -> str:
    """One line: cache, state and total, each in its own binary unit (``fmt_size``)."""
    kinds = ", ".join(f"{g.group.layers} {g.group.kind}" for g in e.groups)
    return (f"<p><b>{title(e.spec)}</b> ({attention_label(e.spec)}; {kinds}), bf16, "
            f"{e.context:,} tokens: growing cache {fmt_size(e.kv_bytes_per_sequence)} + "
            f"constant state {fmt_size(e.state_bytes_per_sequence)} = "
            f"<b>{fmt_size(e.total_bytes_per_sequence)}</b></p>")


def draw(fig, e: Estimate) -> None:
    """Two horizontal bars (cache, state) in GiB; built once, then updated in place."""
    if not fig.axes:
        ax = fig.add_subplot()
        ax.invert_yaxis()
        ax.set_xlabel("memory of one sequence (GiB)")
        ax.grid(axis="y", visible=False)
    ax = fig.axes[0]
    held = [e.kv_bytes_per_sequence, e.state_bytes_per_sequence]
    labelled_hbars(ax, [float(v) / UNITS["GiB"] for v in held], [fmt_size(v) for v in held],
                   [name for name, _ in _BARS], [c for _, c in _BARS])
    ax.set_title(f"{title(e.spec)}, {format_context(e.context)} tokens: "
                 f"{fmt_size(e.total_bytes_per_sequence)} per sequence")


def hybrid_explorer(model: str = "qwen3-next-80b-a3b", context: int = 131072):
    """Controls: bundled model, a text area for a pasted config.json, context (1K..1M)."""
    from kvlib.views.widgets.kit import Explorer

    style = {"description_width": "90px"}
    wide = widgets.Layout(width="95%")
    c = dict(
        model=widgets.Dropdown(options=[(m.title, n) for n, m in BUNDLED.items()], value=model,
                               description="model", style=style, layout=wide),
        config=pasted_config_box(style),
        context=widgets.SelectionSlider(options=[(format_context(t), t) for t in CONTEXTS],
                                        value=context, description="context", style=style,
                                        layout=wide),
    )
    return Explorer(c, split, render, draw, figsize=(10, 3.2))
