"""Nemotron NAS models (DeciLM: Llama-3.3-Nemotron-Super, -Ultra): one block config per layer.

``block_configs[i].attention`` says what layer i does: ``no_op`` (no attention at
all) and ``replace_with_linear`` (a linear map instead of attention) keep nothing;
any other layer is standard attention with ``num_attention_heads //
n_heads_in_group`` key/value heads of ``hidden_size / num_attention_heads``
(vLLM 0.33.0 models/nemotron_nas.py: no_op layers build no attention module, so
no cache). A per-layer window, sink tokens or sparsity is refused: kvlib does not
model them.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.core import validate
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

_UNMODELLED = ("window_length", "num_sink_tokens", "sparsify")


def _attention_of(c: Fields, i: int, block) -> Mapping:
    where = c.path(f"block_configs[{i}].attention")
    if not isinstance(block, Mapping) or not isinstance(block.get("attention"), Mapping):
        raise ValueError(f"{c.path(f'block_configs[{i}]')} must hold an attention object, "
                         f"got {describe(block)}")
    a = block["attention"]
    for key in _UNMODELLED:
        if a.get(key) not in (None, False):
            raise ValueError(f"{where}.{key}={a[key]!r}: not modelled; kvlib refuses rather "
                             "than read the layer as full attention")
    return a


@register("nemotron-nas", "deci", "decilm", handles=("block_configs",))
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    blocks = c.data.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise ValueError(f"{c.path('block_configs')} must list one block for each of the {n} "
                         f"layers, got {describe(blocks)}")
    n_h = c.int("num_attention_heads")
    if c.has("head_dim"):
        d = c.int("head_dim")
    else:
        hidden = c.int("hidden_size")
        if hidden % n_h:
            raise ValueError(f"{c.path('hidden_size')}={hidden} is not divisible by "
                             f"{c.path('num_attention_heads')}={n_h}; the config needs a head_dim")
        d = hidden // n_h
    layers, heads = [], set()
    for i, block in enumerate(blocks):
        a = _attention_of(c, i, block)
        if a.get("no_op") or a.get("replace_with_linear"):
            layers.append(layer(CacheKind.NONE))
            continue
        group = validate.positive_int(c.path(f"block_configs[{i}].attention.n_heads_in_group"),
                                      a.get("n_heads_in_group"))
        validate.check_divides(c.path(f"block_configs[{i}].attention.n_heads_in_group"), group,
                               c.path("num_attention_heads"), n_h)
        n_g = n_h // group
        heads.add(n_g)
        layers.append(layer(CacheKind.FULL, "GQA", N_h=n_h, N_g=n_g, d_QK=d, d_V=d))
    skipped = sum(1 for x in layers if x[0] is CacheKind.NONE)
    notes.append(f"block_configs decide each layer: {n - skipped} with attention "
                 f"({', '.join(str(h) for h in sorted(heads))} key/value heads of {d}), "
                 f"{skipped} without (no_op or replace_with_linear: nothing cached)")
    n_g = min(heads) if heads else n_h
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}, tally(layers))
