"""Notebook 02's explorer: its computation, and its controls driven like a reader would."""

import re

import pytest

from kvlib.views.widgets.gqa import compare_heads, divisors, gqa_explorer


def test_divisors():
    assert divisors(64) == [1, 2, 4, 8, 16, 32, 64]
    assert divisors(12) == [1, 2, 3, 4, 6, 12]


def test_compare_heads_llama3_70b():
    r = compare_heads(N_L=80, N_h=64, N_g=8, head_dim=128, dtype="bf16", context=131072)
    assert r.per_token == {"MHA": 80 * 64 * 256 * 2, "GQA": 80 * 8 * 256 * 2, "MQA": 80 * 256 * 2}
    assert r.per_sequence["GQA"] == 40 * 1024**3
    assert r.sweep["MHA"][-1] == 80 * 64 * 256 * 2 * 131072


def test_compare_heads_rejects_bad_dtype_and_group():
    with pytest.raises(ValueError, match="'fp4'"):
        compare_heads(80, 64, 8, 128, "fp4", 1024)
    with pytest.raises(ValueError, match="must divide"):
        compare_heads(80, 64, 6, 128, "bf16", 1024)


def _rows(html) -> dict:
    """The readout table's rows: attention kind -> its cells' text (tags stripped)."""
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)
             for row in re.findall(r"<tr[^>]*>(.*?)</tr>", html)]
    return {c[0]: c[1:] for c in cells[1:]}


def _per_token(html, kind) -> str:
    return _rows(html)[kind][2]  # KV heads, bytes/token, per token, ...


def test_moving_controls_updates_readout_and_plot():
    e = gqa_explorer()
    assert _per_token(e.readout.value, "GQA") == "320 KiB"
    e.controls["dtype"].value = "fp8"
    assert _per_token(e.readout.value, "GQA") == "160 KiB"
    y_before = e.fig.axes[0].lines[1].get_ydata().copy()
    e.controls["N_L"].value = 40
    assert _per_token(e.readout.value, "GQA") == "80 KiB"
    assert (e.fig.axes[0].lines[1].get_ydata() == y_before / 2).all()


def test_query_heads_change_keeps_kv_heads_a_divisor():
    e = gqa_explorer()
    e.controls["N_h"].value = 12
    assert e.controls["N_g"].options == (1, 2, 3, 4, 6, 12)
    assert e.controls["N_g"].value == 6
    assert e.error.value == "" and _rows(e.readout.value)["GQA"][0] == "6"


def test_one_redraw_per_user_action():
    """Changing N_h re-offers N_g and may change its value: still one figure, drawn after
    both controls hold their new values (it used to draw 3 times, the first two stale)."""
    e = gqa_explorer()
    for control, value in [("N_h", 12), ("N_g", 2), ("N_h", 128), ("N_h", 1), ("N_L", 3),
                           ("head_dim", 64), ("dtype", "fp8"), ("context", 1024)]:
        before = e.redraws
        e.controls[control].value = value
        assert e.redraws == before + 1, control
        assert e.plot.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert e.controls["N_g"].value == 1
    assert e.fig.axes[0].get_title() == "3 layers, 1 query head, head dim 64, fp8"


def test_small_settings_read_in_their_own_unit():
    """1 layer of one 64-wide fp8 head at 1K tokens: 128 B per token, 128 KiB per
    sequence, never "0 GiB"; headers apart from the numbers, numbers right-aligned."""
    e = gqa_explorer(N_L=1, N_h=1, N_g=1, head_dim=64, dtype="fp8", context=1024)
    rows = _rows(e.readout.value)
    assert rows["MQA"] == ["1", "128", "128 B", "128 KiB", "1x"]  # 1 x 1 x (64 + 64) x 1 B
    assert "0 GiB" not in e.readout.value
    assert "<th style=" in e.readout.value and "text-align:right" in e.readout.value
    assert e.fig.axes[0].get_title() == "1 layer, 1 query head, head dim 64, fp8"
    assert e.fig.axes[0].get_legend().get_texts()[0].get_text() == "MHA: 1 KV head"


def test_sliders_are_wide():
    e = gqa_explorer()
    for c in e.controls.values():
        assert c.layout.width == "98%" and c.layout.min_width == "300px"
