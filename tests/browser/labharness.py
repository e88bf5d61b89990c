"""Drive real JupyterLab in headless Chromium and check kvlib Explorer widgets (issue 6).

Processes: one ``jupyter lab`` server (127.0.0.1, a free port, a random token,
serving a *copy* of the notebooks, autosave off) and one Debian ``chromium``
started here and reached over the DevTools protocol by ``playwright`` (no browser
download). Both are stopped by the PID recorded when they were started.

Per notebook (:func:`check_notebook`): open it in a fresh tab, Run All, then for every
Explorer on the page, in page order, apply the :class:`Move` list of the expectation
table and require (a) the readout (CSS class ``kvlib-readout``) to contain the text
expected for the new setting, (b) a new figure in the ``kvlib-plot`` image (other bytes,
not the same picture sent again), (c) no error: no ``error`` message or traceback on the
kernel's IOPub channel, nothing in the Explorer's error line, (d) the Explorer no taller
than the viewport (:data:`VIEWPORT`, 900 px: a laptop screen), (e) each text area of
the Explorer (a pasted config.json) at least 90% of its width. A move marked
``error=True`` must instead show its text in the error line and leave none of the
previous setting's numbers in the readout and no figure of it. Any failure raises
:class:`WidgetCheckFailed` with what the page and the kernel showed.

:func:`mathjax_errors` opens a notebook as a reader does and returns the formulas
MathJax rendered as errors (``mjx-merror``), with MathJax's message.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: browser_env
import browser_env  # noqa: E402
from browser_env import CHROMIUM  # noqa: E402  (scripts/bench.py reads it here too)

# Started by us (not by playwright), so it is told to be headless.
CHROMIUM_FLAGS = ("--headless", *browser_env.CHROMIUM_FLAGS)
# A laptop screen: every Explorer (controls, readout, figure) must fit its height.
VIEWPORT = {"width": 1400, "height": 900}

# User settings for this server only: autosave off (the copy under test must stay
# byte-identical), every cell in the DOM (no windowing: widgets far down the
# notebook must be there to be found), no news or update pop-ups.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}
# The front end would otherwise ask the server to compare the Lab build (seconds of CPU).
PAGE_CONFIG = {"buildCheck": False, "buildAvailable": False}


class WidgetCheckFailed(AssertionError):
    """A widget did not do what the expectation table says (message: what was seen)."""


@dataclass(frozen=True)
class Move:
    """One user action on a control of an Explorer and the readout text it must produce.

    control: the control's description label (exact text) or its 0-based position
             in the Explorer's control grid.
    action:  "right" / "left": arrow-key presses on a slider handle (``arg`` presses);
             "select": choose the option labelled ``arg`` in a dropdown;
             "type": replace the text of a text box or slider readout with ``arg``.
    expect:  a substring the readout must contain afterwards and must not contain
             before, computed independently of the widget (hand arithmetic in the test).
    figure_changes: the new figure must differ from the old one (not just be re-shown).
    error:   the setting is invalid: ``expect`` must appear in the Explorer's error line,
             and the readout and figure must no longer show the previous setting's
             numbers (no number of the old readout, no old image).
    """

    control: str | int
    action: str
    arg: int | str
    expect: str
    figure_changes: bool = True
    error: bool = False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process we started (by its PID), then SIGKILL its group if it lingers."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: pgid == our child's pid
        proc.wait(5)


class LabServer:
    """``jupyter lab`` on 127.0.0.1 serving ``root`` (a copy), with isolated Jupyter dirs."""

    def __init__(self, root: Path, work: Path, startup_timeout: float = 60.0):
        self.root, self.work = Path(root), Path(work)
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        settings = self.work / "lab-settings"
        for rel, value in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        config = self.work / "jupyter-config"
        (config / "labconfig").mkdir(parents=True, exist_ok=True)
        (config / "labconfig" / "page_config.json").write_text(json.dumps(PAGE_CONFIG))
        env = dict(os.environ, PYTHONHASHSEED="0",
                   JUPYTERLAB_SETTINGS_DIR=str(settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.work / "lab-workspaces"),
                   JUPYTER_CONFIG_DIR=str(config),
                   JUPYTER_DATA_DIR=str(self.work / "jupyter-data"),
                   JUPYTER_RUNTIME_DIR=str(self.work / "jupyter-runtime"))
        env.pop("MPLBACKEND", None)  # `%matplotlib inline` must win
        self.log_path = self.work / "jupyter-server.log"
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", "--ServerApp.port_retries=0",
               f"--ServerApp.token={self.token}", f"--ServerApp.root_dir={self.root}",
               "--LabApp.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_ready(startup_timeout)

    def api(self, method: str, path: str):
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited early:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"jupyter lab not ready within {timeout:.0f} s:\n{self.log_tail()}")

    def url(self, notebook: str) -> str:
        return f"{self.base}/lab/tree/{notebook}?reset&token={self.token}"

    def shutdown_sessions(self) -> None:
        """Shut down every kernel session (between notebooks, and before stopping)."""
        for s in self.api("GET", "/api/sessions") or []:
            self.api("DELETE", f"/api/sessions/{s['id']}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                self.shutdown_sessions()
        except OSError:
            pass
        _stop(self.proc)


class Chromium:
    """Debian's chromium, headless, started by us; ``ws_url`` is its DevTools endpoint."""

    def __init__(self, work: Path, startup_timeout: float = 30.0):
        profile = Path(work) / "chromium-profile"
        self.log_path = Path(work) / "chromium.log"
        cmd = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               "--remote-debugging-port=0", "about:blank"]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.ws_url = self._read_endpoint(startup_timeout)

    def _read_endpoint(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            m = re.search(r"DevTools listening on (ws://\S+)", text)
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"chromium gave no DevTools endpoint:\n{text[-3000:]}")

    def stop(self) -> None:
        _stop(self.proc)


