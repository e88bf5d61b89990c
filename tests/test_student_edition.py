"""The student edition (make student): no solution or output leaks, and it runs cleanly."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The lessons and the engines track (notebooks/engines/, issue 40), as paths under notebooks/.
ORIGINALS = sorted(p.relative_to(ROOT / "notebooks") for p in
                   [*(ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"),
                    *(ROOT / "notebooks" / "engines").glob("*.ipynb")])


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    # The repository's layout around the edition: student/ beside tests/ and figures/, so a
    # notebook's relative paths (../../tests/fixtures/... in the engines track) hold.
    root = tmp_path_factory.mktemp("clone")
    for shared in ("tests", "figures"):
        (root / shared).symlink_to(ROOT / shared, target_is_directory=True)
    out = root / "student"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "student_edition.py"), str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    return out


def _books(edition):
    return sorted(p.relative_to(edition) for p in edition.rglob("*.ipynb"))


def test_no_solution_and_no_output(edition):
    books = _books(edition)
    assert books == ORIGINALS
    assert any(p.parent == Path() for p in books)  # the lessons are there
    for rel in books:
        path = edition / rel
        nb = json.loads(path.read_text())
        original = json.loads((ROOT / "notebooks" / rel).read_text())
        solutions = [c for c in original["cells"] if "solution" in c["metadata"].get("tags", [])]
        answers = [c for c in nb["cells"] if "answer" in c["metadata"].get("tags", [])]
        assert len(answers) == len(solutions) >= 2
        assert not any("solution" in c["metadata"].get("tags", []) for c in nb["cells"])
        for c in nb["cells"]:
            if c["cell_type"] == "code":
                assert c["outputs"] == [] and c["execution_count"] is None, path.name
        text = json.dumps(nb)
        for s in solutions:  # no line of a solution survives
            for line in "".join(s["source"]).splitlines():
                if "assert" in line:
                    assert line not in text, (path.name, line)


def test_every_exercise_is_checked_with_all_its_answers(edition):
    """One answer cell per solution of the full notebooks (both tracks), each calling check()
    on the exercise its solution names, with one variable per answer asked; 01.1 asks for the
    bytes per token and per sequence, so its cell takes both."""
    checked, solved = [], []
    for rel in _books(edition):
        nb = json.loads((edition / rel).read_text())
        for c in nb["cells"]:
            if "answer" in c["metadata"].get("tags", []):
                call = "".join(c["source"]).splitlines()[-1]
                assert call.startswith('check("') and call.endswith(");"), (rel, call)
                checked.append(call)
        original = json.loads((ROOT / "notebooks" / rel).read_text())
        solved += [re.search(r'^solution\("([^"]+)"', "".join(c["source"]), re.M).group(1)
                   for c in original["cells"] if "solution" in c["metadata"].get("tags", [])]
    assert [re.match(r'check\("([^"]+)"', call).group(1) for call in checked] == solved
    assert len(set(solved)) == len(solved), "two exercises share a key"
    assert 'check("01.1", per_token, per_sequence);' in checked
    assert 'check("06.1", sessions);' in checked and 'check("07.1", share);' in checked


def test_no_promise_of_solutions_it_does_not_contain(edition):
    for rel in _books(edition):
        path = edition / rel
        nb = json.loads(path.read_text())
        exercises = next("".join(c["source"]) for c in nb["cells"]
                         if "## Exercises" in "".join(c["source"]))
        assert "Answer each exercise in the cell below it" in exercises, path.name
        for word in ("click", "reveal", "folded", "Show the answer"):
            assert word not in exercises, (path.name, word)


def test_the_edition_runs_top_to_bottom(edition):
    """nbval-lax: every cell runs without error (there are no outputs to compare)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax",
                        "--nbval-current-env", "-p", "no:cacheprovider", "--rootdir",
                        str(edition), str(edition)],
                       capture_output=True, text=True, cwd=edition, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
