"""This folder on ``sys.path`` for every test below it, before their own conftests import:
``tests/browser`` and ``tests/book`` share :mod:`browser_env` (which Chromium, its flags,
skip or fail when it is missing)."""

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def playwright_session():
    """One Playwright driver for the whole run, shared by ``tests/browser`` and ``tests/book``.

    Playwright's sync API cannot be entered while another sync session is open in the same
    thread (it sees the first one's event loop running and refuses). Two fixtures each
    opening their own failed as soon as both folders ran in one process (issue 26, section 5);
    one session-scoped driver makes the tests independent of how they are grouped.
    """
    from browser_env import require_browser
    require_browser("browser test")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        yield pw
