"""``kvlib explain-log`` on logs as people paste them (issue 43): records wrapped at 80
columns or split by the poster, vLLM 0.28+'s "Free memory on device" line, and the block of
the CPU and TPU backends. The logs are written from vLLM 0.34.0's format strings
(tests/fixtures/vllm_logs/from_source/README.md); every expected figure is worked out here
by hand for Llama 3.1 8B, TP 1, bf16: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B =
131,072 B per token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.log import explain, read_log, read_log_text

SRC = Path(__file__).resolve().parent / "fixtures" / "vllm_logs" / "from_source"
WORD = SRC / "llama-3.1-8b_v0.34.0-format_wordwrap80.log"
HARD = SRC / "llama-3.1-8b_v0.34.0-format_hardwrap80.log"
FAIL = SRC / "llama-3.1-8b_v0.34.0-format_failure_split3.log"
CPU = SRC / "llama-3.1-8b_v0.34.0-format_cpu.log"

PER_TOKEN = 32 * 2 * 8 * 128 * 2  # 131,072 B


def _run(capsys, *argv):
    code = main(["explain-log", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", [WORD, HARD], ids=["word-wrap", "hard-wrap"])
def test_wrapped_records_are_joined(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert max(map(len, lines)) <= 80 and len(lines) == 16
    log = read_log(path)
    got = [(f.kind, f.line.number, f.line.spans) for f in log.found]
    # version (lines 1-2), args (3-5), budget (6-7), capacity (8-9), free memory (10-16)
    assert got == [("version", 1, 2), ("args", 3, 3), ("available", 6, 2), ("capacity", 8, 2),
                   ("free_033", 10, 7)]
    assert log.version == "0.34.0"
    assert log.args == {"model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 32768,
                        "gpu_memory_utilization": 0.7}
    cap = log.found[3]
    assert cap.values == ("GPU", "36,608", "32,768", "1.12")


@pytest.mark.parametrize("path", [WORD, HARD], ids=["word-wrap", "hard-wrap"])
def test_wrapped_log_is_explained(path):
    e = explain(read_log(path), load_model("llama-3.1-8b"))
    # 0.34's block: 64 tokens; 64 x 131,072 B = 8,388,608 B a block
    assert e.settings["block_size"] == 64 and e.settings["bytes_per_block"] == 64 * PER_TOKEN
    assert e.settings["blocks_per_request"] == 32_768 // 64  # 512
    got = {c.quantity: c for c in e.checks}
    # 4.47 GiB +- 0.005 = [4.465, 4.475] x 2^30 / 2^23 = [571.52, 572.8] -> 571 or 572 blocks;
    # tokens = int(blocks / 512 x 32,768) = blocks x 64: 36,544 or 36,608 (printed 36,608)
    tokens = got["GPU KV cache size (tokens)"]
    assert tokens.status == "ok" and tokens.kvlib == "36,544 to 36,608"
    # 572 / 512 = 1.1171875 -> "1.12" (571 / 512 = 1.115 -> "1.12" too)
    conc = got["maximum concurrency for 32,768 tokens"]
    assert conc.status == "ok" and conc.kvlib == "1.12x"
    # the 0.28+ memory line: 31.36 x 0.7 = 21.952 -> 21.95; 21.95 - 16.02 - 1.46 = 4.47;
    # graphs = 4.47 GiB - (4,086,167,429 + 150 x 2^20 B) = 4.47 - 3.952 = 0.518 -> 0.52;
    # gap of the two suggestions 13,651,074,540 - 4,086,167,429 = 9,564,907,111 B = 8.908 GiB
    # = free 30.86 - requested 21.95 = 8.91
    for q in ("requested memory", "KV cache memory in use", "CUDA-graph memory",
              "the two --kv-cache-memory suggestions' gap"):
        assert got[q].status == "ok", q
    assert got["the two --kv-cache-memory suggestions' gap"].printed == "9,564,907,111 B"
    assert e.verdict == "explained" and e.checked == 6


@pytest.mark.parametrize(("old", "new", "line"), [
    ("request: 1.12x", "request: 1.13x", 8),   # 1.13 is no blocks / 512 with 571-572 blocks
    ("and 0.52 GiB for", "and 0.62 GiB for", 10),  # 4.47 - 3.952 = 0.518, not 0.62
    ("(0.7, 21.95", "(0.7, 22.95", 10),  # 31.36 x 0.7 = 21.952
])
def test_wrapped_log_changed_disagrees(capsys, tmp_path, old, new, line):
    text = WORD.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / "w.log").write_text(text.replace(old, new, 1), encoding="utf-8")
    code, out, err = _run(capsys, tmp_path / "w.log", "--model", "llama-3.1-8b")
    assert code == 1 and err.startswith(f"kvlib explain-log: line {line} ")
    assert f"(lines {line}-" in out and "joined: the paste wrapped one record" in out


def test_a_failure_split_over_three_lines():
    log = read_log(FAIL)
    fail = [f for f in log.found if f.kind == "kv_failure"]
    assert len(fail) == 1 and fail[0].line.number == 4 and fail[0].line.spans == 3
    assert fail[0].values == ("131072", "16.0", "9.5", "77824")
    e = explain(log, load_model("llama-3.1-8b"))
    got = {c.quantity: c for c in e.checks}
    # needed: 131,072 / 64 = 2,048 blocks x 8,388,608 B = 17,179,869,184 B = 16.0 GiB
    assert got["KV cache one request needs"].status == "ok"
    assert got["KV cache one request needs"].kvlib == "16.00 GiB"
    # 9.5 GiB +- 0.005 = [9.495, 9.505] x 128 blocks per GiB = [1215.36, 1216.64] -> 1,215 or
    # 1,216 blocks -> 77,760 or 77,824 tokens (printed 77,824)
    m = got["estimated maximum model length"]
    assert m.status == "ok" and m.kvlib == "77,760 to 77,824"
    assert e.verdict == "explained"


def test_a_failure_split_changed_disagrees(capsys, tmp_path):
    text = FAIL.read_text(encoding="utf-8").replace("length is 77824", "length is 77900")
    (tmp_path / "f.log").write_text(text, encoding="utf-8")
    code, _, err = _run(capsys, tmp_path / "f.log", "--model", "llama-3.1-8b")
    assert code == 1 and err.startswith("kvlib explain-log: line 4 ")


def test_bare_lines_are_not_joined():
    """Two records of a pasted excerpt without prefixes stay two (each is read alone)."""
    log = read_log_text("Available KV cache memory: 8.11 GiB\nGPU KV cache size: 178,880 tokens\n")
    assert [(f.kind, f.line.spans) for f in log.found] == [("available", 1), ("tokens", 1)]
    v0 = read_log_text("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage="
                       "15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB "
                       "non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90"
                       "\nGPU blocks: 1952, # CPU blocks: 2048\n")
    assert [(f.kind, f.values[-1] if f.kind == "blocks" else None) for f in v0.found] == [
        ("v0_profile", None), ("blocks", "2048")]


# ---------------------------------------------------------------- the backend's block

def test_cpu_backend_block_is_128(capsys):
    """The CPU backend's block is 128 tokens: 128 x 131,072 B = 16,777,216 B a block; the
    budget 4.0 GiB +- 0.005 = [3.995, 4.005] x 64 blocks per GiB = [255.68, 256.32] -> 255 or
    256 blocks; ceil(10,000 / 128) = 79 blocks a request; 256 / 79 = 3.2405 -> "3.24x";
    int(256 / 79 x 10,000) = int(32,405.06) = 32,405 tokens (255: 32,278)."""
    e = explain(read_log(CPU), load_model("llama-3.1-8b"))
    assert e.settings["block_size"] == 128 and e.settings["bytes_per_block"] == 128 * PER_TOKEN
    assert e.settings["blocks_per_request"] == 79
    got = {c.quantity: c for c in e.checks}
    assert got["GPU KV cache size (tokens)"].kvlib == "32,278 to 32,405"
    assert got["maximum concurrency for 10,000 tokens"].status == "ok"
    assert e.verdict == "explained"
    assert any("block 128: the CPU backend's (line 3's platform" in n for n in e.notes)
    # without the platform line the capacity line's "CPU" says it
    text = "\n".join(x for x in CPU.read_text(encoding="utf-8").splitlines()
                     if "detected platform" not in x)
    e2 = explain(read_log_text(text), load_model("llama-3.1-8b"))
    assert e2.settings["block_size"] == 128 and e2.ok


def test_block_size_flag_wins_and_says_so(capsys):
    """--block-size 64: 8,388,608 B a block, 511 or 512 blocks, ceil(10,000 / 64) = 157 a
    request: 512 / 157 = 3.261 -> 3.26x, not the log's 3.24x: the flag wins, and disagrees."""
    code, out, err = _run(capsys, CPU, "--model", "llama-3.1-8b", "--block-size", "64",
                          "--json")
    d = json.loads(out)
    assert code == 1 and d["settings"]["block_size"] == 64
    assert any(n.startswith("block 64: --block-size (the log says 128: the flag wins)")
               for n in d["notes"])
    assert "3.26x" in err


