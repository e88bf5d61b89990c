"""Notebook 05's figures: lines end where the models end, labels stay apart, log axes say so."""

import matplotlib
import pytest
from matplotlib.figure import Figure

from kvlib.views.figures.models import (
    context_points,
    plot_layer_map,
    plot_models_vs_context,
    plot_params_vs_cache,
    render_table_3,
    table_3_rows,
)

matplotlib.use("Agg")
GiB = 1024**3


def test_context_points_end_at_the_limit():
    assert context_points(163_840)[-2:] == [131_072, 163_840]  # DeepSeek V3
    assert context_points(40_960)[-2:] == [32_768, 40_960]  # Qwen3 32B
    assert context_points(131_072)[-2:] == [65_536, 131_072]  # no duplicate end
    assert context_points(10_485_760)[-1] == 1 << 20  # Llama 4 Scout: cut at 1M
    assert context_points(None)[-1] == 1 << 20
    assert context_points(1024) == [1024]


def test_models_vs_context_lines_end_at_max_context():
    ax = Figure().add_subplot()
    lines = plot_models_vs_context(ax, names=("llama-3.1-70b", "deepseek-v3"))
    llama, ds = lines
    assert llama.get_xdata()[-1] == 131_072
    assert ds.get_xdata()[-1] == 163_840
    # DeepSeek V3: 61 layers x (512 + 64) x 2 B per token
    assert ds.get_ydata()[-1] == pytest.approx(61 * (512 + 64) * 2 * 163_840 / GiB)
    # the two blues of the old figure: now different colour, marker and line style
    assert llama.get_color() != ds.get_color()
    assert llama.get_marker() != ds.get_marker()
    assert llama.get_linestyle() != ds.get_linestyle()
    assert "max 160K" in ds.get_label()


def test_layer_map_axis_spans_the_deepest_model():
    ax = Figure().add_subplot()
    plot_layer_map(ax)
    lo, hi = ax.get_xlim()
    assert 61 < hi < 62  # Gemma 3 27B: layers 0..61
    assert len(ax.texts) == 4  # one summary per row, outside the axes
    assert all(t.xycoords == ("axes fraction", "data") for t in ax.texts)


def test_params_vs_cache_deepseek_labels_do_not_overlap():
    fig = Figure(figsize=(11, 6.5), layout="constrained")
    ax = fig.add_subplot()
    plot_params_vs_cache(ax)
    fig.canvas.draw()
    boxes = {t.get_text(): t.get_window_extent() for t in ax.texts}
    assert not boxes["DeepSeek V2"].overlaps(boxes["DeepSeek V3"])
    assert not boxes["Mistral 7B v0.1"].overlaps(boxes["Llama 3.1 8B"])


def test_table_3_two_decimals_at_most():
    corrected = render_table_3(table_3_rows(), corrected=True)
    # DeepSeek V2 at 131,072 tokens: 60 x 576 x 2 x 131,072 B = 8.4375 GiB
    assert 60 * 576 * 2 * 131_072 / GiB == 8.4375
    assert "| DeepSeek V2 | MLA | 60 | 67.5 KiB | 8.44 GiB |" in corrected