# --- the page side ---------------------------------------------------------------

_JS_NB = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
_JS_KERNEL = f"({_JS_NB} && {_JS_NB}.sessionContext && {_JS_NB}.sessionContext.session " \
             f"&& {_JS_NB}.sessionContext.session.kernel)"

_JS_KERNEL_READY = f"""() => {{
  const k = {_JS_KERNEL};
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}}"""

# Record what the kernel says on IOPub that a user would never see in the notebook:
# tracebacks from widget callbacks go to the kernel's stderr (logged by the comm
# layer) or arrive as `error` messages, not into any cell.
_JS_HOOK_IOPUB = f"""() => {{
  const k = {_JS_KERNEL};
  window.__kvlib = {{problems: []}};
  k.iopubMessage.connect((_, msg) => {{
    const t = msg.header.msg_type, c = msg.content;
    if (t === 'error') {{
      window.__kvlib.problems.push(`${{c.ename}}: ${{c.evalue}}\\n` +
        (c.traceback || []).join('\\n').replace(/\\x1b\\[[0-9;]*m/g, ''));
    }} else if (t === 'stream' && c.name === 'stderr' &&
               /Traceback|Error|Exception/.test(c.text)) {{
      window.__kvlib.problems.push(c.text);
    }}
  }});
}}"""

_JS_ALL_RUN = f"""() => {{
  const nb = {_JS_NB};
  const k = {_JS_KERNEL};
  if (!nb || !k || k.status !== 'idle') return false;
  const cells = nb.content.model.cells;
  for (let i = 0; i < cells.length; i++) {{
    const c = cells.get(i);
    if (c.type === 'code' && c.sharedModel.getSource().trim() && !c.executionCount) return false;
  }}
  return true;
}}"""

