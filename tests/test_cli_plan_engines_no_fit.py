"""``kvlib plan --engine sglang|trtllm|all`` where the weights leave no memory for the KV cache:
"does not fit", exit 1 with the sizes that do not fit, as under vLLM (before: exit 2, "error:",
for SGLang and TensorRT-LLM); true input errors stay at 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvlib.cli import main

GiB = 1 << 30
# GLM-4.5's config as the tester found it (alibaba/rtp-llm, testdata/glm45/tokenizer/config.json
# at de8bee30; tests/fixtures/sglang_logs/README.md)
GLM45 = str(Path(__file__).resolve().parent / "fixtures" / "sglang_logs" / "configs"
            / "glm-4.5.json")
GLM_ARGS = ["plan", GLM45, "--gpu", "H200", "--gpus", "8", "--tp", "4", "--context", "8K"]
# Llama 3 70B: 70,553,706,496 parameters (its model card's count), bf16 on one GPU
LLAMA70_WEIGHTS = 70_553_706_496 * 2
# the H200's CUDA total, as vLLM's start-up log prints it (kvlib's GPU table)
H200_TOTAL = 150_119_844_413


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _gib(text: str, before: str) -> float:
    return float(re.search(re.escape(before) + r" ([\d.]+) GiB", text)[1])


def test_sglang_glm45_tp4_does_not_fit_exit_1(capsys):
    """The tester's repro. GLM-4.5 has 355B parameters (its model card): 355e9 x 2 B / TP 4 =
    177.5e9 B = 165.3 GiB a GPU, more than an H200's 139.81 GiB CUDA total, let alone
    mem_fraction_static of the free memory. kvlib's weights (164.52 GiB, counted from the
    config) are within 1% of that."""
    code, out, err = _run(capsys, *GLM_ARGS, "--engine", "sglang")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("kvlib plan: does not fit: glm-4.5 on H200, TP=4: SGLang would stop "
                          "('Loaded weights leave no GPU memory for the KV cache'")
    weights, room = _gib(err, "the weights"), _gib(err, "mem_fraction_static x free memory")
    assert abs(weights - 355e9 * 2 / 4 / GiB) / (355e9 * 2 / 4 / GiB) < 0.01
    assert weights > room and room < H200_TOTAL / GiB
    assert out.startswith("glm-4.5 on 8 x H200, TP=4, context 8,192, SGLang 0.5.23: does not fit")
    assert out.splitlines()[-1].split() == ["sequences", "in", "all", "0"]


def test_sglang_does_not_fit_json(capsys):
    """--json: every common key, fits false, no sequence, the weights a GPU and the GPU's total
    as the plan would give them, and the reason as vLLM's (``does not fit: ...``)."""
    code, out, err = _run(capsys, "plan", "llama-3-70b", "--gpu", "H200", "--context", "8K",
                          "--engine", "sglang", "--json")
    d = json.loads(out)
    assert code == 1
    assert (d["engine"], d["fits"], d["max_sequences"], d["max_sequences_per_replica"]) == (
        "sglang", False, 0, 0)
    assert d["weights_bytes_per_gpu"] == LLAMA70_WEIGHTS == 141_107_412_992
    assert d["total_memory_bytes_per_gpu"] == H200_TOTAL
    assert d["reason"] == "does not fit: " + d["does_not_fit"]
    # 141,107,412,992 / 2^30 = 131.418 GiB, printed 131.42
    assert "the weights 131.42 GiB exceed" in d["does_not_fit"]
    assert err == f"kvlib plan: {d['reason']}\n"


def test_trtllm_glm45_does_not_fit_exit_1(capsys):
    """TensorRT-LLM: weights 164.52 GiB + its assumed 4.5 GiB peak exceed the H200's CUDA
    total, 150,119,844,413 B / 2^30 = 139.81 GiB."""
    assert f"{H200_TOTAL / GiB:.2f}" == "139.81"
    code, out, err = _run(capsys, *GLM_ARGS, "--engine", "trtllm")
    assert code == 1 and err.count("\n") == 1
    assert "kvlib plan: does not fit: glm-4.5 on H200, TP=4: nothing is left for the KV cache" \
        in err
    assert "exceed the 139.81 GiB CUDA total" in err
    assert _gib(err, "weights") + _gib(err, "profiling peak") > 139.81


def test_engine_all_does_not_fit_in_every_column_is_exit_1(capsys):
    """Every engine plans and none fits: exit 1 (not 2, which is every engine refusing its
    input); each column says "does not fit" and the sizes follow below the table."""
    code, out, err = _run(capsys, *GLM_ARGS, "--engine", "all")
    assert code == 1 and err == "kvlib plan: no engine holds a request of the context\n"
    row = next(x for x in out.splitlines() if x.strip().startswith("KV budget per GPU"))
    assert row.count("does not fit (below)") == 2
    assert any(x.startswith("  SGLang 0.5.23 does not fit: glm-4.5 on H200, TP=4")
               for x in out.splitlines())
    code, out, _ = _run(capsys, *GLM_ARGS, "--engine", "all", "--json")
    plans = json.loads(out)["engines"]
    assert [plans[e]["fits"] for e in ("vllm", "sglang", "trtllm")] == [False] * 3
    assert "refused" not in plans["sglang"] and "does_not_fit" in plans["trtllm"]


@pytest.mark.parametrize("argv, words", [
    (["--engine", "sglang", "--gpu-mem-util", "0.9"], "a vLLM option"),
    (["--engine", "trtllm", "--page-size", "64"], "not an option of --engine trtllm"),
])
def test_input_errors_stay_exit_2(capsys, argv, words):
    code, out, err = _run(capsys, *GLM_ARGS, *argv)
    assert (code, out, err.count("\n")) == (2, "", 1) and words in err


def test_a_fit_is_unchanged(capsys):
    code, out, err = _run(capsys, "plan", "llama-3.1-8b", "--gpu", "H200", "--context", "8K",
                          "--engine", "sglang", "--json")
    assert code == 0 and err == "" and json.loads(out)["fits"] is True


def test_does_not_fit_is_a_type_the_planners_raise():
    """The CLI tells a deployment that does not fit from an input error by the exception's type
    (DoesNotFit, a ValueError), which SGLang's and TensorRT-LLM's planners raise where the
    weights leave no memory for the KV cache; a plain ValueError stays an input error."""
    from kvlib.cli.plan_engines import does_not_fit
    from kvlib.serving.engines import engine_plan  # noqa: F401 - the registry loads
    from kvlib.serving.engines.answer import DoesNotFit

    assert issubclass(DoesNotFit, ValueError)
    assert does_not_fit(DoesNotFit("m on H200, TP=1: SGLang would stop (...)"))
    assert not does_not_fit(ValueError("--page-size 64: not an option of --engine trtllm"))
