"""kvlib plan --engine sglang|trtllm (kvlib.serving.engines, issue 35): each engine's budget,
cell, page and tokens against hand arithmetic written out here from the engines' own lines
(SGLang 0.5.23's wheel; TensorRT-LLM's repository, see kvlib/serving/engines/trtllm/)."""

from fractions import Fraction

import pytest

from kvlib.cli import main
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines import trtllm as trt

GiB = 1 << 30
H200_CUDA_TOTAL = 150_119_844_413  # kvlib's catalog, from a public vLLM start-up log
H200_SMI_MIB = 143_771  # nvidia-smi memory.total: 150,754,820,096 B / 2^20
LLAMA_8B_WEIGHTS = 8_030_261_248 * 2  # Llama 3.1 8B's published parameter count x bf16


def test_sglang_default_mem_fraction_on_h200_by_hand():
    # arg_groups/memory_hook.py: H200 (G < 160 GiB): chunked prefill 8192, decode max batch 256
    # (TP < 4); reserve 512 + 1.5 x 8192 + 1/8 x 1024 + 256 x 2 + 8 x (prefill graph sizes up
    # to 8192: 8 + 14 + 8 + 8 + 12 + 8 = 58) = 512 + 12288 + 128 + 512 + 464 = 13904 MiB
    assert len(sg.prefill_graph_sizes(8192)) == 8 + 14 + 8 + 8 + 12 + 8
    f, _ = sg.default_mem_fraction(H200_SMI_MIB, 1)
    assert f == Fraction(903, 1000)  # (143771 - 13904) / 143771 = 0.90329... -> 0.903
    # TP 8: decode max batch 512, TP term 1024 -> 512 + 12288 + 1024 + 1024 + 464 = 15312
    assert sg.default_mem_fraction(H200_SMI_MIB, 8)[0] == Fraction(893, 1000)  # 0.893497...
    # MLA, TP 8: the prefill graph reserve is 1.5 GiB: 512+12288+1024+1024+1536 = 16384
    assert sg.default_mem_fraction(H200_SMI_MIB, 8, mla=True)[0] == Fraction(886, 1000)


def test_sglang_llama_8b_h200_by_hand():
    p = engine_tokens("llama-3.1-8b", "H200", "sglang", context=8192)
    free_before = H200_CUDA_TOTAL - GiB // 2  # 149,582,973,501
    # rest = free after weights - free before x (1 - 0.903), floored to bytes
    assert p.kv_budget == (free_before * 903 - LLAMA_8B_WEIGHTS * 1000) // 1000
    assert p.kv_budget == 119_012_902_575
    assert p.cell == 8 * (128 + 128) * 32 * 2 == 131_072  # heads x (K + V dims) x layers x b
    assert p.page == 1
    assert p.tokens == 907_996  # 119,012,902,575 // 131,072
    assert 907_996 * 131_072 <= p.kv_budget < 907_997 * 131_072
    assert p.max_running_requests == 4096  # int(907996 / 8192 x 512) = 56749 -> 4096
    assert p.sessions == 110  # 110 x 8192 = 901,120 <= 907,996 < 111 x 8192


def test_sglang_log_k_size_of_vllm_issue_21348():
    # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, TP 4: "#tokens: 367404, K size: 8.23 GB";
    # 4 KV heads / 4 = 1 per rank, head_dim 128, 94 layers, bf16, page 1
    k = sg.k_size_bytes(367_404, 1, 1, 128, 94, 2)
    assert k == 367_405 * 128 * 94 * 2 == 8_841_233_920
    assert f"{k / GiB:.2f}" == "8.23"


def test_sglang_hybrid_swa_pool_gpt_oss_by_hand():
    p = engine_tokens("gpt-oss-120b", "H200", "sglang", context=8192)
    # 18 full + 18 sliding layers, 8 KV heads x (64 + 64) x 2 B = 2,048 B a layer
    assert p.cell == 18 * 8 * 128 * 2 == 36_864
    assert p.swa_cell == 36_864
    full = p.kv_budget * 5 // (36_864 * 5 + 36_864 * 4)  # budget // (full + 0.8 x swa)
    assert p.tokens == full
    assert p.swa_tokens == full * 4 // 5


