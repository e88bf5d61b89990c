"""Notebook 02's explorer: MHA vs GQA vs MQA for one set of sizes.

:func:`compare_heads` is the computation (plain, fast, called by the widget and by
a compared notebook cell); :func:`gqa_explorer` wires it to controls.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from kvlib.core.dtypes import DTYPE_BYTES, bytes_per_element
from kvlib.core.formulas import GQA, MHA, MQA
from kvlib.core.units import UNITS
from kvlib.views.style import COLORS, context_axis, context_ticks, format_context, log_value_axis
from kvlib.views.widgets.kit import (
    DESCRIPTION_STYLE,
    Explorer,
    fmt_size,
    html_table,
    legend_under_data,
    live_view,
    whole_decades,
)

__all__ = ["HeadComparison", "compare_heads", "divisors", "follow_query_heads", "gqa_explorer",
           "render", "draw", "CONTEXTS"]

CONTEXTS = np.array(context_ticks(1024, 131072))  # 1K .. 128K tokens


def divisors(n: int) -> list[int]:
    """Positive divisors of n: the KV-head counts a layer with n query heads allows."""
    return [k for k in range(1, n + 1) if n % k == 0]


@dataclass(frozen=True)
class HeadComparison:
    """Bytes per token and per sequence for MHA, GQA and MQA of one shape.

    per_token, per_sequence: kind -> bytes (exact int). sweep: kind -> bytes at CONTEXTS.
    """

    sizes: dict
    dtype: str
    context: int
    per_token: dict
    per_sequence: dict
    sweep: dict


def compare_heads(N_L: int, N_h: int, N_g: int, head_dim: int, dtype: str, context: int):
    """MHA (N_h KV heads), GQA (N_g) and MQA (1) for N_L layers of head width ``head_dim``."""
    b = bytes_per_element(dtype)
    common = dict(N_L=N_L, N_h=N_h, d_QK=head_dim, d_V=head_dim, b=b)
    kinds = {"MHA": (MHA, {}), "GQA": (GQA, {"N_g": N_g}), "MQA": (MQA, {})}
    per_token, per_seq, sweep = {}, {}, {}
    for name, (att, extra) in kinds.items():
        kw = {**common, **extra}
        args = {k: v for k, v in kw.items() if k in att.bytes_per_token.args or k == "N_h"}
        per_token[name] = att.bytes_per_token(**args)
        per_seq[name] = att.bytes_per_sequence(**args, N_KV=context)
        sweep[name] = att.bytes_per_sequence(**args, N_KV=CONTEXTS)
    return HeadComparison(dict(N_L=N_L, N_h=N_h, N_g=N_g, head_dim=head_dim), dtype, context,
                          per_token, per_seq, sweep)


def render(r: HeadComparison) -> str:
    """HTML table: KV heads, bytes per token (exact, and in a readable unit), one sequence,
    saving vs MHA. Each size takes its own binary unit, so a small setting never reads 0 GiB."""
    heads = {"MHA": r.sizes["N_h"], "GQA": r.sizes["N_g"], "MQA": 1}
    rows = [[k, f"{heads[k]}", f"{r.per_token[k]:,}", fmt_size(r.per_token[k]),
             fmt_size(r.per_sequence[k]), f"{r.per_token['MHA'] / r.per_token[k]:g}x"]
            for k in ("MHA", "GQA", "MQA")]
    return html_table(["attention", "KV heads", "bytes/token", "per token",
                       f"{format_context(r.context)} tokens", "saving"],
                      rows, numeric=[False] + [True] * 5)


def _plural(n: int, noun: str) -> str:
    """``"1 layer"``, ``"80 layers"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def draw(fig, r: HeadComparison) -> None:
    """Cache vs context, one line per kind; built once, then updated in place."""
    s = r.sizes
    if not fig.axes:
        ax = fig.add_subplot()
        for k in ("MHA", "GQA", "MQA"):
            ax.plot(CONTEXTS, np.ones(len(CONTEXTS)), marker="o", color=COLORS[k], label=k)
        ax.axvline(CONTEXTS[0], color="black", ls=":", lw=1.5)
        context_axis(ax)
        log_value_axis(ax)
        ax.set_ylabel("KV cache of one sequence (GiB)")
    ax = fig.axes[0]
    heads = {"MHA": s["N_h"], "GQA": s["N_g"], "MQA": 1}
    for line, k in zip(ax.lines[:3], ("MHA", "GQA", "MQA"), strict=True):
        line.set_ydata(r.sweep[k] / UNITS["GiB"])
        line.set_label(f"{k}: {_plural(heads[k], 'KV head')}")
    ax.lines[3].set_xdata([r.context, r.context])
    # kept with the axes while its entries stay, as a context, dtype or layer move leaves them
    legend_under_data(ax, loc="upper left", frameon=False)
    ax.relim()
    ax.autoscale_view(scalex=False)
    # y fixed: nothing sits above the axes, and the automatic placement costs a layout pass
    ax.set_title(f"{_plural(s['N_L'], 'layer')}, {_plural(s['N_h'], 'query head')}, "
                 f"head dim {s['head_dim']}, {r.dtype}", y=1.0)


def follow_query_heads(change: dict, controls: dict) -> None:
    """KV heads must divide query heads: offer only divisors, keep the closest valid value
    (the largest divisor not above the old one). Set in one message to the page."""
    if change["owner"] is not controls["N_h"]:
        return
    n_g = controls["N_g"]
    opts = divisors(change["new"])
    old = n_g.value
    with n_g.hold_sync():
        n_g.options = opts
        n_g.value = max(k for k in opts if k <= old)


def gqa_explorer(N_L=80, N_h=64, N_g=8, head_dim=128, dtype="bf16", context=8192) -> Explorer:
    """Controls for layers, query heads, KV heads (divisors only), head dim, dtype, context.

    Changing the query heads re-offers the KV heads and redraws once (``adjust``)."""
    style = DESCRIPTION_STYLE
    c = dict(
        N_L=widgets.IntSlider(N_L, min=1, max=128, description="layers N_L", style=style),
        N_h=widgets.Dropdown(options=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 64, 96, 128], value=N_h,
                             description="query heads N_h", style=style),
        N_g=widgets.Dropdown(options=divisors(N_h), value=N_g, description="KV heads N_g",
                             style=style),
        head_dim=widgets.Dropdown(options=[64, 80, 96, 128, 192, 256], value=head_dim,
                                  description="head dim", style=style),
        dtype=widgets.Dropdown(options=list(DTYPE_BYTES), value=dtype, description="KV dtype",
                               style=style),
        context=widgets.SelectionSlider(options=[(format_context(t), int(t)) for t in CONTEXTS],
                                        value=context, description="context", style=style),
    )
    return Explorer(c, compare_heads, render, live_view(draw, ylim=whole_decades),
                    adjust=follow_query_heads)
