"""The book shows both tracks (issue 40): the lessons (notebooks/NN_*.ipynb) and the engines
track (notebooks/engines/*.ipynb) as a part of its own, with its own section on the landing
page. Checked on the staging step alone (no Sphinx, no browser): where each notebook goes,
what the landing page lists, and what the navigation holds."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def bb():
    """scripts/build_book.py as a module (staging needs no Sphinx)."""
    spec = importlib.util.spec_from_file_location("build_book", REPO / "scripts" / "build_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(path: Path, title: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nBy the end you will be able to.")]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_the_default_build_takes_both_tracks(bb):
    chapters = bb.default_notebooks()
    lessons = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    engines = sorted((REPO / "notebooks" / "engines").glob("*.ipynb"))
    assert chapters[:len(lessons)] == lessons and chapters[len(lessons):] == engines


def test_each_track_keeps_its_folder(bb, tmp_path):
    lesson = _notebook(tmp_path / "notebooks" / "01_a.ipynb", "A lesson")
    engine = _notebook(tmp_path / "notebooks" / "engines" / "01_b.ipynb", "E1. An engine")
    assert bb.book_path(lesson) == "notebooks/01_a.ipynb"
    assert bb.book_path(engine) == "notebooks/engines/01_b.ipynb"  # not over lesson 01


def test_the_landing_page_lists_the_engines_track_in_a_part_of_its_own(bb, tmp_path):
    index = (REPO / "book" / "index.md").read_text(encoding="utf-8")
    assert bb.ENGINES_MARKER in index and bb.ENGINES_TOC_MARKER in index
    heading = index.index("## The engines track")
    assert heading < index.index(bb.ENGINES_MARKER)
    lessons_toc = index.index(":caption: Lessons")
    assert lessons_toc < index.index(bb.ENGINES_TOC_MARKER) < index.index(":caption: Reference")

    lesson = _notebook(tmp_path / "notebooks" / "01_a.ipynb", "A lesson")
    engines = [_notebook(tmp_path / "notebooks" / "engines" / f"0{i}_e.ipynb", f"E{i}. Engine {i}")
               for i in (1, 2)]
    links, toc = bb.engines_section([lesson, *engines])
    assert links.splitlines() == ["- [E1. Engine 1](notebooks/engines/01_e.ipynb)",
                                  "- [E2. Engine 2](notebooks/engines/02_e.ipynb)"]
    assert ":caption: Engines track" in toc and ":hidden:" in toc
    entries = re.findall(r"^notebooks/\S+$", toc, re.M)
    assert entries == ["notebooks/engines/01_e", "notebooks/engines/02_e"]  # no lesson
    links, toc = bb.engines_section([lesson])
    assert toc == "" and "no chapters" in links


def test_a_live_widget_note_names_the_notebook_where_it_is(bb, tmp_path):
    engine = tmp_path / "notebooks" / "engines" / "01_b.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# E1. An engine"),
                nbformat.v4.new_code_cell("some_explorer()")]
    engine.parent.mkdir(parents=True)
    nbformat.write(nb, engine)
    note = bb.book_notebook(engine).cells[-1].source
    assert "`notebooks/engines/01_b.ipynb`" in note


def test_links_to_files_the_book_does_not_hold_are_rewritten(bb):
    """A strict build resolves every link: a notebook's link to docs/ (not in the book) becomes
    the page's path as text; the engines folder leads to the landing page's section; notebook,
    figure, URL and anchor links stay as they are."""
    lesson, engine = "notebooks/06_capacity_planning.ipynb", "notebooks/engines/01_x.ipynb"
    assert bb.book_links("see [the engines track](engines/).", lesson) == \
        "see [the engines track](../index.md#the-engines-track)."
    assert bb.book_links("[docs/vllm.md](../../docs/vllm.md)", engine) == "`docs/vllm.md`"
    assert bb.book_links("the [cross-check](../../docs/crosscheck.md#x) page", engine) == \
        "the cross-check (`docs/crosscheck.md`) page"
    assert bb.book_links("[sheet](../docs/formula_sheet.md#gqa)", lesson) == \
        "[sheet](../formula_sheet.md#gqa)"
    assert bb.book_links("[README](../README.md)", lesson) == "[README](../index.md)"
    kept = ("[07](07_hybrid_models.ipynb) [E1](engines/01_x.ipynb) ![fig](../figures/a.png) "
            "[vLLM](https://github.com/vllm-project/vllm) [s](#sources)")
    assert bb.book_links(kept, lesson) == kept
    kept = "[06](../06_capacity_planning.ipynb) [E2](02_y.ipynb) ![fig](../../figures/a.png)"
    assert bb.book_links(kept, engine) == kept


def test_the_readme_links_as_the_landing_page_shows_them(bb):
    """README.md's sections are included in the landing page: its link to the engines folder
    leads to the engines-track section, a notebook's link stays."""
    text = "[the engines track](notebooks/engines/) and [01](notebooks/01_a.ipynb)"
    assert bb.book_links(text, "README.md") == \
        "[the engines track](index.md#the-engines-track) and [01](notebooks/01_a.ipynb)"
