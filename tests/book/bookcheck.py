"""Check a built book in headless Chromium (issue 15); the tests in this folder call it.

:class:`StaticServer` serves a folder on 127.0.0.1 (a free port, a thread of this process).
:func:`check_page` opens one page in a fresh tab and returns the problems it saw, one line
each (an empty list: the page is fine):

- the page itself does not load (HTTP status other than 200), or a script throws;
- a request leaves the page's own origin (every request is recorded; one to another host is
  aborted before it leaves the machine and reported), or a same-origin one fails (4xx/5xx);
- MathJax reports an error (``mjx-merror`` / ``data-mjx-error``), or a formula is left
  untypeset (a Sphinx ``.math`` element without an ``mjx-container``);
- an ``<img>`` does not load (``naturalWidth == 0`` once loading has ended);
- a same-origin link leads to a missing page (HTTP status) or to a missing ``#fragment``;
- on a chapter (:class:`Expect`): the heading, the number of figures, folded solutions
  (hidden until their button is clicked, shown after), the live-widget notes, the copy
  buttons, the per-page table of contents and the chapter navigation.
"""

from __future__ import annotations

import functools
import html
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

VIEWPORT = {"width": 1400, "height": 1000}
REPO = Path(__file__).resolve().parents[2]


def book_notebooks() -> list[Path]:
    """Every chapter of the book, as scripts/build_book.py builds it: the lessons
    (notebooks/*.ipynb), then the engines track (notebooks/engines/*.ipynb; issue 40)."""
    notebooks = REPO / "notebooks"
    return sorted(notebooks.glob("*.ipynb")) + sorted((notebooks / "engines").glob("*.ipynb"))


def page_of(notebook: Path) -> str:
    """A notebook's page in the book: notebooks/NAME.html or notebooks/engines/NAME.html."""
    return notebook.relative_to(REPO).with_suffix(".html").as_posix()
LOCAL_SCHEMES = ("data", "blob", "about", "chrome-error")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest's output clean
        pass


