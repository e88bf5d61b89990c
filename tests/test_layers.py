"""kvlib's layers import only downward: core < reference < models < serving < views < cli.

Every ``import`` / ``from ... import`` in every module, at any depth (a function-level
import counts), is read from the source; a module may import its own layer and the
layers below it, never a layer above, and never the top-level ``kvlib`` (which
re-exports every layer).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KVLIB = Path(__file__).resolve().parent.parent / "kvlib"
LAYERS = ("core", "reference", "models", "serving", "views", "cli")


def imported_kvlib_modules(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, dotted module) of every kvlib import in ``tree``.

    ``package``: the importing module's package, to resolve relative imports.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "kvlib"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "kvlib":
                continue
            if module == "kvlib":  # `from kvlib import serving` names a layer
                found += [(node.lineno, f"kvlib.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
    return found


def violations(root: Path) -> list[str]:
    """Every upward (or top-level) import under ``root`` (a kvlib-shaped package folder)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if len(parts) == 1:  # kvlib/__init__.py, kvlib/__main__.py sit above every layer
            continue
        layer = parts[0]
        if layer not in LAYERS:
            out.append(f"{path.relative_to(root)}: folder {layer!r} is not a layer {LAYERS}")
            continue
        package = ".".join(("kvlib", *parts[:-1]))  # a module's package, or the package itself
        for line, module in imported_kvlib_modules(ast.parse(path.read_text()), package):
            names = module.split(".")
            target = names[1] if len(names) > 1 else None
            if target not in LAYERS:
                out.append(f"{path.relative_to(root)}:{line} imports {module} (above every layer)")
            elif LAYERS.index(target) > LAYERS.index(layer):
                out.append(f"{path.relative_to(root)}:{line}: {layer} imports {module} "
                           f"({target} is above {layer})")
    return out


def test_kvlib_imports_only_downward():
    assert violations(KVLIB) == []


def test_every_layer_is_a_folder_with_a_docstring():
    for layer in LAYERS:
        init = KVLIB / layer / "__init__.py"
        assert init.is_file(), f"kvlib/{layer}/ is not a package"
        assert ast.get_docstring(ast.parse(init.read_text())), f"kvlib/{layer} has no docstring"
    assert sorted(p.name for p in KVLIB.glob("*.py")) == ["__init__.py", "__main__.py"]


@pytest.mark.parametrize("source, layer, words", [
    ("from kvlib.views.style import COLORS\n", "core", ["core imports kvlib.views.style"]),
    ("def f():\n    from kvlib.cli import main\n", "serving", ["serving imports kvlib.cli"]),
    ("import kvlib.serving.plan\n", "models", ["models imports kvlib.serving.plan"]),
    ("from kvlib import serving\n", "reference", ["reference imports kvlib.serving"]),
    ("from kvlib import GQA\n", "models", ["imports kvlib.GQA (above every layer)"]),
    ("from ...views import style\n", "core", ["core imports kvlib.views"]),
])
def test_an_upward_import_is_caught(tmp_path, source, layer, words):
    """A deliberate upward import in a copy of the layout fails the check (positive control)."""
    for name in LAYERS:
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text('"""x."""\n')
    (tmp_path / layer / "sub" / "bad.py").write_text(source)
    (tmp_path / "core" / "fine.py").write_text("from kvlib.core import units\n")
    (tmp_path / "cli" / "fine.py").write_text("from kvlib.views import style\n")
    found = violations(tmp_path)
    assert len(found) == 1, found
    assert all(w in found[0] for w in words), found


def test_notebook_names_are_importable_from_kvlib():
    import kvlib

    for name in kvlib.__all__:
        assert getattr(kvlib, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        kvlib.nope  # noqa: B018


def test_the_commands_of_the_makefile_are_runnable_modules():
    """`make figures` runs `python -m kvlib.views.figures`; `kvlib` is `python -m kvlib`."""
    import importlib.util

    for module in ("kvlib.views.figures.__main__", "kvlib.__main__"):
        assert importlib.util.find_spec(module) is not None, module
    makefile = (KVLIB.parent / "Makefile").read_text()
    assert "-m kvlib.views.figures figures" in makefile
