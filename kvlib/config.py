"""A Hugging Face ``config.json`` read into layer groups (notebook 05, "Reading a config").

:func:`read_config` turns a config (a path or a dict) into a
:class:`kvlib.spec.ModelSpec`: one :class:`~kvlib.spec.LayerGroup` per cache
kind, sized in the paper's symbols, plus every assumption it made, in words.
It reads a config the way ``transformers`` does:

* ``head_dim`` when present wins over ``hidden_size / num_attention_heads``
  (they differ in Gemma 2/3, Qwen3, gpt-oss); no ``num_key_value_heads``
  means MHA.
* A nested ``text_config`` (Gemma 3, Llama 4 wrappers) holds the language model.
* GPT-2 names (``n_layer``, ``n_head``, ``n_embd``, ``n_positions``).
* Falcon: ``multi_query`` with ``new_decoder_architecture`` false is one
  key/value head, whatever ``num_kv_heads`` says.
* MLA (any ``kv_lora_rank`` config: DeepSeek V2/V3, Kimi K2): the cache is
  ``kv_lora_rank + qk_rope_head_dim`` per token per layer; the key/value head
  count plays no part.
* Windows: ``layer_types`` decides per layer when present; otherwise
  ``sliding_window`` counts only where the family uses it (Qwen2's
  ``use_sliding_window``/``max_window_layers``, Mistral on every layer), and
  patterns fixed by the architecture rather than the file (Gemma 2 alternating,
  Gemma 3 five local to one global, Llama 4 chunked with a global layer every
  fourth) are applied and reported.

Bad input raises ``ValueError`` (``FileNotFoundError`` for a missing file)
naming the field and the value. Sizes stay Python ints, so huge values are exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kvlib import validate
from kvlib.spec import CacheKind, LayerGroup, ModelSpec

__all__ = ["ConfigReading", "load_config", "parse_config", "read_config"]

# Families whose sliding_window applies to every layer (transformers' Mistral, Mixtral).
EVERY_LAYER_SLIDES = ("mistral", "mixtral")
# Defaults of the transformers config classes, used (and reported) when a field is absent.
GEMMA2_WINDOW = 4096
GEMMA3_WINDOW = 4096
GEMMA3_PATTERN = 6  # layer i is global iff (i + 1) % 6 == 0
GEMMA3_MAX_POSITIONS = 131072
LLAMA4_CHUNK = 8192
LLAMA4_GLOBAL_EVERY = 4  # no_rope_layer_interval: layer i is global iff (i + 1) % 4 == 0
GPT_OSS_WINDOW = 128
FALCON_MAX_POSITIONS = 2048
QWEN2_MAX_WINDOW_LAYERS = 28

_LAYER_TYPES = {
    "full_attention": CacheKind.FULL,
    "sliding_attention": CacheKind.SLIDING,
    "chunked_attention": CacheKind.CHUNKED,
}
_ORDER = {CacheKind.FULL: 0, CacheKind.LATENT: 1, CacheKind.SLIDING: 2, CacheKind.CHUNKED: 3}

Layer = tuple[CacheKind, int | None]  # (kind, window) of one layer


def _describe(value) -> str:
    return f"{value!r} ({type(value).__name__})"


class _Fields:
    """Typed access to one config object; errors name the field by its path."""

    def __init__(self, data: Mapping, prefix: str = ""):
        self.data, self.prefix = data, prefix

    def path(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def first(self, *keys: str) -> str | None:
        return next((k for k in keys if self.has(k)), None)

    def int(self, *keys: str, required: bool = True, allow_zero: bool = False,
            why: str = "") -> int | None:
        """The first of ``keys`` present, as a positive int (ValueError otherwise)."""
        key = self.first(*keys)
        if key is None:
            if not required:
                return None
            names = " or ".join(self.path(k) for k in keys)
            raise ValueError(f"config has no {names}{f' ({why})' if why else ''}")
        return validate.positive_int(self.path(key), self.data[key], allow_zero=allow_zero)

    def flag(self, key: str) -> bool | None:
        """A true/false field, None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise ValueError(f"{self.path(key)} must be true or false, got {_describe(value)}")
        return value

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"{self.path(key)} must be a string, got {_describe(value)}")
        return value


