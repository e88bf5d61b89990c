"""The book's size as docs/publishing.md states it, measured on a fresh build.

The page tells instructors what they hand out (a folder, a zip, a USB stick), so its figures
are held to the build: each within 10% of what the page says (the build varies a little with
the notebooks' outputs). Sizes in decimal units: 1 MB = 10^6 B, 1 KB = 1,000 B.
"""

import io
import re
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "publishing.md").read_text(encoding="utf-8")


def _said(pattern: str) -> float:
    m = re.search(pattern, PAGE)
    assert m, f"docs/publishing.md no longer says {pattern!r}"
    return float(m.group(1))


def _near(measured: float, said: float, what: str) -> None:
    assert abs(measured - said) <= 0.1 * said, \
        f"{what}: the page says {said}, measured {measured:.1f}"


def test_book_size_as_the_page_says(full_book):
    files = [p for p in full_book.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    _near(total / 1e6, _said(r"about (\d+) MB, \d+ files"), "site size (MB)")
    _near(len(files), _said(r"about \d+ MB, (\d+) files"), "files")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            z.write(p, p.relative_to(full_book))
    _near(len(buffer.getvalue()) / 1e6, _said(r"([\d.]+) MB as a zip"), "zip size (MB)")
    mathjax = sum(p.stat().st_size for p in (full_book / "_static" / "mathjax").rglob("*")
                  if p.is_file())
    _near(mathjax / 1e6, _said(r"MathJax is (\d+) MB"), "MathJax (MB)")
    static = full_book / "_static"
    formulas = (static / "kvlib_formulas.js").stat().st_size
    explorers = (static / "kvlib_explorers.js").stat().st_size
    _near((formulas + explorers) / 1e3, _said(r"explorers add (\d+) KB"), "explorers (KB)")
    _near(formulas / 1e3, _said(r"\((\d+) KB of generated formulas"), "formulas (KB)")
    _near(explorers / 1e3, _said(r"(\d+) KB of explorer code"), "explorer code (KB)")
