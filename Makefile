# Two commands for readers: `make lab` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export PYTHONHASHSEED := 0

.PHONY: lab test lint unit notebooks-test browser figures notebooks bench env clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

env: $(STAMP)

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_FLAG)

test: $(STAMP) lint
	$(BIN)/python -m pytest -n 2 --dist loadfile --nbval --nbval-cell-timeout=300 tests notebooks

lint: $(STAMP)
	$(BIN)/ruff check kvlib tests scripts notebooks conftest.py

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile tests

notebooks-test: $(STAMP)
	$(BIN)/python -m pytest --nbval notebooks

figures: $(STAMP)
	$(BIN)/python -m kvlib.views.figures figures

# Re-execute every notebook and store its outputs (after changing kvlib).
notebooks: $(STAMP)
	timeout 900 $(BIN)/python scripts/run_notebooks.py notebooks/*.ipynb

bench: $(STAMP)
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) build *.egg-info
