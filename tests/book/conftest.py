"""Fixtures of the book test: a fresh build, a static server on 127.0.0.1, headless Chromium.

Skips (with the reason) when Debian's chromium (``/usr/bin/chromium``, or
``KVLIB_CHROMIUM``), the playwright package or the book toolchain (the ``book`` extra:
``pip install -e '.[book]'``, and npm or a cached MathJax tarball) is missing; set
``KVLIB_REQUIRE_BROWSER=1`` (CI) to make that a failure instead. Every build goes to a
temporary directory, so the test never touches ``build/book`` and parallel workers cannot
collide (they share only the MathJax tarball cache, written atomically).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from bookcheck import StaticServer, book_notebooks
from browser_env import CHROMIUM, CHROMIUM_FLAGS, unavailable

# The fixture book is a test input (broken on purpose), not notebooks for nbval.
collect_ignore_glob = ["fixtures/*"]

HERE = Path(__file__).parent
REPO = HERE.parents[1]
FIXTURES = HERE / "fixtures"
SCREENSHOTS = HERE / "screenshots"


def _load_build_book():
    spec = importlib.util.spec_from_file_location("build_book", REPO / "scripts" / "build_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def build_book():
    """scripts/build_book.py as a module, once the book toolchain is known to be there."""
    missing = [m for m in ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx_copybutton")
               if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(f"book test skipped: {', '.join(missing)} not installed "
                    "(`pip install -e '.[book]'`, or `make book`)")
    module = _load_build_book()
    tarball = module.CACHE / f"mathjax-{module.MATHJAX_VERSION}.tgz"
    if shutil.which("npm") is None and not tarball.exists():
        unavailable(f"book test skipped: npm not found and no {tarball}; the book takes "
                    f"MathJax from the npm package mathjax@{module.MATHJAX_VERSION}")
    return module


@pytest.fixture(scope="session")
def full_book(build_book, tmp_path_factory):
    """The whole book, built once per session (strict) into a temporary folder; the page test
    and the explorer test read the same build."""
    import time

    out = tmp_path_factory.mktemp("book") / "book"
    notebooks = book_notebooks()  # the lessons and the engines track
    t0 = time.perf_counter()
    build_book.build(out, notebooks, strict=True)
    print(f"book built in {time.perf_counter() - t0:.1f} s")
    return out


@pytest.fixture(scope="session")
def browser(playwright_session):
    pw = playwright_session  # one driver per run (tests/conftest.py)
    # Debian's chromium, started and stopped by playwright (never a browser download).
    b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def context(browser):
    """A fresh browser context (no cache, no storage shared between tests)."""
    ctx = browser.new_context(service_workers="block")
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture(scope="session")
def serve():
    """``serve(folder)`` -> base URL of a static server on 127.0.0.1; all stopped at the end."""
    servers = []

    def start(root: Path) -> str:
        servers.append(StaticServer(root))
        return servers[-1].base

    yield start
    for s in servers:
        s.stop()
