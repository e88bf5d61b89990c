"""A lesson is one sitting (issue 40, item 1): each of notebooks 01-08 holds at most 2,500 words
of prose and 1,500 printed words, counted as tests/lesson_size.py counts them, and its Markdown
cites no engine source line (`kv_cache_utils.py:123`, `gpu_worker.py#L123`): those belong to the
engines track (notebooks/engines/), where source lines are allowed, each with its release."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from lesson_size import MAX_PRINTED_WORDS, MAX_PROSE_WORDS, output_text, size

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("0[1-8]_*.ipynb"))

# A source file with a line: name.py:123, name.py:977-980, name.cu:12, file.py#L123, #L12-L20.
SOURCE_LINE = re.compile(
    r"\b[\w./-]+\.(?:py|pyi|cu|cuh|cpp|cc|c|h|hpp|rs|go|java)(?::\d+|#L\d+)")


def over_limits(path: Path) -> str | None:
    """None for a lesson within both limits, else a line naming it and both counts."""
    prose, printed = size(path)
    if prose <= MAX_PROSE_WORDS and printed <= MAX_PRINTED_WORDS:
        return None
    return (f"{path.name}: prose {prose:,} words (at most {MAX_PROSE_WORDS:,}), "
            f"printed {printed:,} words (at most {MAX_PRINTED_WORDS:,})")


def source_lines(path: Path) -> list[str]:
    """Every engine source-line citation the notebook shows a reader, with its cell's index:
    in its Markdown, and in the text its cells print (a kvlib note printed in a lesson is
    read as prose is)."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for i, c in enumerate(nb.cells):
        texts = [c.source] if c.cell_type == "markdown" else \
            [output_text(o) for o in c.get("outputs", [])]
        found += [f"cell {i}: {m.group(0)}" for t in texts for m in SOURCE_LINE.finditer(t)]
    return found


def test_the_eight_lessons_are_here():
    assert len(LESSONS) == 8, [p.name for p in LESSONS]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_lesson_is_one_sitting(path):
    problem = over_limits(path)
    assert problem is None, problem


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_lesson_cites_no_engine_source_line(path):
    found = source_lines(path)
    assert not found, (f"{path.name} cites engine source lines (move them to the engines "
                       f"track, notebooks/engines/): {found}")


# ---- positive controls: the checks catch what they are for --------------------------------


def _write(path: Path, markdown: list[str], printed: str = "") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(m) for m in markdown]
    if printed:
        cell = nbformat.v4.new_code_cell("print(table)", execution_count=1)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def test_a_synthetic_lesson_over_the_limits_is_flagged(tmp_path):
    # 2,501 words of prose (one heading word + 2,500), 1,501 printed: one over each limit
    long = _write(tmp_path / "09_long.ipynb", ["Intro", "word " * 2500], "cell " * 1501)
    problem = over_limits(long)
    assert problem == ("09_long.ipynb: prose 2,501 words (at most 2,500), "
                       "printed 1,501 words (at most 1,500)")
    # exactly at both limits: within
    fits = _write(tmp_path / "09_fits.ipynb", ["word " * 2500], "cell " * 1500)
    assert over_limits(fits) is None
    # over in printed words alone is flagged too
    wordy = _write(tmp_path / "09_wordy.ipynb", ["Short."], "cell " * 1501)
    assert "printed 1,501 words" in over_limits(wordy)


def test_a_synthetic_source_line_citation_is_flagged(tmp_path):
    cited = _write(tmp_path / "09_cited.ipynb", [
        "vLLM 0.34.0 sets it in `vllm/v1/core/kv_cache_utils.py:812`.",
        "See attention.py:977-980 and [the worker](https://github.com/x/y/blob/v1/"
        "vllm/v1/worker/gpu_worker.py#L230).",
        "No line here: `kv_cache_utils.py`, a ratio 3:1, version 0.34.0, 1.5:2.",
    ])
    found = source_lines(cited)
    assert found == ["cell 0: vllm/v1/core/kv_cache_utils.py:812", "cell 1: attention.py:977",
                     "cell 1: github.com/x/y/blob/v1/vllm/v1/worker/gpu_worker.py#L230"]


def test_the_engines_track_is_not_held_to_the_lessons_rules():
    """Source lines are allowed in notebooks/engines/ (issue 40): the checks above read only
    notebooks 01-08."""
    assert all(p.parent == ROOT / "notebooks" for p in LESSONS)
    assert not any(p.parent.name == "engines" for p in LESSONS)


def test_a_source_line_a_cell_prints_is_flagged_too(tmp_path):
    # a kvlib note printed in a lesson (notebook 08's V4 note named one until issue 40)
    printed = _write(tmp_path / "09_printed.ipynb", ["No line in the prose."],
                     "a bf16 cache is refused (models/deepseek_v4/attention.py:95-124)")
    assert source_lines(printed) == ["cell 1: models/deepseek_v4/attention.py:95"]
