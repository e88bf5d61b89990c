"""The symbols of TensorRT-LLM's expressions (:mod:`kvlib.serving.engines.trtllm`), once.

M the CUDA total (bytes), W the weights, O_T the rest of the profiling peak, phi
free_gpu_memory_fraction, c the cell (bytes a token), B_KV the budget, n tokens a block, T
tokens, C the context, S_max max_batch_size; the cells' N_L, N_g, d_QK (TensorRT-LLM's one
head_dim d), d_V, b, d_L, d_R and TP are the notation's (kvlib.core.notation); N_kv the
config's num_key_value_heads.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes

_SYMBOLIC = ("M", "W", "O", "phi", "N_g", "d", "d_V", "L", "b", "tp", "d_L", "d_R", "N_kv", "c",
             "B_KV", "n", "T", "C", "S_max", "SYMBOLS", "SYMBOLS_BY_NAME")
__all__ = [*_SYMBOLIC, "symbolic"]


@cache
def symbolic() -> dict:
    """The symbols by their Python names, with ``SYMBOLS`` and ``SYMBOLS_BY_NAME`` (imports
    SymPy: the expressions that use them are built on first use, their code kept in
    :mod:`kvlib.serving.engines.trtllm.kept`)."""
    import sympy as sp

    from kvlib.core.notation import by_name

    M, W, O, phi = sp.symbols("M W_GPU O_T phi", positive=True)
    N_g, d, d_V, L, b, tp, d_L, d_R = (by_name(s).symbol for s in
                                       ("N_g", "d_QK", "d_V", "N_L", "b", "TP", "d_L", "d_R"))
    N_kv = sp.Symbol("N_kv", positive=True)
    c, B_KV, n = sp.symbols("c B_KV n", positive=True)
    SYMBOLS = {"M": M, "W": W, "O": O, "phi": phi, "c": c, "n": n}
    T, C, S_max = sp.symbols("T C S_max", positive=True)
    # every expression's symbols by name (the book's planner passes values by name)
    SYMBOLS_BY_NAME = {s.name: s for s in (M, W, O, phi, N_kv, d, L, b, tp, d_L, d_R, c, B_KV,
                                           n, T, C, S_max)}
    found = locals()
    return {name: found[name] for name in _SYMBOLIC}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)
