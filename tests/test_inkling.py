"""Inkling, Inkling 2 and Inkling 2 Loop (issue 31: transformers 5.25.0's ``sliding_window_size``
families): attention beside four short-convolution streams per layer. Every figure by hand."""

from __future__ import annotations

import pytest

from kvlib import parse_config, read_config


def inkling(**extra):
    """InklingTextConfig's defaults (configuration_inkling.py:106-149) inside the wrapper, with
    the 5 local : 1 full pattern written as local_layer_ids (what vLLM 0.34.0 reads)."""
    text = {"model_type": "inkling_text", "num_hidden_layers": 66, "hidden_size": 6144,
            "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
            "swa_num_attention_heads": 64, "swa_num_key_value_heads": 16, "swa_head_dim": 128,
            "sliding_window_size": 512, "sconv_kernel_size": 4, "d_rel": 16,
            "rel_extent": 1024, "local_layer_ids": [i for i in range(66) if (i + 1) % 6],
            **extra}
    return {"model_type": "inkling_mm_model", "text_config": text, "torch_dtype": "bfloat16"}


def groups(r):
    return {(str(g.kind), g.window, g.attention): (g.layers, g.sizes) for g in r.groups()}


def test_inkling_attention_and_the_conv_window_by_hand():
    r = parse_config(inkling())
    g = groups(r)
    # 11 full layers (5, 11, ..., 65), 55 sliding over 512
    assert g[("full", None, "GQA")][0] == 11
    assert g[("sliding", 512, "GQA")] == (55, {"N_h": 64, "N_g": 16, "d_QK": 128, "d_V": 128})
    # conv rows: full 8 x pow2(2 x 128 + 2 x 6144 / 8 = 1792) = 8 x 2048; sliding
    # 16 x pow2(256 + 768 = 1024) = 16 x 1024: both 16,384 values, one group of 66 layers
    assert g[("sliding", 4, "Short-conv window")] == (66, {"d_w": 16384, "b": 2})
    spec = read_config(inkling())
    T = 100_000
    full = 11 * T * 2 * 8 * 128 * 2  # bf16 K and V
    sliding = 55 * 512 * 2 * 16 * 128 * 2
    conv = 66 * 4 * 16384 * 2  # bf16 whatever the KV dtype
    assert spec.kv_bytes_per_sequence(T, 2) == full + sliding + conv == 4_744_937_472
    # fp8 KV: the attention halves, the conv window stays bf16
    assert spec.kv_bytes_per_sequence(T, 1) == full // 2 + sliding // 2 + conv


def test_inkling_text_model_alone_and_transformers_names():
    c = inkling()["text_config"]
    c = {**c, "conv_kernel_size": 4, "sliding_window": 512}  # attribute_map names, agreeing
    assert groups(parse_config(c)) == groups(parse_config(inkling()))


@pytest.mark.parametrize("change, word", [
    ({"local_layer_ids": None}, "local_layer_ids is missing"),
    ({"local_layer_ids": None, "layer_types": ["hybrid_sliding"] * 66}, "layer_types"),
    ({"layer_types": ["hybrid"] * 66}, "disagrees"),
    ({"swa_num_key_value_heads": None}, "swa_num_key_value_heads is missing"),
    ({"v_head_dim": 64}, "v_head_dim"),
    ({"sconv_kernel_size": 4, "conv_kernel_size": 3}, "disagree"),
    ({"num_key_value_heads": 7}, "whole number"),
])
def test_inkling_refuses_what_the_engines_would_build_differently(change, word):
    c = inkling()
    c["text_config"] = {k: v for k, v in {**c["text_config"], **change}.items()
                        if v is not None}
    with pytest.raises(ValueError, match=word):
        parse_config(c)


def test_inkling_all_full_layer_types_agree_with_vllm():
    c = inkling(local_layer_ids=None, layer_types=["hybrid"] * 66)
    del c["text_config"]["local_layer_ids"]
    g = groups(parse_config(c))
    assert g[("full", None, "GQA")][0] == 66 and ("sliding", 512, "GQA") not in g


def inkling2(**extra):
    """Inkling2TextConfig's defaults (configuration_inkling2.py:67-98)."""
    return {"model_type": "inkling2_text", "num_hidden_layers": 48, "hidden_size": 4608,
            "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
            "swa_num_attention_heads": 48, "swa_num_key_value_heads": 8, "swa_head_dim": 128,
            "sliding_window_size": 1024, "conv_kernel_size": 4, **extra}


def test_inkling2_by_hand():
    r = parse_config(inkling2())
    g = groups(r)
    assert g[("full", None, "GQA")][0] == 8 and g[("sliding", 1024, "GQA")][0] == 40
    # float32 conv states: 2 x 8 x 128 + 2 x 4608 = 11,264 values per token, 4 tokens
    assert g[("sliding", 4, "Short-conv window")] == (48, {"d_w": 11264, "b": 4})
    T = 10_000
    want = 8 * T * 2048 * 2 + 40 * 1024 * 2048 * 2 + 48 * 4 * 11264 * 4
    assert read_config(inkling2()).kv_bytes_per_sequence(T, 2) == want == 504_102_912


def test_inkling2_loop_counts_each_pass():
    c = inkling2(model_type="inkling2_loop_text", num_hidden_layers=24, hidden_size=2304,
                 num_attention_heads=24, swa_num_attention_heads=24,
                 loop_layer_index_start=6, loop_layer_index_end=18, loop_num_passes=3)
    g = groups(parse_config(c))
    # full layers 5, 11, 17, 23; 11 and 17 loop: 4 + 2 x 2 = 8; sliding 20 + 2 x 10 = 40
    assert g[("full", None, "GQA")][0] == 8 and g[("sliding", 1024, "GQA")][0] == 40
    assert g[("sliding", 4, "Short-conv window")] == (48, {"d_w": 2 * 8 * 128 + 2 * 2304,
                                                           "b": 4})
    c["loop_config"] = {"core_start": 6, "core_end": 12, "num_passes": 2}  # wins (:139-145)
    assert groups(parse_config(c))[("sliding", 4, "Short-conv window")][0] == 30


def test_transformers_configs_are_read_with_every_key_accounted():
    """The to_dict() of transformers 5.25.0's classes (their keys, as of the wheel): nothing
    ignored silently, nothing refused."""
    r = parse_config(inkling(mlp_layer_types=["sparse"] * 66, number_of_conv_states=4,
                             num_mtp_layers=None, log_scaling_n_floor=None,
                             logits_mup_width_multiplier=24.0, shared_expert_sink=True))
    assert r.ignored == ()
    r = parse_config(inkling2(qk_l2_clip_threshold=22.6, n_layers_per_attn_res_block=6,
                              layer_types=["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding"
                                           for i in range(48)]))
    assert r.ignored == ()


def test_an_unknown_window_key_is_still_refused():
    with pytest.raises(ValueError, match="sliding_window_pattern"):
        parse_config(inkling(sliding_window_pattern=6))


def test_vllm_plan_refuses_inkling_by_name():
    """vLLM 0.34.0 keeps the conv streams in sconv_kernel_size-token blocks unified with the
    attention pages: kvlib's layout is not traced for it, so the plan refuses by name."""
    from kvlib.serving.engines.vllm.layout import vllm_layout

    with pytest.raises(ValueError, match=r"66 layer\(s\) keep short-convolution streams in a "
                                         r"4-token window.*sconv_swa_attn.py"):
        vllm_layout(read_config(inkling()), 32768, "bf16", 1, "H200")
