"""Positive control of the book test: a fixture book with a broken page must fail its checks.

``fixtures/pages/broken.md`` holds one of each fault (a formula missing a brace, one with an
extra brace, an unknown macro, a missing image, an image from another host, a dead link, a
dead fragment, a solution in plain sight); ``fixtures/tiny.ipynb`` is a good chapter (a
formula, a stored figure, a live-widget cell, a folded solution) and must pass. The fixture
book is built with the real configuration (book/conf.py) by the same script as `make book`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bookcheck import Expect, LinkChecker, check_page

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def fixture_site(build_book, tmp_path_factory, serve):
    out = tmp_path_factory.mktemp("fixture-book") / "book"
    # Not strict: Sphinx itself warns about the missing image; the browser must catch it too.
    build_book.build(out, [FIXTURES / "tiny.ipynb"], pages=FIXTURES / "pages")
    return serve(out)


def test_broken_page_fails_every_check(fixture_site, context):
    problems = check_page(context, fixture_site + "broken.html", LinkChecker())
    text = "\n".join(problems)

    def reported(*words: str) -> bool:
        return any(all(w in p for w in words) for p in problems)

    # The formula missing a brace swallows its closing delimiter, so MathJax never sees it as
    # math: it is reported as left untypeset, with its source.
    assert problems.count("formula not typeset: \\(\\frac{1}{\\)") == 1, text
    assert reported("MathJax error", "Extra close brace", "\\frac{1}{2}}"), text
    assert reported("MathJax error", "Undefined control sequence", "\\kvcachebytes{x}"), text
    assert reported("image did not load", "missing.png"), text
    assert reported("HTTP 404", "missing.png"), text
    assert reported("request to another origin", "cdn.example.invalid"), text
    assert reported("image did not load", "cdn.example.invalid"), text
    assert reported("link 'nowhere.html'", "404"), text
    assert reported("no element with id 'no-such-section'"), text
    # The good formula on the same page is not reported.
    assert sum("MathJax error" in p or "formula not typeset" in p for p in problems) == 3, text


def test_unfolded_solution_is_reported(fixture_site, context):
    from bookcheck import check_solutions

    page = context.new_page()
    try:
        page.goto(fixture_site + "broken.html")
        assert check_solutions(page, 1) == ["solution 1 is visible before it is clicked"]
    finally:
        page.close()


def test_good_chapter_passes(fixture_site, context):
    expect = Expect(title="Tiny chapter", figures=1, solutions=1, widgets=1,
                    chapters=["/notebooks/tiny.html"])
    problems = check_page(context, fixture_site + "notebooks/tiny.html", LinkChecker(), expect)
    assert problems == []
