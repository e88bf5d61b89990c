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


def _kib_per_token(html, kind):
    row = re.search(rf"<td>{kind}</td><td>\d+</td><td>[\d,]+</td><td>([\d,.]+) KiB", html)
    return float(row.group(1).replace(",", ""))


def test_moving_controls_updates_readout_and_plot():
    e = gqa_explorer()
    assert _kib_per_token(e.readout.value, "GQA") == 320
    e.controls["dtype"].value = "fp8"
    assert _kib_per_token(e.readout.value, "GQA") == 160
    y_before = e.fig.axes[0].lines[1].get_ydata().copy()
    e.controls["N_L"].value = 40
    assert _kib_per_token(e.readout.value, "GQA") == 80
    assert (e.fig.axes[0].lines[1].get_ydata() == y_before / 2).all()


def test_query_heads_change_keeps_kv_heads_a_divisor():
    e = gqa_explorer()
    e.controls["N_h"].value = 12
    assert e.controls["N_g"].options == (1, 2, 3, 4, 6, 12)
    assert e.controls["N_g"].value == 6
    assert e.error.value == "" and "<td>GQA</td><td>6</td>" in e.readout.value
