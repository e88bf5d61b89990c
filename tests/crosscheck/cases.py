"""Every config the cross-check builds: the bundled models, three families kvlib reads but
does not bundle, published configs of the families issue 23 added, and one variant; and the
models transformers cannot build.

* Bundled: ``shrink(bundled_config(name))`` (shrink.py).
* Published (issue 23: Qwen3.5, GLM-5, Nemotron hybrids in ``layers_block_type``, Kimi
  Linear, MiniMax-M2): ``shrink(<the published config.json>)``, the same way. The files are
  kvlib's test corpus (tests/fixtures/configs, SOURCES.md there); Qwen3.5 27B, Nemotron 3
  Ultra and MiniMax-M2.5 are bundled, so they run as bundled models. Kimi-K3's file wraps a
  ``kimi_linear`` text model (``text_config``), which transformers builds; the wrapper's own
  model_type, ``kimi_k3``, it has no class for.
* Not bundled (Jamba, LFM2, Gemma 3n): the "real" config is transformers' own config class
  with its defaults (``AutoConfig.for_model(model_type, **OVERRIDES).to_dict()``), shrunk by
  the same rule; the tiny dict kvlib reads is ``AutoConfig.for_model(model_type, **tiny)
  .to_dict()``, the very dict transformers builds the model from.
* ``gemma-4-26b-a4b+kv-sharing``: the bundled Gemma 4 with the last 10 of its 30 layers
  sharing KV (``num_kv_shared_layers``, which the 26B file sets to 0), so that Gemma 4's
  sharing rule runs too. ``hidden_size_per_layer_input`` is set to 256 (the E2B / E4B
  models' width): with 0 and shared layers, transformers 5.24's
  ``Gemma4TextModel._maybe_slice_kv_shared_inputs`` fails ("'NoneType' object is not
  subscriptable" on ``per_layer_inputs``).
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import transformers
from shrink import loadable, shrink
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from kvlib.models.catalog import BUNDLED, bundled_config

__all__ = ["NAMES", "BUNDLED_NAMES", "UNBUNDLED", "WRITTEN", "PUBLISHED",
           "NEW_IN_TRANSFORMERS", "real", "tiny", "unsupported",
           "text_model_type", "VARIANT"]

_TESTS = Path(__file__).resolve().parents[1]

# model_type and the fields that differ from the config class's defaults.
UNBUNDLED = {
    # JambaConfig defaults: 32 layers, attention iff i % 8 == 4, Mamba elsewhere.
    "jamba": ("jamba", {}),
    # Lfm2Config's default makes every layer attention (full_attn_idxs = all): a hybrid needs
    # its list. conv_dim: real LFM2 files carry it (vLLM reads it), equal to hidden_size
    # (what transformers convolves over).
    "lfm2": ("lfm2", {"num_hidden_layers": 16, "full_attn_idxs": [2, 5, 8, 10, 12, 14],
                      "conv_dim": 2560}),
    # Gemma3nTextConfig defaults: 35 layers, full iff (i + 1) % 5 == 0, last 15 share KV.
    "gemma3n": ("gemma3n_text", {}),
    # FalconH1Config defaults: 32 layers, each attention (8 KV heads) and Mamba2 side by side.
    "falcon_h1": ("falcon_h1", {}),
    # No reader of their own: the generic one reads transformers' layer_types (issue 23).
    # Olmo3Config: 3 sliding (4,096) to 1 full; Cohere2Config (Command A / R7B): the same.
    "olmo3": ("olmo3", {}),
    "cohere2": ("cohere2", {}),
    # transformers 5.25.0's new families kvlib reads (issue 31). ErgoConfig: 3 sliding (512,
    # local_attention_window) to 1 full, head dim hidden_size / heads.
    "ergo": ("ergo", {}),
    # Kolibri1_1Config: 4 sliding (513) to 1 indexed; of the 10 indexed layers 6 read an
    # earlier one's K/V (kv_source_layers), the first at layer 9
    "kolibri1_1": ("kolibri1_1", {}),
    # MistralLarge4TextConfig: MLA + DSA indexer in every layer, NoPE every 4th layer
    "mistral_large4": ("mistral_large4_text", {}),
    # MiniMaxM3VLTextConfig with the published MiniMax-M3 file's sparse_attention_freq (3 full
    # layers, then 57 sparse; tests/fixtures/configs/corpus-2026.json.gz "MiniMaxAI--MiniMax-M3"):
    # the class's default has no sparse layer
    "minimax_m3_vl": ("minimax_m3_vl_text",
                      {"sparse_attention_config": {"sparse_attention_freq": [0] * 3 + [1] * 57}}),
    # InklingTextConfig (the text model of inkling_mm_model) with its 5 sliding : 1 full layers
    # written as local_layer_ids, as the checkpoints write them: vLLM 0.34.0 reads only that
    # key, transformers 5.25.0 layer_types (made from it, configuration_inkling.py:152-159), and
    # kvlib refuses a file with one of them alone. Heads 64 : 8 full, 64 : 16 sliding.
    "inkling": ("inkling_text", {"local_layer_ids": [i for i in range(66) if (i + 1) % 6]}),
    # Inkling2TextConfig, Inkling2LoopTextConfig: layer_types by their rule (full iff
    # (i + 1) % 6 == 0); the loop runs layers 6-17 of 24 three times
    "inkling2": ("inkling2_text", {}),
    "inkling2_loop": ("inkling2_loop_text", {}),
}
# A config written as the released checkpoint writes it, where transformers' to_dict() would
# not be read by vLLM (and so not by kvlib): dots3 Note's text config with layer_types and the
# swa_* keys (Dots3NoteTextConfig.__post_init__ turns them into per_layer_config, which vLLM
# 0.34.0 never reads). The values are the class's defaults (configuration_dots3_note.py:231-320,
# swa_* defaults :300-320), the layout its rule derives (i < 2 or i % 4 == 1: DSA).
WRITTEN = {
    "dots3_note": {
        "model_type": "dots3_note_text", "num_hidden_layers": 46, "hidden_size": 5120,
        "num_attention_heads": 128, "num_key_value_heads": 128, "head_dim": 256,
        "kv_lora_rank": 512, "q_lora_rank": 1024, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": 2048, "index_head_dim": 128,
        "index_n_heads": 64, "intermediate_size": 13824, "moe_intermediate_size": 1536,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
        "vocab_size": 152064, "max_position_embeddings": 524288,
        "layer_types": ["indexed_attention" if i < 2 or i % 4 == 1 else "sliding_attention"
                        for i in range(46)],
        "sliding_window_size": 512, "swa_kv_lora_rank": 1024, "swa_qk_rope_head_dim": 64,
        "swa_num_attention_heads": 64, "swa_num_key_value_heads": 64,
        "swa_qk_nope_head_dim": 192, "swa_v_head_dim": 128, "swa_q_lora_rank": 1024,
        "swa_head_dim": 256,
    },
}
# Published configs of the families issue 23 added (name -> file under tests/).
PUBLISHED = {
    # qwen3_5 (text: qwen3_5_text; bundled: qwen3.5-27b): Gated DeltaNet + full attention,
    # mamba_ssm_dtype float32
    # qwen3_5_moe (text: qwen3_5_moe_text)
    "qwen3.5-35b-a3b": "fixtures/configs/qwen3.5-35b-a3b.json",
    # glm_moe_dsa: MLA + the DSA indexer in every layer
    "glm-5.1": "fixtures/configs/glm-5.1.json",
    # nemotron_h with layers_block_type and no hybrid_override_pattern; the bundled Ultra
    # (nemotron-3-ultra-550b-a55b) has no num_hidden_layers either, Lightning writes it (52)
    "nemotron-3.5-lightning-30b-a3b": "fixtures/configs/nemotron-3.5-lightning-30b-a3b-nvfp4.json",
    # kimi_k3 wrapping a kimi_linear text model: KDA + MLA, 1-based layer lists
    "kimi-k3": "fixtures/configs/kimi-k3.json",
    # minimax_m2 (bundled: minimax-m2.5): full attention on every layer, partial RoPE
}
# transformers 5.25.0's new model families with a text model (issue 31), and the case that
# builds each; "refused": kvlib refuses the family by name (readers/refuse.py
# FAMILIES_REFUSED: a cache it cannot count per token), so there is no reading to compare.
# deepseek_v4 (Flash and Pro, bundled) is compared by a rule of its own (allocation.compare_v4).
NEW_IN_TRANSFORMERS = {
    "ergo": "ergo", "kolibri1_1": "kolibri1_1", "mistral_large4": "mistral_large4",
    "dots3_note": "dots3_note", "minimax_m3_vl": "minimax_m3_vl",
    "deepseek_v4": "deepseek-v4-flash", "blt": "refused",
    # each layer's four float32 conv states against kvlib's short-convolution window by
    # allocation.conv_window_rule; Inkling 2 Loop's passes by allocation.cache_layer_sources
    "inkling": "inkling", "inkling2": "inkling2", "inkling2_loop": "inkling2_loop",
}
VARIANT = "gemma-4-26b-a4b+kv-sharing"
BUNDLED_NAMES = list(BUNDLED)
NAMES = BUNDLED_NAMES + list(UNBUNDLED) + list(WRITTEN) + list(PUBLISHED) + [VARIANT]


def _source(name: str) -> dict:
    """The config file of a bundled or published model (a fresh dict)."""
    if name in PUBLISHED:
        return json.loads((_TESTS / PUBLISHED[name]).read_text(encoding="utf-8"))
    return bundled_config(name)


def _variant() -> dict:
    c = bundled_config("gemma-4-26b-a4b")
    c["text_config"] = {**c["text_config"], "num_kv_shared_layers": 10,
                        "hidden_size_per_layer_input": 256}
    return c


def text_model_type(config: dict) -> str:
    """The model_type transformers builds the language model of ``config`` as: the text
    config's own, or, when the wrapper has a transformers config class that renames it
    (Kimi K2.5: ``kimi_k25`` turns its ``kimi_k2`` text config into ``deepseek_v3``), the
    wrapper's choice, asked of the wrapper class itself."""
    text = config.get("text_config")
    if not text:
        return config["model_type"]
    if text["model_type"] in CONFIG_MAPPING_NAMES \
            or config["model_type"] not in CONFIG_MAPPING_NAMES:
        return text["model_type"]
    wrapper = AutoConfig.for_model(config["model_type"],
                                   text_config={"model_type": text["model_type"]})
    return wrapper.text_config.model_type


