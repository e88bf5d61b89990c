"""SGLang start-up logs people posted in public threads (issue 43), run through ``kvlib
explain-log`` as pasted: tests/fixtures/sglang_logs (README.md there names each source, model
and release). Every expected figure is worked out here by hand from the model's config.json;
GB in SGLang's lines is 2^30 B, printed with two decimals (memory_pool.py:116, 0.5.23)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.serving.engines.sglang import log_lines as ll

HERE = Path(__file__).resolve().parent
SG = HERE / "fixtures" / "sglang_logs"
CONFIGS = HERE / "fixtures" / "configs"
GiB = 1 << 30

QWEN35 = SG / "qwen3.5-397b-a17b-fp8_2x4090_tp2_mamba_0.5.9_ktransformers1870.log"
MIMO_RANKS = SG / "mimo-v2-flash_tp4_hybrid-swa_interleaved-ranks_sglang-pr15464.log"
MIMO_CUT = SG / "mimo-v2-flash_tp4_page64_hybrid-swa_cut_sglang-pr18039.log"
GPT_OSS = SG / "gpt-oss-120b_rtx-pro-6000_hybrid-swa_sglang-pr19718.log"
DSA_PR = SG / "deepseek-v3.2-exp_8xB200_tp8-dp8_dsa_sglang-pr11309.log"
DSA_MAIN = SG / "deepseek-v3.2-exp_8xB200_dsa_latent-only_sglang-pr11309-main.log"
MUSA = SG / "qwen3-30b-a3b-fp8_musa-s5000_tp2_0.5.6_sglang-pr27537.log"
DRAFT = SG / "qwen3.6-27b-nvfp4_2x5090_tp2_fp8kv_mtp-draft_club3090-1261.log"
H200 = SG / "llama-3.1-70b-shape_8xH200_tp8_sglang-pr11716.log"
B200 = SG / "qwen2.5-7b-shape_B200_tp1_sglang-pr11830.log"
ONE_LINE = SG / "qwen3-235b-a22b-fp8_4xH100_tp4_line-only_vllm-issue21348.log"


def _run(capsys, *argv):
    code = main(["explain-log", *map(str, argv), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _rows(d, quantity):
    return [(c["line"], c["kvlib"], c["status"]) for c in d["checks"] if c["quantity"] == quantity]


def _gb(b: int) -> str:
    return f"{b / GiB:.4f} GB"


def test_qwen35_state_pool_and_tp_from_the_rank_labels(capsys):
    """Qwen3.5-397B-A17B at TP 2 (the ranks TP0 and TP1; no settings line), bf16 ("Using KV
    cache dtype: torch.bfloat16"). KV: 15 full-attention layers x 2 KV heads / 2 x 256 x 2 B =
    7,680 B a row x (580,364 + 1) = 4,457,203,200 B = 4.1511 GiB -> "4.15".
    State, 45 Gated DeltaNet layers x (82 + 1) slots: conv_dim = (64 x 128 + 2 x 16 x 128) / 2 =
    6,144 channels x (4 - 1) x 2 B -> 45 x 83 x 36,864 = 137,687,040 B = 0.1282 GiB -> "0.13";
    ssm 64 / 2 heads x 128 x 128 x 4 B = 2,097,152 B -> 45 x 83 x 2,097,152 = 7,832,862,720 B =
    7.2949 GiB -> "7.29"."""
    assert 15 * 256 * 2 * 580_365 == 4_457_203_200
    assert 45 * 83 * (64 * 128 + 2 * 16 * 128) // 2 * 3 * 2 == 137_687_040
    assert 45 * 83 * 32 * 128 * 128 * 4 == 7_832_862_720
    code, d, err = _run(capsys, QWEN35, "--model", CONFIGS / "qwen3.5-397b-a17b.json")
    assert code == 0, err
    assert d["tp"] == 2 and any("rank labels TP0-TP1" in w for w in d["settings"])
    assert _rows(d, "conv_state size") == [(4, _gb(137_687_040), "ok"), (5, _gb(137_687_040), "ok")]
    assert _rows(d, "ssm_state size") == [(4, _gb(7_832_862_720), "ok"),
                                          (5, _gb(7_832_862_720), "ok")]
    assert _rows(d, "K size") == [(6, _gb(4_457_203_200), "ok"), (8, _gb(4_457_203_200), "ok")]


def test_qwen35_a_wrong_state_figure_disagrees(capsys, tmp_path):
    """The control: ssm_state "7.30" is 0.0051 GiB from 7.2949, outside the rounding."""
    text = QWEN35.read_text(encoding="utf-8").replace("ssm_state size: 7.29GB", "ssm_state size:"
                                                      " 7.30GB", 1)
    (tmp_path / "x.log").write_text(text, encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "x.log", "--model", CONFIGS / "qwen3.5-397b-a17b.json")
    assert code == 1 and _rows(d, "ssm_state size")[0][2] == "mismatch"


# MiMo-V2-Flash at TP 4: 39 sliding layers x 8 / 4 = 2 KV heads, 9 full layers x 4 / 4 = 1; K head
# 192, V head 128, 2 B. Page 1: 1,496,958 + 1 = 1,496,959 rows.
MIMO_SLIDING_K = 39 * 2 * 192 * 2 * 1_496_959  # 44,836,915,968 B = 41.7576 GiB -> "41.76"
MIMO_SLIDING_V = 39 * 2 * 128 * 2 * 1_496_959  # 29,891,277,312 B = 27.8384 GiB -> "27.84"
MIMO_FULL_K = 9 * 1 * 192 * 2 * 1_496_959  # 5,173,490,304 B = 4.8182 GiB -> "4.82"
MIMO_FULL_V = 9 * 1 * 128 * 2 * 1_496_959  # 3,448,993,536 B = 3.2121 GiB -> "3.21"


def test_mimo_interleaved_ranks_each_line_its_own_pool(capsys):
    """Ranks' lines interleaved, unlabelled, swa size = full size: a rank's line just before its
    SWAKVPool line is its full pool, the one before that its sliding pool. TP0's and TP3's
    sliding lines are outside the excerpt: their one line each is read as the full pool."""
    assert (MIMO_SLIDING_K, MIMO_SLIDING_V) == (44_836_915_968, 29_891_277_312)
    assert (MIMO_FULL_K, MIMO_FULL_V) == (5_173_490_304, 3_448_993_536)
    total = MIMO_SLIDING_K + MIMO_SLIDING_V + MIMO_FULL_K + MIMO_FULL_V
    assert total == 83_350_677_120 and f"{total / GiB:.2f}" == "77.63"
    code, d, err = _run(capsys, MIMO_RANKS, "--model", "mimo-v2-flash")
    assert code == 0, err
    assert d["tp"] == 4
    assert _rows(d, "K size") == [(1, _gb(MIMO_SLIDING_K), "ok"), (2, _gb(MIMO_SLIDING_K), "ok"),
                                  (3, _gb(MIMO_FULL_K), "ok"), (5, _gb(MIMO_FULL_K), "ok"),
                                  (8, _gb(MIMO_FULL_K), "ok"), (12, _gb(MIMO_FULL_K), "ok")]
    assert {r[1] for r in _rows(d, "SWAKVPool mem usage")} == {_gb(total)}
    assert d["verdict"]["explained"] == 16


def test_mimo_cut_paste_page_from_the_launch_command(capsys):
    """The launch command above the log says --tp-size 4 --page-size 64 (and the model); the
    "Use sliding window memory pool" line says swa 300,288 tokens: (300,288 + 64) rows x 39 x 2
    x 192 x 2 B = 8,996,143,104 B = 8.3783 GiB -> "8.38"; V x 128: 5,997,428,736 B = 5.5855 GiB
    -> "5.59" (page 1 gives 300,289 x 19,968 = 5,996,170,752 B = 5.5844 GiB -> "5.58", no).
    The last line ends at "K size" (the excerpt's end) and is not read."""
    assert 300_352 * 39 * 2 * 192 * 2 == 8_996_143_104
    assert 300_352 * 39 * 2 * 128 * 2 == 5_997_428_736
    code, d, err = _run(capsys, MIMO_CUT)
    assert code == 0, err
    assert d["model"] == "mimo-v2-flash" and (d["tp"], d["page_size"]) == (4, 64)
    assert _rows(d, "V size") == [(10, _gb(5_997_428_736), "ok"),
                                  (11, _gb(5_997_428_736), "ok")]
    code, d, _ = _run(capsys, MIMO_CUT, "--page-size", "1")
    assert code == 1 and _rows(d, "V size")[0] == (10, _gb(5_996_170_752), "mismatch")


def test_gpt_oss_two_pools_of_different_sizes(capsys):
    """gpt-oss-120b, TP 1: 18 sliding and 18 full layers x 8 KV heads x 64 x 2 B = 18,432 B a
    row. Sliding (254,972 + 1) x 18,432 = 4,699,662,336 B = 4.3769 GiB -> "4.38"; full
    (318,715 + 1) x 18,432 = 5,874,573,312 B = 5.4711 GiB -> "5.47"; SWAKVPool 2 x (both) =
    21,148,471,296 B = 19.6960 GiB -> "19.70". The model is the launch command's."""
    assert 254_973 * 18_432 == 4_699_662_336 and 318_716 * 18_432 == 5_874_573_312
    assert 2 * (4_699_662_336 + 5_874_573_312) == 21_148_471_296
    code, d, err = _run(capsys, GPT_OSS)
    assert code == 0, err
    assert d["model"] == "gpt-oss-120b"
    assert _rows(d, "K size") == [(5, _gb(4_699_662_336), "ok"), (6, _gb(5_874_573_312), "ok")]
    assert _rows(d, "SWAKVPool mem usage") == [(7, _gb(21_148_471_296), "ok")]


def test_dsa_pool_with_the_indexer_keys(capsys):
    """DeepSeek-V3.2-Exp on B200 with --kv-dtype fp8 (SGLang's DSA default on SM10x; the line
    names no dtype), page 64 (the DSA rule): 61 layers x ((975,424 + 64) x 656 B + (975,424 +
    65) // 64 x 64 x 132 B) = 61 x (639,920,128 + 128,744,448) = 46,889,757,184 B = 43.6695
    GiB -> "43.67". 656 = 512 + 512 / 128 x 4 + 64 x 2; 132 = 128 + 128 / 128 x 4. At 2 B the
    rows are 1,152 B and the keys 256 B: 71.16 GiB, no."""
    assert 61 * (975_488 * 656 + 975_489 // 64 * 64 * 132) == 46_889_757_184
    code, d, err = _run(capsys, DSA_PR, "--model", "deepseek-v3.2", "--kv-dtype", "fp8")
    assert code == 0, err
    (row,) = [c for c in d["checks"] if c["quantity"] == "KV size"]
    assert (row["line"], row["kvlib"], row["status"]) == (3, _gb(46_889_757_184), "ok")
    # --tp 8 --dp 8 --enable-dp-attention of the pasted command: attention TP 8 / 8 = 1 (the
    # latent row is not split by TP either way)
    assert d["tp"] == 1 and "TP 8: line 1's launch command" in d["settings"]
    assert _rows(d, "page size") == [(3, "64", "info")]


def test_dsa_dtype_inferred_from_the_line_is_not_a_check(capsys):
    """Without --kv-dtype, only 1 B prints as "43.67": said as an inference and shown as
    information, not counted (nothing checked, exit 1)."""
    code, d, _ = _run(capsys, DSA_PR, "--model", "deepseek-v3.2")
    (row,) = [c for c in d["checks"] if c["quantity"] == "KV size"]
    assert code == 1 and row["status"] == "info" and "inferred from this line: 1 B" in row["how"]
    assert row["kvlib"] == _gb(46_889_757_184) and d["verdict"]["explained"] == 0


def test_dsa_pool_before_the_indexer_was_logged(capsys):
    """The same before sglang PR #11309: the line counted the latent rows only, 61 x (1,462,784 +
    64) x 656 = 58,537,325,568 B = 54.5171 GiB -> "54.52"; with the indexer's keys 61 x
    (1,462,848 x 656 + 1,462,849 // 64 x 64 x 132) = 70,316,177,664 B = 65.49 GiB, the PR's
    own "KV size including index is actually 65.49 GB"."""
    assert 61 * 1_462_848 * 656 == 58_537_325_568
    assert 61 * (1_462_848 * 656 + 1_462_849 // 64 * 64 * 132) == 70_316_177_664
    assert f"{70_316_177_664 / GiB:.2f}" == "65.49"
    code, d, err = _run(capsys, DSA_MAIN, "--model", "deepseek-v3.2", "--kv-dtype", "fp8")
    assert code == 0, err
    (row,) = [c for c in d["checks"] if c["quantity"] == "KV size"]
    assert (row["kvlib"], row["status"]) == (_gb(58_537_325_568), "ok")
    assert "latent rows alone" in row["how"] and "PR #11309" in row["how"]


def test_musa_qwen3_30b(capsys):
    """Qwen3-30B-A3B-FP8 at TP 2 (ranks TP0, TP1), bf16 printed: 48 layers x 4 / 2 KV heads x
    128 x 2 B = 24,576 B x (1,106,304 + 1) = 27,188,551,680 B = 25.3213 GiB -> "25.32"."""
    assert 48 * 2 * 128 * 2 * 1_106_305 == 27_188_551_680
    code, d, err = _run(capsys, MUSA, "--model", SG / "configs" / "qwen3-30b-a3b-fp8.json")
    assert code == 0, err
    assert _rows(d, "K size") == [(1, _gb(27_188_551_680), "ok")]


def test_draft_pool_after_memory_pool_end_is_not_checked(capsys):
    """Qwen3.6-27B at TP 2, fp8 printed: 16 full-attention layers x 4 / 2 KV heads x 256 x 1 B =
    8,192 B x (454,112 + 1) = 3,720,093,696 B = 3.4646 GiB -> "3.46". Each rank's second line
    (1.08 GB), after its "Memory pool end", is the draft model's pool: shown, not checked."""
    assert 16 * 2 * 256 * 454_113 == 3_720_093_696
    code, d, err = _run(capsys, DRAFT, "--model", SG / "configs" / "qwen3.6-27b-nvfp4.json")
    assert code == 0, err
    assert _rows(d, "K size") == [(1, _gb(3_720_093_696), "ok"), (3, "not checked", "info"),
                                  (5, _gb(3_720_093_696), "ok"), (7, "not checked", "info")]
    assert d["verdict"]["explained"] == 4


def test_eight_ranks_on_h200(capsys):
    """Ranks up to TP7: TP 8. Llama-3.1-70B's shape: 80 layers x 8 / 8 KV heads x 128 x 2 B =
    20,480 B x (2,795,207 + 1) = 57,245,859,840 B = 53.3144 GiB -> "53.31"."""
    assert 80 * 128 * 2 * 2_795_208 == 57_245_859_840
    code, d, err = _run(capsys, H200, "--model", "llama-3.1-70b")
    assert code == 0, err
    assert d["tp"] == 8
    assert {r[1:] for r in _rows(d, "K size")} == {(_gb(57_245_859_840), "ok")}


def test_one_line_needs_its_tp_typed(capsys):
    """No prefix, no settings: TP 1 is assumed and disagrees (4 heads a rank: 32.94 GiB); with
    --tp 4, 94 layers x 1 x 128 x 2 B x 367,405 = 8,841,233,920 B = 8.2340 GiB -> "8.23"."""
    cfg = HERE / "fixtures" / "vllm_logs" / "configs" / "qwen3-235b-a22b-fp8.json"
    assert 94 * 128 * 2 * 367_405 == 8_841_233_920
    code, d, _ = _run(capsys, ONE_LINE, "--model", cfg)
    assert code == 1 and d["verdict"]["disagree"] == 2
    code, d, err = _run(capsys, ONE_LINE, "--model", cfg, "--tp", "4")
    assert code == 0, err
    assert _rows(d, "K size") == [(1, _gb(8_841_233_920), "ok")]


def test_rank_label_tp0_alone_leaves_tp_unknown(capsys, tmp_path):
    """" TP0" is printed only where tp_size > 1: with TP0's lines alone, TP is not 1 and not
    known, so the K and V sizes are shown, not checked (and not explained)."""
    (tmp_path / "tp0.log").write_text(MUSA.read_text(encoding="utf-8").splitlines()[0] + "\n",
                                      encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "tp0.log", "--model",
                      SG / "configs" / "qwen3-30b-a3b-fp8.json")
    assert code == 1 and d["tp"] is None and d["verdict"]["explained"] == 0
    assert _rows(d, "K size") == [(1, "not checked", "info")]


@pytest.mark.parametrize(("line", "rank"), [
    ("[2026-02-27 17:10:28 TP1] KV Cache is allocated.", 1),
    ("[2025-10-07 23:17:19 DP0 TP0] KV Cache is allocated.", 0),
    ("[2026-05-05 04:41:51 DP2 TP2 EP2] Load weight end.", 2),
    ("[2026-03-06 08:43:46] KV Cache is allocated.", None),
    ("KV Cache is allocated. #tokens: 1, TP3 in the text", None),
])
def test_rank_of(line, rank):
    assert ll.rank_of(line) == rank


def test_command_settings_of_a_pasted_launch_command():
    text = ("$ python -m sglang.launch_server --model deepseek-ai/DeepSeek-V3.2-Exp --tp 8 --dp 8 "
            "--enable-dp-attention\n[2025-10-07 23:17:19 DP0 TP0] KV Cache is allocated.")
    assert ll.command_settings(text) == ({"model_path": "deepseek-ai/DeepSeek-V3.2-Exp",
                                          "tp_size": "8", "dp_size": "8",
                                          "enable_dp_attention": "True"}, 1)
    assert ll.command_settings("vllm serve x --tp 2") == ({}, None)


def _docker(text):
    return "".join(f"sglang-1  | {line}\n" for line in text.splitlines())


def _ansi(text):
    return "".join(line.replace("[2026", "\x1b[32m[2026").replace("] ", "]\x1b[0m ", 1) + "\n"
                   for line in text.splitlines())


def _wrap(width):
    def wrap(text):
        return "".join("\n".join(line[k:k + width] for k in range(0, len(line), width)) + "\n"
                       for line in text.splitlines())
    return wrap


def _wrap_words(text):
    import textwrap

    return "".join("\n".join(textwrap.wrap(line, 80)) + "\n" for line in text.splitlines())


@pytest.mark.parametrize("paste", [_docker, _ansi, _wrap(80), _wrap(60), _wrap_words],
                         ids=["docker", "ansi", "wrap80", "wrap60", "wrap-words"])
def test_the_same_log_as_people_paste_it(capsys, tmp_path, paste):
    """The Qwen3.5 log behind a docker-compose prefix, in colour, or wrapped at 80 or 60
    columns (mid-word or at spaces): the same 8 numbers agree (worked out in
    test_qwen35_state_pool_and_tp_from_the_rank_labels), TP 2 from its rank labels."""
    (tmp_path / "p.log").write_text(paste(QWEN35.read_text(encoding="utf-8")), encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "p.log", "--model", CONFIGS / "qwen3.5-397b-a17b.json")
    assert code == 0, err
    assert d["tp"] == 2 and d["verdict"]["explained"] == 8
    assert {c["kvlib"] for c in d["checks"] if c["quantity"] == "ssm_state size"} == {
        _gb(7_832_862_720)}


def test_a_wrapped_settings_line_is_joined(capsys, tmp_path):
    """server_args wrapped by the paste after 'tp_si' (as PR #11716's post wraps 'cpu_offl' /
    'oad_gb'): tp_size=4 is still read, and the issue-21348 line explained at TP 4."""
    text = (SG / "qwen3-235b-a22b-fp8_tp4_serverargs-repr_from-issue21348.log").read_text(
        encoding="utf-8").replace("tp_size=4", "tp_si\nze=4", 1)
    (tmp_path / "w.log").write_text(text, encoding="utf-8")
    cfg = HERE / "fixtures" / "vllm_logs" / "configs" / "qwen3-235b-a22b-fp8.json"
    code, d, err = _run(capsys, tmp_path / "w.log", "--model", cfg)
    assert code == 0, err
    assert d["tp"] == 4 and "TP 4: line 1's server_args" in d["settings"]


def test_mamba2_state_line(capsys, tmp_path):
    """A Mamba2 hybrid's state line (no posted one found: built from the format string of
    0.5.23 memory_pool.py:1004-1009, figures worked out here). Nemotron-H-56B at TP 8, 54 Mamba2
    layers, 100 slots + 1: conv_dim = 256 x 64 + 2 x 8 x 256 = 20,480, / 8 = 2,560 channels x 3 x
    2 B = 15,360 B -> 54 x 101 x 15,360 = 83,773,440 B = 0.0780 GiB -> "0.08"; ssm 256 / 8 = 32
    heads x 64 x 256 x 4 B = 2,097,152 B -> 54 x 101 x 2,097,152 = 11,437,867,008 B = 10.6523 GiB
    -> "10.65"."""
    assert 54 * 101 * 2_560 * 3 * 2 == 83_773_440
    assert 54 * 101 * 32 * 64 * 256 * 4 == 11_437_867_008
    line = ("[2026-09-01 10:00:00 TP0] Mamba Cache is allocated. max_mamba_cache_size: 100, "
            "conv_state size: 0.08GB, ssm_state size: 10.65GB \n"
            "[2026-09-01 10:00:00 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: "
            "1000, K size: 0.00 GB, V size: 0.00 GB\n")
    (tmp_path / "n.log").write_text(line, encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "n.log", "--model", "nemotron-h-56b", "--tp", "8")
    assert _rows(d, "conv_state size") == [(1, _gb(83_773_440), "ok")]
    assert _rows(d, "ssm_state size") == [(1, _gb(11_437_867_008), "ok")]
    # the KV line: 10 attention layers x 1 head a rank x 128 x 2 B x 1,001 = 2,562,560 B: 0.00
    assert 10 * 128 * 2 * 1_001 == 2_562_560
    assert code == 0, err


def test_one_gpu_no_rank_labels(capsys):
    """No rank label (tp_size 1 prints none), bf16 from "Using KV cache dtype": Qwen2.5-7B's
    shape, 28 layers x 4 KV heads x 128 x 2 B = 28,672 B x (2,243,474 + 1) = 64,324,915,200 B =
    59.9072 GiB -> "59.91"."""
    assert 28 * 4 * 128 * 2 * 2_243_475 == 64_324_915_200
    code, d, err = _run(capsys, B200, "--model", "qwen2.5-7b")
    assert code == 0, err
    assert d["tp"] == 1 and _rows(d, "K size") == [(2, _gb(64_324_915_200), "ok")]


def test_dp_attention_splits_the_kv_heads_over_tp_over_dp(capsys, tmp_path):
    """The issue-21348 line under a launch command "--tp 8 --dp 2 --enable-dp-attention": the
    attention TP is 8 / 2 = 4 (runtime_context.py:73-76), 1 KV head a rank, so 94 x 1 x 128 x 2 B
    x 367,405 = 8,841,233,920 B -> "8.23". Under "--tp 4 --dp 2" the attention TP is 2, 2 KV heads
    a rank: 17,682,467,840 B = 16.47 GiB, which disagrees with the line (the control)."""
    cfg = HERE / "fixtures" / "vllm_logs" / "configs" / "qwen3-235b-a22b-fp8.json"
    cmd = "python3 -m sglang.launch_server --model-path {m} --tp {t} --dp 2 --enable-dp-attention\n"
    line = ONE_LINE.read_text(encoding="utf-8")
    (tmp_path / "a.log").write_text(cmd.format(m=cfg, t=8) + line, encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "a.log")
    assert code == 0, err
    assert d["tp"] == 4 and _rows(d, "K size") == [(2, _gb(8_841_233_920), "ok")]
    assert 94 * 2 * 128 * 2 * 367_405 == 17_682_467_840 and f"{17_682_467_840 / GiB:.2f}" == "16.47"
    (tmp_path / "b.log").write_text(cmd.format(m=cfg, t=4) + line, encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "b.log")
    assert code == 1 and _rows(d, "K size") == [(2, _gb(17_682_467_840), "mismatch")]
