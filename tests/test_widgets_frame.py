"""A live figure redraws only what changed, and shows exactly what a full draw shows (issue 14).

``kvlib.views.widgets.frame.Frame`` keeps the part of a figure under its data (axes,
grid, ticks, labels) as pixels while nothing it depends on changed, and draws the rest
on top. These tests decode the PNG the page receives with Pillow (a decoder we did not
write) and compare it, pixel for pixel, with Matplotlib drawing the same figure from
scratch at the same layout; a Frame whose key never changes is the positive control.
"""

import io
import math
import struct
import zlib

import ipywidgets as widgets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from PIL import Image

from kvlib.core.units import UNITS
from kvlib.views.png import PNG_SIGNATURE, encode_png
from kvlib.views.widgets import frame as frame_module
from kvlib.views.widgets.capacity import planner_explorer
from kvlib.views.widgets.gqa import gqa_explorer
from kvlib.views.widgets.hybrid import hybrid_explorer
from kvlib.views.widgets.kit import Explorer, labelled_hbars, whole_decades
from kvlib.views.widgets.mla import rope_explorer, value_limits
from kvlib.views.widgets.models import model_explorer


def decoded(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def full_draw(fig: Figure) -> np.ndarray:
    """Matplotlib drawing every artist of ``fig`` afresh, at its current layout."""
    engine = fig.get_layout_engine()
    fig.set_layout_engine("none")
    try:
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()
    finally:
        fig.set_layout_engine(engine)


# --- the PNG writer ----------------------------------------------------------------------

def test_encode_png_is_a_png_of_the_canvas_pixels():
    fig = Figure(figsize=(3, 2), dpi=50)
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([1, 2, 3], [3, 1, 2], color="#D55E00")
    fig.canvas.draw()
    png = encode_png(fig)
    assert png[:8] == PNG_SIGNATURE == b"\x89PNG\r\n\x1a\n"  # PNG specification, section 5.2
    # IHDR first: length 13, then width 150, height 100 (3 x 2 in at 50 dpi), 8 bits, RGBA (6)
    assert png[8:16] == struct.pack(">I", 13) + b"IHDR"
    assert struct.unpack(">IIBB", png[16:26]) == (150, 100, 8, 6)
    assert png[-12:] == struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))
    assert np.array_equal(decoded(png), np.asarray(fig.canvas.buffer_rgba()))


# --- every explorer: the picture of a partial draw is the picture of a full draw ---------

def _moves(e: Explorer):
    """Each control to each of up to three other values, and back: a reader's moves."""
    for name, c in e.controls.items():
        if isinstance(c, widgets.Textarea | widgets.Text):
            continue
        start = c.value
        if hasattr(c, "options"):
            values = [v[1] if isinstance(v, tuple) else v for v in c.options]
        else:
            values = [v for v in (c.value - 1, c.value + 1) if c.min <= v <= c.max]
        for v in [v for v in values if v != start][:3] + [start]:
            yield name, v


@pytest.mark.parametrize("make", [gqa_explorer, rope_explorer, model_explorer, planner_explorer,
                                  hybrid_explorer])
def test_every_move_shows_what_a_full_draw_shows(make):
    e = make()
    for name, value in _moves(e):
        e.controls[name].value = value
        if e.plot.layout.display == "none":
            continue  # a refused setting: no figure on show
        assert np.array_equal(decoded(e.plot.value), full_draw(e.fig)), f"{name}={value!r}"


def test_the_check_fails_when_the_kept_part_is_stale(monkeypatch):
    """Positive control: a Frame that always reuses its kept pixels shows the old tick
    labels after a move that rescales the axis, and the comparison above catches it."""
    monkeypatch.setattr(frame_module, "_kept_key", lambda inputs, orders: "never changes")
    monkeypatch.setattr(frame_module, "layout_inputs", lambda fig: "never changes")
    e = gqa_explorer()
    e.controls["N_L"].value = 79  # settles the layout: the kept part is reused from now on
    before = e.frame.partial_draws
    e.controls["N_L"].value = 4  # 1/20 of the cache: the value axis moves by decades
    assert e.frame.partial_draws == before + 1
    assert not np.array_equal(decoded(e.plot.value), full_draw(e.fig))


