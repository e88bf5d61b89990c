"""kvlib.models.params_shapes against the model transformers 5.25.0 builds (issue 42).

For every family in ``params_shapes.SHAPES``, transformers builds the model on the meta
device (no memory, nothing downloaded; params_meta.meta_params: parameters once, tied ones
once, plus persistent buffers) from

* ``default``: the config class's defaults (``AutoConfig.for_model(model_type)``, all its
  keys written out), given alike to kvlib;
* ``small``: a minimal dict of the family's own keys (3 or 4 layers, GQA where the family
  has it, fewer and narrower experts, dense layers mixed in, the family's switches flipped
  from their defaults: biases, q/k norms, the tied head, post norms), so that every key
  kvlib leaves out is read at the config class's default in both.

kvlib's count must EQUAL transformers' exactly, less what vLLM 0.34.0 does not load, written
out in ``_not_loaded``: Command R / Command A's ``lm_head`` (vLLM's CohereForCausalLM reads the
embedding as the head and drops any lm_head, commandr.py:417); Granite SWA's attention sinks
where the file sets ``attention_sinks`` false (vLLM's granite.py:109 then builds none).

The multimodal wrappers of ``params_shapes.WRAPPERS`` (EXAONE 4.5) are built as
image-text-to-text models, tower and all, at the class's defaults and at a small config;
the published files of the families added for the unseen 2026 configs through
``kvlib.models.params.count_params``, as ``kvlib plan`` counts them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from params_meta import meta_params
from transformers import AutoConfig

from kvlib.models.params import count_params
from kvlib.models.params_shapes import SHAPES, WRAPPERS, count_by_shape

# the class's defaults do not build for these: the key given (NemotronConfig's
# num_key_value_heads defaults to None, which NemotronAttention divides by,
# modeling_nemotron.py:238)
DEFAULT_FIX = {"nemotron": {"num_key_value_heads": 8},
               # HunYuanDenseV1Config's and MinistralConfig's head_dim default to None, which
               # the attention raises to a power (modeling_hunyuan_v1_dense.py:161-163,
               # modeling_ministral.py:145-147)
               "hunyuan_v1_dense": {"head_dim": 128}, "ministral": {"head_dim": 128}}

_SMALL = {"hidden_size": 256, "num_hidden_layers": 3, "num_attention_heads": 8,
          "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}
_MOE = {"num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 128}
# per family: its small config (on top of _SMALL unless it names its own keys)
SMALL = {
    "apertus": {"attention_bias": True, "tie_word_embeddings": True},
    "arcee": {"attention_bias": True, "mlp_bias": True, "head_dim": 48},
    "cohere": {"use_qk_norm": True, "tie_word_embeddings": False, "attention_bias": True},
    "cohere2": {"tie_word_embeddings": False, "head_dim": 64},
    "cwm": {"mlp_bias": True, "tie_word_embeddings": True, "num_key_value_heads": None},
    "glm": {"attention_bias": False, "head_dim": 64, "pad_token_id": 0},
    "glm4": {"attention_bias": True, "tie_word_embeddings": True, "pad_token_id": 0,
             "num_key_value_heads": None},
    "granite": {"attention_bias": True, "mlp_bias": True},
    "hyperclovax": {"use_post_norm": False, "attention_bias": True},
    "internlm3": {"qkv_bias": True, "bias": True, "head_dim": 32},
    "iquestcoder": {"attention_bias": True, "mlp_bias": True, "head_dim": 64},
    "jais2": {"attention_bias": False, "mlp_bias": False, "head_dim": 32},
    "ministral3": {"head_dim": 64, "tie_word_embeddings": True},
    "nanochat": {"attention_bias": True, "num_key_value_heads": 4},
    "nemotron": {"attention_bias": True, "mlp_bias": True, "head_dim": 32},
    "olmo": {"attention_bias": True, "tie_word_embeddings": True},
    "olmo2": {"attention_bias": True, "head_dim": 64},
    "olmo3": {"head_dim": 16},
    "seed_oss": {"attention_bias": True, "attention_out_bias": True, "head_dim": 64},
    "vaultgemma": {"tie_word_embeddings": False, "head_dim": 64, "num_key_value_heads": None},
    "helium": {"attention_bias": True, "mlp_bias": True, "head_dim": 64,
               "num_attention_heads": 20, "num_key_value_heads": None},
    "ministral": {"head_dim": 64, "num_key_value_heads": None},
    "hunyuan_v1_dense": {"attention_bias": True, "head_dim": 64},
    "ernie4_5": {"num_key_value_heads": None, "tie_word_embeddings": False},
    "exaone": {"num_hidden_layers": None, "num_layers": 4, "attention_bias": True,
               "num_key_value_heads": None},
    # Exaone4Config's 32 KV heads by default (configuration_exaone4.py:83), a head_dim that
    # is not hidden / heads, the head tied
    "exaone4": {"num_attention_heads": 32, "num_key_value_heads": None, "head_dim": 16,
                "tie_word_embeddings": True},
    "starcoder2": {"use_bias": False, "tie_word_embeddings": False},
    "stablelm": {"use_qkv_bias": True, "qk_layernorm": True, "use_parallel_residual": True,
                 "num_hidden_layers": 4},
    "phi": {"qk_layernorm": True, "tie_word_embeddings": True},
    "gpt_neox": {"attention_bias": False, "num_key_value_heads": None},
    "gptj": {"n_embd": 256, "n_layer": 3, "n_head": 8, "n_inner": 640, "vocab_size": 1000,
             "rotary_dim": 16},
    "bloom": {"hidden_size": 256, "n_layer": 3, "n_head": 8, "vocab_size": 1000,
              "tie_word_embeddings": False},
    "qwen2_moe": {**_MOE, "num_hidden_layers": 4, "decoder_sparse_step": 2,
                  "mlp_only_layers": [3], "shared_expert_intermediate_size": 384,
                  "qkv_bias": False, "num_attention_heads": 16, "num_key_value_heads": None},
    "olmoe": {**_MOE, "attention_bias": True},
    "kolibri1": {**_MOE, "num_key_value_heads": None, "shared_expert_intermediate_size": 80,
                 "tie_word_embeddings": True},
    "solar_open": {"n_routed_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 96,
                   "attention_bias": True, "num_key_value_heads": None,
                   "tie_word_embeddings": True},
    "flex_olmo": {**_MOE, "tie_word_embeddings": True, "pad_token_id": 0},
    "granitemoe": {**_MOE, "num_local_experts": 5, "intermediate_size": 96},
    "granite_swa": {"attention_bias": True, "num_key_value_heads": None,
                    "attention_sinks": False},
    "granitemoe_swa": {**_MOE, "num_local_experts": 5, "intermediate_size": 96,
                       "shared_intermediate_size": 160},
    "granitemoeshared": {**_MOE, "num_local_experts": 5, "intermediate_size": 96,
                         "shared_intermediate_size": 160},
}


def _not_loaded(config: dict) -> int:
    """Elements transformers builds that vLLM 0.34.0 does not load, by hand."""
    fam = config["model_type"]
    if SHAPES[fam].vllm_tied and config.get("tie_word_embeddings") is False:
        return config["vocab_size"] * config["hidden_size"]  # lm_head (V, d)
    if SHAPES[fam].sinks and config.get("attention_sinks") is False:
        # transformers' sinks (one per head and layer); vLLM builds none (granite.py:109)
        return config["num_hidden_layers"] * config["num_attention_heads"]
    return 0


def _default(fam: str) -> dict:
    return AutoConfig.for_model(fam, **DEFAULT_FIX.get(fam, {})).to_dict()


def _small(fam: str) -> dict:
    own = SMALL[fam]
    base = {} if "n_layer" in own else dict(_SMALL)
    cfg = {"model_type": fam, **base, **own}
    return {k: v for k, v in cfg.items() if v is not None}


def test_every_family_has_a_small_config():
    assert set(SMALL) == set(SHAPES)


@pytest.mark.parametrize("variant", ["default", "small"])
@pytest.mark.parametrize("fam", sorted(SHAPES))
def test_count_equals_transformers_meta(fam, variant):
    config = _default(fam) if variant == "default" else _small(fam)
    count = count_by_shape(config)
    total, text, cls = meta_params(config)
    assert total == text, (fam, cls)  # no tower in these families
    expected = total - _not_loaded(config)
    assert count.total == expected, (fam, variant, cls, count.parts, total)
    # every linear weight listed is inside the parts
    for part in ("attention", "mlp", "experts", "router", "lm_head"):
        assert sum(x.params for x in count.linears if x.part == part) <= count.parts[part]


# per wrapper: a small config with its switches flipped: the wrapper's head tied while the
# text config says otherwise (both engines tie by the wrapper's flag), the text config's
# first-release model_type, the tower's heads under their alias num_attention_heads
# (attribute_map, configuration_exaone4_5.py:43), a merge of 3, and the keys the tower
# takes at the class's defaults left out (num_key_value_heads, patch sizes, in_channels)
WRAPPER_SMALL = {
    "exaone4_5": {"model_type": "exaone4_5", "tie_word_embeddings": True,
                  "text_config": {**_SMALL, "model_type": "exaone4_5_text",
                                  "tie_word_embeddings": False},
                  "vision_config": {"depth": 2, "hidden_size": 128, "intermediate_size": 200,
                                    "num_attention_heads": 8, "out_hidden_size": 256,
                                    "spatial_merge_size": 3}},
}
_UNSEEN = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "unseen-2026"
PUBLISHED = ("exaone-4.0-32b.json", "exaone-4.5-33b.json")


def test_every_wrapper_has_a_small_config():
    assert set(WRAPPER_SMALL) == set(WRAPPERS)


@pytest.mark.parametrize("variant", ["default", "small"])
@pytest.mark.parametrize("fam", sorted(WRAPPERS))
def test_wrapper_equals_transformers_meta(fam, variant):
    config = (AutoConfig.for_model(fam).to_dict() if variant == "default"
              else WRAPPER_SMALL[fam])
    count = count_by_shape(config)
    total, text, cls = meta_params(config)
    assert count.towers == "counted"
    assert (count.total, count.text) == (total, text), (fam, variant, cls, count.parts)
    assert count.parts["vision"] == total - text > 0


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_equals_transformers_meta(name):
    config = json.loads((_UNSEEN / name).read_text(encoding="utf-8"))
    count = count_params(config)
    total, text, cls = meta_params(config)
    assert (count.total, count.text) == (total, text), (name, cls, count.parts)
