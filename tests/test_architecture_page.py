"""docs/architecture.md describes the house as it is (issue 41): every package folder of
kvlib, every notebook of both tracks (notebooks/, notebooks/engines/) and every config reader
module is named on the page, so a folder, notebook or reader that is added, renamed or moved
without the page fails here."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
KVLIB = ROOT / "kvlib"


def _packages() -> list[str]:
    """Every package folder under kvlib/, as the page writes it: its path below kvlib/ with a
    trailing slash (``serving/engines/vllm/``)."""
    return sorted(f"{p.parent.relative_to(KVLIB).as_posix()}/"
                  for p in KVLIB.rglob("__init__.py") if p.parent != KVLIB)


def _notebooks() -> list[str]:
    return sorted(p.name for folder in ("notebooks", "notebooks/engines")
                  for p in (ROOT / folder).glob("*.ipynb"))


def _readers() -> list[str]:
    return sorted(p.name for p in (KVLIB / "models" / "readers").glob("*.py")
                  if p.name != "__init__.py")


@pytest.mark.parametrize("kind, names", [("package folder", _packages()),
                                         ("notebook", _notebooks()),
                                         ("config reader", _readers())])
def test_the_page_names_every(kind, names):
    page = PAGE.read_text()
    assert names, f"no {kind} found"
    missing = [n for n in names if f"`{n}`" not in page and f"{n}`" not in page]
    assert missing == [], f"docs/architecture.md does not name these {kind}s: {missing}"


def test_the_page_names_both_notebook_tracks_and_the_engine_folders():
    page = PAGE.read_text()
    for words in ("`notebooks/`", "`notebooks/engines/`", "serving/engines/vllm/",
                  "serving/engines/sglang/", "serving/engines/trtllm/", "registry"):
        assert words in page, words


def test_a_missing_folder_is_caught(tmp_path, monkeypatch):
    """Positive control: a package folder the page does not name is reported."""
    (tmp_path / "core" / "brand_new").mkdir(parents=True)
    (tmp_path / "core" / "brand_new" / "__init__.py").write_text('"""x."""\n')
    monkeypatch.setattr(__import__(__name__), "KVLIB", tmp_path)
    assert _packages() == ["core/brand_new/"]
    with pytest.raises(AssertionError, match="brand_new"):
        test_the_page_names_every("package folder", _packages())
