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
total where a public log shows one (A100 80GB, H100 80GB, H200, B200, L40S, L4, RTX 4090,
RTX 6000 Ada; each cited), else the datasheet's (the other parts, where no public message
seen here names the part beside its total)
figure. A datasheet's "141 GB" is read literally as 141 x 10^9 bytes
(``hbm_bytes``). Bandwidth is bytes per second, decimal, as the datasheets give
it. Every value can be overridden with :func:`get_gpu`.

A name is looked up exactly, or by an unambiguous spelling of the same part: any case, spaces,
hyphens or underscores, a leading "NVIDIA"/"AMD"/"Instinct"/"GeForce", the memory size where
the catalog holds one size of that GPU ("H200 141GB"), and the names CUDA reports
("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"). Nothing else resolves: no prefix, no
nearest name ("H20" was once read as an H200, "L40" as an L40S). A name of several parts
("A100") is refused with them; any other unknown name with the closest catalog names.

Where public messages show different CUDA totals for one part (the driver reserves a little
more or less), ``cuda_total_range`` holds the lowest and highest seen and the plan takes
``cuda_total_bytes``, the figure vLLM's own log prints: an H100 80GB shows 79.11 GiB in most
public messages and 79.22 GiB in vLLM's logs the catalog cites; the plan takes 79.22 GiB, and
a driver that reports 79.11 GiB leaves gpu_memory_utilization x 0.11 GiB less for the cache:
0.11 GiB at vLLM 0.34.0's default of 1.0 (its extensible KV cache), 0.92 x 0.11 GiB (about
0.1 GiB) at 0.33.0's 0.92. vLLM's default was 0.9 up to 0.19.1, 0.92 from 0.20.0 to 0.33.0 and
1.0 in 0.34.0 (``VLLM_DEFAULTS`` and ``DEFAULT_GPU_MEM_UTIL`` in
:mod:`kvlib.serving.engines.vllm.defaults`, which cite the lines).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from fractions import Fraction

from kvlib.core import validate

