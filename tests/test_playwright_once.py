"""Playwright's sync API is entered in one place only (issue 26, section 5).

A second ``sync_playwright()`` opened while the first is still open (a session-scoped book
browser, then the lab's) fails in setup with "Playwright Sync API inside the asyncio loop",
so the browser tests passed in their own folders and errored when run together. The one
driver is ``playwright_session`` in tests/conftest.py; this test fails if a fixture or test
opens its own again.
"""

from pathlib import Path

TESTS = Path(__file__).parent


def test_sync_playwright_is_entered_once():
    callers = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
                     if "sync_playwright()" in p.read_text() and p.name != Path(__file__).name)
    assert callers == ["conftest.py"], callers
