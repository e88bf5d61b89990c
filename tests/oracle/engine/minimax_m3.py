"""vLLM 0.34.0's own plan for MiniMax M3 (nvidia/MiniMax-M3-NVFP4's config), on the CPU.

    cd tests/oracle/engine && ../../../.venv-oracle/bin/python minimax_m3.py

prints one JSON line per case: vLLM's block size, attention backends, KV-cache specs
(``drive.spec_summary``), groups, blocks and logged concurrency for a pool, and for two cases
the most requests its scheduler carries (``drive.carried``). tests/test_minimax_m3.py quotes
them.

vLLM's MiniMax M3 modules import CuTe DSL kernels (``cutlass``, ``cuda.bindings``, ``quack``)
when the model class is imported (vllm/models/minimax_m3/nvidia/ops/__init__.py), and those
are not installed here. :class:`_Finder` answers for those three packages with stand-ins
(any attribute is another stand-in; called with one function it returns it, as a decorator).
No kernel runs and none sizes a cache. The stand-ins live in this script only, not in
boot.py: elsewhere their presence could make a backend that checks for them look installed.
"""

from __future__ import annotations

import gzip
import importlib.abc
import importlib.machinery
import json
import sys
import time
import types
from pathlib import Path


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (_Any,), {})

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Meta):
            return args[0]
        return cls

    def __getitem__(cls, key):
        return cls

    def __iter__(cls):
        return iter(())

    def __or__(cls, other):
        return cls

    __ror__ = __and__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __or__


class _Any(metaclass=_Meta):
    pass


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (_Any,), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    ROOTS = ("cutlass", "cuda", "quack")

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.ROOTS:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())

import boot  # noqa: E402, F401  (the platform and the shims)
import drive  # noqa: E402
from vllm.config import set_current_vllm_config  # noqa: E402
from vllm.v1.worker.worker_base import get_current_attn_backends  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "configs" / "corpus-2026.json.gz"
GPUS = {"H200": ((9, 0), 150_109_880_320, "NVIDIA H200"),
        "A100": ((8, 0), 85_100_000_000, "NVIDIA A100-SXM4-80GB"),
        "B200": ((10, 0), 191_500_000_000, "NVIDIA B200")}
GiB = 1024**3
# (GPU, kv_cache_dtype, TP, max_model_len, pool bytes, first guess for drive.carried or None)
CASES = [("H200", "auto", 1, 131072, 64 * GiB, None),
         ("H200", "auto", 1, 32768, 40 * GiB, 9),
         ("H200", "fp8", 1, 32768, 40 * GiB, 15),
         ("H200", "auto", 4, 131072, 64 * GiB, None),
         ("H200", "auto", 8, 131072, 64 * GiB, None),
         ("A100", "auto", 1, 131072, 64 * GiB, None),
         ("B200", "auto", 1, 131072, 64 * GiB, None)]


def main() -> None:
    config = json.loads(gzip.decompress(CORPUS.read_bytes()))["nvidia--MiniMax-M3-NVFP4"]["config"]
    for gpu, kv, tp, context, pool_bytes, guess in CASES:
        r = {"gpu": gpu, "kv": kv, "tp": tp, "context": context, "pool_bytes": pool_bytes}
        start = time.monotonic()
        try:
            cfg, specs = drive.build(config, context, kv, tp, GPUS[gpu])
            r["block_size"] = cfg.cache_config.block_size
            r["specs"] = drive.spec_summary(specs)
            with set_current_vllm_config(cfg):
                r["backends"] = [b.get_name() for b in get_current_attn_backends(cfg)]
            pool = drive.plan_pool(cfg, specs, pool_bytes)
            r.update(num_blocks=pool.num_blocks, max_concurrency=pool.max_concurrency,
                     groups=pool.groups)
            if guess is not None:
                r["carried"], runs = drive.carried(cfg, pool, context, guess)
                r["runs"] = [vars(x) for x in runs]
        except Exception as e:  # reported per case
            r["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
        r["seconds"] = round(time.monotonic() - start, 1)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
