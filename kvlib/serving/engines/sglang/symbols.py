"""The symbols of SGLang 0.5.23's expressions (:mod:`kvlib.serving.engines.sglang`), once.

F_0 free memory before the weights, W the weights, X other memory taken before the pool, F_1
the free memory SGLang measures after the weights (F_0 - W - X), f mem_fraction_static, c the
cell (bytes a token), p the page (tokens), r swa_full_tokens_ratio, T tokens, C the context
(tokens a request), G the GPU memory nvidia-smi reports (MiB), R its reserve (MiB), T_SWA the
sliding-window pool's tokens, w the window, M_mm the multimodal reserve; the cells' N_L, N_g,
d_QK, d_V, d_L, d_R, b and TP are the notation's (kvlib.core.notation), N_kv the config's KV heads.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes

_SYMBOLIC = ("F0", "F1", "W", "X", "f", "c", "c_full", "c_swa", "p", "r", "N_g", "d_k", "d_v",
             "L", "b", "d_L", "d_R", "tp", "N_kv", "T", "C", "G", "R_mib", "T_swa", "w", "B_KV",
             "M_mm", "SYMBOLS", "SYMBOLS_BY_NAME")
__all__ = [*_SYMBOLIC, "symbolic"]


@cache
def symbolic() -> dict:
    """The symbols by their Python names, with ``SYMBOLS`` and ``SYMBOLS_BY_NAME`` (imports
    SymPy: the expressions that use them are built on first use, their code kept in
    :mod:`kvlib.serving.engines.sglang.kept`)."""
    import sympy as sp

    from kvlib.core.notation import by_name

    F0, F1, W, X, f = sp.symbols("F_0 F_1 W_GPU X f", positive=True)
    c, c_full, c_swa, p, r = sp.symbols("c c_full c_swa p r", positive=True)
    N_g, d_k, d_v, L, b, d_L, d_R, tp = (by_name(n).symbol for n in
                                         ("N_g", "d_QK", "d_V", "N_L", "b", "d_L", "d_R", "TP"))
    N_kv = sp.Symbol("N_kv", positive=True)
    T, C, G, R_mib = sp.symbols("T C G R", positive=True)
    SYMBOLS = {"F0": F0, "F1": F1, "W": W, "X": X, "f": f, "c": c, "p": p, "r": r, "T": T,
               "C": C, "tp": tp, "G": G, "R": R_mib}
    T_swa, w = sp.symbols("T_SWA w", positive=True)
    B_KV = sp.Symbol("B_KV")  # the KV budget an expression divides (bytes)
    M_mm = sp.Symbol("M_mm", positive=True)  # the multimodal reserve (bytes)
    # every expression's symbols by name (the book's planner passes values by name)
    SYMBOLS_BY_NAME = {s.name: s for s in (F0, F1, W, X, f, c, c_full, c_swa, p, r, N_kv, d_k,
                                           d_v, L, b, d_L, d_R, tp, T, C, G, R_mib, T_swa, w,
                                           B_KV, M_mm)}
    found = locals()
    return {name: found[name] for name in _SYMBOLIC}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)
