"""Issue 42 item 4: a context past the model's limit, as vLLM 0.34.0 applies it.

vLLM derives the limit from the config (the smallest length key, times a RoPE factor unless
the RoPE type already scales it, Gemma 3 never) and raises at start-up when max_model_len is
past it, unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (config/model.py:2589-2727); ``kvlib plan``
says so first, on stderr and in the JSON, and exits 1 (docs/cli.md). vLLM's own function run
on the same configs: tests/oracle/test_max_model_len_oracle.py.

Published values: google/gemma-3n-E4B-it's text_config sets max_position_embeddings 32768 and
plain ("default") RoPE, so 256K = 262,144 > 32,768 is refused; meta-llama/Llama-3.1-70B's 131072
with llama3 RoPE (factor 8, which vLLM does not apply again) takes 131,072 and refuses 131,073.
"""

import json

import pytest

from kvlib.cli import main
from kvlib.serving.engines.vllm.max_model_len import (
    allowed_by_env,
    check_max_model_len,
    derived_max_model_len,
)


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)


def _run(capsys, *argv):
    rc = main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_gemma_3n_at_256k_is_refused_first_on_stderr_and_in_json(capsys):
    rc, out, err = _run(capsys, "gemma-3n-e4b", "--gpu", "H200", "--context", "256K")
    assert rc == 1
    (line,) = err.strip().splitlines()
    assert line.startswith("kvlib plan: vLLM 0.34.0 would refuse to start: max_model_len "
                           "262,144 is past the model's derived maximum 32,768 "
                           "(max_position_embeddings=32,768)")
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in line and "config/model.py" in line
    second = out.splitlines()[1]  # right under the first line, not the 29th of 29
    assert out.count("would refuse to start") == 1  # said once, not again as a note
    assert second.startswith("  context refused: vLLM 0.34.0 would refuse to start")
    rc, out, _ = _run(capsys, "gemma-3n-e4b", "--gpu", "H200", "--context", "256K", "--json")
    d = json.loads(out)
    assert rc == 1 and d["fits"] is False
    assert (d["vllm_refuses_max_model_len"], d["vllm_derived_max_model_len"],
            d["vllm_max_len_key"], d["vllm_rope_factor"]) == (
        True, 32768, "max_position_embeddings", 1.0)
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in d["reason"]


def test_at_the_limit_it_plans(capsys):
    rc, out, err = _run(capsys, "gemma-3n-e4b", "--gpu", "H200", "--context", "32K")
    assert rc == 0 and err == "" and "context refused" not in out
    rc, out, err = _run(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "131072", "--json")
    d = json.loads(out)
    assert rc == 0 and d["vllm_derived_max_model_len"] == 131072
    assert d["vllm_refuses_max_model_len"] is False
    rc, out, err = _run(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "131073")
    assert rc == 1 and "derived maximum 131,072" in err


@pytest.mark.parametrize("value", ["1", "true", " TRUE "])
def test_the_env_var_overrides_it_as_in_vllm(capsys, monkeypatch, value):
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", value)
    rc, out, err = _run(capsys, "gemma-3n-e4b", "--gpu", "H200", "--context", "256K", "--json")
    d = json.loads(out)
    assert rc == 0 and err == "" and d["fits"] is True
    assert d["vllm_refuses_max_model_len"] is False and d["vllm_allow_long_max_model_len"]
    assert any("starts only because VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set" in n
               for n in d["notes"])


def test_env_values_vllm_does_not_take():
    for value in ("0", "yes", "", "on"):
        assert allowed_by_env({"VLLM_ALLOW_LONG_MAX_MODEL_LEN": value}) is False
    assert allowed_by_env({}) is False


def test_engine_all_holds_no_request_vllm_refuses(capsys):
    rc, out, err = _run(capsys, "gemma-3n-e4b", "--gpu", "H200", "--context", "256K",
                        "--engine", "all")
    assert rc in (1, 2)  # vLLM would not start; SGLang and TensorRT-LLM refuse the model
    assert any(x.strip().startswith("vLLM 0.34.0 refuses the context: vLLM 0.34.0 would "
                                    "refuse to start") for x in out.splitlines())


def test_rope_rules_by_hand():
    """A linear factor multiplies (4,096 x 4 = 16,384), llama3 / yarn / longrope do not, a
    nested dict per layer type is read per type, model_max_length wins, a null factor is 1."""
    assert derived_max_model_len({"max_position_embeddings": 4096, "rope_scaling": {
        "type": "linear", "factor": 4.0}}) == (16384, "max_position_embeddings", 4.0)
    for kind in ("llama3", "yarn", "longrope", "su", "deepseek_yarn"):
        assert derived_max_model_len({"max_position_embeddings": 32768, "rope_scaling": {
            "rope_type": kind, "factor": 4.0}})[0] == 32768
    nested = {"max_position_embeddings": 8192, "rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 2.0},
        "sliding_attention": {"rope_type": "default"}}}
    assert derived_max_model_len(nested)[0] == 16384
    assert derived_max_model_len({"max_position_embeddings": 8192, "seq_length": 4096}) == (
        4096, "seq_length", 1.0)
    assert derived_max_model_len({"max_position_embeddings": 8192,
                                  "model_max_length": 131072})[:2] == (131072,
                                                                       "model_max_length")
    assert derived_max_model_len({"max_position_embeddings": 2048, "rope_scaling": {
        "type": "dynamic", "factor": None}})[0] == 2048
    assert derived_max_model_len({}) == (None, None, 1.0)  # vLLM then takes max_model_len
    assert check_max_model_len({}, 10**7, allow_long=False).refuses is False


def test_the_limit_is_monotone():
    """Property: every context up to the limit passes and every one past it is refused."""
    config = {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear",
                                                                "factor": 3.0}}
    for n in (1, 4096, 12287, 12288):
        assert not check_max_model_len(config, n, allow_long=False).refuses
    for n in (12289, 12290, 10**6):
        assert check_max_model_len(config, n, allow_long=False).refuses
