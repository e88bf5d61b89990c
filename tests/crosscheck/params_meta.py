"""Parameters of the model transformers builds on the meta device from a config (issue 42).

:func:`meta_params` builds ``AutoModelForCausalLM`` (``AutoModelForImageTextToText`` for a
vision-language wrapper) from the config under ``torch.device("meta")``: no memory, no
weights, nothing downloaded. It counts every parameter once (tied ones once) plus the
persistent buffers, which the checkpoint stores and vLLM loads as weights too (GLM-4.5's
fp32 ``e_score_correction_bias``); rotary tables are not persistent, so not counted.
"""

from __future__ import annotations

import copy
import functools
import gzip
import importlib.util
import json
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

__all__ = ["meta_params", "buildable", "published", "DEFAULTS", "gemma3n_parts", "HAVE_TIMM"]

_TESTS = Path(__file__).resolve().parents[1]
# keys that name remote code or a checkpoint's quantization: not the model's shapes
_DROP = ("quantization_config", "auto_map", "compression_config")

# transformers' own config classes for families no bundled or test file carries, at their
# defaults (GLM-4.5V's text config without its published head_dim 128 has 4096 / 96 heads,
# which neither transformers nor vLLM builds as published: the published value is given).
DEFAULTS = {
    "jamba": ("jamba", {}),
    "gemma": ("gemma", {}),  # Gemma 1: counted since issue 24, no file here
    "phi3": ("phi3", {}),
    "smollm3": ("smollm3", {}),
    "qwen2_5_vl": ("qwen2_5_vl", {}),
    "qwen3_vl": ("qwen3_vl", {}),
    # the class's defaults tie the text config's head (True) but not the wrapper's (False);
    # vLLM reads the text config's (qwen3_vl_moe.py:174, 285-286), transformers the
    # wrapper's: given alike, as every published file gives them
    "qwen3_vl_moe": ("qwen3_vl_moe", {"text_config": {"tie_word_embeddings": False}}),
    "glm4v_moe": ("glm4v_moe", {"text_config": {"head_dim": 128}}),
    "mixtral": ("mixtral", {}),
    "qwen3_moe": ("qwen3_moe", {}),
    "glm4_moe": ("glm4_moe", {"head_dim": 128}),
    "glm4_moe_lite": ("glm4_moe_lite", {}),
    # Step 3.7's wrapper: its text_config (model_type step3p5) is the model vLLM serves
    # (Step3p5ForCausalLM); the corpus's flat files are compared as a text_config in
    # test_params_meta.test_step3p7_flat_as_text_config
    "step3p7": ("step3p7", {}),
    # Kimi Linear: the class's defaults are Kimi-Linear-48B-A3B's shapes; the keys vLLM's
    # own KimiLinearConfig reads instead of transformers' (linear_attn_config with 1-based
    # kda_layers / full_attn_layers, num_experts, num_experts_per_token, num_shared_experts,
    # first_k_dense_replace, mla_use_nope) given in the layout Kimi K3's text_config uses
    "kimi_linear": ("kimi_linear", {
        "linear_attn_config": {"head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4,
                               "kda_layers": [i for i in range(1, 27) if i % 4],
                               "full_attn_layers": [4, 8, 12, 16, 20, 24, 27]},
        "num_experts": 256, "num_experts_per_token": 8, "num_shared_experts": 1,
        "first_k_dense_replace": 1, "mla_use_nope": True}),
}


def default_config(name: str) -> dict:
    model_type, overrides = DEFAULTS[name]
    return AutoConfig.for_model(model_type, **copy.deepcopy(overrides)).to_dict()


def buildable(config: dict) -> str | None:
    """Why transformers cannot build ``config`` offline, or None when it can."""
    mt = config.get("model_type")
    if mt not in CONFIG_MAPPING_NAMES:
        return (f"transformers has no config class for model_type {mt!r} (the checkpoint's "
                "own code needs trust_remote_code and the Hub)")
    if mt == "gemma3n" and not HAVE_TIMM:
        return ("Gemma 3n's vision tower is a timm model (TimmWrapperModel) and timm is not "
                "installed: its other parts are compared in test_gemma3n_parts")
    if mt == "step3p7" and "text_config" not in config:
        return ("a flat Step 3.7 file: transformers' Step3p7Config reads the text model from "
                "text_config only (it would build its defaults); compared as a text_config "
                "in test_step3p7_flat_as_text_config")
    return None


