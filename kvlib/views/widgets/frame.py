"""A live figure drawn again on every move of an explorer, redrawing only what changed.

Matplotlib draws an Axes in z-order: its background patch, the grid, ticks and tick labels
(``Axis``), then the data (lines, bars, texts), the spines, the legend; the figure draws its
Axes, then its own texts (the suptitle). Between two moves, what sits under the data is
usually unchanged: same limits, same tick labels, same layout. That part holds most of a
figure's text, and text is most of Matplotlib's drawing time (each label is laid out and
its glyphs rasterised on every draw). :class:`Frame` keeps it as a pixel buffer and, while
its key is unchanged, restores the buffer and draws only the rest, in the order a full draw
would: the same pixels (``tests/test_widgets_frame.py`` compares them), in a fraction of
the time (``make bench``, docs/benchmarks.md).

What is kept: each Axes' patch, and its ``Axis``, ``Spine``, ``Legend`` and title artists up
to the first artist that may change (a legend or title is kept only where its z-order puts
it under the data); everything else is drawn on every move. The key says when the kept part
would draw differently: the figure's size and dpi, each Axes' place, limits, scales, tick
locations and tick label texts, axis labels, a kept legend's entries and a kept title's text,
and :func:`layout_inputs` (what the constrained layout reads).
"""

from __future__ import annotations

import re
from operator import attrgetter

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.legend import Legend
from matplotlib.spines import Spine

from kvlib.views.png import encode_png

__all__ = ["Frame", "layout_inputs"]

_DIGITS = str.maketrans("0123456789", "0000000000")


def _texts(artists, where: bool = False) -> tuple:
    # Digits are all one width in the house font (DejaVu Sans), so a number's extent
    # depends on its length and punctuation only: "5,000" takes the room of "2,000".
    return tuple((a.get_text().translate(_DIGITS), a.get_visible())
                 + ((a.get_position(),) if where else ()) for a in artists)


def layout_inputs(fig: Figure) -> tuple:
    """What the constrained layout measures, as a comparable key: the figure's size; the
    texts drawn around the axes (axis labels, legends, the tick labels it can see:
    :func:`_seen_tick_labels`), digits folded to 0; each title's extent
    (:func:`_title_extent`); how far texts drawn over the axes reach beyond them
    (:func:`_overhangs`); and the suptitle's lines and formulas (the layout reserves its
    height, whatever its width). Lines and patches are clipped to the axes and do not move
    the layout; where a tick label sits along its axis is left out (it moves the layout by
    at most half a label's height, when a tick lands on the axes' very end). Reading the
    tick labels updates the ticks, as a draw does.
    """
    sup = fig.get_suptitle()  # the layout reads its height only: lines and math
    key = [tuple(fig.get_size_inches()), fig.dpi, sup.count("\n"), re.findall(r"\$[^$]*\$", sup),
           _texts([t for t in fig.texts if t.get_text() != sup], where=True)]
    key += [_texts(leg.get_texts()) for leg in fig.legends]
    renderer = fig.canvas.get_renderer()  # an Agg canvas: the Frame draws on it
    for ax in fig.axes:
        leg = ax.get_legend()
        key += [_title_extent(ax, renderer), _texts([ax.xaxis.label, ax.yaxis.label]),
                _texts(_seen_tick_labels(ax.xaxis)), _texts(_seen_tick_labels(ax.yaxis)),
                _overhangs(ax, renderer),
                _texts(leg.get_texts()) if leg is not None else None]
    return tuple(key)


def _seen_tick_labels(axis) -> list:
    """The tick labels whose text the layout can see: those of the ticks in view, and along a
    horizontal axis whose labels are level, plain, one-line texts only the two end ones on
    each side. The others sit inside the Axes' width, and such a label's height is the
    font's line height, so a new value there (an axis now ending at 100 instead of 200)
    leaves the layout as it was. Along a vertical axis every label counts: the widest sets
    the margin."""
    axis.get_ticklabels()  # updates the ticks and their texts, as a draw does
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * (hi - lo)
    ticks = [tick for tick, loc in zip(axis.get_major_ticks(), axis.get_majorticklocs(),
                                       strict=False) if lo - eps <= loc <= hi + eps]
    seen = []
    for side in ("label1", "label2"):
        labels = [getattr(tick, side) for tick in ticks if getattr(tick, side).get_visible()]
        if axis.axis_name == "x" and len(labels) > 2 and all(_one_plain_line(t) for t in labels):
            labels = [labels[0], labels[-1]]
        seen += labels
    return seen


