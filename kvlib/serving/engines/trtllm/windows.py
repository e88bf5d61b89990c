"""TensorRT-LLM's sliding windows: which pool a windowed model gets, and how the budget is split
among window sizes when it gets one pool per window (VSWA). Bytes per GPU (TP rank).

* **Full length** (the default, both releases kvlib plans): the V1 ``KVCacheManager`` takes its
  windows from ``kv_cache_config.max_attention_window`` only; left unset (its default) the
  manager has one window, ``max_seq_len``, so every layer, sliding or not, holds every token
  (``KVCacheManager.__init__``: "if kv_cache_config.max_attention_window is None: Use max_seq_len
  as default", resource_manager.py@001541bad83b:284-286). At _util.py@000439672005 the
  windows are derived from a config's ``layer_types`` only for ``KVCacheManagerV2``
  (``_create_kv_cache_manager``: ``if (kv_cache_config.max_attention_window is None and not
  is_draft and issubclass(kv_cache_manager_cls, KVCacheManagerV2))``,
  _util.py@000439672005:2517-2518), and V1 is the manager unless ``use_kv_cache_manager_v2`` is
  True or the model is a Gemma 4 hybrid (``_non_hybrid_kv_cache_manager_cls``,
  _util.py@000439672005:100-105). TensorRT-LLM 1.1.0rc3's logs show the same: gpt-oss-20b on
  a DGX Spark, "Allocated 0.19 GiB for max tokens in paged KV cache (4128)" = 4,128 tokens x
  24 layers x 2 x 8 x 64 x 2 B; gpt-oss-120b 5.95 GiB (86,720 x 36 layers x 2,048 B). The cell
  is then ``get_cache_size_per_token`` over every layer
  (:mod:`~kvlib.serving.engines.trtllm.pools`), and a window saves nothing.
* **VSWA** (``max_attention_window`` set to the per-layer windows, a repeating pattern,
  each clamped to max_seq_len): ``KVCacheManager.calculate_max_num_blocks_for_vswa``
  (resource_manager.py@001541bad83b:1259-1390) gives each distinct window size an
  equal share of the budget (``window_size_shares = [1.0 / len(window_size_to_layers)]``, unless
  ``TRTLLM_WINDOW_SIZE_SHARES`` is set), and each window's blocks are
  ``int(pool x share / cell_w // tokens_per_block)``, rounded down, with cell_w the window's
  layers x ceil(N_kv / TP) x 2 x head_size x b (``calculate_cache_size_per_token``; the heads per
  rank rounded up, ``(num_kv_heads + tp_size - 1) // tp_size`` in ``__init__``).
  ``adjust_window_sizes_for_vswa`` shrinks windows only when one sequence of every window does
  not fit the pool; kvlib refuses that case by name rather than trace it.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import kv_heads
from kvlib.serving.engines.trtllm import kept

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("CELL_W", "BLOCKS_W", "SESSIONS_W")
_SYMBOLIC = ("L_W", "N_W", "W", "N_B", *KEPT)
__all__ = [*_SYMBOLIC, "WindowPool", "window_layers", "vswa_pools", "vswa_sessions", "KEPT",
           "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions and this module's symbols by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.trtllm.symbols import B_KV, C, N_kv, S_max, b, d, n, tp

    L_W = sp.Symbol("L_w", positive=True, integer=True)  # layers with window w
    N_W = sp.Symbol("N_w", positive=True, integer=True)  # distinct window sizes
    W = sp.Symbol("w", positive=True, integer=True)  # the window, clamped to max_seq_len
    CELL_W = L_W * sp.ceiling(N_kv / tp) * 2 * d * b  # calculate_cache_size_per_token x b
    BLOCKS_W = sp.floor(B_KV / (N_W * CELL_W * n))  # int(pool / N_w / cell_w // n)
    N_B = sp.Symbol("N_b", positive=True, integer=True)  # one window's blocks
    # requests of C tokens one window's pool holds: ceil(min(C, w) / n) blocks each (kvlib's
    # count, assumed: the scheduler's per-window need is not traced)
    SESSIONS_W = sp.Min(S_max, sp.floor(N_B / sp.ceiling(sp.Min(C, W) / n)))
    found = locals()
    return {name: found[name] for name in _SYMBOLIC}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


class WindowPool(tuple):
    """(window, layers, cell_w, blocks): one VSWA pool."""

    __slots__ = ()

    def __new__(cls, window: int, layers: int, cell: int, blocks: int):
        return super().__new__(cls, (window, layers, cell, blocks))

    window = property(lambda s: s[0])
    layers = property(lambda s: s[1])
    cell = property(lambda s: s[2])
    blocks = property(lambda s: s[3])


def window_layers(model, context: int) -> dict[int, tuple[int, int, int]]:
    """Window (clamped to ``context``, TensorRT-LLM's max_seq_len) -> (layers, KV heads,
    head_dim), for the attention groups of ``model``; one entry means no VSWA."""
    out: dict[int, list] = {}
    for g in model.groups:
        if g.kind not in (CacheKind.FULL, CacheKind.SLIDING):
            continue
        w = context if g.kind == CacheKind.FULL else min(context, g.window)
        heads, dim = kv_heads(g), g.sizes["d_QK"]
        if w in out and (out[w][1], out[w][2]) != (heads, dim):
            raise ValueError(f"{model.name}: layers of window {w} differ in KV heads or "
                             "head_dim; TensorRT-LLM's VSWA pool is traced for one shape")
        out.setdefault(w, [0, heads, dim])[0] += g.layers
    return {w: tuple(v) for w, v in sorted(out.items())}


def vswa_pools(model, context: int, budget: int, tp_: int, b_: int, block: int
               ) -> list[WindowPool]:
    """The per-window pools ``calculate_max_num_blocks_for_vswa`` allocates from ``budget``
    (max_gpu_total_bytes), ascending window; ValueError where one sequence of every window
    does not fit (``adjust_window_sizes_for_vswa``'s case, not traced)."""
    groups = window_layers(model, context)
    cells = {w: kept.evaluate("windows.CELL_W", L_w=layers, N_kv=heads, TP=tp_, d_QK=dim, b=b_)
             for w, (layers, heads, dim) in groups.items()}
    required = sum(w * cells[w] for w in groups)
    if required >= budget:
        raise ValueError(f"{model.name}: one sequence of every window needs {required:,} B, "
                         f"not below the {budget:,} B pool; TensorRT-LLM then shrinks the "
                         "windows (adjust_window_sizes_for_vswa), which kvlib has not traced")
    return [WindowPool(w, groups[w][0], cells[w],
                       kept.evaluate("windows.BLOCKS_W", B_KV=budget, N_w=len(groups),
                                     L_w=groups[w][0], N_kv=groups[w][1], TP=tp_,
                                     d_QK=groups[w][2], b=b_, n=block))
            for w in groups]


def vswa_sessions(pools: list[WindowPool], context: int, block: int, max_batch_size: int
                  ) -> int:
    """``SESSIONS_W`` for each window's pool; the smallest (every layer holds each request)."""
    return min(kept.evaluate("windows.SESSIONS_W", N_b=p.blocks, C=context, w=p.window, n=block,
                             S_max=max_batch_size) for p in pools)
