"""TensorRT-LLM logs read before flags (issue 43 item 3): the release's window rule, the KV dtype
a log implies where it prints none (an inference, said), AutoDeploy's placeholder line. Logs:
tests/fixtures/trtllm_logs (README.md there says which are posted and which written from the
format strings). Published configs: gpt-oss-20b 24 layers, gpt-oss-120b 36, both 8 KV heads of
64; Llama 3.1 8B 32 layers, 8 KV heads of 128. Expected figures worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main

TRT = Path(__file__).resolve().parent / "fixtures" / "trtllm_logs"
GiB = 1 << 30


def _run(capsys, path, *argv):
    code = main(["explain-log", str(TRT / path), *argv, "--json"])
    out, err = capsys.readouterr()
    d = json.loads(out)
    return code, {c["quantity"]: (c["kvlib"], c["status"]) for c in d["checks"]}, d


@pytest.mark.parametrize(("log", "model", "tokens", "layers", "printed"), [
    # 4,128 x 24 x 2 x 8 x 64 x 2 B = 4,128 x 49,152 = 202,899,456 B = 0.1890 GiB -> "0.19"
    ("gpt-oss-20b_dgx-spark_1.1.0rc3_from-source.log", "gpt-oss-20b", 4128, 24, "0.19"),
    # 86,720 x 36 x 2,048 = 86,720 x 73,728 = 6,393,692,160 B = 5.9546 GiB -> "5.95"
    ("gpt-oss-120b_1.1.0rc3_from-source.log", "gpt-oss-120b", 86720, 36, "5.95"),
])
def test_1_1_sizes_every_gpt_oss_layer_at_full_length(capsys, log, model, tokens, layers,
                                                     printed):
    exact = tokens * layers * 2 * 8 * 64 * 2
    assert f"{exact / GiB:.2f}" == printed
    code, c, _ = _run(capsys, log, "--model", model)
    assert code == 0 and c["GiB allocated"] == (f"{exact / GiB:.4f} GiB", "ok")
    assert c["release"] == ("1.1.0rc3", "info")
    assert "1.1.x sizes every layer at full length" in c["window rule"][0]
    # the half that was counted before (the full layers only: 0.0945 and 2.98 GiB) disagrees
    assert f"{exact / 2 / GiB:.4f}"[:5] in ("0.094", "2.977")
    assert f"{exact / 2 / GiB:.2f}" != printed


def test_vswa_windows_are_said_not_checked(capsys, tmp_path):
    text = (TRT / "gpt-oss-20b_dgx-spark_1.1.0rc3_from-source.log").read_text(encoding="utf-8")
    text += ("[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 4 [window size=128], tokens"
             " per block=32, primary blocks=64, secondary blocks=0\n[TensorRT-LLM][INFO] Max KV "
             "cache blocks per sequence: 129 [window size=4128], tokens per block=32, primary "
             "blocks=65, secondary blocks=0\n")
    (tmp_path / "vswa.log").write_text(text, encoding="utf-8")
    code = main(["explain-log", str(tmp_path / "vswa.log"), "--model", "gpt-oss-20b", "--json"])
    d = json.loads(capsys.readouterr().out)
    rule = [c for c in d["checks"] if c["quantity"] == "window rule"]
    assert rule[0]["kvlib"] == "not traced"
    assert not [c for c in d["checks"] if c["quantity"] == "GiB allocated"]
    # what needs no model still runs: 4,128 tokens = 129 whole blocks of 32
    assert code == 0 and [c["status"] for c in d["checks"]
                          if c["quantity"] == "tokens in blocks of 32"] == ["ok"]


def test_the_dtype_the_log_implies_is_an_inference(capsys):
    """263,008 tokens (8,219 blocks x 32) in 16.05 GiB: 16.05 x 2^30 / 263,008 = 65,526 B, about
    65,536 = 32 x 2 x 8 x 128 x 1 B; bf16 would be 263,008 x 131,072 = 32.11 GiB."""
    assert 8_219 * 32 == 263_008 and f"{263_008 * 65_536 / GiB:.2f}" == "16.05"
    assert f"{263_008 * 131_072 / GiB:.2f}" == "32.11"
    code, c, d = _run(capsys, "llama-3.1-8b_0.19.0_no-dtype_posted.log", "--model",
                      "llama-3.1-8b")
    assert code == 0
    assert c["KV dtype (inferred)"] == ("1 B a value", "info")
    assert c["GiB allocated"][1] == "info"  # inferred from it: no independent check
    assert c["tokens"] == ("263,008", "ok")  # the primary pool's 8,219 blocks x 32
    code, c, _ = _run(capsys, "llama-3.1-8b_0.19.0_no-dtype_posted.log", "--model",
                      "llama-3.1-8b", "--kv-dtype", "bf16")
    assert code == 1 and c["GiB allocated"] == (f"{263_008 * 131_072 / GiB:.4f} GiB", "mismatch")
    assert "KV dtype (inferred)" not in c


def test_autodeploy_placeholder_is_information(capsys):
    """61,848 blocks x 64 = 3,958,272 tokens agree; the 0.00 GiB is a fake cache manager's."""
    assert 61_848 * 64 == 3_958_272
    code, c, _ = _run(capsys, "nemotron-3-nano_autodeploy_1.2.0rc5_posted.log")
    assert code == 0 and c["GiB allocated"] == ("a placeholder", "info")
    assert c["tokens"] == ("3,958,272", "ok")
