"""This folder on ``sys.path`` for every test below it, before their own conftests import:
``tests/browser`` and ``tests/book`` share :mod:`browser_env` (which Chromium, its flags,
skip or fail when it is missing)."""

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
