"""docs/formula_sheet.md is generated from kvlib's derivations and must be current."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _generator():
    spec = importlib.util.spec_from_file_location("formula_sheet",
                                                  ROOT / "scripts" / "formula_sheet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sheet_is_current():
    committed = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    assert committed == _generator().sheet(), "run: python scripts/formula_sheet.py"


def test_every_formula_is_on_the_sheet_with_two_worked_numbers():
    from kvlib.core.formulas import KINDS, STATES

    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    sections = text.split("\n### ")[1:]
    names = [s.split("\n", 1)[0] for s in sections]
    capacity = ["Cache per GPU under tensor parallelism", "Sessions per TP group",
                "Sessions per TP group, vLLM 0.33.0's rule", "Decode step, a lower bound"]
    compressed = ["One compressed layer, one sequence", "What one more token costs, past the "
                  "window", "Selection: bytes one decode step reads",
                  "Sharing: memory divided, reads not"]
    assert set(names) == set(KINDS) | set(STATES) | set(capacity) | set(compressed)
    for s in sections:
        assert s.count("\n- ") == 2, s.split("\n", 1)[0]
    # hand values: Llama 3.1 70B 80 x 2 x 8 x 128 x 2; DeepSeek V2 60 x 576 x 2
    assert "- Llama 3.1 70B (`llama-3.1-70b`, meta-llama/Llama-3.1-70B): 327,680 B" in text
    assert "- DeepSeek V2 (`deepseek-v2`, deepseek-ai/DeepSeek-V2): 69,120 B" in text
    # Qwen3.5 27B: 48 Gated DeltaNet layers, conv rows 3 x (2 x 16 x 128 + 48 x 128) in bf16,
    # recurrent state 48 heads x 128 x 128 in float32
    assert f"{48 * (3 * (2 * 16 * 128 + 48 * 128) * 2 + 48 * 128 * 128 * 4):,} B" in text


def test_capacity_formulas_reproduce_blog_post_as_example_by_hand():
    """Notebook 06's formulas on the sheet (issue 26), blog post A's 4 x H200 example by hand.
    H200: CUDA total 139.81 GiB; ceil(0.92 x it) - Llama 3.1 70B's bf16 weights over TP 4
    (70,553,706,496 parameters; the 1,318,912 of the norms whole on every GPU) - 4 GiB, over
    131,072 tokens x 80 layers x 2 KV heads per GPU x 256 x 2 B = 10 GiB a session: 9."""
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    usable = -(-(13981 * 2**30 // 100) * 92 // 100)
    weights = (70_553_706_496 - 1_318_912) * 2 // 4 + 1_318_912 * 2
    budget = usable - weights - 4 * 2**30
    assert budget // (80 * 2 * 256 * 2 * 131_072) == 9
    assert f"ceil(0.92 M) = {usable:,} B" in text and f"leaves {budget:,} B" in text
    assert "**9** sessions" in text
    assert f"{80 * 2 * 256 * 2:,} B = 80 KiB = 81.92 KB per token per GPU" in text


def test_capacity_default_is_vllm_0_34_and_0_33_is_labelled():
    """Issue 40: the sheet gave 0.33.0's rule (block 16, u = 0.92) without saying so. The default
    section is 0.34.0's extensible budget, by hand on blog post A's node with kvlib plan's stated
    assumptions (0.5 GiB in use at start, peak 1.5 GiB activations + 2 GiB graphs, resident 0.5
    GiB non-torch + 2 GiB graph pool, u = 1.0, margin max(1 GiB, floor(0.75 peak)))."""
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    sections = {s.split("\n", 1)[0]: s for s in text.split("\n### ")[1:]}
    default = sections["Sessions per TP group"]
    old = sections["Sessions per TP group, vLLM 0.33.0's rule"]
    assert "0.34.0" in default and "blocks of 64" in default and "0.92" not in default
    assert "blocks of 16 (vLLM 0.33.0's" in old and "(0.92 unless set" in old
    gib = 2**30
    total = 13981 * gib // 100
    peak, in_use, resident = 3 * gib + gib // 2, gib // 2, 2 * gib + gib // 2
    margin = max(gib, 3 * peak // 4)
    weights = (70_553_706_496 - 1_318_912) * 2 // 4 + 1_318_912 * 2
    usable = min(total, total - in_use - margin)
    budget = usable - weights - resident - peak
    assert budget // (80 * 2 * 256 * 2 * 131_072) == 9
    assert f"= {usable:,} B; minus the weights" in default and f"leaves {budget:,} B" in default


def test_the_sheet_gives_no_exercise_away():
    """The workshop keeps the sheet on the projector while the room does the exercises."""
    from kvlib.views.exercises import ANSWERS

    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    for exercise, answer in ANSWERS.items():
        for part in answer.parts:
            value = part.value()
            if part.kind == "bytes":
                shown = f"{value:,} B" if isinstance(value, int) else f"{float(value):g} B"
                # a whole number, not the tail of a longer one (68 B is not 49,082,368 B)
                assert not __import__("re").search(rf"(?<![\d,.]){shown}", text), \
                    (exercise, part.what)
            elif part.kind == "count" and part.unit == "sessions":
                assert f"**{value}** sessions" not in text, (exercise, part.what)


def test_large_values_print_in_a_unit_a_projector_reads():
    """870.33 MiB, not 891,216 KiB (Nemotron-H 56B's state: 912,605,184 B)."""
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    assert f"{912_605_184:,} B = {912_605_184 / 2**20:.2f} MiB = {912_605_184 / 1e6:.2f} MB" in text
    assert not __import__("re").search(r"\d{1,3},\d{3}(\.\d+)? (KiB|KB)", text)


def test_compressor_state_widths_by_hand():
    """Issue 40: the sheet said "d_c = 2 x 512" per token for V4's compressor state. Its rows are
    c_o x head_dim wide (vLLM 0.34.0 compressor.py:247-248: coff = 2 for m = 4, else 1), each the
    projected values and the gate scores in fp32 (8 bytes a column), and min(N_KV, c_o m) rows
    are kept; the indexer's compressor is c_o x index_head_dim. By hand from V4-Flash's config:
    head_dim 512, index_head_dim 128, compress_ratios 21 x 4 and 20 x 128."""
    from kvlib import bundled_config

    c = bundled_config("deepseek-v4-flash")
    ratios = c["compress_ratios"]
    n4, n128 = ratios.count(4), ratios.count(128)
    assert (c["head_dim"], c["index_head_dim"], n4, n128) == (512, 128, 21, 20)
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    section = text.split("\n### Compressor state\n")[1].split("\n### ")[0]
    assert "d_c = 2 x 512" not in section.replace("d_c = 512, c_o = 2: rows 2 x 512", "")
    assert (f"m = 4 compressors, {n4} layers (d_c = 512, c_o = 2: rows 2 x 512 = 1,024 values "
            f"wide, at most {2 * 4} kept): {n4 * 8 * 2 * 512:,} B") in section
    assert (f"m = 128 compressors, {n128} layers (d_c = 512, c_o = 1: rows 512 values wide, at "
            f"most {128} kept): {n128 * 8 * 512:,} B") in section
    assert "rows $c_o d_I$ = 2 x 128 = 256 wide" in section
    assert r"keeps $\min(N_{KV}, c_o m)$ rows" in section
