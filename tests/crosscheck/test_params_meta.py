"""kvlib's parameter count against the model transformers builds on the meta device (issue 42).

For every bundled config, every test config (tests/fixtures/configs, the 2026 corpus) and the
config classes' defaults of the families issue 42 added (params_meta.DEFAULTS): transformers
5.25.0 builds the model from the same config under ``torch.device("meta")`` (no weights,
nothing downloaded) and its parameters (plus persistent buffers, params_meta.py) must equal
``count_params(config).total`` exactly: the whole model where kvlib counts the vision tower
(vLLM loads it), the language model alone where kvlib says ``towers == "text only"``.

What cannot be compared is said, not hidden: a family kvlib has no counter for (pinned in
NOT_COUNTED, so a new counter or a lost one shows), a model_type transformers has no class for
(remote code), each a skip with its reason. MiMo-7B (remote code) is compared as the Qwen2
model vLLM serves it as (mimo.py:57-93: MiMoModel is Qwen2Model, the MTP layers dropped);
Step 3.7's flat files as Step3p7Config's text_config (what vLLM serves); Kimi K3 (no
transformers class) at its own shapes without its latent MoE, attention residuals, MLA output
gate and full-rank KDA gate, which tests/test_params_families.py counts by hand. Gemma 3n's
vision tower is timm's (TimmWrapperModel): without timm installed, its text model, audio tower
and embedders are compared apart (test_gemma3n_parts).
"""

from __future__ import annotations

import copy

import pytest
from params_meta import (
    DEFAULTS,
    HAVE_TIMM,
    buildable,
    default_config,
    gemma3n_parts,
    meta_params,
    published,
)

from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.params import COUNTERS, count_params

CASES = {f"bundled/{n}": n for n in BUNDLED}
CASES.update({name: name for name in published()})
CASES.update({f"defaults/{k}": k for k in DEFAULTS})
MIMO = "corpus/XiaomiMiMo--MiMo-7B-Base"
MINIMAX_M3 = "corpus/MiniMaxAI--MiniMax-M3"
KIMI_K3 = "corpus/moonshotai--Kimi-K3"

# families kvlib still has no counter for, by the model_type count_params names
NOT_COUNTED: set[str] = set()
# counted families no test config here lets transformers build: their remote code only
NOT_BUILT = {"nemotron-nas": "DeciLM: remote code (Llama-3.3-Nemotron-Super files)",
             "mimo": "MiMo: remote code; compared as Qwen2 (test_mimo_as_qwen2)",
             "minimax_m3": "no class for the text file's model_type; compared as "
                           "minimax_m3_vl_text (test_minimax_m3_as_vl_text)",
             "step3p7": "flat files only; compared as Step3p7Config's text_config "
                        "(test_step3p7_flat_as_text_config)"}
if not HAVE_TIMM:  # then Gemma 3n is compared part by part (test_gemma3n_parts)
    NOT_BUILT["gemma3n"] = "vision tower is timm's, not installed: test_gemma3n_parts"
GEMMA3N = "bundled/gemma-3n-e4b"


def _config(name: str) -> dict:
    if name.startswith("bundled/"):
        return bundled_config(CASES[name])
    if name.startswith("defaults/"):
        return default_config(CASES[name])
    return published()[name]


def vllm_beyond_transformers(config: dict) -> int:
    """Elements vLLM 0.34.0 builds that transformers 5.25.0's model does not hold, which kvlib
    counts as vLLM builds them: Gemma 4's ``attention_k_eq_v`` full-attention layers (before
    the KV-shared ones) ship k_proj only and transformers builds no v_proj, but vLLM's
    qkv_proj holds a v shard all the same and loads k into it (gemma4.py:89-121, 440-454):
    hidden x num_global_key_value_heads x global_head_dim elements each."""
    text = config.get("text_config", config)
    if not str(text.get("model_type", "")).startswith("gemma4") \
            or not text.get("attention_k_eq_v"):
        return 0
    first_shared = text["num_hidden_layers"] - (text.get("num_kv_shared_layers") or 0)
    full = text["layer_types"][:first_shared].count("full_attention")
    return (full * text["hidden_size"] * text["num_global_key_value_heads"]
            * text["global_head_dim"])