def test_forget_draws_a_restyled_kept_part_in_full():
    """A restyle the key cannot see (the grid turned off) stays stale until ``forget``."""
    e = gqa_explorer()
    e.controls["context"].value = 1024
    e.fig.axes[0].grid(False)
    e.controls["context"].value = 2048  # partial: the kept pixels still have the grid
    assert not np.array_equal(decoded(e.plot.value), full_draw(e.fig))
    e.frame.forget()
    e.controls["context"].value = 4096
    assert np.array_equal(decoded(e.plot.value), full_draw(e.fig))


# --- steady axes, so that moves are partial draws -----------------------------------------

def test_notebook_04_moves_after_the_first_draw_only_its_data():
    """Its value axes span every setting the controls offer: no move rescales them, so
    after the first draw (and one to settle the layout) every move is a partial draw."""
    e = rope_explorer()
    moves = list(_moves(e))
    for name, value in moves:
        e.controls[name].value = value
    assert e.frame.full_draws <= 2
    assert e.frame.partial_draws >= len(moves) - 1


def test_notebook_04_value_limits_by_hand():
    """Left panel, GiB: the least cache is 60 layers x d_L 128 x 2 B x 1,024 tokens, the
    most 60 x (1024 + 128) x 2 B x 131,072 tokens; padded by 1.25 each way."""
    (lo, hi), (flo, fhi) = value_limits([128, 512, 1024], [16, 64, 128], [8, 128])
    assert lo == pytest.approx(60 * 128 * 2 * 1024 / UNITS["GiB"] / 1.25)
    assert hi == pytest.approx(60 * 1152 * 2 * 131072 / UNITS["GiB"] * 1.25)
    assert 0 < flo < fhi
    e = rope_explorer()
    shown = [v for ax in e.fig.axes for v in ax.get_ylim()]
    offered = value_limits([128, 256, 384, 512, 768, 1024], [16, 32, 64, 128], [8, 16, 32, 64, 128])
    assert shown == pytest.approx([v for pair in offered for v in pair])


def test_notebook_04_every_setting_lies_inside_its_steady_axes():
    """Exhaustively: every latent width, RoPE width and head count the controls offer, at
    every context, plots inside the fixed limits (none is clipped by the steady axes)."""
    from itertools import product

    from kvlib.views.widgets.mla import rope_price

    e = rope_explorer()
    c = e.controls
    (lo, hi), (flo, fhi) = (ax.get_ylim() for ax in e.fig.axes)
    for d_L, d_R, N_h in product(c["d_L"].options, c["d_R"].options, c["N_h"].options):
        r = rope_price(d_L, d_R, N_h, 131072)
        for v in r.sweep_bytes.values():
            assert lo < min(v) / UNITS["GiB"] and max(v) / UNITS["GiB"] < hi, (d_L, d_R, N_h)
        for v in r.sweep_flops.values():
            assert flo < min(v) / 1e9 and max(v) / 1e9 < fhi, (d_L, d_R, N_h)