# Whether the open notebook's model differs from its file (JupyterLab's "modified" dot).
_JS_DIRTY = f"""() => {{
  const nb = {_JS_NB};
  return nb.context.model.dirty;
}}"""

_JS_MODEL = f"() => {_JS_NB}.context.model.toJSON()"


def opened_changes(model: dict, path: Path) -> str:
    """What JupyterLab changed in the notebook at ``path`` on opening it (``model``: its
    in-browser JSON), or "" when the only change is the Python version in language_info:
    a machine whose kernel runs another Python than the one that stored the notebooks
    (there, JupyterLab records its version; nothing the repository can store avoids it)."""
    stored = json.loads(path.read_text(encoding="utf-8"))
    def without_version(meta: dict) -> dict:
        info = {k: v for k, v in meta.get("language_info", {}).items() if k != "version"}
        return {**meta, "language_info": info}
    if without_version(model["metadata"]) != without_version(stored["metadata"]):
        return f"the notebook's metadata to {model['metadata']}"
    for i, (now, then) in enumerate(zip(model["cells"], stored["cells"], strict=False)):
        meta = {k: v for k, v in now.get("metadata", {}).items() if k != "trusted"}
        if meta != then.get("metadata", {}):
            return f"cell {i}'s metadata from {then.get('metadata')} to {meta}"
    return ""


# What each solution cell (tag "solution") shows under it: the visible text of its outputs,
# how many folded answers (<details class="kvlib-answer">) it holds and whether they are open.
_JS_SOLUTIONS = f"""() => {{
  const nb = {_JS_NB};
  return nb.content.widgets.filter(c => (c.model.getMetadata('tags') || []).includes('solution'))
    .map(c => {{
      const outs = [...c.node.querySelectorAll('.jp-OutputArea-output')];
      const details = [...c.node.querySelectorAll('details.kvlib-answer')];
      return {{text: outs.map(o => o.innerText.trim()).join('\\n'), folds: details.length,
               open: details.some(d => d.open), hidden: !!c.outputHidden}};
    }});
}}"""


# State of Explorer number i: readout text, error line, and the figure on show: the
# SHA-256 of the image's bytes (the Explorer's plot is an Image widget, whose page sets a
# new blob: URL on every update, so the URL alone would say "changed" for the same
# picture), or null when no image is shown (none, or hidden after a refused setting).
_JS_STATE = """async (i) => {
  const ro = document.querySelectorAll('.kvlib-readout')[i];
  const box = ro.parentElement;
  const err = box.querySelector('.kvlib-error') ||
    [...box.children].find(e => e.classList.contains('widget-html') && e !== ro);
  const img = box.querySelector('img.kvlib-plot');
  let digest = null;
  for (let t = 0; t < 3 && img && img.getAttribute('src')
       && getComputedStyle(img).display !== 'none'; t++) {
    try {  // img.src read afresh each try: the next update revokes the URL it replaces
      const bytes = await (await fetch(img.src)).arrayBuffer();
      const h = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
      digest = [...h].map(b => b.toString(16).padStart(2, '0')).join('');
      break;
    } catch (e) { digest = 'unreadable'; }
  }
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  return {readout: ro.innerText, error: err ? err.innerText : '', img: digest,
          kernel: k.status, problems: window.__kvlib.problems.slice()};
}"""

_JS_HEIGHT = """(i) => Math.round(
  document.querySelectorAll('.kvlib-readout')[i].parentElement.getBoundingClientRect().height)"""

class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def ms(self, floor: float = 1000.0) -> float:
        return max(floor, (self.end - time.monotonic()) * 1000.0)

    def passed(self) -> bool:
        return time.monotonic() > self.end


def _describe_move(name: str, i: int, move: Move) -> str:
    return f"{name}: Explorer #{i}, control {move.control!r}, {move.action} {move.arg!r}"


