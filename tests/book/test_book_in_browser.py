"""The book (`make book`, issue 15), built fresh and read in headless Chromium.

One build of every notebook (stored outputs, no execution; Sphinx warnings are errors), served
by a plain static server on 127.0.0.1. Every page must load with no request to another host,
no MathJax error, every image loaded and every same-origin link resolving; every chapter must
show its heading, its figures, its folded solutions, a note per live widget, copy buttons, a
per-page table of contents and the chapter navigation. What each chapter must show is counted
from its notebook here, not read back from the HTML. The book must also open from the file
system. test_book_catches_breakage.py shows that a broken page fails these checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from bookcheck import Expect, LinkChecker, book_notebooks, check_page, page_of

REPO = Path(__file__).parents[2]
SCREENSHOTS = Path(__file__).parent / "screenshots"

NOTEBOOKS = book_notebooks()  # the lessons, then the engines track (notebooks/engines/)
PAGES = (["index.html"] + [page_of(p) for p in NOTEBOOKS]
         + ["formula_sheet.html", "search.html", "genindex.html"])


def expected(path: Path, explorer: re.Pattern) -> Expect:
    """What the chapter page of ``path`` must show, counted from the notebook."""
    nb = nbformat.read(path, as_version=4)
    first = next(c.source for c in nb.cells if c.cell_type == "markdown")
    title = next(line[2:] for line in first.splitlines() if line.startswith("# "))
    code = [c for c in nb.cells if c.cell_type == "code"]
    return Expect(
        title=re.sub(r"[`*]", "", title).strip(),
        figures=sum("image/png" in o.get("data", {}) for c in code for o in c.outputs
                    if "solution" not in c.metadata.get("tags", [])),
        solutions=sum("solution" in c.metadata.get("tags", []) for c in code),
        widgets=sum(bool(explorer.search(c.source)) for c in code),
        chapters=[f"/{page_of(p)}" for p in NOTEBOOKS],
    )


@pytest.fixture(scope="module")
def book(full_book):
    return full_book


@pytest.fixture(scope="module")
def site(book, serve):
    return serve(book)


@pytest.fixture(scope="module")
def links():
    return LinkChecker()


@pytest.fixture(scope="module")
def explorer(build_book):
    return build_book.BUILDS_EXPLORER


def test_every_notebook_is_a_page(book):
    assert NOTEBOOKS, "no notebooks found"
    for page in PAGES:
        assert (book / page).is_file(), f"{page} missing from the build"


@pytest.mark.parametrize("page", PAGES)
def test_page_in_browser(page, site, context, links, explorer):
    expect = None
    if page.startswith("notebooks/"):
        expect = expected(REPO / Path(page).with_suffix(".ipynb"), explorer)
    shot = SCREENSHOTS / (page.replace("/", "_").removesuffix(".html") + ".png")
    problems = check_page(context, site + page, links, expect, screenshot=shot)
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


def test_opens_from_the_file_system(book, context, links):
    """file:// pages: formulas typeset, images loaded, links resolve, nothing fetched remotely."""
    for page in ("index.html", f"notebooks/{NOTEBOOKS[0].stem}.html"):
        problems = check_page(context, (book / page).as_uri(), links)
        assert not problems, f"{page} from the file system:\n  " + "\n  ".join(problems)


# Tags and CSS that fetch something by themselves (a plain <a href> is a link, not a request).
_FETCHING = re.compile(
    r"""<(?:script|img|iframe|source|video|audio|embed)\b[^>]*\bsrc=["']?(?:https?:)?//"""
    r"""|<link\b[^>]*\bhref=["']?(?:https?:)?//""", re.I)
_CSS_REMOTE = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])(?:https?:)?//""", re.I)


def test_build_references_no_other_host(book):
    """The whole build, read as text: no tag or stylesheet that would fetch from another host."""
    found = []
    for f in sorted(book.rglob("*")):
        if f.suffix == ".html":
            found += [f"{f.relative_to(book)}: {m.group(0)}"
                      for m in _FETCHING.finditer(f.read_text(errors="replace"))]
        elif f.suffix == ".css":
            found += [f"{f.relative_to(book)}: {m.group(0)}"
                      for m in _CSS_REMOTE.finditer(f.read_text(errors="replace"))]
    assert not found, "references to other hosts:\n  " + "\n  ".join(found)
    assert (book / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
