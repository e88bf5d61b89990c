"""Peak dense BF16 tensor throughput per GPU, and the ridge point of a roofline
(notebook 04, "Bytes or FLOPs: the roofline").

The figures live in the GPU catalog (``GPU.bf16_flops``, :mod:`kvlib.serving.gpus`).
Each value is the datasheet's dense figure (without 2:4 structured sparsity; where a
datasheet prints only the sparse figure, half of it, as its footnote says), FLOP/s,
with the datasheet named. The GPUs' memory bandwidth comes from
:data:`kvlib.serving.gpus.CATALOG`; the **ridge point** peak / bandwidth (FLOPs per
byte) is where a kernel stops being limited by bytes read and starts being limited
by arithmetic. Peaks are what the datasheet promises at full clock: kernels reach
less (FlashMLA's write-up measures its H800 throttling to about 865 of the 990
TFLOP/s), which lowers the real ridge point.
"""

from __future__ import annotations

from fractions import Fraction

from kvlib.serving.gpus import CATALOG, get_gpu

__all__ = ["gpus_with_flops", "peak_bf16_flops", "ridge_point"]

def gpus_with_flops() -> list[str]:
    """The catalog's GPUs that have a peak BF16 figure, in catalog order."""
    return [n for n, g in CATALOG.items() if g.bf16_flops is not None]


def peak_bf16_flops(gpu: str) -> int:
    """Peak dense BF16 tensor FLOP/s of ``gpu`` (a catalog name or alias): ``GPU.bf16_flops``."""
    g = get_gpu(gpu)
    if g.bf16_flops is None:
        raise ValueError(f"no peak BF16 FLOP/s for {g.name} in the GPU catalog; known: "
                         f"{', '.join(gpus_with_flops())}")
    return g.bf16_flops


def ridge_point(gpu: str) -> Fraction:
    """Peak dense BF16 FLOP/s over HBM bandwidth: FLOPs per byte read, exact."""
    return Fraction(peak_bf16_flops(gpu), get_gpu(gpu).bandwidth)