class StaticServer:
    """A plain static file server for ``root`` on 127.0.0.1, as any static host would be."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@dataclass
class Expect:
    """What one chapter page must show (worked out from its notebook, not from the HTML)."""

    title: str
    figures: int = 0
    solutions: int = 0
    widgets: int = 0
    chapters: list[str] = field(default_factory=list)  # every chapter's URL path, for the nav


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class LinkChecker:
    """Same-origin links: fetched once each (status 200 needed); fragments must be ids there."""

    def __init__(self):
        self.pages: dict[str, tuple[int, set[str]]] = {}

    def _fetch(self, url: str) -> tuple[int, set[str]]:
        if url not in self.pages:
            try:
                if url.startswith("file:"):
                    body = Path(unquote(urlsplit(url).path)).read_bytes()
                    status = 200
                else:
                    with urllib.request.urlopen(url, timeout=10) as r:
                        status, body = r.status, r.read()
            except urllib.error.HTTPError as err:
                status, body = err.code, b""
            except OSError:
                status, body = 404, b""
            text = body.decode("utf-8", errors="replace")
            ids = {html.unescape(m) for m in re.findall(r'\bid="([^"]+)"', text)}
            self.pages[url] = (status, ids)
        return self.pages[url]

    def check(self, page_url: str, hrefs: list[str]) -> list[str]:
        problems = []
        for href in sorted(set(hrefs)):
            url = urljoin(page_url, href)
            if origin(url) != origin(page_url) or urlsplit(url).scheme in LOCAL_SCHEMES:
                continue  # a link to another site is not a request; the reader may follow it
            target, frag = urldefrag(url)
            status, ids = self._fetch(target)
            if status != 200:
                problems.append(f"link {href!r} -> HTTP {status}")
            elif frag and unquote(frag) not in ids:
                problems.append(f"link {href!r}: no element with id {unquote(frag)!r}")
        return problems


_WAIT_MATHJAX = """async () => {
  if (!document.querySelector('.math')) return 'no math';
  const t0 = Date.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - t0 > 15000) return 'MathJax never started';
    await new Promise(r => setTimeout(r, 50));
  }
  await MathJax.startup.promise;
  return 'ok';
}"""

_MATH_PROBLEMS = """() => {
  const out = [];
  const reported = new Set();  // one line per formula (MathJax also marks its hidden MathML)
  const items = window.MathJax && MathJax.startup && MathJax.startup.document
    ? Array.from(MathJax.startup.document.math) : [];
  for (const item of items) {  // errors with the TeX source they come from
    const root = item.typesetRoot;
    const err = root && root.querySelector('mjx-merror, [data-mjx-error]');
    if (err) {
      reported.add(root);
      out.push('MathJax error: ' + (err.getAttribute('data-mjx-error') || err.textContent)
               + ' in ' + JSON.stringify(item.math));
    }
  }
  for (const e of document.querySelectorAll('mjx-merror, [data-mjx-error]')) {
    const root = e.closest('mjx-container') || e;
    if (reported.has(root)) continue;
    reported.add(root);
    out.push('MathJax error: ' + (e.getAttribute('data-mjx-error') || e.textContent));
  }
  for (const m of document.querySelectorAll('.math')) {  // MathJax found no formula here
    if (!m.querySelector('mjx-container'))
      out.push('formula not typeset: ' + m.textContent.trim().slice(0, 80));
  }
  return out;
}"""

_IMAGES = """async () => {
  const imgs = [...document.images];
  for (const i of imgs) i.loading = 'eager';  // lazy images far down the page load too
  const done = i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r); i.addEventListener('error', r); });
  await Promise.race([Promise.all(imgs.map(done)), new Promise(r => setTimeout(r, 15000))]);
  return imgs.map(i => ({src: i.getAttribute('src'), w: i.naturalWidth, complete: i.complete,
                         output: !!i.closest('.cell_output')}));
}"""


def check_page(context, url: str, links: LinkChecker, expect: Expect | None = None,
               screenshot: Path | None = None) -> list[str]:
    """Open ``url`` in a new tab of ``context``; return the problems seen (see module doc)."""
    problems: list[str] = []
    own = origin(url)

    def route(r):
        req_url = r.request.url
        scheme = urlsplit(req_url).scheme
        if scheme in LOCAL_SCHEMES or origin(req_url) == own:
            r.continue_()
        else:  # never let it leave the machine
            problems.append(f"request to another origin: {req_url}")
            r.abort("blockedbyclient")

    def on_response(resp):
        if resp.status >= 400:
            problems.append(f"HTTP {resp.status} for {resp.url}")

    def on_failed(req):
        if origin(req.url) == own and req.failure != "net::ERR_BLOCKED_BY_CLIENT":
            problems.append(f"request failed ({req.failure}): {req.url}")

    page = context.new_page()
    page.set_viewport_size(VIEWPORT)
    page.route("**/*", route)
    page.on("response", on_response)
    page.on("requestfailed", on_failed)
    page.on("pageerror", lambda err: problems.append(f"script error: {err}"))
    try:
        resp = page.goto(url, wait_until="load", timeout=30000)
        if url.startswith("http") and (resp is None or resp.status != 200):
            problems.append(f"page did not load: {url} ({resp and resp.status})")
            return problems
        state = page.evaluate(_WAIT_MATHJAX)
        if state not in ("ok", "no math"):
            problems.append(state)
        problems += page.evaluate(_MATH_PROBLEMS)
        images = page.evaluate(_IMAGES)
        for img in images:
            if not img["complete"] or img["w"] == 0:
                problems.append(f"image did not load: {img['src']}")
        hrefs = page.eval_on_selector_all("a[href]", "as => as.map(a => a.getAttribute('href'))")
        problems += links.check(page.url, hrefs)
        if expect is not None:
            problems += _check_chapter(page, expect, images)
        # The fonts the clicks asked for, loaded (their responses checked above) before the
        # page closes. Not "networkidle" (500 ms with no request in flight): on notebook 04's
        # page, the heaviest in MathJax, it did not come within 30 s, twice in four runs,
        # while the other pytest worker drove JupyterLab.
        page.evaluate("() => document.fonts.ready.then(() => true)")
    finally:
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot))
        page.close()
    return problems


def _check_chapter(page, expect: Expect, images: list[dict]) -> list[str]:
    problems = []
    h1 = page.locator("h1").first.inner_text().rstrip("#").strip()
    # Sphinx's smart quotes typeset "vLLM's" as "vLLM’s": compare the words, not the quotes
    plain = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
    if " ".join(h1.translate(plain).split()) != " ".join(expect.title.translate(plain).split()):
        problems.append(f"heading {h1!r}, expected {expect.title!r}")
    shown = sum(1 for i in images if i["output"] and i["w"] > 0)
    if shown < expect.figures:
        problems.append(f"{shown} figures shown, the notebook stores {expect.figures}")
    # Navigation: every chapter in the sidebar, a previous/next link, a per-page contents list.
    nav = set(page.eval_on_selector_all(
        "nav.bd-docs-nav a[href]", "as => as.map(a => new URL(a.href).pathname)"))
    missing = [c for c in expect.chapters if c not in nav]
    if missing:
        problems.append(f"chapters missing from the navigation: {missing}")
    if page.locator(".prev-next-area a").count() == 0:
        problems.append("no previous/next chapter link")
    if page.locator("#pst-page-toc-nav a").count() == 0:
        problems.append("no table of contents for the page")
    code_blocks = page.locator("div.highlight pre").count()
    buttons = page.locator("button.copybtn").count()
    if code_blocks == 0 or buttons < code_blocks:
        problems.append(f"{buttons} copy buttons for {code_blocks} code blocks")
    notes = page.locator(".kvlib-live-widget").count()
    if notes != expect.widgets:
        problems.append(f"{notes} live-widget notes, the notebook has {expect.widgets} widgets")
    problems += check_solutions(page, expect.solutions)
    return problems


def check_solutions(page, expected: int) -> list[str]:
    """Each solution cell is folded: its code and output hidden until its button is clicked."""
    problems = []
    cells = page.locator(".cell.tag_solution")
    if cells.count() != expected:
        problems.append(f"{cells.count()} solution cells on the page, the notebook has {expected}")
    for i in range(cells.count()):
        cell = cells.nth(i)
        parts = cell.locator(".cell_input, .cell_output")
        if parts.count() == 0:
            problems.append(f"solution {i + 1}: no code in the cell")
            continue
        if any(parts.nth(k).is_visible() for k in range(parts.count())):
            problems.append(f"solution {i + 1} is visible before it is clicked")
            continue
        toggle = cell.locator("summary")
        if toggle.count() == 0:
            problems.append(f"solution {i + 1}: no button to reveal it")
            continue
        toggle.first.click()
        try:
            parts.first.wait_for(state="visible", timeout=3000)
        except Exception:  # playwright's TimeoutError
            problems.append(f"solution {i + 1} stays hidden after a click")
    return problems
