"""A small GPU catalog for capacity planning (notebook 06, "The GPUs").

Each entry holds the memory capacity and peak memory bandwidth from the
vendor's datasheet, with the datasheet named, and two totals the device itself
reports where a public log shows them:

* ``reported_bytes``: ``nvidia-smi``'s ``memory.total`` (MiB), e.g. 143,771 MiB
  = 150,754,820,096 B (150.75 GB) on an H200;
* ``cuda_total_bytes``: the total CUDA reports (``cudaMemGetInfo``, read by
  ``torch.accelerator.get_memory_info`` in ``MemorySnapshot.measure``,
  ``vllm/utils/mem_utils.py``, vLLM 0.33.0). This is the number vLLM multiplies by
  ``gpu_memory_utilization`` (``request_memory`` in ``vllm/v1/worker/utils.py``,
  vLLM 0.33.0: ``math.ceil(total_memory * gpu_memory_utilization)``). It is
  *smaller* than nvidia-smi's total: on one 8 x H200 node whose nvidia-smi shows
  ``143771MiB`` per GPU, vLLM logs ``total_gpu_memory (139.81GiB)`` (= 143,165 MiB;
  PyTorch's out-of-memory messages on other H200 hosts print "total capacity of
  139.80 GiB" or "139.81 GiB", depending on the driver). vLLM prints GiB to two
  decimals, so the catalog keeps the printed figure, floor(13981 x 2^30 / 100) B.

:attr:`GPU.total_memory_bytes` is what capacity planning multiplies: the CUDA
total where a public log shows one (A100 80GB, H100 80GB, H200, B200, L40S, L4, RTX 4090;
each cited), else the datasheet's (A100 40GB, H100 NVL, B300, GB200, the AMD parts and the
RTX 5090, where no public message names the part beside its total)
figure. A datasheet's "141 GB" is read literally as 141 x 10^9 bytes
(``hbm_bytes``). Bandwidth is bytes per second, decimal, as the datasheets give
it. Every value can be overridden with :func:`get_gpu`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from kvlib.core import validate

__all__ = ["GPU", "CATALOG", "get_gpu", "gpu_names"]

GB = 10**9
MiB = 1024**2
GiB = 1024**3
TB_PER_S = 10**12
GB_PER_S = 10**9
TFLOPS = 10**12


@dataclass(frozen=True)
class GPU:
    """One accelerator.

    hbm_bytes: memory capacity per GPU, bytes (datasheet, decimal GB).
    bandwidth: peak memory bandwidth per GPU, bytes per second (datasheet).
    memory: the memory technology, e.g. "HBM3e".
    source: the datasheet the two numbers come from.
    reported_bytes: ``nvidia-smi`` ``memory.total`` in bytes where a public log
    shows it (None otherwise); reported_source says where.
    cuda_total_bytes: the total ``cudaMemGetInfo`` reports, which vLLM multiplies by
    ``gpu_memory_utilization`` (None where no public log shows it); cuda_total_source
    says where.
    bf16_flops: peak dense BF16 tensor FLOP/s (datasheet, without sparsity; None where
    kvlib has no figure); bf16_flops_source names the datasheet (notebook 04's roofline,
    :mod:`kvlib.serving.compute`).
    cuda_capability: the CUDA compute capability (major, minor), from NVIDIA's table "CUDA
    GPU Compute Capability" (developer.nvidia.com/cuda-gpus); None for a part CUDA does not
    run (AMD's). vLLM picks its attention backends by it (:mod:`kvlib.serving.vllm_layout`).
    """

    name: str
    hbm_bytes: int
    bandwidth: int
    memory: str
    source: str
    reported_bytes: int | None = None
    reported_source: str = ""
    cuda_total_bytes: int | None = None
    cuda_total_source: str = ""
    bf16_flops: int | None = None
    bf16_flops_source: str = ""
    cuda_capability: tuple[int, int] | None = None

    @property
    def total_memory_bytes(self) -> int:
        """What vLLM multiplies by gpu_memory_utilization: the CUDA total, else the datasheet's."""
        return self.cuda_total_bytes if self.cuda_total_bytes is not None else self.hbm_bytes

    def __post_init__(self):
        validate.positive_int(f"{self.name} memory (bytes)", self.hbm_bytes)
        validate.positive_int(f"{self.name} bandwidth (bytes/s)", self.bandwidth)

    def __repr__(self) -> str:
        return (f"GPU({self.name}: {Fraction(self.hbm_bytes, GB)} GB {self.memory}, "
                f"{Fraction(self.bandwidth, TB_PER_S)} TB/s)")


CATALOG: dict[str, GPU] = {g.name: g for g in (
    GPU("A100-40GB", 40 * GB, 1555 * GB_PER_S, "HBM2",
        "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM: 40GB HBM2, 1,555 GB/s)",
        bf16_flops=312 * TFLOPS,
        bf16_flops_source=("NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
                           "(624 with sparsity)"),
        cuda_capability=(8, 0)),
    GPU("A100-80GB", 80 * GB, 2039 * GB_PER_S, "HBM2e",
        "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: 80GB HBM2e, 2,039 GB/s)",
        81920 * MiB, "nvidia-smi 81920MiB, quoted in modal-labs/modal-client PR #2797",
        7925 * GiB // 100,
        "PyTorch's out-of-memory message 'total capacity of 79.25 GiB' on an A100 80GB "
        "(github.com/HiDream-ai/VAREdit/issues/6; the same figure in "
        "github.com/levihsu/OOTDiffusion/issues/235); SXM or PCIe not stated",
        bf16_flops=312 * TFLOPS,
        bf16_flops_source=("NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS "
                           "(624 with sparsity)"),
        cuda_capability=(8, 0)),
    GPU("H100-80GB", 80 * GB, 3350 * GB_PER_S, "HBM3",
        "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: 80GB, 3.35 TB/s)",
        81559 * MiB, "nvidia-smi 81559MiB, quoted in modal-labs/modal-client PR #2797",
        7922 * GiB // 100,
        "vLLM's log 'total_gpu_memory (79.22GiB)' on an H100-80G (github.com/vllm-project/vllm"
        "/pull/12126 and /pull/10511); other public messages print 79.21 GiB (PyTorch, 8 x "
        "H100 HBM3) and 79.11 GiB (vllm-project/vllm issue #27508): drivers differ by up to "
        "0.1 GiB",
        bf16_flops=9894 * TFLOPS // 10,
        bf16_flops_source=("NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5: peak"
                           " BF16 Tensor TFLOPS 989.4 (1,978.9 with sparsity; the datasheet "
                           "rounds to 1,979)"),
        cuda_capability=(9, 0)),
    GPU("H100-NVL", 94 * GB, 3900 * GB_PER_S, "HBM3",
        "NVIDIA H100 Tensor Core GPU datasheet (H100 NVL: 94GB, 3.9 TB/s)",
        cuda_capability=(9, 0)),
    GPU("H200", 141 * GB, 4800 * GB_PER_S, "HBM3e",
        "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 141GB HBM3e, 4.8 TB/s)",
        143771 * MiB, "nvidia-smi 143771MiB in public H200 logs",
        13981 * GiB // 100,
        "vLLM's start-up log 'total_gpu_memory (139.81GiB)' on an 8 x H200 node whose "
        "nvidia-smi shows 143771MiB (vLLM prints GiB to 2 decimals)",
        bf16_flops=9894 * TFLOPS // 10,
        bf16_flops_source=("NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: BF16 Tensor Core "
                           "1,979 TFLOPS with sparsity; the same GH100 tensor cores as H100 "
                           "SXM5, 989.4 dense"),
        cuda_capability=(9, 0)),
    GPU("B200", 180 * GB, 8000 * GB_PER_S, "HBM3e",
        "NVIDIA DGX B200 datasheet (1,440 GB HBM3e and 64 TB/s for 8 GPUs: 180 GB, 8 TB/s each)",
        cuda_total_bytes=17835 * GiB // 100,
        cuda_total_source="torch.cuda's total on an NVIDIA B200, 'Total VRAM: 178.35 GB' (GiB) "
                          "in Unsloth's banner (github.com/unslothai/unsloth/issues/3411); "
                          "PyTorch's out-of-memory messages print 178.35 or 178.36 GiB",
        bf16_flops=2250 * TFLOPS,
        bf16_flops_source=("NVIDIA HGX B200 datasheet: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU "
                           "with sparsity (36 PFLOPS for 8 GPUs), 2.25 PFLOPS dense"),
        cuda_capability=(10, 0)),
    # Blackwell Ultra and GB200: figures read from verbatim copies of NVIDIA's pages (this
    # project's machines cannot reach nvidia.com); GB200's 186 GB also from NVIDIA's MIG guide.
    GPU("B300", 270 * GB, 7700 * GB_PER_S, "HBM3e",
        "NVIDIA Blackwell Ultra datasheet (Oct 2025, HGX B300 column: GPU memory 270 GB HBM3E, "
        "bandwidth 7.7 TB/s; 8 x 270 GB = the HGX page's 2.1 TB; the chip holds up to 288 GB, "
        "'HBM capacity varies by SKU': GB300 has 279 GB at 8 TB/s)",
        bf16_flops=2250 * TFLOPS,
        bf16_flops_source=("NVIDIA Blackwell Ultra datasheet, HGX B300: FP16/BF16 Tensor Core "
                           "4.5 PFLOPS, a sparse figure ('Dense is 1/2 sparse spec shown'): "
                           "2.25 PFLOPS dense"),
        cuda_capability=(10, 3)),
    GPU("GB200", 186 * GB, 8000 * GB_PER_S, "HBM3e",
        "NVIDIA GB200 NVL72 product page (13.4 TB HBM3E and 576 TB/s for 72 GPUs: 186 GB, "
        "8 TB/s each; NVIDIA Multi-Instance GPU User Guide, Supported GPUs: GB200 186GB; "
        "the 2024 preliminary page said 13.5 TB, 192 GB per GPU)",
        bf16_flops=2500 * TFLOPS,
        bf16_flops_source=("NVIDIA GB200 NVL72 product page: FP16/BF16 Tensor Core 360 PFLOPS "
                           "for 72 GPUs, sparse ('Dense is one-half sparse spec shown'): "
                           "2.5 PFLOPS dense per GPU"),
        cuda_capability=(10, 0)),
    GPU("MI300X", 192 * GB, 5300 * GB_PER_S, "HBM3",
        "AMD Instinct MI300X accelerator data sheet (192 GB HBM3, 5.3 TB/s peak)",
        bf16_flops=13074 * TFLOPS // 10,
        bf16_flops_source=("AMD Instinct MI300X accelerator data sheet: peak BF16 1,307.4 TFLOPS"
                           " (2,614.9 with sparsity)")),
    GPU("MI325X", 256 * GB, 6000 * GB_PER_S, "HBM3E",
        "AMD Instinct MI325X accelerator data sheet (256 GB HBM3E, 6 TB/s peak)",
        bf16_flops=13074 * TFLOPS // 10,
        bf16_flops_source=("AMD Instinct MI325X accelerator data sheet: peak BF16 1,307.4 TFLOPS"
                           " (2,614.9 with sparsity)")),
    GPU("L40S", 48 * GB, 864 * GB_PER_S, "GDDR6",
        "NVIDIA L40S datasheet (48GB GDDR6 with ECC, 864 GB/s)",
        46068 * MiB, "nvidia-smi 46068MiB, quoted in modal-labs/modal-client PR #2797",
        4442 * GiB // 100,
        "vLLM 0.10.2's log 'Free memory on device (43.93/44.42 GiB) on startup' on 8 x L40S "
        "(github.com/tim-roethig/ai-platform, platform/docs/qwen3_235b_on_8xl40s.md); PyTorch "
        "prints 44.42 GiB too (github.com/stepfun-ai/Step-Video-T2V/issues/8)",
        cuda_capability=(8, 9)),
    GPU("L4", 24 * GB, 300 * GB_PER_S, "GDDR6",
        "NVIDIA L4 Tensor Core GPU datasheet (24GB GDDR6, 300 GB/s)",
        cuda_total_bytes=2203 * GiB // 100,
        cuda_total_source="PyTorch's out-of-memory message 'total capacity of 22.03 GiB' on an "
                          "L4 (github.com/ArcInstitute/evo2/issues/190)",
        cuda_capability=(8, 9)),
    GPU("RTX-4090", 24 * GB, 1008 * GB_PER_S, "GDDR6X",
        "NVIDIA GeForce RTX 4090 specifications (24 GB GDDR6X, 384-bit at 21 Gbps: 1,008 GB/s)",
        cuda_total_bytes=2364 * GiB // 100,
        cuda_total_source="PyTorch 2.1's out-of-memory message 'total capacty of 23.64 GiB' on an "
                          "RTX 4090 (github.com/3DTopia/Phidias-Diffusion/issues/8; an older "
                          "driver printed 23.68 GiB, github.com/zai-org/CogVideo/issues/36)",
        cuda_capability=(8, 9)),
    GPU("RTX-5090", 32 * GB, 1792 * GB_PER_S, "GDDR7",
        "NVIDIA GeForce RTX 5090 specifications (32 GB GDDR7, 512-bit at 28 Gbps: 1,792 GB/s)",
        cuda_capability=(12, 0)),
)}

# Other spellings of one part. A bare "A100" or "H100" names two parts and is refused.
_ALIASES = {"a100-80g": "A100-80GB", "a100-40g": "A100-40GB", "h100-80g": "H100-80GB",
            "h100-sxm": "H100-80GB", "h200-141gb": "H200", "4090": "RTX-4090",
            "5090": "RTX-5090"}


def _key(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def gpu_names() -> list[str]:
    return list(CATALOG)


def get_gpu(name: str, *, hbm_bytes: int | None = None, bandwidth: int | None = None) -> GPU:
    """The catalog entry ``name`` (case-insensitive), with any value overridden.

    ValueError lists the known names. Overriding the capacity drops the
    reported totals (nvidia-smi's and CUDA's), which described the catalog part:
    the given memory is then the total that gpu_memory_utilization multiplies.
    """
    keyed = {_key(k): k for k in CATALOG} | {_key(k): v for k, v in _ALIASES.items()}
    found = keyed.get(_key(name))
    if found is None:
        parts = [k for k in CATALOG if _key(k).startswith(_key(name))] if _key(name) else []
        if len(parts) > 1:
            raise ValueError(f"GPU {name!r} names {len(parts)} parts: choose one of "
                             f"{', '.join(parts)}")
        if len(parts) == 1:
            found = parts[0]
        else:
            raise ValueError(f"GPU must be one of {', '.join(CATALOG)}, got {name!r}")
    gpu = CATALOG[found]
    if hbm_bytes is not None:
        gpu = replace(gpu, hbm_bytes=validate.positive_int("GPU memory (bytes)", hbm_bytes),
                      source=f"{gpu.source}; memory overridden",
                      reported_bytes=None, reported_source="",
                      cuda_total_bytes=None, cuda_total_source="")
    if bandwidth is not None:
        gpu = replace(gpu, bandwidth=validate.positive_int("GPU bandwidth (bytes/s)", bandwidth),
                      source=f"{gpu.source}; bandwidth overridden")
    return gpu