def _report(state: dict, server_log: str = "") -> str:
    lines = [f"  readout now:  {state.get('readout', '')!r}",
             f"  error line:   {state.get('error', '')!r}",
             f"  kernel:       {state.get('kernel')}"]
    for p in state.get("problems", []):
        lines.append("  kernel said:\n    " + p.strip().replace("\n", "\n    "))
    if server_log:
        lines.append("  server log tail:\n    " + server_log.strip().replace("\n", "\n    "))
    return "\n".join(lines)


def _control(page, i: int, control: str | int):
    box = page.locator(".kvlib-readout").nth(i).locator("xpath=..")
    # every control grid of the Explorer: two columns, then a text area in a row of its own
    items = box.locator(":scope > .widget-gridbox > .widget-inline-hbox, "
                        ":scope > .widget-gridbox > .jupyter-widgets")
    if isinstance(control, int):
        return items.nth(control)
    return items.filter(has=page.locator(".widget-label", has_text=re.compile(
        rf"^\s*{re.escape(control)}\s*$"))).first


def _apply(page, ctl, move: Move, timeout_ms: float) -> None:
    if move.action in ("right", "left"):
        handle = ctl.locator(".noUi-handle").first
        handle.focus(timeout=timeout_ms)
        key = "ArrowRight" if move.action == "right" else "ArrowLeft"
        for _ in range(int(move.arg)):
            handle.press(key, timeout=timeout_ms)
    elif move.action == "select":
        ctl.locator("select").first.select_option(label=str(move.arg), timeout=timeout_ms)
    elif move.action == "type":
        box = ctl.locator("input, .widget-readout").first
        box.click(timeout=timeout_ms)
        box.press("ControlOrMeta+a")
        box.press_sequentially(str(move.arg))
        box.press("Enter")
    elif move.action == "paste":  # a text area or text box: its whole text at once, then
        box = ctl.locator("textarea, input").first  # leave it (it updates on blur/Enter)
        box.fill(str(move.arg), timeout=timeout_ms)
        box.press("Tab", timeout=timeout_ms)
    else:
        raise ValueError(f"unknown move action {move.action!r}")


def check_notebook(page, server: LabServer, name: str, widgets: Sequence[Sequence[Move]],
                   screenshot: Path | None = None, budget_s: float = 50.0) -> dict:
    """Open ``name`` in ``page``, Run All, apply every move; returns timings (s).

    ``widgets[i]`` is the list of moves for the i-th Explorer on the page; the page
    must show exactly ``len(widgets)`` Explorers. Raises WidgetCheckFailed.
    """
    t0 = time.monotonic()
    deadline = Deadline(budget_s)
    timings: dict[str, float] = {}
    try:
        page.goto(server.url(name), timeout=deadline.ms())
        try:
            page.wait_for_function(_JS_KERNEL_READY, timeout=deadline.ms())
        except Exception as e:
            raise WidgetCheckFailed(f"{name}: no idle kernel within the budget ({e})\n"
                                    f"{server.log_tail()}") from None
        page.evaluate(_JS_HOOK_IOPUB)
        # Opening a notebook (and connecting its kernel) must not change it: JupyterLab marks
        # it modified when the stored kernelspec, language_info or cell metadata differ from
        # what it would write (issue 26, section 3).
        page.wait_for_timeout(500)
        if page.evaluate(_JS_DIRTY):
            changed = opened_changes(page.evaluate(_JS_MODEL), server.root / name)
            if changed:
                raise WidgetCheckFailed(f"{name}: opens already modified in JupyterLab, which "
                                        f"changed {changed} (scripts/run_notebooks.py stores "
                                        "what JupyterLab writes)")
        timings["open"] = time.monotonic() - t0
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        try:
            page.wait_for_function(_JS_ALL_RUN, timeout=deadline.ms(), polling=200)
        except Exception:
            problems = page.evaluate("() => window.__kvlib.problems")
            raise WidgetCheckFailed(f"{name}: Run All did not finish within the budget\n"
                                    + "\n".join(problems)) from None
        problems = page.evaluate("() => window.__kvlib.problems")
        if problems:
            raise WidgetCheckFailed(f"{name}: a cell raised during Run All:\n"
                                    + "\n".join(problems))
        timings["run_all"] = time.monotonic() - t0 - timings["open"]
        check_answers_folded(page, name)
        # Widgets render asynchronously after their cell has run.
        n_expected = len(widgets)
        readouts = page.locator(".kvlib-readout")
        while readouts.count() < n_expected and not deadline.passed():
            time.sleep(0.1)
        page.wait_for_timeout(300)
        if readouts.count() != n_expected:
            raise WidgetCheckFailed(
                f"{name}: the page shows {readouts.count()} Explorer(s), the expectation "
                f"table lists {n_expected}; every widget needs at least one Move")
        t_moves = time.monotonic()
        for i, moves in enumerate(widgets):
            if not moves:
                raise WidgetCheckFailed(f"{name}: Explorer #{i} has no Move to check")
            readouts.nth(i).scroll_into_view_if_needed(timeout=deadline.ms())
            heights = [check_height(page, name, i, "after Run All")]
            check_text_areas(page, name, i)
            for move in moves:
                _check_move(page, server, name, i, move, deadline)
                heights.append(check_height(page, name, i, f"after {move.control!r} -> "
                                                           f"{move.arg!r}"))
            timings[f"height_{i}"] = max(heights)
        timings["moves"] = time.monotonic() - t_moves
    finally:
        if screenshot is not None:
            _show_last_widget(page)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            try:
                page.screenshot(path=str(screenshot), timeout=10_000)
            except Exception:  # a screenshot must never hide the real failure
                pass
    timings["total"] = time.monotonic() - t0
    return timings