@dataclass(frozen=True)
class ConfigReading:
    """What a config says about the cache, before it becomes a :class:`ModelSpec`.

    layer(i) -> (kind, window) of layer i (0-based); ``counts`` maps each
    (kind, window) to its number of layers, computed without listing layers, so
    a huge (valid) layer count stays cheap and exact.
    """

    name: str
    family: str
    num_layers: int
    attention: str  # key of kvlib.formulas.KINDS
    label: str  # MHA, GQA, MQA or MLA, for readers
    sizes: dict
    counts: dict
    layer: Callable[[int], Layer]
    max_position_embeddings: int | None
    assumptions: tuple[str, ...]

    def groups(self) -> tuple[LayerGroup, ...]:
        """One group per (kind, window): full first, then latent, sliding, chunked."""
        ordered = sorted(self.counts.items(), key=lambda kv: (_ORDER[kv[0][0]], kv[0][1] or 0))
        return tuple(LayerGroup(kind, n, self.attention, dict(self.sizes), window)
                     for (kind, window), n in ordered if n)

    def layer_map(self) -> list[Layer]:
        """(kind, window) of every layer, in order (for the layer-map figure)."""
        return [self.layer(i) for i in range(self.num_layers)]


def load_config(source) -> dict:
    """The config object from a path (str or Path) or a mapping (copied)."""
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, str | Path):
        raise ValueError(f"config must be a path or a dict, got {_describe(source)}")
    path = Path(source)
    if not path.is_file():
        if path.is_dir() and (path / "config.json").is_file():
            path = path / "config.json"
        else:
            raise FileNotFoundError(f"config file not found: {source}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{source} is not valid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{source} is not UTF-8 text: {e.reason}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source} must hold a JSON object, got a {type(data).__name__}")
    return data


def _name(cfg: dict, source, text: _Fields) -> str:
    if isinstance(cfg.get("_name_or_path"), str) and cfg["_name_or_path"]:
        return cfg["_name_or_path"]
    if isinstance(source, str | Path) and not isinstance(source, Mapping):
        p = Path(source)
        return p.parent.name if p.name == "config.json" and p.parent.name else p.stem
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return text.text("model_type") or "model"


def _family(outer: _Fields, text: _Fields) -> str:
    family = text.text("model_type") or outer.text("model_type")
    return family.removesuffix("_text")


def _heads(c: _Fields, family: str, notes: list[str]) -> tuple[int, int, int, str]:
    """(N_h, N_g, head_dim, label) of a non-latent config."""
    n_h = c.int("num_attention_heads", "n_head")
    hidden = c.int("hidden_size", "n_embd", required=False)
    multi_query = c.flag("multi_query")
    new_arch = c.flag("new_decoder_architecture")
    if family in ("falcon", "RefinedWebModel", "RefinedWeb", "gpt_bigcode") and multi_query is None:
        multi_query = True
        notes.append(f"no multi_query: {family}'s default (true) applies")
    kv_key = c.first("num_key_value_heads", "num_kv_heads")
    if multi_query and not new_arch:
        n_g = 1
        said = f" (num_kv_heads says {c.data[kv_key]!r})" if kv_key else ""
        notes.append("multi_query is true and new_decoder_architecture is not: "
                     f"one key/value head (MQA){said}")
    elif kv_key:
        n_g = c.int(kv_key)
    else:
        n_g = n_h
        notes.append(f"no num_key_value_heads: each of the {n_h} query heads keeps its own "
                     "key/value head (MHA)")
    validate.check_divides(c.path(kv_key or "num_key_value_heads"), n_g,
                           c.path("num_attention_heads"), n_h)
    if c.has("head_dim"):
        d = c.int("head_dim")
        if hidden is not None and hidden % n_h == 0 and hidden // n_h != d:
            notes.append(f"head_dim={d} from the config wins over hidden_size / "
                         f"num_attention_heads = {hidden} / {n_h} = {hidden // n_h}")
    else:
        if hidden is None:
            raise ValueError(f"config has no {c.path('head_dim')} and no "
                             f"{c.path('hidden_size')} to derive it from")
        if hidden % n_h:
            raise ValueError(f"{c.path('hidden_size')}={hidden} is not divisible by "
                             f"{c.path('num_attention_heads')}={n_h}; the config needs a head_dim")
        d = hidden // n_h
        notes.append(f"no head_dim: derived as hidden_size / num_attention_heads = "
                     f"{hidden} / {n_h} = {d}")
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return n_h, n_g, d, label


