"""Issue 42 item 3: configs read as vLLM 0.34.0 reads them, each on a small config written here.

Phi-4-mini-reasoning's window on every layer, LFM2's inert ``num_heads``, a config dispatched by
its ``architectures`` where its ``model_type`` is unknown, and a Falcon-H1 config transformers'
own validation rejects.
"""

import json
from fractions import Fraction

import pytest

from kvlib import Deployment
from kvlib.models.architecture_table import ARCHITECTURES
from kvlib.models.architectures import from_wheel
from kvlib.models.catalog import bundled_config
from kvlib.models.readers import parse_config, read_config
from kvlib.models.spec import CacheKind

GiB = 1024**3
BF16 = 2

# microsoft/Phi-4-mini-reasoning config.json's sizing fields (as issue 42 item 3 quotes it:
# sliding_window 262144 and no layer_types; the heads as Phi-4-mini's, tests/test_engine_keys.py)
PHI_4_MINI_REASONING = {
    "model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "num_hidden_layers": 32,
    "num_attention_heads": 24, "num_key_value_heads": 8, "hidden_size": 3072,
    "intermediate_size": 8192, "vocab_size": 200064, "max_position_embeddings": 131072,
    "sliding_window": 262144, "partial_rotary_factor": 0.75, "torch_dtype": "bfloat16",
    "tie_word_embeddings": True}


def test_phi_4_mini_reasoning_slides_on_every_layer_as_vllm_does():
    """engine/arg_utils.py:2321-2327 sets the cache config's window when there is no
    layer_types; llama.py:185-205 (Phi3ForCausalLM is Llama's) passes no per-layer window, so
    every layer is a sliding-window layer of 262,144 tokens."""
    s = read_config(PHI_4_MINI_REASONING)
    assert [(g.kind, g.window, g.layers) for g in s.groups] == [(CacheKind.SLIDING, 262144, 32)]
    # per token 32 layers x 8 KV heads x (K + V) x 128 (3072 / 24) x 2 B = 131,072 B
    assert s.kv_bytes_per_token(BF16) == 32 * 8 * 2 * 128 * 2 == 131_072


def test_phi_4_mini_reasoning_plan_counts_vllm_s_sliding_blocks():
    """At 8,192 tokens a sliding layer needs cdiv(min(262,143 + 8,192, 8,192), 64) + 1 = 129
    blocks of 64 tokens, not a full layer's 128: a 100 GiB pool of 8 MiB blocks (64 tokens x
    131,072 B) is 12,800 blocks, so vLLM logs 12,800 / 129 = 99.22 (issue 42: 99.22, not
    100.00)."""
    dep = Deployment(read_config(PHI_4_MINI_REASONING, params=3_836_021_760), "H100-80GB",
                     kv_dtype="bf16", weight_dtype="bf16", config=PHI_4_MINI_REASONING,
                     kv_cache_memory=100 * GiB)
    assert 100 * GiB // (64 * 131_072) == 12_800
    plan = dep.plan(8192)
    assert plan.vllm_max_concurrency == pytest.approx(float(Fraction(12_800, 129)), abs=0.005)
    assert round(plan.vllm_max_concurrency, 2) == 99.22


def test_a_window_with_layer_types_still_follows_layer_types():
    cfg = {**PHI_4_MINI_REASONING, "num_hidden_layers": 2, "sliding_window": 4096,
           "layer_types": ["sliding_attention", "full_attention"]}
    assert {(g.kind, g.window) for g in read_config(cfg).groups} == {
        (CacheKind.FULL, None), (CacheKind.SLIDING, 4096)}