def check_answers_folded(page, name: str) -> None:
    """After Run All, every solution cell shows only "Show the answer to NN.k" (a closed
    fold), and clicking it shows the answer (issue 26, section 1)."""
    page.wait_for_timeout(300)
    solutions = page.evaluate(_JS_SOLUTIONS)
    if not solutions:
        return
    # a lesson's exercises are NN.k; the engines track's ENN.k (tests/test_notebook_hygiene.py)
    number = f"E{name.removeprefix('engines/')[:2]}" if name.startswith("engines/") else name[:2]
    for k, sol in enumerate(solutions, 1):
        want = f"Show the answer to {number}.{k}"
        if sol["hidden"] or sol["folds"] != 1 or sol["open"] or sol["text"] != want:
            raise WidgetCheckFailed(
                f"{name}: after Run All, solution {k} shows {sol['text']!r} (folds "
                f"{sol['folds']}, open {sol['open']}, outputs hidden {sol['hidden']}); "
                f"expected only {want!r}, closed")
    summary = page.locator("details.kvlib-answer > summary").first
    summary.scroll_into_view_if_needed()
    summary.click()
    page.wait_for_timeout(200)
    shown = page.evaluate(_JS_SOLUTIONS)[0]
    if not shown["open"] or "right" not in shown["text"]:
        raise WidgetCheckFailed(f"{name}: clicking 'Show the answer' showed {shown['text']!r}")
    summary.click()  # fold it again: the rest of the check sees the page as after Run All


def _show_last_widget(page) -> None:
    """Scroll the last Explorer (controls, readout, figure) to the top of the view."""
    try:
        page.evaluate("""() => {
          const r = [...document.querySelectorAll('.kvlib-readout')].pop();
          if (r) r.parentElement.scrollIntoView({block: 'start'});
        }""")
    except Exception:
        pass


def check_height(page, name: str, i: int, when: str) -> int:
    """The Explorer's height in px; fails when it is taller than the viewport."""
    height = page.evaluate(_JS_HEIGHT, i)
    if height > VIEWPORT["height"]:
        raise WidgetCheckFailed(
            f"{name}: Explorer #{i} is {height} px tall {when}, taller than a "
            f"{VIEWPORT['height']}-px screen: a reader cannot see its controls and its figure "
            "at once")
    return height


