"""Stored notebooks: clean, reproducible, and shaped like a lesson (opening goals, exercises)."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_all_six_notebooks_exist_in_order():
    assert [p.name for p in NOTEBOOKS] == [
        "01_attention_and_kv_cache.ipynb", "02_gqa_and_mqa.ipynb",
        "03_latent_attention_mla.ipynb", "04_rope_decoupling.ipynb",
        "05_real_models.ipynb", "06_capacity_planning.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_clean(path):
    nb = _load(path)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"], "stored widget state changes on every run"
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        assert "execution" not in cell["metadata"], "timing metadata differs run to run"
        outputs = cell["outputs"]
        if outputs:
            assert cell["execution_count"] is not None, "outputs without a count fail nbval"
        for out in outputs:
            assert out["output_type"] != "error", f"stored error in {cell['id']}"
            data = out.get("data", {})
            assert WIDGET_VIEW not in data
            assert "image/svg+xml" not in data, "SVG carries random ids: use PNG"
            text = "".join(out.get("text", "")) + "".join(
                "".join(v) for k, v in data.items() if k.startswith("text/"))
            assert not re.search(r"/(work|root|tmp|home)/", text), "absolute path in an output"
            assert "Traceback" not in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_ran_once_in_order(path):
    counts = [c["execution_count"] for c in _load(path)["cells"]
              if c["cell_type"] == "code" and c["execution_count"] is not None]
    assert counts == list(range(1, len(counts) + 1)), "not a clean restart-and-run-all"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_lesson_shape(path):
    cells = _load(path)["cells"]
    opening = "".join(cells[0]["source"])
    assert cells[0]["cell_type"] == "markdown" and "you will be able to" in opening
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    assert any("## Takeaways" in text for text in markdown)
    solutions = [c for c in cells if "solution" in c["metadata"].get("tags", [])]
    assert len(solutions) >= 2, "2-3 exercises with revealable solutions"
    for c in solutions:
        assert c["metadata"]["jupyter"]["source_hidden"] is True
        assert "assert" in "".join(c["source"]), "a solution is checked, not only shown"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ignored_cells_say_why(path):
    for c in _load(path)["cells"]:
        tags = c["metadata"].get("tags", [])
        if "nbval-ignore-output" in tags or "nbval-skip" in tags:
            first = "".join(c["source"]).lstrip().splitlines()[0]
            assert first.startswith("#") and len(first) > 20, f"{c['id']}: say why it is ignored"