def test_notebook_04_no_line_runs_through_a_legend():
    """The legends sit in the upper left, under the lines (the explorer keeps them as
    pixels): at every setting the controls offer, no plotted line may cross an entry. Each
    line is followed in display space, 25 points per segment, against each entry's extent
    (its text, widened left over its handle); the vertical "selected context" line spans the
    axes by design and is left out."""
    from itertools import product

    from kvlib.views.widgets.mla import rope_price

    e = rope_explorer()
    c, renderer = e.controls, e.fig.canvas.get_renderer()
    t = np.linspace(0, 1, 25)[:, None]
    for d_L, d_R, N_h in product(c["d_L"].options, c["d_R"].options, c["N_h"].options):
        e.draw(e.fig, rope_price(d_L, d_R, N_h, 131072))
        for ax in e.fig.axes:
            leg = ax.get_legend()
            handle = (leg.handlelength + leg.handletextpad) * leg.get_texts()[0].get_fontsize()
            handle *= e.fig.dpi / 72  # points to pixels
            boxes = [tx.get_window_extent(renderer) for tx in leg.get_texts()]
            for line in ax.lines[:-1]:  # the last is the selected-context line
                xy = ax.transData.transform(line.get_xydata())
                path = np.concatenate([a + t * (b - a)
                                       for a, b in zip(xy[:-1], xy[1:], strict=True)])
                for box in boxes:
                    inside = ((path[:, 0] > box.x0 - handle) & (path[:, 0] < box.x1)
                              & (path[:, 1] > box.y0) & (path[:, 1] < box.y1))
                    assert not inside.any(), (d_L, d_R, N_h, ax.get_title(), line.get_label())


def test_whole_decades_by_hand():
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2], [0.03, 45.0])
    ax.plot([1, 2], [1.0, 2.0], visible=False)  # hidden: not counted
    # 0.03 / 1.25 = 0.024 -> 0.01; 45 x 1.25 = 56.25 -> 100
    assert whole_decades(ax) == pytest.approx((0.01, 100.0))
    ax.lines[0].set_ydata([0.085, 9.0])  # 0.068 -> 0.01; 11.25 -> 100: the padding counts
    assert whole_decades(ax) == pytest.approx((0.01, 100.0))
    ax.lines[0].set_ydata([0.2, 7.0])  # 0.16 -> 0.1; 8.75 -> 10
    assert whole_decades(ax) == pytest.approx((0.1, 10.0))


# --- figures a notebook shows: drawn once, same pixels ------------------------------------

def test_show_inline_draws_a_constrained_figure_once_and_hands_back_its_pixels():
    import base64

    from kvlib.views.png import show_inline

    fig = Figure(figsize=(4, 3), dpi=60, layout="constrained")
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([1, 2, 3], [2, 3, 1])
    png = base64.b64decode(show_inline(fig, fallback=lambda f: "not used"))
    assert np.array_equal(decoded(png), full_draw(fig))  # one draw, at the settled layout
    assert decoded(png).shape == (180, 240, 4)  # 3 x 4 in at 60 dpi


def test_show_inline_leaves_other_figures_to_the_inline_backend():
    from kvlib.views.png import show_inline, use_for_inline_figures

    plain = Figure()
    plain.add_subplot()
    assert show_inline(plain, fallback=lambda f: "the inline backend's") == "the inline backend's"
    assert show_inline(Figure(layout="constrained")) is None  # empty: nothing shown
    assert use_for_inline_figures() is False  # not in a kernel: nothing registered


# --- a static figure and the explorer that starts from it: one draw -----------------------

def test_an_explorer_started_from_its_view_shows_that_picture_without_drawing_again():
    """Notebook 04 shows the explorer's figure statically, then the explorer: the figure is
    drawn once (the view's), and the explorer's first picture is those very bytes; the
    moves after it still show what a full draw shows."""
    from kvlib.views.widgets.mla import rope_view

    view = rope_view(d_L=256, d_R=32, N_h=64, context=8192)
    assert view.frame.full_draws == 1 and view._repr_png_() == view.png
    e = rope_explorer(start=view)
    assert {k: c.value for k, c in e.controls.items()} == dict(d_L=256, d_R=32, N_h=64,
                                                              context=8192)
    assert e.frame is view.frame and e.frame.full_draws + e.frame.partial_draws == 1
    assert e.plot.value == view.png and e.redraws == 1
    assert "8K tokens" in e.readout.value  # the readout is this setting's, not empty
    # The same picture a fresh explorer at that setting draws for itself.
    assert np.array_equal(decoded(view.png), decoded(rope_explorer(256, 32, 64, 8192).plot.value))
    for name, value in _moves(e):
        e.controls[name].value = value
        assert np.array_equal(decoded(e.plot.value), full_draw(e.fig)), f"{name}={value!r}"
    assert repr(view) == "LiveFigure(d_L=256, d_R=32, N_h=64, context=8192)"  # no address


