"""Decode cost per step per layer: the symbolic sums against hand arithmetic for
DeepSeek V2's shapes (config.json: 128 heads, d_in 5120, nope 128, rope 64, v 128,
kv_lora_rank 512). The NumPy executed counts are checked in test_mla.py."""

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from kvlib.core.decode_cost import PATHS, mha_path, mla_path
from kvlib.core.notation import N_KV

DS = dict(N_h=128, d_in=5120, d_QK=128, d_V=128, d_L=512, d_R=64)


def test_every_path_is_affine_in_context_length():
    for name, path in PATHS.items():
        slope = path.per_context_token
        assert not slope.has(N_KV.symbol), name
        assert sp.expand(path.flops - slope * N_KV.symbol - path.flops.subs(N_KV.symbol, 0)) == 0


def test_flops_per_cached_token_for_deepseek_v2_by_hand():
    per = {k: PATHS[k].context_formula for k in PATHS}
    # absorbed + decoupled: scores on 512 + 64, weighted latent 512, per head, 2 FLOPs each
    assert per["MLA+RoPE absorbed"](**DS) == 2 * 128 * (512 + 64 + 512) == 278_528
    # re-expanding K (nope part) and V from the latent for every cached token, every step
    assert per["MLA+RoPE naive"](**DS) == 2 * 128 * (512 * 128 + 512 * 128 + 128 + 64 + 128)
    # caching decompressed K (192) and V (128) per head: only the attention itself
    assert per["MLA+RoPE expanded cache"](**DS) == 2 * 128 * (192 + 128) == 81_920
    # RoPE on the up-projected keys (width 192): re-expand, re-rotate (2 per element)
    keys = dict(DS, d_QK=192)
    del keys["d_R"]
    assert per["MLA+RoPE(keys) naive"](**keys) == \
        2 * 128 * (512 * 192 + 2 * 192 + 512 * 128 + 192 + 128)


def test_re_expanding_costs_about_120x_the_absorbed_path_per_cached_token():
    naive = PATHS["MLA+RoPE naive"].context_formula(**DS)
    absorbed = PATHS["MLA+RoPE absorbed"].context_formula(**DS)
    assert naive / absorbed == pytest.approx(
        (512 * 256 + 320) / (512 + 64 + 512), rel=1e-12)
    assert 120 < naive / absorbed < 121


def test_full_step_at_4k_for_absorbed_decoupled_by_hand():
    n = 4096
    constant = (5120 * 512 + 128 * (5120 * 128 + 128 * 512) + 128 * (5120 * 64 + 2 * 64)
                + 5120 * 64 + 2 * 64 + 128 * (512 * 128 + 128 * 5120))
    context = n * 128 * (512 + 64 + 512)
    assert PATHS["MLA+RoPE absorbed"].formula(N_KV=n, **DS) == 2 * (constant + context)


def test_mha_and_gqa_paths():
    mha = mha_path().formula(N_KV=10, N_h=4, d_in=16, d_QK=8, d_V=6)
    assert mha == 2 * (4 * 16 * 8 * 2 + 4 * 16 * 6 + 10 * 4 * (8 + 6) + 4 * 6 * 16)
    gqa = mha_path(grouped=True).formula(N_KV=10, N_h=4, N_g=2, d_in=16, d_QK=8, d_V=6)
    assert gqa == 2 * (4 * 16 * 8 + 2 * 16 * (8 + 6) + 10 * 4 * (8 + 6) + 4 * 6 * 16)


@given(n=st.integers(2, 1 << 20))
def test_absorbed_is_cheaper_than_re_expanding_from_the_second_token_on(n):
    assert PATHS["MLA+RoPE absorbed"].formula(N_KV=n, **DS) < \
        PATHS["MLA+RoPE naive"].formula(N_KV=n, **DS)


def test_with_one_token_absorption_costs_slightly_more():
    # per head it still applies W^LK_h^T to q and W^LV_h to the weighted latent,
    # 2 * 128 * 512 * (128 + 128) FLOPs, while re-expanding one key and one value costs
    # 2 * 128 * (512 * 256 + 320) and the latent scores save 2 * 128 * (512 + 64 + 512)
    extra = 2 * 128 * 512 * 256 - (2 * 128 * (512 * 256 + 320) - 2 * 128 * (512 + 64 + 512))
    diff = PATHS["MLA+RoPE absorbed"].formula(N_KV=1, **DS) - \
        PATHS["MLA+RoPE naive"].formula(N_KV=1, **DS)
    assert diff == extra == 196_608


def test_invalid_paths_are_refused():
    with pytest.raises(ValueError, match="latent"):
        mla_path(cache="expanded", absorbed=True)
    with pytest.raises(ValueError, match="absorbed"):
        mla_path(merged=True)
    with pytest.raises(ValueError, match="rope"):
        mla_path(rope="alibi")


def test_notebook_04_takeaway_intensity_has_n_q_on_both_sides():
    """Notebook 04 section 6's takeaway (issue 34): absorbed MLA with a decoupled RoPE key reads
    b (d_L + d_R) bytes per cached token and spends 2 N_Q N_h (2 d_L + d_R) FLOPs on it, so
    its intensity is 2 N_Q N_h (2 d_L + d_R) / (b (d_L + d_R)), about 4 N_Q N_h / b when the
    RoPE key is dropped. By hand for DeepSeek V2 (N_h 128, d_L 512, d_R 64, bf16) at N_Q = 1:
    2 x 128 x 1,088 / (2 x 576) = 241.8 FLOPs per byte, and 4 x 128 / 2 = 256."""
    import sympy as sp

    from kvlib.core import notation
    from kvlib.core.decode_cost import mla_path

    N_h, N_Q, b, d_L, d_R = (getattr(notation, n).symbol for n in ("N_h", "N_Q", "b", "d_L",
                                                                    "d_R"))
    for queries in (1, N_Q):
        path = mla_path(absorbed=True, rope="decoupled", queries=queries)
        expected = 2 * queries * N_h * (2 * d_L + d_R) / (b * (d_L + d_R))
        assert sp.simplify(path.context_intensity - expected) == 0
    v2 = {N_h: 128, d_L: 512, d_R: 64, b: 2}
    exact = mla_path(absorbed=True, rope="decoupled").context_intensity.subs(v2)
    assert exact == sp.Rational(2 * 128 * 1088, 2 * 576) and round(float(exact), 1) == 241.8
    assert sp.limit(expected.subs({d_R: 0}) / (4 * N_Q * N_h / b), d_L, sp.oo) == 1
