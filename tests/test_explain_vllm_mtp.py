"""vLLM with MTP speculative decoding (issue 43 item 4): the draft's full-attention layer is
counted in the KV-cache groups and the padding. The log is
tests/fixtures/vllm_logs/from_source/qwen3.5-27b_mtp-k2_v0.34.0-format.log (written from vLLM
0.34.0's format strings; README.md there). Qwen3.5-27B's config.json: 64 layers, every 4th full
attention (16 full + 48 Gated DeltaNet), mtp_num_hidden_layers 1 (the issue's Qwen3.6-27B NVFP4
has the same counts: 17 attention layers with the draft's beside 48).

vLLM 0.34.0 (v1/core/kv_cache_planning.py:560-590) groups layers of each kind in groups of the
smallest kind's count (unless the largest is under 1.5 x it): 17 and 48, 48 >= 25.5, so groups
of 17; 48 = 2 x 17 + 14 -> 17 - 14 = 3 padding layers, 3 / 48 = 6.25%; 17 full layers pad
none. Without the draft: groups of 16, 48 = 3 x 16, no padding."""

from __future__ import annotations

import json
from pathlib import Path

from kvlib.cli import main

LOG = (Path(__file__).resolve().parent / "fixtures" / "vllm_logs" / "from_source"
       / "qwen3.5-27b_mtp-k2_v0.34.0-format.log")


def _padding(capsys, path):
    code = main(["explain-log", str(path), "--model", "qwen3.5-27b", "--gpu", "H200", "--json"])
    d = json.loads(capsys.readouterr().out)
    rows = [c for c in d["checks"] if c["quantity"] == "padding layers"]
    return code, rows, d


def test_hand_worked_padding():
    group = 17 if 48 >= 1.5 * 17 else 48
    pad = group - 48 % group
    assert (group, pad, f"{pad / 48 * 100:.2f}") == (17, 3, "6.25")
    assert 48 % 16 == 0  # without the draft: no padding


def test_the_mtp_draft_layer_is_counted(capsys):
    code, rows, d = _padding(capsys, LOG)
    assert code == 0 and len(rows) == 1
    assert rows[0]["printed"] == "3 (6.25%)" and rows[0]["kvlib"] == "3 (6.25%)"
    assert rows[0]["status"] == "ok"
    assert any("MTP draft adds 1 full-attention layer" in n and "17 attention layers" in n
               and "k = 2" in n for n in d["notes"])


def test_without_speculative_config_the_padding_line_disagrees(capsys, tmp_path):
    """The control: the same log without speculative_config gives groups of 16 and no padding,
    so the log's "Add 3 padding layers" disagrees (kvlib's old answer, 0)."""
    text = LOG.read_text(encoding="utf-8").replace(
        "speculative_config=SpeculativeConfig(method='mtp', model='Qwen/Qwen3.5-27B', "
        "num_spec_tokens=2)", "speculative_config=None")
    (tmp_path / "no-spec.log").write_text(text, encoding="utf-8")
    code, rows, _ = _padding(capsys, tmp_path / "no-spec.log")
    assert code == 1 and rows[0]["kvlib"] == "0" and rows[0]["status"] == "mismatch"


def test_another_drafter_is_said_not_counted(capsys, tmp_path):
    text = LOG.read_text(encoding="utf-8").replace("method='mtp'", "method='eagle3'")
    (tmp_path / "eagle.log").write_text(text, encoding="utf-8")
    code, rows, d = _padding(capsys, tmp_path / "eagle.log")
    assert any("(eagle3, k = 2): the drafter's layers are not counted" in n for n in d["notes"])
    assert code == 1 and rows[0]["status"] == "mismatch"
