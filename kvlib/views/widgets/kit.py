"""The one widget pattern every notebook uses: controls -> compute -> readout + figure.

``compute`` is a plain kvlib function of the control values (fast: the SymPy work
was done at import), so a notebook can also call it in a compared cell with fixed
values. The figure is created once; each move updates its artists and sends the new
picture to the page. In the page, the readout carries the CSS class ``kvlib-readout``
and the figure (an ``<img>``) ``kvlib-plot`` (the browser test reads them).

Fast by construction (issue 14; ``make bench`` reports the timings, docs/benchmarks.md):

- **One redraw per user action.** A control that depends on another (notebook 02: the
  KV-head choices follow the query heads) is set by ``adjust`` inside the update, while
  the redraws its own change would trigger are held; the figure is drawn once, after.
- **Only what changed is drawn again.** :class:`~kvlib.views.widgets.frame.Frame` keeps
  the axes, grid, ticks and labels as pixels while they are unchanged and draws the data
  over them: the same pixels as a full draw (tested). ``live_view(draw, ylim=...)`` holds
  the value axes steady so that most moves are such partial draws; a bar chart's value
  axis ends on a round number (:func:`steady_limit`), and the house style draws grids and
  ticks under the bars (``axes.axisbelow``; Matplotlib's default draws bars first, which
  would make every move redraw the ticks).
- **One Agg canvas for the figure's life.** Matplotlib caches text metrics per renderer;
  ``savefig`` on a bare ``Figure`` makes a new canvas, so a new renderer and a cold cache,
  on every move. The constrained layout runs only when what it measures changed.
- **Binary PNG in one message.** The figure is an ``ipywidgets.Image``: its PNG
  (:func:`kvlib.views.png.encode_png`) travels as a binary buffer, not base64 in JSON,
  and the page swaps the picture of one ``<img>`` instead of building an output area.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kvlib.core.units import fmt_size  # re-exported: the widgets' tables use it
from kvlib.views.style import apply_style
from kvlib.views.widgets.frame import Frame

__all__ = ["Explorer", "LiveFigure", "CONTROL_LAYOUT", "DESCRIPTION_STYLE", "fmt_size",
           "html_table", "labelled_hbars", "legend_under_data", "live_view", "steady_limit",
           "whole_decades"]

# Wide controls: a slider's track is what the reader drags, so it gets the room
# (a 1-128 slider on a 90 px track jumps several values per pixel; at 300 px it does not).
CONTROL_LAYOUT = {"width": "98%", "min_width": "300px"}
DESCRIPTION_STYLE = {"description_width": "130px"}


def whole_decades(ax, pad: float = 1.25) -> tuple[float, float]:
    """Limits of a log value axis in whole decades around its visible lines' data, padded by
    ``pad`` so no marker sits on an edge: a small move keeps the axis still (and the kept
    part of the figure with it), so the lines are what moves."""
    ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines if ln.get_visible()]
    ys = [y[y > 0] for y in ys if np.any(y > 0)]
    lo, hi = min(y.min() for y in ys) / pad, max(y.max() for y in ys) * pad
    return 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))


def live_view(draw: Callable[[Figure, Any], None],
              ylim: Callable[[Any], tuple] | Sequence[tuple[float, float]],
              ) -> Callable[[Figure, Any], None]:
    """``draw`` for a live figure, with steady value limits per Axes, in order: a function
    of the Axes (e.g. :func:`whole_decades`) or fixed (lo, hi) pairs (e.g. spanning every
    setting the controls offer). Steady limits keep the axes still while the lines move,
    which reads as the change it is, and let the figure redraw only its data
    (:mod:`kvlib.views.widgets.frame`). A figure a notebook draws statically with ``draw``
    itself keeps its autoscaled limits; a :class:`LiveFigure` has the live ones."""
    def live(fig: Figure, result: Any) -> None:
        draw(fig, result)
        for i, ax in enumerate(fig.axes):
            ax.set_ylim(ylim(ax) if callable(ylim) else ylim[i])

    live.__name__ = live.__qualname__ = f"live_view({getattr(draw, '__name__', 'draw')})"
    live.__doc__ = draw.__doc__
    return live


def _live_figure(figsize) -> tuple[Figure, Frame]:
    """A constrained-layout figure on an Agg canvas of its own (kept: its renderer caches
    text metrics between moves), and the Frame that draws it."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, Frame(fig)