# Width of each text area of Explorer i (a pasted config.json) and of the Explorer, in px.
_JS_TEXT_AREAS = """(i) => {
  const box = document.querySelectorAll('.kvlib-readout')[i].parentElement;
  return {box: box.getBoundingClientRect().width,
          areas: [...box.querySelectorAll('.widget-textarea')].map(e => ({
            label: (e.querySelector('.widget-label') || {}).innerText || '',
            width: e.getBoundingClientRect().width}))};
}"""


def check_text_areas(page, name: str, i: int) -> None:
    """Every text area of the Explorer (a pasted config.json: many lines of JSON) takes at
    least 90% of its width; fails when one sits in a single column of the control grid."""
    found = page.evaluate(_JS_TEXT_AREAS, i)
    for area in found["areas"]:
        if area["width"] < 0.9 * found["box"]:
            raise WidgetCheckFailed(
                f"{name}: Explorer #{i}'s text area {area['label']!r} is {area['width']:.0f} "
                f"px wide in a {found['box']:.0f}-px Explorer: a pasted config.json needs "
                "the whole width")


ERROR_GRACE_S = 3.0  # how long an error line of the previous (refused) setting may linger
STALE_GRACE_S = 2.0  # how long a figure may lag its readout before it is called stale

# Numbers of two or more digits ("163,840", "2.68", "128K"): what a stale readout repeats.
_NUMBER = re.compile(r"\d[\d,.]*\d")


def _check_error_move(page, server: LabServer, name: str, i: int, move: Move, before: dict,
                      deadline: Deadline) -> None:
    """After a move to an invalid setting: the error line says so, and neither the readout
    nor the figure still shows the previous setting's numbers."""
    what = _describe_move(name, i, move)
    n_problems = len(before["problems"])
    state = before
    while not deadline.passed():
        time.sleep(0.1)
        state = page.evaluate(_JS_STATE, i)
        new = state["problems"][n_problems:]
        if new:
            raise WidgetCheckFailed(f"{what}: the kernel reported an error (a refused setting "
                                    "must be shown in the widget, not raised)\n"
                                    + _report({**state, "problems": new}))
        if move.expect in state["error"] and state["kernel"] == "idle":
            break
    else:
        raise WidgetCheckFailed(f"{what}: expected the error line to say {move.expect!r}\n"
                                + _report({**state, "problems": []}))
    page.wait_for_timeout(300)  # let the readout and the Output area settle
    state = page.evaluate(_JS_STATE, i)
    stale = [n for n in dict.fromkeys(_NUMBER.findall(before["readout"]))
             if n in state["readout"]]
    if stale:
        raise WidgetCheckFailed(
            f"{what}: the error shows, but the readout still shows the previous setting's "
            f"numbers {stale}, which read as this setting's\n" + _report(state))
    if state["img"] is not None and state["img"] == before["img"]:
        raise WidgetCheckFailed(f"{what}: the error shows, but the figure still shows the "
                                "previous setting")