def test_a_view_starts_one_explorer_of_its_own_setting_only():
    from kvlib.views.widgets.kit import LiveFigure
    from kvlib.views.widgets.mla import live_draw, render, rope_price, rope_view

    view = rope_view()
    controls = {"d_L": widgets.Dropdown(options=[128, 512], value=128),
                "d_R": widgets.Dropdown(options=[64], value=64),
                "N_h": widgets.Dropdown(options=[128], value=128),
                "context": widgets.Dropdown(options=[131072], value=131072)}
    with pytest.raises(ValueError, match="not the explorer's starting setting"):
        Explorer(controls, rope_price, render, live_draw(), start=view)
    with pytest.raises(ValueError, match="another draw or compute"):
        Explorer(controls, rope_price, render, lambda fig, r: None, start=view)
    clash = r"\{'d_L': 256\} differs from the start view's \{'d_L': 512\}"
    with pytest.raises(ValueError, match=clash):
        rope_explorer(d_L=256, start=view)
    rope_explorer(d_L=512, start=view)  # the view's own size: no clash
    with pytest.raises(ValueError, match="already belongs to an explorer"):
        rope_explorer(start=view)
    assert isinstance(view, LiveFigure)


# --- bar charts: steady value axes, grid and legend under the bars ------------------------

def test_steady_limit_by_hand():
    from kvlib.views.widgets.kit import steady_limit

    # need = 1.3 x value; the least of 1, 2, 2.5, 5 x 10^k at least that
    assert steady_limit(3.0) == 5.0  # 3.9 -> 5
    assert steady_limit(1.6) == 2.5  # 2.08 -> 2.5
    assert steady_limit(1.0) == 2.0  # 1.3 -> 2
    assert steady_limit(7.7) == 20.0  # 10.01 -> 20, just past 10
    assert steady_limit(123.0) == 200.0  # 159.9 -> 200
    assert steady_limit(0.004) == pytest.approx(0.01)  # 0.0052 -> 0.01
    assert steady_limit(8.0, room=1.0) == 10.0
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="steady_limit needs a value > 0"):
            steady_limit(bad)


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-9, max_value=1e12), st.floats(min_value=1.0, max_value=3.0))
def test_steady_limit_leaves_the_room_and_is_a_nice_number(value, room):
    from kvlib.views.widgets.kit import steady_limit

    limit = steady_limit(value, room)
    assert limit >= value * room
    assert limit < 2 * value * room * (1 + 1e-12)  # steps 1, 2, 2.5, 5, 10: at most 2x apart
    mantissa = limit / 10.0 ** math.floor(math.log10(limit) + 1e-12)
    assert min(abs(mantissa - s) for s in (1, 2, 2.5, 5, 10)) < 1e-9


def _picture_of_a_fresh_figure(e: Explorer) -> np.ndarray:
    """The explorer's current setting drawn on a new figure, its constrained layout settled
    from scratch: what the page should show, whatever the Frame skipped."""
    fresh = Figure(figsize=e.fig.get_size_inches(), dpi=e.fig.dpi, layout="constrained")
    FigureCanvasAgg(fresh)
    e.draw(fresh, e.compute(**e.values()))
    for _ in range(2):  # the first draw of a constrained layout moves it once more
        fresh.canvas.draw()
    return np.asarray(fresh.canvas.buffer_rgba())


@pytest.mark.parametrize("make", [model_explorer, hybrid_explorer])
def test_steady_explorers_show_what_a_fresh_figure_shows(make):
    """Notebooks 05 (bars) and 07 (lines): each move's picture is a new figure's, layout
    included (the Frame skipped the layout where a title's new numbers did not move it).
    (Notebook 06's
    planner is left out here: its verdict text can end near the axes' edge, where the
    constrained layout's fixed point depends on where it starts, by a pixel or so.)"""
    e = make()
    for name, value in _moves(e):
        e.controls[name].value = value
        if e.plot.layout.display == "none":
            continue
        assert np.array_equal(decoded(e.plot.value), _picture_of_a_fresh_figure(e)), \
            f"{name}={value!r}"
    assert e.frame.partial_draws > 0


