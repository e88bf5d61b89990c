"""Families counted apart from :data:`kvlib.models.params.COUNTERS` (issue 42): LFM2 (flat), and
the multimodal wrappers whose text model any counter counts and whose towers vLLM 0.34.0 loads:
Mistral 3 (Pixtral, :mod:`.pixtral`), LFM2-VL (:mod:`.lfm2`), Voxtral (audio, :mod:`.audio`);
and Qwen3.5's vision tower, Qwen3-VL's as vLLM builds it (:data:`TALLY_TOWERS`).

:func:`count_apart` returns a :class:`ParamCount` or None (not one of these). A wrapper's text
model is counted by ``count`` (:func:`kvlib.models.params.count_params`, passed in: this module
sits below the package) from ``text_config``, with the wrapper's ``tie_word_embeddings`` and
dtype where the text config has none (transformers hands them down alike); its towers are
:class:`Fixed` tensors of the vision part (whole on every rank or split by TP, as vLLM holds
them), so ``total`` counts them and ``active`` / ``linears`` do not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from kvlib.models.params.audio import voxtral_audio
from kvlib.models.params.lfm2 import count_lfm2, lfm2_vl_tower
from kvlib.models.params.pixtral import pixtral_tower
from kvlib.models.params.tally import Fixed, ParamCount, _Tally
from kvlib.models.params.vision import _qwen3_vl_vision
from kvlib.models.readers.fields import Fields

__all__ = ["count_apart", "TALLY_TOWERS", "WRAPPERS"]

# the wrapper keys a text config inherits when it has none of its own
_INHERITED = ("tie_word_embeddings", "torch_dtype", "dtype")
# vLLM serves these architectures as the Mistral 3 wrapper (registry.py:556): a file whose
# model_type names the text family (mlc-llm's presets write "ministral3") is read by it
_MISTRAL3 = "Mistral3ForConditionalGeneration"


def _flat(t: _Tally) -> ParamCount:
    active = sum(t.parts.values()) - t.parts["vision"] - t.idle
    return ParamCount(t.family, dict(t.parts), active, tuple(t.linears), 0, (), "none",
                      tuple(t.notes), tuple(t.fixed), ())


def _lfm2(cfg: Mapping) -> ParamCount:
    t = _Tally(Fields(cfg), "lfm2")
    count_lfm2(t)
    return _flat(t)


def _split(whole: int, split: int, name: str) -> dict[str, tuple[int, int, bool]]:
    return {f"{name} (whole on every rank)": (whole, 2, True),
            f"{name} (split by TP)": (split, 2, False)}


def _pixtral(outer: Fields, d_text: int):
    return _split(*pixtral_tower(outer, d_text), "model.vision_tower")


def _lfm2_vl(outer: Fields, d_text: int):
    return _split(*lfm2_vl_tower(outer, d_text), "model.vision_tower")


# wrapper model_type -> (what its towers are, in words; the towers: name -> (elements, bytes
# per element, whole on every rank))
WRAPPERS: dict[str, tuple[str, Callable[[Fields, int], dict]]] = {
    "mistral3": ("the Pixtral vision tower and projector (mistral3.py:485-521)", _pixtral),
    "lfm2_vl": ("the SigLIP2 vision tower and projector (lfm2_vl.py:684-710)", _lfm2_vl),
    "voxtral": ("the Whisper audio tower and adapter (voxtral.py:315-345)", voxtral_audio),
}


def _qwen3_5_vision(t: _Tally, outer: Fields, d_text: int) -> None:
    """Qwen3.5 / 3.6's tower into the tally: vLLM builds Qwen3-VL's (qwen3_5.py:500-518,
    723-741) from Qwen3_5VisionConfig, whose defaults stand for absent keys (transformers
    5.25.0 configuration_qwen3_5.py: depth 27, width 1152, MLP 4304, patch 16, merge 2,
    temporal patch 2, out_hidden_size 3584, 2304 positions) and which has no
    deepstack_visual_indexes: vLLM builds no deepstack merger without one (qwen3_5.py:502-507,
    qwen3_vl.py:589-593). Held as vLLM holds it (qwen3_vl.py): split by TP, the blocks' qkv
    and proj and MLP linear_fc1 / linear_fc2 and the mergers' linear_fc1 / linear_fc2 (their
    column-parallel biases too); whole on every rank, the Conv3d patch embedding, positions,
    norms and the row-parallel biases (proj, linear_fc2: added after the reduction)."""
    defaults = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "patch_size": 16,
                "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
                "num_position_embeddings": 2304, "in_channels": 3,
                "deepstack_visual_indexes": []}
    v = Fields({**defaults, **(outer.data.get("vision_config") or {})}, "vision_config.",
               outer)
    total = _qwen3_vl_vision(v, d_text)
    d, i, out = v.int("hidden_size"), v.int("intermediate_size"), v.int("out_hidden_size")
    w = d * v.int("spatial_merge_size") ** 2
    mergers = 1 + len(v.data["deepstack_visual_indexes"] or [])
    split = (v.int("depth") * (d * 3 * d + 3 * d + d * d + d * i + i + i * d)
             + mergers * (w * w + w + w * out))
    t.keep("vision", "vision tower (whole on every rank)", total - split, 2)
    t.keep("vision", "vision tower (split by TP)", split, 2, whole=False)


# towers the package adds to a wrapper's tally by its model_type (as vision.py's _TALLY_TOWERS)
TALLY_TOWERS = {"qwen3_5": _qwen3_5_vision, "qwen3_5_moe": _qwen3_5_vision}


def count_apart(cfg: Mapping, count: Callable[[Mapping], ParamCount]) -> ParamCount | None:
    """The count of a config this module's families own (module docstring), else None."""
    family = cfg.get("model_type")
    if family == "lfm2" and "text_config" not in cfg:
        return _lfm2(cfg)
    text = cfg.get("text_config")
    notes = []
    if family not in WRAPPERS and isinstance(text, Mapping) \
            and cfg.get("architectures") == [_MISTRAL3] and "vision_config" in cfg:
        notes.append(f"model_type {family!r} with a text_config and a vision_config: counted "
                     f"as the {_MISTRAL3} its architectures name holds them (the Hugging Face "
                     "files say mistral3; vLLM 0.34.0 would load this one as its model_type's "
                     "class and stop, transformers_utils/config.py:1309-1315)")
        family = "mistral3"
    if family not in WRAPPERS:
        return None
    if not isinstance(text, Mapping):
        raise ValueError(f"{family}: text_config must be an object (the text model), got "
                         f"{type(text).__name__}")
    inner = {**{k: cfg[k] for k in _INHERITED if k in cfg and k not in text}, **text}
    try:
        lm = count(inner)
    except ValueError as e:
        raise ValueError(f"text_config: {e}") from None
    words, towers = WRAPPERS[family]
    outer = Fields(cfg)
    d_text = Fields(inner, "text_config.").int("hidden_size")
    fixed = [Fixed(name, "vision", n, b, whole) for name, (n, b, whole)
             in towers(outer, d_text).items()]
    parts = dict(lm.parts)
    parts["vision"] += sum(f.elements for f in fixed)
    notes += [f"text model from text_config ({lm.model_type}); counted {words} as vLLM 0.34.0 "
              "loads it"]
    return replace(lm, parts=parts, towers="counted", notes=lm.notes + tuple(notes),
                   fixed=lm.fixed + tuple(fixed))
