"""Capacity figures and the planner widget: drawn from kvlib.serving, values checked by hand."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.views.figures.capacity import (
    FIGURES,
    plot_budget,
    plot_decode_roofline,
    plot_levers,
    plot_paging_waste,
)
from kvlib.views.widgets.capacity import planner, planner_explorer, render

GiB = 1024**3


def test_budget_bar_segments_are_the_plan_numbers():
    """The default release, vLLM 0.34.0 (docs/capacity.md, "The budget per vLLM release")."""
    p = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4).plan(131072)
    ax = Figure().add_subplot()
    plot_budget(ax, {"4 x H200": p}, unit="GB")
    widths = [round(r.get_width(), 6) for r in ax.patches]
    # the bf16 checkpoint, 141,107,412,992 B: a quarter per GPU, the 161 x 8,192 norms whole
    norms = 161 * 8192 * 2
    weights = (141_107_412_992 - norms) // 4 + norms
    assert widths[0] == round(weights / 1e9, 6) == 35.278832
    # 0.34.0's assumed terms (deployment.MEASURED_DEFAULTS): resident = non-torch 0.5 GiB +
    # graph pool 2 GiB; peak kept free = activation 1.5 GiB + graph estimate 2 GiB
    resident, peak = GiB // 2 + 2 * GiB, 3 * GiB // 2 + 2 * GiB
    assert widths[1] == round((resident + peak) / 1e9, 6)  # overhead, 6 GiB
    # u = 1.0: usable = min(M, M - 0.5 GiB in use - max(1 GiB, 0.75 x 3.5 GiB)), M = 139.81 GiB
    total = 13981 * GiB // 100  # 150,119,844,413 B reported by CUDA
    usable = min(total, total - GiB // 2 - max(GiB, 3 * peak // 4))  # 146,764,401,213
    session = 80 * 2 * 2 * 128 * 2 * 131072  # 10 GiB: 80 layers, K and V, 2 heads per GPU
    sessions = (usable - weights - resident - peak) // session  # 105,043,118,653 // 10 GiB
    assert widths[2] == round(sessions * session / 1e9, 6) == round(9 * 10 * GiB / 1e9, 6)
    # all usable memory
    assert sum(r.get_width() for r in ax.patches) == pytest.approx(usable / 1e9)
    assert ax.lines[0].get_xdata()[0] == pytest.approx(146.764401213)  # the usable tick
    assert ax.lines[1].get_xdata()[0] == pytest.approx(150.119844413)  # the CUDA total


def test_budget_bar_segments_under_vllm_0_33():
    """vLLM 0.33.0's profiled rule, the one notebook 06's blog posts use: u x M - W - O."""
    p = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4, vllm="0.33.0").plan(131072)
    ax = Figure().add_subplot()
    plot_budget(ax, {"4 x H200": p}, unit="GB")
    widths = [round(r.get_width(), 6) for r in ax.patches]
    norms = 161 * 8192 * 2
    assert widths[0] == round(((141_107_412_992 - norms) // 4 + norms) / 1e9, 6) == 35.278832
    assert widths[1] == round(4 * GiB / 1e9, 6)  # overhead
    assert widths[2] == round(9 * 10 * GiB / 1e9, 6)  # 9 sessions of 10 GiB
    # all usable memory: ceil(0.92 x 139.81 GiB reported by CUDA) = 138,110,256,860 B
    assert sum(r.get_width() for r in ax.patches) == pytest.approx(138.110256860)
    assert ax.lines[1].get_xdata()[0] == pytest.approx(150.119844413)  # the CUDA total


def test_levers_bars_and_budget_line():
    ax = Figure().add_subplot()
    plot_levers(ax, ["a", "b"], [100 * GiB, 25 * GiB], "GiB", budget=50 * GiB)
    assert [r.get_height() for r in ax.patches] == [100.0, 25.0]
    assert ax.lines[0].get_ydata()[0] == 50.0
    assert "/4" in ax.texts[1].get_text()


def test_paging_waste_in_percent():
    ax = Figure().add_subplot()
    plot_paging_waste(ax, ["x", "y", "z"], [0.5, 0.25, 0.01])
    assert [r.get_height() for r in ax.patches] == [50.0, 25.0, 1.0]


def test_roofline_line_stops_at_the_largest_batch_that_fits():
    ax = Figure().add_subplot()
    plot_decode_roofline(ax, {"m": (1000, 100, 20)}, bandwidth=1000)
    line = ax.lines[0]
    batches = [1, 2, 4, 8, 16, 20]
    assert list(line.get_xdata()) == batches
    assert np.allclose(line.get_ydata(), [(1000 + b * 100) / 1000 * 1e3 for b in batches])


def test_make_figures_entries_build():
    assert set(FIGURES) == {"capacity_budget", "decode_roofline", "cache_crossover"}
    assert all(isinstance(make(), Figure) for make in FIGURES.values())


def test_planner_by_hand():
    """The default release, vLLM 0.34.0, with an explicit utilization of 0.9: below 1.0 it
    caps the cache (docs/capacity.md, "The budget per vLLM release")."""
    r = planner("llama-3.1-70b", "H200", gpus=8, tp=4, weight_dtype="bf16", kv_dtype="fp8",
                context=32768, gpu_mem_util=0.9, sessions=64)
    assert r.plan.vllm == "0.34.0"
    total = 13981 * 1024**3 // 100  # the H200's CUDA total, 150,119,844,413 B
    # min(ceil(0.9 M), M - 0.5 GiB in use - max(1 GiB, 0.75 x 3.5 GiB peak)): the first
    usable = min(-(-total * 9 // 10), total - GiB // 2 - max(GiB, 3 * (7 * GiB // 2) // 4))
    assert usable == -(-total * 9 // 10) == 135_107_859_972
    # weights 70.6B x 2 B / 4; resident 0.5 + 2 GiB and peak 1.5 + 2 GiB (MEASURED_DEFAULTS)
    budget = usable - 70_600_000_000 * 2 // 4 - 6 * GiB  # 93,365,409,028
    per_seq = 2 * 80 * 2 * 128 * 1 * 32768  # 1,342,177,280 (32,768 = 512 blocks of 64)
    assert r.plan.max_sequences == 2 * (budget // per_seq)  # 2 x 69
    # 64 sessions per replica: the longest whole-block context (64-token blocks in 0.34.0)
    # with 64 x slots x 40,960 <= budget
    assert r.max_context == budget // (64 * 40_960) // 64 * 64
    assert "max concurrent sessions" in render(r)


def test_planner_by_hand_under_vllm_0_33():
    r = planner("llama-3.1-70b", "H200", gpus=8, tp=4, weight_dtype="bf16", kv_dtype="fp8",
                context=32768, gpu_mem_util=0.9, sessions=64, vllm="0.33.0")
    usable = -(-(13981 * 1024**3 // 100) * 9 // 10)  # ceil(0.9 x the H200's CUDA total)
    budget = usable - 70_600_000_000 * 2 // 4 - 4 * GiB  # 95,512,892,676
    per_seq = 2 * 80 * 2 * 128 * 1 * 32768  # 1,342,177,280
    assert r.plan.max_sequences == 2 * (budget // per_seq) == 2 * 71
    # 64 sessions per replica: the longest whole-block context with 64 x slots x 40,960 <= budget
    assert r.max_context == budget // (64 * 40_960) // 16 * 16
    assert "max concurrent sessions" in render(r)


def test_planner_widget_shows_errors_and_recovers():
    e = planner_explorer()
    e.controls["tp"].value = 8  # 4 GPUs cannot hold a TP group of 8
    assert "must be a multiple of tensor_parallel_size=8" in e.error.value
    e.controls["gpus"].value = 8
    assert e.error.value == "" and "max concurrent sessions" in e.readout.value


def test_planner_engine_control():
    """The engine control (issue 35): vLLM by default; SGLang's and TensorRT-LLM's plans of the
    same deployment are kvlib's engine_plan, their assumptions in the readout; a model an
    engine is not traced for shows the refusal; back to vLLM, the plan of before."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines import engine_plan
    from kvlib.serving.engines.vllm.deployment import Deployment

    e = planner_explorer()  # Llama 3.1 70B, 4 x H200, TP 4, bf16, 128K
    assert e.controls["engine"].value == "vllm"
    before = e.readout.value
    dep = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4, kv_dtype="bf16")
    for engine, tokens in (("sglang", "the #tokens it logs"), ("trtllm", "the (N) it logs")):
        e.controls["engine"].value = engine
        plan = engine_plan(dep, 131072, engine)
        assert e.error.value == "" and tokens in e.readout.value
        assert f"{plan.tokens:,}" in e.readout.value
        assert all(a in e.readout.value for a in plan.assumptions)
        # the bar draws the sessions slider's 8 sequences, and says how many fit
        verdict = e.fig.axes[0].texts[0].get_text()
        assert verdict.startswith("8 x 128K") and f"{plan.sessions:,} fit" in verdict
    e.controls["model"].value = "qwen3-next-80b-a3b"  # Gated DeltaNet: not traced for it
    assert "Gated DeltaNet state layers is not traced by kvlib" in e.error.value
    e.controls["model"].value = "llama-3.1-70b"
    e.controls["engine"].value = "vllm"
    assert e.error.value == "" and e.readout.value == before


