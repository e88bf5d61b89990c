"""Every notebook widget, used in real JupyterLab in headless Chromium (issue 6).

nbval checks stored outputs; it cannot see a slider whose callback raises or a
plot that never redraws. Here each notebook that builds a ``kvlib.views.widgets.kit.Explorer``
is opened in JupyterLab, run top to bottom, and every Explorer gets at least one
control moved. The readout must then show the value written below by hand
arithmetic (never read back from kvlib), and the figure must be redrawn.

A notebook that gains an Explorer needs an entry in ``EXPECTED``: which control to
move, and the readout text for the new setting, worked out by hand.

Every Explorer must also fit a 900-px screen, and a move to a setting the formulas
refuse (``Move(..., error=True)``) must clear the previous setting's numbers and
figure. Every notebook page, widget or not, must render without a MathJax error, open in
JupyterLab without being marked modified, and after Run All show each exercise's answer only
folded, behind "Show the answer to NN.k", which opens on a click (issue 26).
Each of these checks has a fixture that must fail it (tests/browser/fixtures).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from labharness import VIEWPORT, Move, WidgetCheckFailed

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
# the lessons, then the engines track (issue 40), named as the Lab serves them: engines/NAME
PATHS = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "engines").glob("*.ipynb"))
ALL_NOTEBOOKS = [p.relative_to(NOTEBOOKS).as_posix() for p in PATHS]


# `Explorer(...)` itself, or a kvlib factory that returns one (`gqa_explorer(...)`).
_BUILDS_EXPLORER = re.compile(r"(?i)\b\w*explorer\(")


def has_explorer(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    return any(c.cell_type == "code" and _BUILDS_EXPLORER.search(c.source) for c in nb.cells)


WIDGET_NOTEBOOKS = [p.relative_to(NOTEBOOKS).as_posix() for p in PATHS if has_explorer(p)]

# A config.json as a reader would paste it: Llama-style, 2 layers, 8 query heads, 2 KV
# heads, hidden 512 (head_dim 512 / 8 = 64), 4,096 positions.
TINY_LLAMA = json.dumps({"_name_or_path": "my-tiny-llama", "model_type": "llama",
                         "num_hidden_layers": 2, "num_attention_heads": 8,
                         "num_key_value_heads": 2, "hidden_size": 512,
                         "max_position_embeddings": 4096})

# Per notebook: one list of moves per Explorer, in page order.
EXPECTED: dict[str, list[list[Move]]] = {
    # gqa_explorer(N_L=80, N_h=64, N_g=8, head_dim=128, dtype="bf16", context=8192).
    # Bytes per token: b * N_L * (KV heads) * (d_QK + d_V), b = 2 for bf16.
    "02_gqa_and_mqa.ipynb": [[
        # GQA with 4 KV heads instead of 8.
        Move("KV heads N_g", "select", "4", expect=f"{2 * 80 * 4 * (128 + 128):,}"),  # 163,840
        # One more layer: MHA (64 KV heads) per token.
        Move("layers N_L", "right", 1, expect=f"{2 * 81 * 64 * (128 + 128):,}"),  # 2,654,208
        # Context 8K -> 16K: one MHA sequence of 81 layers in GiB.
        Move("context", "right", 1,
             expect=f"{2 * 81 * 64 * (128 + 128) * 16384 / 2**30:g} GiB"),  # 40.5 GiB
    ]],
    # rope_explorer(start=rope_view(d_L=512, d_R=64, N_h=128, context=131072)); DeepSeek V2's
    # config.json: 60 layers, bf16. Bytes per token: (a) 2 * 60 * d_L, (b) decoupled
    # 2 * 60 * (d_L + d_R).
    "04_rope_decoupling.ipynb": [[
        Move("RoPE width d_R", "select", "32", expect=f"{2 * 60 * (512 + 32):,}"),  # 65,280
        Move("latent d_L", "select", "256", expect=f"{2 * 60 * (256 + 32):,}"),  # 34,560
        # Context 128K -> 64K: design (b), one sequence, in GiB.
        Move("context", "left", 1,
             expect=f"{2 * 60 * (256 + 32) * 65536 / 2**30:.2f} GiB"),  # 2.11 GiB
    ]],
    # model_explorer(model="gemma-3-27b", context=131072, batch=8, kv_dtype="bf16").
    # Gemma 3 27B config.json: 62 layers (10 full, 52 sliding over 1,024 tokens),
    # 16 KV heads of width 128. Per token per layer: K and V, 2 * 16 * 128 elements.
    "05_real_models.ipynb": [[
        # fp8 (1 B): all 62 layers per token, in KiB.
        Move("KV dtype", "select", "fp8",
             expect=f"{62 * 2 * 16 * 128 * 1 / 1024:g} KiB"),  # 248 KiB
        # Batch 8 -> 9: the 10 full layers hold all 131,072 tokens of 9 sequences.
        Move("batch", "right", 1,
             expect=f"{10 * 2 * 16 * 128 * 1 * 131072 * 9 / 2**30:g} GiB"),  # 45 GiB
        # A pasted config.json (TINY_LLAMA: 2 layers, 2 KV heads of 512 / 8 = 64), fp8,
        # 131,072 tokens x 9: under 1 GiB, so in MiB (never "0.56 GiB" or "0 GiB").
        Move("config.json", "paste", TINY_LLAMA,
             expect=f"{2 * 2 * 2 * 64 * 1 * 131072 * 9 / 2**20:g} MiB"),  # 576 MiB
        # Not JSON: the reader's one-line error, and no number of the pasted model left.
        Move("config.json", "paste", "{not json", error=True,
             expect="the pasted config is not valid JSON"),
        # Cleared: Gemma 3 27B again, batch 9, fp8 (the 45 GiB of the full layers).
        Move("config.json", "paste", "",
             expect=f"{10 * 2 * 16 * 128 * 1 * 131072 * 9 / 2**30:g} GiB"),  # 45 GiB
    ]],
    # hybrid_explorer(model="qwen3-next-80b-a3b", context=131072), bf16. Qwen3-Next's
    # config.json: 12 attention layers of 2 KV heads x 256; 36 Gated DeltaNet layers.
    "07_hybrid_models.ipynb": [[
        # Context 128K -> 256K: the growing cache of 12 attention layers, in GiB.
        Move("context", "right", 1,
             expect=f"growing cache {12 * 2 * 2 * 256 * 2 * 262144 / 2**30:g} GiB"),  # 6 GiB
        # Nemotron-H 56B: 54 Mamba2 layers, conv 3 x (256*64 + 2*8*256) in bf16, SSM
        # 256 x 64 x 256 in float32 (vLLM's NemotronH default), in MiB.
        Move("model", "select", "Nemotron-H 56B",
             expect=f"constant state "
                    f"{54 * (3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4) / 2**20:.2f}"
                    " MiB"),  # 870.33 MiB
    ]],
    # compressed_explorer(context=131072, kv_dtype="bf16"): Llama 2 7B's config.json, 32
    # layers, every one MHA with 32 KV heads of 128, in the first row of the table.
    "08_compressed_shared_selected.ipynb": [[
        # Context 128K -> 256K: Llama 2 7B, bf16, one sequence, in GiB.
        Move("context", "right", 1,
             expect=f"{32 * 2 * 32 * 128 * 2 * 262144 / 2**30:g} GiB"),  # 128 GiB
        # fp8 (1 B): half of it.
        Move("KV dtype", "select", "fp8",
             expect=f"{32 * 2 * 32 * 128 * 1 * 262144 / 2**30:g} GiB"),  # 64 GiB
    ]],
    # planner_explorer(): Llama 3.1 70B (80 layers, 8 KV heads of 128) on 4 H200, TP 4,
    # so 8 / 4 = 2 KV heads per GPU; 128K context. KV per session per GPU, in GB (10^9).
    "06_capacity_planning.ipynb": [[
        Move("KV dtype", "select", "fp8",
             expect=f"{80 * 2 * 2 * 128 * 1 * 131072 / 1e9:.2f} GB"),  # 5.37 GB
        Move("context", "left", 1,
             expect=f"{80 * 2 * 2 * 128 * 1 * 65536 / 1e9:.2f} GB"),  # 2.68 GB
        # 2 GPUs cannot hold a TP group of 4: refused, and the 2.68 GB must go.
        Move("GPUs", "select", "2", error=True,
             expect="gpus=2 must be a multiple of tensor_parallel_size=4"),
        # 8 GPUs at TP 4: 8 / 4 = 2 replicas.
        Move("GPUs", "select", "8", expect="(2 replicas x"),
        # Llama 3 70B's config.json: max_position_embeddings 8,192 < the 64K chosen.
        Move("model", "select", "Llama 3 70B",
             expect="exceeds the model's max_position_embeddings (8,192)"),
        # A pasted config has no parameter count: refused until one is given.
        Move("config.json", "paste", TINY_LLAMA, error=True,
             expect="parameter count of my-tiny-llama is unknown"),
        # 1.5B parameters in bf16 over TP 4: 1.5e9 x 2 B / 4 = 750 MB of weights per GPU.
        Move("params", "paste", "1.5B", expect=f"{1.5e9 * 2 / 4 / 1e6:g} MB"),  # 750 MB
    ]],
}

# The fixtures: Llama-2-70B-like GQA, N_L = 80 layers, d_QK = d_V = 128, N_h = 64.
# Slider N_g 8 -> 16 (bf16, 2 B), then dtype bf16 -> fp8 (1 B). Bytes per token:
# b * N_L * N_g * (d_QK + d_V).
FIXTURE_MOVES = [[
    Move("N_g", "right", 1, expect=f"{2 * 80 * 16 * (128 + 128):,} B"),   # 655,360 B
    Move("dtype", "select", "fp8", expect=f"{1 * 80 * 16 * (128 + 128):,} B"),  # 327,680 B
]]


# The first redraw of a constrained-layout figure differs from the first image even
# when nothing changed (the layout settles on the second draw), so a stale plot is
# only caught from a widget's second move on: every widget gets at least two.
MIN_MOVES = 2


@pytest.mark.parametrize("name", WIDGET_NOTEBOOKS)
def test_widgets_respond_in_jupyterlab(lab, name):
    if name not in EXPECTED:
        pytest.fail(f"{name} builds an Explorer but has no entry in EXPECTED in {__file__}: "
                    "add the control to move and the readout expected (by hand arithmetic)")
    assert all(len(moves) >= MIN_MOVES for moves in EXPECTED[name]), \
        f"every Explorer of {name} needs at least {MIN_MOVES} moves"
    timings = lab.check(name, EXPECTED[name])
    print(f"{name}: " + ", ".join(f"{k} {v:.0f} px" if k.startswith("height") else
                                  f"{k} {v:.1f} s" for k, v in timings.items()))  # with -s
    assert lab.unchanged(name), f"{name} was modified while under test (autosave?)"


@pytest.mark.parametrize("name", [n for n in ALL_NOTEBOOKS if n not in WIDGET_NOTEBOOKS])
def test_notebook_without_widgets_opens_clean_and_folds_its_answers(lab, name):
    """The checks every notebook gets in check_notebook (opens unmodified; after a real Run
    All each answer is folded, and opens on a click) for the notebooks without an Explorer."""
    lab.check(name, [])
    assert lab.unchanged(name), f"{name} was modified while under test (autosave?)"


def test_harness_detects_a_notebook_that_opens_modified(lab):
    """Stored with the kernelspec name and language_info of before (and a solution whose
    output is hidden): JupyterLab rewrites them on opening, so the check must fail."""
    with pytest.raises(WidgetCheckFailed, match="opens already modified"):
        lab.check("opens_modified.ipynb", [])


def test_harness_detects_an_answer_shown_after_run_all(lab):
    """A solution that prints its answer shows it after Run All: the check must fail."""
    with pytest.raises(WidgetCheckFailed, match="solution 1 shows '41 sessions'"):
        lab.check("printed_answer.ipynb", [])
    assert lab.unchanged("printed_answer.ipynb")


def test_harness_passes_a_working_widget(lab):
    """Positive control for the next test: same widget, same moves, no bug."""
    timings = lab.check("good_widget.ipynb", FIXTURE_MOVES)
    assert timings["total"] < 60
    assert lab.unchanged("good_widget.ipynb")


# broken_widget.ipynb: Explorer #0 is the fixture widget with a bytes-per-element table
# that lacks fp8; Explorer #1 draws its figure once and never updates it.
FIXTURE_N_G = FIXTURE_MOVES[0][0]


def test_harness_detects_a_raising_callback(lab):
    """Choosing fp8 raises KeyError inside the callback: the check must fail, name the
    move, and show the kernel's traceback."""
    with pytest.raises(WidgetCheckFailed) as failure:
        lab.check("broken_widget.ipynb", [FIXTURE_MOVES[0], [FIXTURE_N_G]])
    message = str(failure.value)
    assert "Explorer #0, control 'dtype'" in message  # the N_g move worked, this did not
    assert "KeyError" in message and "fp8" in message
    assert lab.unchanged("broken_widget.ipynb")


