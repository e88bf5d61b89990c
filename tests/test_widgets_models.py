"""Notebook 05's explorer: its computation by hand, and its controls driven like a reader would."""

import json
import re
from fractions import Fraction

import pytest

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


# A small Llama-style config.json, as a reader would paste it: 2 layers, 8 query heads,
# 2 KV heads, hidden 512 (head_dim 512 / 8 = 64), 4,096 positions.
PASTED = json.dumps({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8,
                     "num_key_value_heads": 2, "hidden_size": 512,
                     "max_position_embeddings": 4096, "_name_or_path": "my-tiny-llama"})


def test_a_pasted_config_is_read_instead_of_the_model():
    e = model_explorer()
    e.controls["config"].value = PASTED
    assert e.error.value == ""
    html = e.readout.value
    assert "my-tiny-llama" in html
    # per token: 2 layers x 2 (K, V) x 2 heads x 64 x 2 B = 1,024 B = 1 KiB; x 131,072 = 128 MiB
    assert "1 KiB" in html and "128 MiB" in html
    assert "max_position_embeddings (4,096)" in html  # 131,072 > 4,096
    e.controls["config"].value = ""  # cleared: the dropdown's model again
    assert "Gemma 3 27B" in e.readout.value and e.error.value == ""


@pytest.mark.parametrize("text, message", [
    ("{x", "the pasted config is not valid JSON: Expecting property name"),
    ("[1, 2]", "the pasted config must hold a JSON object, got a list"),
    ("{}", "config has no num_hidden_layers or n_layer"),
])
def test_a_bad_pasted_config_is_one_line_in_the_widget(text, message):
    e = model_explorer()
    e.controls["config"].value = text
    assert message in e.error.value and "\n" not in e.error.value
    assert "GiB" not in e.readout.value  # the previous model's numbers are gone


def test_the_cli_words_a_bad_config_file_the_same_way(tmp_path, capsys):
    """The widget's message for a config without layers is the one ``kvlib estimate`` gives."""
    from kvlib.cli import main

    path = tmp_path / "config.json"
    path.write_text("{}")
    assert main(["estimate", str(path)]) == 2
    assert "config has no num_hidden_layers or n_layer" in capsys.readouterr().err


def test_small_settings_never_read_zero_gib():
    """GPT-2 at 1K tokens: every row in a unit that keeps it at least 1 (MiB, KiB)."""
    html = render(breakdown("gpt2", context=1024, batch=1, kv_dtype="fp8"))
    assert not re.search(r">0(\.0+)? (GiB|MiB|KiB)<", html)
    # 12 layers x 2 x 768 x 1 B = 18,432 B = 18 KiB per token; x 1,024 tokens = 18 MiB
    assert "18 KiB" in html and "18 MiB" in html


def test_the_live_table_is_styled_like_a_static_one():
    html = render(breakdown("gemma-3-27b", 131072, 1, "bf16"))
    headers = re.findall(r"<th style='([^']*)'", html)
    assert len(headers) == 6 and all("border-bottom" in h for h in headers)
    cells = re.findall(r"<td style='([^']*)'>([^<]*(?:<b>[^<]*</b>)?)</td>", html)
    numbers = [style for style, text in cells if re.search(r"\d", text)]
    assert numbers and all("text-align:right" in s for s in numbers)
