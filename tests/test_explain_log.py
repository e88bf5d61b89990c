"""``kvlib explain-log`` on real vLLM start-up logs (issue 24, section 3).

The logs are verbatim excerpts of public posts (tests/fixtures/vllm_logs/SOURCES.md). Each is
explained (exit 0), then the same log with one number changed must fail (exit 1) naming the
line and both values. One real log disagrees as posted: issue 21348 pasted one "Available KV
cache memory" line and one "GPU KV cache size" line of a 4-rank engine, and no block count of
94 layers' pages in 8.11 GiB gives its 178,880 tokens (8.02 GiB does): the two lines are
most likely from different ranks, whose budgets differ (the 8 x L40S log shows a 0.04 GiB
spread), which the post does not say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.serving.vllm_log import explain, read_log, read_log_text

HERE = Path(__file__).resolve().parent
LOGS = HERE / "fixtures" / "vllm_logs"
Q235 = str(LOGS / "configs" / "qwen3-235b-a22b-fp8.json")
Q30 = str(HERE / "fixtures" / "configs" / "qwen3-30b-a3b.json")

# log file, extra arguments, (text to change, its replacement, the log line named)
CASES = {
    "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log":
        (["--model", Q235], ("GPU KV cache size: 238,208 tokens",
                             "GPU KV cache size: 238,224 tokens", 328)),
    "qwen3-30b-a3b-fp8_2xL40S_tp2ep_v0.10.2.log":
        (["--model", Q30, "--tp", "2"], ("566,016 tokens", "576,016 tokens", 18)),
    "qwen3-next-80b-a3b_w4a16_2xL40S_tp2_kvfp8_v0.13.0.log":
        (["--model", "qwen3-next-80b-a3b"], ("block size to 1072 tokens",
                                             "block size to 1088 tokens", 12)),
    "llama-3.2-11b-vision_H100-80G_v0.6.x-dev_PR12126.log":
        ([], ("reserved for KV Cache is 14.65GiB", "reserved for KV Cache is 15.65GiB", 2)),
    "meta-llama-3-8b_H100_tp1-tp2_V0_PR10511.log":
        ([], ("available_kv_cache_memory    53.29GiB", "available_kv_cache_memory    52.29GiB",
              10)),
    "llama-3.1-8b-instruct_RTX3090_V0_issue10517.log":
        (["--model", "llama-3.1-8b"], ("# GPU blocks: 1478", "# GPU blocks: 1578", 10)),
    "gpt-oss-120b_H100_v0.10.1_issue23278.log":
        ([], ("Free memory", "Free memory", None)),  # see test_gpt_oss_failure_changed
}


def _run(capsys, *argv):
    code = main(["explain-log", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", list(CASES))
def test_real_log_is_explained(capsys, name):
    args, _ = CASES[name]
    code, out, err = _run(capsys, LOGS / name, *args)
    assert code == 0, err
    assert err == ""
    assert "verdict: explained:" in out.splitlines()[-1]
    assert "0 disagree" in out.splitlines()[-1]


@pytest.mark.parametrize("name", [n for n, (_, change) in CASES.items() if change[2]])
def test_one_number_changed_disagrees(capsys, tmp_path, name):
    args, (old, new, line) = CASES[name]
    text = (LOGS / name).read_text(encoding="utf-8")
    assert text.count(old) >= 1
    changed = tmp_path / name
    changed.write_text(text.replace(old, new, 1), encoding="utf-8")
    code, out, err = _run(capsys, changed, *args)
    assert code == 1
    first = err.splitlines()[0]
    assert first.startswith(f"kvlib explain-log: line {line} ")
    assert "the log prints" in first and ", kvlib " in first
    assert "verdict: DISAGREES" in out


def test_changed_values_are_named(capsys, tmp_path):
    """Both values in the stderr line: the log's and kvlib's."""
    name = "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log"
    text = (LOGS / name).read_text(encoding="utf-8").replace(
        "GPU KV cache size: 238,208 tokens", "GPU KV cache size: 238,224 tokens", 1)
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, _, err = _run(capsys, tmp_path / name, "--model", Q235)
    assert code == 1
    assert err.splitlines() == [
        "kvlib explain-log: line 328 (GPU KV cache size (tokens)): the log prints 238,224, "
        "kvlib 238,208"]


def test_exact_budget_of_each_rank():
    """0.10.2 prints each rank's budget in bytes: every token count is exact, paired by rank."""
    log = read_log(LOGS / "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log")
    from kvlib.models.catalog import load_model
    e = explain(log, load_model(Q235))
    tokens = [c for c in e.checks if c.quantity == "GPU KV cache size (tokens)"]
    assert len(tokens) == 8 and all(c.status == "ok" for c in tokens)
    assert all("exact budget" in c.formula for c in tokens)
    # rank 2: 11,423,138,508 B // (94 layers x 16 tokens x 2 x 1 head x 128 x 2 B) = 14,834
    assert tokens[2].kvlib == f"{14_834 * 16:,}"
    assert e.settings["bytes_per_block"] == 94 * 16 * 2 * 1 * 128 * 2


def test_hybrid_block_size_and_no_padding():
    """Qwen3-Next, TP=2, fp8 cache: 1,072-token blocks, pages equal (no padding line)."""
    log = read_log(LOGS / "qwen3-next-80b-a3b_w4a16_2xL40S_tp2_kvfp8_v0.13.0.log")
    from kvlib.models.catalog import load_model
    e = explain(log, load_model("qwen3-next-80b-a3b"))
    got = {c.quantity: c for c in e.checks}
    assert got["attention block size (hybrid)"].status == "ok"
    assert got["mamba page padding"].kvlib == "0.00%"
    assert e.settings["kv_cache_groups"] == 4 and e.settings["blocks_per_request"] == 31 + 3
    assert e.ok


