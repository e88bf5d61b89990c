"""Issue 12, items 1, 2, 5, 6, 15 and 19: the corrected MLA decode claims of notebooks 03-04,
each pinned against hand arithmetic (written out) or a primary source's figure.

DeepSeek V2 (config.json): 128 heads, hidden 5120, qk_nope_head_dim 128 (d_QK), qk_rope_head_dim
64 (d_R), v_head_dim 128, kv_lora_rank 512 (d_L), q_lora_rank 1536 (d_Lq); bf16 cache.
"""

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from kvlib.core.decode_cost import CHUNK_PATHS, N_Q, PATHS, chunk_flops, mla_path
from kvlib.core.notation import N_KV, by_name
from kvlib.reference.mla import decode, init_mla_weights
from kvlib.serving.compute import gpus_with_flops, peak_bf16_flops, ridge_point
from kvlib.serving.gpus import CATALOG

COMPUTE = {n: CATALOG[n] for n in gpus_with_flops()}

ROOT = Path(__file__).parent.parent
NB = ROOT / "notebooks"
DS = dict(N_h=128, d_in=5120, d_QK=128, d_V=128, d_L=512, d_R=64, d_Lq=1536)
KEYS = dict(N_h=128, d_in=5120, d_QK=192, d_V=128, d_L=512, d_Lq=1536)  # RoPE inside 192-wide keys
Q = ", query latent"
E05 = "engines/05_mla_decode_in_engines.ipynb"


