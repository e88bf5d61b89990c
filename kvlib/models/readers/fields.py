"""Typed access to a config.json object; every error names the field by its path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kvlib.core import validate

__all__ = ["Fields", "describe", "load_config"]


def describe(value) -> str:
    """``value`` and its JSON-ish type, for error messages: ``'x' (str)``."""
    return f"{value!r} ({type(value).__name__})"


class _Tracked(dict):
    """A config object that remembers which keys a reader looked up (``seen``, full paths):
    the closed world (:mod:`.closed`) accounts for every other key."""

    def __init__(self, data: Mapping, prefix: str, seen: set[str]):
        super().__init__(data)
        self._prefix, self._seen = prefix, seen

    def __getitem__(self, key):
        self._seen.add(self._prefix + str(key))
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._seen.add(self._prefix + str(key))
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self._seen.add(self._prefix + str(key))
        return super().__contains__(key)


class Fields:
    """One config object (the top level or ``text_config``); ``prefix`` names its path, and
    ``outer`` is the wrapper around a ``text_config`` (None at the top level).

    ``data`` records every key a reader looks up in ``seen`` (shared with ``outer``);
    ``raw`` is the same object unrecorded, for checks that must not count as reading.
    """

    def __init__(self, data: Mapping, prefix: str = "", outer: Fields | None = None):
        self.seen: set[str] = outer.seen if outer is not None else set()
        self.raw = dict(data)
        self.data = _Tracked(data, prefix, self.seen)
        self.prefix, self.outer = prefix, outer

    def path(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def touch(self, *keys: str) -> None:
        """Mark ``keys`` as accounted for: looked at, and found to play no part here."""
        for key in keys:
            self.data.get(key)

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
            raise ValueError(f"{self.path(key)} must be true or false, got {describe(value)}")
        return value

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise ValueError(f"{self.path(key)} must be a string, got {describe(value)}")
        return value


def load_config(source) -> dict:
    """The config object from a path (str or Path; a folder holding config.json) or a mapping."""
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, str | Path):
        raise ValueError(f"config must be a path or a dict, got {describe(source)}")
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
    return _with_hf_quant_config(data, path)


def _with_hf_quant_config(data: dict, path: Path) -> dict:
    """``data`` with the ``hf_quant_config.json`` beside it as its ``quantization_config``, as
    vLLM 0.34.0 reads a model folder (transformers_utils/config.py:996-1009: ModelOpt 0.29 and
    before write the quantization there, not in config.json; config.json's own
    ``quantization_config`` wins). Only for a file that is a model's config (it names a
    ``model_type`` or ``architectures``)."""
    beside = path.parent / "hf_quant_config.json"
    if data.get("quantization_config") is not None or not beside.is_file() \
            or not ("model_type" in data or "architectures" in data):
        return data
    try:
        quant = json.loads(beside.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{beside} (which vLLM reads as the quantization_config) is not "
                         f"valid JSON: {e}") from None
    if not isinstance(quant, dict):
        raise ValueError(f"{beside} (which vLLM reads as the quantization_config) must hold a "
                         f"JSON object, got a {type(quant).__name__}")
    return {**data, "quantization_config": quant}
