"""Notebook 08's explorer (kvlib.views.widgets.compressed): its numbers are the models' own, its
axes hold every curve, and bad input is named."""

import pytest

from kvlib.models.catalog import load_model
from kvlib.views.figures.compressed import CONTEXTS, KINDS, sweep
from kvlib.views.widgets.compressed import compare, compressed_explorer, render

GIB = 1024**3


def test_kinds_are_seven_bundled_models_in_order():
    assert [k for k, _ in KINDS] == ["MHA", "GQA", "MLA", "MLA + indexer", "compressed",
                                     "Gated DeltaNet hybrid", "shared KV"]


def test_values_by_hand_at_128k():
    c = compare(131072, "bf16")
    at = dict(zip((x.name for x in c.curves), c.at, strict=True))
    assert at["llama-2-7b"] == 32 * 2 * 32 * 128 * 2 * 131072          # MHA, every head
    assert at["llama-3.1-8b"] == 32 * 2 * 8 * 128 * 2 * 131072          # 8 KV heads
    assert at["deepseek-v3"] == 61 * (512 + 64) * 2 * 131072            # latent + RoPE key
    assert at["deepseek-v3.2"] == 61 * ((512 + 64) * 2 + 132) * 131072  # + fp8 indexer key
    # Gemma 3n E4B: 4 full and 16 sliding (512) layers store, 2 KV heads of 256
    assert at["gemma-3n-e4b"] == 2 * 2 * 256 * 2 * (4 * 131072 + 16 * 512)


def test_fp8_halves_the_models_that_take_a_kv_dtype_and_not_v4():
    bf16, fp8 = compare(131072, "bf16"), compare(131072, "fp8")
    at16 = dict(zip((x.name for x in bf16.curves), bf16.at, strict=True))
    at8 = dict(zip((x.name for x in fp8.curves), fp8.at, strict=True))
    assert at8["llama-3.1-8b"] * 2 == at16["llama-3.1-8b"]
    assert at8["deepseek-v4-pro"] == at16["deepseek-v4-pro"]  # fp8_ds_mla either way


def test_every_curve_fits_the_fixed_axis_at_both_dtypes():
    lo, hi = 2.0**-8, 2.0**11  # the explorer's value axis, GiB
    for dtype in ("bf16", "fp8"):
        for curve in sweep(dtype):
            for v in curve.bytes:
                assert lo <= v / GIB <= hi, (dtype, curve.name, v)


def test_sweep_is_the_model_total_at_every_context():
    for curve in sweep("bf16"):
        spec = load_model(curve.name)
        assert curve.bytes == tuple(spec.total_bytes_per_sequence(t, 2) for t in CONTEXTS)


def test_render_compares_with_v4():
    html = render(compare(1 << 20, "bf16"))
    assert "x V4-Pro" in html and "1.0x" in html and "past its longest context" in html


@pytest.mark.parametrize("context, dtype, match", [(100_000, "bf16", "context=100000"),
                                                   (131072, "int4", "kv_dtype='int4'")])
def test_bad_input_is_named(context, dtype, match):
    with pytest.raises(ValueError, match=match):
        compare(context, dtype)


def test_explorer_redraws_once_per_change():
    e = compressed_explorer()
    before = e.redraws
    e.controls["context"].value = 1 << 20
    e.controls["kv_dtype"].value = "fp8"
    assert e.redraws == before + 2
