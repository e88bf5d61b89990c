"""RoPE as block-diagonal 2x2 rotations: the relative-position identity, numerically and
symbolically."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kvlib.reference.rope import (
    apply_rope,
    frequencies,
    relative_position_identity,
    rotation_2x2,
    rotation_matrix,
)

widths = st.sampled_from([2, 4, 8, 16])
positions = st.integers(0, 131_072)
finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


def _vec(d):
    return hnp.arrays(np.float64, d, elements=finite)


def test_frequencies_by_hand():
    # d = 4: theta_i = 10000^(-2i/4) for i = 0, 1 -> 1 and 1/100
    np.testing.assert_allclose(frequencies(4), [1.0, 0.01])
    assert frequencies(8)[-1] == pytest.approx(10_000 ** (-6 / 8))
    with pytest.raises(ValueError, match="even"):
        frequencies(3)


def test_rotation_matrix_is_block_diagonal_2x2():
    R = rotation_matrix(1, 4)
    # pair 0 turns by 1 rad, pair 1 by 0.01 rad; nothing couples the two pairs
    np.testing.assert_allclose(R[:2, :2], [[np.cos(1), -np.sin(1)], [np.sin(1), np.cos(1)]])
    np.testing.assert_allclose(R[2:, 2:], [[np.cos(0.01), -np.sin(0.01)],
                                           [np.sin(0.01), np.cos(0.01)]])
    assert not R[:2, 2:].any() and not R[2:, :2].any()
    np.testing.assert_array_equal(rotation_matrix(0, 6), np.eye(6))


@given(d=widths, m=positions, data=st.data())
def test_apply_rope_equals_the_matrix_and_keeps_the_norm(d, m, data):
    v = data.draw(_vec(d))
    np.testing.assert_allclose(apply_rope(v, m), rotation_matrix(m, d) @ v, atol=1e-9)
    assert np.linalg.norm(apply_rope(v, m)) == pytest.approx(np.linalg.norm(v), abs=1e-9)


def test_apply_rope_rotates_each_row_by_its_own_position():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(5, 8))
    out = apply_rope(V, np.arange(5))
    for m in range(5):
        np.testing.assert_allclose(out[m], rotation_matrix(m, 8) @ V[m], atol=1e-12)


@given(d=widths, m=st.integers(0, 4096), n=st.integers(0, 4096))
def test_rotations_compose_R_m_transpose_R_n_is_R_n_minus_m(d, m, n):
    lhs = rotation_matrix(m, d).T @ rotation_matrix(n, d)
    np.testing.assert_allclose(lhs, rotation_matrix(n - m, d), atol=1e-9)


@settings(max_examples=50)
@given(d=widths, m=st.integers(0, 4096), n=st.integers(0, 4096),
       shift=st.integers(0, 4096), data=st.data())
def test_score_depends_only_on_the_offset(d, m, n, shift, data):
    q, k = data.draw(_vec(d)), data.draw(_vec(d))
    score = apply_rope(q, m) @ apply_rope(k, n)
    assert score == pytest.approx(q @ rotation_matrix(n - m, d) @ k, abs=1e-7)
    assert score == pytest.approx(apply_rope(q, m + shift) @ apply_rope(k, n + shift), abs=1e-7)


def test_sympy_proves_the_relative_position_identity_for_a_2x2_block():
    lhs, rhs, s = relative_position_identity()
    assert sp.simplify(lhs - rhs) == 0
    # and the rotation is orthogonal with R(a)^T R(b) = R(b - a), symbolically
    a, b = sp.symbols("a b", real=True)
    assert sp.simplify(rotation_2x2(a).T * rotation_2x2(b) - rotation_2x2(b - a)) == sp.zeros(2)
    # the identity fails without the rotation of the key: a real, nonzero difference
    no_key_rotation = (rotation_2x2(s["i"] * s["theta"]) * s["q"]).T * s["k"]
    assert sp.simplify(no_key_rotation[0, 0] - rhs) != 0
