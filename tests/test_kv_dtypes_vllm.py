"""KV dtypes as vLLM 0.34.0 names them (``CacheDType``, vllm/config/cache.py:44-67): each maps
to kvlib's bytes per element plus the scales vLLM stores, checked by hand for Llama 3.1 8B
(32 layers, 8 KV heads, head size 128) per token, K and V."""

import json

import pytest

from kvlib import Deployment, kv_bytes_per_sequence_per_gpu, load_model
from kvlib.cli import main
from kvlib.core.dtypes import VLLM_EXACT_KV_DTYPES, VLLM_KV_FORMATS, kv_dtype_name, kv_format
from kvlib.models.estimate import estimate
from kvlib.serving.engines.vllm.dtypes import vllm_kv_cache_dtype
from kvlib.serving.kv import kv_format_parts

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
    assert rc == 0 and d["kv_dtype"] == "int4_per_token_head" and d["kv_scales"] == "per-token-head"
    assert d["kv_element_dtype"] == "int4"
    assert d["kv_bytes_per_sequence_per_gpu"] == 34_816 * 32_768
    assert any("int4_per_token_head" in n and "Hadamard" in n and "zero point" in n
               for n in d["notes"])
    rc, d = _plan(capsys, "nvfp4")
    assert d["kv_scales"] == "per-16-fp8" and d["kv_bytes_per_sequence_per_gpu"] == 36_864 * 32_768
    assert any("vLLM's nvfp4" in n for n in d["notes"])
    rc, d = _plan(capsys, "int4")
    assert any("has no plain int4" in n for n in d["notes"])
    rc, d = _plan(capsys, "fp8_e4m3")
    assert d["kv_dtype"] == "fp8_e4m3" and d["kv_element_dtype"] == "fp8"
    assert d["kv_bytes_per_sequence_per_gpu"] == 65_536 * 32_768
    assert not any("has no plain" in n for n in d["notes"])


# ---- the name the user gave, in the plan's header and its JSON (issue 34, leftover)

@pytest.mark.parametrize("name, element", [("nvfp4", "int4"), ("nvfp4_4over6", "int4"),
                                           ("int8_per_token_head", "int8"),
                                           ("fp8_per_token_head", "fp8"), ("bf16", "bf16"),
                                           ("fp8", "fp8"), ("bfloat16", "bf16")])
def test_plan_prints_the_name_given(capsys, name, element):
    rc, d = _plan(capsys, name)
    assert (d["kv_dtype"], d["kv_element_dtype"]) == (name, element)
    assert d["kv_bytes_per_sequence_per_gpu"] == BY_HAND[name] * 32_768
    main(["plan", "llama-3.1-8b", "--gpu", "H100-80GB", "--context", "32768",
          "--kv-dtype", name])
    header = capsys.readouterr().out.splitlines()[0]
    assert f", kv {name}, " in header
    if name != element:
        assert f"kv {element}," not in header


def test_scaled_notes_name_the_format_given(capsys):
    _, d = _plan(capsys, "nvfp4_4over6")
    assert any(n.startswith("kv_cache_dtype: vLLM's nvfp4_4over6") for n in d["notes"])
    assert any("not computed for nvfp4_4over6" in n for n in d["notes"])


def test_nvfp4_note_says_what_is_counted():
    note = kv_format("nvfp4").note
    assert "half a byte per element" in note and "one 1-byte fp8 scale per 16 elements" in note
    assert "kvlib counts both, 9/16 byte per element" in note and "same size" not in note
    # 9/16 byte per element = h/2 + h/16 per head: Llama 3.1 8B's 36,864 B per token
    assert LAYERS * HEADS * 2 * H * 9 // 16 == BY_HAND["nvfp4"] == 36_864
    assert "9/16 byte per element" in kv_format("nvfp4_4over6").note


# ---- kvlib estimate takes vLLM's names, with the plan's bytes

