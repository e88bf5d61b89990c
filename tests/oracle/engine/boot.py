"""vLLM 0.34.0 on a machine without a GPU: what must be true before its planning code runs.

Import this module first, in the oracle's own environment (``make oracle``), never in
kvlib's. vLLM's scheduler, KV-cache manager, cache planning and model classes are Python;
what they cannot have here is CUDA: its kernels, its device, its streams. Each shim below
stands in for one of those, and none changes what is planned:

* **The platform.** vLLM picks attention backends, block sizes and the hybrid cache manager
  from ``current_platform``. :class:`FakeCuda` is vLLM's own ``CudaPlatform``, answering
  for the GPU in :data:`GPU` (compute capability, total memory, name). It is installed before
  any module binds ``current_platform``: a module that bound it earlier would keep vLLM's
  ``UnspecifiedPlatform``, which turns the hybrid KV-cache manager off
  (vllm/config/vllm.py:2153 in 0.34.0).
* **Kernel libraries.** ``vllm._C`` and friends are compiled for CUDA; some model modules ask
  about them at import time (``cutlass_scaled_mm_supports_block_fp8``) or register fake
  implementations for their operators. The modules are empty stand-ins, ``torch.ops`` namespaces
  answer ``False``, and registering a fake for an operator that is not loaded is skipped.
  FlashAttention's and FlashMLA's extension modules are stand-ins too, so that backend
  validation sees them as installed, as on a GPU machine.
* **Devices and streams.** Layers are built on the meta device (:class:`MetaTensors`: shapes,
  no memory), including tensors that ask for "cuda" by name; ``torch.cuda.Stream`` is a
  no-op object; the current device is index 0, with an H100's 132 SMs where a kernel sizes
  its workspace by them.
* **Model inspection** runs in this process, where the platform is set (vLLM runs it in a
  subprocess, which would not see it).
* **Import-time helpers without a GPU:** ``triton.Config`` keeps its fields (kernel tables are
  filtered by ``num_stages`` at import); torchvision, imported by multimodal processors only,
  is a placeholder; a Hopper router-GEMM warm-up hook is skipped; the sparse indexer's DeepGEMM
  check passes (its cache spec does not depend on the kernel); Gemma 3n's timm vision tower
  is an empty module (:class:`_GemmaTowers`: timm is not installed, and the tower holds no
  cache), and its sparse GELU's quantile is computed on the CPU (a float, not a buffer).
"""

from __future__ import annotations

import os
import sys
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")

_EXTENSIONS = ("vllm._C_stable_libtorch", "vllm._moe_C_stable_libtorch", "vllm._C",
               "vllm.vllm_flash_attn._vllm_fa2_C", "vllm.vllm_flash_attn._vllm_fa3_C",
               "vllm._flashmla_C", "vllm._flashmla_extension_C")
for _name in _EXTENSIONS:
    sys.modules.setdefault(_name, types.ModuleType(_name))

import torch  # noqa: E402
import torch.library  # noqa: E402
import vllm.platforms  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from vllm.platforms.cuda import CudaPlatform  # noqa: E402
from vllm.platforms.interface import DeviceCapability  # noqa: E402

GPU = {"capability": (9, 0), "total": 150_109_880_320, "name": "NVIDIA H200"}


class FakeCuda(CudaPlatform):
    """vLLM's CUDA platform, answering for the GPU in :data:`GPU`."""

    @classmethod
    def get_device_capability(cls, device_id=0):
        return DeviceCapability(*GPU["capability"])

    @classmethod
    def get_device_total_memory(cls, device_id=0):
        return GPU["total"]

    @classmethod
    def get_device_name(cls, device_id=0):
        return GPU["name"]

    @classmethod
    def is_fully_connected(cls, ids):
        return True

    @classmethod
    def current_device(cls):
        return "meta"

    @classmethod
    def num_compute_units(cls, device_id=0):
        return 132  # an H100/H200's SMs: kernels size workspaces by it, caches do not


vllm.platforms._current_platform = FakeCuda()


def set_gpu(capability: tuple[int, int], total_bytes: int, name: str) -> None:
    """The GPU vLLM plans for from now on (before building a config)."""
    GPU.update(capability=tuple(capability), total=int(total_bytes), name=name)