class LiveFigure:
    """A live view's figure at one setting, drawn once: shown as a static figure (a
    compared cell, the book) and handed to an :class:`Explorer` as its first picture, so
    the notebook does not draw the same figure twice (issue 14).

    draw(fig, result): the explorer's ``draw``; values: control name -> value, the
    setting; compute(**values) -> result (kept as ``result``). ``png``: the picture (PNG
    bytes), drawn by the :class:`~kvlib.views.widgets.frame.Frame` the explorer goes on
    drawing with.
    """

    def __init__(self, draw: Callable[[Figure, Any], None], compute: Callable[..., Any],
                 values: Mapping[str, Any], figsize=(10, 5.6)):
        apply_style()
        self.draw, self.compute, self.values = draw, compute, dict(values)
        self.fig, self.frame = _live_figure(figsize)
        self.result = compute(**self.values)
        draw(self.fig, self.result)
        self.png = self.frame.png()
        self._taken = False

    def _repr_png_(self) -> bytes:
        return self.png

    def __repr__(self) -> str:  # a notebook's text output: no memory address
        return f"LiveFigure({', '.join(f'{k}={v!r}' for k, v in self.values.items())})"

    def take(self, draw, compute, values: Mapping[str, Any]) -> LiveFigure:
        """This view, for the one explorer of this setting to draw on from now on.

        Refused (ValueError) for another draw, compute or setting, whose first picture
        this is not, and for a second explorer: it would draw on the same figure."""
        if draw is not self.draw or compute is not self.compute:
            raise ValueError("this LiveFigure was drawn by another draw or compute function")
        if dict(values) != self.values:
            raise ValueError(f"this LiveFigure shows {self.values}, not the explorer's "
                             f"starting setting {dict(values)}")
        if self._taken:
            raise ValueError("this LiveFigure already belongs to an explorer; draw another")
        self._taken = True
        return self


