"""Notebook 05's explorer: its computation by hand, and its controls driven like a reader would."""

import re
from fractions import Fraction

from kvlib.views.widgets.models import breakdown, model_explorer, render

GiB = 1024**3


def test_breakdown_gemma3_at_128k():
    e = breakdown("gemma-3-27b", 131072, 2, "bf16")
    per_layer = 2 * 16 * 128 * 2
    assert [(g.group.layers, g.cached_tokens, g.bytes_per_sequence) for g in e.groups] == [
        (10, 131072, 10 * per_layer * 131072), (52, 1024, 52 * per_layer * 1024)]
    assert e.kv_bytes_total == 2 * (10 * GiB + 416 * 1024**2)


def _total_gib(html):
    return float(re.findall(r"<b>([\d,.]+) GiB</b>", html)[-1].replace(",", ""))


def _shown_gib(html) -> Fraction:
    """The total as printed, exactly (41.62 -> 4162/100), for an exact rounding bound."""
    return Fraction(re.findall(r"<b>([\d,.]+) GiB</b>", html)[-1].replace(",", ""))


def test_controls_update_readout_and_plot():
    e = model_explorer()
    # Gemma 3 27B at 128K by hand: 10 GiB (full layers) + 416 MiB (sliding) = 10.40625 GiB
    one = Fraction(10 * 2 * 16 * 128 * 2 * 131072 + 52 * 2 * 16 * 128 * 2 * 1024, GiB)
    assert round(_total_gib(e.readout.value), 2) == 10.41
    assert abs(_shown_gib(e.readout.value) - one) <= Fraction(1, 200)  # shown to 2 decimals
    e.controls["batch"].value = 4
    assert round(_total_gib(e.readout.value), 2) == 41.62
    assert abs(_shown_gib(e.readout.value) - 4 * one) <= Fraction(1, 200)  # 41.625 GiB
    e.controls["model"].value = "deepseek-v2"
    assert _total_gib(e.readout.value) == 4 * 60 * (512 + 64) * 2 * 131072 / GiB  # 33.75
    assert len(e.fig.axes[0].patches) == 1  # one latent group
    e.controls["kv_dtype"].value = "fp8"
    assert _total_gib(e.readout.value) == round(4 * 60 * 576 * 131072 / GiB, 2)  # 16.875
    assert e.error.value == ""


def test_beyond_the_models_context_is_flagged():
    html = render(breakdown("llama-3-70b", 131072, 1, "bf16"))
    assert "max_position_embeddings (8,192)" in html
