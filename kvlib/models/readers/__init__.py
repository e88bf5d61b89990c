"""A Hugging Face ``config.json`` read into layer groups (notebook 05, "Reading a config").

One reader per model family, registered by ``model_type`` the way transformers
keeps one config class per family (:mod:`.registry`); :func:`parse_config`
picks the reader, :func:`read_config` turns its answer into a
:class:`kvlib.models.spec.ModelSpec` with every assumption said in words.

* A nested ``text_config`` (Gemma 3, Llama 4 wrappers) holds the language model.
* Any config with ``kv_lora_rank`` is read as MLA (:mod:`.deepseek`), any with
  ``use_sliding_window`` by the Qwen2 rules (:mod:`.qwen2`).
* A ``model_type`` no engine knows whose ``architectures`` names a class vLLM builds with a
  family kvlib reads is read as that family, as the engines dispatch
  (:mod:`kvlib.models.architectures`; SGLang's DeepSeek V4 configs say ``deepseek_ref``).
* Any other unregistered ``model_type`` goes to the generic reader
  (:mod:`.attention`), and the estimate says so, unless a field or the family
  signals layers kvlib cannot count (Mamba, linear attention, short convolutions,
  skipped attention, per-layer shapes, KV sharing, an indexer): those are refused
  by name (:mod:`.refuse`), never read as full attention.

Adding a family is one module here (a ``read`` registered for its model types)
and its test. Bad input raises ``ValueError`` (``FileNotFoundError`` for a
missing file) naming the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kvlib.core import validate
from kvlib.models.architecture_table import RELEASE
from kvlib.models.architectures import architecture_family

# Each family module registers its reader on import.
from kvlib.models.readers import (  # noqa: F401
    attention,
    closed,
    deepseek,
    deepseek_v4,
    dots3_note,
    ergo,
    exaone4,
    falcon,
    falcon_h1,
    gemma2,
    gemma3,
    gemma4,
    gpt_oss,
    granite_hybrid,
    inkling,
    inkling2,
    inkling2_loop,
    jamba,
    kimi_linear,
    kolibri,
    laguna,
    lfm2,
    llama,
    llama4,
    mimo_v2,
    minimax_m3,
    mistral,
    mistral_large4,
    nemotron_h,
    nemotron_nas,
    qwen2,
    qwen3_next,
)
from kvlib.models.readers.engine import data, engine_for, not_a_model
from kvlib.models.readers.fields import Fields, describe, load_config
from kvlib.models.readers.reading import ConfigReading
from kvlib.models.readers.refuse import FAMILIES_REFUSED, refuse_removed, refuse_unknown_layers
from kvlib.models.readers.registry import FAMILIES, Family
from kvlib.models.spec import ModelSpec

__all__ = ["ConfigReading", "FAMILIES", "load_config", "parse_config", "read_config"]

_GENERIC = Family(lambda c, family, n, notes: attention.read(c, family, n, notes), "attention")


def _name(cfg: dict, source, text: Fields) -> str:
    if isinstance(cfg.get("_name_or_path"), str) and cfg["_name_or_path"]:
        return cfg["_name_or_path"]
    if isinstance(source, str | Path) and not isinstance(source, Mapping):
        p = Path(source).resolve()  # "." and "config.json" in the working folder too
        if p.is_dir():  # a model's folder, named by its whole name ('mistral-v0.3')
            return p.name or p.stem
        return p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return text.text("model_type") or "model"


# A text_config model_type the wrapper's config class renames before anything reads it, so the
# engines build the family it is renamed to: Exaone4_5_Config turns "exaone4_5_text" into
# "exaone4" (transformers 5.25.0 models/exaone4_5/configuration_exaone4_5.py:79-80), and vLLM
# 0.34.0 builds Exaone4ForCausalLM from it (model_executor/models/exaone4_5.py:359-364).
TEXT_MODEL_TYPES = {"exaone4_5_text": "exaone4"}


def _family(outer: Fields, text: Fields, notes: list[str]) -> str:
    family = text.text("model_type") or outer.text("model_type")
    if text is not outer and family in TEXT_MODEL_TYPES:
        renamed = TEXT_MODEL_TYPES[family]
        wrapper = outer.text("model_type") or "multimodal"
        notes.append(f"{text.path('model_type')}={family!r} is read as {renamed!r}, as the "
                     f"{wrapper} wrapper's config class renames it and the engines build "
                     f"{renamed} from it")
        return renamed
    return family.removesuffix("_text")


def _text_config_unread(outer: Fields) -> list[str]:
    """A note when the wrapper's ``model_type`` names a transformers config class that has no
    ``text_config`` (the MLC preset of Ministral 3 3B writes ``ministral3``, a text model's type,
    on a Mistral3ForConditionalGeneration): transformers then keeps the class's own defaults and
    the nested object as a plain dict, and vLLM 0.34.0 stops at get_hf_text_config
    (transformers_utils/config.py:1309-1315)."""
    family = outer.raw.get("model_type")
    tf = data()["families"].get(family, {}).get("transformers") if isinstance(family, str) \
        else None
    if not tf or "text_config" in tf["keys"]:
        return []
    archs = outer.raw.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    cls = tf["config_class"].rsplit(" ", 1)[-1]
    return [f"model_type={family!r} names transformers' {cls}, which has no text_config: vLLM "
            f"{RELEASE} would load this file as {cls} with that class's defaults and stop "
            "(transformers_utils/config.py:1309-1315, its text_config has no "
            f"num_attention_heads); kvlib reads the text_config as "
            f"{arch or 'the wrapper'} holds it"]


def _reader(c: Fields, family: str, notes: list[str]) -> Family:
    known = FAMILIES.get(family)
    if c.has("kv_lora_rank") and (known is None or (known.module != "deepseek"
                                                    and "kv_lora_rank" not in known.handles)):
        if known is not None and known.module != "attention":
            raise ValueError(f"{c.path('kv_lora_rank')} is set but kvlib's {family} reader "
                             "does not read latent attention; kvlib refuses rather than guess")
        return FAMILIES["deepseek_v2"]
    if "use_sliding_window" in c.data and (known is None or
                                           "use_sliding_window" not in known.handles):
        return FAMILIES["qwen2"]
    if known is not None:
        return known
    notes.append(f"model_type {family or '(none)'!r} has no reader of its own: every layer "
                 "read as standard attention (the generic reader)")
    return _GENERIC


def _kv_scheme(outer: Fields) -> list[str]:
    """A note when the checkpoint asks for a quantized KV cache, which vLLM 0.34.0's
    kv_cache_dtype "auto" then becomes (:func:`kvlib.models.quantization.kv_cache_request`), or
    names one vLLM does not take that way: a plan in the model dtype would be off."""
    from kvlib.models.quantization import kv_cache_request

    try:
        request = kv_cache_request(outer.raw)
    except ValueError:  # an unknown ModelOpt quant_algo: read_quantization names it
        request = None
    if request is not None:
        return [f"{request.key}={request.value!r}: the checkpoint asks for a KV cache in "
                f"{request.kv_cache_dtype}, which vLLM's kv_cache_dtype 'auto' becomes; kvlib "
                f"takes it under --kv-dtype auto (or --kv-dtype {request.kv_cache_dtype}) "
                f"({request.rule})"]
    for key in ("quantization_config", "compression_config"):
        q = outer.raw.get(key)
        if isinstance(q, Mapping):
            for name in ("kv_cache_scheme", "kv_cache_quant_algo"):
                if q.get(name):
                    return [f"{key}.{name}={q[name]!r}: the checkpoint names a quantized KV "
                            "cache that vLLM 0.34.0's kv_cache_dtype 'auto' does not take from "
                            "this config; give --kv-dtype to count another dtype"]
    return []


def _max_positions(c: Fields, family: str, reader: Family, notes: list[str]) -> int | None:
    m = c.int("max_position_embeddings", "n_positions", required=False)
    if m is None and reader.max_positions is not None:
        m = reader.max_positions
        notes.append(f"no max_position_embeddings: {family}'s default of {m} applies")
    return m


def parse_config(source) -> ConfigReading:
    """Read ``source`` (path or dict) into a :class:`ConfigReading`."""
    cfg = load_config(source)
    other = not_a_model(cfg, source)
    if other is not None:
        raise ValueError(other)
    outer = Fields(cfg)
    notes: list[str] = []
    c = outer
    if "text_config" in cfg and cfg["text_config"] is not None:
        if not isinstance(cfg["text_config"], Mapping):
            raise ValueError(f"text_config must be a JSON object, got "
                             f"{describe(cfg['text_config'])}")
        c = Fields(cfg["text_config"], "text_config.", outer)
        notes.append(f"read the language model from text_config (inside the "
                     f"{outer.text('model_type') or 'multimodal'} wrapper)")
        notes += _text_config_unread(outer)
    family = _family(outer, c, notes)
    refuse_removed(outer, c)
    # a model_type no engine knows (nor kvlib, by a reader or a refusal): the engines build by
    # architectures
    if family not in FAMILIES and family not in FAMILIES_REFUSED and engine_for(family) is None:
        found = architecture_family(outer.raw.get("architectures"), FAMILIES)
        if found is not None:
            notes.append(f"model_type {family or '(none)'!r} has no reader; architectures "
                         f"names {found[1]}, the class an engine builds (vLLM {RELEASE}'s "
                         f"registry maps it to {found[0]}, {found[2]}): read as {found[0]}, as "
                         "SGLang builds by architectures (vLLM reads model_type through "
                         "transformers' AutoConfig, which may refuse an unknown one)")
            family = found[0]
    known = FAMILIES.get(family)
    refuse_unknown_layers(outer, c, family, known.handles if known else frozenset())
    reader = _reader(c, family, notes)
    n = c.int("num_hidden_layers", "n_layer", required=reader.count_layers is None)
    if n is None:
        n = reader.count_layers(c)
        if n is None:
            c.int("num_hidden_layers", "n_layer")  # raises, naming both
    read = reader.read(c, family, n, notes)
    ignored = closed.account(outer, c, n, reader.ignores, family, notes)
    notes += _kv_scheme(outer)
    return ConfigReading(
        name=_name(cfg, source, c), family=family, reader=reader.module, num_layers=n,
        attention=read.kind, label=read.label, sizes=read.sizes, counts=read.layers.counts,
        layer=read.layers.layer, max_position_embeddings=_max_positions(c, family, reader, notes),
        assumptions=tuple(notes), ignored=ignored,
    )


def read_config(source, *, name: str | None = None, params: int | None = None,
                source_label: str = "") -> ModelSpec:
    """A :class:`ModelSpec` from a config path or dict.

    name, params, source_label: override the name, give the parameter count and
    say where the config came from (a path is used when not given).
    """
    reading = parse_config(source)
    if params is not None:
        params = validate.positive_int("params", params)
    if not source_label and isinstance(source, str | Path):
        source_label = str(source)
    return ModelSpec(
        name=name or reading.name, groups=reading.groups(), params=params,
        max_position_embeddings=reading.max_position_embeddings, source=source_label,
        assumptions=reading.assumptions, ignored_keys=reading.ignored,
        decoder_layers=reading.num_layers,
    )
