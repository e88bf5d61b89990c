"""Compressed, shared and selected caches (notebook 08), derived by SymPy from the tables.

Three ideas of 2025-2026 change what a layer keeps. Each is an expression built from the
tables' own rows (:mod:`kvlib.core.state_tables`, :mod:`kvlib.core.tables`); no byte count is
typed here. All are bytes of one sequence of N_KV tokens (``b`` = 1 where the table already
counts bytes):

* **compressed** (DeepSeek V4, "DeepSeek-V4: Towards Highly Efficient Million-Token Context
  Intelligence", DeepSeek-AI 2026, as vLLM 0.34.0 stores it): a layer with compression ratio m
  keeps its last N_W tokens as they are (the window), one entry per m tokens
  (floor(N_KV / m), :func:`kvlib.core.formulas.compressed`), and its compressor's running
  state (:data:`COMPRESSOR_STATE`): min(N_KV, c_o m) slots, each a projected row C and its
  gate scores Z of c_o x d_c fp32 values (``vllm/models/deepseek_v4/compressor.py:156-158,
  297-302``): :data:`WINDOW`, :data:`ENTRIES`, :data:`STATE`, :data:`COMPRESSED_LAYER`. Past
  the window, per token it tends to (entry bytes) / m: :data:`COMPRESSED_LIMIT`.
* **selected** (DeepSeek V3.2's lightning indexer, arXiv:2512.02556; V4's m = 4 layers): the
  indexer adds one small key per token, so memory grows (:data:`SELECTED_MEMORY_RATIO`), and a
  decode step reads every indexer key but only N_top entries (:data:`DENSE_READS`,
  :data:`SELECTED_READS`); their ratio tends to (indexer key bytes) / (entry bytes):
  :data:`SELECTED_READS_LIMIT`.
* **shared** (Gemma 3n and Gemma 4's ``num_kv_shared_layers``; transformers 5.25.0's
  ``kv_source_layers``): a layer that reads another layer's cache stores none. When each stored
  cache is read by r_s layers, the model stores N_L / r_s caches: memory divides by r_s exactly
  (:data:`SHARED_MEMORY_RATIO`), while a decode step still reads one cache per layer
  (:data:`SHARED_READS_RATIO` = 1).

The expressions are derived on first use (PEP 562's module ``__getattr__``), not at import: the
config readers import :func:`overlap` from here, and a command that only reads a config does not
pay for SymPy.
"""

from __future__ import annotations

# derived by SymPy on first access (:func:`__getattr__`)
_DERIVED = ("ENTRY", "WINDOW", "ENTRIES", "COMPRESSOR_STATE", "STATE", "COMPRESSED_LAYER",
           "PAST_WINDOW", "COMPRESSED_LIMIT", "DENSE_READS", "SELECTED_READS",
           "SELECTED_READS_LIMIT",
           "SELECTED_MEMORY_RATIO", "MXFP4_VALUES", "MXFP4_SCALES", "MXFP4_KEY",
           "SHARED", "SHARED_MEMORY_RATIO", "SHARED_READS_RATIO")
__all__ = [*_DERIVED, "per_token_limit", "overlap"]


def overlap(m: int) -> int:
    """c_o, the overlap of a DeepSeek V4 compressor of ratio ``m``: its windows overlap (each
    entry is made from 2 m tokens, the state twice as wide) for m = 4 only. vLLM 0.34.0,
    ``vllm/models/deepseek_v4/compressor.py:247-248``: ``self.overlap = compress_ratio == 4``,
    ``self.coff = 1 + self.overlap``."""
    return 2 if m == 4 else 1


def per_token_limit(expr):
    """lim_{N_KV -> oo} expr / N_KV: what one more token costs at long context (bytes)."""
    import sympy as sp

    from kvlib.core.notation import N_KV

    T = N_KV.symbol
    return sp.limit(expr / T, T, sp.oo)


