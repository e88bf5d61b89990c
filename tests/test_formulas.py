"""The derived MHA / GQA / MQA formulas against the paper, the seeds and hand arithmetic."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from kvlib import GQA, MHA, MQA, ratio
from kvlib.core.notation import N_KV, N_L, B, N_g, N_h, b, d_QK, d_V
from kvlib.core.tables import TABLE_1, Role, grouped

# Sizes written out from the published configs (Meta-Llama-3-70B, gemma-3-27b-it config.json).
LLAMA3_70B = dict(N_L=80, N_h=64, N_g=8, d_QK=128, d_V=128)
GEMMA3_27B = dict(N_L=62, N_h=32, N_g=16, d_QK=128, d_V=128)


def test_table_1_caches_exactly_K_and_V():
    cached = {t.name for t in TABLE_1.with_role(Role.CACHE)}
    assert cached == {"K_h", "V_h"}
    assert {t.name for t in TABLE_1 if t.kv_side} == {"W^K_h", "W^V_h", "K_h", "V_h"}


def test_mha_elements_per_token_layer_is_heads_times_key_plus_value_width():
    expected = N_h.symbol * (d_QK.symbol + d_V.symbol)
    assert sp.simplify(MHA.symbolic.elements_per_token_layer - expected) == 0


def test_mha_bytes_reduce_to_the_papers_2_NL_Nh_NKV_d():
    d = sp.Symbol("d", positive=True, integer=True)
    ours = MHA.symbolic.bytes_per_sequence.subs({d_QK.symbol: d, d_V.symbol: d})
    paper = 2 * N_L.symbol * N_h.symbol * N_KV.symbol * d * b.symbol
    assert sp.simplify(ours - paper) == 0
    batch = MHA.symbolic.bytes_per_batch
    assert sp.simplify(batch - B.symbol * MHA.symbolic.bytes_per_sequence) == 0


def test_gqa_rule_replaces_heads_only_on_the_key_value_side():
    g = grouped(TABLE_1)
    assert g["W^Q_h"].copies == N_h.symbol and g["W^O_h"].copies == N_h.symbol
    assert g["W^K_h"].copies == N_g.symbol and g["V_h"].copies == N_g.symbol
    assert grouped(TABLE_1, 1)["K_h"].copies == 1
    expected = N_g.symbol * (d_QK.symbol + d_V.symbol)
    assert sp.simplify(GQA.symbolic.elements_per_token_layer - expected) == 0


def test_saving_factor_is_query_heads_over_kv_heads():
    f = ratio(MHA, GQA)
    assert sp.simplify(f.expr - N_h.symbol / N_g.symbol) == 0
    assert f(N_h=64, N_g=8) == 8 and f(N_h=32, N_g=16) == 2


def test_llama3_70b_as_if_mha_matches_seed_004():
    per_token = MHA.bytes_per_token(**LLAMA3_70B, b=2)
    assert per_token == 2 * 80 * 64 * 128 * 2 == 2_621_440  # "2.6 MB" in seed 004
    assert Fraction(per_token, 1024**2) == Fraction(5, 2)  # 2.5 MiB exactly
    assert per_token == 2560 * 1024  # seed 000: "as MHA, 2560 KiB per token"
    at_8k = MHA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=8192)
    assert at_8k == 2_621_440 * 8192 == 21_474_836_480  # 21.5 GB, exactly 20 GiB
    at_128k = MHA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=131072)
    assert round(at_128k / 1e9, 1) == 343.6  # seed 004 says "340 GB"
    assert MHA.bytes_per_batch(**LLAMA3_70B, b=2, N_KV=8192, B=4) == 4 * 21_474_836_480


def test_llama3_70b_gqa_and_gemma3_27b_match_seed_000_table():
    llama = GQA.bytes_per_token(**LLAMA3_70B, b=2)
    gemma = GQA.bytes_per_token(**GEMMA3_27B, b=2)
    assert llama == 80 * 8 * (128 + 128) * 2 == 327_680 == 320 * 1024
    assert round(llama / 1e6, 2) == 0.33  # seed 004: "2.6 MB -> 0.33 MB per token" with GQA
    assert gemma == 62 * 16 * (128 + 128) * 2 == 507_904 == 496 * 1024
    assert GQA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=131072) == 40 * 1024**3
    assert round(gemma / llama, 2) == 1.55
    assert MHA.bytes_per_token(**LLAMA3_70B, b=2) // llama == 8
    assert MHA.bytes_per_token(**GEMMA3_27B, b=2) // gemma == 2


def test_mqa_keeps_one_kv_head():
    assert MQA.bytes_per_token(N_L=80, d_QK=128, d_V=128, b=2) == 80 * 1 * 256 * 2


def test_four_bit_elements_give_exact_fractions():
    assert GQA.bytes_per_token(N_L=1, N_g=1, d_QK=1, d_V=2, b=Fraction(1, 2)) == Fraction(3, 2)
    assert GQA.bytes_per_token(**LLAMA3_70B, b=Fraction(1, 2)) == 327_680 // 4


def test_huge_sizes_stay_exact():
    n = 10**30
    assert MHA.bytes_per_sequence(N_L=n, N_h=1, d_QK=1, d_V=1, b=1, N_KV=n) == 2 * n * n


@pytest.mark.parametrize("field,value", [
    ("N_L", 0), ("N_L", -3), ("N_L", 2.5), ("N_L", 2.0), ("N_L", True), ("N_L", "80"),
    ("d_QK", None), ("b", 0), ("b", -2), ("b", float("nan")), ("b", False),
])
def test_bad_sizes_name_the_field_and_value(field, value):
    kw = dict(LLAMA3_70B, b=2)
    kw[field] = value
    with pytest.raises(ValueError, match=rf"^{field} .*{value!r}"):
        GQA.bytes_per_token(**kw)


def test_kv_heads_must_divide_query_heads():
    with pytest.raises(ValueError, match="N_g.*=3 must divide N_h.*=64"):
        GQA.bytes_per_token(**dict(LLAMA3_70B, N_g=3), b=2)
    with pytest.raises(ValueError, match="must divide"):
        GQA.bytes_per_token(**dict(LLAMA3_70B, N_g=np.array([8, 3])), b=2)


def test_unknown_and_missing_parameters_are_named():
    with pytest.raises(ValueError, match="unknown parameter 'heads'"):
        GQA.bytes_per_token(**LLAMA3_70B, b=2, heads=4)
    with pytest.raises(ValueError, match="needs b"):
        GQA.bytes_per_token(**LLAMA3_70B)


def test_vector_inputs_are_checked_elementwise():
    with pytest.raises(ValueError, match="N_KV .*minimum of 0"):
        GQA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=np.array([1, 0]))
    with pytest.raises(ValueError, match="N_KV .*float"):
        GQA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=np.array([1.5]))


sizes = st.integers(min_value=1, max_value=512)


@given(N_L=sizes, N_h=sizes, d_QK=sizes, d_V=sizes, b=st.sampled_from([1, 2, 4]),
       N_KV=st.integers(1, 10**6))
def test_gqa_with_all_heads_is_mha(N_L, N_h, d_QK, d_V, b, N_KV):
    kw = dict(N_L=N_L, d_QK=d_QK, d_V=d_V, b=b, N_KV=N_KV)
    assert GQA.bytes_per_sequence(**kw, N_g=N_h, N_h=N_h) == MHA.bytes_per_sequence(**kw, N_h=N_h)


@given(N_L=sizes, N_h=sizes, d_QK=sizes, d_V=sizes, N_KV=st.integers(1, 10**6))
def test_mqa_is_gqa_with_one_kv_head(N_L, N_h, d_QK, d_V, N_KV):
    kw = dict(N_L=N_L, d_QK=d_QK, d_V=d_V, b=2, N_KV=N_KV)
    assert MQA.bytes_per_sequence(**kw) == GQA.bytes_per_sequence(**kw, N_g=1, N_h=N_h)


@given(st.fixed_dictionaries({k: st.integers(1, 10**9) for k in
                              ("N_L", "N_g", "d_QK", "d_V", "N_KV", "B")}),
       st.sampled_from([Fraction(1, 2), 1, 2, 4]))
def test_generated_function_equals_sympy_substitution(kw, bytes_per):
    f = GQA.bytes_per_batch
    assert f(**kw, b=bytes_per) == f.subs(**kw, b=bytes_per)


@given(st.sampled_from(["N_L", "N_g", "d_QK", "d_V", "N_KV", "B"]),
       st.fixed_dictionaries({k: st.integers(1, 4096) for k in
                              ("N_L", "N_g", "d_QK", "d_V", "N_KV", "B")}),
       st.integers(1, 1000))
def test_bytes_grow_strictly_in_every_size(name, kw, step):
    f = GQA.bytes_per_batch
    bigger = dict(kw, **{name: kw[name] + step})
    assert f(**bigger, b=2) > f(**kw, b=2)


@given(st.lists(st.integers(1, 4096), min_size=1, max_size=50))
def test_vectorised_path_equals_exact_path(contexts):
    arr = GQA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=np.array(contexts))
    assert arr.dtype == np.int64
    assert arr.tolist() == [GQA.bytes_per_sequence(**LLAMA3_70B, b=2, N_KV=n) for n in contexts]