def test_notebook_02_keeps_its_legend_while_its_entries_stay():
    """Notebook 02: the legend sits under the lines, so a move that keeps its entries (layers,
    head dim, context) draws the lines over the kept axes and legend; a KV-head move writes
    new entries (GQA: 8 -> 4 KV heads) and the picture is still a full draw's."""
    e = gqa_explorer(N_L=80, N_h=64, N_g=8, head_dim=128, dtype="bf16", context=8192)
    ax = e.fig.axes[0]
    e.controls["context"].value = 16384  # settles the layout
    legend, before = ax.get_legend(), e.frame.partial_draws
    for name, value in [("context", 32768), ("N_L", 79), ("head_dim", 96)]:
        e.controls[name].value = value
    assert e.frame.partial_draws == before + 3
    assert ax.get_legend() is legend
    assert legend not in frame_module._split(e.fig, frame_module._draw_orders(e.fig))
    e.controls["N_g"].value = 4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "MHA: 64 KV heads", "GQA: 4 KV heads", "MQA: 1 KV head"]
    assert np.array_equal(decoded(e.plot.value), full_draw(e.fig))


def test_a_title_kept_under_the_data_is_drawn_again_when_it_changes():
    """Notebook 04 puts its panels' fixed titles under the lines, so the Frame keeps them
    with the axes; a title that then changes is a full draw, not the old title's pixels.
    Both last checks fail if the kept key leaves the title out."""
    fig = Figure(figsize=(4, 3), dpi=60, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [3, 1, 2])
    ax.set_title("before")
    ax.title.set_zorder(0.9)
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    assert ax.title not in frame_module._split(fig, frame_module._draw_orders(fig))
    ax.lines[0].set_ydata([1, 2, 3])
    frame.png()
    full = frame.full_draws
    ax.set_title("after")
    png = frame.png()
    assert frame.full_draws == full + 1
    assert np.array_equal(decoded(png), full_draw(fig))


def test_notebook_04_keeps_its_panel_titles():
    e = rope_explorer()
    order = frame_module._draw_orders(e.fig)
    redrawn = frame_module._split(e.fig, order)
    assert [ax.get_title() for ax in e.fig.axes] == ["Cache: what (b) adds",
                                                     "Compute: what (b) saves"]
    assert not any(ax.title in redrawn for ax in e.fig.axes)


def test_planner_moves_that_keep_the_axis_redraw_the_bars_only():
    """Notebook 06: the legend and grid sit under the bars, so a move that keeps the GPU
    (sessions, context, dtypes, memory share) redraws bars, ticks and verdict only."""
    e = planner_explorer()
    e.controls["sessions"].value = 9  # settles the layout
    before = e.frame.partial_draws
    moves = [("sessions", 8), ("context", 65536), ("kv_dtype", "fp8"), ("gpu_mem_util", 0.85),
             ("weight_dtype", "fp8")]
    for name, value in moves:
        e.controls[name].value = value
        assert np.array_equal(decoded(e.plot.value), full_draw(e.fig)), f"{name}={value!r}"
    assert e.frame.partial_draws == before + len(moves)


def test_model_explorer_batch_and_dtype_moves_are_partial_draws():
    e = model_explorer(model="gemma-3-27b", context=131072, batch=8, kv_dtype="bf16")
    e.controls["batch"].value = 9  # settles the layout at the new title
    before = e.frame.partial_draws
    for name, value in [("batch", 8), ("batch", 9), ("kv_dtype", "fp16"), ("kv_dtype", "bf16")]:
        e.controls[name].value = value
    assert e.frame.partial_draws == before + 4
    # the longest bar, Gemma 3's 10 full layers: 9 sequences x 10 x 131,072 tokens x 8,192 B
    # (K and V, 16 KV heads of 128, bf16) = 90 GiB; x 1.3 = 117 -> 200 (8 sequences: 104 -> 200)
    assert e.fig.axes[0].get_xlim() == (0.0, 200.0)


