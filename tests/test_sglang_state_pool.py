"""SGLang 0.5.23's state pool for Gated DeltaNet and Mamba2 hybrids (Qwen3-Next, Nemotron-H),
worked by hand from the
published config and SGLang's source lines (issue 41 item 3); the same model is run through
SGLang's own code (Qwen3NextConfig, mamba_utils, _handle_max_mamba_cache) in
tests/oracle/test_sglang_oracle.py."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvlib.core.numeric import evaluate
from kvlib.models.catalog import bundled_config, load_model
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines.sglang import state

GiB = 1 << 30


def _gdn():
    return next(g for g in load_model("qwen3-next-80b-a3b").groups
                if g.attention == "Gated DeltaNet")


def test_qwen3_next_state_per_request_by_hand():
    """Qwen3-Next-80B-A3B: 48 layers, every 4th full attention, so 36 Gated DeltaNet layers;
    linear_num_key_heads 16, linear_num_value_heads 32, key and value head dims 128, conv
    kernel 4; no mamba_ssm_dtype, so the temporal state is float32 (4 B), the conv state bf16.
    conv_dim = 32 x 128 + 2 x 16 x 128 = 8,192. At TP 4, per layer: conv 8,192 / 4 x 3 x 2 =
    12,288 B, temporal 32 / 4 x 128 x 128 x 4 = 524,288 B; x 36 = 19,316,736 B. TP 8 halves it:
    9,658,368 B."""
    config = bundled_config("qwen3-next-80b-a3b")
    assert "mamba_ssm_dtype" not in config and state.state_dtype_bytes(config) == 4
    assert state.state_per_request(_gdn(), config, 4) == 36 * (12_288 + 524_288) == 19_316_736
    assert state.state_per_request(_gdn(), config, 8) == 9_658_368


def test_a_config_naming_its_state_dtype_is_read():
    assert state.state_dtype_bytes({"mamba_ssm_dtype": "bfloat16"}) == 2
    assert state.state_dtype_bytes({"text_config": {"mamba_ssm_dtype": "float16"}}) == 2
    assert state.state_dtype_bytes({"text_config": {}}) == 4


def test_budget_split_by_hand():
    """kv_cache_configurator.py:3345-3403 at mamba_full_memory_ratio 0.9: a budget of 19 GiB =
    20,401,094,656 B gives the state 0.9 / 1.9 of it, 9 GiB = 9,663,676,416 B; slots of S =
    19,316,736 B: (9,663,676,416 - S) // S = 499 (500 x S = 9,658,368,000 fits, 501 x S does
    not); the KV pool keeps 20,401,094,656 - (499 + 1) x S = 10,742,726,656 B: 874,245 tokens
    of 12 full layers x 1 KV head x (256 + 256) x 2 = 12,288 B; max_running_requests at most
    499 // 5 = 99."""
    S, B = 19_316_736, 19 * GiB
    k = evaluate(state.MAMBA_SLOTS, B_rest=B, S=S, r=Fraction(9, 10))
    assert k == 499
    kv = evaluate(state.KV_AFTER_STATE, B_rest=B, S=S, K=k)
    assert kv == 10_742_726_656 and kv // 12_288 == 874_245
    slots, kv_float = state.split_budget(float(B), S)
    assert slots == 499 and abs(kv_float - kv) <= 1
    assert evaluate(state.MAMBA_CAP, K=499, q=state.mamba_ratio("Qwen3NextForCausalLM")) == 99


@given(st.integers(1 << 30, 1 << 38), st.integers(1 << 20, 1 << 27))
def test_split_in_floats_is_the_expression(budget, per_req):
    """SGLang's GB-float steps give MAMBA_SLOTS exactly away from a boundary, and the KV budget
    within a slot: the state pool never takes more than r / (1 + r) of the budget."""
    slots, kv = state.split_budget(float(budget), per_req)
    exact = evaluate(state.MAMBA_SLOTS, B_rest=budget, S=per_req, r=Fraction(9, 10))
    assert abs(slots - exact) <= 1
    assert kv == pytest.approx(budget - (slots + 1) * per_req, abs=2)
    assert (slots + 1) * per_req <= budget * 9 / 19 + 1


def test_the_plan_caps_running_requests_by_the_state_slots():
    plan = engine_tokens("qwen3-next-80b-a3b", "H200", "sglang", tp=4, context=8192)
    extras = dict(plan.extras)
    assert extras["state_bytes_per_request"] == 19_316_736
    assert plan.cell == 12 * 1 * 512 * 2  # only the 12 full-attention layers hold KV
    assert plan.max_running_requests == extras["max_mamba_cache_size"] // 5
    assert plan.sessions <= plan.max_running_requests
    assert extras["kv_pool_budget"] + (extras["max_mamba_cache_size"] + 1) * 19_316_736 <= \
        plan.kv_budget + 1


