"""``head_dim`` and the KV head count a config.json omits, as vLLM 0.34.0 reads them (issue 42).

vLLM reads the config object transformers builds, not the file, so an absent key takes the
config class's default (``transformers_utils/config.py:1303-1317``; head size
``model_arch_config_convertor.py:91-118``, KV heads :152-157). Most classes derive it as kvlib
does (``hidden_size / num_attention_heads``; one KV head per query head); the families in
``class_defaults.json`` do not: GLM-4's class says ``head_dim`` 128 and 2 KV heads whatever the
shape, Qwen2's 32 KV heads. That file is written by ``scripts/class_defaults.py`` from
transformers 5.25.0 and checked fresh in ``make crosscheck``
(tests/crosscheck/test_class_defaults_fresh.py).

    >>> from kvlib.models.readers.fields import Fields
    >>> default("head_dim", Fields({"model_type": "glm4"})).value
    128

A key the file gives a number is never looked up here; one it writes as null is looked up
under ``KEY:null`` (GLM-4's class rejects a null ``head_dim``; Llama's derives from it).
Which class: the top level's ``model_type``; inside ``text_config`` its own ``model_type``
when transformers knows it, else the wrapper's text sub-config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kvlib.models.readers.fields import Fields

__all__ = ["ClassDefault", "default", "table", "take"]

DATA = Path(__file__).with_name("class_defaults.json")


@lru_cache(maxsize=1)
def table() -> dict:
    """The shipped table (``scripts/class_defaults.py`` writes it)."""
    return json.loads(DATA.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ClassDefault:
    """What transformers' ``cls`` (of ``model_type``) gives ``key`` when the file omits it:
    ``rule`` "constant" (``value``), "raises" (``error``) or "other" (``values``: [hidden,
    heads, what it gave] per shape tried); ``source``: transformers file:line."""

    key: str
    model_type: str
    cls: str
    rule: str
    source: str
    value: int | None = None
    error: str = ""
    values: tuple = ()
    null: bool = False  # the file writes the key as null (else it omits it)

    def note(self, c: Fields) -> str:
        """The assumption, in words."""
        said = "null" if self.null else "no"
        return (f"{said} {c.path(self.key)}: {self.model_type}'s config class default {self.value} "
                f"({self.cls}, {self.source}, transformers {table()['transformers']}), as vLLM "
                "0.34.0 reads it")

    def refusal(self, c: Fields) -> ValueError:
        """The error where the class gives no number kvlib can take."""
        gave = {v for _, _, v in self.values}
        why = (f"cannot be built so ({self.error})" if self.rule == "raises" else
               "leaves it None, which vLLM 0.34.0 reads as it is" if gave == {None} else
               f"copies it from another field's default ({next(iter(gave))} at every shape "
               "tried), not a number of its own" if len(gave) == 1 else
               "fills it with neither hidden_size / num_attention_heads nor a constant "
               f"(hidden_size, num_attention_heads -> {self.key}: "
               + ", ".join(f"{h}, {n} -> {v}" for h, n, v in self.values) + ")")
        said = f"{c.path(self.key)} is null" if self.null else f"config has no {c.path(self.key)}"
        return ValueError(f"{said}, and transformers "
                          f"{table()['transformers']}'s {self.cls} ({self.source}), which vLLM "
                          f"0.34.0 reads, {why}; give {self.key}")


def _model_type(c: Fields) -> tuple[str, str]:
    own = c.raw.get("model_type")
    if c.outer is None:
        return (own if isinstance(own, str) else ""), "config"
    if isinstance(own, str) and own in table()["checked"]:
        return own, "config"
    outer = c.outer.raw.get("model_type")
    return (outer if isinstance(outer, str) else ""), "text_config"


def default(key: str, c: Fields) -> ClassDefault | None:
    """The class default of ``key`` ("head_dim" or "num_key_value_heads") for the config
    ``c`` omits it from, where it differs from kvlib's derivation; None where it does not (or
    the file has the key, or transformers does not know the ``model_type``)."""
    if key in c.raw and c.raw[key] is not None:
        return None
    model_type, scope = _model_type(c)
    name = key if key not in c.raw else f"{key}:null"
    entry = table()["families"].get(model_type, {}).get(scope, {}).get(name)
    if entry is None:
        return None
    return ClassDefault(key, model_type, entry["class"], entry["rule"], entry["source"],
                        entry.get("value"), entry.get("error", ""),
                        tuple(tuple(v) for v in entry.get("values", ())), name != key)


def take(key: str, c: Fields, notes: list[str]) -> int | None:
    """The class default of ``key`` for ``c`` (its note appended to ``notes``), None where
    kvlib's derivation is the class's; ValueError where the class gives no number."""
    found = default(key, c)
    if found is None:
        return None
    if found.rule != "constant":
        raise found.refusal(c)
    notes.append(found.note(c))
    return found.value
