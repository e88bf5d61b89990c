"""Notebook 07's explorer: cache and state against the context, on axes that hold still.

The numbers are hand calculations from the bundled config.json files; the pictures are
compared with Matplotlib drawing the same setting afresh (tests/test_widgets_frame.py).
"""

import io

import numpy as np
from PIL import Image

from kvlib.core.units import UNITS
from kvlib.models.catalog import BUNDLED
from kvlib.models.estimate import estimate
from kvlib.views.widgets.hybrid import (
    CONTEXTS,
    VALUE_LIMITS_GIB,
    hybrid_explorer,
    render,
    split,
    value_limits,
)

GiB, MiB = UNITS["GiB"], UNITS["MiB"]


def _lines(e):
    """cache, beyond, state, context line, state marker, cache marker."""
    return e.fig.axes[0].lines


def _legend(e) -> list[str]:
    return [t.get_text() for t in e.fig.axes[0].get_legend().get_texts()]


def test_split_sweeps_the_cache_of_the_chosen_model():
    """Qwen3-Next's config.json: 12 of 48 layers full attention, 2 KV heads x 256, bf16:
    12 x 2 (K, V) x 2 x 256 x 2 B = 24 KiB per token, at every context from 1K to 1M."""
    view = split("qwen3-next-80b-a3b", "", 131072)
    assert view.contexts == tuple(2**k for k in range(10, 21))
    assert view.cache == tuple(12 * 2 * 2 * 256 * 2 * t for t in view.contexts)
    assert view.at.kv_bytes_per_sequence == 12 * 2 * 2 * 256 * 2 * 131072  # 3 GiB
    assert "growing cache 3 GiB" in render(view)
    assert "Beyond" not in render(view)  # its max_position_embeddings is 262,144


def test_the_value_axis_spans_every_bundled_model():
    """By hand, the two ends: Nemotron 3 Nano keeps 6 attention layers of 2 KV heads x 128
    (its hybrid_override_pattern has six '*'): 6 x 2 x 2 x 128 x 2 B x 1,024 = 6 MiB at 1K;
    Llama 3 70B keeps 80 layers of 8 KV heads x 128: 80 x 2 x 8 x 128 x 2 B x 2^20 = 320 GiB
    at 1M. Every bundled model's cache and state lie inside the fixed axis (1 MiB to 16 TiB)
    with a factor 2 of room below and 10 above (the top label sits over its marker), so no
    bundled move rescales it."""
    lo, hi = VALUE_LIMITS_GIB
    assert (lo * GiB, hi * GiB) == (MiB, 16 * 2**40)
    assert split("nemotron-3-nano-30b-a3b", "", 1024).cache[0] == 6 * 2 * 2 * 128 * 2 * 1024
    assert split("llama-3-70b", "", 1024).cache[-1] == 80 * 2 * 8 * 128 * 2 * 2**20
    for name in BUNDLED:
        view = split(name, "", 131072)
        values = [v / GiB for v in (*view.cache, view.at.state_bytes_per_sequence) if v > 0]
        assert lo * 2 <= min(values) and max(values) * 10 <= hi, name
        assert value_limits(values) == (lo, hi), name


def test_a_pasted_model_beyond_the_axis_widens_it_by_factors_of_16():
    lo, hi = VALUE_LIMITS_GIB  # 2^-10, 2^14 GiB
    assert value_limits([2.0**10]) == (lo, hi)  # 1 TiB x 10 = 10,240 GiB < 16,384 GiB
    assert value_limits([2.0**11]) == (lo, 2.0**18)  # 2 TiB x 10 = 20,480 GiB: x16 more
    assert value_limits([2.0**-12]) == (2.0**-14, hi)  # / 2 = 2^-13: 2^-14
    assert value_limits([0.0, 1.0]) == (lo, hi)  # a zero (no state) is not on a log axis


def test_the_value_axis_reads_in_binary_units():
    e = hybrid_explorer()
    ax = e.fig.axes[0]
    e.fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels()
              if VALUE_LIMITS_GIB[0] <= t.get_position()[1] <= VALUE_LIMITS_GIB[1]]
    assert labels == ["4 MiB", "64 MiB", "1 GiB", "16 GiB", "256 GiB", "4 TiB"]


