"""How long a lesson is, counted one way for the lesson test, the workshop's timing and anyone
trimming a notebook (issue 40): prose is the words of its Markdown cells; printed is the words
its code cells show as text when run (streams, and text/plain, text/markdown or text/html
outputs that are not a figure or a widget). Words are runs of non-space characters, so a
table's cells and its rule count as they are read.

    python tests/lesson_size.py notebooks/*.ipynb notebooks/engines/*.ipynb
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

# A lesson of notebooks 01-08 is one sitting (issue 40; ../shared/STYLE.md, "Notebooks").
MAX_PROSE_WORDS = 2500
MAX_PRINTED_WORDS = 1500

_TAG = re.compile(r"<[^>]+>")


def prose_words(nb) -> int:
    """Words of every Markdown cell (headings, tables and LaTeX included)."""
    return sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")


def output_text(out) -> str:
    if out.output_type == "stream":
        return out.text
    data = out.get("data", {})
    if any(k.startswith("image/") or k.endswith("widget-view+json") for k in data):
        return ""  # a figure or a widget: seen, not read
    if "text/markdown" in data:
        return data["text/markdown"]
    if "text/html" in data:
        return _TAG.sub(" ", data["text/html"])
    return data.get("text/plain", "")


def printed_words(nb) -> int:
    """Words the code cells' stored outputs show as text (figures and widgets aside)."""
    return sum(len(output_text(o).split())
               for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def size(path: Path) -> tuple[int, int]:
    nb = nbformat.read(path, as_version=4)
    return prose_words(nb), printed_words(nb)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        prose, printed = size(Path(arg))
        flag = "" if prose <= MAX_PROSE_WORDS and printed <= MAX_PRINTED_WORDS else "  OVER"
        print(f"{arg}: prose {prose:,}, printed {printed:,}{flag}")
