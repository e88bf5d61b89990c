"""Notebook 07's explorer: a model's growing cache and constant state against the context.

:func:`split` is the computation (:func:`kvlib.models.estimate.estimate` of a bundled
model, or of a pasted ``config.json``, at the chosen context, and the same model's cache
at every context of the slider); :func:`render` and :func:`draw` show it, and
:func:`hybrid_explorer` wires it to controls (model, pasted config, context).

The figure is the lesson of the notebook at a glance: the cache rises with the context,
the state is a flat line, and a marker says where the chosen context sits. Its axes span
every bundled model from 1K to 1M tokens (:data:`VALUE_LIMITS_GIB`, tested), so neither a
context nor a model move rescales them, and every move redraws only the lines
(:mod:`kvlib.views.widgets.frame`); a pasted model beyond them widens the value axis by
factors of 16. The legend lists only what applies to the model shown; contexts beyond the
model's ``max_position_embeddings`` are drawn dotted, and the readout says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as widgets

from kvlib.core.units import UNITS, fmt_size
from kvlib.models.catalog import BUNDLED, attention_label, title
from kvlib.models.estimate import Estimate, estimate
from kvlib.views.style import context_axis, context_ticks, format_context, plain_log_axis
from kvlib.views.widgets.kit import Explorer, legend_under_data
from kvlib.views.widgets.models import pasted_config_box, read_pasted

__all__ = ["CONTEXTS", "VALUE_LIMITS_GIB", "HybridView", "split", "render", "draw",
           "hybrid_explorer"]

CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens
# The value axis, in GiB: 1 MiB to 16 TiB (2^-10 .. 2^14), ticked in binary units as the value
# labels are (4 MiB, 64 MiB, 1 GiB, ... 4 TiB: x16). Every bundled model's cache and state from
# 1K to 1M tokens, in bf16, lies inside, with a factor 2 of room below and 10 above for the
# label over its marker (tests/test_widgets_hybrid.py): 6 MiB (Nemotron 3 Nano's cache at 1K)
# to 320 GiB (Llama 3 70B's at 1M).
VALUE_LIMITS_GIB = (2.0**-10, 2.0**14)
_TICK_STEP = 4  # binary orders between ticks (x16), and the step of a widened axis
CACHE_COLOR, STATE_COLOR = "#0072B2", "#882255"
GIB = UNITS["GiB"]


@dataclass(frozen=True)
class HybridView:
    """One model at one context, and its growing cache at every context of the slider.

    at: the estimate at the chosen context (bf16 cache, vLLM's state dtypes);
    contexts: :data:`CONTEXTS` (tokens); cache: bytes of growing cache of one sequence at
    each, from the same model (``ModelSpec.kv_bytes_per_sequence``).
    """

    at: Estimate
    contexts: tuple[int, ...]
    cache: tuple[int, ...]


def split(model: str, config: str, context: int) -> HybridView:
    """The bf16 cache and state of one sequence of ``context`` tokens, and the cache of one
    sequence at every context of :data:`CONTEXTS`.

    config: a pasted config.json (JSON text); when not blank it is read instead of ``model``.
    """
    pasted = read_pasted(config)  # notebook 05's reader of a pasted config
    at = estimate(model if pasted is None else pasted[0], context=context)
    cache = tuple(at.spec.kv_bytes_per_sequence(t, at.b) for t in CONTEXTS)
    return HybridView(at, tuple(CONTEXTS), cache)


def render(view: HybridView) -> str:
    """One line: cache, state and total, each in its own binary unit (``fmt_size``)."""
    e = view.at
    kinds = ", ".join(f"{g.group.layers} {g.group.kind}" for g in e.groups)
    longest = e.spec.max_position_embeddings
    beyond = (f" <i>Beyond the model's longest context ({longest:,} tokens, its config's "
              f"max_position_embeddings).</i>" if longest and e.context > longest else "")
    return (f"<p><b>{title(e.spec)}</b> ({attention_label(e.spec)}; {kinds}), bf16, "
            f"{e.context:,} tokens: growing cache {fmt_size(e.kv_bytes_per_sequence)} + "
            f"constant state {fmt_size(e.state_bytes_per_sequence)} = "
            f"<b>{fmt_size(e.total_bytes_per_sequence)}</b>.{beyond}</p>")


def value_limits(gib) -> tuple[float, float]:
    """:data:`VALUE_LIMITS_GIB`, widened by factors of 16 where a value (GiB, > 0) has less
    than a factor 2 of room below it or 10 above it (a pasted model beyond the catalogue)."""
    lo, hi = VALUE_LIMITS_GIB
    values = [v for v in gib if v > 0]
    if not values:
        return lo, hi
    first = math.log2(lo)  # the limits stay at 2^(first + 4 k)

    def step(v: float, rounding) -> float:
        return 2.0 ** (first + _TICK_STEP * rounding((math.log2(v) - first) / _TICK_STEP))

    return min(lo, step(min(values) / 2, math.floor)), max(hi, step(max(values) * 10, math.ceil))


def _build(ax) -> None:
    ax.plot([], [], color=CACHE_COLOR, marker="o", lw=2.5)
    ax.plot([], [], color=CACHE_COLOR, marker="o", lw=2, ls=":", alpha=0.45,
            label="beyond the model's longest context")
    ax.plot([], [], color=STATE_COLOR, ls="--", lw=2.5, label="constant state (recurrent layers)")
    ax.axvline(CONTEXTS[0], ymax=0.72, color="0.35", ls=":", lw=1.8)  # stops under the legend
    # the chosen context on each line: the state's marker larger and under the cache's, so
    # both show where the two values meet
    ax.plot([], [], ls="none", marker="o", ms=17, color=STATE_COLOR, markeredgecolor="white",
            markeredgewidth=2)
    ax.plot([], [], ls="none", marker="o", ms=11, color=CACHE_COLOR, markeredgecolor="white",
            markeredgewidth=1.5)
    for _ in range(2):
        ax.annotate("", (CONTEXTS[0], 1.0), xytext=(12, 0), textcoords="offset points",
                    fontsize=13, fontweight="bold")
    context_axis(ax, CONTEXTS[0], CONTEXTS[-1])
    # binary units, as the value labels: 4 MiB, 64 MiB, 1 GiB ... (x16)
    plain_log_axis(ax.yaxis, base=2.0**_TICK_STEP, label=lambda v: fmt_size(round(v * GIB)))
    ax.set_ylabel("one sequence (log scale)")


def _legend(ax, view: HybridView) -> None:
    """The entries that apply to this model (:func:`legend_under_data`: rebuilt only when
    they change, kept with the axes; the lines rise to the right, so the upper left is free)."""
    cache, beyond, state = ax.lines[:3]
    windowed = any(g.group.window is not None for g in view.at.groups)
    cache.set_label("growing cache (attention layers" +
                    ("; windowed ones stop at their window)" if windowed else ")"))
    shown = [h for h in (cache, beyond, state) if h.get_visible() and len(h.get_xdata())]
    legend_under_data(ax, shown, loc="upper left", frameon=True, framealpha=0.95, edgecolor="none",
                      fontsize=12)


def draw(fig, view: HybridView) -> None:
    """Cache (solid, one marker per context; dotted beyond the model's longest context) and
    state (dashed) of one sequence, on log axes, the chosen context marked on both; built
    once, then updated in place."""
    if not fig.axes:
        _build(fig.add_subplot())
    ax = fig.axes[0]
    e, gib = view.at, GIB
    cache_line, beyond_line, state_line, vline, state_dot, cache_dot = ax.lines
    cache = [float(v) / gib for v in view.cache]
    state = float(e.state_bytes_per_sequence) / gib
    here = [float(e.kv_bytes_per_sequence) / gib, state]
    longest = e.spec.max_position_embeddings or view.contexts[-1]
    n = sum(1 for t in view.contexts if t <= longest)  # points the model can run
    cache_line.set_data(view.contexts[:n], cache[:n])
    beyond_line.set_data(view.contexts[max(n - 1, 0):], cache[max(n - 1, 0):])
    beyond_line.set_visible(n < len(view.contexts))
    state_line.set_data([view.contexts[0] / 2, view.contexts[-1] * 2], [state, state])
    state_line.set_visible(state > 0)  # a model without recurrent layers keeps no state
    vline.set_xdata([e.context, e.context])
    # Labels where the lines are not: the larger value's above and to the left of its
    # marker (the cache rises to the right), the smaller's below and to the right; each
    # turns inward near an end of the axis, so that no label reaches beyond the axes.
    k = view.contexts.index(e.context) if e.context in view.contexts else len(view.contexts) // 2
    larger = 0 if here[0] >= here[1] else 1
    for i, (dot, text) in enumerate(zip((cache_dot, state_dot), ax.texts, strict=True)):
        shown = here[i] > 0
        dot.set_data([e.context], [here[i]] if shown else [math.nan])
        text.set_visible(shown)
        text.set_text(fmt_size(e.kv_bytes_per_sequence if i == 0 else e.state_bytes_per_sequence))
        text.xy = (e.context, here[i] if shown else 1.0)
        up = i == larger
        left = k >= 2 if up else k > len(view.contexts) - 3
        # turned inward, a label sits on the side the cache line comes from: higher above it
        # (or lower below it) to clear the line's next step of a doubling
        dy = 8 if left == up else 20
        text.set_position((-12 if left else 12, dy if up else -dy))
        text.set_horizontalalignment("right" if left else "left")
        text.set_verticalalignment("bottom" if up else "top")
        text.set_color(CACHE_COLOR if i == 0 else STATE_COLOR)
    _legend(ax, view)
    ax.set_ylim(value_limits([*cache, state]))
    # short enough to stay inside the Axes for every bundled model: a wider title would be
    # laid out again (the y label says "one sequence")
    ax.set_title(f"{title(e.spec)}, {format_context(e.context)} tokens: "
                 f"{fmt_size(e.total_bytes_per_sequence)} in all")


def hybrid_explorer(model: str = "qwen3-next-80b-a3b", context: int = 131072):
    """Controls: bundled model, a text area for a pasted config.json, context (1K..1M)."""
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
    return Explorer(c, split, render, draw, figsize=(10, 4.2))