def test_planner_lists_every_bundled_model_by_title():
    from kvlib import BUNDLED

    e = planner_explorer()
    assert list(e.controls["model"].options) == [(m.title, n) for n, m in BUNDLED.items()]


def test_planner_warns_beyond_the_models_context():
    """Llama 3 70B's config.json: max_position_embeddings = 8,192 (the CLI notes it too)."""
    over = render(planner("llama-3-70b", "H200", gpus=4, tp=4, weight_dtype="bf16",
                          kv_dtype="bf16", context=16384, gpu_mem_util=0.9, sessions=8))
    assert "context 16,384 exceeds the model's max_position_embeddings (8,192)" in over
    within = render(planner("llama-3-70b", "H200", gpus=4, tp=4, weight_dtype="bf16",
                            kv_dtype="bf16", context=8192, gpu_mem_util=0.9, sessions=8))
    assert "exceeds" not in within


# Llama-style: 4 layers, 8 query heads, 8 KV heads, hidden 1024 (head_dim 128), 2,048 positions
PASTED = ('{"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, '
          '"num_key_value_heads": 8, "hidden_size": 1024, "max_position_embeddings": 2048}')


def test_planner_plans_a_pasted_config_with_its_parameter_count():
    e = planner_explorer()
    e.controls["config"].value = PASTED
    # no count: the Deployment's refusal, as `kvlib plan CONFIG` without --params says it
    assert "parameter count of llama is unknown" in e.error.value
    e.controls["params"].value = "1.5B"
    assert e.error.value == ""
    # weights 1.5e9 x 2 B / TP 4 = 750 MB per GPU (under 1 GB: in MB, not "0.75 GB")
    assert "750 MB" in e.readout.value
    # KV per 128K session per GPU: 4 layers x 2 x (8 / 4) heads x 128 x 2 B x 131,072 tokens
    # (4 layers x 2 x (8 / 4) heads x 128 x 2 B x 131,072 tokens = 0.54 GB: in MB)
    assert f"{4 * 2 * 2 * 128 * 2 * 131072 / 1e6:.2f} MB" in e.readout.value  # 536.87 MB
    assert "exceeds the model's max_position_embeddings (2,048)" in e.readout.value
    e.controls["params"].value = "lots"
    assert "params must be a positive whole count" in e.error.value
    assert "GB" not in e.readout.value  # the previous numbers are gone


