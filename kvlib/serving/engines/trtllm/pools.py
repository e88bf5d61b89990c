"""TensorRT-LLM's pool: the cell (bytes a token, ``CELL_MHA``, ``CELL_MLA``, from
``get_cache_size_per_token``), max_tokens = budget // cell (``MAX_TOKENS``), allocated in
whole blocks (``BLOCKS``, ``TOKENS``), and :func:`pool`, which evaluates them for one budget.
Bytes per GPU (TP rank); sources in :mod:`kvlib.serving.engines.trtllm`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import kv_heads, text_config
from kvlib.serving.engines.trtllm import kept
from kvlib.serving.engines.trtllm.defaults import DEFAULT_FRACTION, MAX_BATCH_SIZE, TOKENS_PER_BLOCK

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("HEADS_PER_RANK", "CELL_MHA", "CELL_MLA", "MAX_TOKENS", "BLOCKS", "TOKENS")
_SYMBOLIC = KEPT
__all__ = [*KEPT, "TRTLLMPool", "tokens", "pool", "trtllm_groups", "evaluate_cell", "KEPT",
           "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.core.formulas import GQA, MLA_ROPE
    from kvlib.serving.engines.trtllm.symbols import B_KV, N_g, N_kv, c, d, d_V, n, tp

    heads_per_rank = sp.floor(d * N_kv / tp) / d  # head_dim x heads // TP, in heads
    max_tokens = sp.floor(B_KV / c)
    blocks = sp.ceiling(max_tokens / n)
    return {
        "HEADS_PER_RANK": heads_per_rank,
        "CELL_MHA": GQA.symbolic.bytes_per_token.subs(d_V, d).subs(N_g, heads_per_rank),
        "CELL_MLA": MLA_ROPE.symbolic.bytes_per_token,  # kv_factor 1, not split by TP
        "MAX_TOKENS": max_tokens,
        "BLOCKS": blocks,
        "TOKENS": blocks * n,
    }


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def evaluate_cell(key: str, **values) -> int:
    """The cell expression ``key`` ("CELL_MHA", "CELL_MLA") at ``values``, by its kept code
    (:func:`kvlib.serving.engines.common.cell_bytes`)."""
    return kept.evaluate(f"pools.{key}", **values)


@dataclass(frozen=True)
class TRTLLMPool:
    """What TensorRT-LLM allocates on one GPU (TP rank); bytes exact."""

    kv_budget: int
    cell: int
    block: int
    max_tokens: int  # budget // cell
    tokens: int  # whole blocks: the count in "(N)" of its [MemUsageChange] line
    blocks: int
    sessions: int
    context: int
    fraction: Fraction
    terms: tuple = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def tokens(budget: int, cell: int, block: int = TOKENS_PER_BLOCK) -> tuple[int, int, int]:
    """(``MAX_TOKENS``, ``BLOCKS``, ``TOKENS``: tokens in whole blocks) for a budget (none
    below 0)."""
    values = {"B_KV": max(0, budget), "c": cell}
    return (kept.evaluate("pools.MAX_TOKENS", **values),
            kept.evaluate("pools.BLOCKS", **values, n=block),
            kept.evaluate("pools.TOKENS", **values, n=block))


def pool(*, budget: int, cell: int, context: int, block: int = TOKENS_PER_BLOCK,
         fraction=DEFAULT_FRACTION, max_batch_size: int = MAX_BATCH_SIZE, terms=(),
         notes=()) -> TRTLLMPool:
    max_tokens, blocks, n_ = tokens(budget, cell, block)
    sessions = kept.evaluate("sessions.SESSIONS", T=n_, C=context, n=block,
                             S_max=max_batch_size)
    return TRTLLMPool(kv_budget=budget, cell=cell, block=block, max_tokens=max_tokens,
                      tokens=n_, blocks=blocks, sessions=sessions, context=context,
                      fraction=Fraction(fraction), terms=tuple(terms), notes=tuple(notes))


def trtllm_groups(model, config: dict | None) -> list[tuple[str, dict]]:
    """Per layer group: (the cell expression's name in :mod:`~kvlib.serving.engines.trtllm.pools`,
    its values by symbol name less TP and b); ValueError for the heads and head sizes
    TensorRT-LLM's cell is not traced for (checked after the KV dtype, as it plans)."""
    text = text_config(config)
    out = []
    for g in model.groups:
        if g.kind in (CacheKind.MAMBA, CacheKind.NONE):
            continue  # a Nemotron-H's state and MLP layers: no KV cache (mamba.py)
        if g.kind == CacheKind.LATENT:
            out.append(("CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                     "d_R": g.sizes.get("d_R", 0)}))
            continue
        heads = kv_heads(g)
        if "num_key_value_heads" not in text and heads != g.sizes.get("N_h", heads):
            raise ValueError(f"{model.name}: its config has no num_key_value_heads, so "
                             "TensorRT-LLM reads num_attention_heads for the cache, which "
                             "kvlib has not traced against this model's KV heads")
        if g.sizes["d_QK"] != g.sizes["d_V"]:
            raise ValueError(f"{model.name}: TensorRT-LLM's cell has one head_dim; "
                             "K and V head sizes differ here")
        out.append(("CELL_MHA", {"N_L": g.layers, "d_QK": g.sizes["d_QK"], "N_kv": heads}))
    return out