def _from_layer_types(c: _Fields, n: int, notes: list[str]):
    types = c.data["layer_types"]
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ValueError(f"{c.path('layer_types')} must be a list of strings, "
                         f"got {_describe(types)}")
    if len(types) != n:
        raise ValueError(f"{c.path('layer_types')} has {len(types)} entries for "
                         f"{n} layers (num_hidden_layers)")
    unknown = sorted({t for t in types if t not in _LAYER_TYPES})
    if unknown:
        raise ValueError(f"{c.path('layer_types')} holds {unknown[0]!r}; kvlib knows "
                         f"{', '.join(_LAYER_TYPES)}")
    window = {CacheKind.FULL: None}
    if "sliding_attention" in types:
        window[CacheKind.SLIDING] = c.int("sliding_window", why="layer_types has sliding layers")
    if "chunked_attention" in types:
        window[CacheKind.CHUNKED] = c.int("attention_chunk_size",
                                          why="layer_types has chunked layers")
    layers = [(_LAYER_TYPES[t], window[_LAYER_TYPES[t]]) for t in types]
    tally = ", ".join(f"{types.count(t)} {t}" for t in _LAYER_TYPES if t in types)
    notes.append(f"layer_types decides each layer: {tally}")
    return layers.__getitem__, _tally(layers)


def _tally(layers) -> dict:
    counts: dict = {}
    for layer in layers:
        counts[layer] = counts.get(layer, 0) + 1
    return counts


def _periodic(n: int, period: int, local: Layer, every: Layer):
    """Layer i is ``every`` iff (i + 1) % period == 0, else ``local``."""
    n_every = n // period
    return (lambda i: every if (i + 1) % period == 0 else local), {local: n - n_every,
                                                                   every: n_every}


def _window_or_default(c: _Fields, key: str, default: int, family: str, notes: list[str]) -> int:
    w = c.int(key, required=False)
    if w is None:
        notes.append(f"no {key}: {family}'s default of {default} tokens applies")
        return default
    return w