def _cells(name, kind):
    return [c for c in json.loads((NB / name).read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == kind]


def _markdown(name):
    return "\n".join("".join(c["source"]) for c in _cells(name, "markdown"))


def _outputs(name):
    text = []
    for c in _cells(name, "code"):
        for out in c.get("outputs", []):
            text.append("".join(out.get("text", "")))
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    text.append("".join(value))
    return "\n".join(text)


# --- 2: re-expand keys, absorb values --------------------------------------------------------

def test_re_expanding_keys_only_per_cached_token_by_hand():
    # per head: rebuild the 192-wide key from 512 (512 x 192), rotate it (2 x 192), score it
    # (192), add the 512-wide latent into the weighted sum (512); 2 FLOPs per multiply-add
    keys_only = 2 * 128 * (512 * 192 + 2 * 192 + 192 + 512)
    assert keys_only == 25_444_352
    assert PATHS["MLA+RoPE(keys) absorbed values"].context_formula(**KEYS) == keys_only
    both = 2 * 128 * (512 * 192 + 2 * 192 + 512 * 128 + 192 + 128)
    assert both == 42_123_264
    assert PATHS["MLA+RoPE(keys) naive"].context_formula(**KEYS) == both


def test_headline_ratio_at_128k_is_about_91x_not_150x():
    # fixed parts (multiply-adds, query compression included), written out product by product
    b_fixed = (5120 * 512 + 5120 * 1536 + 128 * 1536 * 128 + 128 * 128 * 512 + 128 * 1536 * 64
               + 128 * 2 * 64 + 5120 * 64 + 2 * 64 + 128 * 512 * 128 + 128 * 128 * 5120)
    a_fixed = (5120 * 512 + 5120 * 1536 + 128 * 1536 * 192 + 128 * 2 * 192 + 128 * 512 * 128
               + 128 * 128 * 5120)
    naive_fixed = 5120 * 512 + 5120 * 1536 + 128 * 1536 * 192 + 128 * 2 * 192 + 128 * 128 * 5120
    assert (2 * b_fixed, 2 * a_fixed, 2 * naive_fixed) == (298_483_968, 281_116_672, 264_339_456)
    n = 131_072
    b = 2 * b_fixed + n * 2 * 128 * (512 + 64 + 512)
    a = 2 * a_fixed + n * 25_444_352
    naive = 2 * naive_fixed + n * 42_123_264
    assert PATHS["MLA+RoPE absorbed" + Q].formula(N_KV=n, **DS) == b == 36_805_705_984
    assert PATHS["MLA+RoPE(keys) absorbed values" + Q].formula(N_KV=n, **KEYS) == a
    assert PATHS["MLA+RoPE(keys) naive" + Q].formula(N_KV=n, **KEYS) == naive
    assert f"{a / b:.2f}" == "90.62" and f"{naive / b:.2f}" == "150.02"
    assert f"{a / 1e12:.2f}" == "3.34" and f"{naive / 1e12:.2f}" == "5.52"


def test_values_absorbed_decoder_matches_and_counts_a_tiny_step_by_hand():
    rng = np.random.default_rng(0)
    w = [init_mla_weights(rng, d_in=4, N_h=1, d_QK=2, d_V=2, d_L=3)]
    X = rng.normal(size=(1, 4))
    # one token: latent 4x3, query 4x2, key 3x2, score 2, weighted latent 3, values 3x2, output 2x4
    assert decode(X, w, "absorb_values").macs[0, 0] == 12 + 8 + 6 + 2 + 3 + 6 + 8 == 45
    # re-expanding the value instead: value 3x2, weighted value 2, output 2x4
    assert decode(X, w, "naive").macs[0, 0] == 12 + 8 + 6 + 6 + 2 + 2 + 8 == 44
    X = rng.normal(size=(6, 4))
    a, n = decode(X, w, "absorb_values", rope=None), decode(X, w, "naive")
    assert np.abs(a.outputs - n.outputs).max() < 1e-12 * np.abs(n.outputs).max()


def test_absorbed_values_path_refuses_what_makes_no_sense():
    with pytest.raises(ValueError, match="absorb_values"):
        mla_path(absorbed=True, absorb_values=True)
    with pytest.raises(ValueError, match="absorb_values"):
        mla_path(cache="expanded", absorb_values=True)


# --- 15: query compression in the fixed cost ---------------------------------------------------

def test_fixed_part_and_crossover_with_q_lora_rank():
    per_token = 2 * 128 * (512 + 64 + 512)
    with_q = PATHS["MLA+RoPE absorbed" + Q].fixed_formula(**DS)
    plain = PATHS["MLA+RoPE absorbed"].fixed_formula(**{k: v for k, v in DS.items() if k != "d_Lq"})
    assert with_q == 298_483_968 and plain == 458_916_096
    # query compression: x W^DQ (5120 x 1536) then per head 1536 x (128 + 64), instead of
    # 5120 x (128 + 64) per head
    assert plain - with_q == 2 * (128 * 5120 * 192 - 5120 * 1536 - 128 * 1536 * 192)
    assert with_q // per_token == 1_071 and plain // per_token == 1_647


# --- 1: arithmetic intensity, ridge points -----------------------------------------------------

def test_intensity_per_design_by_hand():
    assert PATHS["MHA"].context_intensity_formula(b=2) == 1  # 2 FLOPs per 2-byte element
    assert PATHS["GQA"].context_intensity_formula(N_h=128, N_g=8, b=2) == 16
    # one 576-element (1,152 B) latent + RoPE key serves 128 heads: 2 x 128 x 1088 FLOPs
    mla = PATHS["MLA+RoPE absorbed"].context_intensity_formula(N_h=128, d_L=512, d_R=64, b=2)
    assert mla == Fraction(2 * 128 * (2 * 512 + 64), (512 + 64) * 2) == Fraction(2176, 9)
    assert round(float(mla), 1) == 241.8
    # the estimate: "about 2 x 128 x (2 x 512 + 64) FLOPs per 1,152 B, roughly 240"
    assert 235 < 2 * 128 * (2 * 512 + 64) / 1152 < 245


def test_ridge_points_from_datasheets():
    # peak dense BF16 / HBM bandwidth: H100 SXM 989.4 TFLOP/s / 3.35 TB/s, H200 989.4 / 4.8,
    # B200 2,250 / 8, MI300X 1,307.4 / 5.3, A100 80GB 312 / 2.039
    assert ridge_point("H200") == Fraction(9894, 48) == Fraction(1649, 8)
    assert ridge_point("H100-80GB") == Fraction(98940, 335)  # 989.4 / 3.35
    assert ridge_point("B200") == Fraction(2250, 8)
    assert ridge_point("MI300X") == Fraction(13074, 53)
    assert ridge_point("A100-80GB") == Fraction(312_000, 2039)
    assert peak_bf16_flops("h100-sxm") == 989_400 * 10**9
    # Blackwell: NVIDIA prints sparse peaks; dense is half (4.5 PFLOPS HGX B300, 5 PFLOPS GB200)
    assert ridge_point("B300") == Fraction(22500, 77)  # 2,250 TFLOP/s / 7.7 TB/s
    assert ridge_point("GB200") == Fraction(2500, 8)
    assert len(COMPUTE) == 9 and all(c.bf16_flops_source for c in COMPUTE.values())
    with pytest.raises(ValueError, match="no peak BF16"):
        peak_bf16_flops("L4")


def test_where_absorbed_mla_becomes_compute_bound():
    heads = sp.Symbol("heads", positive=True)
    per_byte = PATHS["MLA+RoPE absorbed"].context_intensity.subs(
        {by_name("d_L").symbol: 512, by_name("d_R").symbol: 64, by_name("b").symbol: 2,
         by_name("N_h").symbol: heads})
    for gpu, want in (("H200", Fraction(1649, 8) * 9 / 17),
                      ("H100-80GB", Fraction(98940, 335) * 9 / 17)):
        (at,) = sp.solve(sp.Eq(per_byte, sp.Rational(*ridge_point(gpu).as_integer_ratio())), heads)
        assert at == sp.Rational(want.numerator, want.denominator)
    assert 109 < float(Fraction(1649, 8) * 9 / 17) < 110  # H200: 128 heads are past it
    assert 156 < float(Fraction(98940, 335) * 9 / 17) < 157  # H100: 128 heads are not
    # FlashMLA's deep-dive: ratio ~ 2 h_q s_q, 865 TFLOP/s (throttled H800) / 3.35 TB/s -> 128
    assert round(865 / 3.35 / 2) == 129 and 865 / 3.35 / 2 > 128
    # TP 8 leaves 16 heads per GPU: 2 x 16 x 1088 / 1152 = 30.2 FLOP/B, memory-bound everywhere
    tp8 = PATHS["MLA+RoPE absorbed"].context_intensity_formula(N_h=16, d_L=512, d_R=64, b=2)
    assert tp8 == Fraction(2 * 16 * 1088, 1152) and all(tp8 < ridge_point(g) for g in COMPUTE)


def test_step_intensity_with_weights_tends_to_the_cache_intensity():
    path = PATHS["MLA+RoPE absorbed"]
    B, n = by_name("B").symbol, N_KV.symbol
    limit = sp.limit(sp.limit(path.intensity, n, sp.oo), B, sp.oo)
    assert sp.simplify(limit - path.context_intensity) == 0


# --- 5: prefill ------------------------------------------------------------------------------

def test_prefill_crossover_by_hand():
    a, e = CHUNK_PATHS["MLA+RoPE absorbed" + Q], CHUNK_PATHS["MLA+RoPE naive" + Q]
    # per (query, key) pair and head: absorbed 512 + 64 + 512, re-expanded 128 + 64 + 128;
    # re-expanding costs 512 x (128 + 128) per key and head, once for all queries
    (x,) = sp.solve(sp.Eq(a.flops, e.flops), N_Q)
    at = {by_name(k).symbol: v for k, v in DS.items()}
    want = sp.Rational(4096 * 512 * 256, 4096 * 768 + 512 * 256)
    assert x.subs(at).subs(N_KV.symbol, 4096) == want
    assert float(x.subs(at).subs(N_KV.symbol, 4096)) == pytest.approx(163.84)
    assert sp.limit(x.subs(at), N_KV.symbol, sp.oo) == sp.Rational(512 * 256, 1024 - 256)
    # one query token is the decode step
    assert chunk_flops("MLA+RoPE absorbed" + Q, 1, N_KV=4096, **DS) == \
        PATHS["MLA+RoPE absorbed" + Q].formula(N_KV=4096, **DS)
    ratio = chunk_flops("MLA+RoPE absorbed" + Q, 4096, N_KV=4096, **DS) / \
        chunk_flops("MLA+RoPE naive" + Q, 4096, N_KV=4096, **DS)
    assert f"{ratio:.2f}" == "2.27"
    with pytest.raises(ValueError, match="N_Q"):
        chunk_flops("MHA", 0, N_KV=1)


# --- 6: merged vs factored weights ---------------------------------------------------------

def test_merged_matrices_are_bigger_than_their_factors():
    sizes = {k: v for k, v in DS.items() if k not in ("d_R", "d_Lq")}
    merged = PATHS["MLA absorbed merged"].weight_formula(**sizes)
    factored = PATHS["MLA absorbed"].weight_formula(**sizes)
    assert merged == 5120 * 512 + 128 * 2 * 5120 * 512 == 673_710_080
    assert factored == 5120 * 512 + 128 * (5120 * 128 + 128 * 512 + 512 * 128 + 128 * 5120)
    per_head_merged, per_head_factors = 5120 * 512, 5120 * 128 + 128 * 512
    assert (per_head_merged, per_head_factors) == (2_621_440, 720_896)
    assert f"{per_head_merged / per_head_factors:.1f}" == "3.6"
    # q_lora_rank: the factors per head are 1536 x 128 + 128 x 512
    assert 2_621_440 / (1536 * 128 + 128 * 512) == 10 and 1536 * 512 / (1536 * 128 + 128 * 512) == 3


# --- the notebooks and docs say it --------------------------------------------------------------

def test_notebook_04_quotes_the_recomputed_ratios():
    md, out = _markdown("04_rope_decoupling.ipynb"), _outputs("04_rope_decoupling.ipynb")
    assert "decode is limited by bytes read, not by FLOPs" not in md
    assert "The only correct decoder" not in md and "about 150x less\ncompute" not in md
    assert "about 91x less compute" in md and "section 2.1.3" in md
    assert "91x</b> cheaper than (a) at 128K" in out
    assert "150x cheaper than the naive extreme" in out
    assert "below 1,071 tokens" in out and "1,647 tokens" in out
    assert "H200         989.4 TF/s  4.80 TB/s   206.1 FLOP/B     109.1" in out
    assert "(06_capacity_planning.ipynb)" in md.split("## 6. Bytes or FLOPs")[1]
    # FlashMLA and prefill moved to the engines track (issue 40), with their numbers
    md5, out5 = _markdown(E05), _outputs(E05)
    assert "`h_q s_q >= 128`" in md5 and "$N_h N_Q \\ge 128$" in md5
    assert "20250422-new-kernel-deep-dive.md" in md5
    assert "512/3 = 170.67" in out5 and "absorbed/re-expand = 2.27" in out5
    assert "(engines/05_mla_decode_in_engines.ipynb)" in md
    assert "mla_attention.py" not in md and "20250422" not in md  # no engine sources in 04


def test_absorbed_mla_intensity_is_34_9_n_h_over_b_everywhere():
    """Issue 40 item 4: absorbed MLA with the decoupled RoPE key reads b (d_L + d_R) bytes per
    cached token and spends 2 N_h (2 d_L + d_R) FLOPs on it. At DeepSeek V2's widths (d_L 512,
    d_R 64): 2 (2 x 512 + 64) / (512 + 64) = 2 x 1088 / 576 = 2176 / 576 = 34/9, so
    34/9 N_h / b FLOPs per byte, about 4 N_h / b (3.78), not 2 N_h / b."""
    assert Fraction(2 * (2 * 512 + 64), 512 + 64) == Fraction(2176, 576) == Fraction(34, 9)
    N_h, b = by_name("N_h").symbol, by_name("b").symbol
    per_byte = PATHS["MLA+RoPE absorbed"].context_intensity.subs(
        {by_name("d_L").symbol: 512, by_name("d_R").symbol: 64})
    assert sp.simplify(per_byte - sp.Rational(34, 9) * N_h / b) == 0
    # bf16 (b = 2), 128 heads: 34/9 x 128 / 2 = 241.8 FLOPs per byte, past an H200's ridge point
    assert round(float(Fraction(34, 9) * 128 / 2), 1) == 241.8
    md, out = _markdown("04_rope_decoupling.ipynb"), _outputs("04_rope_decoupling.ipynb")
    assert "17*N_h/9 FLOPs per byte of cache" in out  # 34/9 N_h / b at b = 2
    assert "2 N_h / b" not in md and "2N_h/b" not in md.replace(" ", "")
    takeaways = md.split("## Takeaways")[1].split("## Exercises")[0]
    assert "about $4 N_h / b$" in takeaways and "\\frac{34}{9} N_h / b" in takeaways
    assert "\\frac{34}{9}" in md.split("## 6. Bytes or FLOPs")[1].split("## Takeaways")[0]


def test_notebook_03_says_reassociation_and_one_width_convention():
    md, out = _markdown("03_latent_attention_mla.ipynb"), _outputs("03_latent_attention_mla.ipynb")
    assert "can be computed once,\nahead of time" not in md
    assert "**Absorption in practice means reassociation, not merging**" in md
    assert "query side per head: merged 2,621,440 vs factors 720,896: 3.64x" in out
    assert "counts the whole key" not in md and "one convention for notebooks 03 and 04" in md
    assert "absorbed 256, expanded 1; H200 ridge point 206" in out


def test_one_meaning_of_d_qk_in_notebook_04():
    md = _markdown("04_rope_decoupling.ipynb")
    assert "Two meanings of $d_{QK}$" not in md and "counts the whole key" not in md
    assert "One meaning of $d_{QK}$" in md


def test_docs_quote_the_recomputed_ratio():
    models = (ROOT / "docs/models.md").read_text(encoding="utf-8")
    assert "about 150x fewer decode FLOPs per step at 128K than re-expanding keys" not in models
    assert "about **91x**" in models and "3.34 TFLOPs" in models and "reassociation" in models
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "150x" not in readme


# --- issue 25: MLA against MHA per cached token, and the fresh prompt's prefill ------------------

def test_absorbed_mla_takes_about_61x_less_time_per_cached_token_than_mha_on_an_h200():
    # By hand, per cached token of one layer: MHA reads 128 x (192 + 128) x 2 B = 81,920 B and does
    # 2 FLOPs per element; absorbed MLA reads (512 + 64) x 2 B = 1,152 B and does
    # 2 x 128 x (512 + 64 + 512) = 278,528 FLOPs. H200: 4.8 TB/s, 989.4 TFLOP/s dense BF16.
    bw, peak = Fraction(48 * 10**11), Fraction(9894 * 10**11)
    mha = max(Fraction(81920) / bw, Fraction(81920) / peak)
    mla = max(Fraction(1152) / bw, Fraction(278528) / peak)
    assert (CATALOG["H200"].bandwidth, peak_bf16_flops("H200")) == (bw, peak)
    at = {by_name(k).symbol: v for k, v in dict(N_h=128, d_QK=192, d_V=128, d_L=512, d_R=64,
                                                      b=2).items()}
    assert PATHS["MHA"].per_context_token.subs(at) == 81920
    assert PATHS["MLA+RoPE absorbed"].per_context_token.subs(at) == 278528
    assert round(float(mha / mla), 1) == 60.6 and mla == Fraction(278528) / peak  # compute-bound


def test_a_fresh_prompt_reexpands_at_every_length():
    # Per layer, N queries and N keys under the causal mask: N(N+1)/2 pairs. Absorbed pays
    # 2 N_h (2 d_L + d_R) per pair and absorbs W^UK, W^UV per query (2 N_h d_L (d_QK + d_V));
    # re-expanding pays 2 N_h (d_QK + d_R + d_V) per pair and the same 2 N_h d_L (d_QK + d_V)
    # per key. Pairs alone: N(N+1)/2 (278,528 - 81,920) = 33,554,432 N, so N + 1 = 341.33.
    per_key = 2 * 128 * 512 * (128 + 128)
    pair_a, pair_e = 2 * 128 * (2 * 512 + 64), 2 * 128 * (128 + 64 + 128)
    assert (per_key, pair_a, pair_e) == (33_554_432, 278_528, 81_920)
    assert Fraction(2 * per_key, pair_a - pair_e) - 1 == Fraction(1021, 3)  # 340.33: from 341 on
    ab, ex = (sp.Poly(CHUNK_PATHS[f"MLA+RoPE {m}{Q}"].flops, N_Q, N_KV.symbol).as_dict()
              for m in ("absorbed", "naive"))
    at = {by_name(k).symbol: v for k, v in DS.items()}
    assert int((ab[(1, 0)] - ex[(1, 0)]).subs(at)) == int(ex[(0, 1)].subs(at)) == per_key
    assert (int(ab[(1, 1)].subs(at)), int(ex[(1, 1)].subs(at))) == (pair_a, pair_e)
    md = _markdown(E05)  # moved from notebook 04 to the engines track (issue 40)
    assert "re-expanding would win only from 341 tokens" in md
    assert "320 MiB per layer for\n4,096 tokens" in md and 4096 * 128 * 320 * 2 == 320 * 2**20
