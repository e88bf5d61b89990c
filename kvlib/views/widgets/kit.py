"""The one widget pattern every notebook uses: controls -> compute -> readout + figure.

``compute`` is a plain kvlib function of the control values (fast: the SymPy work
was done at import), so a notebook can also call it in a compared cell with fixed
values. The figure is created once; each move updates its artists and re-displays
it in the Output area. In the page, the readout carries the CSS class
``kvlib-readout`` and the figure area ``kvlib-plot`` (the browser test reads them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from IPython.display import clear_output, display
from matplotlib.figure import Figure

from kvlib.views.style import apply_style

__all__ = ["Explorer"]


class Explorer:
    """A small interactive explorer.

    controls: name -> ipywidgets control; its ``value`` is passed to ``compute``.
    compute(**values) -> result (anything).
    render(result) -> HTML string for the readout.
    draw(fig, result) -> None; updates (or first builds) the figure's artists.
    """

    def __init__(self, controls: Mapping[str, widgets.ValueWidget],
                 compute: Callable[..., Any], render: Callable[[Any], str],
                 draw: Callable[[Figure, Any], None], figsize=(10, 5.6)):
        apply_style()
        self.controls = dict(controls)
        self.compute, self.render, self.draw = compute, render, draw
        self.fig = Figure(figsize=figsize, layout="constrained")
        self.readout = widgets.HTML()
        self.readout.add_class("kvlib-readout")
        self.plot = widgets.Output()
        self.plot.add_class("kvlib-plot")
        self.error = widgets.HTML()
        for c in self.controls.values():
            c.observe(self.update, names="value")
        box = widgets.GridBox(list(self.controls.values()),
                              layout=widgets.Layout(grid_template_columns="repeat(2, 50%)"))
        self.widget = widgets.VBox([box, self.error, self.readout, self.plot])
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self, change=None) -> None:
        try:
            result = self.compute(**self.values())
        except ValueError as e:  # a combination the formulas reject: say so, and show no
            # numbers or figure of the previous setting, which would read as this one's
            self.error.value = f"<b style='color:#b00'>{e}</b>"
            self.readout.value = "<i>(no result for this setting)</i>"
            self.plot.clear_output()
            return
        self.error.value = ""
        self.readout.value = self.render(result)
        self.draw(self.fig, result)
        with self.plot:
            clear_output(wait=True)
            display(self.fig)

    def _ipython_display_(self):
        display(self.widget)