def _derive() -> dict:
    """Every expression of this module, derived by SymPy from the tables. Run once, on the first
    access to one of them (:func:`__getattr__`), so that importing this module for
    :func:`overlap` (the config readers, the catalog) does not import SymPy."""
    import sympy as sp

    from kvlib.core.formulas import GQA, INDEXER, MLA_ROPE, V4, compressed
    from kvlib.core.notation import N_KV, N_L, N_W, N_top, b, c_o, d_c, d_I, d_in, m, r_s
    from kvlib.core.tables import Role, TensorTable, _t

    T, W, L = N_KV.symbol, N_W.symbol, N_L.symbol
    # ------------------------------------------------------------------ compressed (DeepSeek V4)
    ENTRY = V4.symbolic.elements_per_token_layer  # bytes of one fp8_ds_mla entry (its table: b = 1)
    WINDOW = V4.symbolic.bytes_per_sequence.subs({b.symbol: 1, T: sp.Min(T, W)})
    ENTRIES = compressed(V4).subs(b.symbol, 1)
    # The compressor's running state, as vLLM 0.34.0 keeps it (compressor.py:156-158, the window;
    # 297-302, state_dim 2 x coff x head_dim in float32): a sliding window of c_o x m slots (no more
    # than the tokens read), each slot one token's projected row C (c_o x d_c values: the m = 4
    # compressor's overlapping groups make it twice as wide) and its gate scores Z, in fp32. The
    # table counts bytes (4 per fp32 value), as the entry's does. The indexer's own compressor has
    # the same shape with index_head_dim (d_I = 128) in place of d_c: c_o x d_I = 256 values.
    _SLOTS = sp.Min(T, c_o.symbol * m.symbol)
    COMPRESSOR_STATE = TensorTable(
        "Compressor state",
        "The running state of one DeepSeek V4 compressor, in bytes: for each of the last "
        "min(N_KV, c_o m) tokens, its projected row and its gate scores, c_o d_c fp32 values each.",
        (
            _t("X", "X", T, d_in.symbol, 1, Role.ACTIVATION, note="layer input"),
            _t("C^st", r"C^{\mathrm{st}}", _SLOTS, 4 * c_o.symbol * d_c.symbol, 1, Role.CACHE,
               note="projected rows C, fp32 (4 bytes a value)"),
            _t("Z^st", r"Z^{\mathrm{st}}", _SLOTS, 4 * c_o.symbol * d_c.symbol, 1, Role.CACHE,
               note="their gate scores Z, fp32"),
        ),
    )
    STATE = L * sp.Add(*(t.elements for t in COMPRESSOR_STATE.with_role(Role.CACHE)))
    COMPRESSED_LAYER = WINDOW + ENTRIES + STATE
    # past the window and the state's slots (N_KV >= N_W, c_o m) both are constants, which a limit
    # can handle
    PAST_WINDOW = COMPRESSED_LAYER.subs({sp.Min(T, W): W, _SLOTS: c_o.symbol * m.symbol})


    COMPRESSED_LIMIT = per_token_limit(PAST_WINDOW)

    # ------------------------------------------------------------------ selected (an indexer)
    _LATENT = MLA_ROPE.symbolic.bytes_per_token  # one token's latent + RoPE key, all N_L layers
    _KEY = INDEXER.symbolic.bytes_per_token.subs(b.symbol, 1)  # one token's indexer keys
    DENSE_READS = T * _LATENT  # a dense decode step reads every cached latent
    SELECTED_READS = T * _KEY + sp.Min(T, N_top.symbol) * _LATENT
    SELECTED_READS_LIMIT = per_token_limit(SELECTED_READS.subs(sp.Min(T, N_top.symbol),
                                                               N_top.symbol)) / (_LATENT)
    SELECTED_MEMORY_RATIO = sp.cancel((_LATENT + _KEY) / _LATENT)
    # vLLM 0.34.0 can keep DeepSeek V4's indexer keys in MXFP4 instead (attention_config.
    # indexer_kv_dtype = "mxfp4", v1/attention/backends/mla/indexer.py:67-75): two 4-bit values a
    # byte and one UE8M0 scale byte per 32 values (models/deepseek_v4/attention.py:977-980), so one
    # key is d_I / 2 + d_I / 32 bytes (68 for d_I = 128, against 132 in fp8).
    # bytes of one key's values, scales
    MXFP4_VALUES, MXFP4_SCALES = d_I.symbol / 2, d_I.symbol / 32
    MXFP4_KEY = MXFP4_VALUES + MXFP4_SCALES

    # ------------------------------------------------------------------ shared (cross-layer KV)
    # N_L layers, each stored cache read by r_s of them: N_L / r_s caches are stored
    SHARED = GQA.symbolic.bytes_per_sequence.subs(L, L / r_s.symbol)
    SHARED_MEMORY_RATIO = sp.cancel(GQA.symbolic.bytes_per_sequence / SHARED)
    # a decode step: every layer attends over one whole cache, its own or the one it reads; shared,
    # each of the N_L / r_s stored caches is read by r_s layers
    SHARED_READS_RATIO = sp.cancel(GQA.symbolic.bytes_per_sequence / (SHARED * r_s.symbol))
    return {name: value for name, value in locals().items() if name in _DERIVED}


def __getattr__(name: str):
    # PEP 562: reached only for a name not yet in the module, i.e. before the first derivation.
    if name in _DERIVED:
        globals().update(_derive())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
