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
                "Decode step, a lower bound"]
    assert set(names) == set(KINDS) | set(STATES) | set(capacity)
    for s in sections:
        assert s.count("\n- ") == 2, s.split("\n", 1)[0]
    # hand values: Llama 3.1 70B 80 x 2 x 8 x 128 x 2; DeepSeek V2 60 x 576 x 2
    assert "- Llama 3.1 70B (`llama-3.1-70b`, meta-llama/Llama-3.1-70B): 327,680 B" in text
    assert "- DeepSeek V2 (`deepseek-v2`, deepseek-ai/DeepSeek-V2): 69,120 B" in text
    assert f"{36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4):,} B" in text  # Qwen3-Next, fp32 state


def test_capacity_formulas_reproduce_notebook_06_by_hand():
    """Notebook 06's formulas on the sheet (issue 26): exercise 06.3 by hand. L40S: CUDA
    total 44.42 GiB; ceil(0.92 x it) - 8.03B x 2 B of bf16 weights - 4 GiB, over 8,192 tokens
    x 32 layers x 8 KV heads x 256 x 1 B (fp8) = 512 MiB a session: 43 sessions."""
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    usable = -(-(4442 * 2**30 // 100) * 92 // 100)
    budget = usable - 8_030_000_000 * 2 - 4 * 2**30
    assert budget // (32 * 8 * 256 * 8192) == 43
    assert f"leaves {budget:,} B" in text and "**43** sessions" in text
    # Blog post A's example: 4 x H200 at TP 4, 128K: 80 x 2 heads x 256 x 2 B per token per GPU
    assert f"{80 * 2 * 256 * 2:,} B = 80 KiB = 81.92 KB per token per GPU" in text


def test_large_values_print_in_a_unit_a_projector_reads():
    """870.33 MiB, not 891,216 KiB (Nemotron-H 56B's state: 912,605,184 B)."""
    text = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    assert f"{912_605_184:,} B = {912_605_184 / 2**20:.2f} MiB = {912_605_184 / 1e6:.2f} MB" in text
    assert not __import__("re").search(r"\d{1,3},\d{3}(\.\d+)? (KiB|KB)", text)
