"""The commands as people type them (issue 14, "The CLI as people type it")."""

import json
import subprocess
import sys

import pytest

from kvlib.cli import main
from kvlib.cli.args import parse_tokens


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("name", ["llama-3.1-70B", "Llama-3.1-70b", "llama3.1-70b",
                                  "meta-llama/Llama-3.1-70B", "META-LLAMA/llama-3.1-70b"])
def test_model_names_match_as_typed(capsys, name):
    rc, out, err = run(capsys, "estimate", name, "--context", "8192", "--json")
    assert rc == 0, err
    d = json.loads(out)
    # Llama 3.1 70B: 80 layers x 2 x 8 KV heads x 128 x 2 B = 327,680 B per token
    assert d["model"] == "llama-3.1-70b" and d["kv_bytes_per_token"] == 80 * 2 * 8 * 128 * 2


def test_an_unknown_name_gets_the_closest_suggestions(capsys):
    rc, out, err = run(capsys, "estimate", "lama-3.1-70b")
    assert rc == 2 and out == ""
    assert err.startswith("kvlib estimate: error: unknown model 'lama-3.1-70b': did you mean "
                          "llama-3.1-70b")


@pytest.mark.parametrize("text, tokens", [("131072", 131072), ("131,072", 131072),
                                          ("131_072", 131072), ("128k", 128 * 1024),
                                          ("128K", 131072), ("1M", 1024 * 1024), (" 8192 ", 8192)])
def test_context_as_people_write_it(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["0", "-5", "12x", "1.5K", "128 KB", "13,1072", "", "1e5"])
def test_a_bad_context_is_one_line_the_same_in_both_commands(capsys, text):
    errors = []
    for command in (["estimate", "gpt2"], ["plan", "gpt2", "--gpu", "H200"]):
        rc, out, err = run(capsys, *command, "--context", text)
        assert rc == 2 and out == "" and err.count("\n") == 1
        errors.append(err.split(": error: ", 1)[1])
    assert errors[0] == errors[1]
    assert errors[0].startswith("argument --context: must be a whole number of tokens such as "
                                "131072, 131,072 or 128K (K = 1024 tokens")


def test_plan_defaults_the_context_to_the_models_maximum_and_says_so(capsys):
    rc, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "H200", "--json")
    d = json.loads(out)
    assert d["context"] == 131072  # Llama 3.1 8B's max_position_embeddings
    assert "context: the config's max_position_embeddings, 131,072 tokens" in d["notes"]


def test_an_overridden_memory_is_said(capsys):
    rc, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "A100-80GB", "--hbm-gib", "40",
                     "--context", "8K")
    assert rc == 0
    # 40 GiB = 42,949,672,960 B; usable 0.9 x that, floored
    assert "memory per GPU" in out and "42.95 GB = 40 GiB" in out
    assert ("note: memory per GPU: --hbm-gib 40 overrides the catalog's 80 GB A100-80GB; "
            "the bandwidth is still the A100-80GB's (2,039 GB/s)") in out


def test_a_percentage_is_refused_with_the_fraction_it_meant(capsys):
    rc, out, err = run(capsys, "plan", "gpt2", "--gpu", "H200", "--gpu-mem-util", "90")
    assert rc == 2 and "Fraction" not in err
    assert err == ("kvlib plan: error: argument --gpu-mem-util: must be a number in (0, 1] "
                   "such as 0.9, got '90' (a percentage? 90% is 0.9)\n")


def test_bare_kvlib_prints_the_usage_and_the_commands():
    r = subprocess.run([sys.executable, "-m", "kvlib"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: kvlib")
    assert "estimate" in r.stderr and "plan" in r.stderr and "Traceback" not in r.stderr


# --- repository ids of variants (issue 26, section 4) ------------------------------------------

@pytest.mark.parametrize("typed, bundled, quantized", [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", False),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b", False),
    ("google/gemma-3-27b-pt", "gemma-3-27b", False),
    ("RedHatAI/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", True),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "llama-3.1-70b", True),
    ("Qwen/Qwen3-32B-AWQ", "qwen3-32b", True),
])
def test_a_variants_repo_id_reads_the_bundled_config_and_says_so(typed, bundled, quantized):
    from kvlib.models.catalog import load_model, variant_of

    assert variant_of(typed) == (bundled, quantized)
    spec = load_model(typed)
    assert spec.name == bundled and spec.assumptions[0].startswith(f"{typed} read as the bundled")
    assert ("quantized re-packaging" in spec.assumptions[0]) == quantized


@pytest.mark.parametrize("typed", ["deepseek-ai/DeepSeek-V3.2-Exp", "meta-llama/Llama-3.3-70B",
                                   "meta-llama/Llama-5-8B"])
def test_another_model_is_not_taken_for_a_variant(typed, capsys):
    """Only tuning and packaging words are dropped: -Exp, 3.3 or 5 name other models."""
    assert main(["estimate", typed]) == 2
    err = capsys.readouterr().err
    assert "kvlib does not download" in err and "config.json" in err and err.count("\n") == 1


def test_plan_of_a_quantized_variant_needs_its_weight_dtype(capsys):
    assert main(["plan", "RedHatAI/Llama-3.1-8B-Instruct-FP8", "--gpu", "H200"]) == 2
    assert "quantized re-packaging" in capsys.readouterr().err
    assert main(["plan", "RedHatAI/Llama-3.1-8B-Instruct-FP8", "--gpu", "H200", "--context",
                 "8192", "--weight-dtype", "fp8", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["weights_bytes_per_gpu"] == 8_030_000_000  # the published 8.03B x 1 B (fp8)