def test_issue_21348_disagrees_as_posted(capsys, tmp_path):
    name = "qwen3-235b-a22b-fp8_4xH100_tp4_issue21348.log"
    code, out, err = _run(capsys, LOGS / name, "--model", Q235, "--tp", "4")
    assert code == 1
    assert err.splitlines() == [
        "kvlib explain-log: line 2 (GPU KV cache size (tokens)): the log prints 178,880, "
        "kvlib 180,816 to 181,040"]
    assert "1 of the 4 ranks' lines" in out
    # the budget that gives 178,880 tokens (11,180 blocks): 8.02 GiB
    text = (LOGS / name).read_text(encoding="utf-8").replace("8.11 GiB", "8.02 GiB")
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert _run(capsys, tmp_path / name, "--model", Q235, "--tp", "4")[0] == 0


def test_gpt_oss_failure_changed(capsys, tmp_path):
    """A negative budget explains the failure; with it made positive the failure is left
    unexplained (another cause), which is not a disagreement of kvlib's numbers."""
    name = "gpt-oss-120b_H100_v0.10.1_issue23278.log"
    code, out, _ = _run(capsys, LOGS / name)
    assert code == 0 and "the KV budget was negative (line 7)" in out
    text = (LOGS / name).read_text(encoding="utf-8").replace("-2.14 GiB", "2.14 GiB")
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, _ = _run(capsys, tmp_path / name)
    assert code == 0 and "1 recognised but not explained" in out


def test_json(capsys):
    name = "llama-3.1-8b-instruct_RTX3090_V0_issue10517.log"
    code, out, _ = _run(capsys, LOGS / name, "--model", "llama-3.1-8b", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["settings"]["rules"] == "v0" and d["settings"]["bytes_per_block"] == 2 * 1024**2
    assert d["verdict"] == {"explained": 7, "information": 3, "disagree": 0,
                            "not_explained": 0, "ok": True}
    blocks = next(c for c in d["checks"] if c["line"] == 10)
    assert blocks["printed"] == "1478" and blocks["status"] == "ok"


def test_v033_one_line_form(capsys, tmp_path):
    """vLLM 0.33's single capacity line (made up here from kvlib's own figures for one rank of
    the 8 x L40S run: 14,834 blocks): read as rules v1-0.33, tokens = int(concurrency x L)."""
    text = ("(Worker pid=1) INFO 01-01 00:00:00 [gpu_worker.py:775] Available KV cache memory: "
            "10.64 GiB\n(EngineCore pid=2) INFO 01-01 00:00:00 [kv_cache_utils.py:1150] GPU KV "
            "cache size: 237,344 tokens, Maximum concurrency for 32,768 tokens per request: "
            "7.24x\n")
    log = read_log_text(text)
    from kvlib.models.catalog import load_model
    e = explain(log, load_model(Q235), tp=8)
    assert e.rules == "v1-0.33" and e.ok
    assert [c.status for c in e.checks if c.status != "info"] == ["ok", "ok"]
    bad = read_log_text(text.replace("7.24x", "7.34x"))
    assert not explain(bad, load_model(Q235), tp=8).ok


@pytest.mark.parametrize("argv, words", [
    (["no/such.log"], "no such log file: no/such.log"),
    ([str(HERE / "fixtures" / "configs" / "SOURCES.md")], "not a vLLM start-up log"),
    ([str(LOGS / "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log")],
     "the log's model 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8' is not one kvlib can read"),
    ([str(LOGS / "gpt-oss-120b_H100_v0.10.1_issue23278.log"), "--model",
      str(HERE / "fixtures" / "configs" / "mimo-v2-flash.json")], ""),
    ([str(LOGS / "gpt-oss-120b_H100_v0.10.1_issue23278.log"), "--gpu", "V100"], ""),
])
def test_bad_input_exit_2(capsys, argv, words):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("kvlib explain-log: error: ") and words in err


def test_binary_file_exit_2(capsys, tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"\xff\xfe\x00\x81" * 10)
    code, _, err = _run(capsys, p)
    assert code == 2 and "not a text file" in err


def test_an_excerpt_missing_one_ranks_budget_line_is_still_explained(tmp_path, capsys):
    """A pasted excerpt often loses a line: with one worker's budget line gone, each capacity
    line is matched to a budget line that explains it, not failed against the lowest."""
    from kvlib.cli import main

    src = LOGS / "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    budget = next(i for i, t in enumerate(lines)
                  if "Worker_TP3" in t and "Available KV cache memory" in t)
    cut = tmp_path / "cut.log"
    cut.write_text("".join(lines[:budget] + lines[budget + 1:]), encoding="utf-8")
    config = str(LOGS / "configs" / "qwen3-235b-a22b-fp8.json")
    assert main(["explain-log", str(cut), "--model", config]) == 0
    assert "matched to the budget line that explains it" in capsys.readouterr().out


def test_a_tp_the_heads_do_not_allow_is_refused(capsys):
    from kvlib.cli import main

    log = str(LOGS / "qwen3-next-80b-a3b_w4a16_2xL40S_tp2_kvfp8_v0.13.0.log")
    assert main(["explain-log", log, "--model", "qwen3-next-80b-a3b", "--tp", "3"]) == 2
    assert capsys.readouterr().err.startswith("kvlib explain-log: error: --tp 3: ")
