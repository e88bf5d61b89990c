"""Author a notebook from a py:percent text (authoring aid; the .ipynb is the source of truth).

Cell markers:
    # %%                      code cell
    # %% [markdown]           markdown cell; a leading "# " is stripped from each line
    # %% tags=["a", "b"]      code cell with tags
    # %% solution             code cell, input collapsed in JupyterLab (reveal by clicking),
                              tagged "solution" so tests can find it; it ends in
                              kvlib.views.exercises.solution(...), which folds the answer

Usage: python scripts/percent_to_ipynb.py SRC.py OUT.ipynb
"""

from __future__ import annotations

import json
import re
import sys

import nbformat


def parse(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},  # scripts/run_notebooks.py stores the kernel's
    }
    blocks = re.split(r"^# %%(.*)$", text, flags=re.M)
    for header, body in zip(blocks[1::2], blocks[2::2], strict=True):
        header = header.strip()
        lines = body.strip("\n").splitlines()
        if header.startswith("[markdown]"):
            src = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines)
            nb.cells.append(nbformat.v4.new_markdown_cell(src.strip("\n")))
            continue
        cell = nbformat.v4.new_code_cell("\n".join(lines).strip("\n"))
        tags: list[str] = []
        if header.startswith("tags="):
            tags = json.loads(header[len("tags="):])
        elif header == "solution":
            tags = ["solution"]
            cell.metadata["jupyter"] = {"source_hidden": True}
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"  # stable ids: no random churn in diffs
    return nb


if __name__ == "__main__":
    src, out = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        nbformat.write(parse(f.read()), out)
