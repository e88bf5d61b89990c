"""The one widget pattern every notebook uses: controls -> compute -> readout + figure.

``compute`` is a plain kvlib function of the control values (fast: the SymPy work
was done at import), so a notebook can also call it in a compared cell with fixed
values. The figure is created once; each move updates its artists and shows the
figure again in the Output area. In the page, the readout carries the CSS class
``kvlib-readout`` and the figure area ``kvlib-plot`` (the browser test reads them).

Fast by construction (issue 14; ``make bench`` reports the timings, docs/benchmarks.md):

- **One redraw per user action.** A control that depends on another (notebook 02: the
  KV-head choices follow the query heads) is set by ``adjust`` inside the update, while
  the redraws its own change would trigger are held; the figure is drawn once, after.
- **One Agg canvas for the figure's life.** Matplotlib caches text metrics per renderer;
  ``savefig`` on a bare ``Figure`` makes a new canvas, so a new renderer and a cold cache,
  on every move. The figure keeps its canvas and is drawn once per move, at its own size
  (constrained layout, no second ``bbox_inches="tight"`` pass), PNG compression level 1.
- **One message to the page.** The PNG replaces the Output's outputs in one state update,
  instead of a clear and a display.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import NullLocator

from kvlib.core.units import fmt_size  # re-exported: the widgets' tables use it
from kvlib.views.style import apply_style, png_bytes

__all__ = ["Explorer", "CONTROL_LAYOUT", "DESCRIPTION_STYLE", "png_bytes", "fmt_size", "html_table",
           "live_view"]

# Wide controls: a slider's track is what the reader drags, so it gets the room
# (a 1-128 slider on a 90 px track jumps several values per pixel; at 300 px it does not).
CONTROL_LAYOUT = {"width": "98%", "min_width": "300px"}
DESCRIPTION_STYLE = {"description_width": "130px"}


_DIGITS = str.maketrans("0123456789", "0000000000")


def _texts(artists, where: bool = False) -> tuple:
    # Digits are all one width in the house font (DejaVu Sans), so a number's extent
    # depends on its length and punctuation only: "5,000" takes the room of "2,000".
    return tuple((a.get_text().translate(_DIGITS), a.get_visible())
                 + ((a.get_position(),) if where else ()) for a in artists)


def layout_inputs(fig: Figure) -> tuple:
    """What the constrained layout measures, as a comparable key: the figure's size and
    every text drawn around or over the axes (titles, axis labels, tick labels, legends;
    annotations with their positions), digits folded to 0, and the suptitle's lines and
    formulas (the layout reserves its height, whatever its width). Lines and patches are
    clipped to the axes and do not move the layout; where a tick label sits along its
    axis is left out (it moves the layout by at most half a label's height, when a tick
    lands on the axes' very end). Reading the tick labels updates the ticks, as a draw does.
    """
    sup = fig.get_suptitle()  # the layout reads its height only: lines and math
    key = [tuple(fig.get_size_inches()), fig.dpi, sup.count("\n"), re.findall(r"\$[^$]*\$", sup),
           _texts([t for t in fig.texts if t.get_text() != sup], where=True)]
    key += [_texts(leg.get_texts()) for leg in fig.legends]
    for ax in fig.axes:
        leg = ax.get_legend()
        key += [_texts([ax.title, ax.xaxis.label, ax.yaxis.label]),
                _texts(ax.xaxis.get_ticklabels()), _texts(ax.yaxis.get_ticklabels()),
                _texts(ax.texts, where=True),
                _texts(leg.get_texts()) if leg is not None else None]
    return tuple(key)


def live_view(draw: Callable[[Figure, Any], None]) -> Callable[[Figure, Any], None]:
    """``draw`` for a live figure: the same picture without the minor tick marks of log
    value axes (unlabelled marks; each costs a tick update and a draw on every move).
    The figure a notebook shows statically keeps them (it calls ``draw`` itself)."""
    def live(fig: Figure, result: Any) -> None:
        draw(fig, result)
        for ax in fig.axes:
            if ax.get_yscale() == "log":
                ax.yaxis.set_minor_locator(NullLocator())

    live.__name__ = live.__qualname__ = f"live_view({getattr(draw, '__name__', 'draw')})"
    live.__doc__ = draw.__doc__
    return live


class Explorer:
    """A small interactive explorer.

    controls: name -> ipywidgets control; its ``value`` is passed to ``compute``.
    compute(**values) -> result (anything).
    render(result) -> HTML string for the readout.
    draw(fig, result) -> None; updates (or first builds) the figure's artists.
    adjust(change, controls) -> None, optional: sets controls that depend on the one that
    changed (``change["name"]`` is ``"value"``, ``change["owner"]`` the control); their own
    changes do not redraw: the update that called ``adjust`` draws once, after it.

    ``redraws`` counts the figures shown (the bench checks one per user action).
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget],
                 compute: Callable[..., Any], render: Callable[[Any], str],
                 draw: Callable[[Figure, Any], None], figsize=(10, 5.6),
                 adjust: Callable[[dict, dict], None] | None = None):
        apply_style()
        self.controls = dict(controls)
        self.compute, self.render, self.draw, self.adjust = compute, render, draw, adjust
        self.fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(self.fig)  # kept: its renderer caches text metrics between moves
        self.redraws = self.layouts_skipped = 0
        self._busy, self._settled = False, None
        self.readout = widgets.HTML()
        self.readout.add_class("kvlib-readout")
        self.plot = widgets.Output()
        self.plot.add_class("kvlib-plot")
        self.error = widgets.HTML()
        for c in self.controls.values():
            c.layout.width = c.layout.width or CONTROL_LAYOUT["width"]
            c.layout.min_width = c.layout.min_width or CONTROL_LAYOUT["min_width"]
            c.observe(self.update, names="value")
        box = widgets.GridBox(list(self.controls.values()),
                              layout=widgets.Layout(grid_template_columns="repeat(2, 50%)"))
        self.widget = widgets.VBox([box, self.error, self.readout, self.plot])
        self.update()

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
            self.plot.clear_output()
            return
        self.draw(self.fig, result)
        self.show()
        self.error.value = ""
        self.readout.value = self.render(result)

    def show(self) -> None:
        """Draw the figure once and replace the Output's contents with it (one message).

        The constrained layout is skipped when what it reads is unchanged since a settled
        layout (:func:`layout_inputs`): the axes keep their places. The figure keeps its
        constrained engine, so ``savefig`` and every later change lay it out as before."""
        now = layout_inputs(self.fig)
        engine = self.fig.get_layout_engine()
        skip = now == self._settled and isinstance(engine, ConstrainedLayoutEngine)
        if skip:
            self.fig.set_layout_engine("none")
        try:
            png = png_bytes(self.fig)
        finally:
            if skip:
                self.fig.set_layout_engine(engine)
        if not skip:  # settled: laying out again would not move anything
            self._settled = now if layout_inputs(self.fig) == now else None
        self.layouts_skipped += skip
        w, h = self.fig.canvas.get_width_height()
        self.plot.outputs = ({
            "output_type": "display_data",
            "data": {"image/png": base64.b64encode(png).decode("ascii"),
                     "text/plain": f"<Figure size {w}x{h} with {len(self.fig.axes)} Axes>"},
            "metadata": {"image/png": {"width": w, "height": h}},
        },)
        self.redraws += 1

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


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
