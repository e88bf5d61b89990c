"""An offline install ends in a running JupyterLab on notebook 01 (issue 36, "The offline room").

docs/workshop.md's route for a room without a network: a wheelhouse built beforehand, then
`make lab WHEELS=wheels` in a clone. This test walks it end to end:

1. a wheelhouse of ``kvlib[lab]``'s requirements and setuptools, packed from this
   environment's installed distributions (tests/wheelhouse.py; no download);
2. a fresh copy of the repository's tracked files (no .venv, no build/);
3. `make lab WHEELS=<wheelhouse>` in that copy, as the page says, with no network: in a
   network namespace of its own where the machine allows one (``unshare -n``; as root here
   and in CI), and in any case with pip's configuration ignored, its index and every proxy
   pointed at a closed local port;
4. the server it starts must answer for notebook 01: the page its printed URL opens, the
   notebook through the contents API, and a kernel started in notebook 01's folder that
   imports the copy's kvlib; then it is stopped.

It takes about 55 s of CPU, 65-160 s on 2 cores shared with other work (most of it pip
installing 105 wheels into the new .venv), so it runs in `make test`; it deletes the
wheelhouse and the copy's .venv (about 800 MB) when done.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import wheelhouse

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "notebooks/01_attention_and_kv_cache.ipynb"
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused


def _copy_of_the_repository(dest: Path) -> None:
    """The tracked files, as a clone has them (a checkout without git: all but what it built)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        for name in listed.stdout.decode().split("\0"):
            src = ROOT / name
            if name and src.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "student", "*.egg-info", "__pycache__", "wheels"))


def _namespace() -> list[str]:
    """The prefix that runs a command without a network device, or [] where none can."""
    if shutil.which("unshare") is None:
        return []
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []


def _offline_env(tmp: Path) -> dict[str, str]:
    drop = ("PIP_", "MAKE", "MFLAGS", "VIRTUAL_ENV", "JUPYTER", "PYTHONPATH", "CONDA_")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(drop) and k.lower() not in ("http_proxy", "https_proxy",
                                                           "all_proxy", "no_proxy")}
    env.update(
        PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=f"{CLOSED}/simple", PIP_RETRIES="0",
        PIP_TIMEOUT="2", PIP_NO_CACHE_DIR="1",
        http_proxy=CLOSED, https_proxy=CLOSED, HTTP_PROXY=CLOSED, HTTPS_PROXY=CLOSED,
        JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"), JUPYTER_DATA_DIR=str(tmp / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"), IPYTHONDIR=str(tmp / "ipython"),
        JUPYTER_PLATFORM_DIRS="1")
    return env


def test_an_offline_install_ends_in_a_running_lab_on_notebook_01(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    try:
        wheels = wheelhouse.build(tmp_path / "wheels")
    except LookupError as err:  # an environment without the lab extra (not make test's)
        pytest.skip(f"cannot pack the wheelhouse from this environment: {err}")
    assert any(w.name.startswith("jupyterlab-") for w in wheels)
    copy = tmp_path / "clone"
    _copy_of_the_repository(copy)
    assert not (copy / ".venv").exists() and (copy / NOTEBOOK).is_file()

    with socket.socket() as s:  # in a namespace of its own any port is free; outside, this one
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = _offline_env(tmp_path)
    (tmp_path / "jupyter-config").mkdir()
    (tmp_path / "jupyter-config" / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"port": port, "port_retries": 0, "ip": "127.0.0.1", "open_browser": False},
        "IdentityProvider": {"token": token}}))
    base_python = getattr(sys, "_base_executable", sys.executable)  # the ABI the wheels are for
    namespace = _namespace()
    log = tmp_path / "make-lab.log"
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({
        "copy": str(copy), "make": ["lab", f"WHEELS={tmp_path / 'wheels'}",
                                    f"PYTHON={base_python}"],
        "env": env, "port": port, "token": token, "notebook": NOTEBOOK, "log": str(log),
        "timeout": 420, "loopback": bool(namespace)}))  # the whole run; about 60-170 s
    try:
        run = subprocess.run([*namespace, sys.executable,
                              str(Path(__file__).parent / "offline_lab.py"), str(settings)],
                             capture_output=True, text=True, timeout=480, env=env)
        _check(run, log, copy, tmp_path, env, bool(namespace))
    finally:
        shutil.rmtree(tmp_path / "wheels", ignore_errors=True)
        shutil.rmtree(copy / ".venv", ignore_errors=True)


def _check(run, log: Path, copy: Path, tmp_path: Path, env: dict, namespace: bool) -> None:
    made = log.read_text(errors="replace") if log.exists() else ""
    assert run.returncode == 0, run.stderr[-3000:] + made[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    print(json.dumps({k: v for k, v in found.items() if k not in ("page", "contents")}))
    assert "serving_after_s" in found, f"make lab did not serve: {found}\n{made[-3000:]}"
    if namespace:
        assert found["network"] is False, "the namespace reached another host"

    assert "installing from" in made and "only (no network)" in made, made[-3000:]
    printed = rf"http://127\.0\.0\.1:\d+/lab/tree/{NOTEBOOK}\?token="  # the URL to open
    assert re.search(printed, made), made[-3000:]
    status, page = found["page"]  # what the URL `make lab` prints opens
    assert status == 200 and "jupyter-config-data" in page and "JupyterLab" in page
    status, model = found["contents"]
    assert status == 200 and model["path"] == NOTEBOOK and model["type"] == "notebook"
    first = model["content"]["cells"][0]["source"]
    assert first.startswith("#") and "Attention" in first, first[:200]
    # notebook 01's kernel: in its folder, on the copy's .venv, importing the copy's kvlib
    cwd, prefix, kvlib_file = found["kernel_output"].split()
    assert Path(cwd) == copy / "notebooks" and Path(prefix) == copy / ".venv", found
    assert Path(kvlib_file) == copy / "kvlib" / "__init__.py", found
    assert found["kernel_stopped"] == 204
    # installed (editable) into the copy's .venv: importable from any folder
    shown = subprocess.run([str(copy / ".venv" / "bin" / "python"), "-c",
                            "import kvlib, jupyterlab; print(kvlib.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.strip() == str(copy / "kvlib" / "__init__.py")
