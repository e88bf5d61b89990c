"""docs/workshop.md against the notebooks (issue 26, section 2): every section it sends the
room to exists under that number and title, every exercise it pauses for is checkable, and
the minutes add up to the 3 hours and the 90 minutes it promises."""

import re
from pathlib import Path

import nbformat
import pytest

from kvlib.views.exercises import ANSWERS

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "docs" / "workshop.md").read_text(encoding="utf-8")


def _sections() -> dict[tuple[str, int], str]:
    """(notebook number, section number) -> title, from the "## N. Title" headings."""
    found = {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                for m in re.finditer(r"^## (\d+)\. (.+)$", cell.source, re.M):
                    found[(path.name[:2], int(m.group(1)))] = m.group(2).strip()
    return found


SECTIONS = _sections()
REFERENCES = re.findall(r'\b(\d\d) §(\d+)(?: "([^"]+)")?', TEXT)


def test_the_page_refers_to_sections_one_way():
    assert not re.search(r"(?i)\bsections? \d", TEXT), "write 01 §4, which the test checks"
    assert len(REFERENCES) >= 30


@pytest.mark.parametrize("notebook, number, title", REFERENCES)
def test_every_section_reference_exists_with_its_title(notebook, number, title):
    key = (notebook, int(number))
    assert key in SECTIONS, f"notebook {notebook} has no section {number}"
    assert not title or title == SECTIONS[key], \
        f"{notebook} §{number} is {SECTIONS[key]!r}, the page says {title!r}"


def test_every_exercise_named_is_checkable():
    named = set(re.findall(r"exercise (\d\d\.\d)", TEXT))
    assert named and named <= set(ANSWERS), named - set(ANSWERS)


def _table(heading: str) -> list[list[str]]:
    block = TEXT.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in block.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row] for row in rows[2:]]  # drop the header and the rule


def test_the_workshop_fills_three_hours_with_setup_breaks_and_questions():
    rows = _table("## The 3-hour workshop")
    minutes = [int(r[2]) for r in rows]
    assert sum(minutes) == 180
    clock = 0
    for row, m in zip(rows, minutes, strict=True):  # each block starts when the last ends
        h, mm = map(int, row[0].split(":"))
        assert 60 * h + mm == clock, row[:2]
        clock += m
    blocks = [r[1] for r in rows]
    assert blocks[0] == "Setup check" and blocks[-1] == "Wrap-up and questions"
    assert "Break" in blocks and "Questions" in blocks
    taught = [b[:2] for b in blocks if b[:2].isdigit()]
    assert taught == ["01", "02", "03", "04", "05", "06", "07"]


def test_the_self_study_path_takes_90_minutes():
    assert sum(int(r[1]) for r in _table("## The 90-minute self-study path")) == 90


def test_the_binder_link_opens_a_notebook_that_exists():
    for path in re.findall(r"urlpath=lab/tree/(\S+?\.ipynb)", TEXT):
        assert (ROOT / path).is_file(), path