def _windows(c: _Fields, n: int, family: str, notes: list[str]):
    """(layer(i), counts) for a non-latent config."""
    full: Layer = (CacheKind.FULL, None)
    if c.has("layer_types"):
        return _from_layer_types(c, n, notes)
    sliding = c.int("sliding_window", required=False)  # validated wherever it is written
    use = c.flag("use_sliding_window")
    if "use_sliding_window" in c.data:  # Qwen2 family
        if not use:
            if sliding is not None:
                notes.append(f"sliding_window={sliding} is inert: use_sliding_window is "
                             "false, every layer keeps the whole context")
            return (lambda i: full), {full: n}
        if sliding is None:
            raise ValueError(f"{c.path('use_sliding_window')} is true but "
                             f"{c.path('sliding_window')} is missing")
        first = c.int("max_window_layers", required=False, allow_zero=True)
        if first is None:
            first = QWEN2_MAX_WINDOW_LAYERS
            notes.append(f"no max_window_layers: Qwen2's default of {first} applies")
        first = min(first, n)
        slide: Layer = (CacheKind.SLIDING, sliding)
        notes.append(f"use_sliding_window is true: layers {first} and above slide over "
                     f"{sliding} tokens (max_window_layers={first}), the {first} below are full")
        return (lambda i: slide if i >= first else full), {full: first, slide: n - first}
    if family == "gemma2":
        w = _window_or_default(c, "sliding_window", GEMMA2_WINDOW, family, notes)
        slide = (CacheKind.SLIDING, w)
        notes.append(f"Gemma 2 alternates by architecture (not in config.json): even layers "
                     f"slide over {w} tokens, odd layers are global")
        return (lambda i: slide if i % 2 == 0 else full), {slide: (n + 1) // 2, full: n // 2}
    if family == "gemma3":
        w = _window_or_default(c, "sliding_window", GEMMA3_WINDOW, family, notes)
        key = c.first("sliding_window_pattern", "_sliding_window_pattern")
        period = c.int(key) if key else None
        where = key
        if period is None:
            period, where = GEMMA3_PATTERN, "the architecture, not config.json"
        notes.append(f"Gemma 3 pattern from {where}: layer i is global iff (i + 1) % "
                     f"{period} == 0 ({period - 1} local : 1 global), local layers slide "
                     f"over {w} tokens")
        return _periodic(n, period, (CacheKind.SLIDING, w), full)
    if family == "llama4":
        return _llama4(c, n, notes)
    if family == "gpt_oss":
        w = _window_or_default(c, "sliding_window", GPT_OSS_WINDOW, family, notes)
        slide = (CacheKind.SLIDING, w)
        notes.append(f"no layer_types: gpt-oss alternates, even layers slide over {w} tokens")
        return (lambda i: slide if i % 2 == 0 else full), {slide: (n + 1) // 2, full: n // 2}
    if sliding is not None and family in EVERY_LAYER_SLIDES:
        slide = (CacheKind.SLIDING, sliding)
        notes.append(f"{family} slides on every layer: each keeps the last {sliding} tokens")
        return (lambda i: slide), {slide: n}
    if sliding is not None:
        notes.append(f"sliding_window={sliding} ignored: family {family or '(no model_type)'} "
                     "is not known to use it, so every layer counts as full attention "
                     "(an upper bound)")
    return (lambda i: full), {full: n}


def _llama4(c: _Fields, n: int, notes: list[str]):
    chunk = _window_or_default(c, "attention_chunk_size", LLAMA4_CHUNK, "llama4", notes)
    local: Layer = (CacheKind.CHUNKED, chunk)
    full: Layer = (CacheKind.FULL, None)
    flags = c.data.get("no_rope_layers")
    if flags:  # 1 = a RoPE layer, which attends within its chunk; 0 = a global NoPE layer
        ok = isinstance(flags, list) and len(flags) == n and all(
            isinstance(f, int) and not isinstance(f, bool) and f in (0, 1) for f in flags)
        if not ok:
            raise ValueError(f"{c.path('no_rope_layers')} must list 0 or 1 for each of the "
                             f"{n} layers, got {_describe(flags)}")
        layers = [local if f else full for f in flags]
        notes.append("no_rope_layers decides: RoPE layers attend within chunks of "
                     f"{chunk} tokens, NoPE layers are global")
        return layers.__getitem__, _tally(layers)
    period = c.int("no_rope_layer_interval", required=False) or LLAMA4_GLOBAL_EVERY
    notes.append(f"Llama 4 pattern from the architecture (no_rope_layers empty): layer i is "
                 f"global iff (i + 1) % {period} == 0, the others attend within chunks of "
                 f"{chunk} tokens")
    return _periodic(n, period, local, full)


def _max_positions(c: _Fields, family: str, notes: list[str]) -> int | None:
    m = c.int("max_position_embeddings", "n_positions", required=False)
    if m is not None:
        return m
    default = {"gemma3": GEMMA3_MAX_POSITIONS, "falcon": FALCON_MAX_POSITIONS}.get(family)
    if default is not None:
        notes.append(f"no max_position_embeddings: {family}'s default of {default} applies")
    return default


def parse_config(source) -> ConfigReading:
    """Read ``source`` (path or dict) into a :class:`ConfigReading`."""
    cfg = load_config(source)
    outer = _Fields(cfg)
    notes: list[str] = []
    c = outer
    if "text_config" in cfg and cfg["text_config"] is not None:
        if not isinstance(cfg["text_config"], Mapping):
            raise ValueError(f"text_config must be a JSON object, got "
                             f"{_describe(cfg['text_config'])}")
        c = _Fields(cfg["text_config"], "text_config.")
        notes.append(f"read the language model from text_config (inside the "
                     f"{outer.text('model_type') or 'multimodal'} wrapper)")
    family = _family(outer, c)
    n = c.int("num_hidden_layers", "n_layer")
    if c.has("kv_lora_rank"):
        d_L = c.int("kv_lora_rank")
        d_R = c.int("qk_rope_head_dim", why="an MLA config caches the decoupled RoPE key too")
        c.int("num_attention_heads", "n_head")  # validated, though the latent cache ignores it
        c.int("hidden_size", required=False)
        kv = c.data.get("num_key_value_heads")
        notes.append(f"MLA (kv_lora_rank set): each layer caches the latent (kv_lora_rank="
                     f"{d_L}) plus the decoupled RoPE key (qk_rope_head_dim={d_R}) per token"
                     + (f"; num_key_value_heads={kv!r} plays no part" if kv is not None else ""))
        mtp = c.data.get("num_nextn_predict_layers")
        if mtp:
            notes.append(f"num_nextn_predict_layers={mtp!r} (multi-token prediction) not "
                         "counted: it caches only when used as a speculative-decoding draft")
        latent: Layer = (CacheKind.LATENT, None)
        layer, counts = (lambda i: latent), {latent: n}
        attention, label, sizes = "MLA+RoPE", "MLA", {"d_L": d_L, "d_R": d_R}
    else:
        n_h, n_g, d, label = _heads(c, family, notes)
        layer, counts = _windows(c, n, family, notes)
        attention, sizes = "GQA", {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}
    return ConfigReading(
        name=_name(cfg, source, c), family=family, num_layers=n, attention=attention,
        label=label, sizes=sizes, counts=counts, layer=layer,
        max_position_embeddings=_max_positions(c, family, notes), assumptions=tuple(notes),
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
        assumptions=reading.assumptions,
    )
