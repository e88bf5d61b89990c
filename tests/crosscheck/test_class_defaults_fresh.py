"""The shipped kvlib/models/readers/class_defaults.json, regenerated from the transformers
installed (5.25.0, the crosscheck extra) by scripts/class_defaults.py and compared whole; and
every constant's cited line read in transformers' own source."""

import importlib.util
import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "kvlib" / "models" / "readers" / "class_defaults.json"


def _script():
    spec = importlib.util.spec_from_file_location("class_defaults_script",
                                                  ROOT / "scripts" / "class_defaults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fresh() -> dict:
    return _script().generate()


def test_transformers_is_the_release_the_table_was_written_from():
    assert transformers.__version__ == json.loads(SHIPPED.read_text())["transformers"]


def test_the_shipped_table_is_what_transformers_builds(fresh):
    shipped = json.loads(SHIPPED.read_text())
    assert fresh["checked"] == shipped["checked"]
    for model_type in sorted(set(fresh["families"]) | set(shipped["families"])):
        assert fresh["families"].get(model_type) == shipped["families"].get(model_type), model_type
    assert fresh == shipped


def test_each_constant_is_on_the_line_cited():
    """The cited line names the key (or the class's alias for it) and the value."""
    base = Path(transformers.__file__).resolve().parent
    families = json.loads(SHIPPED.read_text())["families"]
    bad = []
    for model_type, scopes in families.items():
        for scope, rules in scopes.items():
            for key, rule in rules.items():
                if rule["rule"] != "constant":
                    continue
                path, line = rule["source"].rsplit(":", 1)
                text = (base / path.removeprefix("transformers/")).read_text().splitlines()
                cited = text[int(line) - 1]
                if str(rule["value"]) not in cited:
                    bad.append((model_type, scope, key, rule["source"], cited.strip()))
    assert not bad, bad[:10]
