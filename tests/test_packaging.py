"""pyproject.toml and environment.yml must list the same packages at the same versions.

environment.yml is the learner's environment (conda, Binder): the dependencies and the `lab`
extra; the `dev` extra (make test) holds the lab's pins too, so a learner and a tester run the
notebooks on the same versions.
"""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + project["optional-dependencies"]["lab"]
    pins = {}
    for r in reqs:
        name, version = r.split("==")
        pins[name.lower()] = version
    return pins


def _conda_pins():
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"^\s+-\s+([A-Za-z0-9_.-]+)=([0-9][^\s=]*)\s*$", line)
        if m and m.group(1) != "python":
            pins[m.group(1).lower()] = m.group(2)
    return pins


def test_every_dependency_is_pinned_exactly():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for r in project["dependencies"] + sum(project["optional-dependencies"].values(), []):
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", r), r


def test_environment_yml_matches_pyproject():
    assert _conda_pins() == _pyproject_pins()


def test_python_versions_agree():
    env = (ROOT / "environment.yml").read_text()
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.search(r"-\s+python=(3\.\d+)", env)
    assert m and requires == f">={m.group(1)}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_lab_extra_is_inside_dev_at_the_same_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(extras["lab"]) <= set(extras["dev"])


def test_the_learner_environment_runs_every_notebook_import():
    """What Binder / conda builds from environment.yml (runtime + lab) covers every import in
    the notebooks: standard library, kvlib, or a package of the environment."""
    import json
    import sys

    env = set(_conda_pins()) | {"kvlib", "IPython".lower()}  # IPython comes with ipykernel
    modules = {"sympy": "sympy", "numpy": "numpy", "matplotlib": "matplotlib",
               "ipywidgets": "ipywidgets", "IPython": "ipython", "kvlib": "kvlib"}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            for m in re.finditer(r"^\s*(?:from|import) ([A-Za-z_][\w]*)", "".join(cell["source"]),
                                 re.M):
                top = m.group(1)
                if top in sys.stdlib_module_names:
                    continue
                assert top in modules and modules[top] in env, (path.name, top)


def test_binder_installs_kvlib_from_the_root_environment():
    """What repo2docker does with this repository (its 2026.4.0 release, buildpacks/conda):
    it reads environment.yml from binder/ or .binder/ when either exists, else from the root;
    and it installs that file before copying the repository, *unless* its pip section names
    a local path, when it copies the repository first. Our `-e .` is such a path, so the
    build can install kvlib. `jupyter-repo2docker --no-build --debug .` printed the
    Dockerfile that does this (docs/publishing.md); building the image needs Docker."""
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists(), \
        "a binder/ folder would hide the root environment.yml from repo2docker"
    text = (ROOT / "environment.yml").read_text()
    pip = text[text.index("  - pip:"):]
    assert re.search(r"^\s+-\s+-e\s+\.\s*$", pip, re.M), "kvlib itself must be in the pip list"
    assert re.search(r"^\s+-\s+python=3\.11\s*$", text, re.M)  # the version outputs are stored on


def test_every_data_file_kvlib_ships_is_package_data():
    """A wheel carries only the data files package-data names: every .json under kvlib/ (the
    bundled configs, engine_keys.json, the readers' class_defaults.json) must match one, or an
    installed kvlib fails where it opens it."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    kvlib = ROOT / "kvlib"
    missing = []
    for path in kvlib.rglob("*.json"):
        rel = path.relative_to(kvlib)
        ok = any(path.relative_to(kvlib / package.removeprefix("kvlib").strip(".").replace(
                     ".", "/")).match(glob)
                 for package, globs in data.items() for glob in globs
                 if path.is_relative_to(kvlib / package.removeprefix("kvlib").strip(".")
                                        .replace(".", "/")))
        if not ok:
            missing.append(str(rel))
    assert not missing, missing
