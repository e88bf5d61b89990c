"""Issue 42 item 6: the catalog loads without SymPy, a closed pipe is not an error, and a JSON
file that is not a model config is named and described in one line."""

import json
import subprocess
import sys

import sympy as sp

from kvlib.cli import main


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)


def test_the_catalog_and_the_config_readers_load_without_sympy():
    """Reading a config needs no SymPy: kvlib.core.compression derives its expressions on first
    use, and the DeepSeek V4 reader imports the formulas where it reads a V4 config."""
    out = _python("import sys, kvlib.models.catalog, kvlib.models.estimate\n"
                  "print('sympy' in sys.modules)")
    assert out.stdout.strip() == "False"


def test_compression_derives_its_expressions_on_first_access():
    """The lazily derived names are the same expressions, importable by name as before."""
    from kvlib.core import compression as C
    from kvlib.core.compression import MXFP4_KEY, SHARED_MEMORY_RATIO
    from kvlib.core.notation import d_I, r_s

    assert MXFP4_KEY == d_I.symbol / 2 + d_I.symbol / 32
    assert SHARED_MEMORY_RATIO == r_s.symbol
    assert C.overlap(4) == 2 and C.overlap(128) == 1
    assert isinstance(C.COMPRESSED_LIMIT, sp.Expr)
    assert set(C.__all__) <= set(dir(C))


def test_output_to_a_closed_pipe_ends_quietly_with_status_0():
    """`kvlib plan ... | head -1`: the reader closes the pipe before kvlib writes."""
    p = subprocess.Popen([sys.executable, "-m", "kvlib", "plan", "llama-3.1-8b", "--gpu",
                          "H100-80GB"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # closed before the interpreter has even started
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0
    assert err == ""


def test_a_json_file_that_is_not_a_config_is_named_and_described(tmp_path, capsys):
    path = tmp_path / "package.json"
    path.write_text(json.dumps({"name": "x", "version": "1.0", "dependencies": {}}))
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert (f"{path} is not a model config.json: it is a JSON object with the keys name, "
            "version, dependencies, and the config has no num_hidden_layers or n_layer, "
            "model_type, architectures or text_config") in err


def test_an_empty_json_file_is_named_too(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text("{}")
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} is not a model config.json: it is an empty JSON object" in err
    assert "config has no num_hidden_layers or n_layer" in err  # the widget's words too
