"""Write the student edition of the notebooks: no solutions, no outputs (``make student``).

Each solution cell becomes an empty answer cell; where kvlib can check the answer
(:data:`kvlib.views.exercises.ANSWERS`), the cell ends in ``check("NN.k", answer)``,
which says right or wrong with a hint. Every output is removed, so nothing gives an
answer away; the edition runs top to bottom without error (tests/test_student_edition.py).

Usage: python scripts/student_edition.py [OUTDIR]   (default: student/)
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from kvlib.views.exercises import ANSWERS

ROOT = Path(__file__).resolve().parent.parent


def answer_cell(exercise: str) -> nbformat.NotebookNode:
    if exercise in ANSWERS:
        unit = ANSWERS[exercise].unit
        source = (f"# Exercise {exercise}: your answer ({unit}), then run the cell.\n"
                  "from kvlib.views.exercises import check\n\n"
                  f"answer = ...  # {unit}\n"
                  f'check("{exercise}", answer)')
    else:
        source = f"# Exercise {exercise}: your solution here."
    return nbformat.v4.new_code_cell(source, metadata={"tags": ["answer"]})


def student_notebook(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    number, k, cells = path.name[:2], 0, []
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            k += 1
            cells.append(answer_cell(f"{number}.{k}"))
            continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    nb.cells = cells
    return nb


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:] or [str(ROOT / "student")])[0])
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nbformat.write(student_notebook(path), out / path.name)
        print(f"wrote {out / path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
