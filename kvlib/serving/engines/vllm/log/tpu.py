"""vLLM's TPU backend (vllm-project/tpu-inference) in a start-up log: its cache's shape, its
pages of 256 tokens and the HBM the cache takes, worked out again (issue 43).

tpu-inference's runner prints, per engine (tpu_jax_runner.py; the form below is its PR 145's
posted log, July 2025, TPU v6e x 4)::

    Init model | hbm=[(3.74, 31.25), (3.74, 31.25), ...]Gb
    GPU KV cache size: 811,008 tokens
    Maximum concurrency for 4,096 tokens per request: 198.00x
    Init kv-cache | shape=32 * (3168, 256, 16, 128) | sharding=NamedSharding(mesh=Mesh(
        'data': 1, 'model': 4, ...), spec=PartitionSpec(None, None, 'model'), ...) |
        hbm=[(28.49, 31.25), ...]Gb

``shape=L * (blocks, page, 2 x KV heads, head_dim)``: one array per layer, K and V heads side by
side, sharded over the mesh's 'model' axis (the TP). Earlier runners printed ``(KV heads,
blocks, page, head_dim)`` for K and V arrays apiece; which one a line is follows from the
tokens line (blocks x page = the printed tokens). What is checked:

* the page: the printed tokens = blocks x page (256 on the TPU, not the GPU's 16);
* the shape against the model: layers, 2 x KV heads (or KV heads), head_dim;
* the cache's bytes per device = L x blocks x page x heads x head_dim x b (x 2 for separate K
  and V) / TP against the HBM the device gained between "Init model" and "Init kv-cache"
  (each printed to 0.01 GB, read as GiB: ± 0.01).

The budget (how tpu-inference turns free HBM into blocks) is not checked: its rule is not
traced here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from kvlib.models.spec import CacheKind

__all__ = ["TpuCache", "tpu_cache"]

_PAIR = re.compile(r"\(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)")
_MESH_TP = re.compile(r"'model':\s*(\d+)")
_HBM = re.compile(r"hbm=\[([^\]]*)\]Gb")


@dataclass(frozen=True)
class TpuCache:
    """One "Init kv-cache" line read: its found record, layers, blocks, page, heads in the
    shape, head_dim, whether K and V are separate arrays, the mesh's TP, HBM in use per device
    before (the last "Init model" line, or None) and after."""

    found: object
    layers: int
    blocks: int
    page: int
    heads: int
    head_dim: int
    separate_kv: bool
    tp: int | None
    before: list[Fraction] | None
    after: list[Fraction]

    def bytes_per_device(self, b: int) -> Fraction:
        total = (self.layers * self.blocks * self.page * self.heads * self.head_dim * b
                 * (2 if self.separate_kv else 1))
        return Fraction(total, self.tp or 1)


def _used(text: str) -> list[Fraction]:
    return [Fraction(u) for u, _ in _PAIR.findall(text)]


def tpu_cache(found, tokens: int | None) -> TpuCache | None:
    """The first "Init kv-cache" line of ``found`` (a VllmLog's records), its layout told apart
    by ``tokens`` (the printed "GPU KV cache size"); None without one, or when neither layout
    gives the tokens."""
    before = None
    for f in found:
        if f.kind == "tpu_model":
            before = _used(f.values[0])
        if f.kind != "tpu_kv":
            continue
        L, a, b, c, d = (int(x) for x in f.values[:5])
        tail = f.values[5]
        if tokens is not None and a * b == tokens:
            blocks, page, heads, sep = a, b, c, False
        elif tokens is not None and b * c == tokens:
            blocks, page, heads, sep = b, c, a, True
        else:
            return None
        m = _MESH_TP.search(tail)
        h = _HBM.search(tail)
        return TpuCache(f, L, blocks, page, heads, d, sep, int(m.group(1)) if m else None,
                        before, _used(h.group(1)) if h else [])
    return None


def shape_of_model(model, tp: int) -> tuple[int, int, int] | None:
    """(attention layers, KV heads in total, head_dim) of a model with one kind of attention
    layer (None otherwise: a shape per group is not what this line prints)."""
    attn = [g for g in model.groups if g.kind in (CacheKind.FULL, CacheKind.SLIDING)]
    if not attn or len(attn) != len(model.groups):
        return None
    dims = {(g.sizes["N_g"], g.sizes["d_QK"]) for g in attn}
    if len(dims) != 1:
        return None
    heads, d = dims.pop()
    return sum(g.layers for g in attn), heads, d
