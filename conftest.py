"""Repository-wide pytest set-up, also for `pytest --nbval notebooks` run by hand."""

import os
from pathlib import Path

# nbval kernels inherit this process's environment: fix hash randomisation (set
# ordering in SymPy output) and let `%matplotlib inline` work.
os.environ["PYTHONHASHSEED"] = "0"
os.environ.pop("MPLBACKEND", None)

_SANITIZE = Path(__file__).parent / "tests" / "nbval_sanitize.cfg"


def pytest_configure(config):
    if getattr(config.option, "nbval", False) or getattr(config.option, "nbval_lax", False):
        config.option.nbval_sanitize_with = str(_SANITIZE)
        config.option.nbval_current_env = True

# Hypothesis: no per-example deadline. On a loaded 2-core CI machine a slow first example
# (imports, SymPy caches) would fail a property that holds; the properties are what we test.
try:
    from hypothesis import settings

    settings.register_profile("kvlib", deadline=None, print_blob=True)
    settings.load_profile("kvlib")
except ImportError:  # plain `pytest --nbval notebooks` without the dev extras
    pass
