"""Notebook 04's explorer: what decoupled RoPE costs in bytes and saves in FLOPs.

Three decoders of an MLA layer with RoPE, at DeepSeek V2's shape (query compression,
q_lora_rank d_Lq, included: every design projects its queries the same way):

(a) RoPE on the up-projected keys, re-expand the keys, absorb the values: the cache
    stays d_L per token per layer; RoPE blocks absorbing W^LK_h only (DeepSeek-V2,
    arXiv:2405.04434, section 2.1.3), so every step re-expands (and re-rotates)
    every cached latent into N_h keys, but sums the latents with the attention
    weights and applies W^LV_h once per head. The fair alternative to decoupling,
    and the headline comparison.
(a') the naive extreme: re-expand keys *and* values from every cached latent.
(b) decoupled RoPE, absorbed: the cache grows to d_L + d_R, the step works on the
    latent directly.

The rotated keys of (a) and (a') are d_QK + d_R wide, so all three score queries
against keys of the same width. :func:`rope_price` is the computation (plain, fast,
called by the widget and by a compared notebook cell); :func:`rope_explorer` wires
it to controls; :func:`rope_view` draws the explorer's figure at one setting, for the
notebook to show statically and to hand to the explorer as its first picture (drawn
once). The other sizes are DeepSeek V2's (``DEEPSEEK_V2``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from kvlib.core.decode_cost import PATHS
from kvlib.core.formulas import MLA, MLA_ROPE
from kvlib.core.units import UNITS
from kvlib.views.style import COLORS, context_axis, context_ticks, format_context, log_value_axis
from kvlib.views.widgets.kit import (
    DESCRIPTION_STYLE,
    Explorer,
    LiveFigure,
    fmt_size,
    html_table,
    live_view,
)

__all__ = ["DEEPSEEK_V2", "CONTEXTS", "OPTIONS", "RopePrice", "rope_price", "render", "draw",
           "live_draw", "rope_view", "rope_explorer", "value_limits", "LABELS", "DESIGNS"]

# deepseek-ai/DeepSeek-V2 config.json (kvlib/models/configs/deepseek-v2.json): num_hidden_layers,
# num_attention_heads, hidden_size, qk_nope_head_dim, qk_rope_head_dim, v_head_dim,
# kv_lora_rank, q_lora_rank; bf16 cache (2 bytes per element).
DEEPSEEK_V2 = dict(N_L=60, N_h=128, d_in=5120, d_QK=128, d_R=64, d_V=128, d_L=512, d_Lq=1536,
                   b=2)

CONTEXTS = np.array(context_ticks(1024, 131072))  # 1K .. 128K tokens

DESIGNS = {  # design -> its decode path (DeepSeek's query compression in all three)
    "a": PATHS["MLA+RoPE(keys) absorbed values, query latent"],
    "naive": PATHS["MLA+RoPE(keys) naive, query latent"],
    "b": PATHS["MLA+RoPE absorbed, query latent"],
}
LABELS = {"a": "(a) RoPE on keys: re-expand keys, absorb values",
          "naive": "(a') RoPE on keys: re-expand keys and values",
          "b": "(b) decoupled RoPE, absorbed"}


@dataclass(frozen=True)
class RopePrice:
    """Cache bytes (all N_L layers) and decode FLOPs (one step, one layer) of the designs.

    per_token, per_sequence: "a" (latent only: (a) and (a') cache the same) and "b" ->
    bytes per token, bytes at ``context``; flops: "a", "naive", "b" -> FLOPs at
    ``context``; extra: (b)/(a) - 1 in bytes, exact; speedup: (a)/(b) in FLOPs at
    ``context`` (the headline); naive_speedup: (a')/(b); sweep_bytes, sweep_flops:
    the same at CONTEXTS.
    """

    sizes: dict
    context: int
    per_token: dict
    per_sequence: dict
    flops: dict
    extra: Fraction
    speedup: float
    naive_speedup: float
    sweep_bytes: dict
    sweep_flops: dict


def _step_sizes(s: dict) -> dict:
    """Decode-path sizes per design: (a) and (a') rotate keys d_QK + d_R wide."""
    step = {k: s[k] for k in ("N_h", "d_in", "d_QK", "d_V", "d_L", "d_Lq")}
    keys = dict(step, d_QK=s["d_QK"] + s["d_R"])
    return {"a": keys, "naive": keys, "b": dict(step, d_R=s["d_R"])}


def rope_price(d_L: int, d_R: int, N_h: int, context: int) -> RopePrice:
    """(a), (a') and (b) for a latent of d_L, a RoPE part of d_R, N_h heads, at ``context``
    tokens; the remaining sizes are DeepSeek V2's."""
    s = {**DEEPSEEK_V2, "d_L": d_L, "d_R": d_R, "N_h": N_h}
    cache_a = dict(N_L=s["N_L"], d_L=d_L, b=s["b"])
    cache_b = dict(cache_a, d_R=d_R)
    step = _step_sizes(s)
    per_token = {"a": MLA.bytes_per_token(**cache_a), "b": MLA_ROPE.bytes_per_token(**cache_b)}
    per_seq = {"a": MLA.bytes_per_sequence(**cache_a, N_KV=context),
               "b": MLA_ROPE.bytes_per_sequence(**cache_b, N_KV=context)}
    flops = {k: p.formula(**step[k], N_KV=context) for k, p in DESIGNS.items()}
    return RopePrice(
        sizes=s, context=context, per_token=per_token, per_sequence=per_seq, flops=flops,
        extra=Fraction(per_token["b"], per_token["a"]) - 1,
        speedup=flops["a"] / flops["b"], naive_speedup=flops["naive"] / flops["b"],
        sweep_bytes={"a": MLA.bytes_per_sequence(**cache_a, N_KV=CONTEXTS),
                     "b": MLA_ROPE.bytes_per_sequence(**cache_b, N_KV=CONTEXTS)},
        sweep_flops={k: p.formula(**step[k], N_KV=CONTEXTS) for k, p in DESIGNS.items()},
    )


def render(r: RopePrice) -> str:
    """HTML table: per token (exact B, readable unit), one sequence, GFLOPs per step per
    layer; then the headline. Each size takes its own binary unit (never 0 GiB)."""
    rows = [[LABELS[k], f"{r.per_token[c]:,}", fmt_size(r.per_token[c]),
             fmt_size(r.per_sequence[c]), f"{r.flops[k] / 1e9:,.2f}"]
            for k, c in (("a", "a"), ("naive", "a"), ("b", "b"))]
    table = html_table(["design", "bytes/token", "per token",
                        f"{format_context(r.context)} tokens", "GFLOPs/step/layer"],
                       rows, numeric=[False] + [True] * 4)
    return (f"{table}<p>decoupling costs <b>{float(r.extra):+.1%}</b> cache and makes a decode "
            f"step <b>{r.speedup:,.0f}x</b> cheaper than (a) at {format_context(r.context)} "
            f"tokens ({r.naive_speedup:,.0f}x cheaper than the naive extreme (a'))</p>")


_SERIES = {"left": (("a", COLORS["MLA"], "-"), ("b", COLORS["MLA+RoPE"], "-")),
           "right": (("naive", COLORS["MLA"], ":"), ("a", COLORS["MLA"], "-"),
                     ("b", COLORS["MLA+RoPE"], "-"))}
# Legend entries short enough for the house legend size (13 pt, two axis labels' 15 pt)
# to leave each panel's upper left corner free; the readout's table spells the designs out.
_LEGEND = {"left": {"a": "(a), (a') latent only", "b": "(b) latent + RoPE key"},
           "right": {"naive": "(a') re-expand keys and values",
                     "a": "(a) re-expand keys, absorb values",
                     "b": "(b) decoupled RoPE, absorbed"}}


def draw(fig, r: RopePrice) -> None:
    """Left: cache of one sequence vs context. Right: decode FLOPs per step per layer."""
    if not fig.axes:
        left, right = fig.subplots(1, 2)
        for ax, side, title, ylabel in (
                (left, "left", "Cache: what (b) adds", "KV cache, one sequence (GiB, log scale)"),
                (right, "right", "Compute: what (b) saves",
                 "GFLOPs per decode step per layer (log scale)")):
            for k, color, ls in _SERIES[side]:
                ax.plot(CONTEXTS, np.ones(len(CONTEXTS)), marker="o", color=color, ls=ls,
                        label=_LEGEND[side][k])
            ax.axvline(CONTEXTS[0], color="black", ls=":", lw=1.5, label="selected context")
            context_axis(ax)
            log_value_axis(ax)
            ax.set_title(title, y=1.0)  # nothing above the axes: no automatic placement
            ax.title.set_zorder(0.9)  # it never changes: under the lines, it is kept too
            ax.set_ylabel(ylabel)
            # Every series rises to the right, so the upper left corner is free; under the
            # lines (z-order 1.9 < 2), a live view keeps the legend instead of redrawing it.
            ax.legend(loc="upper left", frameon=False).set_zorder(1.9)
    left, right = fig.axes
    for ax, side, sweep, unit in ((left, "left", r.sweep_bytes, UNITS["GiB"]),
                                  (right, "right", r.sweep_flops, 1e9)):
        for i, (k, _, _) in enumerate(_SERIES[side]):
            ax.lines[i].set_ydata(sweep[k] / unit)
        ax.lines[len(_SERIES[side])].set_xdata([r.context, r.context])
        ax.relim()
        ax.autoscale_view(scalex=False)
    s = r.sizes
    fig.suptitle(f"{s['N_L']} layers, {s['N_h']} heads, $d_L$ = {s['d_L']}, $d_R$ = {s['d_R']}, "
                 f"bf16: +{float(r.extra):.1%} bytes buys {r.speedup:,.0f}x fewer FLOPs than (a) "
                 f"at {format_context(r.context)}",
                 fontsize=15, fontweight="bold")


def value_limits(d_Ls, d_Rs, N_hs, pad: float = 1.25) -> list[tuple[float, float]]:
    """Each panel's value range over every setting of the controls, padded by ``pad``: GiB
    (left), GFLOPs (right). Every byte and FLOP count grows with every size, so the
    smallest sizes at the shortest context and the largest at the longest bound them.

    The right panel gets a decade more above: its legend has four rows in the upper left,
    and at the largest sizes the steepest line, (a'), would otherwise run through them."""
    lo = rope_price(min(d_Ls), min(d_Rs), min(N_hs), int(CONTEXTS[0]))
    hi = rope_price(max(d_Ls), max(d_Rs), max(N_hs), int(CONTEXTS[-1]))
    out = []
    for sweep, unit, room in (("sweep_bytes", UNITS["GiB"], 1), ("sweep_flops", 1e9, 10)):
        small = min(float(v[0]) for v in getattr(lo, sweep).values()) / unit
        large = max(float(v[-1]) for v in getattr(hi, sweep).values()) / unit
        out.append((small / pad, large * pad * room))
    return out


# The controls' choices; the live view's value axes span them all (value_limits).
OPTIONS = dict(d_L=(128, 256, 384, 512, 768, 1024), d_R=(16, 32, 64, 128), N_h=(8, 16, 32, 64, 128))
FIGSIZE = (13, 5.6)


@lru_cache(maxsize=1)
def live_draw() -> Callable:
    """``draw`` with the value axes steady over every setting the controls offer (one
    function, so a :func:`rope_view` and the explorer it starts are seen to match)."""
    return live_view(draw, ylim=value_limits(OPTIONS["d_L"], OPTIONS["d_R"], OPTIONS["N_h"]))


_START = dict(d_L=512, d_R=64, N_h=128, context=131072)  # DeepSeek V2 at 128K tokens


def _given(**sizes) -> dict:
    return {k: v for k, v in sizes.items() if v is not None}


def rope_view(d_L=None, d_R=None, N_h=None, context=None) -> LiveFigure:
    """The explorer's figure at one setting (unset: DeepSeek V2's, as the explorer's), drawn
    once: a notebook shows it statically and passes it to :func:`rope_explorer`
    (``start=``), whose first picture it is."""
    setting = {**_START, **_given(d_L=d_L, d_R=d_R, N_h=N_h, context=context)}
    return LiveFigure(live_draw(), rope_price, setting, figsize=FIGSIZE)


def rope_explorer(d_L=None, d_R=None, N_h=None, context=None,
                  start: LiveFigure | None = None) -> Explorer:
    """Controls for the latent width, the RoPE width, the head count and the context
    (unset: DeepSeek V2's 512, 64, 128 at 128K tokens); the value axes span every setting
    the controls offer, so a move moves the lines only. ``start``: a :func:`rope_view`,
    whose setting the controls start at and whose picture is the first shown; a size
    given as well must be the view's."""
    given = _given(d_L=d_L, d_R=d_R, N_h=N_h, context=context)
    if start is not None:
        clash = {k: v for k, v in given.items() if start.values.get(k) != v}
        if clash:
            raise ValueError(f"rope_explorer: {clash} differs from the start view's "
                             f"{ {k: start.values.get(k) for k in clash} }")
        given = start.values
    d_L, d_R, N_h, context = ({**_START, **given}[k] for k in ("d_L", "d_R", "N_h", "context"))
    style = DESCRIPTION_STYLE
    c = dict(
        d_L=widgets.Dropdown(options=OPTIONS["d_L"], value=d_L, description="latent d_L",
                             style=style),
        d_R=widgets.Dropdown(options=OPTIONS["d_R"], value=d_R, description="RoPE width d_R",
                             style=style),
        N_h=widgets.Dropdown(options=OPTIONS["N_h"], value=N_h, description="heads N_h",
                             style=style),
        context=widgets.SelectionSlider(options=[(format_context(t), int(t)) for t in CONTEXTS],
                                        value=context, description="context", style=style),
    )
    return Explorer(c, rope_price, render, live_draw(), figsize=FIGSIZE, start=start)
