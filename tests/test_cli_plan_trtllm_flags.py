"""``kvlib plan --engine trtllm``'s --trtllm-release and --trtllm-max-batch-size (issue 41 item 4):
the release is a choice as --vllm is, and the plan's release line is the plan's; a Mamba
hybrid's state slots follow max_batch_size. Expected values by hand from the published config
(nvidia/Nemotron-H-56B-Base-8K's config.json), written out here."""


import pytest
from test_cli_plan import run, run_json

from kvlib.cli.plan_engines import _TRTLLM_RELEASES
from kvlib.serving.engines.trtllm.planner import RELEASES

# Nemotron-H 56B: hybrid_override_pattern has 10 '*' (attention) and 54 'M' (Mamba2) layers.
# Attention cell: 10 layers x 2 (K, V) x 8 KV heads x 128 dims x 2 B (bf16)
CELL = 10 * 2 * 8 * 128 * 2  # 40,960 B a token
# Mamba2 state a layer: conv (256 heads x 64 + 2 x 8 groups x 256 state) x (4 - 1) x 2 B
# + ssm 256 heads x 64 x 256 state x 2 B = 122,880 + 8,388,608
STATE = 54 * ((256 * 64 + 2 * 8 * 256) * 3 * 2 + 256 * 64 * 256 * 2)  # 459,620,352 B




NEMOTRON = ("nemotron-h-56b", "--gpu", "H200", "--context", "8K", "--engine", "trtllm")


def test_the_flag_names_the_planner_releases():
    assert _TRTLLM_RELEASES == RELEASES  # kept beside the flag so --help imports no engine


def test_default_max_batch_size_plans_nothing_and_a_smaller_one_plans(capsys):
    assert STATE == 459_620_352 and CELL == 40_960
    rc, d, err = run_json(capsys, *NEMOTRON)
    # trtllm-serve's 2,048 reserves 2,049 slots of state: 941.8 GB, more than the budget
    assert d["trtllm"]["max_batch_size"] == 2048 and d["trtllm"]["state_slots"] == 2049
    assert d["max_sequences_per_replica"] == 0 and rc == 1 and "hold no request" in err
    budget = d["kv_budget_bytes_per_gpu"]
    assert 2049 * STATE > budget
    rc, d, _ = run_json(capsys, *NEMOTRON, "--trtllm-max-batch-size", "36")
    assert rc == 0 and d["kv_budget_bytes_per_gpu"] == budget  # the batch is not in the budget
    state = next(t["value"] for t in d["trtllm"]["terms"] if t["label"].startswith("Mamba"))
    assert state == 37 * STATE == 17_005_953_024
    tokens = (budget - 37 * STATE) // CELL
    blocks = -(-tokens // 32)
    assert d["kv_tokens_per_gpu"] == blocks * 32
    assert d["max_sequences_per_replica"] == min(36, blocks * 32 // 8192) == 36
    # one more slot: 38 slots of state leave fewer tokens than 37 requests of 8,192 need
    rc, d, _ = run_json(capsys, *NEMOTRON, "--trtllm-max-batch-size", "37")
    tokens = (budget - 38 * STATE) // CELL
    assert tokens < 37 * 8192
    assert d["max_sequences_per_replica"] == -(-tokens // 32) * 32 // 8192 < 37


def test_release_choice_reaches_the_plan_and_its_first_line(capsys):
    argv = ("llama-3.1-8b", "--gpu", "H200", "--context", "8K", "--engine", "trtllm")
    rc, d, _ = run_json(capsys, *argv)
    assert rc == 0 and d["release"] == "at 000439672005"
    rc, d, _ = run_json(capsys, *argv, "--trtllm-release", "1.1.0rc3")
    assert rc == 0 and d["release"] == "1.1.0rc3" and d["trtllm"]["release"] == "1.1.0rc3"
    rc, out, _ = run(capsys, *argv, "--trtllm-release", "1.1.0rc3")
    assert "TensorRT-LLM 1.1.0rc3" in out.splitlines()[0]


def test_release_choice_reaches_a_refusal_under_engine_all(capsys):
    """Nemotron-H's Mamba budget is traced at the pinned commit only: 1.1.0rc3 refuses it, and
    the refusal's column names the release chosen, not the default."""
    rc, d, _ = run_json(capsys, "nemotron-h-56b", "--gpu", "H200", "--context", "8K",
                        "--engine", "all", "--trtllm-release", "1.1.0rc3")
    t = d["engines"]["trtllm"]
    assert t["release"] == "1.1.0rc3" and "1.1.0rc3" in t["refused"]


@pytest.mark.parametrize("argv, message", [
    (("--trtllm-release", "1.2.0"), "--trtllm-release"),
    (("--trtllm-max-batch-size", "0"), "--trtllm-max-batch-size"),
])
def test_bad_values_are_one_line(capsys, argv, message):
    rc, _, err = run(capsys, "llama-3.1-8b", "--gpu", "H200", "--engine", "trtllm", *argv)
    assert rc == 2 and err.count("\n") == 1 and message in err


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_trtllm_flags_are_refused_by_other_engines(capsys, engine):
    rc, _, err = run(capsys, "llama-3.1-8b", "--gpu", "H200", "--engine", engine,
                     "--trtllm-max-batch-size", "8")
    assert rc == 2 and "--trtllm-max-batch-size" in err
