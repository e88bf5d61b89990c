"""kvlib explain-log on SGLang and TensorRT-LLM start-up lines (issue 35): real lines from
public GitHub threads, quoted verbatim with their URLs, each also with one number changed."""

import pytest

from kvlib.cli import main
from kvlib.models.catalog import load_model
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.serving.engines import explain_engine_log

# https://github.com/vllm-project/vllm/issues/21348 (SGLang, Qwen3-235B-A22B-FP8, --tp 4)
SG_21348 = "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
# Qwen3-235B-A22B's config.json: 94 layers, 64 query heads, 4 KV heads, head_dim 128
QWEN3_235B = ModelSpec("qwen3-235b-a22b", (LayerGroup(
    CacheKind.FULL, 94, "GQA", {"N_h": 64, "N_g": 4, "d_QK": 128, "d_V": 128}),))
# https://github.com/noonghunna/club-3090/issues/1261 (SGLang, 2 x RTX 5090, TP 2, fp8 cache)
SG_1261 = ("[2026-09-12 00:22:48 TP0] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
           "#tokens: 454112, K size: 3.46 GB, V size: 3.46 GB")
# https://github.com/ai-dynamo/dynamo/issues/6905 (TensorRT-LLM, two allocations in one start)
TRT_6905 = ("[TensorRT-LLM][INFO] [MemUsageChange] Allocated 12.50 GiB for max tokens in paged "
            "KV cache (65536).\n[TensorRT-LLM][INFO] [MemUsageChange] Allocated 43.87 GiB for max"
            " tokens in paged KV cache (229984).")
# https://github.com/triton-inference-server/tutorials/pull/150 (TensorRT-LLM, PyTorch backend)
TRT_150 = ("[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 65 [window size=2051], tokens"
           " per block=32, primary blocks=116617, secondary blocks=0\n[TensorRT-LLM][INFO] "
           "Number of tokens per block: 32.\n[TensorRT-LLM][INFO] [MemUsageChange] Allocated "
           "78.30 GiB for max tokens in paged KV cache (3731744).")


def _status(e, quantity):
    return [c.status for c in e.checks if c.quantity == quantity]


def test_sglang_issue_21348_k_and_v_sizes():
    # (367,404 + 1) x 1 head (4 / TP 4) x 128 x 94 layers x 2 B = 8,841,233,920 B = 8.234 GiB
    e = explain_engine_log(SG_21348, QWEN3_235B, tp=4)
    assert _status(e, "K size") == ["ok"] and _status(e, "V size") == ["ok"]
    changed = explain_engine_log(SG_21348.replace("K size: 8.23", "K size: 8.32"), QWEN3_235B,
                                 tp=4)
    assert _status(changed, "K size") == ["mismatch"]


def test_sglang_club_3090_fp8_lines_with_qwen35_27b():
    # Qwen3.5-27B's 16 full-attention layers, 4 KV heads / TP 2, head_dim 256, fp8 (1 B):
    # (454,112 + 1) x 2 x 256 x 16 = 3,720,093,696 B = 3.4646 GiB
    model = load_model("qwen3.5-27b")
    e = explain_engine_log(SG_1261, model, tp=2)
    assert _status(e, "K size") == ["ok"]
    changed = explain_engine_log(SG_1261.replace("#tokens: 454112", "#tokens: 464112"), model,
                                 tp=2)
    assert _status(changed, "K size") == ["mismatch"]


def test_trtllm_dynamo_6905_two_allocations_one_cell():
    # 12.50 GiB / 65,536 and 43.87 GiB / 229,984 tokens: both 204,8xx B per token
    e = explain_engine_log(TRT_6905)
    assert e.engine == "trtllm" and not e.mismatches
    assert _status(e, "bytes per token, line to line") == ["ok"]
    changed = explain_engine_log(TRT_6905.replace("43.87", "44.87"))
    assert _status(changed, "bytes per token, line to line") == ["mismatch"]
    odd = explain_engine_log(TRT_6905.replace("(229984)", "(229985)"))
    assert "mismatch" in _status(odd, "tokens in blocks of 32")


def test_trtllm_tutorials_150_blocks_and_tokens():
    e = explain_engine_log(TRT_150)
    assert _status(e, "tokens") == ["ok"]  # 116,617 blocks x 32 = 3,731,744
    changed = explain_engine_log(TRT_150.replace("primary blocks=116617", "primary blocks=116618"))
    assert _status(changed, "tokens") == ["mismatch"]


@pytest.mark.parametrize(("text", "rc"), [
    (SG_1261, 0), (SG_1261.replace("V size: 3.46", "V size: 3.64"), 1)])
def test_cli(tmp_path, capsys, text, rc):
    log = tmp_path / "sglang.log"
    log.write_text(text + "\n")
    assert main(["explain-log", str(log), "--model", "qwen3.5-27b", "--tp", "2"]) == rc
    captured = capsys.readouterr()
    assert "SGLang start-up log" in captured.out
    assert (captured.err.count("\n") == 1 and "V size" in captured.err) if rc else not captured.err
