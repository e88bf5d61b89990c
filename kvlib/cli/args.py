"""Command-line values as people type them, checked once for every command.

``--context 131072``, ``131,072``, ``128K`` and ``128k`` are the same context
(K = 1024 tokens, M = 1024^2, the way "128K context" is meant); counts accept
thousands separators; a fraction such as ``--gpu-mem-util`` must lie in (0, 1].
Every refusal is one line naming the flag and the value (argparse prints it as
``kvlib COMMAND: error: argument --context: ...``).
"""

from __future__ import annotations

import argparse
import re
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import kv_dtype_name, kv_format

__all__ = ["parse_count", "tokens", "count", "unit_fraction", "parse_tokens", "kv_dtype",
           "kv_cache_dtype",
           "parse_bytes",
           "byte_size", "vllm_release"]

_TOKEN_SUFFIX = {"": 1, "K": 1024, "M": 1024**2}


_WHOLE = r"\s*(\d{1,3}(?:[,_]\d{3})+|\d+)\s*"  # 131072, 131,072 or 131_072


def _whole(text: str, suffixes: str = "") -> tuple[int, str] | None:
    """(the positive whole number, its suffix) of ``text``, or None."""
    m = re.fullmatch(_WHOLE + f"([{suffixes}]?)\\s*" if suffixes else _WHOLE, str(text))
    if not m or int(re.sub(r"[,_]", "", m.group(1))) == 0:
        return None
    return int(re.sub(r"[,_]", "", m.group(1))), (m.group(2) if suffixes else "")


def parse_tokens(text: str) -> int:
    """'131072', '131,072', '131_072', '128K', '128k', '1M' -> a positive int of tokens."""
    found = _whole(text, "kKmM")
    if found is None:
        raise ValueError(f"must be a whole number of tokens such as 131072, 131,072 or 128K "
                         f"(K = 1024 tokens, M = 1024 K), got {text!r}")
    return found[0] * _TOKEN_SUFFIX[found[1].upper()]


def _argparse(parse):
    def typed(text: str):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    typed.__name__ = parse.__name__
    return typed


tokens = _argparse(parse_tokens)


def _count(text: str) -> int:
    found = _whole(text)
    if found is None:
        raise ValueError(f"must be a positive whole number, got {text!r}")
    return found[0]


count = _argparse(_count)


def _unit_fraction(text: str) -> Fraction:
    try:
        value = Fraction(str(text).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"must be a number in (0, 1] such as 0.9, got {text!r}") from None
    if value <= 0 or value > 1:
        hint = (f" (a percentage? {text}% is {float(value / 100):g})"
                if 1 < value <= 100 else "")
        raise ValueError(f"must be a number in (0, 1] such as 0.9, got {text!r}{hint}")
    return value


unit_fraction = _argparse(_unit_fraction)


kv_dtype = _argparse(kv_dtype_name)


def _kv_cache_dtype(text: str) -> str:
    """A KV format by kvlib's name or vLLM's (:func:`kvlib.core.dtypes.kv_format`), kept as
    named so that its scales go with it: ``nvfp4``, ``int4_per_token_head``, ``fp8``."""
    return kv_format(text).name


kv_cache_dtype = _argparse(_kv_cache_dtype)


_BYTE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
               "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(text: str) -> int:
    """'42949672960', '42,949,672,960', '40GiB', '40 GiB', '1.5 GiB', '43GB' -> a positive
    whole number of bytes (KiB = 1024 B, KB = 1000 B)."""
    m = re.fullmatch(r"\s*(\d{1,3}(?:[,_]\d{3})+|\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2).upper() if m else None
    if m is None or unit not in _BYTE_UNITS:
        raise ValueError(f"must be a number of bytes such as 42949672960 or 40GiB (B, KiB, "
                         f"MiB, GiB, TiB, KB, MB, GB, TB), got {text!r}")
    value = Fraction(re.sub(r"[,_]", "", m.group(1))) * _BYTE_UNITS[unit]
    if value <= 0 or value.denominator != 1:
        raise ValueError(f"must be a positive whole number of bytes, got {text!r}")
    return int(value)


def _vllm_release(text: str) -> str:
    """``--vllm`` as typed ('0.34', '0.33.0'), by the engine's own table: imported here, when a
    release is parsed, so that a command that takes none (``kvlib estimate``) does not load the
    engines (issue 42 item 6: the engines package pulls in SymPy)."""
    from kvlib.serving.engines.vllm.defaults import vllm_release as release

    return release(text)


byte_size = _argparse(parse_bytes)
vllm_release = _argparse(_vllm_release)


def parse_count(text: str) -> int:
    """``--params`` as people write it ('70.6B', '7e10'), by :func:`validate.parse_count`
    (shared by ``kvlib plan`` and its ``--engine`` form)."""
    return validate.parse_count("--params", text)
