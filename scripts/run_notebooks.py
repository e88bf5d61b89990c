"""Re-execute notebooks in place and store clean, reproducible outputs.

Runs each notebook top to bottom in a fresh ``python3`` kernel (cwd = its folder,
PYTHONHASHSEED=0, a per-cell timeout), then removes what differs run to run:
widget state, widget-view outputs, timing metadata; consecutive prints are merged
into one stream output. Fails if any cell errors.

Usage: python scripts/run_notebooks.py notebooks/01_*.ipynb [...]
       python scripts/run_notebooks.py notebooks/engines/*.ipynb   (the engines track)
       python scripts/run_notebooks.py   (no argument: the lessons, then the engines track)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from queue import Empty

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def sliced_waits(channel, step: float = 0.1) -> None:
    """Wait for a kernel message in ``step``-second polls instead of one long poll.

    nbclient's async client sometimes misses the wake-up of a long ``poll`` on a
    ZMQ socket: the reply is there but is only seen when the poll times out (the
    whole cell timeout), or never if there is none (the hangs in
    NOTEBOOK_TESTING.md; measured here: 2 stalls of exactly the cell timeout in 30
    runs of notebook 02, none in 60 runs with this). A fresh poll sees it at once.
    """
    wait = channel.get_msg

    async def get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = step if deadline is None else min(step, deadline - time.monotonic())
            try:
                return await wait(timeout=max(0.0, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


def clean(nb: nbformat.NotebookNode, language_info: dict | None = None) -> None:
    """Drop what differs run to run; store the kernel's own description of itself.

    JupyterLab writes the running kernel's spec name and ``language_info`` into a notebook
    it opens, and marks it modified when they differ from what is stored: so both are
    stored as the ``python3`` kernel reports them (issue 26, section 3). A notebook opened
    on another Python version still records that version, and shows as modified.
    """
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = {"display_name": KernelSpecManager().get_kernel_spec(
        "python3").display_name, "language": "python", "name": "python3"}
    if language_info is not None:
        nb.metadata["language_info"] = language_info
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.outputs:
            if out.get("output_type") == "error":
                raise RuntimeError(f"cell {cell.get('id')} raised: {out.get('evalue')}")
            if WIDGET_VIEW in out.get("data", {}):
                continue  # a live view: meaningless without the kernel, new id every run
            prev = kept[-1] if kept else None
            if (prev is not None and out.get("output_type") == "stream"
                    and prev.get("output_type") == "stream" and prev.name == out.name):
                prev.text += out.text  # one print can arrive in several messages
                continue
            kept.append(out)
        cell.outputs = kept


def run(path: Path, timeout: int = 180) -> None:
    nb = nbformat.read(path, as_version=4)
    os.environ["PYTHONHASHSEED"] = "0"
    os.environ.pop("MPLBACKEND", None)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}},
                            record_timing=False)
    with client.setup_kernel():
        sliced_waits(client.kc.shell_channel)
        sliced_waits(client.kc.iopub_channel)
        info = client.wait_for_reply(client.kc.kernel_info())
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
    clean(nb, info["content"]["language_info"])
    nbformat.write(nb, path)
    print(f"executed {path}")


ROOT = Path(__file__).resolve().parents[1]


def all_notebooks(root: Path = ROOT) -> list[Path]:
    """The lessons (notebooks/NN_*.ipynb), then the engines track (notebooks/engines/*.ipynb)."""
    return (sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            + sorted((root / "notebooks" / "engines").glob("*.ipynb")))


if __name__ == "__main__":
    for p in sys.argv[1:] or all_notebooks():
        run(Path(p))
