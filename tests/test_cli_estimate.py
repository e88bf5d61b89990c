"""`kvlib estimate`: JSON fields, readable table, and one-line errors with exit status 2."""

import json
import subprocess
import sys

import pytest

from kvlib.cli import main

GiB = 1024**3


def run(capsys, *argv):
    code = main(["estimate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0 and err == ""
    return json.loads(out)


def test_json_has_the_documented_fields(capsys):
    d = run_json(capsys, "gemma-3-27b", "--context", "131072")
    for key in ("model", "attention", "kv_dtype", "context", "batch", "kv_bytes_per_token",
                "kv_bytes_per_sequence", "kv_bytes_total", "groups", "assumptions"):
        assert key in d
    assert d["model"] == "gemma-3-27b" and d["attention"] == "GQA" and d["kv_dtype"] == "bf16"
    assert d["kv_bytes_per_token"] == 62 * 2 * 16 * 128 * 2
    assert d["kv_bytes_per_sequence"] == (10 * 2 * 16 * 128 * 2 * 131072
                                          + 52 * 2 * 16 * 128 * 2 * 1024)
    assert [(g["kind"], g["layers"], g["window"], g["bytes_per_token"]) for g in d["groups"]] == [
        ("full", 10, None, 10 * 2 * 16 * 128 * 2), ("sliding", 52, 1024, 52 * 2 * 16 * 128 * 2)]
    assert any("text_config" in a for a in d["assumptions"])


def test_json_batch_dtype_and_default_context(capsys):
    d = run_json(capsys, "llama-3.1-70b", "--batch", "4", "--kv-dtype", "fp8")
    assert d["context"] == 131072  # max_position_embeddings
    assert d["kv_bytes_per_token"] == 80 * 2 * 8 * 128 * 1
    assert d["kv_bytes_total"] == 4 * 80 * 2 * 8 * 128 * 131072 == 80 * GiB
    assert d["params"] == 70_600_000_000


def test_json_mla(capsys):
    d = run_json(capsys, "deepseek-v2", "--context", "1000", "--kv-dtype", "fp32")
    assert d["attention"] == "MLA"
    assert d["kv_bytes_per_token"] == 60 * (512 + 64) * 4
    assert d["groups"][0]["sizes"] == {"d_L": 512, "d_R": 64}


def test_json_from_a_path(capsys, tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096,
                             "num_attention_heads": 32, "num_key_value_heads": 8,
                             "sliding_window": 4096, "max_position_embeddings": 32768}))
    d = run_json(capsys, str(p))
    assert d["kv_bytes_per_sequence"] == 32 * 2 * 8 * 128 * 2 * 4096


def test_table_shows_groups_totals_and_assumptions(capsys):
    code, out, err = run(capsys, "gemma-3-27b")
    assert code == 0 and err == ""
    assert "507,904 B = 496 KiB" in out
    assert "11,173,625,856 B = 10.41 GiB" in out
    assert "sliding" in out and "1,024" in out and "assumptions:" in out


