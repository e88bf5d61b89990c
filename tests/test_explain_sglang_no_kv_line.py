"""Logs of SGLang and TensorRT-LLM with no KV line kvlib reads (the tester's round of issue 43):
named by their engine, not refused as "not a vLLM start-up log"; SGLang's scheduler line
``max_total_num_tokens=N`` is the pool's size in any release, read alone.

Before this change all three fixture logs below exited 2 with "not a vLLM start-up log: no line
of it reports KV-cache memory, blocks or concurrency", whatever the flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.serving.engines import detect_engine, log_signs

FIX = Path(__file__).resolve().parent / "fixtures"
SG = FIX / "sglang_logs"
# sgl-project/sglang issue 29575: the scheduler's line alone, model not named
LINE_ONLY = SG / "unnamed_context256000_max-total-num-tokens-line-only_sglang-issue29575.log"
# sgl-project/sglang issue 7515: the server's ready line and requests, no pool line
READY = SG / "unnamed_2025-06_ready-line_no-kv-line_sglang-issue7515.log"
# sgl-project/sglang PR 13466: Kimi K2's one MLA "KV size" line
KIMI = SG / "kimi-k2-0905_tp8_piecewise-cuda-graph_mla_sglang-pr13466.log"
# NVIDIA/TensorRT-LLM issue 2683: the C++ runtime's execution-context lines, no KV line
TRT = FIX / "trtllm_logs" / "no-kv-line_deepseek-v3-int4wo_tp8_H20_issue2683_posted.log"


def _run(capsys, *argv):
    code = main(["explain-log", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", [[], ["--model", "qwen3.6-35b-a3b"]])
def test_the_scheduler_line_alone_is_sglangs_pool_shown_not_checked(capsys, model):
    """The line prints max_total_num_tokens=2086558: SGLang's pool of 2,086,558 tokens. With no
    KV line to hold it against and no free memory around the weights (no "Load weight begin /
    end") to work it out from, it is shown as information, and the verdict is "nothing
    checked", exit 1 (docs/cli.md), with the model given or not."""
    code, out, err = _run(capsys, LINE_ONLY, *model, "--json")
    d = json.loads(out)
    assert code == 1 and d["engine"] == "sglang"
    assert d["verdict"] == {"verdict": "nothing checked", "ok": False, "explained": 0,
                            "disagree": 0}
    (c,) = d["checks"]
    assert (c["line"], c["quantity"], c["printed"], c["kvlib"], c["status"]) == (
        1, "pool size (max_total_num_tokens)", f"{2086558:,} tokens", "not checked", "info")
    assert c["printed"] == "2,086,558 tokens"
    assert ("no free memory before and after the weights" if model else "no model") in c["how"]
    assert "nothing checked" in err and err.count("\n") == 1


def test_the_scheduler_line_is_sglangs_in_any_release():
    """No other engine prints ``max_total_num_tokens=N``: the line alone makes the text
    SGLang's (before, only with a phrase of the 0.3 releases beside it)."""
    text = LINE_ONLY.read_text(encoding="utf-8")
    assert detect_engine(text) == "sglang"
    assert detect_engine("[2026-06-28 15:16:45 TP0] max_total_num_tokens=4096, chunked_prefill"
                         "_size=8192\n") == "sglang"
    assert detect_engine("SGLang's scheduler prints max_total_num_tokens at start-up\n") is None


def test_an_sglang_log_with_no_pool_line_is_named_sglangs(capsys):
    """Issue 7515's paste holds the ready line ("The server is fired up and ready to roll!",
    entrypoints/http_server.py:2600 in 0.5.23) and requests, no pool line: refused in one line
    naming SGLang, exit 2 (no KV figure at all, as vLLM's logs without one)."""
    code, out, err = _run(capsys, READY)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"kvlib explain-log: error: {READY}: an SGLang start-up log with no "
                          "KV-cache line kvlib reads: line 1 is SGLang's (the server's ready "
                          "line)")
    assert "not a vLLM" not in err


@pytest.mark.parametrize("model", [[], ["--model", "deepseek-v3", "--tp", "8"]])
def test_a_trtllm_log_with_no_kv_line_is_named_trtllms(capsys, model):
    """Issue 2683's paste: eleven "[TensorRT-LLM][INFO] [MemUsageChange]" lines of execution-
    context memory (2265.58 MiB) and TensorRT-managed allocations, no KV line: refused naming
    TensorRT-LLM, exit 2, whatever the flags."""
    code, out, err = _run(capsys, TRT, *model)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert (f"error: {TRT}: a TensorRT-LLM start-up log with no KV-cache line kvlib reads: line "
            "1 is TensorRT-LLM's (the C++ runtime's prefix, [TensorRT-LLM])") in err
    assert "Allocated X GiB for max tokens in paged KV cache" in err


