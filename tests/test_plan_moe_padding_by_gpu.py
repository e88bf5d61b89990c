"""The plan's weights per GPU use the MoE backend of the GPU planned (issue 42: weights as vLLM
0.34.0 allocates them): gpt-oss's MXFP4 experts are padded by Hopper's Triton kernels (rows of a
rank to 64), datacenter Blackwell's TRT-LLM kernels (hidden to 256, rows to 128) and Ampere's
Marlin (the same), each worked by hand in tests/test_quant_formats.py; a GPU whose backend
kvlib does not trace (AMD, consumer Blackwell) is refused naming why, not planned as Hopper."""

import pytest

from kvlib import Deployment
from kvlib.models.catalog import bundled_config, load_model
from kvlib.models.quantization import mxfp4_moe_padding
from kvlib.serving.weights import checkpoint_weights


@pytest.mark.parametrize("gpu, sm", [("H200", 90), ("B200", 100), ("A100-80GB", 80)])
def test_the_plan_takes_the_gpus_backend(gpu, sm):
    d = Deployment(load_model("gpt-oss-120b"), gpu, 8, 8)
    assert d.weights_bytes_per_gpu == checkpoint_weights(bundled_config("gpt-oss-120b"), 8,
                                                         sm=sm).per_gpu


def test_blackwell_pads_more_than_hopper():
    """gpt-oss-120b at TP 8: 2880 / 8 = 360 rows a rank; Hopper rounds them to 384 (64 x 6)
    and keeps hidden 2880; Blackwell rounds rows to 384 (128 x 3) and hidden to 3072."""
    assert mxfp4_moe_padding(2880, 360, 90) == (2880, 384)
    assert mxfp4_moe_padding(2880, 360, 100) == (3072, 384)
    assert Deployment(load_model("gpt-oss-120b"), "B200", 8, 8).weights_bytes_per_gpu > \
        Deployment(load_model("gpt-oss-120b"), "H200", 8, 8).weights_bytes_per_gpu


@pytest.mark.parametrize("gpu, words", [("MI300X", "without a CUDA compute capability"),
                                        ("RTX-5090", "sm 120")])
def test_an_untraced_backend_is_refused_by_name(gpu, words):
    with pytest.raises(ValueError, match=words):
        _ = Deployment(load_model("gpt-oss-120b"), gpu, 8, 8).weights_bytes_per_gpu


def test_a_dense_model_is_the_same_on_every_gpu():
    llama = load_model("llama-3.1-8b")
    assert Deployment(llama, "MI300X", 1, 1).weights_bytes_per_gpu == \
        Deployment(llama, "H200", 1, 1).weights_bytes_per_gpu == 8_030_261_248 * 2