def _one_plain_line(t) -> bool:
    """A level label of one line without math: its height is the font's line height."""
    text = t.get_text()
    return t.get_rotation() == 0 and "\n" not in text and "$" not in text


def _title_extent(ax, renderer) -> tuple:
    """Where the layout sees an Axes' title: its top and bottom above the Axes, and how far
    it reaches beyond them on either side, in px. Its text is not the key: a title that
    stays inside the Axes' width moves the layout by its height only, so a new number in
    it (each move of an explorer writes one) leaves the layout as it was."""
    t = ax.title
    if not (t.get_visible() and t.get_text()):
        return ()
    b, box = t.get_window_extent(renderer), ax.bbox
    return tuple(round(float(v), 6) for v in (
        b.y0 - box.y1, b.y1 - box.y1, max(0.0, box.x0 - b.x0), max(0.0, b.x1 - box.x1)))


def _overhangs(ax, renderer) -> tuple:
    """How far the texts drawn over the Axes (a bar's label) reach beyond them, in px to a
    tenth, on each side: the farthest one per side, which is what the layout's bounding box
    of the Axes holds; 0 while every text stays inside, where the layout does not see them
    move, appear or go."""
    box = ax.bbox
    reach = [0.0] * 4
    for t in ax.texts:
        if not (t.get_visible() and t.get_in_layout() and t.get_text()):
            continue
        b = t.get_window_extent(renderer)
        for i, v in enumerate((box.x0 - b.x0, box.y0 - b.y0, b.x1 - box.x1, b.y1 - box.y1)):
            reach[i] = max(reach[i], float(v))
    return tuple(round(v, 1) for v in reach)


def _draw_order(ax) -> list:
    """``ax``'s artists in the order ``Axes.draw`` draws them, its patch first."""
    artists = ax.get_children()
    artists.remove(ax.patch)
    if not (ax.axison and ax.get_frame_on()):
        artists = [a for a in artists if not isinstance(a, Spine)]
    if not ax.axison:
        artists = [a for a in artists if not isinstance(a, Axis)]
    return [ax.patch, *sorted(artists, key=attrgetter("zorder"))]


def _may_change(artist, ax) -> bool:
    """Whether ``artist`` may draw differently after a move: not the Axes' patch, axes,
    spines, legend or title, which the kept key follows. (Each is kept only where its
    z-order puts it under the data: a title drawn over the data, as by default, is drawn
    again on every move.)"""
    return not (artist is ax.patch or artist is ax.title
                or isinstance(artist, Axis | Spine | Legend))


def _first_redrawn(order: list, ax) -> int:
    """Index in ``order`` (:func:`_draw_order`) of the first artist drawn on every move."""
    return next((i for i, a in enumerate(order) if _may_change(a, ax)), len(order))


def _legend_key(leg) -> tuple | None:
    if leg is None:
        return None
    handles = tuple((type(h).__name__, str(h.get_color()) if hasattr(h, "get_color") else None,
                     h.get_linestyle() if hasattr(h, "get_linestyle") else None,
                     h.get_marker() if hasattr(h, "get_marker") else None)
                    for h in leg.legend_handles)
    loc = leg._get_loc()  # Matplotlib has no public getter of a legend's location
    return (tuple(t.get_text() for t in leg.get_texts()), handles, leg.zorder, loc,
            leg.get_visible())


def _draw_orders(fig: Figure) -> dict:
    """Each Axes (in the figure's drawing order) -> its artists in drawing order."""
    return {ax: _draw_order(ax) for ax in sorted(fig.axes, key=attrgetter("zorder"))}


