"""MLA (Table 2) and decoupled RoPE: derived cache formulas against DeepSeek V2's published
config and hand arithmetic; the NumPy reference's paths against each other; cache arrays
against the formulas; executed multiply-adds against the symbolic decode costs."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.core.decode_cost import mla_path
from kvlib.core.formulas import GQA, KINDS, MHA, MLA, MLA_ROPE, Attention, ratio
from kvlib.core.notation import N_KV, N_g, N_h, d_in, d_L, d_Lq, d_QK, d_R, d_V
from kvlib.core.tables import TABLE_2, TABLE_2_ROPE, Role, query_compressed
from kvlib.reference.mla import absorb, decode, init_mla_weights
from kvlib.reference.rope import rotation_matrix

# deepseek-ai/DeepSeek-V2 config.json: num_hidden_layers 60, num_attention_heads 128,
# kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128; bf16 (2 B).
DSV2 = dict(N_L=60, N_h=128, d_L=512, d_R=64, d_QK=128, d_V=128, b=2)


# ---------------------------------------------------------------- tables -> formulas


def test_table_2_caches_only_the_latent_and_the_rope_table_adds_one_shared_key():
    assert {t.name for t in TABLE_2.with_role(Role.CACHE)} == {"L"}
    assert {t.name for t in TABLE_2_ROPE.with_role(Role.CACHE)} == {"L", "K^R"}
    assert TABLE_2_ROPE["K^R"].copies == 1 and TABLE_2_ROPE["W^QR_h"].copies == N_h.symbol
    assert TABLE_2_ROPE["W^KR"].rows == d_in.symbol and TABLE_2_ROPE["W^KR"].cols == d_R.symbol
    # K_h and V_h are formed from L, never kept
    assert TABLE_2["K_h"].role is Role.ACTIVATION and TABLE_2["V_h"].role is Role.ACTIVATION


def test_mla_caches_d_L_and_mla_rope_d_L_plus_d_R_per_token_per_layer():
    assert MLA.symbolic.elements_per_token_layer == d_L.symbol
    assert sp.expand(MLA_ROPE.symbolic.elements_per_token_layer - d_L.symbol - d_R.symbol) == 0
    assert KINDS["MLA"] is MLA and KINDS["MLA+RoPE"] is MLA_ROPE
    assert {"MHA", "GQA", "MQA"} <= set(KINDS)


def test_query_compression_changes_weights_but_no_cache_term():
    for table in (TABLE_2, TABLE_2_ROPE):
        plain, compressed = Attention("p", table), Attention("c", query_compressed(table))
        assert compressed.symbolic.elements_per_token_layer == \
            plain.symbolic.elements_per_token_layer
        assert [t.name for t in compressed.table.with_role(Role.CACHE)] == \
            [t.name for t in table.with_role(Role.CACHE)]
    # weights: W^Q_h (N_h d_in d_QK) -> W^DQ (d_in d_Lq) + W^UQ_h (N_h d_Lq d_QK), by hand
    plain, comp = Attention("p", TABLE_2), Attention("c", query_compressed(TABLE_2))
    dw = comp.symbolic.weight_elements_per_layer - plain.symbolic.weight_elements_per_layer
    hand = (d_in.symbol * d_Lq.symbol + N_h.symbol * d_Lq.symbol * d_QK.symbol
            - N_h.symbol * d_in.symbol * d_QK.symbol)
    assert sp.expand(dw - hand) == 0


def test_ratio_to_mha_is_heads_times_key_plus_value_over_latent():
    f = ratio(MHA, MLA)
    assert sp.simplify(f.expr - N_h.symbol * (d_QK.symbol + d_V.symbol) / d_L.symbol) == 0
    assert sp.simplify(ratio(GQA, MLA).expr
                       - N_g.symbol * (d_QK.symbol + d_V.symbol) / d_L.symbol) == 0
    # DeepSeek V2 decompressed per head: d_QK = 128 + 64, d_V = 128 -> 128 * 320 / 512
    assert f(N_h=128, d_QK=192, d_V=128, d_L=512) == 128 * (192 + 128) // 512 == 80


def test_deepseek_v2_bytes_per_token_by_hand():
    mla = MLA.bytes_per_token(N_L=60, d_L=512, b=2)
    mla_rope = MLA_ROPE.bytes_per_token(N_L=60, d_L=512, d_R=64, b=2)
    expanded = MHA.bytes_per_token(N_L=60, N_h=128, d_QK=128 + 64, d_V=128, b=2)
    assert mla == 60 * 512 * 2 == 61_440 == 60 * 1024  # blog post A's 60 KiB
    assert mla_rope == 60 * (512 + 64) * 2 == 69_120  # 67.5 KiB
    assert Fraction(mla_rope, 1024) == Fraction(135, 2)
    assert expanded == 60 * 128 * (192 + 128) * 2 == 4_915_200
    assert expanded // mla == 80 and Fraction(mla_rope - mla, mla) == Fraction(1, 8)  # +12.5%


def test_deepseek_v2_at_128k_tokens_by_hand():
    at = dict(N_KV=131_072)
    mla = MLA.bytes_per_sequence(N_L=60, d_L=512, b=2, **at)
    mla_rope = MLA_ROPE.bytes_per_sequence(N_L=60, d_L=512, d_R=64, b=2, **at)
    assert mla == 61_440 * 131_072 == 15 * 2**29  # 7.5 GiB: blog post A's number
    assert Fraction(mla, 1024**3) == Fraction(15, 2)
    assert Fraction(mla_rope, 1024**3) == Fraction(135, 16)  # 8.4375 GiB, "8.44 GiB"


# ---------------------------------------------------------------- NumPy reference

SMALL = dict(d_in=32, N_h=4, d_QK=8, d_V=8, d_L=12)


def _setup(seed=0, n_layers=2, tokens=24, d_R=None, **sizes):
    sizes = {**SMALL, **sizes}
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(tokens, sizes["d_in"]))
    layers = [init_mla_weights(rng, **sizes, d_R=d_R) for _ in range(n_layers)]
    return X, layers


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


dims = st.fixed_dictionaries({
    "d_in": st.integers(4, 24), "N_h": st.integers(1, 4), "d_QK": st.sampled_from([2, 4, 6]),
    "d_V": st.integers(1, 6), "d_L": st.integers(1, 10),
})


@settings(max_examples=15, deadline=None)
@given(sizes=dims, seed=st.integers(0, 2**16), tokens=st.integers(1, 10))
def test_absorbed_equals_naive_without_rope(sizes, seed, tokens):
    X, layers = _setup(seed, 2, tokens, **sizes)
    naive = decode(X, layers, "naive").outputs
    assert _rel(decode(X, layers, "absorbed").outputs, naive) < 1e-12
    assert _rel(decode(X, layers, "absorbed", merged=True).outputs, naive) < 1e-12
    assert _rel(decode(X, layers, "expanded").outputs, naive) < 1e-12
    assert _rel(decode(X, layers, "absorb_values").outputs, naive) < 1e-12


@settings(max_examples=15, deadline=None)
@given(sizes=dims, seed=st.integers(0, 2**16), tokens=st.integers(1, 10),
       d_R=st.sampled_from([2, 4]))
def test_absorbed_plus_decoupled_equals_naive_plus_decoupled(sizes, seed, tokens, d_R):
    X, layers = _setup(seed, 2, tokens, d_R=d_R, **sizes)
    naive = decode(X, layers, "naive", rope="decoupled").outputs
    assert _rel(decode(X, layers, "absorbed", rope="decoupled").outputs, naive) < 1e-12
    assert _rel(decode(X, layers, "absorbed", rope="decoupled", merged=True).outputs,
                naive) < 1e-12
    assert _rel(decode(X, layers, "expanded", rope="decoupled").outputs, naive) < 1e-12
    assert _rel(decode(X, layers, "absorb_values", rope="decoupled").outputs, naive) < 1e-12


@settings(max_examples=15, deadline=None)
@given(sizes=dims, seed=st.integers(0, 2**16), tokens=st.integers(1, 10))
def test_with_rope_on_keys_the_values_can_still_be_absorbed(sizes, seed, tokens):
    """RoPE on the keys blocks absorbing W^LK_h only: summing the latents with the
    attention weights and applying W^LV_h once equals re-expanding every value."""
    X, layers = _setup(seed, 2, tokens, **sizes)
    naive = decode(X, layers, "naive", rope="keys").outputs
    assert _rel(decode(X, layers, "absorb_values", rope="keys").outputs, naive) < 1e-12


def test_rope_actually_changes_the_output():
    X, layers = _setup()
    plain = decode(X, layers, "naive").outputs
    assert _rel(decode(X, layers, "naive", rope="keys").outputs, plain) > 0.05


def test_absorbing_with_rope_on_keys_is_refused_with_the_reason():
    X, layers = _setup(tokens=3)
    with pytest.raises(ValueError, match="position"):
        decode(X, layers, "absorbed", rope="keys")
    with pytest.raises(ValueError, match="position"):
        mla_path(absorbed=True, rope="keys")


def test_absorbed_shortcut_with_rope_on_keys_is_badly_wrong():
    """The shortcut rotates the query (position m) and absorbs W^LK_h, but the key's
    rotation R_n cannot follow: it would have to sit between W^LK_h and L_n and it
    changes with n. So it scores q R_m^T W^LK_h^T L_n^T instead of q R_{n-m} W^LK_h^T L_n^T:
    the key is treated as if it sat at position 0. With this seeded layer (d_in 32, 4
    heads, d_QK 8, d_L 12, 24 tokens) the attention output is off by about 59% (relative
    L2); re-expanding (naive) and the expanded cache agree to about 1e-16."""
    X, layers = _setup(n_layers=1)
    right = decode(X, layers, "naive", rope="keys").outputs - X  # the layer's own output
    wrong = decode(X, layers, "shortcut", rope="keys").outputs - X
    assert _rel(wrong, right) > 0.4  # measured 0.59
    assert _rel(decode(X, layers, "expanded", rope="keys").outputs - X, right) < 1e-12
    # token 0 sits at position 0 where R_0 = I: only there does the shortcut agree
    assert np.allclose(wrong[0], right[0], rtol=1e-12)


def test_no_position_independent_merged_matrix_exists_with_rope_on_keys():
    X, (w,) = _setup(n_layers=1)
    x, l = X[3], X[1] @ w.W_L  # a query at m = 3, a cached latent at n = 1
    merged = [w.W_Q[0] @ rotation_matrix(delta, w.d_QK) @ w.W_LK[0].T for delta in (0, -2)]
    # with the right offset n - m = -2 the merged matrix reproduces the rotated score ...
    q = rotation_matrix(3, w.d_QK) @ (x @ w.W_Q[0])
    k = rotation_matrix(1, w.d_QK) @ (l @ w.W_LK[0])
    assert x @ merged[1] @ l == pytest.approx(q @ k, rel=1e-12)
    # ... but it differs per offset, by order one: no single matrix serves every key
    assert _rel(merged[0], merged[1]) > 0.1
    # without RoPE, one matrix (the absorbed one) serves every key
    np.testing.assert_allclose(absorb(w).W_QL[0], merged[0], rtol=1e-12)


@pytest.mark.parametrize("width", [None, 4])
def test_every_latent_cache_array_matches_its_table_row(width):
    X, layers = _setup(n_layers=3, tokens=7, d_R=width)
    cache = decode(X, layers, "absorbed", rope="decoupled" if width else None).cache
    table, kind = (TABLE_2_ROPE, MLA_ROPE) if width else (TABLE_2, MLA)
    sizes = {N_KV.symbol: 7, d_L.symbol: 12, d_R.symbol: width or 0}
    assert set(cache.arrays) == {t.name for t in table.with_role(Role.CACHE)}
    for name, array in cache.arrays.items():
        per_layer = table[name].elements.subs(sizes)
        assert array.nbytes == 3 * 8 * per_layer  # N_L layers x float64 x elements
    kw = dict(N_L=3, d_L=12, N_KV=7, b=8) | ({"d_R": width} if width else {})
    assert cache.nbytes == kind.bytes_per_sequence(**kw)
    assert cache.nbytes == 3 * 7 * (12 + (width or 0)) * 8  # by hand


def test_expanded_cache_is_an_mha_cache_of_the_decompressed_heads():
    X, layers = _setup(n_layers=2, tokens=5, d_R=4)
    cache = decode(X, layers, "expanded", rope="decoupled").cache
    assert cache.K.nbytes == 2 * 4 * 5 * (8 + 4) * 8 and cache.V.nbytes == 2 * 4 * 5 * 8 * 8
    assert cache.nbytes == MHA.bytes_per_sequence(N_L=2, N_h=4, d_QK=8 + 4, d_V=8, N_KV=5, b=8)


CASES = [("expanded", None, False), ("naive", None, False), ("absorbed", None, False),
         ("absorb_values", None, False), ("absorb_values", "keys", False),
         ("absorb_values", "decoupled", False),
         ("absorbed", None, True), ("expanded", "keys", False), ("naive", "keys", False),
         ("expanded", "decoupled", False), ("naive", "decoupled", False),
         ("absorbed", "decoupled", False), ("absorbed", "decoupled", True)]


@pytest.mark.parametrize(("mode", "rope", "merged"), CASES)
def test_executed_multiply_adds_equal_the_symbolic_decode_cost(mode, rope, merged):
    X, layers = _setup(tokens=9, d_R=4 if rope == "decoupled" else None)
    result = decode(X, layers, mode, rope=rope, merged=merged)
    path = mla_path("expanded" if mode == "expanded" else "latent", mode == "absorbed",
                    rope, merged, absorb_values=mode == "absorb_values")
    sizes = layers[0].sizes()
    for t in range(9):
        want = path.formula(N_KV=t + 1, **sizes)
        assert want % 2 == 0
        assert list(result.macs[t]) == [want // 2] * len(layers)
