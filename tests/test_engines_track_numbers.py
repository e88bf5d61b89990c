"""The engines track's corrected numbers (issue 40, item 4), each by hand arithmetic written out
here from the engines' own lines (notebooks/engines/02_one_model_three_engines.ipynb).

Notebook 06 asked "why does SGLang hold twice the tokens vLLM does? (vLLM #21348)" while its own
tables showed SGLang holding fewer. In that issue SGLang was launched with
``--mem-fraction-static 0.93``; SGLang 0.5.23's default for that setup (4 x H100, TP 4) is 0.819.
The 2x was the flag: at the default the same launch holds fewer tokens than vLLM logged.
"""

from fractions import Fraction

from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines.sglang import sglang_fraction
from kvlib.serving.gpus import get_gpu

GiB = 1 << 30
H100_CUDA_TOTAL = 7922 * GiB // 100  # 79.22 GiB: the total CUDA reports (docs/capacity.md)
H100_SMI_MIB = 81_559  # nvidia-smi memory.total of an H100 80GB
H200_CUDA_TOTAL = 150_119_844_413  # kvlib's catalog, from a public vLLM start-up log
IN_USE = GiB // 2  # memory in use before the weights, kvlib's assumption
# vllm-project/vllm#21348: Qwen3-235B-A22B-FP8 on 4 x H100, TP 4. The two engines' lines:
LOGGED_SGLANG = 367_404  # "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, ..."
LOGGED_VLLM = 178_880  # "GPU KV cache size: 178,880 tokens"
# 94 layers x 1 KV head per rank (4 / TP 4) x (K 128 + V 128) x 2 B (bf16)
CELL_21348 = 94 * 1 * (128 + 128) * 2


def test_cell_of_issue_21348():
    assert CELL_21348 == 48_128
    k_and_v = 2 * sg.k_size_bytes(LOGGED_SGLANG, 1, 4, 128, 94, 2, 4)  # page 1, TP 4, bf16
    assert k_and_v == (LOGGED_SGLANG + 1) * CELL_21348


def test_sglang_default_on_4_h100_is_0_819():
    # arg_groups/memory_hook.py: 60 GiB < G < 160 GiB: chunked prefill 8,192; TP 4: decode
    # graphs up to batch 512; reserve = 512 + 1.5 x 8192 + 4/8 x 1024 + 512 x 2 + 58 prefill
    # graph sizes x 8 = 512 + 12,288 + 512 + 1,024 + 464 = 14,800 MiB (above the 10 GiB floor)
    reserve = 512 + 12_288 + 512 + 1_024 + 464
    assert reserve == 14_800
    assert round((H100_SMI_MIB - reserve) / H100_SMI_MIB, 3) == 0.819  # 0.81853...
    assert sglang_fraction(get_gpu("H100-80GB"), 4, mla=False)[0] == Fraction(819, 1000)


def test_issue_21348_two_x_was_mem_fraction_static_0_93():
    free = H100_CUDA_TOTAL - IN_USE  # F_0
    # SGLang's budget F_0 f - W - X: the logged tokens at f = 0.93 pin W + X
    taken = free * 93 // 100 - LOGGED_SGLANG * CELL_21348
    at_default = (free * 819 // 1000 - taken) // CELL_21348
    assert at_default == 172_459
    # kvlib's rule (sglang.kv_budget in SGLang's own floats, then the pool) gives the same
    for f, want in ((Fraction(93, 100), LOGGED_SGLANG), (Fraction(819, 1000), at_default)):
        budget = sg.kv_budget(free, taken, 0, f, world=4)
        pool = sg.pool(kind="single", budget=budget, page=1, context=8192, fraction=f,
                       full_cell=CELL_21348)
        assert pool.tokens == want
    # 2.05x vLLM's tokens at 0.93, 0.96x at the default
    assert f"{LOGGED_SGLANG / LOGGED_VLLM:.2f}" == "2.05"
    assert f"{at_default / LOGGED_VLLM:.2f}" == "0.96"
    # what 0.93 added: F_0 x (0.93 - 0.819), whatever the weights: 8.74 GiB
    assert f"{free * 111 / 1000 / GiB:.2f}" == "8.74"


def test_at_the_defaults_sglang_holds_fewer_tokens_than_vllm():
    """Notebook engines/02, section 3 (06's old tables): 907,996 vs 948,032 and 17,667 vs
    37,120, sessions of 8K, bf16 cache."""
    # Llama 3.1 8B on one H200: 8,030,261,248 parameters x 2 B; 32 layers x 8 KV heads x 256 x 2
    w8, cell8 = 8_030_261_248 * 2, 32 * 8 * (128 + 128) * 2
    # Qwen3 32B on one H100: 32,762,123,264 parameters x 2 B; 64 layers x 8 KV heads x 256 x 2
    w32, cell32 = 32_762_123_264 * 2, 64 * 8 * (128 + 128) * 2
    # SGLang 0.5.23: (F_0 x f - W) // cell, f = 0.903 on an H200, 0.83 on an H100 (TP 1)
    sglang8 = ((H200_CUDA_TOTAL - IN_USE) * 903 // 1000 - w8) // cell8
    sglang32 = ((H100_CUDA_TOTAL - IN_USE) * 83 // 100 - w32) // cell32
    # vLLM 0.34.0 with kvlib's assumed measurements: M - W - 9.125 GiB (0.5 in use, a margin of
    # 0.75 x the 3.5 GiB peak, 0.5 non-torch + 2 graph pool resident, the 3.5 GiB peak), in
    # blocks of 64 tokens
    hold = GiB // 2 + 3 * 7 * GiB // 8 + GiB // 2 + 2 * GiB + 7 * GiB // 2
    assert hold == 9 * GiB + GiB // 8
    vllm8 = (H200_CUDA_TOTAL - w8 - hold) // (64 * cell8) * 64
    vllm32 = (H100_CUDA_TOTAL - w32 - hold) // (64 * cell32) * 64
    assert (sglang8, vllm8, sglang32, vllm32) == (907_996, 948_032, 17_667, 37_120)
    assert sglang8 < vllm8 and sglang32 < vllm32
    for model, gpu, sglang, vllm in (("llama-3.1-8b", "H200", sglang8, vllm8),
                                     ("qwen3-32b", "H100-80GB", sglang32, vllm32)):
        assert engine_tokens(model, gpu, "sglang", context=8192).tokens == sglang
        assert engine_tokens(model, gpu, "vllm", context=8192).tokens == vllm
