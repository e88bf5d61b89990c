"""The book on a phone (issues 36, 40): every page at 390 x 844 px, in headless Chromium.

No page scrolls sideways: what is wider than the screen (an explorer's table) scrolls inside its
own box, with a visible cue (a shadow on the side where more columns are); each explorer lays
out its controls in one column; every explorer chart scales to its box (a viewBox, width 100%:
rendered no wider than the screen) and draws its text at 11 px or more; an explorer's controls
and its chart fit on the screen together (scrolled to the controls, under the page's sticky
header). Uses the same fresh build as test_book_in_browser.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bookcheck import book_notebooks, page_of

REPO = Path(__file__).parents[2]
NOTEBOOKS = book_notebooks()  # the lessons, then the engines track (notebooks/engines/)
PAGES = (["index.html"] + [page_of(p) for p in NOTEBOOKS]
         + ["formula_sheet.html", "search.html", "genindex.html"])
PHONE = {"width": 390, "height": 844}
MIN_TEXT_PX = 11

# What the page shows at phone width: the sideways overflow of the page, elements sticking out
# of the screen that no scrolling box of their own holds, each explorer's control columns and
# the smallest chart text in CSS pixels.
MEASURE = """() => {
  const W = document.documentElement.clientWidth;
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const visible = (el) => {
    for (let p = el; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (s.display === "none" || s.visibility === "hidden") return false;
    }
    return true;
  };
  const loose = [];  // (MathJax's copy for screen readers is clipped to 1 px: not shown)
  for (const el of document.querySelectorAll(".bd-article *")) {
    const r = el.getBoundingClientRect();
    if (!r.width || r.right <= W + 1 || el.closest("mjx-assistive-mml") || !visible(el)) continue;
    let held = false;
    for (let p = el.parentElement; p; p = p.parentElement)
      if (scrolls(p) && p.getBoundingClientRect().right <= W + 1) { held = true; break; }
    const name = `${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className)}`;
    if (!held) loose.push(`${name} +${Math.round(r.right - W)} px`);
  }
  const explorers = [...document.querySelectorAll(".kvlib-explorer")].map((ex) => {
    const lefts = new Set([...ex.querySelectorAll(".kvlib-control")]
      .map((c) => Math.round(c.getBoundingClientRect().left)));
    const svgs = [...ex.querySelectorAll(".kvlib-chart svg")];
    const svgWidths = svgs.map((s) => Math.round(s.getBoundingClientRect().width));
    const scaled = svgs.every((s) => s.viewBox.baseVal.width > 0
      && s.getAttribute("width") === "100%");
    // a table wider than its box must show a cue: the gradient shadows of book.css
    const cut = [...ex.querySelectorAll("table")].filter((tb) => tb.scrollWidth > tb.clientWidth + 1
      && !getComputedStyle(tb).backgroundImage.includes("gradient")).length;
    let smallest = Infinity, text = "";
    for (const t of ex.querySelectorAll("svg text")) {
      const svg = t.ownerSVGElement;
      if (!t.getBoundingClientRect().height || !svg.viewBox.baseVal.width) continue;
      const px = parseFloat(getComputedStyle(t).fontSize)
        * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      if (px < smallest) { smallest = px; text = t.textContent; }
    }
    return {columns: lefts.size, smallest, text, charts: ex.querySelectorAll("svg").length,
            svgWidths, scaled, cut};
  });
  return {overflow: document.documentElement.scrollWidth - W, loose: loose.slice(0, 5),
          explorers, width: W};
}"""

# Scrolled so that explorer i's controls start just under the page's sticky header: how far
# its chart's bottom is from the screen's (<= 0: the controls and the whole chart on screen).
TOGETHER = """(i) => {
  const ex = document.querySelectorAll(".kvlib-explorer")[i];
  const controls = ex.querySelector(".kvlib-controls"), chart = ex.querySelector(".kvlib-chart");
  const header = () => Math.max(0, ...[...document.querySelectorAll("body *")].filter((el) => {
    const s = getComputedStyle(el), r = el.getBoundingClientRect();
    return ["fixed", "sticky"].includes(s.position) && r.top <= 1 && r.height > 0
      && r.height < window.innerHeight / 3 && r.width > window.innerWidth / 2;
  }).map((el) => el.getBoundingClientRect().bottom));
  window.scrollTo(0, window.scrollY + controls.getBoundingClientRect().top - 4);
  const top = header();
  window.scrollBy(0, -top);
  const c = controls.getBoundingClientRect(), k = chart.getBoundingClientRect();
  return {header: Math.round(top), controlsTop: Math.round(c.top),
          span: Math.round(k.bottom - c.top), beyond: Math.round(k.bottom - window.innerHeight)};
}"""


@pytest.fixture(scope="module")
def site(full_book, serve):
    return serve(full_book)


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True,
                              has_touch=True, service_workers="block")
    try:
        yield ctx.new_page()
    finally:
        ctx.close()


@pytest.mark.parametrize("page", PAGES)
def test_page_fits_a_phone(page, site, phone):
    phone.goto(site + page, wait_until="load")
    # the explorers draw once their script has run: wait for every one to show its readout
    phone.wait_for_function("""() => [...document.querySelectorAll('.kvlib-explorer')]
        .every((ex) => ex.querySelector('.kvlib-readout')?.innerHTML)""", timeout=20_000)
    m = phone.evaluate(MEASURE)
    assert m["overflow"] <= 0, f"{page} scrolls sideways by {m['overflow']} px: {m['loose']}"
    assert not m["loose"], f"{page}: wider than the screen outside a scrolling box: {m['loose']}"
    for i, ex in enumerate(m["explorers"]):
        assert ex["columns"] == 1, f"{page}: explorer {i + 1} lays out {ex['columns']} columns"
        assert ex["cut"] == 0, f"{page}: explorer {i + 1} cuts a table with no cue to scroll it"
        if ex["charts"]:
            assert ex["smallest"] >= MIN_TEXT_PX, (
                f"{page}: explorer {i + 1}'s chart text {ex['text']!r} is "
                f"{ex['smallest']:.1f} px, under {MIN_TEXT_PX} px")
            assert ex["scaled"], f"{page}: explorer {i + 1}'s chart is not viewBox + width 100%"
            assert max(ex["svgWidths"]) <= m["width"], (
                f"{page}: explorer {i + 1}'s chart is {ex['svgWidths']} px wide on a "
                f"{m['width']} px screen")
    for i in range(len(m["explorers"])):
        seen = phone.evaluate(TOGETHER, i)
        assert seen["beyond"] <= 0, (
            f"{page}: explorer {i + 1}'s controls and chart are {seen['span']} px tall together, "
            f"{seen['beyond']} px more than the screen shows under its {seen['header']} px header")


def test_the_phone_test_sees_explorers(site, phone):
    """The measure is not vacuous: notebook 06's page has explorers with charts."""
    phone.goto(site + "notebooks/" + next(p.stem for p in NOTEBOOKS if p.stem.startswith("06"))
               + ".html", wait_until="load")
    phone.wait_for_function("() => document.querySelector('.kvlib-explorer svg text')",
                            timeout=20_000)
    m = phone.evaluate(MEASURE)
    assert m["explorers"] and any(ex["charts"] for ex in m["explorers"])


def test_the_phone_test_catches_a_fixed_width_chart(site, phone):
    """Positive control: notebook 08's explorer as it was (issue 40), a 700-px chart under its
    readout and a table cut with no cue, fails each of the checks above."""
    phone.goto(site + "notebooks/" + next(p.stem for p in NOTEBOOKS if p.stem.startswith("08"))
               + ".html", wait_until="load")
    phone.wait_for_function("() => document.querySelector('.kvlib-explorer svg text')",
                            timeout=20_000)
    phone.add_style_tag(content="""
      .kvlib-chart svg.kvlib-svg { min-width: 700px !important; }
      .kvlib-explorer .kvlib-readout { order: 5 !important; }
      .kvlib-table { background: none !important; }
      .kvlib-table td, .kvlib-table th { padding: 3px 24px !important; white-space: nowrap; }""")
    m = phone.evaluate(MEASURE)
    (ex,) = m["explorers"]
    assert max(ex["svgWidths"]) > m["width"] and ex["cut"] == 1
    assert phone.evaluate(TOGETHER, 0)["beyond"] > 0