# Gemma 3n's vision encoder is timm's (transformers' TimmWrapperModel, as vLLM builds it)
HAVE_TIMM = importlib.util.find_spec("timm") is not None


def _config(config: dict):
    c = {k: v for k, v in copy.deepcopy(config).items() if k not in _DROP}
    for sub in (c, c.get("text_config") or {}):
        if isinstance(sub.get("attn_temperature_tuning"), int):  # Llama 4's 4; transformers 5: bool
            sub["attn_temperature_tuning"] = bool(sub["attn_temperature_tuning"])
    return AutoConfig.for_model(c.pop("model_type"), **c)


# a parameter under one of these module names belongs to a tower (vision or audio) or its
# projector, not to the language model
_TOWER_NAMES = {"visual", "vision_tower", "vision_model", "multi_modal_projector",
                "mm_projector", "embed_vision", "audio_tower", "embed_audio", "audio_model"}


def meta_params(config: dict) -> tuple[int, int, str]:
    """(all, text model alone, class name): parameters plus persistent buffers of the model
    built from ``config`` (a wrapper with a ``vision_config`` as image-text-to-text, so its
    tower is built too), and of its language model (tower parameters left out)."""
    cfg = _config(config)
    with torch.device("meta"):
        if "vision_config" in config:
            model = AutoModelForImageTextToText.from_config(cfg)
        else:
            model = AutoModelForCausalLM.from_config(cfg)
    total = tower = 0
    seen = set()
    for module_name, module in model.named_modules():
        for _name, t in [*module.named_parameters(recurse=False),
                        *((n, b) for n, b in module.named_buffers(recurse=False)
                          if n not in module._non_persistent_buffers_set)]:
            if id(t) in seen:  # tied weights once
                continue
            seen.add(id(t))
            total += t.numel()
            if _TOWER_NAMES & set(module_name.split(".")):
                tower += t.numel()
    return total, total - tower, type(model).__name__


@functools.cache
def _corpus() -> dict:
    path = _TESTS / "fixtures" / "configs" / "corpus-2026.json.gz"
    return {k: v["config"] for k, v in json.loads(gzip.open(path).read()).items()}


def published() -> dict[str, dict]:
    """Every test config: tests/fixtures/configs/*.json and the 2026 corpus, by name."""
    out = {}
    for f in sorted((_TESTS / "fixtures" / "configs").glob("*.json")):
        out[f"fixtures/{f.name}"] = json.loads(f.read_text(encoding="utf-8"))
    out.update({f"corpus/{k}": v for k, v in _corpus().items()})
    return out


def gemma3n_parts(config: dict) -> dict[str, int]:
    """Gemma 3n's parts that transformers builds without timm, on the meta device: the text
    model (Gemma3nForCausalLM from text_config, its head tied), the audio tower
    (Gemma3nAudioEncoder) and the two Gemma3nMultimodalEmbedder, each's parameters."""
    from transformers.models.gemma3n.modeling_gemma3n import (
        Gemma3nAudioEncoder,
        Gemma3nMultimodalEmbedder,
    )

    cfg = _config(config)
    with torch.device("meta"):
        audio = Gemma3nAudioEncoder(cfg.audio_config)
        embedders = [Gemma3nMultimodalEmbedder(cfg.vision_config, cfg.text_config),
                     Gemma3nMultimodalEmbedder(cfg.audio_config, cfg.text_config)]
    return {"text": meta_params({**config["text_config"], "model_type": "gemma3n_text"})[0],
            "audio": sum(p.numel() for p in audio.parameters()),
            "embedders": sum(p.numel() for m in embedders for p in m.parameters())}