@pytest.mark.parametrize("argv, words", [
    (["no-such-model"], ["unknown model", "llama-3-70b", "gemma-3-27b", "deepseek-v2"]),
    (["missing/config.json"], ["not found", "missing/config.json"]),
    (["gpt2", "--context", "0"], ["--context", "'0'"]),
    (["gpt2", "--context", "abc"], ["--context", "'abc'"]),
    (["gpt2", "--batch", "-2"], ["--batch", "'-2'"]),
    (["gpt2", "--kv-dtype", "fp7"], ["--kv-dtype", "fp7"]),
])
def test_errors_are_one_line_and_exit_2(capsys, argv, words):
    try:  # bad option values stop in argparse (SystemExit), bad models in the command
        code = main(["estimate", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    for w in words:
        assert w in err


@pytest.mark.parametrize("content, words", [
    ("{not json", ["not valid JSON"]),
    ("[1, 2]", ["JSON object"]),
    ('{"num_hidden_layers": "80", "num_attention_heads": 64}', ["num_hidden_layers", "'80'"]),
    ('{"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 6,'
     ' "head_dim": 128}', ["num_key_value_heads=6", "num_attention_heads=64"]),
])
def test_bad_config_files(capsys, tmp_path, content, words):
    p = tmp_path / "config.json"
    p.write_text(content)
    code, out, err = run(capsys, str(p), "--context", "10")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    for w in words:
        assert w in err


def test_python_dash_m_has_no_traceback():
    r = subprocess.run([sys.executable, "-m", "kvlib", "estimate", "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("kvlib estimate: error: unknown model 'nope'")
    r = subprocess.run([sys.executable, "-m", "kvlib", "estimate", "llama-3-70b", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["kv_bytes_per_token"] == 327_680


def test_context_beyond_the_model_is_computed_but_flagged(capsys):
    out = run_json(capsys, "llama-3-70b", "--context", "131072")
    assert out["kv_bytes_per_sequence"] == 80 * 8 * (128 + 128) * 2 * 131072
    assert any("exceeds the config's max_position_embeddings 8,192" in a
               for a in out["assumptions"])
    within = run_json(capsys, "llama-3.1-70b", "--context", "131072")
    assert not any("exceeds" in a for a in within["assumptions"])


def test_default_context_is_reported(capsys):
    out = run_json(capsys, "llama-3-70b")
    assert out["context"] == 8192
    assert "context: the config's max_position_embeddings, 8,192 tokens" in out["assumptions"]


# --kv-dtype auto, the default, resolved as kvlib plan resolves it (issue 42 item 2): Llama 3.1
# 70B's shapes (80 layers, 8 KV heads, head_dim 8192 / 64 = 128) with ModelOpt's
# hf_quant_config.json beside config.json, as nvidia/Llama-3.1-70B-Instruct-FP8 ships them
from test_kv_auto import HF_QUANT, LLAMA_70B  # noqa: E402 - the same checkpoint as the plan's test


def _llama_folder(tmp_path, quant: bool):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_70B))
    if quant:
        (tmp_path / "hf_quant_config.json").write_text(json.dumps(HF_QUANT))
    return str(tmp_path)


def test_the_default_kv_dtype_is_the_checkpoints_as_the_plan_resolves_it(capsys, tmp_path):
    folder = _llama_folder(tmp_path, quant=True)
    d = run_json(capsys, folder, "--context", "8K")
    assert d["kv_dtype"] == "fp8_e4m3" and d["bytes_per_element"] == 1
    assert d["kv_bytes_per_token"] == 80 * 8 * 2 * 128 * 1 == 163_840
    assert d["kv_dtype_why"].startswith("kv_cache_dtype auto is fp8_e4m3: the checkpoint asks "
                                        "for it (quantization_config.quantization."
                                        "kv_cache_quant_algo='FP8')")
    code, out, _ = run(capsys, folder, "--context", "8K")
    lines = out.splitlines()
    assert code == 0
    assert lines[2] == ("KV dtype fp8_e4m3 (auto: the checkpoint asks for it; 1 B/element), "
                        "context 8,192 tokens, batch 1")
    assert lines[3] == f"kv dtype: {d['kv_dtype_why']}"
    # the plan resolves the same folder to the same dtype (its first line and --json)
    assert main(["plan", folder, "--gpu", "H200", "--context", "8K", "--params", "70.6B",
                 "--weight-dtype", "fp8", "--json"]) in (0, 1)  # 1: does not fit one GPU
    plan = json.loads(capsys.readouterr().out)
    assert (plan["kv_dtype"], plan["kv_dtype_why"]) == ("fp8_e4m3", d["kv_dtype_why"])


def test_the_default_kv_dtype_is_the_models_where_the_checkpoint_asks_none(capsys, tmp_path):
    folder = _llama_folder(tmp_path, quant=False)
    d = run_json(capsys, folder, "--context", "8K")
    assert d["kv_dtype"] == "bf16" and d["kv_bytes_per_token"] == 80 * 8 * 2 * 128 * 2
    assert d["kv_dtype_why"].startswith("kv_cache_dtype auto is the model's dtype, bf16")
    code, out, _ = run(capsys, folder, "--context", "8K")
    assert "KV dtype bf16 (auto: the model's dtype; 2 B/element), context 8,192" in out
    assert f"  - kv dtype: {d['kv_dtype_why']}" in out.splitlines()
    # a dtype given is taken as given, with no reason to give
    d = run_json(capsys, folder, "--context", "8K", "--kv-dtype", "bf16")
    assert d["kv_dtype"] == "bf16" and d["kv_dtype_why"] is None
    code, out, _ = run(capsys, folder, "--context", "8K", "--kv-dtype", "fp8")
    assert "KV dtype fp8 (1 B/element)" in out and "auto" not in out


def test_a_model_that_stores_its_own_bytes_names_the_flag_as_given(capsys):
    """DeepSeek V4's groups store their own bytes whatever the KV dtype: the header names the
    flag as given (auto by default), not what auto would have become."""
    code, out, _ = run(capsys, "deepseek-v4-flash", "--context", "8K")
    assert code == 0 and out.splitlines()[2].startswith(
        "KV dtype not used (--kv-dtype auto): every group stores its own bytes")
    code, out, _ = run(capsys, "deepseek-v4-flash", "--context", "8K", "--kv-dtype", "fp8")
    assert out.splitlines()[2].startswith("KV dtype not used (--kv-dtype fp8):")
