"""The NumPy recurrent layer of notebook 07: its state has the formula's size and never grows."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.core.formulas import STATES
from kvlib.reference.recurrent import decode_linear, init_linear_weights, parallel_linear


def test_recurrence_equals_the_parallel_form():
    rng = np.random.default_rng(0)
    w = init_linear_weights(rng, d_in=16, N_lk=2, d_lk=4, N_lv=4, d_lv=3, d_conv=4)
    X = rng.normal(size=(40, 16))
    out, _, _ = decode_linear(X, w)
    assert np.allclose(out, parallel_linear(X, w), rtol=1e-10, atol=1e-10)


@settings(max_examples=25)
@given(tokens=st.integers(1, 60), d_conv=st.integers(2, 5), n_lk=st.sampled_from([1, 2]),
       rep=st.sampled_from([1, 2]), d_lk=st.integers(1, 6), d_lv=st.integers(1, 6))
def test_state_nbytes_is_the_formula_at_every_token(tokens, d_conv, n_lk, rep, d_lk, d_lv):
    rng = np.random.default_rng(1)
    w = init_linear_weights(rng, d_in=8, N_lk=n_lk, d_lk=d_lk, N_lv=n_lk * rep, d_lv=d_lv,
                            d_conv=d_conv)
    _, state, sizes = decode_linear(rng.normal(size=(tokens, 8)), w)
    # float64: 8 bytes per element; conv keeps d_conv - 1 rows of 2 N_lk d_lk + N_lv d_lv
    hand = 8 * ((d_conv - 1) * (2 * n_lk * d_lk + n_lk * rep * d_lv)
                + n_lk * rep * d_lk * d_lv)
    formula = STATES["Gated DeltaNet"].bytes_per_sequence(N_L=1, b_c=8, b_s=8, **w.sizes())
    assert sizes == [hand] * tokens and state.nbytes == hand == formula