def test_nemotron_h_mamba2_state_by_hand():
    """Nemotron-H 56B: hybrid_override_pattern of 118 layers, 54 Mamba2 ("M"), 10 attention
    ("*"), 54 MLP ("-"); mamba_num_heads 256, mamba_head_dim 64, n_groups 8, ssm_state_size 256,
    conv_kernel 4 (configs/nemotron_h.py:425-439). conv_dim = 256 x 64 + 2 x 8 x 256 = 20,480.
    At TP 8, per layer: conv 20,480 / 8 x 3 x 2 = 15,360 B, temporal 256 / 8 x 64 x 256 x 4 =
    2,097,152 B; x 54 = 114,075,648 B. The KV pool holds the 10 attention layers only: 8 KV heads
    / 8 = 1 x (128 + 128) x 2 x 10 = 5,120 B a token; the MLP layers keep nothing."""
    model = load_model("nemotron-h-56b")
    mamba = next(g for g in model.groups if g.attention == "Mamba2")
    assert mamba.layers == 54
    assert state.state_per_request(mamba, bundled_config("nemotron-h-56b"), 8) == \
        54 * (15_360 + 2_097_152) == 114_075_648
    plan = engine_tokens("nemotron-h-56b", "H200", "sglang", tp=8, context=8192)
    assert plan.cell == 5_120
    assert dict(plan.extras)["state_bytes_per_request"] == 114_075_648


def test_a_tp_that_does_not_divide_the_heads_is_refused():
    """Mamba2StateShape.create divides the heads by TP (distributed/utils.py divide): 32 value
    heads at TP 3 do not divide."""
    with pytest.raises(ValueError, match="TP=3"):
        state.state_per_request(_gdn(), bundled_config("qwen3-next-80b-a3b"), 3)


def test_other_state_architectures_are_still_refused():
    """State layers of an architecture not traced (Kimi Linear's, say) are refused by name."""
    from kvlib.serving.engines import sglang as sg

    with pytest.raises(ValueError, match="Gated DeltaNet state layers"):
        sg.refuse_model(load_model("qwen3-next-80b-a3b"),
                        {"architectures": ["KimiLinearForCausalLM"]})
    sg.refuse_model(load_model("qwen3-next-80b-a3b"), bundled_config("qwen3-next-80b-a3b"))


def test_qwen3_5_is_multimodal_with_its_vision_depth_unread():
    """Qwen3.5 27B (Qwen3_5ForConditionalGeneration): SGLang builds its vision config with its
    own Qwen3VLVisionConfig, which keeps the 27 layers as "depth", so adjust_mem_fraction_for_vlm
    reads the default 24 layers (memory_hook.py:440): ratio 24 x 1152^2 / (24 x 1024^2) =
    1.265625, factor 0.95 x (1 - 0.1 x 0.265625) = 0.95 x 0.9734375. On an H200 at TP 4 (prefill
    graph kept, an allowlisted architecture): R = 512 + 12,288 + 512 + 1,024 + 58 x 8 = 14,800
    MiB, round(128,971 / 143,771, 3) = 0.897. State: 48 Gated DeltaNet layers, 16 key and 48
    value heads of 128, conv 4, mamba_ssm_dtype float32: conv_dim 48 x 128 + 2 x 16 x 128 =
    10,240; at TP 4 per layer 10,240 / 4 x 3 x 2 + 12 x 128 x 128 x 4 = 15,360 + 786,432 B;
    x 48 = 38,486,016 B."""
    from kvlib.serving.engines.sglang import multimodal as mm

    config = bundled_config("qwen3.5-27b")
    assert config["vision_config"]["depth"] == 27 and mm.vision_shape(config) == (24, 1152)
    plan = engine_tokens("qwen3.5-27b", "H200", "sglang", tp=4, context=8192)
    assert plan.fraction == Fraction(0.897 * (0.95 * (1.0 - 0.1 * (1.265625 - 1.0))))
    gdn = next(g for g in load_model("qwen3.5-27b").groups if g.attention == "Gated DeltaNet")
    assert state.state_per_request(gdn, config, 4) == 48 * (15_360 + 786_432) == 38_486_016
    assert dict(plan.extras)["state_bytes_per_request"] == 38_486_016
