"""Notebook 08's three ideas (kvlib.core.compression) and the NumPy compressor
(kvlib.reference.compress), against hand arithmetic and against each other.

Hand numbers: DeepSeek V4's entry as vLLM 0.34.0 writes it is 448 fp8 NoPE bytes + 64 bf16
RoPE values (128 B) + 7 scale bytes + 1 padding byte = 584 B (models/deepseek_v4/
attention.py:837-839); its window is 128 tokens (V4-Flash's and V4-Pro's ``sliding_window``);
an m = 4 layer's compressor keeps 2 x 4 slots of 2 x (2 x 512) fp32 values (compressor.py:
156-158, 297-302). DeepSeek V3.2's latent + RoPE key is 512 + 64 values, its indexer key 128
fp8 bytes + one 4-byte scale (its config; vLLM's indexer cache, 132 B).
"""

from fractions import Fraction

import numpy as np
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.core import compression as C
from kvlib.core.notation import N_KV, N_L, N_W, N_top, b, c_o, d_c, d_I, d_L, d_R, m, r_s
from kvlib.reference.compress import attend, compress, decode_compressed, init_compressor

V4_SIZES = {d_c.symbol: 512, d_R.symbol: 64, N_W.symbol: 128, N_L.symbol: 1}
ENTRY = 448 + 64 * 2 + 448 // 64 + 1


def test_entry_is_584_bytes():
    assert ENTRY == 584
    assert C.ENTRY.subs(V4_SIZES) == ENTRY