def test_a_title_that_outgrows_its_axes_moves_the_layout():
    """Positive control of the title key: new digits in a title that stays inside the Axes
    keep the layout; a title wider than the Axes is laid out again, and the picture is then
    a fresh figure's."""
    def make(title):
        fig = Figure(figsize=(4, 3), dpi=60, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1])
        ax.set_title(title)
        return fig

    fig = make("total 3.5 GiB")
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    fig.axes[0].set_title("total 7.25 GiB")
    frame.png()
    assert frame.partial_draws == 1
    long = "a title far wider than these small axes, and wider again"
    fig.axes[0].set_title(long)
    png = frame.png()
    assert frame.full_draws == 3
    fresh = make(long)
    fresh.canvas.draw()
    fresh.canvas.draw()
    assert np.array_equal(decoded(png), np.asarray(fresh.canvas.buffer_rgba()))


def _count_layouts(monkeypatch, fig) -> list:
    """[number of times the constrained layout runs on ``fig``] (fresh figures not counted)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    calls, real = [0], ConstrainedLayoutEngine.execute

    def counting(self, f):
        calls[0] += f is fig
        return real(self, f)

    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", counting)
    return calls


def test_an_axis_end_as_wide_as_before_keeps_the_layout(monkeypatch):
    """Notebook 05 at Gemma 3 27B, 128K: 8 sequences need 10 x 131,072 x 8 KiB x 8 = 80 GiB,
    x 1.3 -> an axis to 200 (ticks every 25); 7 need 70 -> 91 -> 100 (every 20). The end
    labels "0" and "200" / "100" are as wide, the middle ones sit inside the Axes: the
    layout is not run again, and the picture is still a fresh figure's."""
    e = model_explorer(model="gemma-3-27b", context=131072, batch=8, kv_dtype="bf16")
    e.controls["batch"].value = 7  # the first move may settle the layout
    calls = _count_layouts(monkeypatch, e.fig)
    for batch, end in ((8, 200.0), (7, 100.0), (8, 200.0)):
        e.controls["batch"].value = batch
        assert e.fig.axes[0].get_xlim() == (0.0, end)
        assert np.array_equal(decoded(e.plot.value), _picture_of_a_fresh_figure(e)), batch
    assert calls[0] == 0


def _hbars(values) -> Figure:
    """A live bar chart as notebook 05 draws its own (:func:`labelled_hbars`): two bars
    of ``values`` GiB, labelled at their ends, a title above."""
    fig = Figure(figsize=(10, 3.2), layout="constrained")
    FigureCanvasAgg(fig)
    _set_hbars(fig.add_subplot(), values)
    return fig


def _set_hbars(ax, values) -> None:
    labelled_hbars(ax, values, [f"{v:g} GiB" for v in values], ["cache", "state"],
                   ["#0072B2", "#882255"])
    ax.set_title(f"{sum(values):g} GiB in all")


def _fresh_hbars(values) -> np.ndarray:
    fresh = _hbars(values)
    for _ in range(2):  # the first draw of a constrained layout moves it once more
        fresh.canvas.draw()
    return np.asarray(fresh.canvas.buffer_rgba())


def test_an_axis_end_wider_than_before_lays_the_figure_out_again(monkeypatch):
    """Positive control: a longest bar of 3 GiB x 1.3 = 3.9 ends the axis at 5; of 6 GiB
    (x 1.3 = 7.8) at 10, a wider end label: the layout runs, and the picture is a fresh
    figure's."""
    fig = _hbars([3.0, 0.04])
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    calls = _count_layouts(monkeypatch, fig)
    _set_hbars(fig.axes[0], [6.0, 0.04])
    png = frame.png()
    assert [fig.axes[0].get_xlim()[1], calls[0] > 0] == [10.0, True]
    assert np.array_equal(decoded(png), _fresh_hbars([6.0, 0.04]))


