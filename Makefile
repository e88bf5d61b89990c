# Two commands for readers: `make lab` and `make test`. Both create .venv on first use; `make lab`
# installs only what the notebooks need (the `lab` extra), `make test` adds the test tools.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
LSTAMP := $(VENV)/.lab-stamp
export PYTHONHASHSEED := 0

.PHONY: lab test book student lint unit notebooks-test browser figures notebooks bench env clean crosscheck oracle

# A room without a network (docs/workshop.md): `make lab WHEELS=wheels` installs from that
# wheelhouse only (pip --no-index; it must hold setuptools, which building kvlib itself needs)
# and leaves pip as it is. tests/test_workshop.py checks the recipe; tests/test_offline_lab.py
# runs it with no network, from a wheelhouse it packs, and asks the Lab it starts for notebook 01.
WHEELS ?=
PIP_FROM := $(if $(WHEELS),--no-index --find-links $(WHEELS))

$(LSTAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(if $(WHEELS),@echo "installing from $(WHEELS) only (no network)",$(BIN)/python -m pip install --upgrade pip)
	@echo "[make lab 1/2] installing JupyterLab, NumPy, SymPy, Matplotlib and kvlib into $(VENV) (about two minutes the first time; pip shows its progress)"
	$(BIN)/python -m pip install $(PIP_FROM) -e '.[lab]'
	@echo "[make lab 2/2] installed; later runs of make lab start JupyterLab at once"
	@touch $(LSTAMP)

$(STAMP): $(LSTAMP)
	$(BIN)/python -m pip install -e '.[dev]'
	@touch $(STAMP)

env: $(STAMP)

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# Lab serves the whole repository (README.md, docs/ are one click away); the URL it prints
# opens notebook 01 itself, not the Launcher, also where no browser opens (SSH, a container),
# and the overrides turn off the news pop-up. tests/test_make_lab.py starts it as written here.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
FIRST_NOTEBOOK := notebooks/01_attention_and_kv_cache.ipynb
LAB_FLAGS := --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/$(FIRST_NOTEBOOK)

lab: $(LSTAMP)
	@mkdir -p $(LAB_SETTINGS)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' > $(LAB_SETTINGS)/overrides.json
	@echo "Open the URL printed below (it opens notebook 01). On a remote machine, forward the port"
	@echo "first (ssh -L 8888:localhost:8888 HOST) and open the URL in your own browser."
	$(BIN)/jupyter lab $(LAB_FLAGS) $(ROOT_FLAG)

# The notebooks as a static HTML book in build/book/ (docs/publishing.md). Installs the book
# extra into .venv on first use; MathJax comes from the npm registry (pinned, cached in build/cache).
BSTAMP := $(VENV)/.book-stamp

$(BSTAMP): $(STAMP)
	$(BIN)/python -m pip install -e '.[dev,book]'
	@touch $(BSTAMP)

book: $(BSTAMP)
	$(BIN)/python scripts/build_book.py --strict

test: $(STAMP) $(BSTAMP) lint
	$(BIN)/python -m pytest -rs -n 2 --dist loadfile --nbval --nbval-cell-timeout=300 tests notebooks

# kvlib against the cache transformers allocates, on tiny random models (docs/crosscheck.md).
# Installs the crosscheck extra (torch 2.13.0 CPU build, transformers) into .venv on first use.
XSTAMP := $(VENV)/.crosscheck-stamp

$(XSTAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,crosscheck]'
	@touch $(XSTAMP)

crosscheck: $(XSTAMP)
	$(BIN)/python -m pytest tests/crosscheck

# kvlib against vLLM 0.34.0's own planning, KV-cache manager and scheduler, run on the CPU
# (docs/crosscheck.md, "make oracle"). vLLM lives in an environment of its own, .venv-oracle:
# the CPU build of torch on this machine's disk, the vLLM wheel without its CUDA dependencies,
# and the frozen list of what its planning code imports. SGLang's own code runs in .venv and reads
# configs with transformers, which the crosscheck extra installs (XSTAMP).
OVENV  := .venv-oracle
OSTAMP := $(OVENV)/.installed-stamp
ORACLE := build/oracle

$(OSTAMP): tests/oracle/requirements.txt
	$(PYTHON) -m venv $(OVENV)
	$(OVENV)/bin/python -m pip install --quiet --upgrade pip
	$(OVENV)/bin/python -m pip install --quiet torch==2.13.0
	$(OVENV)/bin/python -m pip install --quiet --no-deps vllm==0.34.0
	$(OVENV)/bin/python -m pip install --quiet --no-deps -r tests/oracle/requirements.txt
	@touch $(OSTAMP)

oracle: $(STAMP) $(XSTAMP) $(OSTAMP)
	@mkdir -p $(ORACLE)
	@ls $(ORACLE)/sglang-0.5.23-*.whl >/dev/null 2>&1 || \
		$(BIN)/python -m pip download --quiet sglang==0.5.23 --no-deps -d $(ORACLE)
	$(BIN)/python tests/oracle/cases.py $(ORACLE)/cases.json
	cd tests/oracle/engine && timeout 3000 ../../../$(OVENV)/bin/python measure.py \
		../../../$(ORACLE)/cases.json ../../../$(ORACLE)/measured.json
	KVLIB_REQUIRE_ORACLE=1 $(BIN)/python -m pytest -q tests/oracle tests/test_quant_oracle.py

lint: $(STAMP)
	$(BIN)/ruff check kvlib tests scripts notebooks conftest.py

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile tests

notebooks-test: $(STAMP)
	$(BIN)/python -m pytest --nbval notebooks

# The student edition in student/: no solutions, no outputs, answer cells with check() calls.
student: $(LSTAMP)
	$(BIN)/python scripts/student_edition.py student

figures: $(STAMP)
	$(BIN)/python -m kvlib.views.figures figures

# Re-execute every notebook, the lessons and the engines track, and store its outputs
# (after changing kvlib).
notebooks: $(STAMP)
	timeout 1800 $(BIN)/python scripts/run_notebooks.py $(wildcard notebooks/*.ipynb notebooks/engines/*.ipynb)

bench: $(STAMP)
	$(BIN)/python scripts/bench.py

clean:
	rm -rf $(VENV) $(OVENV) build *.egg-info
