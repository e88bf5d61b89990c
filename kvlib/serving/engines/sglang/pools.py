"""SGLang 0.5.23's pools: the cell (bytes a token takes, ``CELL_MHA``, ``CELL_MLA``), the
tokens a budget holds in whole pages (``TOKENS``; with a sliding-window pool ``FULL_TOKENS_SWA``
and ``SWA_TOKENS``), the K buffer it logs (``K_SIZE``), and :func:`pool`, which evaluates them
for one budget. Bytes per GPU (TP rank); sources cited in :mod:`kvlib.serving.engines.sglang`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.models.spec import STATEFUL, CacheKind
from kvlib.serving.engines.common import arch, kv_heads
from kvlib.serving.engines.sglang import dsv4, kept
from kvlib.serving.engines.sglang.defaults import HYBRID_SWA_ARCHS, SWA_FULL_TOKENS_RATIO

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("HEADS_PER_RANK", "CELL_MHA", "CELL_MLA", "TOKENS", "CELL_SWA", "FULL_TOKENS_SWA",
        "SWA_TOKENS", "K_SIZE")
_SYMBOLIC = KEPT
__all__ = [*KEPT, "SGLangPool", "k_size_bytes", "pool", "sglang_groups", "evaluate_cell", "KEPT",
           "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.core.formulas import GQA, MLA_ROPE
    from kvlib.serving.engines.sglang.symbols import (
        B_KV,
        N_g,
        N_kv,
        T,
        c,
        c_full,
        c_swa,
        d_v,
        p,
        r,
        tp,
    )

    heads_per_rank = sp.Max(1, sp.floor(N_kv / tp))  # get_num_kv_heads
    cell_mha = GQA.symbolic.bytes_per_token.subs(N_g, heads_per_rank)
    cell_swa = c_full + r * c_swa
    return {
        "HEADS_PER_RANK": heads_per_rank,
        "CELL_MHA": cell_mha,
        "CELL_MLA": MLA_ROPE.symbolic.bytes_per_token,
        "TOKENS": sp.floor(sp.floor(B_KV / c) / p) * p,
        "CELL_SWA": cell_swa,
        "FULL_TOKENS_SWA": sp.floor(sp.floor(B_KV / cell_swa) / p) * p,
        "SWA_TOKENS": sp.floor(sp.floor(T * r) / p) * p,
        # the K buffer: T + one page rows of the cell's K
        "K_SIZE": (T + p) * cell_mha.subs(d_v, 0),
    }


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def evaluate_cell(key: str, **values) -> int:
    """The cell expression ``key`` ("CELL_MHA", "CELL_MLA") at ``values``, by its kept code
    (:func:`kvlib.serving.engines.common.cell_bytes`)."""
    return kept.evaluate(f"pools.{key}", **values)


@dataclass(frozen=True)
class SGLangPool:
    """What SGLang 0.5.23 allocates on one GPU (TP rank); bytes exact."""

    kv_budget: int
    cell: int  # bytes per token of the (full) pool: every layer the pool holds
    page: int
    tokens: int  # max_total_num_tokens: the "#tokens" it logs
    max_running_requests: int
    sessions: int  # requests of `context` tokens that fit at once
    context: int
    mem_fraction_static: Fraction
    swa_cell: int | None = None  # bytes per token of the sliding-window pool, if any
    swa_tokens: int | None = None
    terms: tuple = ()  # (label, value, source) rows for the report
    notes: tuple[str, ...] = field(default_factory=tuple)


def k_size_bytes(tokens_: int, page: int, kv_heads: int, head_dim: int, layers: int,
                 b: int, tp: int = 1) -> int:
    """``K_SIZE``, the K buffer SGLang logs: (N + page) rows x max(1, kv_heads // tp) x
    head_dim x layers x b (mem_cache/memory_pool.py:2574-2578)."""
    return kept.evaluate("pools.K_SIZE", T=tokens_, p=page, N_kv=kv_heads, TP=tp, d_QK=head_dim,
                         N_L=layers, b=b)


def pool(*, kind: str, budget: int, page: int, context: int, fraction, full_cell: int,
         swa_cell: int = 0, window: int | None = None, ratio=SWA_FULL_TOKENS_RATIO,
         terms=(), notes=()) -> SGLangPool:
    """The pools for a budget: kind "single" (one pool, every layer) or "hybrid_swa"; every
    count is the module's expression, evaluated exactly."""
    budget_in = max(0, budget)
    ratio = Fraction(ratio)
    if kind == "single":
        n = kept.evaluate("pools.TOKENS", B_KV=budget_in, c=full_cell, p=page)
        swa_n = None
    else:
        n = kept.evaluate("pools.FULL_TOKENS_SWA", B_KV=budget_in, c_full=full_cell,
                          c_swa=swa_cell, r=ratio, p=page)
        swa_n = kept.evaluate("pools.SWA_TOKENS", T=n, r=ratio, p=page)
    running = kept.evaluate("sessions.MAX_RUNNING", T=n, C=context)
    if swa_n is not None and window is not None:
        # the admission floor: min(tokens, window) + one page per request (pool_configurator.py:
        # 198-216)
        sessions = kept.evaluate("sessions.SESSIONS_SWA", T=n, C=context, p=page, T_SWA=swa_n,
                                 w=window)
    else:
        sessions = kept.evaluate("sessions.SESSIONS", T=n, C=context, p=page)
    return SGLangPool(kv_budget=budget, cell=full_cell, page=page, tokens=n,
                      max_running_requests=running, sessions=sessions, context=context,
                      mem_fraction_static=Fraction(fraction),
                      swa_cell=swa_cell if swa_n is not None else None, swa_tokens=swa_n,
                      terms=tuple(terms), notes=tuple(notes))


def cell_of(g) -> tuple[str, dict]:
    """The cell expression's name ("CELL_MLA" for a latent group, else "CELL_MHA") and its
    values by symbol name, less TP and b, for the layer group ``g``."""
    if g.kind == CacheKind.LATENT:
        return "CELL_MLA", {"d_L": g.sizes["d_L"], "d_R": g.sizes.get("d_R", 0), "N_L": g.layers}
    return "CELL_MHA", {"N_kv": kv_heads(g), "d_QK": g.sizes["d_QK"], "d_V": g.sizes["d_V"],
                        "N_L": g.layers}


def sglang_groups(model, config: dict | None) -> list[tuple]:
    """Per layer group of ``model``: (group, the cell expression's name in
    :mod:`~kvlib.serving.engines.sglang.pools` ("CELL_MLA" or "CELL_MHA"), its values by symbol name
    less TP and b, the pool: "swa" for the sliding layers of SGLang's hybrid-SWA
    architectures, else "full"); state layers (Mamba, linear attention) and layers that keep no
    cache are left out (refuse_model has refused them where SGLang's rule is not traced).
    DeepSeek V4, whose pools are not layer groups (:mod:`~kvlib.serving.engines.sglang.dsv4`):
    its sliding-window entry group alone, keyed "dsv4.SWA_TOKEN", for its window."""
    if dsv4.is_v4(config):
        return [(g, "dsv4.SWA_TOKEN", {}, "swa") for g in model.groups
                if g.kind == CacheKind.SLIDING and g.attention == "V4 entry"]
    hybrid = arch(config) in HYBRID_SWA_ARCHS
    out = []
    for g in model.groups:
        if g.kind in STATEFUL or g.kind in (CacheKind.NONE, CacheKind.INDEXER):
            continue  # the state pool's, no cache, or the DSA indexer's (sglang.indexer)
        key, values = cell_of(g)
        sliding = g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED)
        out.append((g, key, values, "swa" if hybrid and sliding else "full"))
    return out
