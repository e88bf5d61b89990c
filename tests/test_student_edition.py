"""The student edition (make student): no solution or output leaks, and it runs cleanly."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "student_edition.py"), str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    return out


def test_no_solution_and_no_output(edition):
    books = sorted(edition.glob("*.ipynb"))
    assert [p.name for p in books] == sorted(p.name for p in (ROOT / "notebooks").glob("0*.ipynb"))
    for path in books:
        nb = json.loads(path.read_text())
        original = json.loads((ROOT / "notebooks" / path.name).read_text())
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


def test_answer_cells_call_the_checker(edition):
    nb = json.loads((edition / "01_attention_and_kv_cache.ipynb").read_text())
    first = next(c for c in nb["cells"] if "answer" in c["metadata"].get("tags", []))
    assert 'check("01.1", answer)' in "".join(first["source"])


def test_the_edition_runs_top_to_bottom(edition):
    """nbval-lax: every cell runs without error (there are no outputs to compare)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax",
                        "--nbval-current-env", "-p", "no:cacheprovider", "--rootdir",
                        str(edition), str(edition)],
                       capture_output=True, text=True, cwd=edition, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