def _check_move(page, server: LabServer, name: str, i: int, move: Move,
                deadline: Deadline) -> None:
    before = page.evaluate(_JS_STATE, i)
    if before["img"] is None and not before["error"].strip():
        raise WidgetCheckFailed(f"{name}: Explorer #{i} shows no figure before the move")
    n_problems = len(before["problems"])
    what = _describe_move(name, i, move)
    if move.error:
        ctl = _control(page, i, move.control)
        if ctl.count() == 0:
            raise WidgetCheckFailed(f"{what}: no such control in the Explorer's grid")
        _apply(page, ctl, move, deadline.ms())
        _check_error_move(page, server, name, i, move, before, deadline)
        return
    if move.expect in before["readout"]:
        # Otherwise a readout that never updates would pass this move.
        raise WidgetCheckFailed(f"{what}: the readout already shows {move.expect!r} before "
                                "the move; expect a value only the new setting produces")
    ctl = _control(page, i, move.control)
    if ctl.count() == 0:
        raise WidgetCheckFailed(f"{what}: no such control in the Explorer's grid")
    _apply(page, ctl, move, deadline.ms())
    state = before
    moved = time.monotonic()
    settled = None  # when the readout first showed the expected text, with an idle kernel
    while not deadline.passed():
        time.sleep(0.1)
        state = page.evaluate(_JS_STATE, i)
        new = state["problems"][n_problems:]
        # An error line left from a refused setting before this move is not this move's
        # error until the update has had time to clear it.
        old_error = state["error"] == before["error"] and time.monotonic() - moved < ERROR_GRACE_S
        if new or (state["error"].strip() and not old_error):
            raise WidgetCheckFailed(f"{what}: the widget reported an error\n"
                                    + _report({**state, "problems": new}))
        if move.expect in state["readout"] and state["kernel"] == "idle":
            if state["img"] == "unreadable":
                continue  # mid-update: read it again
            if state["img"] is not None and state["img"] != before["img"]:
                break
            settled = settled or time.monotonic()
            # A figure that has not changed by now is judged below, not as a timeout.
            if time.monotonic() - settled > STALE_GRACE_S:
                break
    else:
        raise WidgetCheckFailed(
            f"{what}: expected the readout to contain {move.expect!r} and a redrawn "
            f"figure within the budget\n"
            + _report({**state, "problems": state["problems"][n_problems:]},
                      server.log_tail(1500)))
    if move.figure_changes and state["img"] == before["img"]:
        raise WidgetCheckFailed(f"{what}: the readout moved on, but the figure did not change")


# MathJax 3 renders a formula it cannot parse as an <mjx-merror> element whose
# data-mjx-error attribute holds the message (e.g. "'_' allowed only in math mode").
_JS_MATH = """() => {
  const errors = [...document.querySelectorAll('mjx-merror')].map(e => {
    const c = e.closest('mjx-container');
    const cell = e.closest('.jp-Cell');
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    return {message: e.getAttribute('data-mjx-error') || e.textContent,
            text: e.textContent, cell: cells.indexOf(cell),
            source: c ? (c.getAttribute('aria-label') || '') : ''};
  });
  return {errors, containers: document.querySelectorAll('mjx-container').length};
}"""


def mathjax_errors(page, server: LabServer, name: str, budget_s: float = 40.0) -> dict:
    """Open ``name`` (its stored outputs, as a reader first sees it), wait until MathJax has
    typeset the page (the number of formulas stops changing), and return
    ``{"errors": [{message, text, cell, source}], "formulas": n}``."""
    deadline = Deadline(budget_s)
    page.goto(server.url(name), timeout=deadline.ms())
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=deadline.ms())
    last, steady = None, 0
    while not deadline.passed() and steady < 4:
        page.wait_for_timeout(250)
        seen = page.evaluate(_JS_MATH)
        key = (seen["containers"], len(seen["errors"]))
        steady = steady + 1 if key == last and key[0] > 0 else 0
        last = key
    seen = page.evaluate(_JS_MATH)
    return {"errors": seen["errors"], "formulas": seen["containers"]}


def copy_notebooks(paths: Sequence[Path], dest: Path) -> dict[str, bytes]:
    """Copy notebooks into ``dest`` (what the server serves); returns name -> bytes. A notebook
    of the engines track (in a folder named ``engines``) goes to ``dest/engines/``, named
    ``engines/NAME``: the depth its relative paths (``../../tests/fixtures``) expect."""
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for p in paths:
        name = f"engines/{p.name}" if p.parent.name == "engines" else p.name
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest / name)
        out[name] = p.read_bytes()
    return out