@functools.cache
def unsupported(name: str) -> str | None:
    """Why transformers cannot build ``name``'s family here, or None when it can.

    Computed, not listed: a model_type transformers has no config class for (it would need
    ``trust_remote_code`` and the model's own Python from the Hub, which this offline check
    never runs).
    """
    if name not in BUNDLED and name not in PUBLISHED:
        return None
    config = _source(name)
    model_type = text_model_type(config)
    if model_type in CONFIG_MAPPING_NAMES:
        return None
    remote = config.get("auto_map", {}).get("AutoModelForCausalLM")
    return (f"{name}: transformers {transformers.__version__} has no native model_type "
            f"{model_type!r}; the checkpoint's own code ({remote}) needs trust_remote_code and "
            "the Hub, so its cache cannot be allocated offline here (kvlib's reading of it is "
            "checked in tests/test_hybrid_models.py only)")


@functools.cache
def _real(name: str) -> dict:
    if name in UNBUNDLED:
        model_type, overrides = UNBUNDLED[name]
        return AutoConfig.for_model(model_type, **overrides).to_dict()
    if name in WRITTEN:
        return copy.deepcopy(WRITTEN[name])
    return _variant() if name == VARIANT else _source(name)


def real(name: str) -> dict:
    """The real-size config (a fresh copy): bundled, a variant, or a class's defaults."""
    return loadable(_real(name))


@functools.cache
def _tiny(name: str) -> dict:
    t = shrink(_real(name))
    if name in UNBUNDLED:
        fields = dict(t)
        return AutoConfig.for_model(fields.pop("model_type"), **fields).to_dict()
    return t


def tiny(name: str) -> dict:
    """The tiny config of ``name`` (a fresh copy), as kvlib reads it and transformers builds it."""
    return dict(_tiny(name))
