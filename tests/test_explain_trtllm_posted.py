"""TensorRT-LLM start-up logs posted in public issues (issue 43), read by ``kvlib explain-log``:
the 0.5-0.8 releases' "Allocate N bytes for k/v cache." / "Using T tokens in paged KV cache"
lines and their refusal (kvlib/serving/engines/trtllm/log_legacy.py), and a 1.x PyTorch-backend
excerpt with a per-window block line. Sources in tests/fixtures/trtllm_logs/README.md.
Published configs: Llama 2 7B 32 layers x 32 KV heads x 128 (hidden 4096 / 32 heads), fp16;
Mistral 7B v0.1 32 layers x 8 KV heads x 128. Every expected figure is worked out by hand below.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvlib.cli import main

TRT = Path(__file__).resolve().parent / "fixtures" / "trtllm_logs"


def _run(capsys, name, *argv):
    code = main(["explain-log", str(TRT / name), *argv, "--json"])
    d = json.loads(capsys.readouterr().out)
    return code, [(c["line"], c["quantity"], c["printed"], c["kvlib"], c["status"])
                  for c in d["checks"]], d


def test_issue_1400_llama_2_7b_bytes_are_tokens_times_the_cell(capsys):
    """0.8 on an A100: 69,524,783,104 B for 132,608 tokens. Llama 2 7B's cell at fp16:
    2 (K, V) x 32 layers x 32 KV heads x 128 x 2 B = 524,288 B; 132,608 x 524,288 =
    69,524,783,104 exactly (the poster hides the model's name: its 7 GB of weights and these
    bytes fit the 7B shape, an inference the README says)."""
    cell = 2 * 32 * 32 * 128 * 2
    assert cell == 524_288 and 132_608 * cell == 69_524_783_104
    assert 132_608 == 2_072 * 64  # whole 64-token blocks, though the log names no block
    code, checks, _ = _run(capsys, "llama-2-7b-shape_smoothquant_A100_0.8_issue1400_posted.log",
                           "--model", "llama-2-7b")
    assert code == 0
    assert (2, "bytes for k/v cache", "69,524,783,104", "69,524,783,104", "ok") in checks
    # without a model the ratio is shown, not called explained
    code, checks, d = _run(capsys, "llama-2-7b-shape_smoothquant_A100_0.8_issue1400_posted.log")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert [c[3] for c in checks if c[1] == "bytes per token"] == ["524,288 B"]


def test_issue_366_mistral_7b_tp4_and_its_refusal(capsys):
    """tensorrtllm_backend issue 366, Mistral 7B at TP 4 on four A10G: Triton's 956,301,312 B
    for 29,184 tokens, then the refusal; run.py's 7,767,851,008 B (its tokens line cut off).
    Cell per rank: 2 x 32 layers x (8 KV heads / 4) x 128 x 2 B = 32,768 B."""
    cell = 2 * 32 * (8 // 4) * 128 * 2
    assert cell == 32_768
    assert 29_184 * cell == 956_301_312
    assert 29_184 == 228 * 128  # whole blocks of the refusal's tokensPerBlock (128)
    assert 1 * 128 * 272 == 34_816 > 29_184  # beam x block x blocks per sequence
    assert 7_767_851_008 == 237_056 * cell  # the cut line began "Using 237056 tokens"
    code, checks, _ = _run(capsys,
                           "mistral-7b_4xA10G_tp4_triton-vs-runpy_backend-issue366_posted.log",
                           "--model", "mistral-7b-v0.1", "--tp", "4")
    assert code == 0
    ok = {(c[0], c[1]): (c[2], c[3]) for c in checks if c[4] == "ok"}
    assert ok[(1, "bytes for k/v cache")] == ("956,301,312", "956,301,312")
    assert ok[(2, "tokens in blocks of 128")] == ("29,184", "228 x 128 + 0")
    assert ok[(3, "tokens one sequence needs")] == ("29,184 < 34,816", "1 x 128 x 272 = 34,816")
    assert ok[(3, "maxTokensInPagedKvCache")] == ("29,184", "29,184")
    assert ok[(3, "maxBlocksPerSeq")] == ("272", "272")
    assert ok[(4, "bytes for k/v cache")] == ("7,767,851,008", "237,056 tokens x 32,768 B")
    # at TP 1 (the flag forgotten) the bytes are a quarter of kvlib's: named, not explained
    code, checks, _ = _run(capsys,
                           "mistral-7b_4xA10G_tp4_triton-vs-runpy_backend-issue366_posted.log",
                           "--model", "mistral-7b-v0.1", "--kv-dtype", "bf16")
    assert code == 1
    assert (1, "bytes for k/v cache", "956,301,312", f"{29_184 * 4 * cell:,}", "mismatch") \
        in checks


def test_tutorials_pr_150_one_window_line_checks_without_a_model(capsys):
    """A 1.x PyTorch-backend excerpt (triton-inference-server/tutorials PR 150): one
    "[window size=2051]" pool, 116,617 primary blocks x 32 = 3,731,744 tokens as allocated;
    78.30 GiB / 3,731,744 = 22,529 B a token (about 22,528 = 2 x 22 x 4 x 64 x 2 B, TinyLlama
    1.1B's shape, which the post does not name: shown as information only)."""
    assert 116_617 * 32 == 3_731_744
    assert round(78.30 * 2**30 / 3_731_744) == 22_529
    code, checks, _ = _run(capsys,
                           "unnamed-22.5KB-per-token_window2051_pytorch_tutorials-PR150_posted.log")
    assert code == 0
    assert (7, "tokens", "3,731,744", "3,731,744", "ok") in checks
    assert (7, "tokens in blocks of 32", "3,731,744", "116,617 x 32 + 0", "ok") in checks
    assert not [c for c in checks if c[1] == "window rule"]  # one window: no VSWA


def test_issue_224_tokens_line_alone_is_information(capsys):
    """0.5 on an A10 (16-token blocks set at build, not in the log): "Using 10718 tokens" is
    10,718 = 669 x 16 + 14, printed before the rounding to whole blocks (the maintainers'
    answer), so no check holds it; with Llama 2 7B it is 10,718 x 524,288 B = 5.23 GiB,
    information, and the verdict is "nothing checked"."""
    assert divmod(10_718, 16) == (669, 14)
    assert f"{10_718 * 524_288 / 2**30:.2f}" == "5.23"
    code, checks, d = _run(capsys, "llama-2-7b_A10_tpb16_0.5_issue224_posted.log",
                           "--model", "llama-2-7b")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert checks == [(1, "tokens in paged KV cache", "10,718",
                       "10,718 x 524,288 B = 5,619,318,784 B (5.23 GiB)", "info")]


@pytest.mark.parametrize(("old", "new"), [("132608", "132609"), ("69524783104", "69524783105")])
def test_one_number_changed_disagrees(capsys, tmp_path, old, new):
    text = (TRT / "llama-2-7b-shape_smoothquant_A100_0.8_issue1400_posted.log").read_text()
    (tmp_path / "x.log").write_text(text.replace(old, new))
    code = main(["explain-log", str(tmp_path / "x.log"), "--model", "llama-2-7b", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"]["disagree"] == 1


def test_issue_2268_primary_pool_blocks_from_the_budget(capsys):
    """TensorRT-LLM issue 2268 (Qwen1.5-7B-sft, 0.13.0.dev): "available: 21.89 GiB", "Number of
    blocks in KV cache primary pool: 631". calculateMaxNumBlocks: maxTokens = int(0.9 x
    available / bytes per token), blocks = ceil(maxTokens / 64). Qwen1.5-7B's cache is Llama 2
    7B's shape (32 layers x 32 KV heads x 128, fp16: 524,288 B a token), so maxTokens =
    int(0.9 x 21.89 x 2^30 / 524,288) = int(0.9 x 21.89 x 2,048) = 40,347 (40,338 to 40,356 over
    the rounding of 21.89), and ceil(40,347 / 64) = 631 (630.4 blocks: the answer to the
    poster's "why only 631 blocks")."""
    lo = int(Fraction(9, 10) * Fraction("21.885") * 2048)
    hi = int(Fraction(9, 10) * Fraction("21.895") * 2048)
    assert (lo, hi) == (40_338, 40_356)
    assert -(-lo // 64) == -(-hi // 64) == 631
    code, checks, _ = _run(capsys, "qwen1.5-7b-sft_0.13.0.dev_issue2268_posted.log",
                           "--model", "llama-2-7b")
    assert code == 0
    assert checks == [(2, "blocks in the primary pool", "631", "631", "ok")]


def test_docs_memory_md_allocation_against_the_budget(capsys):
    """TensorRT-LLM's docs/source/reference/memory.md (its FAQ's C++-runtime log): available
    70.48 GiB, 4,060 primary blocks of 64 = 259,840 tokens, "Allocated 63.44 GiB". Without a
    model: 0.9 x 70.48 = 63.432 GiB, plus at most one block (64 x 63.44 GiB / 259,840 =
    0.0156 GiB) as the tokens round up: 63.44 fits. With Llama 2 7B's shape at one byte (the
    bytes say 262,154 B a token, 2 x 32 x 32 x 128 x 1 = 262,144): int(0.9 x 70.48 x 2^30 /
    262,144) = 259,817 tokens (259,799 to 259,836), ceil(/ 64) = 4,060."""
    assert 4060 * 64 == 259_840
    assert Fraction(9, 10) * Fraction("70.48") == Fraction("63.432")
    lo = int(Fraction(9, 10) * Fraction("70.475") * 4096)
    hi = int(Fraction(9, 10) * Fraction("70.485") * 4096)
    assert -(-lo // 64) == -(-hi // 64) == 4060
    name = "unnamed-7b-shape_int8kv_cpp-runtime_docs-memory-md.log"
    code, checks, _ = _run(capsys, name)
    assert code == 0
    assert (15, "GiB allocated vs the budget", "63.44 GiB",
            "63.432 GiB + up to one block (0.0156 GiB)", "ok") in checks
    assert (15, "tokens", "259,840", "259,840", "ok") in checks
    code, checks, _ = _run(capsys, name, "--model", "llama-2-7b")
    assert code == 0 and (11, "blocks in the primary pool", "4,060", "4,060", "ok") in checks


def test_a_fraction_other_than_the_default_is_not_explained(capsys, tmp_path):
    """kv_cache_free_gpu_mem_fraction set (the log cannot say): 0.5 x 21.89 GiB would give
    ceil(int(0.5 x 21.89 x 2,048) / 64) = 351 blocks; 351 is shown as not the default's count,
    neither agreeing nor disagreeing."""
    text = (TRT / "qwen1.5-7b-sft_0.13.0.dev_issue2268_posted.log").read_text()
    (tmp_path / "x.log").write_text(text.replace(": 631", ": 351"))
    code = main(["explain-log", str(tmp_path / "x.log"), "--model", "llama-2-7b", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert [c["status"] for c in d["checks"]] == ["info"]


def test_issue_4275_primary_pool_from_the_budget(capsys):
    """The 0.19.0 Llama 3.1 8B lines (issue 4275, one byte a value as inferred from its 16.05
    GiB / 263,008 tokens): int(0.9 x 17.83 GiB / 65,536 B) = 0.9 x 17.83 x 16,384 = 262,914
    tokens (262,840 to 262,987 over the rounding), ceil(/ 32) = 8,214 to 8,219: the printed
    8,219 is among them."""
    lo = int(Fraction(9, 10) * Fraction("17.825") * 16384)
    hi = int(Fraction(9, 10) * Fraction("17.835") * 16384)
    assert (-(-lo // 32), -(-hi // 32)) == (8214, 8219)
    code, checks, _ = _run(capsys, "llama-3.1-8b_0.19.0_no-dtype_posted.log",
                           "--model", "llama-3.1-8b")
    assert code == 0
    assert (2, "blocks in the primary pool", "8,219", "8,214 to 8,219", "ok") in checks


def test_backend_issue_576_primary_pool_of_two_ranks(capsys):
    """triton-inference-server/tensorrtllm_backend issue 576 (the C++ runtime, TP 2, a 1M-token
    engine of 8,231 MiB a rank: Llama 3 8B's shape, 32 layers x 8 KV heads x 128, inferred):
    each rank prints "available: 74.69 GiB" and 17,210 primary blocks. At TP 2, 4 KV heads:
    2 x 32 x 4 x 128 x 2 B = 65,536 B a token; int(0.9 x 74.695 GiB / 65,536) = 1,101,422
    tokens -> ceil(/ 64) = 17,210 blocks (the budget's upper end: 74.685 GiB gives 17,208).
    The secondary (host) pool's 10,728 blocks depend on a host cache size the log never prints:
    shown as information."""
    cell = 2 * 32 * 4 * 128 * 2
    hi = int(Fraction(9, 10) * (Fraction("74.69") + Fraction(5, 1000)) * 1024**3 // cell)
    lo = int(Fraction(9, 10) * (Fraction("74.69") - Fraction(5, 1000)) * 1024**3 // cell)
    assert cell == 65_536 and -(-hi // 64) == 17_210 and -(-lo // 64) == 17_208
    name = "unnamed-8b-shape_tp2_secondary-pool_backend-issue576_posted.log"
    code, checks, _ = _run(capsys, name, "--model", "llama-3.1-8b", "--tp", "2")
    assert code == 0
    assert [(c[0], c[2], c[4]) for c in checks] == [
        (9, "17,210", "ok"), (10, "10,728", "info"), (11, "17,210", "ok"), (12, "10,728", "info")]
    # the host pool: 10,728 blocks x 64 tokens x 65,536 B = 44,996,493,312 B of host memory,
    # a size no line prints (shown, never called explained)
    assert checks[1][3] == f"10,728 x 64 tokens x 65,536 B = {10_728 * 64 * 65_536:,} B"
    code, _, d = _run(capsys, name)
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"


def test_backend_issue_361_bytes_fit_a_13b_shape_at_tp_2(capsys):
    """triton-inference-server/tensorrtllm_backend issue 361 (0.8 in the 24.02 image):
    14,575,206,400 B for 35,584 tokens = 409,600 B a token = 2 x 40 layers x 20 KV heads
    (40 / TP 2) x 128 x 2 B, Llama 2 13B's shape at TP 2 (its 6,867 MiB engine a rank fits it
    too): inferred, not stated. Llama 2 7B's 524,288 B a token would give 18,656,264,192 B:
    a disagreement."""
    assert 2 * 40 * 20 * 128 * 2 == 409_600 and 35_584 * 409_600 == 14_575_206_400
    name = "unnamed-13b-shape_tp2_0.8_triton-24.02_backend-issue361_posted.log"
    code, checks, _ = _run(capsys, name, "--model", str(TRT / "configs" / "llama-2-13b.json"),
                           "--tp", "2")
    assert code == 0
    assert (10, "bytes for k/v cache", "14,575,206,400", "14,575,206,400", "ok") in checks
    code, checks, _ = _run(capsys, name, "--model", "llama-2-7b")
    assert code == 1 and checks[0][3] == f"{35_584 * 524_288:,}"