class _NoKernels:
    """A kernel library that is not here: any name is another placeholder, a call is False."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        return _NoKernels(f"{self._name}.{op}")

    def __call__(self, *args, **kwargs):
        return False


for _ns in ("_C", "_moe_C", "_C_cache_ops", "_C_custom_ar", "_vllm_fa2_C", "_vllm_fa3_C",
            "_rocm_C", "_flashmla_C", "_flashmla_extension_C"):
    setattr(torch.ops, _ns, _NoKernels(_ns))

_register_fake = torch.library.Library._register_fake


def _register_fake_if_loaded(self, op_name, fn, *args, **kwargs):
    try:
        return _register_fake(self, op_name, fn, *args, **kwargs)
    except RuntimeError:  # the operator lives in a CUDA extension that is not loaded
        return None


torch.library.Library._register_fake = _register_fake_if_loaded
_register = torch.library.register_fake


def _register_fake_function(op, func=None, *args, **kwargs):
    try:
        return _register(op, func, *args, **kwargs)
    except (RuntimeError, ValueError):
        return (lambda f: f) if func is None else None


torch.library.register_fake = _register_fake_function


class _NoStream:
    """``torch.cuda.Stream`` / ``Event`` without CUDA."""

    def __init__(self, *args, **kwargs):
        pass

    def wait_stream(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


torch.cuda.Stream = _NoStream
torch.cuda.Event = _NoStream
torch.accelerator.current_device_index = lambda: 0
torch.accelerator.empty_cache = lambda: None

_FACTORIES = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn,
              torch.arange, torch.tensor, torch.empty_strided, torch.linspace, torch.eye,
              torch.randint, torch.zeros_like, torch.ones_like, torch.empty_like}


class MetaTensors(TorchFunctionMode):
    """Every tensor made while a model is built lands on the meta device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs or func in _FACTORIES:
            kwargs["device"] = "meta"
        if func in (torch.Tensor.to, torch.Tensor.cuda):
            return args[0]
        return func(*args, **kwargs)


class _TritonConfig:
    """``triton.Config``'s fields, for kernel tables built at import time."""

    def __init__(self, kwargs=None, num_warps=4, num_stages=3, **rest):
        self.kwargs, self.num_warps, self.num_stages = kwargs or {}, num_warps, num_stages
        self.__dict__.update(rest)


class _Absent(types.ModuleType):
    """A package only multimodal input processing imports: names resolve to placeholders."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _NoKernels(f"{self.__name__}.{name}")


import vllm.model_executor.layers.activation as _activation  # noqa: E402
import vllm.model_executor.layers.fused_moe.router.gate_linear as _gate_linear  # noqa: E402
import vllm.model_executor.layers.sparse_attn_indexer as _indexer  # noqa: E402
import vllm.model_executor.models.gemma3n_mm as _gemma3n_mm  # noqa: E402
import vllm.model_executor.models.registry as _registry  # noqa: E402
import vllm.triton_utils as _triton_utils  # noqa: E402

_registry._run_in_subprocess = lambda fn: fn()
if not _triton_utils.HAS_TRITON:
    _triton_utils.triton.Config = _TritonConfig
for _cls in vars(_gate_linear).values():
    if isinstance(_cls, type) and hasattr(_cls, "_register_sm90_bf16x3_warmup"):
        _cls._register_sm90_bf16x3_warmup = lambda self: None
_indexer.has_deep_gemm = lambda: True


class _GemmaTowers:
    """``AutoModel`` as Gemma 3n's multimodal model sees it (gemma3n_mm.py:617 in 0.34.0),
    except that its vision tower, a timm MobileNet (``TimmWrapperModel``, which needs the
    timm package: not in this environment), is an empty module. An image encoder holds no KV
    cache, and with ``--language-model-only`` vLLM replaces the tower by a placeholder right
    after building it (``_mark_tower_model``, model_executor/models/interfaces.py:382-394)."""

    @staticmethod
    def from_config(config, **kwargs):
        if getattr(config, "model_type", None) == "gemma3n_vision":
            return torch.nn.Module()
        return _AutoModel.from_config(config, **kwargs)


_AutoModel = _gemma3n_mm.AutoModel
_gemma3n_mm.AutoModel = _GemmaTowers
_sparse_gelu_init = _activation.GeluAndMulSparse.__init__


def _sparse_gelu_on_cpu(self, *args, **kwargs):
    """Gemma 3n's sparse GELU computes one Python float at build time, the normal quantile
    of its sparsity (layers/activation.py:336-339 in 0.34.0), from a scalar tensor that
    :class:`MetaTensors` would put on the meta device, where ``.item()`` has no value: the
    scalar is computed on the CPU. An activation's constant shapes no cache."""
    with torch._C.DisableTorchFunction():
        _sparse_gelu_init(self, *args, **kwargs)


_activation.GeluAndMulSparse.__init__ = _sparse_gelu_on_cpu
# after transformers is imported (it looks torchvision up by its spec, which these lack)
for _name in ("torchvision", "torchvision.transforms", "torchvision.transforms.v2",
              "torchvision.transforms.v2.functional", "torchvision.transforms.functional",
              "torchvision.io", "torchvision.ops"):
    sys.modules.setdefault(_name, _Absent(_name))
