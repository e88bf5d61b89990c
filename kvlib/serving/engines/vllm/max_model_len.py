"""The longest ``max_model_len`` vLLM 0.34.0 starts with for a model, and whether it refuses a
context past it (``kvlib plan``, issue 42 item 4).

vLLM derives the model's maximum from its (text) config: the smallest of the length keys
(``max_position_embeddings``, ``n_positions``, ``max_seq_len``, ``seq_length``,
``model_max_length``, ``max_target_positions``, ``max_sequence_length``, ``max_seq_length``,
``seq_len``), ``model_max_length`` winning where set
(``derive_max_model_len_and_key``, transformers_utils/model_arch_config_convertor.py:375-407),
then multiplies it by the RoPE scaling ``factor`` unless the RoPE type already scales the
length (su, longrope, llama3, yarn, deepseek_yarn, deepseek_llama_scaling) or the model is a
Gemma 3 (``_get_and_verify_max_len``, config/model.py:2638-2672). A ``max_model_len`` above
that (and above ``model_max_length``, where the config has one) raises at start-up unless
the environment sets ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` (config/model.py:2703-2727;
envs.py:1173-1180, "1" or "true"). The tokenizer's ``model_max_length`` enters only for
pooling models with absolute positions, ``disable_sliding_window`` is off by default, and a
sentence-transformers encoder config is not a generative model's: kvlib plans none of these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["ALLOW_ENV", "MaxModelLen", "derived_max_model_len", "check_max_model_len",
           "allowed_by_env"]

ALLOW_ENV = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
# transformers_utils/model_arch_config_convertor.py:377-393, in vLLM's order
_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
         "model_max_length", "max_target_positions", "max_sequence_length", "max_seq_length",
         "seq_len")
# config/model.py:2655-2662: these types leave max_position_embeddings already scaled
_SCALED_ALREADY = ("su", "longrope", "llama3", "yarn", "deepseek_yarn",
                   "deepseek_llama_scaling")
# transformers' ALLOWED_LAYER_TYPES (configuration_utils.py in 5.25.0) and DeepSeek V4's rope
# kinds: a dict of only these keys is one rope dict per layer type (is_rope_parameters_nested,
# transformers_utils/config.py:227-235)
_NESTED = {"full_attention", "sliding_attention", "chunked_attention", "window_attention",
           "indexed_attention", "compressed_sparse_attention", "heavily_compressed_attention",
           "minimax_m3_sparse", "conv", "moe", "hybrid", "hybrid_sliding",
           "reference_sliding_attention", "linear_attention", "sparse", "dense",
           "main", "compress"}
_SOURCE = "vLLM 0.34.0's _get_and_verify_max_len, config/model.py:2589-2727"


@dataclass(frozen=True)
class MaxModelLen:
    """vLLM's check of one ``max_model_len`` against a config.

    limit: the derived maximum (None where the config has no length key: vLLM then takes the
    given max_model_len). key: the config key it came from; factor: the RoPE factor applied
    (1 where none). refuses: vLLM raises at start-up; allowed: it would, but the environment
    sets VLLM_ALLOW_LONG_MAX_MODEL_LEN, so it warns and starts. why: one line, or "" where the
    context is within the limit."""

    max_model_len: int
    limit: int | None
    key: str | None
    factor: float
    model_max_length: int | None
    refuses: bool
    allowed: bool
    why: str

    def to_dict(self) -> dict:
        return {"vllm_derived_max_model_len": self.limit, "vllm_max_len_key": self.key,
                "vllm_rope_factor": self.factor,
                "vllm_refuses_max_model_len": self.refuses,
                "vllm_allow_long_max_model_len": self.allowed,
                "vllm_max_model_len_why": self.why}


def _text_config(config: dict) -> dict:
    """The config vLLM reads lengths from (hf_text_config): text_config where there is one."""
    text = config.get("text_config")
    return text if isinstance(text, dict) and text else config


def _rope_parameters(text: dict) -> list[dict]:
    """The config's RoPE dicts as vLLM iterates them (iter_rope_parameters), from
    ``rope_parameters`` or, as transformers reads an older config, ``rope_scaling``; the
    legacy ``type`` read as ``rope_type`` (patch_legacy_rope_type)."""
    rope = text.get("rope_parameters") or text.get("rope_scaling")
    if not isinstance(rope, dict) or not rope:
        return []
    dicts = ([p for p in rope.values() if isinstance(p, dict) and p]
             if set(rope) <= _NESTED else [rope])
    out = []
    for p in dicts:
        rope_type = p.get("rope_type", p.get("type", "default"))
        rope_type = {"su": "longrope", "mrope": "default"}.get(rope_type, rope_type)
        out.append({**p, "rope_type": rope_type})
    return out


def derived_max_model_len(config: dict, default_length: int | None = None
                          ) -> tuple[int | None, str | None, float]:
    """(vLLM's derived maximum length, the key it came from, the RoPE factor applied) for a
    config.json as a dict; (None, None, 1.0) where the config has no length key.
    ``default_length``: the family's ``max_position_embeddings`` where config.json leaves it
    out (vLLM reads the transformers config object, whose class supplies it: Gemma 3's
    text_config has none in the published file, Gemma3TextConfig says 131072).

    >>> derived_max_model_len({"max_position_embeddings": 32768,
    ...     "rope_scaling": {"type": "linear", "factor": 4.0}})
    (131072, 'max_position_embeddings', 4.0)
    >>> derived_max_model_len({"max_position_embeddings": 131072,
    ...     "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})
    (131072, 'max_position_embeddings', 1.0)
    """
    text = _text_config(config)
    derived, key = float("inf"), None
    for k in _KEYS:
        value = text.get(k)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value < derived:
                key = k
            derived = min(derived, value)
    if isinstance(text.get("model_max_length"), (int, float)) and text["model_max_length"]:
        derived, key = text["model_max_length"], "model_max_length"
    if derived == float("inf") and default_length is not None:
        derived, key = default_length, "max_position_embeddings"
    if derived == float("inf"):
        return None, None, 1.0
    factor = 1.0
    rope = _rope_parameters(text)
    if rope and "gemma3" not in str(text.get("model_type", "")):
        for p in rope:
            if p["rope_type"] not in _SCALED_ALREADY:
                factor = p.get("factor", factor)
        if factor is None:  # a null factor: vLLM warns and takes 1.0
            factor = 1.0
        derived *= factor
    return int(derived), key, float(factor)


def allowed_by_env(environ=None) -> bool:
    """Whether ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set as vLLM reads it: "1" or "true", any
    case, spaces stripped (envs.py:1177-1180)."""
    env = os.environ if environ is None else environ
    return env.get(ALLOW_ENV, "0").strip().lower() in ("1", "true")


def check_max_model_len(config: dict | None, max_model_len: int,
                        allow_long: bool | None = None,
                        default_length: int | None = None,
                        release: str = "0.34.0") -> MaxModelLen:
    """vLLM 0.34.0's start-up check of ``max_model_len`` for ``config``. ``allow_long``: whether
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is set (default: as this process's environment says);
    ``default_length``: as :func:`derived_max_model_len`; ``release``: the vLLM release the
    message names (the rule is read from 0.34.0)."""
    limit, key, factor = derived_max_model_len(config or {}, default_length)
    text = _text_config(config or {})
    mml = text.get("model_max_length")
    mml = mml if isinstance(mml, int) and not isinstance(mml, bool) else None
    over = limit is not None and max_model_len > limit and (mml is None or max_model_len > mml)
    allow = allowed_by_env() if allow_long is None else bool(allow_long)
    why = ""
    if over:
        scaled = (f" x RoPE factor {factor:g}" if factor != 1 else "")
        base = limit if factor == 1 else int(limit / factor)
        said = (f"max_model_len {max_model_len:,} is past the model's derived maximum "
                f"{limit:,} ({key}={base:,}{scaled})")
        if allow:
            why = (f"{said}: vLLM {release} starts only because {ALLOW_ENV}=1 is set, and warns "
                   "that RoPE positions past it give nan and absolute ones fail on the GPU "
                   f"({_SOURCE})")
        else:
            why = (f"vLLM {release} would refuse to start: {said} ({_SOURCE}); set the env var "
                   f"{ALLOW_ENV}=1 to override (with caution: positions past it are untrained),"
                   f" or plan --context {limit:,} or less")
    return MaxModelLen(max_model_len, limit, key, factor, mml, over and not allow,
                       over and allow, why)
