"""What transformers' cache holds per layer, what kvlib says, and the one stated rule between them.

Checked against transformers 5.24.0 (pinned in the ``crosscheck`` extra), reading
``transformers/cache_utils.py`` in the installed package:

* ``DynamicCache(config=...)`` (built by every model's forward when ``use_cache`` is on)
  makes one cache layer per decoder layer from ``get_layer_types_and_kwargs``:
  ``DynamicLayer`` for full attention (and for MLA), ``DynamicSlidingWindowLayer``
  for ``sliding_attention`` with ``sliding_window``, and also for
  ``chunked_attention`` with ``sliding_window = attention_chunk_size``.
* ``DynamicLayer.update`` concatenates: it holds every token, T of them.
* ``DynamicSlidingWindowLayer.update`` concatenates the new tokens to what it held, then
  keeps ``full[:, :, -sliding_window + 1:, :]``: **W - 1 tokens**, a view into the
  concatenated tensor. So after a forward step that added q tokens to a sequence now T long:
  - visible in ``keys`` / ``values``: min(T, W - 1) tokens;
  - storage those views keep alive: min(T - q, W - 1) + q tokens (the whole prompt right
    after a prefill; after a decode step, q = 1, that is min(T, W)).
  The token being computed is attended together with those W - 1, so attention sees W.
* DeepSeek V2/V3 (``models/deepseek_v3/modeling_deepseek_v3.py``,
  ``DeepseekV3Attention.forward``: "Cache read / write is performed while latent KV is
  still compressed") call ``cache.update(kv_nope, k_rot)``: keys are the latent
  [batch, 1, T, kv_lora_rank], values the RoPE key [batch, 1, T, qk_rope_head_dim], the
  same d_L + d_R per token per layer as vLLM's ``MLAAttentionSpec``. (transformers 4.57.6
  still cached the decompressed per-head K and V.)

kvlib's figure is the serving engine's (vLLM 0.33.0): a sliding layer holds min(T, W)
tokens while the step runs (``SlidingWindowSpec``: "the last sliding_window-1 computed
tokens plus the in-flight tokens"), before rounding to blocks. The rule that turns kvlib's
count into transformers' is :func:`rule`; :func:`compare` applies it layer
by layer and reports every disagreement. Nothing is loosened: every count is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from kvlib import parse_config, read_config
from kvlib.models.spec import CacheKind

__all__ = ["Held", "Expected", "build", "steps", "held", "expected", "transformers_tokens",
           "rule", "compare"]

WINDOWED = (CacheKind.SLIDING, CacheKind.CHUNKED)
LAYER_CLASS = {CacheKind.FULL: "DynamicLayer", CacheKind.LATENT: "DynamicLayer",
               CacheKind.SLIDING: "DynamicSlidingWindowLayer",
               CacheKind.CHUNKED: "DynamicSlidingWindowLayer"}


@dataclass(frozen=True)
class Held:
    """One transformers cache layer after a forward step.

    tokens: keys.shape[-2]; elements: keys.numel() + values.numel();
    storage_bytes: bytes of the K and V storages those tensors keep alive;
    shapes: (keys.shape, values.shape), each [batch, heads, tokens, dim].
    """

    layer: int
    cls: str
    window: int | None
    tokens: int
    elements: int
    storage_bytes: int
    element_size: int
    shapes: tuple


@dataclass(frozen=True)
class Expected:
    """kvlib's reading of one layer at T tokens, b bytes per element.

    tokens: ``LayerGroup.cached_tokens(T)``; bytes: ``bytes_per_sequence(T, b) / layers``;
    per_token: elements one token adds to this layer (``bytes_per_token(b) / layers / b``).
    """

    layer: int
    kind: CacheKind
    window: int | None
    tokens: int
    per_token: int
    elements: int
    bytes: int
    sizes: dict


def build(tiny: dict, dtype=torch.float32, seed: int = 0):
    """A tiny random-weight model from a (shrunk) config dict; nothing is downloaded."""
    fields = dict(tiny)
    model_type = fields.pop("model_type")
    torch.manual_seed(seed)
    config = AutoConfig.for_model(model_type, **fields)
    return AutoModelForCausalLM.from_config(config, dtype=dtype).eval()


def steps(model, prompt: int, decode: int, seed: int = 0):
    """Prefill ``prompt`` random tokens, then ``decode`` greedy steps.

    Yields (T, q, cache) after every forward: T tokens so far, q added by that step.
    """
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, prompt), generator=gen)
    with torch.no_grad():
        out = model(ids, use_cache=True)
        yield prompt, prompt, out.cache
        for k in range(1, decode + 1):
            out = model(out.logits[:, -1:].argmax(-1), cache=out.cache, use_cache=True)
            yield prompt + k, 1, out.cache


def held(cache) -> list[Held]:
    """What every layer of a transformers ``DynamicCache`` holds.

    Fails if a layer holds a tensor other than keys, values and the 0-d window scalar
    of ``DynamicSlidingWindowLayer`` (so nothing it allocates goes uncounted).
    """
    out = []
    for i, layer in enumerate(cache.layers):
        tensors = {k: v for k, v in vars(layer).items() if isinstance(v, torch.Tensor)}
        extra = {k: tuple(v.shape) for k, v in tensors.items()
                 if k not in ("keys", "values") and v.numel() > 1}
        assert not extra, f"layer {i} ({type(layer).__name__}) also holds {extra}"
        k, v = layer.keys, layer.values
        assert k.element_size() == v.element_size()
        out.append(Held(
            layer=i, cls=type(layer).__name__, window=getattr(layer, "sliding_window", None),
            tokens=k.shape[-2], elements=k.numel() + v.numel(),
            storage_bytes=k.untyped_storage().nbytes() + v.untyped_storage().nbytes(),
            element_size=k.element_size(), shapes=(tuple(k.shape), tuple(v.shape))))
    return out


def expected(tiny: dict, T: int, b: int) -> list[Expected]:
    """kvlib's per-layer reading of ``tiny`` at T tokens, from its own group functions."""
    reading = parse_config(tiny)
    groups = {(g.kind, g.window): g for g in reading.groups()}
    out = []
    for i, (kind, window) in enumerate(reading.layer_map()):
        g = groups[(kind, window)]
        total, per_token = g.bytes_per_sequence(T, b), g.bytes_per_token(b)
        assert total % g.layers == 0 and per_token % (g.layers * b) == 0
        nbytes = total // g.layers
        out.append(Expected(layer=i, kind=kind, window=window, tokens=g.cached_tokens(T),
                            per_token=per_token // (g.layers * b), elements=nbytes // b,
                            bytes=nbytes, sizes=dict(g.sizes)))
    return out


