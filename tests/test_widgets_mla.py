"""Notebook 04's explorer: its computation against hand arithmetic, and the live widget."""

from fractions import Fraction

from kvlib.views.widgets.mla import rope_explorer, rope_price


def test_deepseek_v2_price_of_decoupling_by_hand():
    r = rope_price(d_L=512, d_R=64, N_h=128, context=131_072)
    assert r.per_token == {"a": 60 * 512 * 2, "b": 60 * (512 + 64) * 2}
    assert r.extra == Fraction(64, 512) == Fraction(1, 8)
    assert Fraction(r.per_sequence["b"], 1024**3) == Fraction(135, 16)  # 8.4375 GiB
    assert Fraction(r.per_sequence["a"], 1024**3) == Fraction(15, 2)  # 7.5 GiB
    # (b): per cached token 2 * 128 * (512 + 64 + 512) FLOPs, dominant at 128K
    assert r.flops["b"] > 131_072 * 2 * 128 * (512 + 64 + 512)
    # (a): re-expanding and rotating 192-wide keys from 512 for all 128 heads
    assert r.flops["a"] > 131_072 * 2 * 128 * 512 * 192
    # (a'): the values re-expanded too
    assert r.flops["naive"] > 131_072 * 2 * 128 * 512 * (192 + 128)
    assert 90 < r.speedup < 91 and 149 < r.naive_speedup < 151


def test_explorer_follows_its_controls():
    e = rope_explorer(context=4096)
    before = e.readout.value
    assert "67.5 KiB" in before and "+12.5%" in before
    e.controls["d_R"].value = 128
    assert e.readout.value != before and "+25.0%" in e.readout.value
    assert len(e.fig.axes) == 2
    for ax in e.fig.axes:  # each panel titled, with its own legend and log-scale labels
        assert ax.get_title() and ax.get_legend() is not None
        assert "log scale" in ax.get_xlabel() and "log scale" in ax.get_ylabel()
    suptitle = e.fig.get_suptitle()
    assert "$d_L$ = 512" in suptitle and "$d_R$ = 128" in suptitle and "d_L =" not in suptitle


def test_side_by_side_cache_columns_by_hand():
    from kvlib.views.tables import side_by_side, to_markdown

    rows = {r["label"]: r for r in side_by_side()}
    elements = {k: r["elements"] for k, r in rows.items()}
    assert list(elements.values()) == [128 * (192 + 128), 8 * (192 + 128), 512, 512, 512, 512 + 64]
    per_token = [r["bytes_per_token"] for r in rows.values()]
    assert per_token == [4_915_200, 60 * 8 * 320 * 2, 61_440, 61_440, 61_440, 69_120]
    # FLOPs per byte of cache: 2 per element for MHA (bf16: 1), x16 for 16 query heads per
    # KV head, and 2 x 128 x (512 + 64 + 512) / (2 x 576) for absorbed decoupled MLA
    assert [r["intensity"] for r in rows.values()][:2] == [1, 16]
    assert rows["MLA + decoupled RoPE, absorbed"]["intensity"] == Fraction(2 * 128 * 1088, 1152)
    # attention FLOPs per generated token, all 60 layers: the 128K-over-4K growth is the
    # per-cached-token slope times 127K tokens (hand: absorbed + decoupled)
    r = rows["MLA + decoupled RoPE, absorbed"]["flops"]
    assert r[131072] - r[4096] == 60 * 2 * 128 * (512 + 64 + 512) * (131072 - 4096)
    table = to_markdown(list(rows.values()))
    assert table.count("\n") == 7 and table.splitlines()[1].count("|") == 8


def test_legends_in_the_house_size_and_one_redraw_per_move():
    """The two-panel figure's legends are as large as the house style's (13 pt, beside
    15-pt axis labels; they were 10 pt), and each move draws the figure once."""
    import matplotlib as mpl

    from kvlib.views.style import STYLE

    e = rope_explorer()
    mpl.rcParams.update(STYLE)
    for ax in e.fig.axes:
        sizes = {t.get_fontsize() for t in ax.get_legend().get_texts()}
        assert sizes == {STYLE["legend.fontsize"]}
    for control, value in [("d_R", 32), ("d_L", 256), ("N_h", 8), ("context", 1024)]:
        before = e.redraws
        e.controls[control].value = value
        assert e.redraws == before + 1, control
    assert "0 GiB" not in e.readout.value  # 8 heads, d_L 256 at 1K: 33.75 MiB, not 0.03 GiB
    assert "33.75 MiB" in e.readout.value  # 60 x (256 + 32) x 2 B x 1,024 = 35,389,440 B
