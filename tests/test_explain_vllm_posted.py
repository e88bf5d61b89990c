"""vLLM start-up logs posted in public issues and pull requests (issue 43), read by
``kvlib explain-log``: V1's "# GPU blocks: N" of 0.7.x, a tokens / concurrency pair with no
"Available KV cache memory" line before it, V0's utilization printed to two decimals, and logs
whose numbers kvlib cannot check (said as "nothing checked", never "explained"). Sources in
tests/fixtures/vllm_logs/SOURCES.md. Every expected figure is worked out by hand below.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvlib.cli import main

LOGS = Path(__file__).resolve().parent / "fixtures" / "vllm_logs"


def _run(capsys, name, *argv, path=None):
    code = main(["explain-log", str(path or LOGS / name), *argv, "--json"])
    d = json.loads(capsys.readouterr().out)
    return code, [(c["line"], c["quantity"], c["printed"], c["kvlib"], c["status"])
                  for c in d["checks"]], d


def _two(x: Fraction) -> str:
    return f"{float(x):.2f}"


def test_pr_12569_v1_gpu_blocks_line(capsys):
    """vLLM PR 12569 (Llama 3.1 70B W8A8, V1, Jan 2025): "# GPU blocks: 1381", then 1,381 x 16
    tokens / 2,048 = 22,096 / 2,048 = 10.789 -> "10.79x". No model needed: the block is 16."""
    assert _two(Fraction(1381 * 16, 2048)) == "10.79"
    code, checks, d = _run(capsys, "llama-3.1-70b-w8a8_v1-jan2025_PR12569.log")
    assert code == 0 and d["settings"]["rules"] == "v1-0.8"
    assert (10, "maximum concurrency for 2,048 tokens", "10.79x", "10.79x", "ok") in checks


def test_pr_13596_both_forms(capsys):
    """vLLM PR 13596's before and after: 127,626 blocks x 16 = 2,042,016 tokens;
    2,042,016 / 2,048 = 997.078 -> "997.08x" in both forms."""
    assert 127_626 * 16 == 2_042_016 and _two(Fraction(2_042_016, 2048)) == "997.08"
    code, checks, d = _run(capsys, "v1-blocks-and-tokens-forms_PR13596.log")
    assert code == 0 and d["verdict"]["explained"] == 2
    assert [c[:2] for c in checks if c[4] == "ok"] == [
        (2, "maximum concurrency for 2,048 tokens"), (4, "maximum concurrency for 2,048 tokens")]


def test_gpustack_1897_concurrency_from_the_tokens(capsys):
    """gpustack issue 1897 (DeepSeek-R1-Distill-Llama-70B, Llama 3.x 70B's cache shape, V1,
    April 2025): no budget line pasted, seven ranks' "106,640 tokens" and six "13.02x" (the
    seventh cut off). One full-attention group: 106,640 / 16 = 6,665 blocks; one request needs
    8,192 / 16 = 512; 6,665 / 512 = 13.018 -> "13.02x"."""
    assert 106_640 % 16 == 0 and _two(Fraction(106_640 // 16, 8192 // 16)) == "13.02"
    name = "deepseek-r1-distill-llama-70b_v1-apr2025_gpustack1897.log"
    code, checks, d = _run(capsys, name, "--model", "llama-3.1-70b", "--tp", "8")
    assert code == 0 and d["verdict"]["explained"] == 6
    assert {c[3] for c in checks if c[4] == "ok"} == {"13.02x"}
    assert [c[0] for c in checks if c[4] == "unexplained"] == [14]  # its pair is cut off
    # without a model the groups are unknown: nothing is called explained
    code, _, d = _run(capsys, name)
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"


def test_issue_15340_utilization_printed_to_two_decimals(capsys):
    """vLLM issue 15340 (V0, 23.58 GiB RTX 3090s): "total_gpu_memory (23.58GiB) x
    gpu_memory_utilization (0.94) = 22.29GiB". At exactly 0.94 the product is at most
    23.585 x 0.94 = 22.170; vLLM prints the utilization with %.2f, and 0.945 (which prints
    "0.94") gives 23.58 x 0.945 = 22.283 to 23.585 x 0.945 = 22.288, which prints "22.29"."""
    assert Fraction("23.585") * Fraction("0.94") < Fraction("22.285")
    assert Fraction("23.585") * Fraction("0.945") >= Fraction("22.285")
    code, checks, _ = _run(capsys, "deepseek-r1-gguf_8x3090_V0_issue15340.log")
    assert code == 0
    assert [c[4] for c in checks if c[1] == "memory vLLM may use"] == ["ok"]


def test_pr_14447_v0_budget_lines(capsys):
    """vLLM PR 14447 (a comment's V0 log, RTX 3090s): 23.58 x 0.99 = 23.344 to 23.349 ->
    "23.35"; 23.35 - 21.21 - 0.20 - 0.37 = 1.57 GiB, as printed (twice, two workers)."""
    assert Fraction("23.35") - Fraction("21.21") - Fraction("0.20") - Fraction("0.37") \
        == Fraction("1.57")
    code, checks, d = _run(capsys, "unnamed-moe-wna16_3090_V0_PR14447.log")
    assert code == 0 and d["verdict"]["explained"] == 4
    assert [c[0] for c in checks if c[1] == "KV cache memory"] == [4, 7]


def test_logs_kvlib_cannot_check_are_not_explained(capsys):
    """DeepSeek V4 Flash under vLLM 0.22 (issue 44376): kvlib traces V4 in 0.34.0 only, so its
    6.66 GiB / 13,528 tokens are recognised, not explained. Qwen3-14B (LMCache issue 1739):
    no config of it in the repository; 42,656 / 32,768 = 1.30 is left unchecked (the groups
    are the model's)."""
    code, checks, d = _run(capsys, "deepseek-v4-flash_2xGH200_tp2_fp8_v0.22_issue44376.log",
                           "--model", "deepseek-v4-flash", "--tp", "2", "--kv-dtype", "fp8",
                           "--block-size", "256")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert {c[4] for c in checks} == {"unexplained"}
    code, checks, d = _run(capsys, "qwen3-14b_1gpu_v1-0.10_lmcache1739.log")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert [c[4] for c in checks] == ["info", "unexplained", "unexplained"]


@pytest.mark.parametrize(("name", "argv", "old", "new"), [
    ("llama-3.1-70b-w8a8_v1-jan2025_PR12569.log", [], "10.79x", "10.81x"),
    ("v1-blocks-and-tokens-forms_PR13596.log", [], "2,042,016", "2,052,016"),
    ("deepseek-r1-distill-llama-70b_v1-apr2025_gpustack1897.log",
     ["--model", "llama-3.1-70b"], "13.02x", "13.12x"),
    ("deepseek-r1-gguf_8x3090_V0_issue15340.log", [], "= 22.29GiB", "= 22.39GiB"),
])
def test_one_number_changed_disagrees(capsys, tmp_path, name, argv, old, new):
    text = (LOGS / name).read_text(encoding="utf-8")
    assert old in text
    (tmp_path / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    code, _, d = _run(capsys, name, *argv, path=tmp_path / name)
    assert code == 1 and d["verdict"]["disagree"] == 1


TPU = "llama-3.1-8b-shape_tpu-v6e-x4_tp4_tpu-inference-PR145.log"


def test_tpu_inference_pr_145_pages_shape_and_hbm(capsys):
    """tpu-inference PR 145 (TPU v6e x 4, July 2025): "shape=32 * (3168, 256, 16, 128)" is 32
    layers of 3,168 pages of 256 tokens, 16 = 2 x 8 KV heads side by side, head_dim 128 (Llama
    3.1 8B's 32 x 8 x 128). Tokens 3,168 x 256 = 811,008 as printed; one request of 4,096
    tokens needs 4,096 / 256 = 16 pages, 3,168 / 16 = 198.00x as printed. Bytes: 32 x 3,168 x
    256 x 16 x 128 x 2 B = 106,300,440,576 B over the mesh's 'model': 4 = 26,575,110,144 B =
    24.75 GiB a device, and each device's HBM went from 3.74 to 28.49: 24.75."""
    assert 3168 * 256 == 811_008 and Fraction(3168, 4096 // 256) == 198
    per = 32 * 3168 * 256 * 16 * 128 * 2 // 4
    assert per == 26_575_110_144 and f"{per / 2**30:.2f}" == "24.75"
    assert Fraction("28.49") - Fraction("3.74") == Fraction("24.75")
    code, checks, d = _run(capsys, TPU, "--model", "llama-3.1-8b")
    assert code == 0 and d["verdict"]["explained"] == 4
    assert d["settings"]["block_size"] == 256 and d["settings"]["tensor_parallel_size"] == 4
    ok = {c[1]: (c[2], c[3]) for c in checks if c[4] == "ok"}
    assert ok["GPU KV cache size (blocks x page)"] == ("811,008", "811,008")
    assert ok["maximum concurrency for 4,096 tokens"] == ("198.00x", "198.00x")
    assert ok["TPU KV cache shape (layers, heads, head_dim)"] == ("32, 16, 128", "32, 16, 128")
    assert ok["HBM the KV cache took (per device)"] == ("24.75 GiB", "24.75 GiB")
    # GPU's 16-token blocks would need 811,008 / 16 = 50,688 blocks: the page is the shape's
    assert 811_008 // 16 == 50_688


@pytest.mark.parametrize(("old", "new", "quantities"), [
    ("(28.49, 31.25), (28.49", "(28.59, 31.25), (28.49", ["HBM the KV cache took (per device)"]),
    # 8 heads: the model's 2 x 8 no longer, and half the bytes (12.38 GiB, not 24.75)
    ("shape=32 * (3168, 256, 16, 128)", "shape=32 * (3168, 256, 8, 128)",
     ["TPU KV cache shape (layers, heads, head_dim)", "HBM the KV cache took (per device)"]),
])
def test_tpu_changed_number_disagrees(capsys, tmp_path, old, new, quantities):
    text = (LOGS / TPU).read_text(encoding="utf-8")
    assert old in text
    (tmp_path / TPU).write_text(text.replace(old, new, 1), encoding="utf-8")
    code, checks, _ = _run(capsys, TPU, "--model", "llama-3.1-8b", path=tmp_path / TPU)
    assert code == 1 and [c[1] for c in checks if c[4] == "mismatch"] == quantities


def test_issue_27508_needed_memory_depends_on_unprinted_batched_tokens(capsys):
    """vLLM issue 27508 (gpt-oss-120b on an H100, the poster's `--max-num-batched-tokens 1024`
    not in the log): "4.54 GiB KV cache is needed" for 131,072 tokens. gpt-oss-120b: 18 full
    + 18 sliding (window 128) layers, 8 KV heads of 64, bf16: a block of 16 tokens over 18
    layers is 18 x 16 x 2 x 8 x 64 x 2 B = 589,824 B. Full: 131,072 / 16 = 8,192 blocks. Sliding:
    cdiv(127 + F, 16) + 1 blocks for F in-flight tokens: F = 1,024 gives 73, and (8,192 + 73) x
    589,824 B = 4,874,895,360 B = 4.540 GiB, as printed; kvlib's default F = 16,384 gives 1,033
    blocks, 5.07 GiB. So the figure is said not explained (with the F that fit), not a
    disagreement."""
    blk = 18 * 16 * 2 * 8 * 64 * 2
    assert blk == 589_824
    sliding = -(-(127 + 1024) // 16) + 1
    assert sliding == 73 and f"{(8192 + sliding) * blk / 2**30:.2f}" == "4.54"
    assert f"{(8192 + 1033) * blk / 2**30:.2f}" == "5.07"
    code, checks, d = _run(capsys, "gpt-oss-120b_H100_v0.11_failure_issue27508.log",
                           "--model", "gpt-oss-120b", "--gpu", "H100-80GB")
    assert d["verdict"]["disagree"] == 0
    row = [c for c in checks if c[1] == "KV cache one request needs"]
    assert row == [(20, "KV cache one request needs", "4.54 GiB", "5.07 GiB", "unexplained")]
    reason = [c["reason"] for c in d["checks"] if c["quantity"] == "KV cache one request needs"]
    assert "866 to 1,153 in-flight tokens" in reason[0]  # 1,024 among them
