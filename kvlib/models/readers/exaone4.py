"""EXAONE 4.0 (and the language model of EXAONE 4.5): ``layer_types`` decides each layer.

vLLM 0.34.0 reads ``config.layer_types[layer_idx]`` and gives a ``sliding_attention`` layer
``config.sliding_window`` (model_executor/models/exaone4.py:172-173). The list comes from the
config file, or, where the file has none, from transformers 5.25.0's Exaone4Config, which
derives it from ``sliding_window_pattern`` only then (models/exaone4/configuration_exaone4.py:
99-108): layer i slides iff (i + 1) % pattern != 0, the pattern 4 and the window 4096 by
default; a null ``sliding_window`` sets the pattern to 0. So ``sliding_window_pattern`` beside
``layer_types`` is read by no one (EXAONE 4.0-32B writes both, "LLLG" beside a list of 64), and
a string pattern without ``layer_types`` is one transformers cannot use.

EXAONE 4.5 wraps this model: its ``text_config`` says ``exaone4_5_text``, which
Exaone4_5_Config turns into ``exaone4`` (models/exaone4_5/configuration_exaone4_5.py:79-80),
and vLLM builds ``Exaone4ForCausalLM`` from it (model_executor/models/exaone4_5.py:359-364).
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers import attention
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import FULL, Layers, periodic
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

__all__ = ["EXAONE4_PATTERN", "EXAONE4_WINDOW", "read"]

EXAONE4_WINDOW = 4096  # Exaone4Config.sliding_window (configuration_exaone4.py:95)
EXAONE4_PATTERN = 4  # Exaone4Config.sliding_window_pattern (configuration_exaone4.py:96)
_CONFIG = "transformers 5.25.0 models/exaone4/configuration_exaone4.py"


def _pattern(c: Fields) -> int:
    """Exaone4Config's pattern where the file has no ``layer_types``."""
    if "sliding_window_pattern" not in c.data:
        return EXAONE4_PATTERN
    value = c.data["sliding_window_pattern"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{c.path('sliding_window_pattern')}={value!r} without layer_types: "
                         f"Exaone4Config derives layer_types from it as (i + 1) % pattern "
                         f"({_CONFIG}:102-108), which needs an integer, not "
                         f"{describe(value)}; give layer_types")
    return validate.positive_int(c.path("sliding_window_pattern"), value)


def windows(c: Fields, n: int, family: str, notes: list[str]) -> Layers:
    """Without ``layer_types``: the list Exaone4Config derives (configuration_exaone4.py:99-108)."""
    if "sliding_window" in c.data and c.data["sliding_window"] is None:
        raise ValueError(f"{c.path('sliding_window')}=null without layer_types: Exaone4Config "
                         f"then sets sliding_window_pattern to 0 and derives layer_types as "
                         f"(i + 1) % 0 ({_CONFIG}:100-105), which fails; give layer_types")
    w = c.int("sliding_window", required=False)
    if w is None:
        w = EXAONE4_WINDOW
        notes.append(f"no sliding_window: Exaone4Config's default of {w} tokens applies "
                     f"({_CONFIG}:95)")
    period = _pattern(c)
    notes.append(f"no layer_types: Exaone4Config derives it from sliding_window_pattern="
                 f"{period}: layer i is full attention iff (i + 1) % {period} == 0, the others "
                 f"slide over {w} tokens ({_CONFIG}:102-108; vLLM 0.34.0 reads that list, "
                 "model_executor/models/exaone4.py:172-173)")
    return periodic(n, period, (CacheKind.SLIDING, w), FULL)


@register("exaone4")
def read(c, family, n, notes):
    if c.has("layer_types") and "sliding_window_pattern" in c.data:
        notes.append(f"{c.path('sliding_window_pattern')}={c.data['sliding_window_pattern']!r} "
                     "is not read: Exaone4Config derives layer_types from it only when "
                     f"layer_types is absent ({_CONFIG}:102), and vLLM 0.34.0 reads layer_types "
                     "(model_executor/models/exaone4.py:172)")
    return attention.read(c, family, n, notes, windows=windows)
