"""Ergo: three sliding layers to one full, the window under its checkpoint name.

As transformers 5.25.0 builds it (vLLM 0.34.0 has no Ergo model file):

* ``local_attention_window`` is the released checkpoints' name for ``sliding_window``
  (``attribute_map``, models/ergo/configuration_ergo.py:65), default 512 (:91);
* ``layer_types`` defaults to layer i full iff (i + 1) % ``global_attention_every_n_layers``
  == 0 (default 4), else sliding (:101-105);
* the head dim is always ``hidden_size / num_attention_heads`` (modeling_ergo.py:201): a
  ``head_dim`` key is not read; every layer keeps ``num_key_value_heads`` heads (:214).
  ``global_attention_scale`` scales the full layers' logits (:208), not the cache.
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.class_defaults import take
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import FULL, Attention, periodic, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

ERGO_WINDOW = 512  # ErgoConfig.sliding_window
ERGO_PERIOD = 4  # ErgoConfig.global_attention_every_n_layers
ERGO_MAX_POSITIONS = 524288


@register("ergo", max_positions=ERGO_MAX_POSITIONS, ignores=("global_attention_scale",))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    n_h = c.int("num_attention_heads")
    n_g = c.int("num_key_value_heads", required=False)
    if n_g is None:  # vLLM reads the config object: ErgoConfig's default
        n_g = take("num_key_value_heads", c, notes) or c.int("num_key_value_heads")
    validate.check_divides(c.path("num_key_value_heads"), n_g, c.path("num_attention_heads"), n_h)
    hidden = c.int("hidden_size")
    if hidden % n_h:
        raise ValueError(f"{c.path('hidden_size')}={hidden} is not divisible by "
                         f"{c.path('num_attention_heads')}={n_h}")
    d = hidden // n_h
    notes.append(f"head dim hidden_size / num_attention_heads = {hidden} / {n_h} = {d} "
                 "(ErgoAttention reads no head_dim)")
    if c.has("head_dim"):
        c.touch("head_dim")
        notes.append(f"head_dim={c.data['head_dim']!r} is not read by Ergo's attention")
    key = c.first("local_attention_window", "sliding_window")
    if key and c.has("local_attention_window") and c.has("sliding_window") and \
            c.data["local_attention_window"] != c.data["sliding_window"]:
        raise ValueError(f"{c.path('local_attention_window')} and {c.path('sliding_window')} "
                         "disagree; they name one window (attribute_map)")
    w = c.int(key) if key else ERGO_WINDOW
    if key:
        c.touch("local_attention_window", "sliding_window")
        notes.append(f"window {w} tokens from {key}")
    else:
        notes.append(f"no local_attention_window: Ergo's default of {w} tokens applies")
    sizes = {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    types = c.data.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n:
            raise ValueError(f"{c.path('layer_types')} must list each of the {n} layers, "
                             f"got {describe(types)}")
        kinds = {"full_attention": FULL, "sliding_attention": (CacheKind.SLIDING, w)}
        unknown = sorted(set(types) - set(kinds))
        if unknown:
            raise ValueError(f"{c.path('layer_types')} holds {unknown[0]!r}; Ergo knows "
                             "full_attention, sliding_attention")
        c.touch("global_attention_every_n_layers")
        notes.append(f"layer_types decides each layer: {types.count('full_attention')} "
                     f"full, {types.count('sliding_attention')} sliding over {w} tokens")
        return Attention("GQA", label, sizes, tally([kinds[t] for t in types]))
    period = c.int("global_attention_every_n_layers", required=False) or ERGO_PERIOD
    c.touch("global_attention_every_n_layers")
    notes.append(f"layer i is full iff (i + 1) % {period} == 0, else it slides over {w} tokens")
    return Attention("GQA", label, sizes, periodic(n, period, (CacheKind.SLIDING, w), FULL))
