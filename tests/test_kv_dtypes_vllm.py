"""KV dtypes as vLLM 0.34.0 names them (``CacheDType``, vllm/config/cache.py:44-67): each maps
to kvlib's bytes per element plus the scales vLLM stores, checked by hand for Llama 3.1 8B
(32 layers, 8 KV heads, head size 128) per token, K and V."""

import json

import pytest

from kvlib import Deployment, kv_bytes_per_sequence_per_gpu, load_model
from kvlib.cli import main
from kvlib.core.dtypes import VLLM_KV_FORMATS, kv_dtype_name, kv_format
from kvlib.serving.kv import kv_format_parts, vllm_kv_cache_dtype

LAYERS, HEADS, H = 32, 8, 128
BY_HAND = {  # bytes per token: layers x KV heads x (K + V) per head
    "auto": LAYERS * HEADS * 2 * H * 2,  # the config's bfloat16
    "bfloat16": LAYERS * HEADS * 2 * H * 2,  # 131,072
    "float16": LAYERS * HEADS * 2 * H * 2,
    "fp8": LAYERS * HEADS * 2 * H,  # 65,536: per-tensor scales live in the layer
    "fp8_e4m3": LAYERS * HEADS * 2 * H,
    "fp8_e5m2": LAYERS * HEADS * 2 * H,
    # one fp32 scale per token per head, for K and for V (triton_attn.py:307-319)
    "int8_per_token_head": LAYERS * HEADS * (2 * H + 2 * 4),  # 67,584
    "fp8_per_token_head": LAYERS * HEADS * (2 * H + 2 * 4),
    # two values per byte; the zero point rides inside the fp32 scale
    "int4_per_token_head": LAYERS * HEADS * (2 * H // 2 + 2 * 4),  # 34,816
    # h/2 + h/16 per head per K and V (nvfp4_kv_cache_full_dim)
    "nvfp4": LAYERS * HEADS * 2 * (H // 2 + H // 16),  # 36,864
    "nvfp4_4over6": LAYERS * HEADS * 2 * (H // 2 + H // 16),
    # kvlib's old names: no scales
    "bf16": 131_072, "fp16": 131_072, "int8": 65_536, "int4": 32_768,
}


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_bytes_per_token_llama_3_1_8b(name):
    llama8 = load_model("llama-3.1-8b")
    assert kv_bytes_per_sequence_per_gpu(llama8, 1, name, block_size=1) == BY_HAND[name]
    assert Deployment(llama8, "H100-80GB", kv_dtype=name).kv_bytes_per_sequence_per_gpu(
        1, block_size=1) == BY_HAND[name]


def test_written_out():
    assert (BY_HAND["int8_per_token_head"], BY_HAND["int4_per_token_head"],
            BY_HAND["nvfp4"]) == (67_584, 34_816, 36_864)


def test_every_planned_vllm_name_round_trips():
    for name, fmt in VLLM_KV_FORMATS.items():
        dtype, scales = kv_format_parts(name)
        assert dtype == fmt.dtype
        if fmt.scales is not None:
            assert vllm_kv_cache_dtype(dtype, scales) in (name, "nvfp4")


def test_old_names_and_case():
    assert kv_format("FP8").dtype == "fp8" and kv_format("BF16").dtype == "bf16"
    assert kv_dtype_name("bfloat16") == "bf16" and kv_dtype_name("int4") == "int4"
    assert vllm_kv_cache_dtype("int4") is None and vllm_kv_cache_dtype("int8") is None
    with pytest.raises(ValueError, match="stores scales"):
        kv_dtype_name("nvfp4")  # estimate's elements-only path refuses it, naming why
    with pytest.raises(ValueError, match="656-byte"):
        kv_format("fp8_ds_mla")
    with pytest.raises(ValueError, match="packed format"):
        kv_format("turboquant_k8v4")
    with pytest.raises(ValueError, match="own scales"):
        kv_format_parts("nvfp4", "per-token-head")


def _plan(capsys, dtype):
    rc = main(["plan", "llama-3.1-8b", "--gpu", "H100-80GB", "--context", "32768",
               "--kv-dtype", dtype, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_cli_plan_takes_vllm_names(capsys):
    rc, d = _plan(capsys, "int4_per_token_head")
    assert rc == 0 and d["kv_dtype"] == "int4" and d["kv_scales"] == "per-token-head"
    assert d["kv_bytes_per_sequence_per_gpu"] == 34_816 * 32_768
    assert any("int4_per_token_head" in n and "Hadamard" in n and "zero point" in n
               for n in d["notes"])
    rc, d = _plan(capsys, "nvfp4")
    assert d["kv_scales"] == "per-16-fp8" and d["kv_bytes_per_sequence_per_gpu"] == 36_864 * 32_768
    assert any("vLLM's nvfp4" in n for n in d["notes"])
    rc, d = _plan(capsys, "int4")
    assert any("has no plain int4" in n for n in d["notes"])
    rc, d = _plan(capsys, "fp8_e4m3")
    assert d["kv_dtype"] == "fp8" and d["kv_bytes_per_sequence_per_gpu"] == 65_536 * 32_768
    assert not any("has no plain" in n for n in d["notes"])