# LiquidAI/LFM2-1.2B config.json's sizing fields: 16 layers, attention at 2, 5, 8, 10, 12, 14,
# 32 query and 8 KV heads over hidden 2048, conv_L_cache 3, and num_heads 32 beside
# num_attention_heads (issue 42 item 3)
_TYPES = ["full_attention" if i in (2, 5, 8, 10, 12, 14) else "conv" for i in range(16)]
LFM2_1_2B = {"model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"],
             "num_hidden_layers": 16, "hidden_size": 2048, "num_attention_heads": 32,
             "num_heads": 32, "num_key_value_heads": 8, "conv_L_cache": 3, "conv_dim": 2048,
             "conv_dim_out": 2048, "layer_types": _TYPES, "max_position_embeddings": 128000,
             "torch_dtype": "bfloat16", "vocab_size": 65536}


def test_lfm2_num_heads_is_inert_not_refused():
    """vLLM 0.34.0 reads num_heads only where it builds mamba2 (models/mamba2.py:207); LFM2's
    attention reads num_attention_heads (models/lfm2.py:218)."""
    s = read_config(LFM2_1_2B)
    # 6 attention layers x 8 KV heads x (K + V) x 64 (2048 / 32) x 2 B = 12,288 B per token
    assert s.kv_bytes_per_token(BF16) == 6 * 8 * 2 * 64 * 2 == 12_288
    note = [a for a in s.assumptions if a.startswith("num_heads=32 is inert")]
    assert note and "mamba2.py:207" in note[0]


def test_lfm2_1_2b_holds_vllm_s_210_sessions_in_20_gib():
    """vLLM 0.34.0 builds LFM2-1.2B: 210 sessions of 8K in a 20 GiB pool (issue 42 item 3).
    The parameter count is not used where kv_cache_memory gives the budget."""
    dep = Deployment(read_config(LFM2_1_2B, params=1_170_340_608), "H100-80GB",
                     kv_dtype="bf16", weight_dtype="bf16", config=LFM2_1_2B,
                     kv_cache_memory=20 * GiB)
    assert dep.plan(8192).max_sequences == 210  # vLLM's allocator, its blocks and prefill peak


def test_an_unknown_model_type_is_read_by_its_architectures():
    """SGLang's DeepSeek V4 FP8 configs say model_type deepseek_ref; vLLM's registry maps
    DeepseekV4ForCausalLM to its deepseek_v4 module (model_executor/models/registry.py:99)."""
    cfg = {**bundled_config("deepseek-v4-flash"), "model_type": "deepseek_ref"}
    r = parse_config(cfg)
    assert (r.family, r.reader) == ("deepseek_v4", "deepseek_v4")
    assert r.groups() == parse_config(bundled_config("deepseek-v4-flash")).groups()
    assert any(a.startswith("model_type 'deepseek_ref' has no reader; architectures names "
                            "DeepseekV4ForCausalLM") and "registry.py:99" in a
               for a in r.assumptions)


def test_a_known_model_type_wins_and_an_unknown_architecture_stays_generic():
    r = parse_config({**PHI_4_MINI_REASONING, "architectures": ["LlamaForCausalLM"]})
    assert r.family == "phi3"  # model_type known: architectures not consulted
    g = parse_config({**PHI_4_MINI_REASONING, "model_type": "mystery",
                      "architectures": ["MysteryForCausalLM"]})
    assert g.reader == "attention" and any("has no reader of its own" in a
                                           for a in g.assumptions)


def test_the_architecture_table_is_vllm_s(tmp_path):
    """The table's entries as the generator reads a registry.py laid out as vLLM's."""
    reg = tmp_path / "model_executor" / "models"
    reg.mkdir(parents=True)
    reg.joinpath("registry.py").write_text(
        "_TEXT_GENERATION_MODELS = {\n"
        '    "DeepseekV4ForCausalLM": ("vllm.models.deepseek_v4", "DeepseekV4ForCausalLM"),\n'
        '    "Phi3ForCausalLM": ("phi3", "Phi3ForCausalLM"),\n'
        '    "OtherForCausalLM": ("other", "OtherForCausalLM"),\n'
        "}\n")
    assert from_wheel(tmp_path, {"deepseek_v4", "phi3"}) == {
        "DeepseekV4ForCausalLM": ("deepseek_v4", 2), "Phi3ForCausalLM": ("phi3", 3)}
    assert ARCHITECTURES["DeepseekV4ForCausalLM"] == ("deepseek_v4", 99)
    assert ARCHITECTURES["Phi3ForCausalLM"][0] == "phi3"


