"""Notebook 04's explorer: what decoupled RoPE costs in bytes and saves in FLOPs.

Two designs that both put RoPE into an MLA layer:

(a) RoPE on the up-projected keys: the cache stays d_L per token per layer, but no
    absorbed path exists, so every step re-expands (and re-rotates) every cached
    latent into N_h keys and values. Its rotated key width is d_QK + d_R, so both
    designs score queries against keys of the same width.
(b) decoupled RoPE, absorbed: the cache grows to d_L + d_R, the step works on the
    latent directly.

:func:`rope_price` is the computation (plain, fast, called by the widget and by a
compared notebook cell); :func:`rope_explorer` wires it to controls. The other
sizes are DeepSeek V2's (``DEEPSEEK_V2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import ipywidgets as widgets
import numpy as np

from kvlib.core.decode_cost import PATHS
from kvlib.core.formulas import MLA, MLA_ROPE
from kvlib.core.units import UNITS, fmt_bytes
from kvlib.views.style import COLORS, context_axis, context_ticks, format_context, log_value_axis
from kvlib.views.widgets.kit import Explorer

__all__ = ["DEEPSEEK_V2", "CONTEXTS", "RopePrice", "rope_price", "render", "draw",
           "rope_explorer"]

# deepseek-ai/DeepSeek-V2 config.json (kvlib/models/configs/deepseek-v2.json): num_hidden_layers,
# num_attention_heads, hidden_size, qk_nope_head_dim, qk_rope_head_dim, v_head_dim,
# kv_lora_rank; bf16 cache (2 bytes per element).
DEEPSEEK_V2 = dict(N_L=60, N_h=128, d_in=5120, d_QK=128, d_R=64, d_V=128, d_L=512, b=2)

CONTEXTS = np.array(context_ticks(1024, 131072))  # 1K .. 128K tokens

RE_EXPAND = PATHS["MLA+RoPE(keys) naive"]  # (a)
ABSORBED = PATHS["MLA+RoPE absorbed"]  # (b)


@dataclass(frozen=True)
class RopePrice:
    """Cache bytes (all N_L layers) and decode FLOPs (one step, one layer) of (a) and (b).

    per_token: design -> bytes per token; per_sequence: design -> bytes at ``context``;
    flops: design -> FLOPs at ``context``; extra: (b)/(a) - 1 in bytes, exact;
    speedup: (a)/(b) in FLOPs at ``context``; sweep_bytes, sweep_flops: at CONTEXTS.
    """

    sizes: dict
    context: int
    per_token: dict
    per_sequence: dict
    flops: dict
    extra: Fraction
    speedup: float
    sweep_bytes: dict
    sweep_flops: dict


LABELS = {"a": "(a) RoPE on keys, re-expand", "b": "(b) decoupled RoPE, absorbed"}


def rope_price(d_L: int, d_R: int, N_h: int, context: int) -> RopePrice:
    """(a) vs (b) for a latent of d_L, a RoPE part of d_R, N_h heads, at ``context`` tokens;
    the remaining sizes are DeepSeek V2's."""
    s = {**DEEPSEEK_V2, "d_L": d_L, "d_R": d_R, "N_h": N_h}
    cache_a = dict(N_L=s["N_L"], d_L=d_L, b=s["b"])
    cache_b = dict(cache_a, d_R=d_R)
    step = {k: s[k] for k in ("N_h", "d_in", "d_QK", "d_V", "d_L")}
    step_a = dict(step, d_QK=s["d_QK"] + d_R)  # rotated keys as wide as (b)'s score width
    step_b = dict(step, d_R=d_R)
    per_token = {"a": MLA.bytes_per_token(**cache_a), "b": MLA_ROPE.bytes_per_token(**cache_b)}
    per_seq = {"a": MLA.bytes_per_sequence(**cache_a, N_KV=context),
               "b": MLA_ROPE.bytes_per_sequence(**cache_b, N_KV=context)}
    flops = {"a": RE_EXPAND.formula(**step_a, N_KV=context),
             "b": ABSORBED.formula(**step_b, N_KV=context)}
    return RopePrice(
        sizes=s, context=context, per_token=per_token, per_sequence=per_seq, flops=flops,
        extra=Fraction(per_token["b"], per_token["a"]) - 1,
        speedup=flops["a"] / flops["b"],
        sweep_bytes={"a": MLA.bytes_per_sequence(**cache_a, N_KV=CONTEXTS),
                     "b": MLA_ROPE.bytes_per_sequence(**cache_b, N_KV=CONTEXTS)},
        sweep_flops={"a": RE_EXPAND.formula(**step_a, N_KV=CONTEXTS),
                     "b": ABSORBED.formula(**step_b, N_KV=CONTEXTS)},
    )


