"""What the two browser tests share (``tests/browser``: the widgets in JupyterLab;
``tests/book``: the static book): which Chromium, its flags, and skip-or-fail when it or
playwright is missing. Their helper modules put this folder on ``sys.path`` to import it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Debian's package; KVLIB_CHROMIUM points elsewhere (e.g. /usr/bin/chromium-browser).
CHROMIUM = Path(os.environ.get("KVLIB_CHROMIUM", "/usr/bin/chromium"))
# Headless with no sandbox, and nothing that reaches for the network on its own (this
# machine's network is closed: those connections fail, many at a time).
CHROMIUM_FLAGS = (
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--no-default-browser-check",
    "--disable-extensions", "--mute-audio",
)


def unavailable(reason: str):
    """Skip with ``reason``; fail instead under ``KVLIB_REQUIRE_BROWSER=1`` (CI, where a
    skipped browser test would hide a broken page)."""
    if os.environ.get("KVLIB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (KVLIB_REQUIRE_BROWSER=1 makes this a failure)")
    pytest.skip(reason)


def require_browser(what: str) -> None:
    """Debian's chromium and the playwright package are there, or ``what`` is skipped
    (or fails: :func:`unavailable`) with the reason and the command that fixes it."""
    if not CHROMIUM.exists():
        unavailable(f"{what} skipped: {CHROMIUM} not found; install Debian's chromium "
                    "(`apt-get install chromium`) to run it")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable(f"{what} skipped: the playwright package is not installed "
                    "(`pip install -e '.[dev]'`)")