def transformers_tokens(kind: CacheKind, window: int | None, T: int, q: int) -> tuple[int, int]:
    """(visible, storage) tokens a transformers 5.24 cache layer holds after a step adding q.

    Full and latent: (T, T). Sliding over W, or chunked with chunk W (held as a sliding
    window of W by ``DynamicCache``): visible min(T, W - 1), storage min(T - q, W - 1) + q.
    """
    if kind in WINDOWED:
        return min(T, window - 1), min(T - q, window - 1) + q
    return T, T


def rule(kind: CacheKind, window: int | None, T: int, q: int) -> tuple[int, int]:
    """The stated difference, in tokens, from kvlib's count to transformers': (fewer, more).

    fewer: tokens ``keys`` / ``values`` show fewer than kvlib's count: 1 on a sliding or
    chunked layer once T >= W (W - 1 against W), else 0.
    more: tokens the storage keeps beyond kvlib's count: min(T - q, W - 1) + q - min(T, W);
    0 after a decode step, T - min(T, W) right after a prefill of T tokens.
    A function of the layer kind, W, T and q only, never of kvlib's own count, so a
    wrong kvlib count cannot cancel out.
    """
    if kind not in WINDOWED:
        return 0, 0
    return (1 if T >= window else 0), min(T - q, window - 1) + q - min(T, window)


def _shapes(e: Expected, tokens: int) -> tuple:
    s = e.sizes
    if e.kind is CacheKind.LATENT:  # latent as keys, RoPE key as values, one "head" each
        return (1, 1, tokens, s["d_L"]), (1, 1, tokens, s["d_R"])
    return (1, s["N_g"], tokens, s["d_QK"]), (1, s["N_g"], tokens, s["d_V"])


def compare(tiny: dict, cache, T: int, q: int) -> list[str]:
    """Every disagreement between transformers' cache and kvlib's reading; [] when they agree.

    Per layer: the cache layer class and window (kvlib's kind and W), the tensor shapes
    (kvlib's N_g, d_QK, d_V or d_L, d_R), the visible elements and the storage bytes
    (kvlib's count through :func:`rule`). Then the totals, against
    ``ModelSpec.kv_bytes_per_sequence``.
    """
    got = held(cache)
    b = got[0].element_size if got else 4
    want = expected(tiny, T, b)
    problems = []
    if len(got) != len(want):
        problems.append(f"transformers has {len(got)} cache layers, kvlib reads {len(want)}")
    delta_elements = 0
    for h, e in zip(got, want, strict=False):
        where = f"layer {e.layer} at T={T}"
        if h.cls != LAYER_CLASS[e.kind] or (e.kind in WINDOWED) != (h.window is not None) \
                or (e.kind in WINDOWED and h.window != e.window):
            problems.append(f"{where}: kvlib reads {e.kind} (window {e.window}), transformers "
                            f"holds {h.cls} (window {h.window})")
            continue
        fewer, more = rule(e.kind, h.window, T, q)
        # kvlib's count, transformed by the stated rule.
        want_elements = e.elements - fewer * e.per_token
        want_storage = e.bytes + more * e.per_token * b
        delta_elements += fewer * e.per_token
        if h.shapes != _shapes(e, e.tokens - fewer):
            problems.append(f"{where}: {e.kind} layer, transformers' K, V shapes {h.shapes}; "
                            f"kvlib's {e.tokens} tokens less {fewer} and sizes {e.sizes} give "
                            f"{_shapes(e, e.tokens - fewer)}")
        if h.elements != want_elements:
            problems.append(f"{where}: {e.kind} layer, transformers holds {h.elements} elements; "
                            f"kvlib's {e.elements} ({e.tokens} tokens x {e.per_token}) less "
                            f"{fewer} token(s) by the rule = {want_elements}")
        if h.storage_bytes != want_storage:
            problems.append(f"{where}: {e.kind} layer, transformers' storage is "
                            f"{h.storage_bytes} B; kvlib's {e.bytes} B plus {more} token(s) "
                            f"by the rule = {want_storage} B")
    spec_total = read_config(tiny).kv_bytes_per_sequence(T, b)
    if spec_total != sum(e.bytes for e in want):
        problems.append(f"ModelSpec.kv_bytes_per_sequence({T}) = {spec_total} B is not the sum "
                        f"of kvlib's layers, {sum(e.bytes for e in want)} B")
    held_total = sum(h.elements for h in got) * b
    if not problems and held_total != spec_total - delta_elements * b:
        problems.append(f"total at T={T}: transformers {held_total} B, kvlib {spec_total} B "
                        f"less {delta_elements * b} B by the rule")
    return problems
