"""`make lab` prints a URL that opens notebook 01, not the Launcher (issue 26, section 3).

Readers on SSH, in a container or on a remote machine get no browser opened for them: they
copy the URL JupyterLab prints. The test starts JupyterLab with the Makefile's own flags
(read from the Makefile, so the two cannot drift) and reads the URL it prints.
"""

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _make_variable(name: str) -> str:
    text = (ROOT / "Makefile").read_text()
    value = re.search(rf"^{name} := (.+)$", text, re.M).group(1)
    return re.sub(r"\$\((\w+)\)", lambda m: _make_variable(m.group(1)), value)


def test_the_lab_target_uses_the_flags_tested_here():
    recipe = re.search(r"^lab: .*?(?=^\S)", (ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "$(BIN)/jupyter lab $(LAB_FLAGS)" in recipe
    assert (ROOT / _make_variable("FIRST_NOTEBOOK")).is_file()


def test_printed_url_opens_notebook_01(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"))
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
           "--ServerApp.port_retries=0", "--ip=127.0.0.1", *_make_variable("LAB_FLAGS").split()]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "?token=" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(20)
    urls = re.findall(r"http://127\.0\.0\.1:\d+/\S+", log.read_text())
    assert urls, log.read_text()[-2000:]
    assert all(u.startswith(f"http://127.0.0.1:{port}/lab/tree/notebooks/"
                            "01_attention_and_kv_cache.ipynb?token=") for u in urls), urls


def _recipe(target: str) -> str:
    text = (ROOT / "Makefile").read_text()
    return re.search(rf"^{re.escape(target)}:.*?(?=^\S)", text, re.M | re.S).group(0)


def test_first_make_lab_shows_progress():
    """The first `make lab` installs for about two minutes: a room must see it working
    (issue 40, item 7), so pip is not silenced and the steps are announced."""
    recipe = _recipe("$(LSTAMP)")
    installs = [line for line in recipe.splitlines() if "pip install" in line]
    assert installs and not any("--quiet" in line or " -q" in line for line in installs), recipe
    assert re.search(r"@echo .*installing", recipe), recipe


def test_make_test_says_why_tests_were_skipped():
    """The README says skipped tests say why: pytest prints skip reasons only with -rs."""
    pytest_line = next(line for line in _recipe("test").splitlines() if "pytest" in line)
    assert re.search(r"\s-r\w*s", pytest_line), pytest_line


def test_the_wheelhouse_is_ignored_by_git():
    """docs/workshop.md builds wheels/ in the clone; git must not offer it for commit."""
    out = subprocess.run(["git", "check-ignore", "-q", "wheels/setuptools-68.0.0-py3-none-any.whl"],
                         cwd=ROOT)
    assert out.returncode == 0


def test_make_notebooks_runs_both_tracks():
    """`make notebooks` re-executes the lessons and the engines track (issue 40), and
    run_notebooks.py with no argument does the same."""
    recipe = _recipe("notebooks")
    assert "notebooks/*.ipynb" in recipe and "notebooks/engines/*.ipynb" in recipe, recipe
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks",
                                                  ROOT / "scripts" / "run_notebooks.py")
    run_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebooks)
    assert run_notebooks.all_notebooks() == (
        sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        + sorted((ROOT / "notebooks" / "engines").glob("*.ipynb")))
