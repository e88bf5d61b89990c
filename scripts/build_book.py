"""Build the notebooks as a static, offline HTML book (``make book``; issue 15).

Sphinx + MyST-NB + sphinx-book-theme render each notebook with its *stored* outputs
(no execution) into ``build/book/`` (docs/publishing.md says why this toolchain and how to
publish the result). This script prepares a source folder for Sphinx, then runs it:

1. MathJax 3 from the npm registry, pinned by version *and* by the registry's sha512
   integrity (``npm pack``, cached in ``build/cache/``), copied into the site's ``_static`` so
   the book loads no script, font or stylesheet from another host.
2. ``build/book-src/``: the configuration and landing page of ``book/``, README.md (the landing
   page includes its sections; its links rewritten as a notebook's, :func:`book_links`),
   ``figures/``, the formula sheet (``docs/formula_sheet.md``, its links to other pages of
   ``docs/`` written as their paths; :func:`formula_sheet_page`), and a
   copy of every notebook (the lessons ``notebooks/NN_*.ipynb`` in ``notebooks/``, the engines
   track ``notebooks/engines/*.ipynb`` in ``notebooks/engines/``, a part of the book with its own
   section on the landing page: :func:`engines_section`) with two changes:
   - exercise solutions (cell tag ``solution``) get MyST-NB's ``hide-cell`` tag: input and output
     are folded behind a "Show solution" button;
   - a Markdown link to a file of the repository that the book does not hold (``../docs/x.md``)
     becomes its path in the repository, as text; one to ``notebooks/engines/`` (the folder)
     leads to the landing page's engines-track section (:func:`book_links`);
   - after each live-widget cell (one that builds a kvlib Explorer): where the page has the
     explorer (:data:`LIVE_EXPLORERS`: notebooks 02, 04-08; issue 27), a note and the
     explorer itself, which runs in the page; elsewhere a note that the book shows the widget's
     static output and how to run it live;
   - ``_static/kvlib_formulas.js``: kvlib's SymPy formulas printed as JavaScript, with the
     bundled models as data (:mod:`kvlib.views.book_js`), which the page's explorers
     (``book/_static/kvlib_explorers.js``) call.
   Files are rewritten only when their content changes, so Sphinx rebuilds only what changed.
3. ``sphinx-build -b html`` into ``build/book/``; open ``build/book/index.html``.

Usage: python scripts/build_book.py [--out build/book] [--pages DIR] [--notebooks NB ...]
       [--strict]
``--pages`` replaces book/'s pages (not its conf.py or _static) with another folder's
(the browser test's fixture book); ``--strict`` turns Sphinx warnings into errors.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from html import escape
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "book"
if str(REPO) not in sys.path:  # this checkout's kvlib, which generates the explorers' formulas
    sys.path.insert(0, str(REPO))

# MathJax: the npm package, pinned by version and by the sha512 the registry publishes
# (`npm view mathjax@3.2.2 dist.integrity`). A different tarball fails the build.
MATHJAX_VERSION = "3.2.2"
MATHJAX_INTEGRITY = ("sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/"
                     "FEsPsjKPZGJvtRZM1vO+geW0OhGw==")
# What the tex-mml-chtml combined component loads at run time; the SVG output and the
# other combined bundles are left out (8 of 24 MB).
MATHJAX_FILES = ("tex-mml-chtml.js",)
MATHJAX_DIRS = ("input/", "output/chtml/", "a11y/", "ui/", "sre/", "adaptors/")
CACHE = Path(os.environ.get("KVLIB_BOOK_CACHE", REPO / "build" / "cache"))

# A code cell that builds a kvlib Explorer (same rule as tests/browser).
BUILDS_EXPLORER = re.compile(r"(?i)\b\w*explorer\(")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SOLUTION_TAG = "solution"
SOLUTION_PROMPTS = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}
LIVE_WIDGET_NOTE = """\
```{{admonition}} Live widget
:class: tip kvlib-live-widget
The cell above builds an interactive explorer, which needs a running Python kernel. The book
shows its computation with fixed values in the static output just before it. To move
the controls yourself, clone the repository, run `make lab`, open `{name}` and choose
*Run > Run All Cells*.
```"""

# Explorers that run in the page (issue 27): the function a cell calls -> the page's explorer
# (book/_static/kvlib_explorers.js) and the kvlib module whose defaults it starts from.
LIVE_EXPLORERS = {
    "gqa_explorer": ("gqa", "kvlib.views.widgets.gqa"),
    "hybrid_explorer": ("hybrid", "kvlib.views.widgets.hybrid"),
    "model_explorer": ("models", "kvlib.views.widgets.models"),
    "rope_explorer": ("rope", "kvlib.views.widgets.mla"),
    "planner_explorer": ("planner", "kvlib.views.widgets.capacity"),
    "compressed_explorer": ("compressed", "kvlib.views.widgets.compressed"),
}
LIVE_EXPLORER_NOTE = """\
```{{admonition}} Live explorer
:class: tip kvlib-live-widget
The explorer below runs in this page, with no kernel and no network: the same controls and
readout as the notebook's widget, computed by JavaScript that the book's build generated from
kvlib's SymPy formulas (exact integers), with a chart that follows the controls.{extra}
```

