"""The NumPy reference: cached decoding equals full attention; cache bytes equal the formula."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib import GQA, MHA
from kvlib.reference.attention import causal_attention, decode, init_weights, repeat_kv


def _stack(rng, n_layers, **kw):
    return [init_weights(rng, **kw) for _ in range(n_layers)]


def _full(X, layers):
    x = X.copy()
    for w in layers:
        x = x + causal_attention(x, w)
    return x


@settings(max_examples=15, deadline=None)
@given(n_layers=st.integers(1, 3), N_g=st.sampled_from([1, 2, 4]), group=st.sampled_from([1, 2]),
       d_QK=st.integers(2, 8), d_V=st.integers(2, 8), N=st.integers(1, 12))
def test_cached_decode_equals_full_causal_attention(n_layers, N_g, group, d_QK, d_V, N):
    rng = np.random.default_rng(0)
    layers = _stack(rng, n_layers, d_in=12, N_h=N_g * group, d_QK=d_QK, d_V=d_V, N_g=N_g)
    X = rng.normal(size=(N, 12))
    out, cache, flops = decode(X, layers)
    np.testing.assert_allclose(out, _full(X, layers), rtol=1e-12, atol=1e-12)
    # float64 = 8 bytes per element; formula from the derivation, size by hand as well
    assert cache.nbytes == GQA.bytes_per_sequence(
        N_L=n_layers, N_g=N_g, d_QK=d_QK, d_V=d_V, b=8, N_KV=N)
    assert cache.nbytes == n_layers * N_g * N * (d_QK + d_V) * 8
    # work per step is linear in the tokens so far: step t costs (t+1) * N_h * (d_QK + d_V) * N_L
    per_token = n_layers * N_g * group * (d_QK + d_V)
    assert flops.tolist() == [(t + 1) * per_token for t in range(N)]


def test_mha_cache_matches_mha_formula():
    rng = np.random.default_rng(1)
    layers = _stack(rng, 2, d_in=16, N_h=4, d_QK=8, d_V=6)
    _, cache, _ = decode(rng.normal(size=(9, 16)), layers)
    assert cache.K.shape == (2, 4, 9, 8) and cache.V.shape == (2, 4, 9, 6)
    assert cache.nbytes == MHA.bytes_per_sequence(N_L=2, N_h=4, d_QK=8, d_V=6, b=8, N_KV=9)
    assert cache.nbytes == 2 * 4 * 9 * (8 + 6) * 8 == 8064  # layers x heads x tokens x (K+V) x f64


def test_gqa_equals_mha_with_repeated_kv_heads():
    rng = np.random.default_rng(2)
    w = init_weights(rng, d_in=16, N_h=8, d_QK=4, d_V=4, N_g=2)
    X = rng.normal(size=(7, 16))
    np.testing.assert_allclose(causal_attention(X, w), causal_attention(X, repeat_kv(w)))
    assert repeat_kv(w).W_K.shape == (8, 16, 4)


def test_gqa_differs_from_an_unrelated_mha():
    rng = np.random.default_rng(3)
    w = init_weights(rng, d_in=16, N_h=8, d_QK=4, d_V=4, N_g=2)
    other = init_weights(rng, d_in=16, N_h=8, d_QK=4, d_V=4)
    X = rng.normal(size=(7, 16))
    assert not np.allclose(causal_attention(X, w), causal_attention(X, other))


def test_bad_group_count_is_rejected():
    with pytest.raises(ValueError, match="N_g=3 must divide N_h=8"):
        init_weights(np.random.default_rng(0), d_in=4, N_h=8, d_QK=2, d_V=2, N_g=3)