def _count(name: str):
    try:
        return count_params(_config(name)), None
    except ValueError as e:
        return None, str(e)


@pytest.mark.parametrize("name", list(CASES))
def test_params_equal_transformers_meta_count(name):
    count, why = _count(name)
    if count is None:
        assert "no parameter counter" in why, why  # any other refusal is a bug here
        pytest.skip(why)
    config = _config(name)
    reason = buildable(config)
    if reason:
        pytest.skip(f"{name}: {reason}")
    total, text, cls = meta_params(config)
    more = vllm_beyond_transformers(config)
    if count.towers == "text only":
        assert count.text == text + more, (name, cls, count.parts)
    else:
        assert count.total == total + more, (name, cls, count.parts, count.towers)


def test_gemma4_v_shard_by_hand():
    """The difference written out: google/gemma-4-31B holds 10 full-attention layers of
    attention_k_eq_v (of 60; hidden 5376, 4 global KV heads of 512): vLLM's v shards are
    10 x 5376 x 4 x 512 = 110,100,480 elements (220,200,960 B in bf16) beyond transformers."""
    config = published()["corpus/nvidia--Gemma-4-31B-IT-NVFP4"]
    assert vllm_beyond_transformers(config) == 10 * 5376 * 4 * 512 == 110_100_480


def test_mimo_as_qwen2():
    """MiMo-7B: kvlib's count of the published file equals transformers' Qwen2 model of the
    same shapes (vLLM: MiMoForCausalLM(Qwen2ForCausalLM), mtp_layers not loaded)."""
    config = published()[MIMO]
    count = count_params(config)
    total, _, cls = meta_params({**config, "model_type": "qwen2"})
    assert (count.model_type, cls) == ("mimo", "Qwen2ForCausalLM")
    assert count.total == total


def test_families_counted_and_checked():
    """Family by family: every counter is compared against transformers by at least one
    case above, or is named in NOT_BUILT with why; the families without a counter are
    exactly NOT_COUNTED."""
    checked, missing = set(), set()
    for name in CASES:
        count, why = _count(name)
        if count is None:
            missing.add(why.split("'")[1])
        elif buildable(_config(name)) is None:
            checked.add(count.model_type)
    assert missing == NOT_COUNTED
    assert set(COUNTERS) - checked == set(NOT_BUILT)
    # the families issue 42 names are among those checked
    assert {"qwen3_moe", "mixtral", "qwen3_vl", "qwen3_vl_moe", "glm4v_moe", "glm4_moe_lite",
            "glm4_moe", "jamba", "phi3", "smollm3", "qwen2_5_vl", "laguna", "step3p5",
            "kimi_linear"} <= checked


def test_minimax_m3_as_vl_text():
    """MiniMax-M3's text-only file (model_type minimax_m3, no transformers class): kvlib's
    count equals transformers' MiniMaxM3VL text model built from the same keys (its config
    class reads sparse_attention_config and moe_layer_freq as vLLM does)."""
    config = published()[MINIMAX_M3]
    count = count_params(config)
    total, _, cls = meta_params({**config, "model_type": "minimax_m3_vl_text"})
    assert (count.model_type, cls) == ("minimax_m3", "MiniMaxM3VLForCausalLM")
    assert count.total == total


@pytest.mark.parametrize("name", ["corpus/stepfun-ai--Step-3.7-Flash",
                                  "corpus/stepfun-ai--Step-3.7-Flash-FP8",
                                  "fixtures/step-3.7-flash.json"])
def test_step3p7_flat_as_text_config(name):
    """Step 3.7's flat files (model_type step3p7, the text model's keys at the top): kvlib's
    count equals the text model transformers builds from the same keys given as
    Step3p7Config's text_config (what vLLM serves: Step3p5ForCausalLM with
    Step3p7TextConfig, transformers_utils/config.py:171)."""
    config = published()[name]
    count = count_params(config)
    text = {k: v for k, v in config.items() if k != "model_type"}
    _, lm, cls = meta_params({"model_type": "step3p7", "text_config": text,
                              "vision_config": {}})
    assert (count.model_type, cls) == ("step3p7", "Step3p7ForConditionalGeneration")
    assert count.total == lm