<div class="kvlib-explorer" data-explorer="{kind}" data-init="{init}"></div>
"""
LIVE_EXPLORER_EXTRA = {
    "planner": " Planning a pasted config.json (and its parameter count) needs the notebook "
               "(`make lab`, open `{name}`); the page offers the bundled models.",
    "models": " Reading a pasted config.json needs the notebook (`make lab`, open "
              "`{name}`); the page offers the bundled models.",
    "hybrid": " Reading a pasted config.json needs the notebook (`make lab`, open "
              "`{name}`); the page offers the bundled models.",
}
FORMULAS_JS = "kvlib_formulas.js"  # generated into _static by kvlib.views.book_js

# The engines track (issue 40): notebooks/engines/*.ipynb, a part of the book of its own. The
# landing page (book/index.md) holds this marker where the build lists the track's chapters.
ENGINES = "engines"
ENGINES_MARKER = "<!-- engines track: scripts/build_book.py lists notebooks/engines/ here -->"
ENGINES_TOC_MARKER = "<!-- engines track: scripts/build_book.py puts its navigation here -->"


class BookBuildError(RuntimeError):
    """The book could not be built (message: what to do)."""


# ---------------------------------------------------------------- MathJax


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def mathjax_tarball(cache: Path = CACHE) -> Path:
    """The pinned MathJax npm tarball, fetched once with ``npm pack`` into ``cache``."""
    tgz = cache / f"mathjax-{MATHJAX_VERSION}.tgz"
    if not tgz.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise BookBuildError(
                "npm not found: the book takes MathJax from the npm registry "
                f"(mathjax@{MATHJAX_VERSION}). Install Node.js's npm (`apt-get install npm`), "
                f"or put mathjax-{MATHJAX_VERSION}.tgz in {cache}")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            # --ignore-scripts: a pack runs no package script; the tarball is only unpacked.
            r = subprocess.run([npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent",
                                "--ignore-scripts", "--pack-destination", tmp],
                               capture_output=True, text=True, timeout=300)
            got = Path(tmp) / tgz.name
            if r.returncode != 0 or not got.exists():
                raise BookBuildError(f"npm pack mathjax@{MATHJAX_VERSION} failed:\n"
                                     f"{r.stdout}{r.stderr}")
            os.replace(got, tgz)  # atomic: parallel builds share the cache
    data = tgz.read_bytes()
    if _integrity(data) != MATHJAX_INTEGRITY:
        raise BookBuildError(f"{tgz}: sha512 differs from the pinned integrity of "
                             f"mathjax@{MATHJAX_VERSION}; delete the file and build again")
    return tgz


def install_mathjax(dest: Path, cache: Path = CACHE) -> None:
    """Unpack the needed part of MathJax's ``es5/`` folder into ``dest`` (once per version)."""
    stamp = dest / f".mathjax-{MATHJAX_VERSION}"
    if stamp.exists():
        return
    data = mathjax_tarball(cache).read_bytes()
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            if rel == "LICENSE":
                pass
            elif member.isfile() and rel.startswith("es5/"):
                rel = rel.removeprefix("es5/")
                if not (rel in MATHJAX_FILES or rel.startswith(MATHJAX_DIRS)):
                    continue
            else:
                continue
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(tar.extractfile(member).read())
    stamp.write_text(MATHJAX_INTEGRITY + "\n")


