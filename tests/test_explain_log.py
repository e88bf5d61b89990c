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
from kvlib.serving.engines.vllm.log import explain, read_log, read_log_text

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
    unexplained (another cause), which is not a disagreement of kvlib's numbers, and as no
    number is then recomputed, nothing is called explained (exit 1, issue 43)."""
    name = "gpt-oss-120b_H100_v0.10.1_issue23278.log"
    code, out, _ = _run(capsys, LOGS / name)
    assert code == 0 and "the KV budget was negative (line 7)" in out
    text = (LOGS / name).read_text(encoding="utf-8").replace("-2.14 GiB", "2.14 GiB")
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, _ = _run(capsys, tmp_path / name)
    assert code == 1 and "1 recognised but not explained" in out
    assert "verdict: nothing checked: 0 number(s) agree, 0 disagree" in out


def test_json(capsys):
    name = "llama-3.1-8b-instruct_RTX3090_V0_issue10517.log"
    code, out, _ = _run(capsys, LOGS / name, "--model", "llama-3.1-8b", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["settings"]["rules"] == "v0" and d["settings"]["bytes_per_block"] == 2 * 1024**2
    assert d["verdict"] == {"explained": 7, "information": 3, "disagree": 0,
                            "not_explained": 0, "verdict": "explained", "ok": True}
    blocks = next(c for c in d["checks"] if c["line"] == 10)
    assert blocks["printed"] == "1478" and blocks["status"] == "ok"


def test_v028_one_line_form(capsys, tmp_path):
    """vLLM 0.28's single capacity line (0.28.0 kv_cache_utils.py:1869-1875), made up here for one
    rank of the 8 x L40S run (14,834 blocks: 14,834 x 16 = 237,344 tokens, 14,834 / 2,048 =
    7.24x): read as rules v1-0.28, tokens = int(concurrency x L)."""
    text = ("(Worker pid=1) INFO 01-01 00:00:00 [gpu_worker.py:775] Available KV cache memory: "
            "10.64 GiB\n(EngineCore pid=2) INFO 01-01 00:00:00 [kv_cache_utils.py:1150] GPU KV "
            "cache size: 237,344 tokens, Maximum concurrency for 32,768 tokens per request: "
            "7.24x\n")
    log = read_log_text(text)
    from kvlib.models.catalog import load_model
    e = explain(log, load_model(Q235), tp=8)
    assert e.rules == "v1-0.28" and e.ok
    assert [c.status for c in e.checks if c.status != "info"] == ["ok", "ok"]
    bad = read_log_text(text.replace("7.24x", "7.34x"))
    assert not explain(bad, load_model(Q235), tp=8).ok


@pytest.mark.parametrize("argv, words", [
    (["no/such.log"], "no such log file: no/such.log"),
    ([str(HERE / "fixtures" / "configs" / "SOURCES.md")], "not a vLLM start-up log"),
    ([str(LOGS / "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log")],
     "the log's model 'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8' is not one kvlib can read"),
    # a config kvlib refuses, by a key the engine reads and its reader does not (this was
    # MiMo-V2-Flash's v_head_dim, then Muse Glimmer's qk_scale_factor, until kvlib read them)
    ([str(LOGS / "gpt-oss-120b_H100_v0.10.1_issue23278.log"), "--model", "{refused}"],
     "dual_chunk_attention_config={'chunk_size': 262144, 'local_size': ...: vLLM 0.34.0 "
     "reads this key"),
    # a bundled config with a mistyped field
    ([str(LOGS / "gpt-oss-120b_H100_v0.10.1_issue23278.log"), "--model", "{mistyped}"],
     "swa_num_key_value_heads must be a positive integer, got '8'"),
    ([str(LOGS / "gpt-oss-120b_H100_v0.10.1_issue23278.log"), "--gpu", "V100"], ""),
])
def test_bad_input_exit_2(capsys, tmp_path, argv, words):
    from kvlib.models.catalog import bundled_config

    configs = {"{refused}": {**bundled_config("qwen2.5-7b"), "dual_chunk_attention_config": {
                   "chunk_size": 262144, "local_size": 8192}},
               "{mistyped}": {**bundled_config("mimo-v2-flash"), "swa_num_key_value_heads": "8"}}
    for key, cfg in configs.items():
        (tmp_path / f"{key[1:-1]}.json").write_text(json.dumps(cfg))
    argv = [str(tmp_path / f"{a[1:-1]}.json") if a in configs else a for a in argv]
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


# ---------------------------------------------------------------- the start-up failure (issue 32)

FAIL_8B = "llama-3.1-8b_v0.10_mlperf-automations-issue550.log"
FAIL_FP8 = "qwen3-30b-a3b-shape_kvfp8_issue25350.log"
FAIL_PP = "qwen3-coder-30b-a3b-fp8_pp2_v0.15.2_issue34076.log"
# log, arguments, (needed bytes, bytes per block, printed M) each worked out by hand:
FAILURES = {
    # Llama 3.1 8B: 32 layers x 16 tokens x (K + V) x 8 heads x 128 x 2 B = 2,097,152 B a block;
    # 131,072 tokens = 8,192 blocks = 16 GiB exactly. M = 40,304 = 2,519 blocks x 16, and
    # 4.92 GiB +- 0.005 holds 4.915 x 512 = 2,516.5 to 4.925 x 512 = 2,521.6 blocks
    FAIL_8B: (["--model", "llama-3.1-8b"], (8192 * 2_097_152, 2_097_152, 40_304, 2516, 2521)),
    # 48 layers x 16 x 2 x 4 heads x 128 x 1 B (fp8) = 786,432 B; ceil(221,000 / 16) = 13,813
    # blocks = 10,862,985,216 B = 10.117 GiB; M = 122,080 = 7,630 blocks; 5.59 GiB +- 0.005 =
    # 5.585 x 2^30 / 786,432 = 7,625.4 to 5.595 x 1,365.33 = 7,639.0 blocks
    FAIL_FP8: (["--model", Q30, "--kv-dtype", "fp8"], (13_813 * 786_432, 786_432, 122_080,
                                                       7625, 7639)),
    # the same 48-layer shape in bf16: 1,572,864 B a block; 262,144 / 16 = 16,384 blocks =
    # 24 GiB; M = 34,736 = 2,171 blocks; 3.18 GiB +- 0.005 = 2,167.5 to 2,174.3 blocks
    FAIL_PP: (["--model", Q30], (16_384 * 1_572_864, 1_572_864, 34_736, 2167, 2174)),
}


@pytest.mark.parametrize("name", list(FAILURES))
def test_start_up_failure_is_explained(capsys, name):
    args, (need, bpb, m, lo_blocks, hi_blocks) = FAILURES[name]
    code, out, err = _run(capsys, LOGS / name, *args, "--json")
    assert code == 0, err
    d = json.loads(out)
    got = {c["quantity"]: c for c in d["checks"]}
    x = got["KV cache one request needs"]
    assert x["status"] == "ok" and f"= {need:,} B" in x["formula"]
    assert m % 16 == 0 and lo_blocks <= m // 16 <= hi_blocks  # the hand check itself
    est = got["estimated maximum model length"]
    assert est["status"] == "ok" and est["printed"] == str(m)
    assert est["kvlib"] == f"{lo_blocks * 16:,} to {hi_blocks * 16:,}"
    assert got["to fit: shorter context"]["kvlib"] == f"--max-model-len {m:,}"
    assert d["settings"]["bytes_per_block"] == bpb


def test_what_would_make_the_8b_fit(capsys):
    """Each remedy kvlib's: fp8 halves 16 GiB to 8 (still over 4.92); TP=4 gives 16 / 4 = 4 GiB
    per rank (TP=2's 8 GiB does not fit); the utilization needs the GPU's total."""
    code, out, _ = _run(capsys, LOGS / FAIL_8B, "--model", "llama-3.1-8b", "--json")
    got = {c["quantity"]: c for c in json.loads(out)["checks"]}
    assert got["to fit: fp8 KV cache (--kv-cache-dtype fp8)"]["kvlib"].startswith(
        "8.00 GiB needed, does not fit; longest 80,512 tokens")  # floor(4.915 x 1,024) x 16
    assert got["to fit: more tensor parallelism"]["kvlib"] == "TP=4"
    assert "TP=2: 8.00 GiB; TP=4: 4.00 GiB" in got["to fit: more tensor parallelism"]["formula"]
    assert got["to fit: gpu_memory_utilization"]["kvlib"] == "pass --gpu"
    # with a GPU: 16 GiB - 4.915 GiB = 11.085 GiB short; H100 80GB's CUDA total 79.22 GiB
    # (kvlib's catalog) -> 11.085 / 79.22 = 0.1399 -> +0.14 on top of the utilization used
    from kvlib.serving.gpus import get_gpu
    total = get_gpu("H100-80GB").total_memory_bytes
    assert abs(total / 2**30 - 79.22) < 0.01
    code, out, _ = _run(capsys, LOGS / FAIL_8B, "--model", "llama-3.1-8b", "--gpu",
                        "H100-80GB", "--json")
    got = {c["quantity"]: c for c in json.loads(out)["checks"]}
    assert got["to fit: gpu_memory_utilization"]["kvlib"] == "+0.14"


@pytest.mark.parametrize("name, args, old, new, line", [
    (FAIL_8B, ["--model", "llama-3.1-8b"], "length is 40304", "length is 40400", 1),
    (FAIL_FP8, ["--model", Q30, "--kv-dtype", "fp8"], "(10.12 GiB", "(10.22 GiB", 9),
    (FAIL_PP, ["--model", Q30], "length is 34736", "length is 34800", 1),
])
def test_start_up_failure_changed_disagrees(capsys, tmp_path, name, args, old, new, line):
    text = (LOGS / name).read_text(encoding="utf-8")
    assert old in text
    (tmp_path / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    code, _, err = _run(capsys, tmp_path / name, *args)
    assert code == 1 and err.startswith(f"kvlib explain-log: line {line} ")


def test_start_up_failure_without_a_model_asks_for_one(capsys):
    code, out, err = _run(capsys, LOGS / FAIL_8B)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("kvlib explain-log: error: line 1 is vLLM's start-up failure (16.00 GiB "
                          "for 131,072 tokens) and the log names no model: pass --model")


def test_largest_fitting_len_is_vllms_search():
    """Against a brute force: 100 B a 16-token block, 1,000 B hold 10 blocks = 160 tokens."""
    from kvlib.serving.engines.vllm.log.failure import largest_fitting_len

    def need(n):
        return -(-n // 16) * 100
    for budget, cap in [(1000, 1000), (1000, 150), (99, 1000), (100, 1000), (1099, 170)]:
        brute = max((n for n in range(1, cap + 1) if need(n) <= budget), default=0)
        assert largest_fitting_len(need, budget, cap) == brute
    assert largest_fitting_len(need, 1000, 1000) == 160


def test_older_wording_and_format_are_read():
    """0.8's line has no estimate; 0.27 on say "model's" and print 24.0, not 24.00."""
    old = ("ValueError: To serve at least one request with the models's max seq len (1048576), "
           "(24.00 GiB KV cache is needed, which is larger than the available KV cache memory "
           "(9.97 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
           "when initializing the engine.")
    f = read_log_text(old).found[0]
    assert f.kind == "kv_failure" and f.values == ("1048576", "24.00", "9.97", None)
    new = old.replace("models's", "model's").replace("24.00", "24.0")
    assert read_log_text(new).found[0].values[:2] == ("1048576", "24.0")


# ---------------------------------------------------------------- ranks pasted together

def test_ranks_pasted_together_use_the_minimum(capsys, tmp_path):
    """Built from a real log by the rule, labelled as such: the 8 x L40S log's eight real
    "Available KV cache memory" lines (lines 320-327, 10.64 to 10.68 GiB), then the one line
    vLLM 0.28+ prints for the engine, for the smallest rank's blocks. Rank 2's exact budget gives
    14,834 blocks (test_exact_budget_of_each_rank); 14,834 / 2,048 blocks per request = 7.243x;
    int(7.243... x 32,768) = 237,344 tokens."""
    lines = (LOGS / "qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log").read_text(
        encoding="utf-8").splitlines()[319:327]
    assert all("Available KV cache memory" in x for x in lines)
    built = "\n".join(lines) + (
        "\n(EngineCore_DP0 pid=1944) INFO 09-24 20:53:41 [kv_cache_utils.py:1870] GPU KV cache "
        "size: 237,344 tokens, Maximum concurrency for 32,768 tokens per request: 7.24x\n")
    (tmp_path / "ranks.log").write_text(built, encoding="utf-8")
    code, out, err = _run(capsys, tmp_path / "ranks.log", "--model", Q235, "--tp", "8")
    assert code == 0, err
    assert ("lines from 8 TP ranks (ranks 0, 1, 2, 3, 4, 5, 6, 7), budgets 10.64 to 10.68 GiB: "
            "vLLM uses the minimum across ranks") in out
    # the largest rank's budget would give more: 10.68 GiB - 0.005 = 14,891 blocks at least
    bad = built.replace("237,344 tokens", f"{14_891 * 16:,} tokens")
    (tmp_path / "bad.log").write_text(bad, encoding="utf-8")
    assert _run(capsys, tmp_path / "bad.log", "--model", Q235, "--tp", "8")[0] == 1


# ---------------------------------------------------------------- vLLM 0.34's new lines

def test_v034_warmup_and_extended_lines():
    """No public 0.34 log yet (released 2026-11-16): these lines are written by hand from the
    format strings (v1/worker/extensible_kv_cache.py:693-705, :536-540) for Llama 3.1 8B,
    TP=1, bf16, 64-token blocks: 32 layers x 64 x 2 x 8 x 128 x 2 B = 8,388,608 B a block;
    5,000 blocks = 41,943,040,000 B = 39.0625 GiB -> "39.06"; kept = max(2.1, 0.4) = 2.1."""
    text = (
        "(EngineCore pid=1) INFO 11-20 10:00:00 [llm_engine.py:1] vLLM API server version 0.34.0\n"
        "(Worker pid=2) INFO 11-20 10:00:01 [extensible_kv_cache.py:694] Memory after warmup: "
        "40.12 GiB free, 1.0 GiB committed to the KV cache, 2.1 GiB kept for transient "
        "activations (2.1 GiB allocated at peak, 0.4 GiB of torch reservation growth); 5000 KV "
        "cache blocks (39.06 GiB) fit within the requested 60.0 GiB. Torch may reserve up to "
        "3.5 GiB.\n"
        "(Worker pid=2) INFO 11-20 10:00:02 [extensible_kv_cache.py:536] Extended KV cache to "
        "5000 blocks (39.06 GiB).\n")
    from kvlib.models.catalog import load_model
    e = explain(read_log_text(text), load_model("llama-3.1-8b"))
    assert e.settings["bytes_per_block"] == 8_388_608 and e.settings["block_size"] == 64
    got = {c.quantity: c.status for c in e.checks}
    assert got == {"kept for transient activations": "ok",
                   "KV cache blocks after warmup (GiB)": "ok",
                   "blocks within the requested memory": "ok",
                   "extended KV cache (GiB, mapped)": "ok",
                   "extended blocks vs the blocks that fit after warmup": "ok"}
    for old, new in [("(39.06 GiB) fit", "(39.16 GiB) fit"), ("2.1 GiB kept", "2.5 GiB kept"),
                     ("to 5000 blocks", "to 5001 blocks")]:
        assert not explain(read_log_text(text.replace(old, new)), load_model("llama-3.1-8b")).ok


# ---------------------------------------------------------------- the verdict (issue 43)

def test_nothing_checked_is_not_explained(capsys):
    """Issue 21348's excerpt without --model: one budget line (information) and one token
    line kvlib cannot work out without the model; no number was recomputed, so the verdict
    is "nothing checked", exit 1, and --json's ok is false."""
    name = "qwen3-235b-a22b-fp8_4xH100_tp4_issue21348.log"
    code, out, err = _run(capsys, LOGS / name)
    assert code == 1
    assert out.splitlines()[-1] == (
        "verdict: nothing checked: 0 number(s) agree, 0 disagree, 1 shown as information, "
        "1 recognised but not explained")
    assert len(err.splitlines()) == 1 and "nothing checked" in err and name in err
    code, out, _ = _run(capsys, LOGS / name, "--json")
    assert code == 1
    v = json.loads(out)["verdict"]
    assert v["ok"] is False and v["verdict"] == "nothing checked"


def test_explained_needs_one_number_checked(capsys):
    """With the model the same excerpt is checked (and disagrees, see above); a changed budget
    that explains it gives "explained" with ok true."""
    name = "qwen3-235b-a22b-fp8_4xH100_tp4_issue21348.log"
    code, out, _ = _run(capsys, LOGS / name, "--model", Q235, "--tp", "4", "--json")
    assert code == 1 and json.loads(out)["verdict"]["verdict"] == "DISAGREES"


def test_a_file_that_quotes_one_line_is_refused(capsys):
    """README.md quotes one "# GPU blocks" line among its prose: not a start-up log, refused
    in one line naming the file, exit 2."""
    readme = HERE.parent / "README.md"
    code, out, err = _run(capsys, readme)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"kvlib explain-log: error: {readme}: not a start-up log")


def test_engine_log_without_model_is_nothing_checked(capsys, tmp_path):
    """An SGLang line without --model is shown as information only: nothing checked, exit 1."""
    log = tmp_path / "sglang.log"
    log.write_text("[2026-09-12 00:22:48 TP0] KV Cache is allocated. dtype: torch.float8_e4m3fn,"
                   " #tokens: 454112, K size: 3.46 GB, V size: 3.46 GB\n")
    code, out, err = _run(capsys, log)
    assert code == 1 and "verdict: nothing checked" in out and "nothing checked" in err
