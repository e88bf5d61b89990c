"""What the engines read where they build a layer's cache, per ``model_type`` (issue 31).

The data, ``kvlib/models/engine_keys.json``, is made from the released wheels by
``scripts/engine_keys.py`` (docs/closed-world.md says how to re-run it on a new release); this
module only reads it. The closed world (:mod:`.closed`) refuses a key of a known family only
when the served engine reads it there and kvlib's reader does not, naming the file and line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePath

__all__ = ["Engine", "engine_for", "data", "read_by_any", "NOT_A_MODEL_CONFIG", "not_a_model"]


@cache
def data() -> dict:
    """The whole of engine_keys.json."""
    text = resources.files("kvlib.models").joinpath("engine_keys.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class Engine:
    """The engine that knows a family: its name and release, and key -> 'file:line' of one read
    on the paths that build a layer's attention, its KV-cache spec or its state."""

    name: str
    model_type: str
    keys: dict


def engine_for(model_type: str) -> Engine | None:
    """vLLM's reads for ``model_type`` (its modeling files, config class, and the
    family-independent layer counting), else transformers' (modeling file, config class, cache
    code), else None: no engine knows the family, and the word rule judges its keys."""
    d = data()
    families = d["families"]
    names = [model_type, f"{model_type}_text", model_type.removesuffix("_text")]
    for t in names:
        entry = families.get(t, {})
        if "vllm" in entry:
            return Engine(f"vLLM {d['releases']['vllm']}", t,
                          {**d["common"]["vllm"], **entry["vllm"]["keys"]})
    for t in names:
        tf = families.get(t, {}).get("transformers")
        if tf and tf["modeling"]:
            return Engine(f"transformers {d['releases']['transformers']}", t,
                          {**d["common"]["transformers_cache"], **tf["modeling"]})
    return None


@cache
def read_by_any() -> dict[str, tuple[str, str]]:
    """key -> (model_type, 'file:line') for every key some family's engine reads (vLLM first)."""
    out: dict[str, tuple[str, str]] = {}
    d = data()
    for k, where in d["common"]["vllm"].items():
        out.setdefault(k, ("every family", where))
    for mt, entry in sorted(d["families"].items()):
        for k, where in entry.get("vllm", {}).get("keys", {}).items():
            out.setdefault(k, (mt, where))
    for mt, entry in sorted(d["families"].items()):
        for k, where in entry.get("transformers", {}).get("modeling", {}).items():
            out.setdefault(k, (mt, where))
    return out


# Files that sit beside a model's config.json and are not it: (a key that tells, what it is).
NOT_A_MODEL_CONFIG = (
    ("producer", "a ModelOpt quantization file (hf_quant_config.json)"),
    ("weight_map", "a safetensors index (model.safetensors.index.json)"),
    ("tokenizer_class", "a tokenizer config (tokenizer_config.json)"),
    ("added_tokens_decoder", "a tokenizer config (tokenizer_config.json)"),
    ("image_processor_type", "a preprocessor config (preprocessor_config.json)"),
    ("feature_extractor_type", "a preprocessor config (preprocessor_config.json)"),
    ("processor_class", "a preprocessor config (preprocessor_config.json)"),
    ("bits", "a GPTQ/AWQ quantize config (quantize_config.json)"),
    ("quant_method", "a quantization config (quantize_config.json)"),
    ("decoder_start_token_id", "a generation config (generation_config.json)"),
    ("do_sample", "a generation config (generation_config.json)"),
    ("max_new_tokens", "a generation config (generation_config.json)"),
    ("eos_token_id", "a generation config (generation_config.json)"),
)
_MODEL_KEYS = ("model_type", "architectures", "text_config", "num_hidden_layers", "n_layer",
               "hidden_size", "num_attention_heads", "n_head", "llm_config", "language_config")


def not_a_model(cfg: dict, source=None) -> str | None:
    """One line naming what ``cfg`` is when it is not a model's config.json, else None."""
    if any(k in cfg for k in _MODEL_KEYS):
        return None
    what = None
    if isinstance(cfg.get("producer"), dict) or "quantization" in cfg and "producer" in cfg:
        what = "a ModelOpt quantization file (hf_quant_config.json)"
    else:
        what = next((w for key, w in NOT_A_MODEL_CONFIG if key in cfg), None)
    name = f"{source} " if isinstance(source, str | PurePath) else ""
    if what is None:
        if not name:  # a pasted or passed dict: the reader's own message names the field
            return None
        keys = ", ".join(list(cfg)[:6]) + (", ..." if len(cfg) > 6 else "")
        it = f"a JSON object with the keys {keys}" if cfg else "an empty JSON object"
        return (f"{name}is not a model config.json: it is {it}, and the config has no "
                "num_hidden_layers or n_layer, model_type, architectures or text_config; pass "
                "the model's config.json instead")
    return (f"{name}is {what}, not a model config: it has no model_type, architectures or "
            "layer counts; pass the model's config.json instead")