# ---------------------------------------------------------------- the source folder


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _sync_tree(src: Path, dest: Path, skip: tuple[str, ...] = ()) -> set[Path]:
    """Copy files of ``src`` under ``dest`` (content-compared); return the paths written."""
    written = set()
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if f.is_file() and not any(part in skip for part in rel.parts):
            _write_if_changed(dest / rel, f.read_bytes())
            written.add(dest / rel)
    return written


def _literal_defaults(module: str, name: str) -> dict:
    """The literal defaults of function ``name`` in kvlib module ``module``, read from its
    source (importing the widgets would cost the build seconds of Matplotlib and ipywidgets)."""
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
    pairs = [*zip(args, fn.args.defaults, strict=True),
             *((a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
               if d is not None)]
    out = {}
    for arg, default in pairs:
        try:
            out[arg.arg] = ast.literal_eval(default)
        except ValueError:  # a name or a call (CHECKPOINT): the page takes kvlib's start
            pass
    return out


def live_explorer(source: str) -> tuple[str, dict] | None:
    """(page explorer, starting values) for a cell that calls a live explorer, else None.

    The starting values are the call's literal keywords over the function's literal defaults;
    a keyword or default that is not a literal (notebook 04's ``start=price_view``), or None,
    is left out, and the page's explorer starts there from kvlib's own start."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in LIVE_EXPLORERS):
            continue
        kind, module = LIVE_EXPLORERS[node.func.id]
        init = _literal_defaults(module, node.func.id)
        for kw in node.keywords:
            try:
                init[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                pass
        return kind, {k: v for k, v in init.items() if v is not None}
    return None


def formulas_module(stamp: Path) -> tuple[str, bytes | None]:
    """(digest of kvlib's sources, the text of ``kvlib_formulas.js``), the text None when
    ``stamp`` holds the same digest: the file was generated from these sources (a rebuild
    skips the seconds of SymPy printing and planning; :func:`kvlib.views.book_js.module_text`)."""
    digest = hashlib.sha256()
    for f in sorted((REPO / "kvlib").rglob("*")):
        if f.is_file() and f.suffix in (".py", ".json") and "__pycache__" not in f.parts:
            digest.update(f.relative_to(REPO).as_posix().encode() + b"\0" + f.read_bytes())
    key = digest.hexdigest()
    if stamp.exists() and stamp.read_text().strip() == key:
        return key, None
    from kvlib.views.book_js import module_text  # SymPy -> JavaScript (issue 27)

    return key, module_text().encode()


def default_notebooks() -> list[Path]:
    """Every chapter of the book: the lessons, then the engines track."""
    notebooks = REPO / "notebooks"
    return sorted(notebooks.glob("*.ipynb")) + sorted((notebooks / ENGINES).glob("*.ipynb"))


def book_path(path: Path) -> str:
    """Where a notebook sits in the book (and in the repository): ``notebooks/NAME`` for a
    lesson, ``notebooks/engines/NAME`` for the engines track (a notebook in a folder named
    ``engines``)."""
    track = f"{ENGINES}/" if path.parent.name == ENGINES else ""
    return f"notebooks/{track}{path.name}"


def _title(path: Path) -> str:
    """A notebook's first Markdown heading, without its #s."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#+\s+(.+?)\s*$", cell.source, re.M)
            if m:
                return m.group(1)
    return path.stem


def engines_section(notebooks: list[Path]) -> tuple[str, str]:
    """(the landing page's list of the engines track, a link per chapter; the track's own part
    of the navigation, a toctree captioned "Engines track", after the lessons' part)."""
    track = [p for p in notebooks if p.parent.name == ENGINES]
    if not track:
        return "The engines track has no chapters in this build.", ""
    links = "\n".join(f"- [{_title(p)}]({book_path(p)})" for p in track)
    entries = "\n".join(book_path(p).removesuffix(".ipynb") for p in track)
    return links, f"```{{toctree}}\n:hidden:\n:caption: Engines track\n\n{entries}\n```"


# A Markdown link or image: [text](target) / ![alt](target), the target without spaces.
_MD_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def book_links(source: str, where: str) -> str:
    """``source`` (a Markdown cell of the notebook at repository path ``where``) with each
    relative link to a file the book does not hold rewritten, so a strict build resolves every
    link: the repository's README and the folders notebooks/ and notebooks/engines/ lead to the
    landing page (its engines-track section); docs/formula_sheet.md to the book's formula
    sheet; any other file outside notebooks/ and figures/ (``../docs/vllm.md``) becomes its
    text and its path in the repository, as code (``docs/vllm.md``)."""
    folder = Path(where).parent

    def rewrite(m: re.Match) -> str:
        bang, text, target = m.groups()
        if bang or re.match(r"^[a-z][a-z0-9+.-]*:|^#", target, re.I):
            return m.group(0)  # an image, a URL or an anchor on this page
        file, _, anchor = target.partition("#")
        repo = os.path.normpath(folder / file).replace(os.sep, "/")
        if repo.startswith("../"):
            return m.group(0)  # outside the repository: not ours to judge
        up = "../" * len(folder.parts)  # from this page to the book's root
        if repo in ("notebooks", "notebooks/engines", "README.md"):
            section = "#the-engines-track" if repo == "notebooks/engines" else ""
            return f"[{text}]({up}index.md{section})"
        if repo == f"docs/{FORMULA_SHEET}":
            return f"[{text}]({up}{FORMULA_SHEET}{'#' + anchor if anchor else ''})"
        if repo.startswith(("notebooks/", "figures/")):
            return m.group(0)  # a page or figure of the book
        shown = f"`{repo}`"
        return shown if text.strip("`") == repo else f"{text} ({shown})"

    return _MD_LINK.sub(rewrite, source)


def book_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook as the book shows it: solutions folded, a note after each live widget,
    links to files the book does not hold rewritten (:func:`book_links`)."""
    nb = nbformat.read(path, as_version=4)
    name = book_path(path)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = book_links(cell.source, name)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        tags = list(cell.metadata.get("tags", []))
        if SOLUTION_TAG in tags:
            cell.metadata["tags"] = tags + ["hide-cell"]
            cell.metadata.setdefault("mystnb", {}).update(SOLUTION_PROMPTS)
        # Widget views need a kernel (their state is not stored): drop them, keep the rest.
        for out in cell.get("outputs", []):
            out.get("data", {}).pop(WIDGET_VIEW, None)
        cell.outputs = [o for o in cell.get("outputs", [])
                        if o.get("output_type") not in ("display_data", "execute_result")
                        or o.get("data")]
        if BUILDS_EXPLORER.search(cell.source):
            live = live_explorer(cell.source)
            if live is None:
                note = nbformat.v4.new_markdown_cell(LIVE_WIDGET_NOTE.format(name=name))
            else:
                kind, init = live
                extra = LIVE_EXPLORER_EXTRA.get(kind, "").format(name=name)
                note = nbformat.v4.new_markdown_cell(LIVE_EXPLORER_NOTE.format(
                    kind=kind, init=escape(json.dumps(init, sort_keys=True)), extra=extra))
            note.id = f"kvlib-live-widget-{len(cells)}"  # fixed: an unchanged copy stays as is
            cells.append(note)
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb


FORMULA_SHEET = "formula_sheet.md"  # docs/formula_sheet.md, a page of the book (issue 36)
_DOCS_LINK = re.compile(r"\[([^\]]+)\]\(([\w.-]+\.md)(#[^)\s]*)?\)")


def formula_sheet_page() -> str:
    """docs/formula_sheet.md as the book shows it: a link to another page of docs/, which the
    book does not hold, becomes that page's path in the repository (`docs/capacity.md`)."""
    text = (REPO / "docs" / FORMULA_SHEET).read_text(encoding="utf-8")
    return _DOCS_LINK.sub(lambda m: f"`docs/{m.group(2)}`", text)


def stage(src: Path, notebooks: list[Path], pages: Path | None = None) -> None:
    """Fill the Sphinx source folder ``src`` (stale files removed)."""
    if pages is not None:  # the configuration stays book/'s; the pages come from `pages`
        _write_if_changed(src / "conf.py", (BOOK / "conf.py").read_bytes())
        keep = {src / "conf.py"} | _sync_tree(BOOK / "_static", src / "_static")
        keep |= _sync_tree(pages, src, skip=("__pycache__",))
    else:
        keep = _sync_tree(BOOK, src, skip=("__pycache__", "index.md"))
        index = (BOOK / "index.md").read_text(encoding="utf-8")
        links, toc = engines_section(notebooks)
        index = index.replace(ENGINES_MARKER, links).replace(ENGINES_TOC_MARKER, toc)
        _write_if_changed(src / "index.md", index.encode())
        keep.add(src / "index.md")
        readme = book_links((REPO / "README.md").read_text(encoding="utf-8"), "README.md")
        _write_if_changed(src / "README.md", readme.encode())
        _write_if_changed(src / FORMULA_SHEET, formula_sheet_page().encode())
        keep |= {src / "README.md", src / FORMULA_SHEET}
        keep |= _sync_tree(REPO / "figures", src / "figures")
    for nb_path in notebooks:
        out = src / book_path(nb_path)
        _write_if_changed(out, nbformat.writes(book_notebook(nb_path)).encode())
        keep.add(out)
    formulas, stamp = src / "_static" / FORMULAS_JS, src / f".{FORMULAS_JS}.sha256"
    if not formulas.exists():
        stamp.unlink(missing_ok=True)
    key, text = formulas_module(stamp)
    if text is not None:
        _write_if_changed(formulas, text)
        stamp.write_text(key + "\n")
    keep |= {formulas, stamp}
    mathjax = src / "_static" / "mathjax"
    install_mathjax(mathjax)
    for f in src.rglob("*"):
        if f.is_file() and f not in keep and mathjax not in f.parents:
            f.unlink()


def build(out: Path, notebooks: list[Path], pages: Path | None = None,
          strict: bool = False, quiet: bool = True) -> float:
    """Stage and run Sphinx; return the seconds it took. Raises BookBuildError."""
    out = Path(out).resolve()
    work = out.parent / f"{out.name}-src"
    t0 = time.perf_counter()
    stage(work, notebooks, pages)
    doctrees = out.parent / f"{out.name}-doctrees"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-d", str(doctrees),
           str(work), str(out)]
    if quiet:
        cmd.insert(3, "-q")
    if strict:
        cmd[3:3] = ["-W", "--keep-going"]
    r = subprocess.run(cmd, cwd=work, env=dict(os.environ, PYTHONHASHSEED="0"))
    if r.returncode != 0:
        raise BookBuildError(f"sphinx-build failed (exit {r.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "book")
    ap.add_argument("--pages", type=Path, default=None)
    ap.add_argument("--notebooks", type=Path, nargs="*", default=None)
    ap.add_argument("--strict", action="store_true", help="Sphinx warnings are errors")
    args = ap.parse_args(argv)
    notebooks = default_notebooks() if args.notebooks is None else args.notebooks
    try:
        seconds = build(args.out, notebooks, args.pages, strict=args.strict)
    except BookBuildError as err:
        print(f"build_book: {err}", file=sys.stderr)
        return 1
    print(f"book built in {seconds:.1f} s: {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
