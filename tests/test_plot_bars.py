"""kvlib.views.style.plot_bars labels: one decimal, none for whole values (notebook 03's bars)."""

import matplotlib.pyplot as plt
import numpy as np

from kvlib.views.style import plot_bars


def test_bar_labels_drop_a_zero_decimal():
    fig, ax = plt.subplots()
    # Gemma 3 27B and DeepSeek V2 latent per token (bf16) by hand; 1.5 KiB; 4,800 KiB + 100 B
    values = [62 * 16 * (128 + 128) * 2, 60 * 512 * 2, 1536, 60 * 128 * 320 * 2 + 100]
    plot_bars(ax, ["a", "b", "c", "d"], values, "KiB", "t", "y")
    assert [t.get_text() for t in ax.texts] == ["496 KiB", "60 KiB", "1.5 KiB", "4,800.1 KiB"]
    plt.close(fig)


def test_log_bars_keep_a_small_bar_visible():
    """Notebook 03: 60 KiB beside 4,800 KiB. On the log axis the small bar is a good part of
    the plot's height, not a sliver, and the axis label says log scale."""
    fig, ax = plt.subplots()
    bars = plot_bars(ax, ["naive", "latent"], [4_915_200, 61_440], unit="KiB",
                     title="t", ylabel="KV cache per token", log=True)
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "KV cache per token (KiB, log scale)"
    lo, hi = ax.get_ylim()
    small = (np.log10(bars[1].get_height()) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
    assert small > 0.25  # on a linear axis: 60 / 4,800 = 1.25% of the height
    assert [t.get_text() for t in ax.texts] == ["4,800 KiB", "60 KiB"]
    plt.close(fig)
