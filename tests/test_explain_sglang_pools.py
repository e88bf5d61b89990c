"""SGLang's hybrid-SWA logs, one pool a line (issue 43 item 1): each KV line recomputed with its
own pool's layers and rows. Logs: tests/fixtures/sglang_logs (README.md there says how each was
built). MiMo-V2-Flash's config.json (tests/fixtures/configs/mimo-v2-flash.json): 9 full layers
with 4 KV heads, 39 sliding layers with 8 KV heads, K head 192, V head 128; at TP 4 that is 1
and 2 KV heads a rank. Every expected figure below is worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main

HERE = Path(__file__).resolve().parent
SG = HERE / "fixtures" / "sglang_logs"
OLD = SG / "mimo-v2-flash_tp4_hybrid-swa_0.5.8-form.log"
NEW = SG / "mimo-v2-flash_tp4_page64_hybrid-swa_0.5.23-form.log"
MIMO = str(HERE / "fixtures" / "configs" / "mimo-v2-flash.json")
GiB = 1 << 30

# page 1, 1,496,959 tokens: 1,496,960 rows
#   sliding K: 39 layers x 2 heads x 192 x 2 B = 29,952 B a row x 1,496,960 = 44,836,945,920 B
#   sliding V: 39 x 2 x 128 x 2 = 19,968 B a row                           = 29,891,297,280 B
#   full K:     9 x 1 x 192 x 2 =  3,456 B a row                           =  5,173,493,760 B
#   full V:     9 x 1 x 128 x 2 =  2,304 B a row                           =  3,448,995,840 B
OLD_BYTES = {"sliding K": 44_836_945_920, "sliding V": 29_891_297_280,
             "full K": 5_173_493_760, "full V": 3_448_995_840}


def _checks(capsys, *argv):
    code = main(["explain-log", *map(str, argv), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _rows(d, quantity):
    return [(c["line"], c["kvlib"], c["status"]) for c in d["checks"] if c["quantity"] == quantity]


def test_hand_worked_bytes_round_to_the_printed_figures():
    printed = {"sliding K": "41.76", "sliding V": "27.84", "full K": "4.82", "full V": "3.21"}
    for key, b in OLD_BYTES.items():
        assert f"{b / GiB:.2f}" == printed[key]
    assert f"{sum(OLD_BYTES.values()) / GiB:.2f}" == "77.63"  # the SWAKVPool line


def test_unlabelled_lines_sliding_pool_first(capsys):
    """0.5.8.post1's order: line 3 the sliding pool (39 layers), line 4 the full pool (9)."""
    code, d, err = _checks(capsys, OLD, "--model", MIMO)
    assert code == 0, err
    assert _rows(d, "K size") == [(3, f"{OLD_BYTES['sliding K'] / GiB:.4f} GB", "ok"),
                                  (4, f"{OLD_BYTES['full K'] / GiB:.4f} GB", "ok")]
    assert _rows(d, "V size") == [(3, "27.8384 GB", "ok"), (4, "3.2121 GB", "ok")]
    assert _rows(d, "SWAKVPool mem usage") == [(5, "77.6264 GB", "ok")]
    assert "the sliding pool's 39 layers" in d["checks"][1]["how"]


def test_without_the_swakvpool_line_the_order_tells_the_pools(capsys, tmp_path):
    """A paste cut before the SWAKVPool line: a rank's two unlabelled lines are still the
    sliding pool, then the full pool (swa_memory_pool.py:63-76), each checked with its own
    layers. The issue's reader put all 48 layers into every line instead: 29,952 + 3,456 =
    33,408 B a row x 1,496,960 = 50,010,439,680 B = 46.58 GiB (= 41.76 + 4.82), disagreeing."""
    lines = OLD.read_text(encoding="utf-8").splitlines()
    (tmp_path / "cut.log").write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")
    code, d, err = _checks(capsys, tmp_path / "cut.log", "--model", MIMO)
    assert 33_408 * 1_496_960 == 50_010_439_680 and f"{50_010_439_680 / GiB:.2f}" == "46.58"
    assert code == 0, err
    assert _rows(d, "K size") == [(3, f"{OLD_BYTES['sliding K'] / GiB:.4f} GB", "ok"),
                                  (4, f"{OLD_BYTES['full K'] / GiB:.4f} GB", "ok")]


