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
    assert set(names) == set(KINDS) | set(STATES)
    for s in sections:
        assert s.count("\n- ") == 2, s.split("\n", 1)[0]
    # hand values: Llama 3.1 70B 80 x 2 x 8 x 128 x 2; DeepSeek V2 60 x 576 x 2
    assert "- Llama 3.1 70B (`llama-3.1-70b`, meta-llama/Llama-3.1-70B): 327,680 B" in text
    assert "- DeepSeek V2 (`deepseek-v2`, deepseek-ai/DeepSeek-V2): 69,120 B" in text
    assert f"{36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4):,} B" in text  # Qwen3-Next, fp32 state