@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_estimate_takes_vllm_names(name):
    llama8 = load_model("llama-3.1-8b")
    e = estimate(llama8, context=32_768, batch=3, kv_dtype=name)
    assert e.kv_dtype == name
    assert e.kv_bytes_per_token == BY_HAND[name]
    assert e.kv_bytes_per_sequence == BY_HAND[name] * 32_768 == kv_bytes_per_sequence_per_gpu(
        llama8, 32_768, name, block_size=1)
    assert e.kv_bytes_total == 3 * e.kv_bytes_per_sequence


@pytest.mark.parametrize("model", ["gemma-3-27b", "deepseek-v3", "qwen3-next-80b-a3b"])
@pytest.mark.parametrize("name", ["nvfp4", "int4_per_token_head", "fp8_per_token_head"])
def test_estimate_scales_equal_the_plan_for_windows_latents_and_states(model, name):
    spec = load_model(model)
    e = estimate(spec, context=8192, kv_dtype=name)
    assert e.kv_bytes_per_sequence == kv_bytes_per_sequence_per_gpu(spec, 8192, name,
                                                                     block_size=1)


def test_cli_estimate_takes_vllm_names(capsys):
    assert main(["estimate", "llama-3.1-8b", "--context", "32768", "--kv-dtype", "nvfp4",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["kv_dtype"], d["bytes_per_element"]) == ("nvfp4", 0.5)  # values; scales counted
    assert d["kv_bytes_per_sequence"] == 36_864 * 32_768
    assert main(["estimate", "llama-3.1-8b", "--context", "32768", "--kv-dtype",
                 "int8_per_token_head"]) == 0
    assert "KV dtype int8_per_token_head (1 B/element + per-token-head scales)" in (
        capsys.readouterr().out)


# ---- the explorers offer vLLM's names, only those kvlib models exactly

def test_explorer_options_are_vllm_names_kvlib_models_exactly():
    from kvlib.views import book_js
    from kvlib.views.widgets import capacity, models

    names = list(VLLM_EXACT_KV_DTYPES)
    assert names == ["bfloat16", "float16", "float32", "fp8", "fp8_e5m2"]
    for name, value in VLLM_EXACT_KV_DTYPES.items():
        fmt = kv_format(name)
        assert fmt.scales is None and name != "auto"  # b bytes per element, nothing beside
        assert kv_format(value).dtype == fmt.dtype  # the value kept is the same format
    for dropdown in (models.model_explorer().controls["kv_dtype"],
                     capacity.planner_explorer().controls["kv_dtype"]):
        assert list(dropdown.options) == list(VLLM_EXACT_KV_DTYPES.items())
        assert dropdown.value == "bf16" and dropdown.label == "bfloat16"  # default unchanged
        assert not {"int4", "int8"} & {label for label, _ in dropdown.options}
    data = book_js.data()
    assert [(v, n) for v, n, _ in data["kv_dtypes"]] == [(v, n) for n, v in
                                                         VLLM_EXACT_KV_DTYPES.items()]
    assert [b for _, _, b in data["kv_dtypes"]] == ["2", "2", "4", "1", "1"]  # as "dtypes"
    engines = data["planner"]["engines"]
    assert set(engines["sglang"]["kv_bytes"]) == set(VLLM_EXACT_KV_DTYPES.values())
    assert engines["sglang"]["kv_bytes"]["fp8_e5m2"] == 1
    assert isinstance(engines["trtllm"]["kv_bytes"]["fp32"], str)  # its refusal, word for word


def test_explorer_reads_fp8_e5m2_as_one_byte():
    from kvlib.views.widgets import capacity, models

    e = models.breakdown("llama-3.1-8b", 32768, 1, "fp8_e5m2")
    assert e.kv_bytes_per_sequence == 65_536 * 32_768 and "fp8_e5m2" in models.render(e)
    r = capacity.planner("llama-3.1-8b", "H100-80GB", 1, 1, "checkpoint", "fp8_e5m2", 32768,
                         None, 8)
    assert r.plan.kv_dtype == "fp8_e5m2" and r.plan.kv_bytes_per_sequence_per_gpu == (
        65_536 * 32_768)