def test_kimi_k3_shapes_as_kimi_linear():
    """Kimi K3 (model_type kimi_k3) has no transformers class, and transformers' Kimi Linear
    lacks K3's latent MoE, attention residuals, MLA output gate and full-rank KDA gate. At
    K3's own shapes (7168 wide, 93 layers of KDA and q-LoRA MLA, 896 experts) with those
    four keys taken out, kvlib's count equals transformers' KimiLinearForCausalLM; the four
    are counted by hand in tests/test_params_families.py (test_kimi_k3_by_hand)."""
    text = copy.deepcopy(published()[KIMI_K3]["text_config"])
    for key in ("routed_expert_hidden_size", "attn_res_block_size", "mla_use_output_gate"):
        del text[key]
    text["linear_attn_config"]["use_full_rank_gate"] = False
    text["hidden_act"] = "silu"  # transformers has no "situ"; no parameters either way
    count = count_params(text)
    total, _, cls = meta_params(text)
    assert (count.model_type, cls) == ("kimi_linear", "KimiLinearForCausalLM")
    assert count.total == total


@pytest.mark.parametrize("extra", [
    {"num_sliding_attention_heads": 32},
    {"attention_other_setting": {"num_attention_heads": 16,
                                 "attention_type": "sliding_attention"}},
    {"moe_layers_enum": "5,6,7,44"},
])
def test_step3p7_variants_as_text_config(extra):
    """The keys Step 3.7's counter reads beyond the published file (fewer heads on sliding
    layers, the legacy MoE layer list) change kvlib's count as they change transformers'."""
    config = {**published()["corpus/stepfun-ai--Step-3.7-Flash"], **extra}
    text = {k: v for k, v in config.items() if k != "model_type"}
    _, lm, _ = meta_params({"model_type": "step3p7", "text_config": text, "vision_config": {}})
    assert count_params(config).total == lm


def test_laguna_gating_variants():
    """Laguna's gating: "per-element" is a gate per head and channel in vLLM and transformers
    alike; gating false builds no g_proj in vLLM (laguna.py:331-349), where transformers still
    builds the per-element one (modeling_laguna.py:354-356): kvlib counts vLLM's, less by
    exactly that gate (40 layers, d 2048, 48 or 64 heads of 128)."""
    base = published()["corpus/poolside--Laguna-XS.2-FP8"]
    config = {**base, "gating": "per-element"}
    assert count_params(config).total == meta_params(config)[0]
    config = {**base, "gating": False}
    heads = base["num_attention_heads_per_layer"]
    assert meta_params(config)[0] - count_params(config).total == sum(
        2048 * h * 128 for h in heads)


@pytest.mark.parametrize("variant", [{}, {
    # E2B's shapes: 30 layers, MLP 8192 each, the last 10 sharing KV
    "num_hidden_layers": 30, "intermediate_size": [8192] * 30, "num_kv_shared_layers": 10,
    "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 6,
    "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 20}])
def test_gemma3n_parts(variant):
    """Gemma 3n (bundled E4B, and E2B's text shapes) part by part, as transformers builds each
    without timm: the text model (tied head), the audio tower (a Fixed tensor in kvlib's
    count: held whole on every rank) and the two embedders equal kvlib's; the rest of
    kvlib's towers is the timm encoder's table entry (compared whole in
    test_params_equal_transformers_meta_count where timm is installed)."""
    from kvlib.models.params.vision import TIMM_PARAMS

    config = copy.deepcopy(_config(GEMMA3N))
    config["text_config"].update(variant)
    count = count_params(config)
    parts = gemma3n_parts(config)
    audio = sum(f.elements for f in count.fixed if f.name == "model.audio_tower")
    assert count.text == parts["text"]
    assert audio == parts["audio"]
    assert count.parts["vision"] == (parts["audio"] + parts["embedders"]
                                     + TIMM_PARAMS["mobilenetv5_300m_enc"])