@pytest.mark.parametrize("text", ["70600000000", "70.6B", "70.6b", "7e10", "8.03e9", " 8M ",
                                  "1.5K", "0", "-3", "abc", "1.23456789B", "", "70.6 B"])
def test_params_are_read_as_kvlib_plan_reads_them(text):
    from kvlib.cli.plan import parse_count
    from kvlib.views.widgets.capacity import parse_params

    try:
        expected = parse_count(text)
    except ValueError as e:
        with pytest.raises(ValueError) as mine:
            parse_params(text)
        assert str(mine.value) == str(e).replace("--params", "params")
    else:
        assert parse_params(text) == expected


def test_levers_legend_names_the_colours_and_labels_avoid_the_budget_line():
    fig = Figure(figsize=(11, 5.6), layout="constrained")
    ax = fig.add_subplot()
    # 64.4 GiB under a budget of 81.3 GiB: its label would cross the dashed line
    plot_levers(ax, ["a", "b", "c"], [5120 * GiB, 64.4 * GiB, 8 * GiB], "GiB",
                budget=int(81.3 * GiB))
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("over the budget" in t for t in texts)
    assert any("within the budget" in t for t in texts)
    assert any("KV budget per GPU" in t for t in texts)
    assert "log scale" in ax.get_ylabel()
    fig.canvas.draw()
    line_y = ax.transData.transform((0, 81.3))[1]
    for t in ax.texts:
        box = t.get_window_extent()
        assert not box.y0 < line_y < box.y1, t.get_text()


def test_roofline_legend_explains_dashes_and_crosses():
    ax = Figure().add_subplot()
    plot_decode_roofline(ax, {"m": (1000, 100, 20)}, bandwidth=1000)
    texts = " | ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "weights only" in texts and "full batch" in texts and "cache outweighs" in texts