class Explorer:
    """A small interactive explorer.

    controls: name -> ipywidgets control; its ``value`` is passed to ``compute``.
    compute(**values) -> result (anything).
    render(result) -> HTML string for the readout.
    draw(fig, result) -> None; updates (or first builds) the figure's artists.
    adjust(change, controls) -> None, optional: sets controls that depend on the one that
    changed (``change["name"]`` is ``"value"``, ``change["owner"]`` the control); their own
    changes do not redraw: the update that called ``adjust`` draws once, after it.

    start: a :class:`LiveFigure` of the same ``draw`` and ``compute`` at the controls'
    starting values, optional: its picture is the explorer's first (not drawn again).

    ``redraws`` counts the figures shown (the bench checks one per user action).
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget],
                 compute: Callable[..., Any], render: Callable[[Any], str],
                 draw: Callable[[Figure, Any], None], figsize=(10, 5.6),
                 adjust: Callable[[dict, dict], None] | None = None,
                 start: LiveFigure | None = None):
        apply_style()
        self.controls = dict(controls)
        self.compute, self.render, self.draw, self.adjust = compute, render, draw, adjust
        if start is None:
            self.fig, self.frame = _live_figure(figsize)
        else:
            start = start.take(draw, compute, self.values())
            self.fig, self.frame = start.fig, start.frame
        self.redraws = 0
        self._busy = False
        self.readout = widgets.HTML()
        self.readout.add_class("kvlib-readout")
        self.plot = widgets.Image(format="png")
        self.plot.add_class("kvlib-plot")
        self.error = widgets.HTML()
        for c in self.controls.values():
            c.layout.width = c.layout.width or CONTROL_LAYOUT["width"]
            c.layout.min_width = c.layout.min_width or CONTROL_LAYOUT["min_width"]
            c.observe(self.update, names="value")
        # Controls in two columns; a text area (a pasted config.json) in a row of its own,
        # the whole width. (A grid_column on the text area's layout never reached the page:
        # ipywidgets 8.1.9 in JupyterLab 4.6, seen in the browser test.)
        wide = [c for c in self.controls.values() if isinstance(c, widgets.Textarea)]
        grids = [widgets.GridBox([c for c in self.controls.values() if c not in wide],
                                 layout=widgets.Layout(grid_template_columns="repeat(2, 50%)"))]
        if wide:
            grids.append(widgets.GridBox(wide, layout=widgets.Layout(grid_template_columns="100%")))
        self.widget = widgets.VBox([*grids, self.error, self.readout, self.plot])
        if start is None:
            self.update()
        else:  # the start's picture is this setting's figure: show it as drawn
            self.readout.value = self.render(start.result)
            self.plot.value = start.png
            self.redraws += 1

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self, change=None) -> None:
        if self._busy:  # a dependent control set by ``adjust``: the outer update draws
            return
        self._busy = True
        try:
            if change is not None and self.adjust is not None:
                self.adjust(change, self.controls)
            self._update()
        finally:
            self._busy = False

    def _update(self) -> None:
        try:
            result = self.compute(**self.values())
        except ValueError as e:  # a combination the formulas reject: say so, and show no
            # numbers or figure of the previous setting, which would read as this one's
            self.error.value = f"<b style='color:#b00'>{e}</b>"
            self.readout.value = "<i>(no result for this setting)</i>"
            self.plot.layout.display = "none"
            return
        self.draw(self.fig, result)
        self.show()
        self.error.value = ""
        self.readout.value = self.render(result)

    def show(self) -> None:
        """Draw the figure (:class:`~kvlib.views.widgets.frame.Frame`: only what changed)
        and set it as the image's value: one binary message, no base64, and the page swaps
        the picture of the same ``<img>`` instead of building a new output area."""
        self.plot.value = self.frame.png()
        if self.plot.layout.display == "none":  # hidden by a refused setting
            self.plot.layout.display = None
        self.redraws += 1

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def legend_under_data(ax, handles=None, **kwargs) -> None:
    """``ax.legend(handles, **kwargs)``, built again only when its entries change, and drawn
    under the data (z-order 0.9), where the :class:`~kvlib.views.widgets.frame.Frame` keeps it
    with the axes as pixels: a legend drawn on every move is most of a move's drawing. For a
    corner the data leave free (lines that rise to the right leave the upper left); a line
    that crossed it would be drawn over it. handles: the artists to list (default: the
    Axes' labelled artists)."""
    labels = ([h.get_label() for h in handles] if handles is not None
              else ax.get_legend_handles_labels()[1])
    legend = ax.get_legend()
    if legend is None or [t.get_text() for t in legend.get_texts()] != labels:
        given = {} if handles is None else {"handles": handles}
        ax.legend(**given, **kwargs).set_zorder(0.9)


# --- live bar charts ---------------------------------------------------------------------

def labelled_hbars(ax, values, labels, names, colors) -> bool:
    """Horizontal bars, one per value (the first on top once the y axis is inverted), each
    labelled at its end: updated in place, built anew only when the number of bars changes
    (the return value says so). values: bar lengths in the axis unit; labels: the text at
    each bar's end; names: the y tick labels; colors: one per bar. The value axis runs from
    0 to :func:`steady_limit` of the longest bar."""
    y = np.arange(len(values))
    rebuilt = len(ax.patches) != len(values)
    if rebuilt:
        for artist in [*ax.containers, *ax.texts]:
            artist.remove()
        # "0, 0.5, 1, 1.5, 2" rather than "0.0 ... 2.0": an axis end keeps its width ("2",
        # "5") between steps, so the layout need not run again (widgets.frame)
        ax.xaxis.set_major_formatter(mticker.StrMethodFormatter("{x:,g}"))
        ax.barh(y, values)
        for yi in y:
            ax.annotate("", (0, yi), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=13)
    for rect, text, v, label, color, yi in zip(ax.patches, ax.texts, values, labels, colors, y,
                                                 strict=True):
        rect.set_width(v)
        rect.set_facecolor(color)
        text.set_text(label)
        text.xy = (v, yi)
    ax.set_yticks(y, names)
    ax.relim()
    ax.autoscale_view(scalex=False)
    top = max(values, default=0.0)
    ax.set_xlim(0.0, steady_limit(top) if top > 0 else 1.0)
    return rebuilt


NICE_STEPS = (1.0, 2.0, 2.5, 5.0)  # x 10^k: Matplotlib's MaxNLocator steps, so the end is a tick


def steady_limit(value: float, room: float = 1.3) -> float:
    """The end of a bar chart's value axis: the least 1, 2, 2.5 or 5 x 10^k at least
    ``room`` x ``value`` (> 0), which leaves room for the longest bar's label.

    The axis holds still while a move changes the bars by less than a step (a batch of 8
    -> 9, bf16 -> fp16), so the figure redraws only its bars (:mod:`kvlib.views.widgets.frame`).
    Consecutive steps are at most 2x apart, so the longest bar fills between 1 / (2 room)
    and 1 / room of the axis (38% to 77% at the default).
    """
    if not (value > 0 and math.isfinite(value) and room >= 1):
        raise ValueError(f"steady_limit needs a value > 0 and a room >= 1, got value={value!r}, "
                         f"room={room!r}")
    need = value * room
    k = math.floor(math.log10(need))
    for e in (k, k + 1):  # k + 1: log10 rounded down just under a power of ten
        for s in NICE_STEPS:
            if s * 10.0**e >= need:
                return s * 10.0**e
    raise AssertionError(f"no step found for {value!r}")  # 10^(k + 1) >= need always


# --- readout tables ----------------------------------------------------------------------

_TABLE = "border-collapse:collapse;margin:6px 0;font-size:14px"
_TH = "padding:4px 12px;border-bottom:1px solid #777;font-weight:bold;text-align:{}"
_TD = "padding:3px 12px;text-align:{};font-variant-numeric:tabular-nums"
_STRIPE = "background:#f3f3f3"


def html_table(header, rows, numeric) -> str:
    """An HTML table styled inline like a notebook's static tables (header apart, striped
    rows, numbers right-aligned), so it looks the same in a widget, a notebook and the book.

    header: column titles; rows: lists of cell strings; numeric: one bool per column
    (right-aligned when true).
    """
    def align(i):
        return "right" if numeric[i] else "left"

    head = "".join(f"<th style='{_TH.format(align(i))}'>{h}</th>" for i, h in enumerate(header))
    body = []
    for r, row in enumerate(rows):
        stripe = f" style='{_STRIPE}'" if r % 2 == 0 else ""
        cells = "".join(f"<td style='{_TD.format(align(i))}'>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr{stripe}>{cells}</tr>")
    return (f"<table style='{_TABLE}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")
