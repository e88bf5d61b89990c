"""Notebooks 05 and 06's widget figures are built once and then updated in place (issue 6).

After each move the figure keeps its Axes, its bars show the new numbers, and it
draws exactly what a figure built afresh for the same result draws.
"""

import io

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from kvlib.views.figures.capacity import plot_budget
from kvlib.views.style import format_context
from kvlib.views.widgets.capacity import planner, planner_explorer
from kvlib.views.widgets.models import breakdown, model_explorer
from kvlib.views.widgets.models import draw as draw_models

GiB = 1024**3


def png(fig) -> np.ndarray:
    """The figure as the notebook shows it, after the constrained layout settled."""
    for _ in range(2):  # the first draw of a constrained-layout figure moves its layout
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
    buf.seek(0)
    return imread(buf)


def visible_widths(ax) -> list[float]:
    return [round(r.get_width(), 6) for r in ax.patches if r.get_visible()]


# --- notebook 05 -------------------------------------------------------------------------

def test_model_bars_update_in_place_and_match_a_fresh_figure():
    e = model_explorer()  # Gemma 3 27B, 128K, batch 1, bf16
    ax = e.fig.axes[0]
    per_token_layer = 2 * 16 * 128 * 2  # K and V, 16 KV heads of 128, bf16
    moves = [
        # batch 4: the 10 full layers hold 131,072 tokens, the 52 sliding ones 1,024
        ("batch", 4, [4 * 10 * per_token_layer * 131072 / GiB,
                      4 * 52 * per_token_layer * 1024 / GiB], ["10 full", "52 sliding 1,024"]),
        # DeepSeek V2: one latent group, 60 layers of (512 + 64) elements
        ("model", "deepseek-v2", [4 * 60 * (512 + 64) * 2 * 131072 / GiB], ["60 latent"]),
        ("kv_dtype", "fp8", [4 * 60 * (512 + 64) * 1 * 131072 / GiB], ["60 latent"]),
        ("model", "gemma-3-27b", [4 * 10 * per_token_layer // 2 * 131072 / GiB,
                                  4 * 52 * per_token_layer // 2 * 1024 / GiB],
         ["10 full", "52 sliding 1,024"]),
    ]
    for control, value, gib, names in moves:
        e.controls[control].value = value
        assert e.error.value == ""
        assert e.fig.axes == [ax], f"{control}: the figure was rebuilt"
        assert visible_widths(ax) == [round(v, 6) for v in gib]
        # each label in its own unit: GiB, or MiB under 1 GiB (exact values print whole)
        assert [t.get_text() for t in ax.texts] == [
            f"{v:,.2f}".rstrip("0").rstrip(".") + " GiB" if v >= 1 else f"{v * 1024:g} MiB"
            for v in gib]
        assert [t.get_text() for t in ax.get_yticklabels()] == names
        fresh = Figure(figsize=e.fig.get_size_inches(), layout="constrained")
        draw_models(fresh, breakdown(**e.values()))
        assert np.array_equal(png(e.fig), png(fresh)), f"{control}={value!r}"


def test_model_figure_height_follows_the_number_of_bars():
    """Two bars are not 700 px tall: the figure is sized by its number of layer groups."""
    e = model_explorer()  # Gemma 3 27B: 2 groups
    two = e.fig.get_size_inches()[1]
    e.controls["model"].value = "deepseek-v2"  # 1 group
    one = e.fig.get_size_inches()[1]
    e.controls["model"].value = "nemotron-h-56b"  # 3 groups
    three = e.fig.get_size_inches()[1]
    assert one < two < three <= 3
    assert three - two == pytest.approx(two - one)
    fresh = Figure(figsize=(9, 5), layout="constrained")  # any first size: draw sets it
    draw_models(fresh, breakdown(**e.values()))
    assert np.array_equal(png(e.fig), png(fresh))


# --- notebook 06 -------------------------------------------------------------------------

def test_budget_bar_updates_in_place_and_matches_plot_budget():
    e = planner_explorer()  # Llama 3.1 70B, 4 x H200, TP 4, bf16, 128K
    ax = e.fig.axes[0]
    for control, value in [("kv_dtype", "fp8"), ("context", 65536), ("gpus", 8),
                           ("gpu_mem_util", 0.8), ("tp", 8), ("model", "deepseek-v2"),
                           ("weight_dtype", "fp8"), ("sessions", 9)]:
        e.controls[control].value = value
        assert e.error.value == ""
        assert e.fig.axes == [ax], f"{control}: the figure was rebuilt"
        p = planner(**e.values()).plan
        assert p.fits
        fresh = Figure(figsize=e.fig.get_size_inches(), layout="constrained")
        plot_budget(fresh.add_subplot(), {f"{p.gpus} x {p.gpu}, TP={p.tp}": p}, unit="GB",
                    title=f"{p.model}: one GPU's memory at {format_context(p.context)}",
                    sessions=e.controls["sessions"].value)
        assert visible_widths(ax) == visible_widths(fresh.axes[0])
        assert np.array_equal(png(e.fig), png(fresh)), f"{control}={value!r}"


def test_budget_bar_by_hand_then_not_fitting():
    """The default release, vLLM 0.34.0 (docs/capacity.md, "The budget per vLLM release"),
    then 0.33.0 picked from the release control: its utilization slider follows."""
    e = planner_explorer()
    assert (e.controls["vllm"].value, e.controls["gpu_mem_util"].value) == ("0.34.0", 1.0)
    e.controls["kv_dtype"].value = "fp8"
    ax = e.fig.axes[0]
    # the bf16 checkpoint (141,107,412,992 B) a quarter per GPU, its 161 x 8,192 norms whole
    norms = 161 * 8192 * 2
    weights_b = (141_107_412_992 - norms) // 4 + norms  # 35,278,831,616
    weights = weights_b / 1e9
    per_session = 80 * 2 * 2 * 128 * 1 * 131072  # bytes per GPU, 2 KV heads per GPU at TP 4
    # 0.34.0's assumed terms (kvlib.serving.engines.vllm.defaults.MEASURED_DEFAULTS): 0.5 GiB in
    # use at start-up, activation peak 1.5 GiB, CUDA-graph pool 2 GiB, non-torch 0.5 GiB.
    # resident O_R = 0.5 + 2 GiB; peak kept free P = 1.5 + 2 GiB; the bar's overhead O_R + P
    overhead_b = (GiB // 2 + 2 * GiB) + (3 * GiB // 2 + 2 * GiB)  # 6 GiB
    overhead = overhead_b / 1e9
    # u = 1.0: usable = min(ceil(1.0 M), M - M_0 - max(1 GiB, 0.75 P)), M = 139.81 GiB (CUDA)
    total = 13981 * GiB // 100  # 150,119,844,413
    margin = max(GiB, 3 * (3 * GiB // 2 + 2 * GiB) // 4)  # 2.625 GiB = 2,818,572,288
    usable = min(total, total - GiB // 2 - margin)  # 146,764,401,213
    budget = usable - weights_b - overhead_b  # 105,043,118,653
    sessions = int(budget // per_session)
    assert sessions == 19  # 105,043,118,653 // 5,368,709,120
    # the bar draws the sessions slider's 8 sequences in use (issue 40, item 7)
    assert e.controls["sessions"].value == 8
    assert visible_widths(ax) == pytest.approx(
        [weights, overhead, 8 * per_session / 1e9, (budget - 8 * per_session) / 1e9])
    assert ax.texts[0].get_text() == "8 x 128K\n(19 fit)"
    e.controls["sessions"].value = 19
    assert visible_widths(ax) == pytest.approx(
        [weights, overhead, sessions * per_session / 1e9, (budget - sessions * per_session) / 1e9])
    assert ax.texts[0].get_text() == f"{sessions} x 128K\n(19 fit)"
    assert ax.lines[0].get_xdata()[0] == pytest.approx(usable / 1e9)
    e.controls["sessions"].value = 8

    # vLLM 0.33.0: u = 0.92, 4 GiB of overhead, the same 128K in 16-token blocks
    e.controls["vllm"].value = "0.33.0"
    assert e.controls["gpu_mem_util"].value == 0.92
    # ceil(0.92 x 139.81 GiB), the H200's CUDA total at vLLM 0.33.0's default utilization
    budget33 = 138_110_256_860 - weights_b - 4 * GiB
    sessions33 = int(budget33 // per_session)
    assert visible_widths(ax) == pytest.approx(
        [weights, 4 * GiB / 1e9, 8 * per_session / 1e9, (budget33 - 8 * per_session) / 1e9])
    assert sessions33 == 18  # 98,536,457,948 // 5,368,709,120
    assert ax.texts[0].get_text() == "8 x 128K\n(18 fit)"
    e.controls["vllm"].value = "0.34.0"
    assert e.controls["gpu_mem_util"].value == 1.0

    # 70B in bf16 on one A100 80GB: the weights alone exceed the usable memory
    e.controls["gpu"].value = "A100-80GB"
    e.controls["tp"].value = 1
    e.controls["gpus"].value = 1
    assert e.fig.axes == [ax]
    # KV segments hidden; the whole checkpoint on one GPU
    assert visible_widths(ax) == pytest.approx([141.107412992, overhead])
    assert ax.texts[0].get_text() == "does not fit"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 x A100-80GB, TP=1"]
    a100 = 7925 * GiB // 100  # 79.25 GiB, the total CUDA reports on an A100 80GB
    # usable: min(ceil(1.0 x a100), a100 - 0.5 GiB in use - the 2.625 GiB margin)
    assert ax.lines[0].get_xdata()[0] == pytest.approx((a100 - GiB // 2 - margin) / 1e9)
    assert ax.lines[1].get_xdata()[0] == pytest.approx(a100 / 1e9)
    assert ax.get_xlim()[1] > 141.107412992 + overhead  # rescaled to the longer bar


def test_the_sessions_slider_moves_the_bar():
    """Notebook 06's sessions slider (issue 40, item 7): the bar draws that many sequences per
    replica in use, not the most that fit; more than fit run past the usable memory (the dashed
    tick), drawn up to the whole memory, and the verdict says how many fit. Llama 3.1 70B,
    4 x H200, TP 4, bf16 KV at 128K, vLLM 0.34.0 (as test_budget_bar_by_hand_then_not_fitting)."""
    e = planner_explorer()
    ax = e.fig.axes[0]
    norms = 161 * 8192 * 2
    weights_b = (141_107_412_992 - norms) // 4 + norms  # 35,278,831,616
    overhead_b = 6 * GiB  # O_R 2.5 GiB + peak 3.5 GiB
    total = 13981 * GiB // 100  # the H200's CUDA total
    usable = total - GiB // 2 - max(GiB, 3 * (7 * GiB // 2) // 4)  # less M_0 and the margin
    budget = usable - weights_b - overhead_b
    per_session = 80 * 2 * 2 * 128 * 2 * 131072  # bf16: 10,737,418,240 B per GPU
    assert budget // per_session == 9

    def kv_in_use():
        return ax.containers[2].patches[0]  # weights, overhead, KV in use, KV free

    drawn = {}
    for n in (1, 4, 9):
        e.controls["sessions"].value = n
        drawn[n] = kv_in_use().get_width()
        assert drawn[n] == pytest.approx(n * per_session / 1e9)
        assert visible_widths(ax)[-1] == pytest.approx((budget - n * per_session) / 1e9)
        assert ax.texts[0].get_text() == f"{n} x 128K\n(9 fit)"
    assert drawn[1] < drawn[4] < drawn[9]
    e.controls["sessions"].value = 12  # three more than fit
    bar = kv_in_use()
    assert bar.get_width() == pytest.approx((total - weights_b - overhead_b) / 1e9)
    assert bar.get_x() + bar.get_width() > ax.lines[0].get_xdata()[0]  # past the dashed tick
    assert not ax.containers[3].patches[0].get_visible()  # no KV free
    assert ax.texts[0].get_text() == "12 x 128K:\nonly 9 fit"
    # the readout follows the same slider (the longest context for 12 sessions)
    assert "max context at 12 sessions per replica" in e.readout.value


def test_an_invalid_setting_clears_the_previous_numbers_and_figure():
    """GPUs=2 with TP=4 is refused: the error shows, and the old readout and plot go away."""
    import ipywidgets as widgets

    from kvlib.views.widgets.kit import Explorer

    def compute(n):
        if n > 2:
            raise ValueError(f"n={n} is too large")
        return n

    def draw(fig, n):
        if not fig.axes:
            fig.add_subplot()
        fig.axes[0].set_title(f"n={n}")

    e = Explorer({"n": widgets.IntSlider(1, min=1, max=4)}, compute,
                 lambda n: f"<p>value {n}</p>", draw)
    assert e.readout.value == "<p>value 1</p>" and e.plot.layout.display is None
    e.controls["n"].value = 3
    assert "n=3 is too large" in e.error.value
    assert "value 1" not in e.readout.value
    assert e.plot.layout.display == "none"  # the figure of n=1 is not on show
    e.controls["n"].value = 2
    assert e.error.value == "" and e.readout.value == "<p>value 2</p>"
    assert e.plot.layout.display is None and e.plot.value[:8] == b"\x89PNG\r\n\x1a\n"
