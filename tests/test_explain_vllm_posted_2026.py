"""More vLLM start-up logs posted in public issues (2025-2026 releases, issue 43), read by
``kvlib explain-log`` as the maintainers would: hybrid Gated DeltaNet models (Qwen3.6) on 0.20
and 0.24 with an fp8 cache, MTP speculative decoding, TP 2, a cut-off settings line, DeepSeek V3's
latent cache on eight ROCm GPUs, a Docker Compose prefix, the 0.28+ memory lines of two ranks, a
start-up failure quoted line by line behind "▎" bars, a budget fixed by --kv-cache-memory, and
the CPU backend's 128-token block. Sources in tests/fixtures/vllm_logs/SOURCES.md.

Every expected figure is worked out by hand below, from the published configs:

* Qwen3.6-35B-A3B (bundled ``qwen3.6-35b-a3b``): 40 layers, every 4th full attention (10), 2 KV
  heads x 256; 30 Gated DeltaNet layers with 16 key and 32 value heads of 128, conv kernel 4.
* Qwen3.6-27B: the cache shape of bundled ``qwen3.5-27b`` (64 layers, 16 full attention with 4
  KV heads x 256, 48 Gated DeltaNet with 16 key and 48 value heads of 128, conv kernel 4, one MTP
  layer).
* DeepSeek V3 (bundled): 61 MLA layers, latent 512 + RoPE key 64.
* Qwen3-30B-A3B (tests/fixtures/configs): 48 layers x 4 KV heads x 128.
* MiniMax M2.7 (bundled): 62 layers x 8 KV heads x 128.
* Qwen3-0.6B (the corpus config, saved as fixtures/vllm_logs/configs/qwen3-0.6b.json): 28
  layers x 8 KV heads x 128.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.serving.engines.vllm.log import read_log_text

LOGS = Path(__file__).resolve().parent / "fixtures" / "vllm_logs"
GiB = 1024**3


def _run(capsys, name, *argv):
    code = main(["explain-log", str(LOGS / name), *argv, "--json"])
    d = json.loads(capsys.readouterr().out)
    return code, [(c["line"], c["quantity"], c["printed"], c["kvlib"], c["status"])
                  for c in d["checks"]], d


def _two(x: Fraction) -> str:
    return f"{float(x):.2f}"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------- Qwen3.6-35B-A3B, vLLM 0.24.0

# Gated DeltaNet state at TP 1: conv (4 - 1) rows x (128 x 16 x 2 + 128 x 32) channels x 2 B
# + temporal 32 heads x 128 x 128 x 4 B (fp32)
STATE_35B = 3 * (128 * 16 * 2 + 128 * 32) * 2 + 32 * 128 * 128 * 4
# fp8 attention: 2 (K, V) x 2 KV heads x 256 x 1 B = 1,024 B a token a layer; the block is the
# smallest multiple of 16 tokens whose page holds one state page
BLOCK_35B = _cdiv(_cdiv(STATE_35B, 1024), 16) * 16
PER_BLOCK_35B = 10 * BLOCK_35B * 1024  # groups of 10 layers (10 full : 30 linear)
PER_REQUEST_35B = _cdiv(131_072, BLOCK_35B) + 3 * 2  # full + 3 linear groups of 2 (align mode)


def test_hand_figures_of_qwen3_6_35b():
    assert STATE_35B == 2_146_304 and BLOCK_35B == 2_096
    assert PER_BLOCK_35B == 21_463_040 and PER_REQUEST_35B == 63 + 6 == 69


@pytest.mark.parametrize("name, avail, blocks, tokens, conc", [
    ("qwen3.6-35b-a3b-nvfp4_RTX5090_v0.24.0_kvfp8_club3090-652.log", "6.01", 300, "569,878",
     "4.35"),
    ("qwen3.6-35b-a3b-nvfp4_RTX5090_v0.24.0_kvfp8_club3090-612.log", "5.98", 299, "567,978",
     "4.33"),
])
def test_club3090_qwen3_6_35b_tokens_follow_the_0_20_rule(capsys, name, avail, blocks, tokens,
                                                           conc):
    """club-3090 issues 652 and 612 (RTX 5090, vLLM 0.24.0, kv fp8, 131,072 tokens): 6.01 GiB /
    21,463,040 B = 300 blocks (6.005 and 6.015 GiB give 300.4 and 300.9); 300 / 69 = 4.348 ->
    "4.35x"; the tokens are int(300 / 69 x 131,072) = int(569,878.3) = 569,878, vLLM 0.20+'s rule,
    not 0.11-0.19's 300 // 4 groups x 2,096 = 157,200 (kvlib's figure before: DISAGREES)."""
    lo, hi = ((Fraction(avail) + d) * GiB for d in (Fraction(-5, 1000), Fraction(5, 1000)))
    assert int(hi // PER_BLOCK_35B) == blocks and int(lo // PER_BLOCK_35B) >= blocks - 1
    assert f"{int(Fraction(blocks, PER_REQUEST_35B) * 131_072):,}" == tokens
    assert _two(Fraction(blocks, PER_REQUEST_35B)) == conc
    assert (blocks // 4) * BLOCK_35B != int(tokens.replace(",", ""))  # the older rule misses
    code, checks, d = _run(capsys, name, "--model", "qwen3.6-35b-a3b", "--gpu", "RTX-5090")
    assert code == 0 and d["settings"]["rules"] == "v1-0.20"
    assert d["settings"]["blocks_per_request"] == PER_REQUEST_35B
    assert [c[4] for c in checks if c[4] != "info"] == ["ok", "ok"]
    assert (2, "GPU KV cache size (tokens)", tokens, "ok") == (
        checks[1][0], checks[1][1], checks[1][2], checks[1][4])
    # TP comes from the non-default args: absent there, it is vLLM's default 1, said so
    assert any("not among the log's non-default args" in n for n in d["notes"])


def test_club3090_652_without_gpu_is_the_same_on_every_gpu(capsys):
    """The log names no GPU. In 0.24.0 align mode sizes the hybrid block as the smallest that
    holds a state page on every GPU (0.24.0 platforms/interface.py:751-768; FlashInfer's 64-token
    GDN checkpoint alignment, which makes Hopper's block differ, came in 0.33), so the figures are
    the RTX 5090's: block 2,096, 69 blocks a request (63 + 3 x 2), explained without --gpu."""
    code, checks, d = _run(capsys, "qwen3.6-35b-a3b-nvfp4_RTX5090_v0.24.0_kvfp8_club3090-652.log",
                           "--model", "qwen3.6-35b-a3b")
    assert code == 0 and d["settings"]["state_blocks"] == "align"
    assert d["settings"]["block_size"] == BLOCK_35B == 2_096
    assert d["settings"]["blocks_per_request"] == PER_REQUEST_35B == 69
    assert [c[4] for c in checks if c[4] != "info"] == ["ok", "ok"]


def test_club3090_652_one_changed_token_disagrees(capsys, tmp_path):
    text = (LOGS / "qwen3.6-35b-a3b-nvfp4_RTX5090_v0.24.0_kvfp8_club3090-652.log").read_text()
    bad = tmp_path / "bad.log"
    bad.write_text(text.replace("569,878 tokens", "569,978 tokens"))
    code = main(["explain-log", str(bad), "--model", "qwen3.6-35b-a3b", "--gpu", "RTX-5090"])
    capsys.readouterr()
    assert code == 1


# -------------------------------------------------- Qwen3.6-27B, TP 2, MTP k = 3, fp8 e5m2

K = 3
# TP 2: conv (4 - 1 + k) rows x (128 x 16 x 2 + 128 x 48) / 2 channels x 2 B; temporal 48 / 2
# heads x 128 x 128 x 4 B (vLLM keeps k more conv rows under speculative decoding)
STATE_27B = (4 - 1 + K) * (128 * 16 * 2 + 128 * 48) // 2 * 2 + 48 // 2 * 128 * 128 * 4
BLOCK_27B = _cdiv(_cdiv(STATE_27B, (4 // 2) * 2 * 256), 16) * 16  # 1,024 B a token a layer
# 16 full + 1 MTP layer = 17; 48 linear in 3 groups of 17 (3 padding slots); the full group
# needs cdiv(262,144, block), each linear group 2 + k blocks (align mode with k spec blocks)
PER_REQUEST_27B = _cdiv(262_144, BLOCK_27B) + 3 * (2 + K)


def test_hand_figures_of_qwen3_6_27b_with_mtp():
    assert STATE_27B == 61_440 + 1_572_864 == 1_634_304
    assert BLOCK_27B == 1_600 and PER_REQUEST_27B == 164 + 15 == 179


@pytest.mark.parametrize("name, tokens, conc, blocks, argv", [
    ("qwen3.6-27b-int4_2x3090_tp2_mtp3_v0.20.1_club3090-91.log", "619,479", "2.36", 423, []),
    ("qwen3.6-27b-int4_2x3090_tp2_mtp3_kvfp8e5m2_club3090-295.log", "620,944", "2.37", 424, []),
])
def test_club3090_qwen3_6_27b_mtp_blocks_per_request(capsys, name, tokens, conc, blocks, argv):
    """club-3090 issues 91 (vLLM 0.20.1) and 295 (2 x RTX 3090, TP 2, fp8_e5m2, MTP k = 3,
    262,144 tokens; no budget line pasted): the printed tokens fix the blocks by the 0.20+ rule,
    int(423 / 179 x 262,144) = int(619,479.4) = 619,479, and 423 / 179 = 2.363 -> "2.36x".
    Before, kvlib counted neither the k extra conv rows nor the k spec blocks of each state
    group: 174 blocks a request and "no whole block count" (DISAGREES)."""
    assert f"{int(Fraction(blocks * 262_144, PER_REQUEST_27B)):,}" == tokens
    assert _two(Fraction(blocks, PER_REQUEST_27B)) == conc
    code, checks, d = _run(capsys, name, "--model", "qwen3.5-27b", "--gpu", "RTX-4090", *argv)
    assert code == 0 and d["settings"]["blocks_per_request"] == PER_REQUEST_27B
    assert d["settings"]["padding_layers"] == 3
    assert [(c[2], c[3], c[4]) for c in checks] == [(conc + "x", conc + "x", "ok")]


def test_club3090_642_cut_settings_are_not_a_disagreement(capsys):
    """club-3090 issue 642: the non-default args are cut off before tensor_parallel_size,
    kv_cache_dtype and speculative_config. Even with --tp 2 --kv-dtype fp8, kvlib cannot know
    the MTP drafter (623,873 tokens = int(426 / 179 x 262,144) with it): its 174-block figure is
    said not explained, never DISAGREES, and the verdict is "nothing checked"."""
    assert int(Fraction(426 * 262_144, PER_REQUEST_27B)) == 623_873
    code, checks, d = _run(capsys, "qwen3.6-27b-int4_2x3090_tp2_mtp3_kvfp8e5m2_club3090-642.log",
                           "--model", "qwen3.5-27b", "--gpu", "RTX-4090", "--tp", "2",
                           "--kv-dtype", "fp8")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert d["verdict"]["disagree"] == 0 and d["verdict"]["not_explained"] == 2
    assert any("cut off" in n for n in d["notes"])


def test_cut_args_keep_the_settings_before_the_cut():
    log = read_log_text((LOGS / "qwen3.6-27b-int4_2x3090_tp2_mtp3_kvfp8e5m2_club3090-642.log")
                        .read_text())
    assert log.args_cut == 8
    assert log.args["max_model_len"] == 262_144 and log.args["dtype"] == "float16"
    assert "tensor_parallel_size" not in log.args


# ----------------------------------------------------- DeepSeek V3, 8 x MI308, TP 8, V1 0.8

def test_issue_15928_deepseek_v3_latent_cache_on_rocm(capsys):
    """vLLM issue 15928 (8 x MI308, V1, April 2025): five ranks' tokens and concurrency, no
    budget line. MLA keeps one latent row a token a layer, not split by TP: (512 + 64) x 2 B
    = 1,152 B; 16-token blocks: 61 x 16 x 1,152 = 1,124,352 B. 107,824 / 16 = 6,739 blocks;
    one request needs 32,768 / 16 = 2,048; 6,739 / 2,048 = 3.290 -> "3.29x"."""
    assert 61 * 16 * (512 + 64) * 2 == 1_124_352
    assert 107_824 % 16 == 0 and _two(Fraction(107_824 // 16, 2048)) == "3.29"
    code, checks, d = _run(capsys, "deepseek-v3_8xMI308_tp8_v1-apr2025_issue15928.log",
                           "--model", "deepseek-v3", "--tp", "8", "--gpu", "MI300X")
    assert code == 0 and d["verdict"]["explained"] == 5
    assert [c[2] for c in checks if c[4] == "ok"] == ["3.29x", "3.28x", "3.27x", "3.28x",
                                                      "3.28x"]
    code, _, d = _run(capsys, "deepseek-v3_8xMI308_tp8_v1-apr2025_issue15928.log")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"


# ---------------------------------------------- Qwen3-30B-A3B, Docker Compose prefix, 0.8.5

def test_issue_17327_docker_prefix_qwen3_30b_tp4(capsys):
    """vLLM issue 17327 (Qwen3 usage guide; the poster's Qwen3 OOM on 0.8.5, four ranks loading
    14.25 GiB each: Qwen3-30B-A3B), every line behind "qwen3-1  | ". TP 4 leaves 1 KV head:
    2 x 1 x 128 x 2 B x 48 layers x 16 = 393,216 B a block; 198,784 / 16 = 12,424 blocks;
    12,424 / (8,192 / 16 = 512) = 24.27."""
    assert 2 * 1 * 128 * 2 * 48 * 16 == 393_216
    assert _two(Fraction(198_784 // 16, 8192 // 16)) == "24.27"
    code, checks, d = _run(capsys, "qwen3-30b-a3b_4gpu_docker_v0.8.5_issue17327.log",
                           "--model", str(LOGS.parent / "configs" / "qwen3-30b-a3b.json"),
                           "--tp", "4")
    assert code == 0
    assert [(c[0], c[2], c[3], c[4]) for c in checks] == [(2, "24.27x", "24.27x", "ok")]
    # without --tp: the pasted lines show rank 1 (of four), so TP is at least 2, said so, never
    # the 1 a log without ranks would be assumed to run
    code, _, d = _run(capsys, "qwen3-30b-a3b_4gpu_docker_v0.8.5_issue17327.log",
                      "--model", str(LOGS.parent / "configs" / "qwen3-30b-a3b.json"))
    assert d["settings"]["tensor_parallel_size"] == 2
    assert any("highest TP rank the log prints (1)" in n for n in d["notes"])


# ------------------------------------------- the 0.28+ memory lines of two ranks, no model

def test_club3090_1087_two_ranks_memory_lines(capsys):
    """club-3090 issue 1087 (2 x RTX 5090, TP 2, Qwen3.8-27B FP8, whose config kvlib does not
    hold): each rank's "Free memory on device" line is checked for its arithmetic without a
    model: 31.4 x 0.92 = 28.888 -> "28.88"; 28.88 - 15.03 - 1.59 = 12.26 (rank 0) and 28.88 -
    15.05 - 1.59 = 12.24 (rank 1), as printed."""
    assert Fraction("28.88") - Fraction("15.03") - Fraction("1.59") == Fraction("12.26")
    assert Fraction("28.88") - Fraction("15.05") - Fraction("1.59") == Fraction("12.24")
    code, checks, d = _run(capsys, "qwen3.8-27b-fp8_2x5090_tp2_free-memory-lines_club3090-1087.log")
    assert code == 0 and d["verdict"]["explained"] == 8 and d["verdict"]["disagree"] == 0
    assert ("12.26 GiB", "ok") in [(c[2], c[4]) for c in checks]


# -------------------------------------------- MiniMax M2.7 AWQ, 2 x DGX Spark, a quoted failure

def test_spark_vllm_docker_396_quoted_failure(capsys):
    """eugr/spark-vllm-docker issue 396 (2 x DGX Spark, TP 2, vLLM 0.29.1): the failure quoted
    over three lines, each behind "▎ ". TP 2 keeps 4 of 8 KV heads: 62 x 4 x 128 x 2 (K, V) x
    2 B = 126,976 B a token; 196,608 tokens = 12,288 blocks of 16 x 2,031,616 B =
    24,964,497,408 B = 23.25 GiB exactly; 22.5 GiB / 2,031,616 B = 11,891.5 blocks, and
    11,892 x 16 = 190,272 tokens at the budget's upper end."""
    assert 62 * 4 * 128 * 2 * 2 == 126_976 and 126_976 * 196_608 == 24_964_497_408
    assert Fraction(24_964_497_408, GiB) == Fraction("23.25")
    assert 11_892 * 16 == 190_272
    code, checks, d = _run(capsys,
                           "minimax-m2.7-awq_2xDGX-Spark_tp2_v0.29.1_failure_spark-vllm-docker396.log",
                           "--model", "minimax-m2.7", "--tp", "2")
    assert code == 0 and d["verdict"]["disagree"] == 0
    ok = {(c[1], c[2]) for c in checks if c[4] == "ok"}
    assert ("KV cache one request needs", "23.25 GiB") in ok
    assert ("estimated maximum model length", "190272") in ok
    assert d["checks"][1]["lines"] == 3  # lines 2-4 joined


# ------------------------------------------------- Gemma 4, a budget fixed by --kv-cache-memory

def test_issue_49878_kv_cache_memory_bytes_is_the_budget(capsys):
    """vLLM issue 49878 (Gemma 4, 0.26): "reserved 49.0 GiB memory for KV Cache as specified by
    kv_cache_memory_bytes" is the budget (shown as given, never called measured), and the start
    failure after it has no negative budget before it: not explained. Before, kvlib refused the
    file as "not a vLLM start-up log"."""
    code, checks, d = _run(capsys, "gemma4_v0.26_kv-cache-memory-bytes_failure_issue49878.log")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert (5, "KV cache memory (kv_cache_memory_bytes)", "49.0 GiB", "taken as given",
            "info") in checks


# ------------------------------------------------- Qwen3-0.6B on the CPU backend, a failure

def test_issue_29233_cpu_failure_with_128_token_blocks(capsys):
    """vLLM issue 29233 (CPU backend, `vllm bench throughput`'s default Qwen3-0.6B, 40,960
    tokens): 28 x 8 x 128 x 2 x 2 B = 114,688 B a token; 128-token blocks of 14,680,064 B;
    40,960 / 128 = 320 blocks = 4,697,620,480 B = 4.375 GiB -> "4.38"; 4.00 GiB / 14,680,064 B
    = 292.6 -> 292 blocks x 128 = 37,376 tokens. The log does not say CPU: --block-size 128."""
    assert 28 * 8 * 128 * 2 * 2 == 114_688 and 114_688 * 128 == 14_680_064
    assert 320 * 14_680_064 == 4_697_620_480 and 4 * GiB // 14_680_064 == 292
    code, checks, d = _run(capsys, "qwen3-0.6b_cpu-backend_failure_issue29233.log",
                           "--model", str(LOGS / "configs" / "qwen3-0.6b.json"),
                           "--block-size", "128")
    assert code == 0
    ok = {(c[1], c[2], c[3]) for c in checks if c[4] == "ok"}
    assert ("KV cache one request needs", "4.38 GiB", "4.38 GiB") in ok
    assert ("estimated maximum model length", "37376", "37,376") in ok


def test_a_cut_engine_line_names_the_model_the_args_hold_whole():
    """club-3090 issue 652's engine line ends inside the model's path ("model='~/.cache/huggin"):
    the non-default args hold it whole, and the error names that path, not the stub."""
    from kvlib.serving.engines.vllm.log import model_name

    log = read_log_text((LOGS / "qwen3.6-35b-a3b-nvfp4_RTX5090_v0.24.0_kvfp8_club3090-652.log")
                        .read_text())
    assert log.engine["model"] == "~/.cache/huggin"
    assert model_name(log) == "~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4"


def test_the_banner_of_0_19_on_gives_release_and_model():
    """vLLM 0.19 on print a block-letter banner in place of "vLLM API server version": two of
    its lines as vLLM issue 39734 posts them (trailing spaces as posted) give the release and
    the model, and a line whose colour codes were pasted as text ("^[[0;36m", vLLM issue 33155)
    is still read."""
    from kvlib.serving.engines.vllm.log import model_name

    text = ("(APIServer pid=1327189) INFO 04-15 07:22:41 [utils.py:299]  ▄▄ ▄█ █     █     █ ▀▄▀ █"
            "  version 0.19.1rc1.dev301+g60995c05b" + " " * 26 + "\n"
            "(APIServer pid=1327189) INFO 04-15 07:22:41 [utils.py:299]   █▄█▀ █     █     █     █"
            "  model   google/gemma-4-31B-it\n"
            "^[[0;36m(EngineCore_DP0 pid=70073)^[[0;0m INFO 01-27 00:31:59 "
            "[gpu_model_runner.py:3905] Model loading took 64.38 GiB memory and "
            "14.380607 seconds\n")
    log = read_log_text(text)
    assert log.version == "0.19.1rc1.dev301+g60995c05b"
    assert model_name(log) == "google/gemma-4-31B-it"
    assert [(f.kind, f.values) for f in log.found if f.kind == "loading"] == [
        ("loading", ("64.38", "GiB"))]


def test_b70_cookbook_4_padding_of_an_unseen_mtp_drafter(capsys):
    """SergiioB/intel-arc-pro-b70-inference-cookbook issue 4 (vLLM on an Intel Arc Pro B70, XPU;
    Qwen3.8-27B with the cookbook's MTP drafter, a patched build): the excerpt prints a
    --kv-cache-memory budget of 4.25 GiB and "Add 3 padding layers, may waste at most 6.25%",
    and none of its settings. Qwen3.6-27B's shape (bundled qwen3.5-27b) alone: 16 full and 48
    linear layers group by 16 with no empty slot; with an MTP drafter's full-attention layer,
    17: 48 linear layers take 3 groups of 17 = 51 slots, 3 padding, 3 / 48 = 6.25%. The drafter
    is not in the excerpt, so the count is said not explained, never a disagreement."""
    assert 48 % 16 == 0 and _cdiv(48, 17) * 17 - 48 == 3 and Fraction(3 * 100, 48) == 6.25
    name = "qwen3.8-27b_xpu-b70_kv-cache-memory_padding_failure_b70-cookbook4.log"
    code, checks, d = _run(capsys, name, "--model", "qwen3.5-27b", "--gpu", "RTX-4090")
    assert code == 1 and d["verdict"]["disagree"] == 0
    assert (6, "padding layers", "3 (6.25%)", "3 (6.25%) with an MTP drafter",
            "unexplained") in checks
    assert (5, "KV cache memory (kv_cache_memory_bytes)", "4.25 GiB", "taken as given",
            "info") in checks
    code, _, d = _run(capsys, name)
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"


def test_an_inferred_tp_never_makes_a_disagreement():
    """With no TP printed, the ranks a paste shows give one: the power of two above the highest
    (rank 1 -> 2, rank 4 -> 8), said inferred; a figure that disagrees under it is not explained.
    Lines of the 8 x L40S run (ranks 0 and 5 here, TP 8 in truth), its 32,768-token concurrency
    changed to one no layout gives."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines.vllm.log import explain

    text = ("(Worker_TP5_EP5 pid=2083) INFO 09-24 20:53:40 [gpu_worker.py:298] Available KV cache "
            "memory: 10.64 GiB\n(EngineCore_DP0 pid=1944) INFO 09-24 20:53:41 "
            "[kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens per request: 9.99x\n")
    e = explain(read_log_text(text), load_model(str(LOGS / "configs" / "qwen3-235b-a22b-fp8.json")))
    assert e.settings["tensor_parallel_size"] == 8
    assert not e.mismatches and e.verdict == "nothing checked"
    assert any("inferred from the highest TP rank the log prints (5)" in n for n in e.notes)