def test_one_unlabelled_line_alone_is_not_checked(capsys, tmp_path):
    """One unlabelled pool line of a hybrid-SWA model, with neither the other pool's line nor
    the SWAKVPool line: nothing says which pool it is, so nothing is checked (exit 1)."""
    lines = OLD.read_text(encoding="utf-8").splitlines()
    (tmp_path / "one.log").write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    code, d, _ = _checks(capsys, tmp_path / "one.log", "--model", MIMO)
    assert code == 1 and d["verdict"]["explained"] == 0 and d["verdict"]["disagree"] == 0
    assert [c["kvlib"] for c in d["checks"] if c["quantity"] == "K size"] == ["not checked"]


def test_swapped_order_disagrees(capsys, tmp_path):
    lines = OLD.read_text(encoding="utf-8").splitlines()
    lines[2], lines[3] = lines[3], lines[2]
    (tmp_path / "swapped.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, d, _ = _checks(capsys, tmp_path / "swapped.log", "--model", MIMO)
    assert code == 1 and {s for _, _, s in _rows(d, "K size")} == {"mismatch"}
    assert _rows(d, "SWAKVPool mem usage")[0][2] == "ok"  # its sizes are the same pools


def test_labelled_lines_page_64(capsys):
    """0.5.23's labels, full pool first, page 64 from server_args:
    full:    (375,360 + 64) rows x 3,456 = 1,297,465,344 B = 1.2084 GiB; x 2,304 = 864,976,896 B
             = 0.8056 GiB
    sliding: (300,288 + 64) rows x 29,952 = 8,996,143,104 B = 8.3783 GiB; x 19,968 =
             5,997,428,736 B = 5.5855 GiB
    sum:     1,297,465,344 + 864,976,896 + 8,996,143,104 + 5,997,428,736 =
             17,156,014,080 B = 15.9778 GiB"""
    assert 1_297_465_344 + 864_976_896 + 8_996_143_104 + 5_997_428_736 == 17_156_014_080
    code, d, err = _checks(capsys, NEW, "--model", MIMO)
    assert code == 0, err
    assert _rows(d, "K size") == [(2, "1.2084 GB", "ok"), (3, "8.3783 GB", "ok")]
    assert _rows(d, "V size") == [(2, "0.8056 GB", "ok"), (3, "5.5855 GB", "ok")]
    assert _rows(d, "SWAKVPool mem usage") == [(4, f"{17_156_014_080 / GiB:.4f} GB", "ok")]


def test_page_1_leaves_the_sliding_v_buffer_short(capsys):
    """--page-size 1: (300,288 + 1) x 19,968 = 5,996,170,752 B = 5.58438 GiB, which prints
    5.58, not the log's 5.59: only N + 64 rows explain the line."""
    assert 300_289 * 19_968 == 5_996_170_752
    code, d, _ = _checks(capsys, NEW, "--model", MIMO, "--page-size", "1")
    assert code == 1 and _rows(d, "V size")[1] == (3, "5.5844 GB", "mismatch")


@pytest.mark.parametrize("swap", [("Full KV", "SWA KV"), ("SWA KV", "Full KV")])
def test_the_label_decides_not_the_order(capsys, tmp_path, swap):
    text = NEW.read_text(encoding="utf-8").replace(swap[0], "@").replace(swap[1], swap[0])
    (tmp_path / "x.log").write_text(text.replace("@", swap[1]), encoding="utf-8")
    code, d, _ = _checks(capsys, tmp_path / "x.log", "--model", MIMO)
    assert code == 1 and {s for _, _, s in _rows(d, "K size")} == {"mismatch"}