def test_one_m4_layer_at_one_million_tokens():
    T = 1 << 20
    hand = 128 * ENTRY + (T // 4) * ENTRY + (2 * 4) * (2 * (2 * 512)) * 4
    assert hand == 74_752 + 153_092_096 + 65_536
    got = C.COMPRESSED_LAYER.subs({**V4_SIZES, m.symbol: 4, c_o.symbol: 2, N_KV.symbol: T})
    assert got == hand


def test_short_sequence_fills_only_part_of_the_window():
    # 100 tokens: 100 window rows, 25 entries, the full compressor window allocated
    got = C.COMPRESSED_LAYER.subs({**V4_SIZES, m.symbol: 4, c_o.symbol: 2, N_KV.symbol: 100})
    assert got == 100 * ENTRY + 25 * ENTRY + 8 * 2048 * 4


def test_per_token_limit_is_entry_over_m():
    assert sp.simplify(C.COMPRESSED_LIMIT - N_L.symbol * C.ENTRY / m.symbol) == 0
    assert C.COMPRESSED_LIMIT.subs({**V4_SIZES, m.symbol: 128}) == Fraction(584, 128)


def test_selection_saves_reads_not_memory():
    v32 = {d_L.symbol: 512, d_R.symbol: 64, d_I.symbol: 128, b.symbol: 2, N_L.symbol: 61,
           N_top.symbol: 2048}
    key, latent = 128 + 4, (512 + 64) * 2
    assert C.SELECTED_MEMORY_RATIO.subs(v32) == Fraction(latent + key, latent)  # grows
    assert C.SELECTED_READS_LIMIT.subs(v32) == Fraction(key, latent)
    T = 131072
    assert C.DENSE_READS.subs({**v32, N_KV.symbol: T}) == 61 * T * latent
    assert C.SELECTED_READS.subs({**v32, N_KV.symbol: T}) == 61 * (T * key + 2048 * latent)
    # below the top-k every latent is read anyway, and the keys come on top
    assert (C.SELECTED_READS - C.DENSE_READS).subs({**v32, N_KV.symbol: 1000}) == 61 * 1000 * key


def test_sharing_divides_memory_exactly_not_reads():
    assert C.SHARED_MEMORY_RATIO == r_s.symbol
    assert C.SHARED_READS_RATIO == 1


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 9), st.integers(1, 12), st.integers(1, 60), st.integers(0, 2**16))
def test_numpy_cache_keeps_what_the_formulas_count(m_, window, T, seed):
    rng = np.random.default_rng(seed)
    w = init_compressor(rng, d_in=6, d_c=4, m=m_)
    cache = decode_compressed(rng.normal(size=(T, 6)), w, window)
    assert cache.history == [(min(t, window), t // m_, t % m_) for t in range(1, T + 1)]
    entries = C.ENTRIES.subs({N_KV.symbol: T, m.symbol: m_, N_L.symbol: 1, d_c.symbol: 512,
                              d_R.symbol: 64})
    assert entries == len(cache.entries) * ENTRY


def test_numpy_entries_are_gated_averages_and_the_window_is_exact():
    rng = np.random.default_rng(3)
    w = init_compressor(rng, d_in=8, d_c=5, m=4)
    X = rng.normal(size=(22, 8))
    cache = decode_compressed(X, w, 6)
    rows, Z = X @ w.W_KV, X @ w.W_Z + np.tile(w.P, (6, 1))[:22]  # rows C, scores Z
    for i, entry in enumerate(cache.entries):
        g = slice(4 * i, 4 * i + 4)
        A = np.exp(Z[g]) / np.exp(Z[g]).sum(axis=0)
        np.testing.assert_allclose(entry, (A * rows[g]).sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(entry, compress(rows[g], Z[g]), rtol=1e-12)
        assert np.all(entry <= rows[g].max(axis=0) + 1e-12)  # an average stays inside its rows
    np.testing.assert_allclose(cache.window, rows[-6:], rtol=1e-12)  # the tokens as they are
    # a summary, not the tokens: attending over it differs from attending over every token
    q = rng.normal(size=5)
    assert not np.allclose(attend(q, np.vstack([cache.entries, cache.window])), attend(q, rows))


def test_before_the_compressor_window_fills_the_state_holds_only_the_tokens_read():
    # 3 tokens into an m = 4 layer: 3 window rows, no entry yet, 3 of the 2 x 4 state slots,
    # each 2 x (2 x 512) fp32 values: as the reader's sliding state group keeps them
    got = C.COMPRESSED_LAYER.subs({**V4_SIZES, m.symbol: 4, c_o.symbol: 2, N_KV.symbol: 3})
    assert got == 3 * ENTRY + 0 + 3 * (2 * 2 * 512) * 4
    from kvlib import load_model

    flash = load_model("deepseek-v4-flash")
    window = next(g for g in flash.groups if g.attention == "V4 entry" and g.window)
    state = next(g for g in flash.groups
                 if g.attention == "Compressor state" and g.window == 8 and g.sizes["d_c"] == 1024)
    reader = window.bytes_per_sequence(3, 1) // window.layers + \
        state.bytes_per_sequence(3, 1) // state.layers
    assert got == reader


def test_the_compressor_state_keeps_c_o_m_rows_c_o_d_c_wide_in_fp32():
    # vLLM 0.34.0 (compressor.py:156-158, 297-302): an m = 4 compressor keeps 2 x 4 = 8 slots, each
    # a projected row and its scores of 2 x 512 = 1,024 fp32 values; its indexer's compressor
    # 2 x 128 = 256; an m = 128 one 128 slots of 512. Named C and Z (S is a session's bytes).
    names = [t.latex for t in C.COMPRESSOR_STATE.tensors]
    assert names == ["X", r"C^{\mathrm{st}}", r"Z^{\mathrm{st}}"]
    state = C.STATE.subs({N_L.symbol: 1, N_KV.symbol: 2**20})
    assert state.subs({m.symbol: 4, c_o.symbol: 2, d_c.symbol: 512}) == 8 * 2 * 1024 * 4
    assert state.subs({m.symbol: 4, c_o.symbol: 2, d_c.symbol: 128}) == 8 * 2 * 256 * 4
    assert state.subs({m.symbol: 128, c_o.symbol: 1, d_c.symbol: 512}) == 128 * 2 * 512 * 4
    assert C.MXFP4_KEY.subs(d_I.symbol, 128) == 128 // 2 + 128 // 32 == 68
