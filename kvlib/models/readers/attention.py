"""The generic reader: standard attention (MHA, GQA, MQA) on every layer, as transformers reads it.

* ``head_dim`` when present wins over ``hidden_size / num_attention_heads``
  (they differ in Gemma 2/3, Qwen3, gpt-oss); no ``num_key_value_heads`` means MHA.
  Where the file omits either, vLLM reads the config class's default, which for some
  families is a constant (GLM-4: ``head_dim`` 128, 2 KV heads; Qwen2: 32 KV heads):
  :mod:`.class_defaults` says which, and kvlib takes it, aloud.
* GPT-2 names (``n_layer``, ``n_head``, ``n_embd``, ``n_positions``) are read too.
* ``multi_query`` true with ``new_decoder_architecture`` not true is one
  key/value head (Falcon, GPTBigCode), whatever ``num_kv_heads`` says.
* ``layer_types`` decides per layer when present. A ``sliding_window`` of a
  family not known to use it is reported and ignored (an upper bound).

Families with their own rules (windows fixed by the architecture, MLA, ...)
live in modules beside this one and call :func:`heads` and :func:`read`.
"""

from __future__ import annotations

from collections.abc import Callable

from kvlib.core import validate
from kvlib.models.readers.class_defaults import take
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.reading import Attention, Layers, every_layer, from_layer_types

__all__ = ["heads", "read", "plain_windows"]

Windows = Callable[[Fields, int, str, list[str]], Layers]


def heads(c: Fields, notes: list[str], *, multi_query_default: bool | None = None,
          family: str = "") -> tuple[int, int, int, str]:
    """(N_h, N_g, head_dim, label) of a standard-attention config."""
    n_h = c.int("num_attention_heads", "n_head")
    hidden = c.int("hidden_size", "n_embd", required=False)
    multi_query = c.flag("multi_query")
    new_arch = c.flag("new_decoder_architecture")
    if multi_query is None and multi_query_default is not None:
        multi_query = multi_query_default
        notes.append(f"no multi_query: {family}'s default ({str(multi_query).lower()}) applies")
    kv_key = c.first("num_key_value_heads", "num_kv_heads")
    if multi_query and not new_arch:
        n_g = 1
        said = f" (num_kv_heads says {c.data[kv_key]!r})" if kv_key else ""
        notes.append("multi_query is true and new_decoder_architecture is not: "
                     f"one key/value head (MQA){said}")
    elif kv_key:
        n_g = c.int(kv_key)
    elif (kv := take("num_key_value_heads", c, notes)) is not None:
        n_g = kv
        if n_h % n_g:
            raise ValueError(f"{c.path('num_attention_heads')}={n_h} is not a multiple of the "
                             f"class default {n_g} vLLM 0.34.0 would read for the absent "
                             "num_key_value_heads (above); give num_key_value_heads")
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
    elif (hd := take("head_dim", c, notes)) is not None:
        d = hd
        if hidden is not None and hidden % n_h == 0 and hidden // n_h != d:
            notes[-1] += (f" (not hidden_size / num_attention_heads = {hidden} / {n_h} = "
                          f"{hidden // n_h})")
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


def plain_windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    """Every layer full; a ``sliding_window`` the family is not known to use is ignored aloud."""
    sliding = c.int("sliding_window", required=False)  # validated wherever it is written
    if sliding is not None:
        notes.append(f"sliding_window={sliding} ignored: family {family or '(no model_type)'} "
                     "is not known to use it, so every layer counts as full attention "
                     "(per token the same; per sequence an upper bound, since a window only "
                     "shortens what a layer keeps)")
    return every_layer(n)


def read(c: Fields, family: str, n: int, notes: list[str], *,
         windows: Windows = plain_windows, multi_query_default: bool | None = None) -> Attention:
    """Heads from :func:`heads`; layers from ``layer_types`` when present, else ``windows``."""
    n_h, n_g, d, label = heads(c, notes, multi_query_default=multi_query_default, family=family)
    layers = from_layer_types(c, n, notes) if c.has("layer_types") else windows(c, n, family, notes)
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, layers)