# tiiuae/Falcon-H1-7B's sizing fields (tests/test_config_corpus.py's FALCON_H1_7B)
FALCON_H1 = {"model_type": "falcon_h1", "max_position_embeddings": 262_144,
             "num_hidden_layers": 44, "num_attention_heads": 12, "num_key_value_heads": 2,
             "head_dim": 128, "hidden_size": 3072, "mamba_d_conv": 4, "mamba_d_head": 128,
             "mamba_d_ssm": 3072, "mamba_d_state": 256, "mamba_expand": 2,
             "mamba_n_groups": 1, "mamba_n_heads": 24, "torch_dtype": "bfloat16"}


def test_falcon_h1_without_mamba_d_ssm_takes_the_1024_default_which_transformers_rejects():
    """No mamba_d_ssm: FalconH1Config's default 1024 (configuration_falcon_h1.py:77), which 24
    heads do not divide: validate_architecture (:122-130) rejects it, as transformers does."""
    cfg = {k: v for k, v in FALCON_H1.items() if k != "mamba_d_ssm"}
    with pytest.raises(ValueError, match=r"mamba_n_heads=24 does not divide d_ssm=1024: "
                                         r"transformers' FalconH1Config\.validate_architecture"):
        read_config(cfg)
    # transformers rejects it too: tests/crosscheck/test_falcon_h1_validation.py (make crosscheck)


def test_falcon_h1_heads_times_width_not_d_ssm_is_refused_as_transformers_does():
    """16 heads divide 3,072, but 16 x 128 = 2,048 is not 3,072."""
    cfg = {**FALCON_H1, "mamba_n_heads": 16}
    with pytest.raises(ValueError, match=r"mamba_n_heads x mamba_d_head = 16 x 128 = 2048 is "
                                         r"not d_ssm = 3072: transformers' FalconH1Config"
                                         r"\.validate_architecture"):
        read_config(cfg)
    # transformers rejects it too: tests/crosscheck/test_falcon_h1_validation.py (make crosscheck)


def test_falcon_h1_heads_that_do_not_divide_d_ssm_are_refused_as_transformers_does():
    cfg = {**FALCON_H1, "mamba_n_heads": 25}
    with pytest.raises(ValueError, match="mamba_n_heads=25 does not divide d_ssm=3072: "
                                         "transformers' FalconH1Config.validate_architecture"):
        read_config(cfg)
    # transformers rejects it too: tests/crosscheck/test_falcon_h1_validation.py (make crosscheck)


def test_falcon_h1_null_d_ssm_and_auto_head_are_read_as_transformers_reads_them():
    """mamba_d_ssm null: mamba_expand x hidden_size = 6,144; mamba_d_head 'auto': 6,144 // 24
    = 256 (configuration_falcon_h1.py:109-111). SSM state per layer 24 x 256 x 256 x 2 B."""
    cfg = {**FALCON_H1, "mamba_d_ssm": None, "mamba_d_head": "auto"}
    s = read_config(cfg)
    per_layer = 3 * (6144 + 2 * 256) * 2 + 24 * 256 * 256 * 2
    assert s.state_bytes_per_sequence() == 44 * per_layer
    # transformers reads it so too: tests/crosscheck/test_falcon_h1_validation.py


def test_the_published_falcon_h1_still_reads():
    s = read_config(FALCON_H1)
    assert s.kv_bytes_per_token(BF16) == 44 * 2 * 2 * 128 * 2
    assert json.dumps(FALCON_H1)  # the config as written
