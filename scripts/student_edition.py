"""Write the student edition of the notebooks: no solutions, no outputs (``make student``).

Each solution cell becomes an answer cell: one variable per answer the exercise asks for
(:data:`kvlib.views.exercises.ANSWERS`), then ``check("NN.k", ...)``, which says right, or
not yet with a hint. The exercises' opening paragraph, which tells readers of the full
notebooks how to unfold a solution, is replaced by how to answer. Every output is removed,
so nothing gives an answer away; the edition runs top to bottom without error
(tests/test_student_edition.py).

The lessons (``notebooks/NN_*.ipynb``) go to ``OUTDIR/``, the engines track
(``notebooks/engines/*.ipynb``) to ``OUTDIR/engines/``: the same depth as in ``notebooks/``, so
a notebook's relative paths (``../../tests/fixtures/...``) hold in ``student/`` too.

Usage: python scripts/student_edition.py [OUTDIR]   (default: student/)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from kvlib.views.exercises import ANSWERS

ROOT = Path(__file__).resolve().parent.parent

# What each kind of answer is written in (kvlib.views.exercises.reading).
# The formats are examples, none of them an exercise's answer (tests/test_exercises.py).
UNITS = {"bytes": "bytes, or text with a unit: '96 KiB'", "count": "a whole number",
         "ratio": "a number, '2.5x', '40%' or '2/5'", "seconds": "seconds, or '12.3 ms'",
         "exception": "an exception class, e.g. KeyError"}

# The full notebooks' paragraph on folded solutions, up to the end of its paragraph.
FOLDED = re.compile(r"Each solution's code is folded.*?(?=\n\n|\Z)", re.S)
ANSWER_HERE = ("Answer each exercise in the cell below it: set its variables, then run the cell. "
               "`check` says right, or not yet with a hint; it reads numbers with units and "
               "thousands separators (\"96 KiB\", \"4,567 tokens\"). The worked solutions are "
               "in the full notebooks, in `notebooks/`.")


def answer_cell(exercise: str) -> nbformat.NotebookNode:
    if exercise not in ANSWERS:
        raise SystemExit(f"exercise {exercise} has a solution but no entry in "
                         "kvlib.views.exercises.ANSWERS: add one, so learners can check it")
    parts = ANSWERS[exercise].parts
    lines = [f"# Exercise {exercise}: your answers, then run the cell.",
             "from kvlib.views.exercises import check", ""]
    lines += [f"{p.name} = ...  # {p.what}: {UNITS[p.kind]}" for p in parts]
    # The semicolon keeps the cell from also showing check's True/False as its result.
    lines.append(f'check("{exercise}", {", ".join(p.name for p in parts)});')
    return nbformat.v4.new_code_cell("\n".join(lines), metadata={"tags": ["answer"]})


# A solution cell names its exercise: solution("06.2", ...) (tests/test_notebook_hygiene.py).
SOLUTION_OF = re.compile(r"""^solution\(\s*["']([^"']+)["']""", re.M)


def student_notebook(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    number, k, cells = path.name[:2], 0, []
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            k += 1
            named = SOLUTION_OF.search(cell.source)  # the key the solution itself checks
            cells.append(answer_cell(named.group(1) if named else f"{number}.{k}"))
            continue
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        elif "## Exercises" in cell.source:
            cell.source = FOLDED.sub(ANSWER_HERE, cell.source)
        cells.append(cell)
    nb.cells = cells
    return nb


def notebooks() -> list[tuple[Path, Path]]:
    """(notebook, its path in the edition): the lessons, then the engines track."""
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    engines = sorted((ROOT / "notebooks" / "engines").glob("*.ipynb"))
    return ([(p, Path(p.name)) for p in lessons]
            + [(p, Path("engines") / p.name) for p in engines])


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:] or [str(ROOT / "student")])[0])
    for path, rel in notebooks():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(student_notebook(path), out / rel)
        print(f"wrote {out / rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
