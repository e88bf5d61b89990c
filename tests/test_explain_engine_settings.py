"""SGLang's settings read from its log (issue 43): ``server_args=`` gives TP, page size and KV
dtype before any flag; a flag given on the command line wins and the output says so. The
logs are tests/fixtures/sglang_logs (README.md there says how each was built); the expected
figures are worked out here by hand for Qwen3-235B-A22B: 94 layers, 4 KV heads, head_dim 128."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.serving.engines.sglang.log import resolve, settings

HERE = Path(__file__).resolve().parent
SG = HERE / "fixtures" / "sglang_logs"
REPR = SG / "qwen3-235b-a22b-fp8_tp4_serverargs-repr_from-issue21348.log"
DICT = SG / "qwen3-235b-a22b-fp8_tp4_page64_fp8_serverargs-dict.log"
Q235 = str(HERE / "fixtures" / "vllm_logs" / "configs" / "qwen3-235b-a22b-fp8.json")


def _run(capsys, *argv):
    code = main(["explain-log", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("path", "want"), [
    (REPR, {"model_path": "Qwen/Qwen3-235B-A22B-FP8", "tp_size": "4", "page_size": "1",
            "kv_cache_dtype": "auto", "dtype": "auto", "speculative_algorithm": "None"}),
    (DICT, {"model_path": "Qwen/Qwen3-235B-A22B-FP8", "tp_size": "4", "page_size": "64",
            "kv_cache_dtype": "fp8_e4m3", "dtype": "auto", "speculative_algorithm": "None"}),
])
def test_both_forms_of_the_settings_line(path, want):
    found, line = settings(path.read_text(encoding="utf-8"))
    assert found == want and line == 1


def test_tp_from_the_log_explains_issue_21348(capsys):
    """(367,404 + 1 page) rows x 1 KV head (4 / TP 4) x 128 x 94 layers x 2 B = 367,405 x 24,064
    = 8,841,233,920 B = 8.234 GiB -> "8.23", with no --tp typed."""
    code, out, err = _run(capsys, REPR, "--model", Q235)
    assert code == 0, err
    assert "TP=4, page 1" in out and "setting: TP 4: line 1's server_args" in out
    assert "verdict: explained: 2 number(s) agree, 0 disagree" in out


def test_a_flag_wins_and_says_so(capsys):
    """--tp 1: 4 KV heads a rank, 367,405 x 4 x 128 x 94 x 2 B = 35,364,935,680 B = 32.94 GiB,
    not the log's 8.23: the flag wins (and so disagrees), and the output says it did."""
    code, out, err = _run(capsys, REPR, "--model", Q235, "--tp", "1", "--json")
    d = json.loads(out)
    assert code == 1 and d["tp"] == 1
    assert "TP 1: the command line; the log says 4: the flag wins" in d["settings"]
    assert "32.9" in err


def test_kv_dtype_from_the_log(capsys, tmp_path):
    """kv_cache_dtype='fp8_e5m2' in server_args and no dtype in the KV line: 1 B a value,
    367,405 x 12,032 = 4,420,616,960 B = 4.1170 GiB, not 8.23: read, and so it disagrees."""
    text = REPR.read_text(encoding="utf-8").replace("kv_cache_dtype='auto'",
                                                    "kv_cache_dtype='fp8_e5m2'")
    (tmp_path / "fp8.log").write_text(text, encoding="utf-8")
    code, out, _ = _run(capsys, tmp_path / "fp8.log", "--model", Q235)
    assert code == 1 and "setting: kv fp8_e5m2: line 1's server_args" in out
    assert "kvlib 4.1170 GB" in out


def test_page_size_from_the_log(capsys):
    """Page 64 from server_args: (999,881 + 64) x 1 x 128 x 94 x 1 B = 999,945 x 12,032 =
    12,031,338,240 B = 11.20506 GiB, 0.00494 from "11.21" (within 0.005); with --page-size 1,
    999,882 x 12,032 = 12,030,580,224 B = 11.20435 GiB, 0.00565 away: the flag wins and
    disagrees."""
    code, out, err = _run(capsys, DICT, "--model", Q235)
    assert code == 0, err
    assert "setting: page 64: line 1's server_args" in out and "kvlib 11.2051 GB" in out
    code, out, err = _run(capsys, DICT, "--model", Q235, "--page-size", "1")
    assert code == 1 and "page 1: the command line; the log says 64: the flag wins" in out
    assert err.count("\n") == 2


def test_the_logs_model_when_kvlib_cannot_read_it(capsys):
    """The log names Qwen/Qwen3-235B-A22B-FP8, which kvlib does not bundle: said, and with no
    model nothing is checked (exit 1)."""
    code, out, _ = _run(capsys, REPR)
    assert code == 1 and "'Qwen/Qwen3-235B-A22B-FP8' (server_args): not one kvlib reads" in out
    assert "verdict: nothing checked" in out


def test_resolve_without_a_settings_line():
    tp, page, kv, words, found = resolve("KV Cache is allocated. #tokens: 1, K size: 0.01 GB, "
                                         "V size: 0.01 GB", None, None, None)
    assert (tp, page, kv, found) == (1, 1, None, {})
    assert words[0] == "TP 1: the log does not say"