def test_harness_detects_a_stale_plot(lab):
    """The readout of Explorer #1 moves on but its figure does not: the check must fail
    (at the second move: see MIN_MOVES)."""
    stale_moves = [FIXTURE_N_G,
                   Move("N_g", "right", 1, expect=f"{2 * 80 * 32 * (128 + 128):,} B")]
    with pytest.raises(WidgetCheckFailed, match=r"Explorer #1, control 'N_g'.*did not change"):
        lab.check("broken_widget.ipynb", [[FIXTURE_N_G], stale_moves])


def test_harness_refuses_an_expectation_already_on_screen(lab):
    """A readout that never updates must not pass a move whose expected text it showed
    before: good_widget starts at N_g = 8, 2 * 80 * 8 * (128 + 128) = 327,680 B."""
    already = Move("N_g", "right", 1, expect=f"{2 * 80 * 8 * (128 + 128):,} B")
    with pytest.raises(WidgetCheckFailed, match=r"control 'N_g'.*already shows '327,680 B'"):
        lab.check("good_widget.ipynb", [[already, FIXTURE_MOVES[0][1]]])
    assert lab.unchanged("good_widget.ipynb")


# --- a refused setting must not leave the previous numbers on screen ---------------------
# invalid_setting.ipynb: the fixture widget, whose compute raises ValueError for N_g = 32.
# Explorer #0 is kvlib's Explorer; Explorer #1 shows the error but keeps the old readout
# and figure (a deliberate bug).
REFUSED = [
    FIXTURE_N_G,  # 8 -> 16: 655,360 B
    Move("N_g", "right", 1, error=True, expect="N_g=32 is refused by this fixture"),
    Move("N_g", "left", 1, expect=f"{2 * 80 * 16 * (128 + 128):,} B"),  # back to 16
]


