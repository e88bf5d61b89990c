"""kvlib.views.style.plot_bars labels: one decimal, none for whole values (notebook 03's bars)."""

import matplotlib.pyplot as plt

from kvlib.views.style import plot_bars


def test_bar_labels_drop_a_zero_decimal():
    fig, ax = plt.subplots()
    # Gemma 3 27B and DeepSeek V2 latent per token (bf16) by hand; 1.5 KiB; 4,800 KiB + 100 B
    values = [62 * 16 * (128 + 128) * 2, 60 * 512 * 2, 1536, 60 * 128 * 320 * 2 + 100]
    plot_bars(ax, ["a", "b", "c", "d"], values, "KiB", "t", "y")
    assert [t.get_text() for t in ax.texts] == ["496 KiB", "60 KiB", "1.5 KiB", "4,800.1 KiB"]
    plt.close(fig)
