"""Fixtures of the browser test: one JupyterLab server and one headless Chromium per module.

Skips (with the reason) when Debian's chromium (``/usr/bin/chromium``, or
``KVLIB_CHROMIUM``) or the playwright package is missing; set
``KVLIB_REQUIRE_BROWSER=1`` (CI) to make that a failure instead.
Everything lives in a temporary directory (notebook copies, Jupyter settings,
browser profile) and uses free ports, so parallel pytest-xdist workers and
concurrent runs cannot collide.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from labharness import (
    VIEWPORT,
    Chromium,
    LabServer,
    check_notebook,
    copy_notebooks,
    mathjax_errors,
)

# The fixture notebooks are test inputs for the browser, not notebooks for nbval
# (broken_widget.ipynb is broken on purpose).
collect_ignore_glob = ["fixtures/*"]

HERE = Path(__file__).parent
REPO = HERE.parents[1]
FIXTURES = HERE / "fixtures"
SCREENSHOTS = HERE / "screenshots"


class Lab:
    """A started server + browser; ``check`` runs one notebook in a fresh tab."""

    def __init__(self, server: LabServer, context, served: Path, originals: dict[str, bytes]):
        self.server, self.context = server, context
        self.served, self.originals = served, originals

    def check(self, name: str, widgets) -> dict:
        page = self.context.new_page()
        page.set_viewport_size(VIEWPORT)
        try:
            return check_notebook(page, self.server, name, widgets,
                                  screenshot=SCREENSHOTS / f"{Path(name).stem}.png")
        finally:
            page.close()
            self.server.shutdown_sessions()

    def mathjax(self, name: str) -> dict:
        """The formulas MathJax renders as errors on ``name``'s page (see mathjax_errors)."""
        page = self.context.new_page()
        page.set_viewport_size(VIEWPORT)
        try:
            return mathjax_errors(page, self.server, name)
        finally:
            page.close()
            self.server.shutdown_sessions()

    def unchanged(self, name: str) -> bool:
        """The served copy is byte-identical to the notebook in the repository."""
        return (self.served / name).read_bytes() == self.originals[name]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, playwright_session):
    pw = playwright_session  # one driver per run (tests/conftest.py)
    work = tmp_path_factory.mktemp("lab")
    served = work / "notebooks"
    # the lessons, the engines track (notebooks/engines/) and the fixtures; beside the served
    # folder the repository's tests/ and figures/, as a notebook's relative paths expect
    originals = copy_notebooks(
        sorted((REPO / "notebooks").glob("*.ipynb"))
        + sorted((REPO / "notebooks" / "engines").glob("*.ipynb"))
        + sorted(FIXTURES.glob("*.ipynb")), served)
    for shared in ("tests", "figures"):
        (work / shared).symlink_to(REPO / shared, target_is_directory=True)
    server = LabServer(served, work)
    browser_proc = None
    try:
        browser_proc = Chromium(work)
        browser = pw.chromium.connect_over_cdp(browser_proc.ws_url)
        try:
            yield Lab(server, browser.contexts[0], served, originals)
        finally:
            browser.close()
    finally:
        if browser_proc is not None:
            browser_proc.stop()
        server.stop()
        assert server.proc.poll() is not None, "jupyter lab still running"
        assert browser_proc is None or browser_proc.proc.poll() is not None, \
            "chromium still running"