def _split(fig: Figure, orders: dict) -> list:
    """What is drawn on every move, in a full draw's order: per Axes, everything from its
    first artist that may change on; then the figure's own artists (suptitle, legends).
    The Axes do not overlap, so drawing each one's kept part first changes no pixel."""
    redrawn = []
    for ax, order in orders.items():
        redrawn += order[_first_redrawn(order, ax):]
    own = [a for a in fig.get_children() if a is not fig.patch and a not in fig.axes]
    return redrawn + sorted(own, key=attrgetter("zorder"))


def _kept_key(inputs: tuple, orders: dict) -> tuple:
    """What the kept part draws from: ``inputs`` (:func:`layout_inputs`), each Axes' place,
    limits, scales, ticks and their labels, axis labels, and a legend or title kept under
    the data."""
    key = [inputs]
    for ax, order in orders.items():
        leg, kept = ax.get_legend(), order[:_first_redrawn(order, ax)]
        kept_legend = leg is not None and any(a is leg for a in kept)
        kept_title = any(a is ax.title for a in kept)
        key.append((ax.get_position().bounds, ax.get_xlim(), ax.get_ylim(), ax.get_xscale(),
                    ax.get_yscale(), ax.get_visible(), ax.axison,
                    _legend_key(leg) if kept_legend else None,
                    (ax.title.get_text(), ax.title.get_visible()) if kept_title else None))
        for axis in (ax.xaxis, ax.yaxis):
            key.append((tuple(axis.get_majorticklocs()), tuple(axis.get_minorticklocs()),
                        tuple(t.get_text() for t in axis.get_majorticklabels()),
                        axis.label.get_text()))
    return tuple(key)


class Frame:
    """Draws ``fig`` for a live view, keeping what did not change between calls.

    ``png()`` returns the figure as PNG bytes, at its own size and dpi, exactly as a full
    draw at the current layout would show it. The constrained layout runs only when what it
    reads changed since it last settled (:func:`layout_inputs`); the kept part is drawn again
    only when its key changed. ``full_draws`` and ``partial_draws`` count the two paths.

    The key follows what a draw function usually changes between moves (data, limits,
    ticks, labels, titles, legend entries). One that restyles what is kept (grid, spines,
    tick or label colours and fonts) calls :meth:`forget` after doing so.
    """

    def __init__(self, fig: Figure):
        self.fig = fig
        self.full_draws = self.partial_draws = 0
        self._settled = None  # layout_inputs when the layout last settled
        self._kept = self._kept_key = None  # pixel buffer of the kept part, and its key

    def png(self) -> bytes:
        fig = self.fig
        canvas = fig.canvas
        inputs = layout_inputs(fig)
        orders = _draw_orders(fig)
        settled = inputs == self._settled
        if settled and self._kept is not None and _kept_key(inputs, orders) == self._kept_key:
            canvas.restore_region(self._kept)
            self._draw(_split(fig, orders))
            self.partial_draws += 1
            return encode_png(fig)
        engine = fig.get_layout_engine()
        skip = settled and isinstance(engine, ConstrainedLayoutEngine)
        if skip:  # settled: laying out again would not move anything
            fig.set_layout_engine("none")
        redrawn = _split(fig, orders)
        flags = [a.get_animated() for a in redrawn]
        try:
            for a in redrawn:  # a plain draw leaves animated artists out
                a.set_animated(True)
            canvas.draw()
        finally:
            for a, flag in zip(redrawn, flags, strict=True):
                a.set_animated(flag)
            if skip:
                fig.set_layout_engine(engine)
        self._kept = canvas.copy_from_bbox(fig.bbox)
        self._draw(redrawn)
        after = inputs if skip else layout_inputs(fig)
        if not skip:
            self._settled = inputs if after == inputs else None
        self._kept_key = _kept_key(after, orders)
        self.full_draws += 1
        return encode_png(fig)

    def forget(self) -> None:
        """Drop the kept pixels and the settled layout: the next ``png()`` draws in full."""
        self._kept = self._kept_key = self._settled = None

    def _draw(self, artists) -> None:
        renderer = self.fig.canvas.get_renderer()
        for a in artists:
            a.draw(renderer)
