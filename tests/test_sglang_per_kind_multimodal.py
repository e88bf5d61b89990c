"""SGLang 0.5.23's per-kind head sizes in the hybrid-SWA pools (Gemma 4, MiMo-V2-Flash) and its
multimodal reserves (Gemma 4, Kimi K2.5; Gemma 3 served text-only), worked by hand from the
published configs and SGLang's source lines (issue 41 item 3). The same models are run through
SGLang's own code in tests/oracle/test_sglang_oracle.py."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvlib.core.numeric import evaluate
from kvlib.models.catalog import bundled_config, load_model
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines.common import cell_bytes
from kvlib.serving.engines.sglang import multimodal as mm
from kvlib.serving.engines.sglang import pools

H200_MIB = 143771  # nvidia-smi memory.total of an H200


def _cells(name, tp, b=2):
    full = swa = 0
    for _, key, values, pool in sg.sglang_groups(load_model(name), bundled_config(name)):
        cell = cell_bytes(pools, key, values, tp, b)
        if pool == "swa":
            swa += cell
        else:
            full += cell
    return full, swa


def test_mimo_v2_flash_pools_each_kind_with_its_own_heads():
    """MiMo-V2-Flash's config.json: 48 layers, hybrid_layer_pattern 9 full + 39 sliding; full
    layers 4 KV heads, K 192 and V 128 wide; sliding layers swa_num_key_value_heads 8, swa_head_dim
    192, swa_v_head_dim 128 (pool_configurator.py:702-716, model_config.py:1357-1365, 1713-1718).
    At TP 4, bf16: full cell 9 x max(1, 4 // 4) x (192 + 128) x 2 = 5,760 B; SWA cell
    39 x (8 // 4) x (192 + 128) x 2 = 49,920 B; one full token costs 5,760 + 0.8 x 49,920 =
    45,696 B, so a budget of 45,696,000,000 + 45,695 B holds 1,000,000 full tokens and
    int(0.8 x 1,000,000) = 800,000 sliding ones."""
    assert _cells("mimo-v2-flash", 4) == (5_760, 49_920)
    p = sg.pool(kind="hybrid_swa", budget=45_696_000_000 + 45_695, page=1, context=8192,
                fraction=Fraction(9, 10), full_cell=5_760, swa_cell=49_920, window=128)
    assert (p.tokens, p.swa_tokens) == (1_000_000, 800_000)
    plan = engine_tokens("mimo-v2-flash", "H200", "sglang", tp=4, context=8192)
    assert (plan.cell, plan.swa_cell) == (5_760, 49_920)


def test_gemma_4_full_layers_are_wider_than_its_sliding_ones():
    """Gemma 4 26B-A4B: 30 layers, 5 full (global_head_dim 512, num_global_key_value_heads 2,
    V as wide as K: v_head_dim = head_dim) and 25 sliding (head_dim 256, 8 KV heads), as
    utils/hf_transformers/config.py:115-150 hands them to SGLang. TP 1, bf16: full cell
    5 x 2 x (512 + 512) x 2 = 20,480 B; SWA cell 25 x 8 x (256 + 256) x 2 = 204,800 B; one full
    token 20,480 + 0.8 x 204,800 = 184,320 B. At TP 8 each kind keeps max(1, heads // 8) = 1:
    5 x 1024 x 2 = 10,240 and 25 x 512 x 2 = 25,600 B."""
    assert _cells("gemma-4-26b-a4b", 1) == (20_480, 204_800)
    assert _cells("gemma-4-26b-a4b", 8) == (10_240, 25_600)
    assert evaluate(sg.CELL_SWA, c_full=20_480, c_swa=204_800, r=sg.SWA_FULL_TOKENS_RATIO) == \
        184_320


def test_gemma_4_default_fraction_is_cut_for_its_vision_tower():
    """H200 (143,771 MiB), TP 1, Gemma 4 (multimodal, not allowlisted for the prefill CUDA graph,
    configs/model_config.py:2501-2516): R = 512 + 1.5 x 8192 + 1/8 x 1024 + 256 x 2 (decode
    graph, no prefill graph) = 13,440 MiB; round((143,771 - 13,440) / 143,771, 3) =
    round(0.90652, 3) = 0.907. Its vision tower, 27 layers of 1152: 27 x 1152^2 / (24 x 1024^2)
    = 35,831,808 / 25,165,824 = 1.423828125; factor 0.95 x (1 - 0.1 x 0.423828125) =
    0.95 x 0.9576171875 = 0.909736328125; 0.907 x that = 0.825130849609375, held as the float
    SGLang's steps give (memory_hook.py:448-460: ratio, 1.0 - 0.1 x (ratio - 1.0), 0.95 x it,
    then f x it)."""
    base, _ = sg.default_mem_fraction(H200_MIB, 1, False, "google/gemma-4-26B-A4B-it",
                                      prefill_graph=False)
    assert base == Fraction(907, 1000)
    assert evaluate(mm.VLM_FACTOR, L_v=27, H_v=1152) == Fraction(909736328125, 10**12)
    plan = engine_tokens("gemma-4-26b-a4b", "H200", "sglang", tp=1, context=8192)
    assert plan.fraction == Fraction(0.907 * (0.95 * (1.0 - 0.1 * (1.423828125 - 1.0))))
    assert float(plan.fraction) == pytest.approx(0.825130849609375, abs=1e-15)


def test_kimi_k25_reads_its_vision_tower_from_the_class_defaults():
    """Kimi K2.5's vision_config holds vt_num_hidden_layers / vt_hidden_size, which
    KimiK25VisionConfig does not take, so its defaults 27 and 1152 stand (configs/kimi_k25.py:
    45-46): the same factor as Gemma 4. MLA on an H200 at TP 8, prefill graph kept
    (allowlisted): R = 512 + 12,288 + 1,024 + 512 x 2 + 1,536 = 16,384 MiB; round(127,387 /
    143,771, 3) = 0.886; x 0.909736328125."""
    config = bundled_config("kimi-k2.5")
    assert "num_hidden_layers" not in config["vision_config"]
    assert mm.vision_shape(config) == (27, 1152)
    base, _ = sg.default_mem_fraction(H200_MIB, 8, True, "moonshotai/Kimi-K2.5")
    assert base == Fraction(886, 1000)
    plan = engine_tokens("kimi-k2.5", "H200", "sglang", tp=8, context=8192)
    assert plan.fraction == Fraction(0.886 * (0.95 * (1.0 - 0.1 * (1.423828125 - 1.0))))


def test_which_configs_sglang_serves_as_multimodal():
    """configs/model_config.py:690-717, 808-828: Gemma 3 and Llama 4 are off unless
    --enable-multimodal; Gemma 4 and Kimi K2.5 are in multimodal_model_archs; MiMo-V2-Flash is
    text only; any config with a text_config counts (has_multimodal_subconfig)."""
    assert not mm.is_multimodal(bundled_config("gemma-3-27b"))
    assert not mm.is_multimodal(bundled_config("llama-4-scout"))
    assert mm.is_multimodal(bundled_config("gemma-4-26b-a4b"))
    assert mm.is_multimodal(bundled_config("kimi-k2.5"))
    assert not mm.is_multimodal(bundled_config("mimo-v2-flash"))
    assert not mm.is_multimodal(bundled_config("llama-3.1-8b"))
    assert mm.is_multimodal({"architectures": ["SomethingNew"], "text_config": {}})
    assert not mm.is_multimodal({"architectures": ["MiMoV2ForCausalLM"]})
    assert not mm.is_multimodal({"architectures": ["Gemma4ForConditionalGeneration"],
                                 "language_model_only": True})


def test_the_multimodal_reserve_comes_out_of_the_budget():
    """kv_cache_configurator.py:3034-3038: rest = free after the weights - slack - 100/1024 GB.
    F_0 = 2^37 B, W = 2^36 B, f = 3/4 (all exact in floats): 2^36 - 2^37 x 1/4 = 2^35 =
    34,359,738,368 B; less 100 MiB = 104,857,600 B: 34,254,880,768 B."""
    assert mm.MM_RESERVE == 104_857_600
    assert sg.kv_budget(2**37, 2**36, 0, Fraction(3, 4)) == 34_359_738_368
    assert sg.kv_budget(2**37, 2**36, 0, Fraction(3, 4), reserve=mm.MM_RESERVE) == \
        34_254_880_768
    plain = engine_tokens("gemma-3-27b", "H200", "sglang", tp=1, context=8192)
    assert all(label != "multimodal reserve M_mm" for label, *_ in plain.terms)
    vlm = engine_tokens("gemma-4-26b-a4b", "H200", "sglang", tp=1, context=8192)
    assert ("multimodal reserve M_mm", 104_857_600) in [t[:2] for t in vlm.terms]


@pytest.mark.parametrize(("layers", "hidden", "factor"), [
    (24, 1024, Fraction(95, 100)),  # the baseline ViT-L/14: 0.95 x 1
    (60, 2048, Fraction(95, 100) * Fraction(4, 5)),  # ratio 10: 1 - 0.9 = 0.1, clamped to 0.8
    (12, 768, Fraction(95, 100) * Fraction(21, 20)),  # ratio 0.28125: 1.071875 -> 1.05
])
def test_vlm_factor_clamps(layers, hidden, factor):
    assert evaluate(mm.VLM_FACTOR, L_v=layers, H_v=hidden) == factor


@given(st.integers(1, 200), st.integers(64, 8192), st.sampled_from([0.5, 0.8, 0.907, 0.95]))
def test_vlm_fraction_in_floats_is_the_expression(layers, hidden, f):
    """SGLang's float steps (vlm_fraction) give VLM_FRACTION to the float's last bits, and the
    cut stays within 0.76 and 0.9975 of the fraction."""
    config = {"architectures": ["X"], "vision_config": {"num_hidden_layers": layers,
                                                        "hidden_size": hidden}}
    got = mm.vlm_fraction(f, config)
    exact = evaluate(mm.VLM_FRACTION, f_0=Fraction(f), L_v=layers, H_v=hidden)
    assert got == pytest.approx(float(exact), rel=1e-14)
    assert 0.76 * f - 1e-15 <= got <= 0.9975 * f + 1e-15


def test_untraced_sliding_architectures_are_still_refused():
    model = load_model("mimo-v2-flash")
    with pytest.raises(ValueError, match="Step3p5ForCausalLM"):
        sg.refuse_model(model, {"architectures": ["Step3p5ForCausalLM"]})


def test_qwen3_vl_takes_the_hopper_feature_pool():
    """model_overrides/qwen3_vl.py:20-31, 85-140: on an SM90 GPU of at least 60 GiB, Qwen3-VL
    sets SGLANG_VLM_CACHE_SIZE_MB to 0 and, on one node, the CUDA-IPC feature transport, which
    reserves SGLANG_MM_FEATURE_CACHE_MB = 1024 MiB = 1,073,741,824 B (kv_cache_configurator.py:
    209-211); on an A100 (SM80) the 100 MiB cache stays. Its vision tower is transformers'
    Qwen3VLVisionConfig, whose num_hidden_layers is "depth": 27 layers of 1152."""
    import json
    from pathlib import Path

    from kvlib.serving.gpus import get_gpu

    config = json.loads((Path(__file__).parent / "fixtures" / "configs" / "qwen3-vl-8b.json")
                        .read_text())
    assert mm.is_multimodal(config) and mm.vision_shape(config) == (27, 1152)
    assert mm.mm_reserve(config, get_gpu("H200")) == 1_073_741_824
    assert mm.mm_reserve(config, get_gpu("H100-80GB")) == 1_073_741_824
    assert mm.mm_reserve(config, get_gpu("A100-80GB")) == 104_857_600
    assert mm.mm_reserve(bundled_config("gemma-4-26b-a4b"), get_gpu("H200")) == 104_857_600
    assert mm.mm_reserve(bundled_config("llama-3.1-8b"), get_gpu("H200")) == 0
