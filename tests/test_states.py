"""Constant-size states derived from their tables like the caches (issue 11, notebook 07).

Expected values are hand arithmetic from the layer shapes vLLM allocates
(``MambaStateShapeCalculator``, vllm/model_executor/layers/mamba/mamba_utils.py).
"""

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from kvlib.core.derive import derive_state
from kvlib.core.formulas import STATES
from kvlib.core.notation import N_KV
from kvlib.core.tables import Role, TensorTable, _t
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec


def test_every_state_is_proved_constant_in_the_context():
    for state in STATES.values():
        assert state.symbolic.growth == 0
        assert N_KV.symbol not in state.symbolic.bytes_per_sequence.free_symbols


def test_mamba2_at_nemotron_h_8b_shapes():
    # hidden 4096, expand 2 -> d_inner 8192; 8 groups, d_state 128, conv 4, 128 heads of 64
    conv = (4 - 1) * (8192 + 2 * 8 * 128)  # 30,720
    ssm = 128 * 64 * 128  # 1,048,576
    sizes = dict(d_conv=4, d_inner=8192, N_sg=8, d_state=128, N_sh=128, d_sh=64)
    assert STATES["Mamba2"].conv_elements_per_layer(**sizes) == conv == 30_720
    assert STATES["Mamba2"].ssm_elements_per_layer(**sizes) == ssm == 1_048_576
    assert STATES["Mamba2"].bytes_per_sequence(N_L=1, b_c=2, b_s=4, **sizes) == \
        2 * 30_720 + 4 * 1_048_576


def test_gated_deltanet_at_qwen3_next_shapes():
    # 16 key heads and 32 value heads of 128, conv kernel 4
    sizes = dict(d_conv=4, N_lk=16, d_lk=128, N_lv=32, d_lv=128)
    assert STATES["Gated DeltaNet"].conv_elements_per_layer(**sizes) == 3 * (2 * 16 * 128
                                                                           + 32 * 128)
    assert STATES["Gated DeltaNet"].ssm_elements_per_layer(**sizes) == 32 * 128 * 128


def test_mamba1_short_conv_and_lightning():
    assert STATES["Mamba"].elements_per_layer(d_inner=8192, d_conv=4, d_state=16) == \
        8192 * 3 + 8192 * 16
    assert STATES["Short convolution"].elements_per_layer(d_in=2048, d_conv=3) == 2 * 2048
    assert STATES["Lightning attention"].elements_per_layer(N_h=64, d_QK=128, d_V=128) == \
        64 * 128 * 128


def test_a_state_row_that_grows_is_refused():
    growing = TensorTable("bad", "a state that keeps every token", (
        _t("K", "K", N_KV.symbol, 8, 1, Role.STATE, store="conv"),))
    with pytest.raises(ValueError, match="grows with N_KV"):
        derive_state("bad", growing)


def test_the_formula_is_sympys_own_sum():
    f = STATES["Mamba2"].symbolic.elements_per_layer
    rows = [t for t in STATES["Mamba2"].table if t.role is Role.STATE]
    assert sp.expand(f - sum(t.elements for t in rows)) == 0


@given(T=st.integers(1, 10**7), layers=st.integers(1, 128), d_state=st.integers(1, 256))
def test_a_state_group_holds_the_same_bytes_at_every_context(T, layers, d_state):
    mamba = LayerGroup(CacheKind.MAMBA, layers, "Mamba", dict(d_inner=64, d_conv=4,
                                                             d_state=d_state, b_c=2, b_s=4))
    attn = LayerGroup(CacheKind.FULL, 2, "GQA", dict(N_h=8, N_g=2, d_QK=16, d_V=16))
    spec = ModelSpec("hybrid", (attn, mamba))
    state = layers * (2 * 64 * 3 + 4 * 64 * d_state)
    assert mamba.state_bytes_per_sequence() == state
    assert mamba.bytes_per_sequence(T, 2) == 0 and mamba.bytes_per_token(2) == 0
    kv = 2 * 2 * 2 * 16 * 2 * T  # layers x (K, V) x N_g x d x b x T
    assert spec.kv_bytes_per_sequence(T, 2) == kv
    assert spec.total_bytes_per_sequence(T, 2) == kv + state


def test_empty_groups_keep_nothing_and_have_no_formula():
    none = LayerGroup(CacheKind.NONE, 10, "")
    assert none.state_bytes_per_sequence() == none.bytes_per_sequence(100, 2) == 0
    with pytest.raises(ValueError, match="keeps nothing"):
        none.formulas  # noqa: B018