def test_bar_chart_tick_labels_keep_their_ends_narrow(monkeypatch):
    """1.5 GiB x 1.3 = 1.95 ends the axis at 2; 3 GiB (x 1.3 = 3.9) at 5. Labels as "0 ... 2"
    (not "0.00 ... 2.00") keep the ends one digit wide, so the step from one to the other
    does not lay the figure out again."""
    fig = _hbars([3.0, 0.04])
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    calls = _count_layouts(monkeypatch, fig)
    ax = fig.axes[0]
    _set_hbars(ax, [1.5, 0.04])
    frame.png()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert (ax.get_xlim()[1], labels[0], labels[-1], "0.25" in labels) == (2.0, "0", "2", True)
    _set_hbars(ax, [3.0, 0.04])
    png = frame.png()
    assert ax.get_xlim()[1] == 5.0
    assert calls[0] == 0
    assert np.array_equal(decoded(png), _fresh_hbars([3.0, 0.04]))


def test_a_label_that_reaches_beyond_the_axes_lays_the_figure_out_again(monkeypatch):
    """Positive control of the overhang key: the longest bar's label (at 3 of 5 GiB) grown
    past the Axes' right edge and about 100 px off the figure. The layout runs and
    narrows the Axes by about the label's reach (a label placed in data coordinates moves
    with the Axes, so the layout settles over a few more steps, as a fresh figure's does);
    without the key the label would stay cut off. (Labels that stay inside may change,
    appear or go without a layout: test_widgets_hybrid.py.)"""
    fig = _hbars([3.0, 0.04])
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    right = ax.get_position().x1
    calls = _count_layouts(monkeypatch, fig)
    ax.texts[0].set_text("3 GiB, and a note that runs on and on and on and on")
    assert ax.texts[0].get_window_extent(renderer).x1 > fig.bbox.x1  # before the layout
    frame.png()
    assert calls[0] > 0
    assert (right - ax.get_position().x1) * fig.bbox.width > 100  # px


def test_a_middle_tick_label_on_two_lines_moves_the_layout(monkeypatch):
    """Positive control of the end-labels key: a label of two lines is taller, wherever it
    sits, so a middle one going to two lines lays the figure out again."""
    def make(middle):
        fig = Figure(figsize=(4, 3), dpi=60, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.bar([0, 1, 2], [1, 2, 3])
        ax.set_xticks([0, 1, 2], ["one", middle, "three"])
        return fig

    fig = make("two")
    frame = frame_module.Frame(fig)
    frame.png()
    frame.png()  # settled
    calls = _count_layouts(monkeypatch, fig)
    fig.axes[0].set_xticks([0, 1, 2], ["one", "two\nlines", "three"])
    png = frame.png()
    assert calls[0] == 1
    fresh = make("two\nlines")
    fresh.canvas.draw()
    fresh.canvas.draw()
    assert np.array_equal(decoded(png), np.asarray(fresh.canvas.buffer_rgba()))


@pytest.mark.parametrize("make, data", [(model_explorer, Rectangle), (planner_explorer, Rectangle),
                                        (hybrid_explorer, Line2D)])
def test_explorers_redraw_their_data_not_their_axes(make, data):
    """The house style puts grids and ticks under the bars (``axes.axisbelow``), and the
    planner's and notebook 07's legends under the data too: what a move redraws holds no
    Axis and no Legend. With Matplotlib's default z-order the bars come first and every
    tick is redrawn."""
    from matplotlib.axis import Axis
    from matplotlib.legend import Legend

    e = make()
    redrawn = frame_module._split(e.fig, frame_module._draw_orders(e.fig))
    assert any(isinstance(a, data) for a in redrawn)  # the bars or lines are redrawn
    assert not any(isinstance(a, Axis | Legend) for a in redrawn)