def test_tpu_backend_pages_by_256():
    """A TPU log: 256 x 131,072 B = 33,554,432 B a block; 4,096 / 256 = 16 blocks a request."""
    text = ("INFO 11-24 12:00:00 [__init__.py:287] Automatically detected platform tpu.\n"
            "INFO 11-24 12:00:00 [api_server.py:1846] vLLM API server version 0.34.0\n"
            "INFO 11-24 12:01:00 [kv_cache_utils.py:1168] TPU KV cache size: 5,632 tokens, "
            "Maximum concurrency for 4,096 tokens per request: 1.38x\n")
    e = explain(read_log_text(text), load_model("llama-3.1-8b"))
    assert e.settings["block_size"] == 256 and e.settings["bytes_per_block"] == 256 * PER_TOKEN
    assert e.settings["blocks_per_request"] == 16


#: posted logs whose poster split a record over lines (held in test_explain_vllm_posted_2026.py)
SPLIT_BY_POSTER = {"minimax-m2.7-awq_2xDGX-Spark_tp2_v0.29.1_failure_spark-vllm-docker396.log"}


@pytest.mark.parametrize("path", sorted(p for p in SRC.parent.glob("*.log")
                                        if p.name not in SPLIT_BY_POSTER), ids=lambda p: p.stem)
def test_posted_logs_have_no_false_joins(path):
    """The posted logs (one record a line, some bare) keep one record a line."""
    assert all(f.line.spans == 1 for f in read_log(path).found)
