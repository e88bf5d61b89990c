"""Every SGLang and TensorRT-LLM fixture log through ``kvlib explain-log`` (issue 43: "a test runs
explain-log on every fixture log"): its exit status and how many numbers agree. Each number is
worked out by hand in the test named beside it; a new fixture must be added to the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlib.cli import main

FIX = Path(__file__).resolve().parent / "fixtures"
MIMO = str(FIX / "configs" / "mimo-v2-flash.json")
Q235 = str(FIX / "vllm_logs" / "configs" / "qwen3-235b-a22b-fp8.json")

# file: (extra arguments, exit status, numbers that agree); the test that works them out
TABLE = {
    # test_explain_engine_settings.py: K and V at TP 4 from server_args
    "sglang_logs/qwen3-235b-a22b-fp8_tp4_serverargs-repr_from-issue21348.log": (
        ["--model", Q235], 0, 2),
    "sglang_logs/qwen3-235b-a22b-fp8_tp4_page64_fp8_serverargs-dict.log": (
        ["--model", Q235], 0, 2),
    # test_explain_sglang_pools.py: two pools x (K, V) + the SWAKVPool total
    "sglang_logs/mimo-v2-flash_tp4_hybrid-swa_0.5.8-form.log": (["--model", MIMO], 0, 5),
    "sglang_logs/mimo-v2-flash_tp4_page64_hybrid-swa_0.5.23-form.log": (["--model", MIMO], 0, 5),
    # test_explain_sglang_dsa.py: the one KV size, model from server_args
    "sglang_logs/deepseek-v3.2_tp8_fp8_dsa_0.5.8-form.log": ([], 0, 1),
    "sglang_logs/glm-5_tp8_fp8_dsa_0.5.9-form.log": ([], 0, 1),
    # posted logs, test_explain_sglang_posted.py: state pool, interleaved ranks, launch commands,
    # DSA with and without its indexer in the line, a draft runner's pool, TP from rank labels
    "sglang_logs/qwen3.5-397b-a17b-fp8_2x4090_tp2_mamba_0.5.9_ktransformers1870.log": (
        ["--model", str(FIX / "configs" / "qwen3.5-397b-a17b.json")], 0, 8),
    "sglang_logs/mimo-v2-flash_tp4_hybrid-swa_interleaved-ranks_sglang-pr15464.log": (
        ["--model", "mimo-v2-flash"], 0, 16),
    "sglang_logs/mimo-v2-flash_tp4_page64_hybrid-swa_cut_sglang-pr18039.log": ([], 0, 4),
    "sglang_logs/gpt-oss-120b_rtx-pro-6000_hybrid-swa_sglang-pr19718.log": ([], 0, 5),
    "sglang_logs/deepseek-v3.2-exp_8xB200_tp8-dp8_dsa_sglang-pr11309.log": (
        ["--model", "deepseek-v3.2", "--kv-dtype", "fp8"], 0, 1),
    "sglang_logs/deepseek-v3.2-exp_8xB200_dsa_latent-only_sglang-pr11309-main.log": (
        ["--model", "deepseek-v3.2", "--kv-dtype", "fp8"], 0, 1),
    "sglang_logs/qwen3-30b-a3b-fp8_musa-s5000_tp2_0.5.6_sglang-pr27537.log": (
        ["--model", str(FIX / "sglang_logs" / "configs" / "qwen3-30b-a3b-fp8.json")], 0, 2),
    "sglang_logs/qwen3.6-27b-nvfp4_2x5090_tp2_fp8kv_mtp-draft_club3090-1261.log": (
        ["--model", str(FIX / "sglang_logs" / "configs" / "qwen3.6-27b-nvfp4.json")], 0, 4),
    "sglang_logs/llama-3.1-70b-shape_8xH200_tp8_sglang-pr11716.log": (
        ["--model", "llama-3.1-70b"], 0, 8),
    "sglang_logs/qwen2.5-7b-shape_B200_tp1_sglang-pr11830.log": (["--model", "qwen2.5-7b"], 0, 2),
    "sglang_logs/qwen3-235b-a22b-fp8_4xH100_tp4_line-only_vllm-issue21348.log": (
        ["--model", Q235, "--tp", "4"], 0, 2),
    # test_explain_sglang_posted_more.py: K and V per rank, and the budget from the free memory
    # before and after the weights; the 0.3 log without a KV line; a run that overrides its model
    "sglang_logs/qwq-32b_4xL4_tp4_0.4.3.post4_llms-in-clouds.log": (
        ["--model", str(FIX / "sglang_logs" / "configs" / "qwen2.5-32b.json")], 0, 9),
    "sglang_logs/llama-3.1-8b_H100_0.3.5-era_no-kv-line_sglang-docs-send-request.log": ([], 0, 1),
    "sglang_logs/llama-3.1-8b_0.4.1-era_kv-K-V-no-tokens_docs-send-request-clipping.log": (
        [], 0, 3),
    "sglang_logs/qwen3-0.6b_wsl_0.4.6.post2_zh-notes.log": (
        ["--model", str(FIX / "sglang_logs" / "configs" / "qwen3-0.6b.json")], 0, 3),
    "sglang_logs/kimi-k2.5_8xMI355X_tp8_rocm_0.5.8.post1_mla_ajith-sirra-amd-issues.log": (
        ["--model", "kimi-k2.5"], 0, 8),
    "sglang_logs/deepseek-r1-channel-fp8_hygon-dcu_2-nodes_tp16-dp16_fp8kv_0.5.10rc0-das_pd-"
    "decode.log": (["--model", "deepseek-v3"], 0, 8),
    "sglang_logs/gpt-oss-20b_1-layer-override_H100-shape_fp8e5m2_bench-one-batch_sglang-pr11024"
    ".log": (["--model", "gpt-oss-20b"], 1, 0),
    "sglang_logs/deepseek-r1-distill-qwen-7b_rtx3090_docker-desktop-prefix_0.4.2-era_my-deepseek"
    "-r1.log": (["--model", "qwen2.5-7b"], 0, 3),
    "sglang_logs/qwen3-next-80b-a3b-fp8_4gpu_dp-attention_deepep_cut_sglang-pr10622.log": (
        ["--model", "qwen3-next-80b-a3b"], 0, 6),
    # test_explain_trtllm_logs.py: whole blocks + GiB at full length
    "trtllm_logs/gpt-oss-20b_dgx-spark_1.1.0rc3_from-source.log": (["--model", "gpt-oss-20b"],
                                                                   0, 2),
    "trtllm_logs/gpt-oss-120b_1.1.0rc3_from-source.log": (["--model", "gpt-oss-120b"], 0, 2),
    # tokens from the primary pool and in whole blocks (the GiB is the dtype's inference), and
    # the pool's 8,219 blocks from 0.9 x 17.83 GiB (test_explain_trtllm_posted.py's rule)
    "trtllm_logs/llama-3.1-8b_0.19.0_no-dtype_posted.log": (["--model", "llama-3.1-8b"], 0, 3),
    # tokens from the blocks line and in whole blocks (the 0.00 GiB is a placeholder)
    "trtllm_logs/nemotron-3-nano_autodeploy_1.2.0rc5_posted.log": ([], 0, 2),
    # test_explain_trtllm_posted.py: the 0.5-0.8 lines and a 1.x PyTorch-backend excerpt
    "trtllm_logs/llama-2-7b-shape_smoothquant_A100_0.8_issue1400_posted.log": (
        ["--model", "llama-2-7b"], 0, 1),
    "trtllm_logs/mistral-7b_4xA10G_tp4_triton-vs-runpy_backend-issue366_posted.log": (
        ["--model", "mistral-7b-v0.1", "--tp", "4"], 0, 6),
    "trtllm_logs/unnamed-22.5KB-per-token_window2051_pytorch_tutorials-PR150_posted.log": (
        [], 0, 2),
    "trtllm_logs/llama-2-7b_A10_tpb16_0.5_issue224_posted.log": (
        ["--model", "llama-2-7b"], 1, 0),
    # the C++ runtime's budget: primary-pool blocks (model) and the allocation (no model)
    "trtllm_logs/qwen1.5-7b-sft_0.13.0.dev_issue2268_posted.log": (
        ["--model", "llama-2-7b"], 0, 1),
    "trtllm_logs/unnamed-7b-shape_int8kv_cpp-runtime_docs-memory-md.log": ([], 0, 3),
    # test_explain_trtllm_posted.py: two ranks' primary pools; 0.8's bytes at a 13B shape
    "trtllm_logs/unnamed-8b-shape_tp2_secondary-pool_backend-issue576_posted.log": (
        ["--model", "llama-3.1-8b", "--tp", "2"], 0, 2),
    "trtllm_logs/unnamed-13b-shape_tp2_0.8_triton-24.02_backend-issue361_posted.log": (
        ["--model", str(FIX / "trtllm_logs" / "configs" / "llama-2-13b.json"), "--tp", "2"],
        0, 1),
    # test_explain_sglang_no_kv_line.py: the scheduler's pool size alone, shown (no free memory
    # around the weights to work it out from): nothing checked, with a model or without
    "sglang_logs/unnamed_context256000_max-total-num-tokens-line-only_sglang-issue29575.log": (
        ["--model", "qwen3.6-35b-a3b"], 1, 0),
    # test_explain_sglang_no_kv_line.py: the MLA KV size of Kimi K2 at TP 8
    "sglang_logs/kimi-k2-0905_tp8_piecewise-cuda-graph_mla_sglang-pr13466.log": (
        ["--model", "kimi-k2.5"], 0, 1),
}

# the engine's own log with no KV line kvlib reads: refused naming that engine, exit 2
# (test_explain_sglang_no_kv_line.py)
REFUSED = {
    "sglang_logs/unnamed_2025-06_ready-line_no-kv-line_sglang-issue7515.log":
        "an SGLang start-up log with no KV-cache line kvlib reads: line 1 is SGLang's",
    "trtllm_logs/no-kv-line_deepseek-v3-int4wo_tp8_H20_issue2683_posted.log":
        "a TensorRT-LLM start-up log with no KV-cache line kvlib reads: line 1 is TensorRT-LLM's",
}


def test_the_table_holds_every_fixture_log():
    logs = {str(p.relative_to(FIX)) for d in ("sglang_logs", "trtllm_logs")
            for p in (FIX / d).glob("*.log")}
    assert logs == set(TABLE) | set(REFUSED) and not set(TABLE) & set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_refused_fixture_log(capsys, name):
    code = main(["explain-log", str(FIX / name), "--json"])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert f"error: {FIX / name}: {REFUSED[name]}" in err


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_fixture_log(capsys, name):
    argv, rc, agree = TABLE[name]
    code = main(["explain-log", str(FIX / name), *argv, "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == rc
    assert (d["verdict"]["explained"], d["verdict"]["disagree"]) == (agree, 0)
    assert d["verdict"]["ok"] is (rc == 0)


def test_every_fixture_log_of_every_engine_is_run_by_a_test():
    """vLLM's fixture logs are worked through in tests/test_explain_log.py and the tests beside
    it (each number by hand, one changed number disagreeing); this holds the set complete: a
    log added to tests/fixtures without a test that runs it fails here."""
    tests = " ".join(p.read_text(encoding="utf-8")
                     for p in FIX.parent.glob("test_*.py") if p.name != Path(__file__).name)
    tests += " ".join(TABLE)
    logs = sorted(FIX.rglob("*.log"))
    assert len(logs) >= 26
    assert [p.name for p in logs if p.name not in tests] == []