def test_trtllm_float32_fraction():
    # its own log prints "fraction is set 0.8999999761581421": 0.9 as a float32
    assert trt.DEFAULT_FRACTION == Fraction(15_099_494, 1 << 24)
    assert f"{float(trt.DEFAULT_FRACTION):.16g}" == "0.8999999761581421"


def test_trtllm_llama_8b_h200_by_hand():
    p = engine_tokens("llama-3.1-8b", "H200", "trtllm", context=8192)
    other = 4 * GiB + GiB // 2  # the assumed rest of the peak: 0.5 + 1.5 + 2 + 0.5 GiB
    budget = (H200_CUDA_TOTAL - LLAMA_8B_WEIGHTS - other) * 15_099_494 // (1 << 24)
    assert p.kv_budget == budget
    assert p.cell == 2 * 32 * (128 * 8 // 1) * 2 == 131_072  # K and V x layers x dims x b
    max_tokens = budget // 131_072
    assert p.tokens == -(-max_tokens // 32) * 32  # whole blocks of 32, rounded up
    assert p.sessions == (p.tokens // 32) // (8192 // 32)


def test_trtllm_log_of_a_profiling_run():
    # "(total 119.70 - peak 113.65 + temporary 0.56) GiB x 0.9 = 5.95 GiB"; max_tokens 86711
    # then "(86720)": 2710 blocks of 32
    # kvlib's budget on the log's own figures (peak - temporary = weights + the rest of the
    # peak), with TensorRT-LLM's float32 fraction, rounds to the 5.95 GiB the log prints
    budget = trt.kv_budget(round(119.70 * 2**30), round((113.65 - 0.56) * 2**30), 0,
                           trt.float32(0.9))
    assert round(budget / 2**30, 2) == 5.95
    assert trt.tokens(86_711 * 73_728, 73_728) == (86_711, 2_710, 86_720)


def test_deepseek_v3_cells_by_hand():
    # MLA: (kv_lora_rank 512 + rope 64) x 61 layers x 2 B, on every rank
    assert engine_tokens("deepseek-v3", "H200", "trtllm", tp=8, context=8192).cell == 70_272
    assert engine_tokens("deepseek-v3", "H200", "sglang", tp=8, context=8192).cell == 70_272


@pytest.mark.parametrize(("model", "engine", "named"), [
    ("nemotron-3-ultra-550b-a55b", "trtllm", "hybrid_override_pattern"),
    ("gemma-3n-e4b", "sglang", "keep no cache"),
    ("glm-5", "trtllm", "indexer"),
    ("gemma-4-26b-a4b", "trtllm", "per-kind head sizes"),
    ("qwen3-next-80b-a3b", "trtllm", "Gated DeltaNet"),
    ("falcon-7b", "trtllm", "num_key_value_heads"),
    ("llama-3.3-nemotron-super-49b", "sglang", "keep no cache"),
])
def test_untraced_pools_are_refused_by_name(model, engine, named):
    with pytest.raises(ValueError, match=named):
        engine_tokens(model, "H200", engine, tp=8 if model in ("glm-5",) else 1,
                      context=8192)


def test_cli_engine_and_its_errors(capsys):
    assert main(["plan", "llama-3.1-8b", "--gpu", "H200", "--context", "8192",
                 "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    assert "907,996" in out and "mem_fraction_static 0.903" in out
    assert main(["plan", "llama-3.1-8b", "--gpu", "H200", "--engine", "trtllm",
                 "--gpu-mem-util", "0.9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--gpu-mem-util 0.9: a vLLM option" in err[0]
    assert main(["plan", "llama-3.1-8b", "--gpu", "H200", "--engine", "sglang",
                 "--trtllm-peak-gib", "3"]) == 2
    assert "--trtllm-peak-gib 3: not an option of --engine sglang" in capsys.readouterr().err
    assert main(["plan", "llama-3.1-8b", "--gpu", "H200", "--engine", "sglang",
                 "--mem-fraction-static", "0.85", "--in-use-gib", "1", "--json"]) == 0
    import json
    d = json.loads(capsys.readouterr().out)
    free_before = H200_CUDA_TOTAL - GiB
    assert d["kv_budget_bytes_per_gpu"] == (free_before * 85 - LLAMA_8B_WEIGHTS * 100) // 100
