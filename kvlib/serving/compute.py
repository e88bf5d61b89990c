"""Peak dense BF16 tensor throughput per GPU, and the ridge point of a roofline
(notebook 04, "Bytes or FLOPs: the roofline").

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

from dataclasses import dataclass
from fractions import Fraction

from kvlib.serving.gpus import get_gpu

__all__ = ["Compute", "COMPUTE", "peak_bf16_flops", "ridge_point"]

TFLOPS = 10**12


@dataclass(frozen=True)
class Compute:
    """Peak dense BF16 tensor FLOP/s of one GPU, and where the figure comes from."""

    gpu: str
    bf16_flops: int
    source: str


COMPUTE: dict[str, Compute] = {c.gpu: c for c in (
    Compute("A100-40GB", 312 * TFLOPS,
            "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
            "(624 with sparsity)"),
    Compute("A100-80GB", 312 * TFLOPS,
            "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
            "(624 with sparsity)"),
    Compute("H100-80GB", 9894 * TFLOPS // 10,
            "NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5: peak BF16 "
            "Tensor TFLOPS 989.4 (1,978.9 with sparsity; the datasheet rounds to 1,979)"),
    Compute("H200", 9894 * TFLOPS // 10,
            "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: BF16 Tensor Core 1,979 TFLOPS "
            "with sparsity; the same GH100 tensor cores as H100 SXM5, 989.4 dense"),
    Compute("B200", 2250 * TFLOPS,
            "NVIDIA HGX B200 datasheet: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with "
            "sparsity (36 PFLOPS for 8 GPUs), 2.25 PFLOPS dense"),
    Compute("MI300X", 13074 * TFLOPS // 10,
            "AMD Instinct MI300X accelerator data sheet: peak BF16 1,307.4 TFLOPS "
            "(2,614.9 with sparsity)"),
    Compute("MI325X", 13074 * TFLOPS // 10,
            "AMD Instinct MI325X accelerator data sheet: peak BF16 1,307.4 TFLOPS "
            "(2,614.9 with sparsity)"),
)}


def peak_bf16_flops(gpu: str) -> int:
    """Peak dense BF16 tensor FLOP/s of ``gpu`` (a catalog name or alias)."""
    name = get_gpu(gpu).name
    if name not in COMPUTE:
        raise ValueError(f"no peak BF16 FLOP/s for {name} in kvlib.serving.compute; "
                         f"known: {', '.join(COMPUTE)}")
    return COMPUTE[name].bf16_flops


def ridge_point(gpu: str) -> Fraction:
    """Peak dense BF16 FLOP/s over HBM bandwidth: FLOPs per byte read, exact."""
    return Fraction(peak_bf16_flops(gpu), get_gpu(gpu).bandwidth)