__all__ = ["GPU", "CATALOG", "get_gpu", "gpu_names", "resolve_gpu", "closest_gpus"]

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
    run (AMD's). vLLM picks its attention backends by it (:mod:`kvlib.serving.engines.vllm.layout`).
    cuda_total_range: (lowest, highest) CUDA totals public messages show, where drivers
    differ (None where one figure is known); cuda_total_source names both. The plan takes
    ``cuda_total_bytes``.
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
    cuda_total_range: tuple[int, int] | None = None

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


# where issue 36's search of public vLLM logs, nvidia-smi and PyTorch messages found no total
NO_CUDA_TOTAL = ("no CUDA total: no public vLLM log, nvidia-smi or PyTorch message with this "
                 "GPU's total was found (issue 36's search), so the plan takes the datasheet's")

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
        "/pull/12126 and /pull/10511), the figure the plan takes; most other public messages "
        "print 79.11 GiB (vllm-project/vllm issue #27508; the most frequent figure in the "
        "messages this project's issue 34 counted) and some 79.21 GiB (PyTorch, 8 x "
        "H100 HBM3): drivers differ by up to 0.11 GiB",
        bf16_flops=9894 * TFLOPS // 10,
        bf16_flops_source=("NVIDIA H100 Tensor Core GPU Architecture whitepaper, H100 SXM5: peak"
                           " BF16 Tensor TFLOPS 989.4 (1,978.9 with sparsity; the datasheet "
                           "rounds to 1,979)"),
        cuda_capability=(9, 0), cuda_total_range=(7911 * GiB // 100, 7922 * GiB // 100)),
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
        cuda_capability=(10, 3),
        cuda_total_source=NO_CUDA_TOTAL),
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
    # Issue 36: the GPUs people serve on that the catalog lacked. Compute capabilities from
    # NVIDIA's "CUDA GPU Compute Capability" table (developer.nvidia.com/cuda-gpus).
    GPU("H100-PCIe", 80 * GB, 2000 * GB_PER_S, "HBM2e",
        "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe: 80GB, 2TB/s)",
        cuda_capability=(9, 0)),
    GPU("H20", 96 * GB, 4000 * GB_PER_S, "HBM3",
        "NVIDIA Multi-Instance GPU User Guide (Supported GPUs: H20 96GB; NVIDIA publishes no "
        "H20 datasheet: the 4.0 TB/s is the figure the press reported from NVIDIA's "
        "announcement, e.g. tweakers.net news 215984; a later 141 GB H20 is not in the catalog)",
        cuda_total_source="no CUDA total: no public vLLM start-up log, nvidia-smi or PyTorch "
                          "message with the H20's total to two decimals was found (issue 36's "
                          "search; one pull request says 'CUDA-visible memory: ~95.1 GiB', "
                          "github.com/RightNow-AI/AutoMegaKernel/pull/3, rounded and not "
                          "vLLM's), so the plan takes the datasheet's",
        cuda_capability=(9, 0)),
    GPU("GB300", 279 * GB, 8000 * GB_PER_S, "HBM3e",
        "NVIDIA Blackwell Ultra datasheet (Oct 2025, GB300 NVL72 column: GPU memory 279 GB "
        "HBM3E, bandwidth 8 TB/s per GPU)",
        cuda_capability=(10, 3),
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("MI350X", 288 * GB, 8000 * GB_PER_S, "HBM3E",
        "AMD Instinct MI350X accelerator data sheet (288 GB HBM3E, 8 TB/s peak)"),
    GPU("MI355X", 288 * GB, 8000 * GB_PER_S, "HBM3E",
        "AMD Instinct MI355X accelerator data sheet (288 GB HBM3E, 8 TB/s peak)",
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("L40", 48 * GB, 864 * GB_PER_S, "GDDR6",
        "NVIDIA L40 GPU datasheet (48GB GDDR6 with ECC, 864 GB/s)",
        cuda_capability=(8, 9),
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("L20", 48 * GB, 864 * GB_PER_S, "GDDR6",
        "NVIDIA L20 product page (48GB GDDR6 with ECC, 864 GB/s; sold in China)",
        cuda_capability=(8, 9),
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("A10", 24 * GB, 600 * GB_PER_S, "GDDR6",
        "NVIDIA A10 Tensor Core GPU datasheet (24GB GDDR6, 600 GB/s)",
        cuda_capability=(8, 6),
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("A10G", 24 * GB, 600 * GB_PER_S, "GDDR6",
        "Amazon EC2 G5 instance page (NVIDIA A10G Tensor Core GPU, 24 GB per GPU; NVIDIA "
        "publishes no A10G datasheet: 600 GB/s is the A10's, the same GA102 with 24 GB GDDR6)",
        cuda_capability=(8, 6),
        cuda_total_source=NO_CUDA_TOTAL),
    GPU("RTX-A6000", 48 * GB, 768 * GB_PER_S, "GDDR6",
        "NVIDIA RTX A6000 datasheet (48 GB GDDR6 with ECC, 768 GB/s)",
        cuda_capability=(8, 6)),
    GPU("RTX-6000-Ada", 48 * GB, 960 * GB_PER_S, "GDDR6",
        "NVIDIA RTX 6000 Ada Generation datasheet (48GB GDDR6 with ECC, 960 GB/s)",
        46068 * MiB, "nvidia-smi 46068MiB beside 'NVIDIA RTX 6000 Ada Gene...' "
        "(github.com/DINGYANB/MTVCrafter/issues/21)",
        4443 * GiB // 100,
        "PyTorch's out-of-memory message 'total capacity of 44.43 GiB' on an NVIDIA RTX 6000 "
        "Ada Generation (github.com/DINGYANB/MTVCrafter/issues/21)",
        cuda_capability=(8, 9)),
    GPU("RTX-PRO-6000", 96 * GB, 1792 * GB_PER_S, "GDDR7",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (96GB GDDR7 with ECC, "
        "1,792 GB/s; the Max-Q Workstation Edition has the same memory; the Server Edition "
        "is not in the catalog)",
        cuda_capability=(12, 0),
        cuda_total_source=NO_CUDA_TOTAL),
)}

# Other spellings of one part, compared after _key (case, separators and a vendor prefix
# dropped). The memory size of a part the catalog holds in one size is added by _spellings.
_ALIASES = {
    "A100-80GB": ("A100 SXM4 80GB", "A100-SXM-80GB", "A100 80G"),
    "A100-40GB": ("A100 SXM4 40GB", "A100-SXM-40GB", "A100 40G"),
    "H100-80GB": ("H100 SXM", "H100 SXM5", "H100 80GB HBM3", "H100 80G"),
    "H100-NVL": ("H100 NVL 94GB",),
    "H200": ("H200 SXM",),
    "RTX-4090": ("4090", "RTX 4090"),
    "RTX-5090": ("5090", "RTX 5090"),
    "RTX-A6000": ("A6000",),
    "RTX-6000-Ada": ("RTX 6000 Ada Generation", "6000 Ada"),
    "RTX-PRO-6000": ("RTX PRO 6000 Blackwell", "RTX PRO 6000 Blackwell Workstation Edition",
                     "RTX PRO 6000 Blackwell Max-Q Workstation Edition", "PRO 6000"),
}

# A name several parts share: refused with the parts.
_FAMILIES = {"A100": ("A100-40GB", "A100-80GB"),
             "H100": ("H100-80GB", "H100-NVL", "H100-PCIe")}

_VENDOR = re.compile(r"^(?:nvidia|amd|instinct|geforce)+")


def _key(name: str) -> str:
    """Lower case, letters and digits only, a leading vendor word dropped."""
    key = "".join(ch for ch in str(name).lower() if ch.isalnum())
    return _VENDOR.sub("", key)


def _sizes() -> dict[str, int]:
    """GB per GPU name, for names without a size in them (one size of that GPU here)."""
    return {n: round(g.hbm_bytes / GB) for n, g in CATALOG.items()
            if not re.search(r"\d+GB$", n)}


def _spellings() -> dict[str, str]:
    """Every key that names a part, to its catalog name; no key names two parts."""
    found: dict[str, str] = {}
    sizes = _sizes()
    for name in CATALOG:
        keys = {_key(name)} | {_key(a) for a in _ALIASES.get(name, ())}
        if name in sizes:
            keys |= {k + f"{sizes[name]}{unit}" for k in set(keys) for unit in ("gb", "g")}
        for k in keys:
            if found.setdefault(k, name) != name:
                raise AssertionError(f"{k!r} would name both {found[k]} and {name}")
    return found


_SPELLINGS = _spellings()


def gpu_names() -> list[str]:
    return list(CATALOG)


def closest_gpus(name: str, n: int = 4) -> list[str]:
    """The catalog names nearest ``name`` (by its spellings), nearest first."""
    full = _key(name)
    # "H200 96GB" is compared as "H200" too: every way of reading a size off its end
    stems = {full[:i] for i in range(1, len(full)) if re.fullmatch(r"[1-9]\d*gb?", full[i:])}
    scored: dict[str, float] = {}
    for key in {full} | stems:
        for k, part in _SPELLINGS.items():
            ratio = difflib.SequenceMatcher(None, key, k).ratio()
            if key and (k.startswith(key) or key.startswith(k)):
                ratio += 0.25
            scored[part] = max(scored.get(part, 0.0), ratio)
    ranked = sorted(scored, key=lambda p: (-scored[p], list(CATALOG).index(p)))
    return [p for p in ranked if scored[p] >= 0.5][:n] or ranked[:n]


def resolve_gpu(name: str) -> str:
    """The catalog name ``name`` spells (see the module's docstring), or ValueError: one
    line naming the value and the parts it could mean."""
    found = _SPELLINGS.get(_key(name))
    if found is not None:
        return found
    family = {_key(f): parts for f, parts in _FAMILIES.items()}.get(_key(name))
    if family:
        raise ValueError(f"GPU {name!r} names {len(family)} parts: choose one of "
                         f"{', '.join(family)}")
    raise ValueError(f"GPU must be one of the catalog's {len(CATALOG)} names, got {name!r}: "
                     f"closest {', '.join(closest_gpus(name))} (all: kvlib plan --help; "
                     "another GPU: the nearest part with --hbm-gib)")


def get_gpu(name: str, *, hbm_bytes: int | None = None, bandwidth: int | None = None) -> GPU:
    """The catalog entry ``name`` (any spelling :func:`resolve_gpu` takes), with any value
    overridden.

    ValueError names the value and the closest catalog names. Overriding the capacity drops the
    reported totals (nvidia-smi's and CUDA's), which described the catalog part:
    the given memory is then the total that gpu_memory_utilization multiplies.
    """
    found = resolve_gpu(name)
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