def test_harness_passes_a_widget_that_clears_a_refused_setting(lab):
    """Positive control: kvlib's Explorer clears its readout and figure on a refused setting."""
    lab.check("invalid_setting.ipynb", [REFUSED, FIXTURE_MOVES[0]])
    assert lab.unchanged("invalid_setting.ipynb")


def test_harness_detects_numbers_left_from_the_previous_setting(lab):
    with pytest.raises(WidgetCheckFailed,
                       match=r"(?s)Explorer #1, control 'N_g'.*still shows the previous "
                             r"setting's numbers \['655,360'"):
        lab.check("invalid_setting.ipynb", [FIXTURE_MOVES[0], REFUSED])


# --- every Explorer fits a 900-px screen ----------------------------------------------

def test_harness_detects_a_widget_taller_than_the_screen(lab):
    """tall_widget.ipynb: the fixture widget with an 11-inch figure."""
    assert VIEWPORT["height"] == 900
    with pytest.raises(WidgetCheckFailed,
                       match=r"Explorer #0 is \d+ px tall after Run All, taller than a "
                             r"900-px screen"):
        lab.check("tall_widget.ipynb", FIXTURE_MOVES)


def test_harness_detects_a_text_area_in_one_column(lab):
    """narrow_text_area.ipynb: the fixture widget with its config.json box squeezed into one
    column of the control grid (notebooks 05-07 give it a row of its own)."""
    with pytest.raises(WidgetCheckFailed,
                       match=r"Explorer #0's text area 'config.json' is \d+ px wide"):
        lab.check("narrow_text_area.ipynb", FIXTURE_MOVES)


# --- no formula renders as a MathJax error ----------------------------------------------

def _math_report(found: dict) -> str:
    return "\n".join(f"  cell {e['cell']}: {e['message']!r} in {e['text'][:80]!r}"
                      for e in found["errors"])


@pytest.mark.parametrize("name", ALL_NOTEBOOKS)
def test_no_mathjax_error_on_the_page(lab, name):
    """Every notebook, as a reader opens it: MathJax renders every formula (a `_` inside
    `\\text{}` is "'_' allowed only in math mode", shown in red in place of the formula)."""
    found = lab.mathjax(name)
    assert found["formulas"] > 0, f"{name}: no formula typeset (is MathJax running?)"
    assert not found["errors"], (f"{name}: {len(found['errors'])} formula(s) rendered as "
                                 f"MathJax errors:\n{_math_report(found)}")
    assert lab.unchanged(name)


def test_harness_detects_a_mathjax_error(lab):
    """mathjax_error.ipynb: two good formulas and `$\\text{N_g heads} = 8$`; only the last
    is reported."""
    found = lab.mathjax("mathjax_error.ipynb")
    assert found["formulas"] == 3
    assert [e["message"] for e in found["errors"]] == ["'_' allowed only in math mode"]
