"""Eight more SGLang start-up logs people posted (issue 43's second round: kinds the first set
lacked), run through ``kvlib explain-log`` as pasted: tests/fixtures/sglang_logs (README.md
there names each source, model and release). Every figure is worked out here by hand from the
model's config.json; GB in SGLang's lines is 2^30 B, printed with two decimals.

The budget check (:mod:`kvlib.serving.engines.sglang.log_budget`): tokens = int((B - A (1 - f))
x 2^30 // cell), A and B the free memory before and after the weights, printed to 0.01 GB, so
the count is known to a range: the lowest count takes A + 0.005 and B - 0.005, the highest
A - 0.005 and B + 0.005. The ranges are written out below with exact fractions."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest
from test_explain_sglang_posted import _gb, _rows, _run

from kvlib.serving.engines.sglang import log_lines as ll
from kvlib.serving.engines.sglang.log import detect
from kvlib.serving.engines.sglang.log_budget import token_range

HERE = Path(__file__).resolve().parent
SG = HERE / "fixtures" / "sglang_logs"
GiB = 1 << 30

QWQ = SG / "qwq-32b_4xL4_tp4_0.4.3.post4_llms-in-clouds.log"
DOCS_2024 = SG / "llama-3.1-8b_H100_0.3.5-era_no-kv-line_sglang-docs-send-request.log"
DOCS_2025 = SG / "llama-3.1-8b_0.4.1-era_kv-K-V-no-tokens_docs-send-request-clipping.log"
QWEN3_06 = SG / "qwen3-0.6b_wsl_0.4.6.post2_zh-notes.log"
KIMI = SG / "kimi-k2.5_8xMI355X_tp8_rocm_0.5.8.post1_mla_ajith-sirra-amd-issues.log"
DCU = SG / "deepseek-r1-channel-fp8_hygon-dcu_2-nodes_tp16-dp16_fp8kv_0.5.10rc0-das_pd-decode.log"
GPT_OSS = SG / "gpt-oss-20b_1-layer-override_H100-shape_fp8e5m2_bench-one-batch_sglang-pr11024.log"
DISTILL = SG / ("deepseek-r1-distill-qwen-7b_rtx3090_docker-desktop-prefix_0.4.2-era_"
                "my-deepseek-r1.log")


def _tokens(before, after, f, cell) -> int:
    return int((F(after) - F(before) * (1 - F(f))) * GiB // cell)


def test_qwq_32b_on_four_l4(capsys):
    """QwQ-32B (Qwen2.5-32B's shape: 64 layers, 8 KV heads, head_dim 128), TP 4 from server_args:
    K = 46,612 rows x 2 heads a rank x 128 x 64 x 2 B = 1,527,382,016 B = 1.4225 GiB -> "1.42",
    on each of the four ranks (V the same). Budget: cell = 64 x 2 x (128 + 128) x 2 = 65,536 B;
    f 0.85: (6.085 - 21.635 x 0.15) = 2.83975 GB -> 46,526 tokens, (6.095 - 21.625 x 0.15) =
    2.85125 GB -> 46,714: the log's 46,611 lies between."""
    assert 46_612 * 2 * 128 * 64 * 2 == 1_527_382_016
    assert (_tokens("21.635", "6.085", "0.85", 65_536), _tokens("21.625", "6.095", "0.85", 65_536)
            ) == (46_526, 46_714)
    code, d, err = _run(capsys, QWQ, "--model", SG / "configs" / "qwen2.5-32b.json")
    assert code == 0, err
    assert d["tp"] == 4 and d["verdict"]["explained"] == 9
    assert {r[1] for r in _rows(d, "K size")} == {_gb(1_527_382_016)}
    assert _rows(d, "pool tokens (the budget)") == [(54, "46,526-46,714", "ok")]


def test_a_log_of_late_2024_without_a_kv_line(capsys):
    """The docs' November 2024 run (0.3.5 era) prints no KV line: the scheduler's 442,913 is
    its one pool figure, recognised as SGLang's and checked from its budget. Llama-3.1-8B (from
    server_args' model_path), TP 1: cell = 32 layers x 8 x 256 x 2 B = 131,072 B; f 0.88:
    (63.495 - 78.595 x 0.12) = 54.0636 GB -> 442,889, (63.505 - 78.585 x 0.12) = 54.0748 GB ->
    442,980."""
    assert (_tokens("78.595", "63.495", "0.88", 131_072),
            _tokens("78.585", "63.505", "0.88", 131_072)) == (442_889, 442_980)
    code, d, err = _run(capsys, DOCS_2024)
    assert code == 0, err
    assert d["engine"] == "sglang" and d["model"] == "llama-3.1-8b"
    assert _rows(d, "pool tokens (the budget)") == [(16, "442,889-442,980", "ok")]


def test_the_kv_line_of_early_2025_prints_no_token_count(capsys):
    """"KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB." (January 2025): the count is
    the scheduler's max_total_num_tokens=444500. K = 444,501 x 8 x 128 x 32 x 2 B =
    29,130,817,536 B = 27.1302 GiB -> "27.13". Budget: (63.715 - 78.815 x 0.12) = 54.2572 GB ->
    444,474; (63.725 - 78.805 x 0.12) = 54.2684 GB -> 444,566."""
    assert 444_501 * 8 * 128 * 32 * 2 == 29_130_817_536
    assert (_tokens("78.815", "63.715", "0.88", 131_072),
            _tokens("78.805", "63.725", "0.88", 131_072)) == (444_474, 444_566)
    code, d, err = _run(capsys, DOCS_2025)
    assert code == 0, err
    assert _rows(d, "#tokens") == [(13, "444,500", "info")]
    assert _rows(d, "K size") == [(13, _gb(29_130_817_536), "ok")]
    assert _rows(d, "pool tokens (the budget)") == [(13, "444,474-444,566", "ok")]


def test_qwen3_0_6b_on_a_small_gpu(capsys):
    """Qwen3-0.6B (28 layers, 8 KV heads, head_dim 128), 0.4.6.post2: K = 15,388 x 8 x 128 x 28 x
    2 B = 882,409,472 B = 0.8218 GiB -> "0.82". Budget: cell 28 x 8 x 256 x 2 = 114,688 B;
    (2.025 - 3.235 x 0.12) = 1.6368 GB -> 15,324; (2.035 - 3.225 x 0.12) = 1.648 GB -> 15,429."""
    assert 15_388 * 8 * 128 * 28 * 2 == 882_409_472
    assert (_tokens("3.235", "2.025", "0.88", 114_688),
            _tokens("3.225", "2.035", "0.88", 114_688)) == (15_324, 15_429)
    code, d, err = _run(capsys, QWEN3_06, "--model", SG / "configs" / "qwen3-0.6b.json")
    assert code == 0, err
    assert _rows(d, "K size") == [(12, _gb(882_409_472), "ok")]
    assert _rows(d, "pool tokens (the budget)") == [(12, "15,324-15,429", "ok")]


def test_kimi_k25_mla_on_rocm(capsys):
    """Kimi-K2.5 on 8 x MI355X (ROCm, 0.5.8.post1), bf16 ("Using KV cache dtype"): MLA rows of
    kv_lora_rank 512 + rope 64, 61 layers: 2,454,422 x 61 x 576 x 2 B = 172,477,142,784 B =
    160.6319 GiB -> "160.63" on each of the eight ranks. The excerpt starts after "Load weight
    begin": no budget check."""
    exact = 2_454_422 * 61 * 576 * 2
    assert exact == 172_477_142_784 and f"{exact / GiB:.2f}" == "160.63"
    code, d, err = _run(capsys, KIMI, "--model", "kimi-k2.5")
    assert code == 0, err
    assert d["verdict"]["explained"] == 8
    assert {r[1] for r in _rows(d, "KV size")} == {_gb(exact)}
    assert _rows(d, "pool tokens (the budget)") == []


def test_deepseek_r1_fp8_two_nodes_on_hygon_dcus(capsys):
    """DeepSeek-R1 (V3's shape: 61 layers, 512 + 64) with an fp8_e4m3 KV cache (printed), one
    node's eight ranks of a TP 16 / DP 16 decode instance: 2,659,073 x 61 x 576 x 1 B =
    93,429,188,928 B = 87.0127 GiB -> "87.01". MLA rows do not depend on TP, so the eight ranks
    the paste holds (of 16) do not matter."""
    exact = 2_659_073 * 61 * 576
    assert exact == 93_429_188_928 and f"{exact / GiB:.2f}" == "87.01"
    code, d, err = _run(capsys, DCU, "--model", "deepseek-v3")
    assert code == 0, err
    assert d["verdict"]["explained"] == 8
    assert {r[1] for r in _rows(d, "KV size")} == {_gb(exact)}


def test_a_run_that_overrides_the_model_is_not_checked_against_its_config(capsys):
    """bench_one_batch with --json-model-override-args '{"num_hidden_layers": 1}' (the command
    wrapped by the paste mid-flag: "--load-f" / "ormat", "0.1" / "2"): one layer's K is 4,097 x 8
    x 64 x 1 B = 2,097,664 B = 0.0020 GiB -> "0.00", where the config's 24 layers would give
    0.0469 GiB: the line is shown, not checked, and nothing is called explained. TP 1 (the
    command passes no --tp; bench_one_batch labels TP0 at TP 1), fp8_e5m2 from the command."""
    assert 4_097 * 8 * 64 * 1 == 2_097_664 and f"{2_097_664 / GiB:.2f}" == "0.00"
    assert f"{4_097 * 8 * 64 * 24 / GiB:.2f}" == "0.05"
    code, d, _ = _run(capsys, GPT_OSS, "--model", "gpt-oss-20b")
    assert code == 1 and d["verdict"]["explained"] == 0 and d["verdict"]["disagree"] == 0
    assert d["tp"] == 1
    assert _rows(d, "K size") == [(19, "not checked", "info")]
    assert _rows(d, "pool tokens (the budget)") == [(19, "not explained", "info")]


def test_the_wrapped_benchmark_command_is_read_whole():
    lines = list(enumerate(GPT_OSS.read_text(encoding="utf-8").splitlines(), 1))
    found, at = ll.command_settings(lines)
    assert at == 1
    assert found["mem_fraction_static"] == "0.12"
    assert found["kv_cache_dtype"] == "fp8_e5m2" and found["max_total_tokens"] == "4096"
    assert json.loads(found["json_model_override_args"]) == {"num_hidden_layers": 1}
    assert "tp_size" not in found


def test_docker_desktop_timestamps_and_the_early_2025_line(capsys):
    """DeepSeek-R1-Distill-Qwen-7B (Qwen2.5-7B's shape: 28 layers, 4 KV heads, head_dim 128)
    on an RTX 3090, each line behind Docker Desktop's own timestamp: K = 105,532 x 4 x 128 x 28 x
    2 B = 3,025,813,504 B = 2.8180 GiB -> "2.82". Budget: cell 28 x 4 x 256 x 2 = 57,344 B;
    (8.365 - 22.765 x 0.12) = 5.6332 GB -> 105,479; (8.375 - 22.755 x 0.12) = 5.6444 GB ->
    105,688."""
    assert 105_532 * 4 * 128 * 28 * 2 == 3_025_813_504
    assert (_tokens("22.765", "8.365", "0.88", 57_344),
            _tokens("22.755", "8.375", "0.88", 57_344)) == (105_479, 105_688)
    code, d, err = _run(capsys, DISTILL, "--model", "qwen2.5-7b")
    assert code == 0, err
    assert _rows(d, "K size") == [(14, _gb(3_025_813_504), "ok")]
    assert _rows(d, "pool tokens (the budget)") == [(14, "105,479-105,688", "ok")]


def test_a_count_outside_the_budget_is_shown_not_disagreeing(capsys, tmp_path):
    """The QwQ log with its counts made 40,000: the K sizes now disagree (they are exact), but
    the budget, which a later release may size otherwise, is said not explained."""
    text = QWQ.read_text(encoding="utf-8").replace("46611", "40000")
    (tmp_path / "q.log").write_text(text, encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "q.log", "--model", SG / "configs" / "qwen2.5-32b.json")
    assert code == 1
    assert _rows(d, "pool tokens (the budget)") == [
        (54, "46,526-46,714: not explained", "info")]


def test_no_fraction_no_budget(capsys, tmp_path):
    """Without server_args (the fraction unsaid) the budget is shown, not worked out."""
    text = "\n".join(t for t in DISTILL.read_text(encoding="utf-8").splitlines()
                     if "server_args" not in t)
    (tmp_path / "d.log").write_text(text, encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "d.log", "--model", "qwen2.5-7b", "--tp", "1")
    assert code == 0
    assert [r[2] for r in _rows(d, "pool tokens (the budget)")] == ["info"]


@pytest.mark.parametrize(("before", "after", "f", "cell"), [
    ("21.63", "6.09", "0.85", 65_536), ("78.59", "63.50", "0.88", 131_072),
    ("3.23", "2.03", "0.88", 114_688), ("94.63", "91.91", "0.12", 3_000)])
def test_the_range_holds_every_count_the_printed_figures_allow(before, after, f, cell):
    """Property: any A, B that print as the log's figures give a count inside the range."""
    lo, hi = token_range(before, after, f, cell)
    for da in (F(-5, 1000), F(-1, 1000), 0, F(3, 1000), F(5, 1000)):
        for db in (F(-5, 1000), F(-2, 1000), 0, F(4, 1000), F(5, 1000)):
            n = int((F(after) + db - (F(before) + da) * (1 - F(f))) * GiB // cell)
            assert lo <= n <= hi


def test_the_cap_and_the_page():
    """max_total_tokens caps the count; the page floors it."""
    assert token_range("94.63", "91.91", "0.12", 3_000, cap=4_096) == (4_096, 4_096)
    lo, hi = token_range("21.63", "6.09", "0.85", 65_536, page=64)
    assert (lo, hi) == (46_526 // 64 * 64, 46_714 // 64 * 64)


def test_what_is_an_sglang_log():
    """The 0.3 logs (no KV line) are SGLang's by the scheduler's line, which is the pool's size
    and which no other engine prints: alone it is enough (the tester's 2026 paste of that one
    line, tests/test_explain_sglang_no_kv_line.py); prose without "=N" is not."""
    assert detect(DOCS_2024.read_text(encoding="utf-8"))
    assert detect("max_total_num_tokens=4096\n")
    assert not detect("the scheduler prints max_total_num_tokens at start-up\n")


def test_a_second_weight_load_is_the_draft_not_the_budget(capsys, tmp_path):
    """A draft model loads after the target and prints "Load weight begin/end" again: the
    budget takes each rank's first pair, so the range stays the one worked out above."""
    text = DISTILL.read_text(encoding="utf-8").replace(
        "Memory pool end. avail mem=1.68 GB\n",
        "Memory pool end. avail mem=1.68 GB\n"
        "[2025-02-04 05:29:17 TP0] Load weight begin. avail mem=1.68 GB\n"
        "[2025-02-04 05:29:17 TP0] Load weight end. type=LlamaForCausalLMEagle, "
        "dtype=torch.bfloat16, avail mem=1.20 GB\n")
    (tmp_path / "d.log").write_text(text, encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "d.log", "--model", "qwen2.5-7b")
    assert code == 0, err
    assert _rows(d, "pool tokens (the budget)") == [(14, "105,479-105,688", "ok")]


@pytest.mark.parametrize(("labels", "dp_attention"), [
    (["DP0 TP0 EP0", "DP3 TP3 EP3"], True),   # DP attention, one-rank attention groups
    (["DP0 TP0", "DP1 TP0", "DP1 TP1"], False),  # plain data parallelism: TP restarts at 0
    (["DP0 TP0"], False),                     # rank 0 alone says nothing
    (["TP0", "TP3"], False)])
def test_dp_attention_from_the_rank_labels(labels, dp_attention):
    lines = [(k, f"[2025-10-07 23:17:19 {lab}] Memory pool end. avail mem=1.00 GB")
             for k, lab in enumerate(labels, 1)]
    assert ll.dp_attention_from_labels(lines) is dp_attention


def test_dp_attention_labels_leave_every_kv_head_on_each_rank():
    """Without server_args or a command, "[... DP7 TP7 EP7]" labels mean DP attention over
    one-rank groups: the KV heads are not split (attention TP 1), though the labels count 8."""
    from kvlib.serving.engines.sglang.log import resolve

    text = "".join(f"[2025-10-07 23:17:19 DP{k} TP{k} EP{k}] KV Cache is allocated. #tokens: "
                   "100, K size: 1.00 GB, V size: 1.00 GB\n" for k in range(8))
    tp, _, _, words, _ = resolve(text, None, None, None)
    assert tp == 1 and any(w.startswith("attention TP 1: the rank labels") for w in words)


NEXT_DP = SG / "qwen3-next-80b-a3b-fp8_4gpu_dp-attention_deepep_cut_sglang-pr10622.log"


def test_qwen3_next_with_dp_attention_from_its_rank_labels(capsys):
    """sglang PR #10622's Qwen3-Next-80B-A3B-FP8 run with DP attention over 4 GPUs (labels
    "DPk TPk EPk", no settings in the excerpt): attention TP 1, so each rank keeps both KV heads
    of the 12 full-attention layers: K = 2,786,326 x 12 x 2 x 256 x 2 B = 34,238,373,888 B =
    31.8870 GiB -> "31.89". Splitting the heads over the labels' TP 4 (1 head a rank) would
    give 15.94 and a false disagreement."""
    assert 2_786_326 * 12 * 2 * 256 * 2 == 34_238_373_888
    assert f"{2_786_326 * 12 * 1 * 256 * 2 / GiB:.2f}" == "15.94"
    code, d, err = _run(capsys, NEXT_DP, "--model", "qwen3-next-80b-a3b")
    assert code == 0, err
    assert d["tp"] == 1 and d["verdict"]["explained"] == 6
    assert {r[1] for r in _rows(d, "K size")} == {_gb(34_238_373_888)}


def _cut(width):
    def cut(text):
        return "".join("\n".join(line[k:k + width] for k in range(0, len(line), width)) + "\n"
                       for line in text.splitlines())
    return cut


def _words(text):
    import textwrap

    return "".join("\n".join(textwrap.wrap(line, 80)) + "\n" for line in text.splitlines())


def _docker(text):
    return "".join(f"sglang-1  | {line}\n" for line in text.splitlines())


@pytest.mark.parametrize("paste", [_cut(80), _cut(60), _words, _docker],
                         ids=["wrap80", "wrap60", "wrap-words", "docker"])
def test_the_qwq_log_as_people_paste_it(capsys, tmp_path, paste):
    """The QwQ log wrapped at 80 or 60 columns (mid-word: "avail mem=6.0" / "9 GB", the
    server_args line, the scheduler's count) or at spaces, or behind a docker-compose prefix:
    the same 9 numbers agree (worked out in test_qwq_32b_on_four_l4), the budget included."""
    (tmp_path / "p.log").write_text(paste(QWQ.read_text(encoding="utf-8")), encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "p.log", "--model",
                        SG / "configs" / "qwen2.5-32b.json")
    assert code == 0, err
    assert d["tp"] == 4 and d["verdict"]["explained"] == 9
    assert [r[1:] for r in _rows(d, "pool tokens (the budget)")] == [("46,526-46,714", "ok")]


def test_gemma3_keeps_its_sliding_layers_in_the_one_pool(capsys, tmp_path):
    """Gemma 3 is outside SGLang's hybrid-SWA architectures ("Disable hybrid SWA memory for
    Gemma3ForConditionalGeneration", model_overrides/gemma2_gemma3.py): one pool, all 62 layers
    at full length. Lines built from 0.5.23's format strings (no posted Gemma 3 log found): at
    TP 1, K = 100,001 x 16 KV heads x 128 x 62 x 2 B = 25,395,453,952 B = 23.6514 GiB ->
    "23.65" (the 10 global layers alone would be 3.81, and a lone line of a hybrid model is not
    checked at all)."""
    assert 100_001 * 16 * 128 * 62 * 2 == 25_395_453_952
    text = ("[2026-03-01 10:00:00] Disable hybrid SWA memory for Gemma3ForConditionalGeneration "
            "as it is not yet supported.\n"
            "[2026-03-01 10:00:09] KV Cache is allocated. #tokens: 100000, K size: 23.65 GB, "
            "V size: 23.65 GB\n")
    (tmp_path / "g.log").write_text(text, encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "g.log", "--model", "gemma-3-27b", "--tp", "1")
    assert code == 0, err
    assert _rows(d, "K size") == [(2, _gb(25_395_453_952), "ok")]
    # without the warning, the architecture says the same
    (tmp_path / "h.log").write_text(text.splitlines()[1] + "\n", encoding="utf-8")
    code, d, err = _run(capsys, tmp_path / "h.log", "--model", "gemma-3-27b", "--tp", "1")
    assert code == 0, err
    assert _rows(d, "pools") == [(1, "one pool, every layer", "info")]


def test_a_range_too_wide_is_no_check(capsys, tmp_path):
    """A small pool: the Qwen3-0.6B log with its memories made 0.63 / 0.10 GB free (f 0.88,
    cell 114,688 B): (0.095 - 0.635 x 0.12) = 0.0188 GB -> 176 tokens, (0.105 - 0.625 x 0.12) =
    0.03 GB -> 280; 104 tokens is more than 5% of a count near 230, so the count the log prints
    is shown, not counted as a check."""
    assert (_tokens("0.635", "0.095", "0.88", 114_688),
            _tokens("0.625", "0.105", "0.88", 114_688)) == (176, 280)
    text = (QWEN3_06.read_text(encoding="utf-8").replace("avail mem=3.23 GB", "avail mem=0.63 GB")
            .replace("avail mem=2.03 GB", "avail mem=0.10 GB").replace("15387", "228"))
    (tmp_path / "s.log").write_text(text, encoding="utf-8")
    code, d, _ = _run(capsys, tmp_path / "s.log", "--model", SG / "configs" / "qwen3-0.6b.json")
    assert _rows(d, "pool tokens (the budget)") == [(12, "176-280: not explained", "info")]