def test_every_move_redraws_only_the_lines_and_no_label_leaves_the_axes():
    """Context moves across the whole catalogue, and model moves between models with the
    same legend entries: none rescales an axis or lays the figure out again, because the
    value labels turn inward near the ends of the axis."""
    e = hybrid_explorer()
    ax = e.fig.axes[0]
    e.controls["context"].value = 262144  # settles the layout at a new title
    renderer = e.fig.canvas.get_renderer()
    moves = 0
    for name in BUNDLED:
        e.controls["model"].value = name
        full = e.frame.full_draws
        for t in (1024, 2048, 131072, 524288, 1 << 20):
            e.controls["context"].value = t
            moves += 1
            for text in ax.texts:
                if text.get_visible():
                    b = text.get_window_extent(renderer)
                    assert ax.bbox.x0 <= b.x0 and b.x1 <= ax.bbox.x1, (name, t, text.get_text())
                    assert ax.bbox.y0 <= b.y0 and b.y1 <= ax.bbox.y1, (name, t, text.get_text())
        assert e.frame.full_draws == full, name
    assert moves == 5 * len(BUNDLED)
    assert ax.get_ylim() == VALUE_LIMITS_GIB
    # the bench's model move: both hybrids with a state and a longest context under 1M
    e.controls["model"].value = "qwen3-next-80b-a3b"
    full = e.frame.full_draws
    for name in ("nemotron-h-56b", "qwen3-next-80b-a3b"):
        e.controls["model"].value = name
    assert e.frame.full_draws == full


def test_a_model_without_recurrent_layers_shows_no_state():
    """Llama 3.1 70B: every layer attention, so no state line, marker, label or legend entry;
    the cache marker sits at 80 x 2 x 8 x 128 x 2 B x 2,048 = 640 MiB."""
    e = hybrid_explorer(model="llama-3.1-70b", context=2048)
    ax = e.fig.axes[0]
    _, _, state_line, _, state_dot, cache_dot = _lines(e)
    assert not state_line.get_visible()
    assert np.isnan(state_dot.get_ydata()[0])
    assert [t.get_visible() for t in ax.texts] == [True, False]
    assert cache_dot.get_ydata()[0] * GiB == 80 * 2 * 8 * 128 * 2 * 2048
    assert ax.texts[0].get_text() == f"{80 * 2 * 8 * 128 * 2 * 2048 / MiB:g} MiB"  # 640 MiB
    assert _legend(e) == ["growing cache (attention layers)", "beyond the model's longest context"]
    picture = np.asarray(Image.open(io.BytesIO(e.plot.value)))
    assert picture.shape[:2] == (420, 1000)  # 10 x 4.2 in at 100 dpi


def test_contexts_beyond_the_model_are_drawn_apart_and_said():
    """Llama 3 70B's config.json says max_position_embeddings 8,192: the solid line ends at 8K,
    the dotted one takes it from there to 1M, and the readout says so at 16K."""
    e = hybrid_explorer(model="llama-3-70b", context=16384)
    cache, beyond, *_ = _lines(e)
    assert list(cache.get_xdata()) == [1024, 2048, 4096, 8192]
    assert list(beyond.get_xdata()) == [2**k for k in range(13, 21)]
    assert "Beyond the model's longest context (8,192 tokens" in e.readout.value
    e.controls["context"].value = 8192
    assert "Beyond" not in e.readout.value


def test_windowed_caches_are_named_in_the_legend():
    """Mistral 7B v0.1 keeps a 4,096-token window in every layer: its cache stops growing at 4K
    (32 layers x 2 x 8 KV heads x 128 x 2 B x 4,096 = 512 MiB), and the legend says why."""
    e = hybrid_explorer(model="mistral-7b-v0.1", context=65536)
    cache, beyond, *_ = _lines(e)
    assert set(list(cache.get_ydata())[2:] + list(beyond.get_ydata())) == {
        32 * 2 * 8 * 128 * 2 * 4096 / GiB}
    assert _legend(e)[0] == "growing cache (attention layers; windowed ones stop at their window)"


def test_the_marker_follows_the_context_along_the_cache_line():
    """Nemotron-H 56B at 128K; its state drawn under the cache's marker, larger, so both show
    where they meet."""
    e = hybrid_explorer(model="nemotron-h-56b", context=131072)
    _, _, state_line, vline, state_dot, cache_dot = _lines(e)
    expected = estimate("nemotron-h-56b", context=131072)
    assert list(vline.get_xdata()) == [131072, 131072]
    assert cache_dot.get_ydata()[0] * GiB == expected.kv_bytes_per_sequence
    assert state_dot.get_ydata()[0] * GiB == expected.state_bytes_per_sequence
    # Nemotron-H 56B's Mamba2 state (tests/browser: 54 layers, conv in bf16, SSM in fp32)
    state = 54 * (3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4)
    assert expected.state_bytes_per_sequence == state
    assert list(state_line.get_ydata()) == [state / GiB] * 2
    assert state_dot.get_markersize() > cache_dot.get_markersize()
    assert e.fig.axes[0].lines.index(state_dot) < e.fig.axes[0].lines.index(cache_dot)
    assert CONTEXTS[-1] == 1 << 20