def render(r: RopePrice) -> str:
    """HTML table: per token (B, KiB), one sequence (GiB), GFLOPs per step per layer."""
    rows = "".join(
        f"<tr><td>{LABELS[k]}</td><td>{r.per_token[k]:,}</td>"
        f"<td>{fmt_bytes(r.per_token[k], 'KiB')}</td><td>{fmt_bytes(r.per_sequence[k], 'GiB')}</td>"
        f"<td>{r.flops[k] / 1e9:,.2f}</td></tr>"
        for k in ("a", "b")
    )
    return (f"<table><tr><th>design</th><th>bytes/token</th><th>KiB/token</th>"
            f"<th>{format_context(r.context)} tokens</th><th>GFLOPs/step/layer</th></tr>{rows}"
            f"</table><p>decoupling costs <b>{float(r.extra):+.1%}</b> cache and makes a decode "
            f"step <b>{r.speedup:,.0f}x</b> cheaper at {format_context(r.context)} tokens</p>")


def draw(fig, r: RopePrice) -> None:
    """Left: cache of one sequence vs context. Right: decode FLOPs per step per layer."""
    if not fig.axes:
        left, right = fig.subplots(1, 2)
        for ax, title, ylabel in (
                (left, "Cache: what (b) adds", "KV cache, one sequence (GiB, log scale)"),
                (right, "Compute: what (b) saves", "GFLOPs per decode step per layer (log scale)")):
            for k, color in (("a", COLORS["MLA"]), ("b", COLORS["MLA+RoPE"])):
                ax.plot(CONTEXTS, np.ones(len(CONTEXTS)), marker="o", color=color,
                        label=LABELS[k])
            ax.axvline(CONTEXTS[0], color="black", ls=":", lw=1.5, label="selected context")
            context_axis(ax)
            log_value_axis(ax)
            ax.set_title(title)
            ax.set_ylabel(ylabel)
            # Both series rise to the right, so the upper left corner is free.
            ax.legend(loc="upper left", frameon=False, fontsize=11)
    left, right = fig.axes
    for k, i in (("a", 0), ("b", 1)):
        left.lines[i].set_ydata(r.sweep_bytes[k] / UNITS["GiB"])
        right.lines[i].set_ydata(r.sweep_flops[k] / 1e9)
    for ax in (left, right):
        ax.lines[2].set_xdata([r.context, r.context])
        ax.relim()
        ax.autoscale_view(scalex=False)
    s = r.sizes
    fig.suptitle(f"{s['N_L']} layers, {s['N_h']} heads, $d_L$ = {s['d_L']}, $d_R$ = {s['d_R']}, "
                 f"bf16: +{float(r.extra):.1%} bytes buys {r.speedup:,.0f}x fewer FLOPs at "
                 f"{format_context(r.context)}",
                 fontsize=15, fontweight="bold")


def rope_explorer(d_L=512, d_R=64, N_h=128, context=131072) -> Explorer:
    """Controls for the latent width, the RoPE width, the head count and the context."""
    style = {"description_width": "120px"}
    c = dict(
        d_L=widgets.Dropdown(options=[128, 256, 384, 512, 768, 1024], value=d_L,
                             description="latent d_L", style=style),
        d_R=widgets.Dropdown(options=[16, 32, 64, 128], value=d_R,
                             description="RoPE width d_R", style=style),
        N_h=widgets.Dropdown(options=[8, 16, 32, 64, 128], value=N_h,
                             description="heads N_h", style=style),
        context=widgets.SelectionSlider(options=[(format_context(t), int(t)) for t in CONTEXTS],
                                        value=context, description="context", style=style),
    )
    return Explorer(c, rope_price, render, draw, figsize=(13, 5.6))
