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
    ("import kvlib.serving.engines.vllm.plan\n", "models",
     ["models imports kvlib.serving.engines.vllm.plan"]),
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


# --- import cycles and the engines layer (issue 41) ---------------------------------------
#
# The graph: one node per kvlib module (a package is its __init__), one edge per import
# statement at any depth (function-level and ``if TYPE_CHECKING:`` imports count, as they are
# statements a reader follows); ``from pkg import name`` points at ``pkg.name`` where that is
# a module, else at ``pkg``. The parent packages Python initialises on the way to a module are
# not edges: every module would otherwise sit in a cycle with its own package's __init__.

ENGINES = "kvlib.serving.engines"
ENGINE_FOLDERS = ("vllm", "sglang", "trtllm")


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(("kvlib", *parts))


def import_graph(root: Path) -> dict[str, set[str]]:
    """kvlib module -> the kvlib modules it imports (see above), for the package at ``root``."""
    paths = {module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in paths else module
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in paths and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def folder_of(module: str) -> str | None:
    """The engine folder ``module`` belongs to ("vllm", ...), None outside every folder."""
    rest = module[len(ENGINES) + 1:].split(".") if module.startswith(ENGINES + ".") else []
    return rest[0] if rest and rest[0] in ENGINE_FOLDERS else None


def engine_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that break the engines layer: shared serving code (``kvlib.serving.*``,
    the engines' shared modules) importing an engine folder, which only the registry
    (``kvlib.serving.engines``) and the layers above serving may do, and an engine folder
    importing another's."""
    out = []
    for module, targets in sorted(graph.items()):
        if not module.startswith("kvlib.serving") or module == ENGINES:
            continue
        own = folder_of(module)
        for target in sorted(targets):
            folder = folder_of(target)
            if folder is None or folder == own:
                continue
            what = (f"engine folder {own!r} imports another engine's" if own else
                    "shared serving code imports an engine folder")
            out.append(f"{module} -> {target}: {what} (only {ENGINES} may)")
    return out


def test_no_import_cycles():
    assert cycles(import_graph(KVLIB)) == []


def test_the_engines_layer_keeps_its_folders_apart():
    graph = import_graph(KVLIB)
    assert engine_violations(graph) == []
    for folder in ENGINE_FOLDERS:  # each folder exists, with its parts
        assert f"{ENGINES}.{folder}" in graph, folder
        for part in ("defaults", "budget", "log"):
            assert f"{ENGINES}.{folder}.{part}" in graph, (folder, part)


def test_nothing_about_vllm_lives_outside_its_folder():
    """No serving module outside engines/vllm/ is named after vLLM, and none defines vLLM's
    defaults or release names (they live in engines/vllm/defaults.py)."""
    found = []
    for path in sorted((KVLIB / "serving").rglob("*.py")):
        if folder_of(module_name(KVLIB, path)) == "vllm":
            continue
        if "vllm" in path.stem:
            found.append(str(path.relative_to(KVLIB)))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and "vllm" in node.name.lower():
                found.append(f"{path.relative_to(KVLIB)}: {node.name}")
            if isinstance(node, ast.Assign):
                found += [f"{path.relative_to(KVLIB)}: {t.id}" for t in node.targets
                          if isinstance(t, ast.Name) and "VLLM" in t.id]
    assert found == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from kvlib import b\n", "b.py": "def f():\n    from kvlib.a import x\n"},
     [["kvlib.a", "kvlib.b"]]),
    ({"a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kvlib.b import B\n",
      "b.py": "import kvlib.c\n", "c.py": "from .a import y\n"},
     [["kvlib.a", "kvlib.b", "kvlib.c"]]),
    ({"p/__init__.py": "from kvlib.p.q import x\n", "p/q.py": "import math\n"}, []),
])
def test_an_import_cycle_is_caught(tmp_path, files, expected):
    """Positive controls: a cycle through a function-level import, one through a
    TYPE_CHECKING import and a relative one; a package importing its own module is none."""
    assert cycles(import_graph(_tree(tmp_path, files))) == expected


@pytest.mark.parametrize("module, source, words", [
    ("serving/kv.py", "from kvlib.serving.engines.vllm.x import X\n",
     "shared serving code imports an engine folder"),
    ("serving/engines/common.py", "from kvlib.serving.engines import sglang\n",
     "shared serving code imports an engine folder"),
    ("serving/engines/sglang/pools.py", "def f():\n    from kvlib.serving.engines.vllm import x\n",
     "engine folder 'sglang' imports another engine's"),
])
def test_an_engine_import_across_folders_is_caught(tmp_path, module, source, words):
    files = {f"serving/engines/{e}/__init__.py": "" for e in ENGINE_FOLDERS}
    files |= {f"serving/engines/{e}/x.py": "" for e in ENGINE_FOLDERS}
    files |= {"serving/engines/__init__.py": "from kvlib.serving.engines import vllm, sglang\n",
              "serving/engines/common.py": "", "serving/kv.py": "",
              "serving/engines/sglang/pools.py": "from kvlib.serving.engines.sglang import x\n"}
    files[module] = source
    found = engine_violations(import_graph(_tree(tmp_path, files)))
    assert len(found) == 1 and words in found[0], found