def test_text_of_no_engine_is_refused_naming_the_three(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("a shopping list\nmilk, 2 L\n", encoding="utf-8")
    code, out, err = _run(capsys, tmp_path / "notes.txt")
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.endswith(f"{tmp_path / 'notes.txt'}: not a vLLM start-up log, nor an SGLang or "
                        "TensorRT-LLM one: no line of it reports KV-cache memory, blocks, tokens "
                        "or concurrency\n")


@pytest.mark.parametrize("text, engine, line", [
    ("x\n[2026-01-02 03:04:05] server_args=ServerArgs(model_path='m', tp_size=2)\n", "sglang", 2),
    ("python -m sglang.launch_server --model-path m --tp 2\n", "sglang", 1),
    ("[2025-11-21 04:11:02 TP5] Load weight begin. avail mem=78.12 GB\n", "sglang", 1),
    ("[12/01/2025-10:00:00] [TRT-LLM] [I] Starting the engine\n", "trtllm", 1),
    ("[TensorRT-LLM] TensorRT-LLM version: 1.2.0rc5\n", "trtllm", 1),
    ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --tp_size 2\n", "trtllm", 1),
    # vLLM's "TRTLLM" attention backend is vLLM's, not TensorRT-LLM's log
    ("INFO 10-11 12:00:00 [cuda.py:300] Using TRTLLM attention (query is quantized).\n", None, 0),
    ("", None, 0),
])
def test_whose_words(text, engine, line):
    sign = log_signs(text)
    assert (sign[0], sign[1]) == (engine, line) if engine else sign is None


def test_every_fixture_log_is_its_engines():
    """The broader SGLang detection takes no vLLM fixture log, and each engine's fixture logs
    carry its words or its KV lines."""
    for p in sorted((FIX / "vllm_logs").glob("*.log")):
        assert detect_engine(p.read_text(encoding="utf-8", errors="replace")) is None, p.name
    for folder, engine in (("sglang_logs", "sglang"), ("trtllm_logs", "trtllm")):
        for p in sorted((FIX / folder).glob("*.log")):
            text = p.read_text(encoding="utf-8")
            sign = log_signs(text)
            assert detect_engine(text) == engine or (sign and sign[0] == engine), p.name


def test_kimi_k2_mla_line(capsys):
    """PR 13466's line: #tokens 8050, KV size 0.53 GB. Kimi K2 (kimi-k2.5's text model): 61
    layers x (kv_lora_rank 512 + rope 64) x 2 B a token, whole on every rank, and one page (1)
    more: (8,050 + 1) x 576 x 61 x 2 B = 565,759,872 B = 0.5269 GiB, printed 0.53."""
    exact = (8050 + 1) * (512 + 64) * 61 * 2
    assert exact == 565_759_872 and f"{exact / (1 << 30):.2f}" == "0.53"
    code, out, err = _run(capsys, KIMI, "--model", "kimi-k2.5", "--json")
    d = json.loads(out)
    assert code == 0 and d["tp"] == 8 and d["verdict"]["verdict"] == "explained"
    (c,) = [c for c in d["checks"] if c["status"] != "info"]
    assert (c["line"], c["quantity"], c["printed"], c["kvlib"], c["status"]) == (
        7, "KV size", "0.53 GB", f"{exact / (1 << 30):.4f} GB", "ok")


def test_one_kv_size_with_a_model_without_latent_layers_is_shown(capsys):
    """The tester ran the line with --model qwen3.6-35b-a3b (K and V rows, no latent layer):
    before, "DISAGREES ... kvlib 0.0000 GB"; the one-figure form belongs to a latent or
    sparse-indexer pool, so the line is shown, naming the mismatch, and nothing is checked."""
    code, out, err = _run(capsys, KIMI, "--model", "qwen3.6-35b-a3b", "--json")
    d = json.loads(out)
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    c = [c for c in d["checks"] if c["quantity"] == "KV size"][0]
    assert (c["status"], c["kvlib"]) == ("info", "not checked")
    assert "qwen3.6-35b-a3b has no latent layers" in c["how"]
