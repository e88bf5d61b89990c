"""TensorRT-LLM's (PyTorch backend) KV budget, blocks and defaults, as SymPy expressions
(``kvlib plan --engine trtllm``; docs/engines.md).

No TensorRT-LLM wheel can be downloaded here (PyPI holds a stub that fetches it from NVIDIA's
index), so the source read is the repository as stored at commit
0004396720054fd8e205cbf616f21f0b57c6b412 (``tensorrt_llm/_torch/pyexecutor/_util.py``) and
the ``resource_manager.py`` beside it; cited by function, line numbers not available:

* **Budget** (``KV_BUDGET``): after a profiling run with the weights loaded and a temporary
  cache, ``KvCacheCreator._cal_max_memory``: ``available_kv_mem = (total_gpu_memory -
  peak_memory + allocated_bytes) * fraction``, returned as ``int``; the peak is torch's and
  non-torch memory together (CUDA context, NCCL, CUDA graphs captured before it), the
  temporary cache ``allocated_bytes`` added back. kvlib writes total - peak + temporary as
  M - W - O_T: the weights and the rest of the peak (assumed).
* **fraction** ``free_gpu_memory_fraction`` = 0.9 by default (``calculate_max_num_blocks``:
  ``... if kv_cache_config.free_gpu_memory_fraction is not None else 0.9``); the C++ config
  holds it as a float32, so the Python side multiplies by 0.8999999761581421 (its own log:
  "fraction is set 0.8999999761581421", quoted in tests/test_engines.py).
* **Cell** (``CELL_MHA``, ``CELL_MLA``): ``KVCacheManager.get_cache_size_per_token``:
  2 (K and V) x layers x (head_dim x num_key_value_heads // TP) x b; MLA (a config with
  ``kv_lora_rank``) 1 x layers x (kv_lora_rank + qk_rope_head_dim) x b, not split by TP;
  b = 1 for an fp8 cache, 2 otherwise.
* **Tokens** (``TOKENS``): max_tokens = budget // cell (``kv_cache_max_memory //
  kv_size_per_token``), allocated in whole blocks of 32 tokens (``tokens_per_block``),
  rounded up: its log reads "max_tokens ... 86711" then "Allocated 5.95 GiB for max tokens
  in paged KV cache (86720)", 86720 = 2710 x 32 (and a maintainer, NVIDIA/TensorRT-LLM issue
  #224: the count "gets rounded up to the next multiple of block size during allocation").
* **Log**: "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)", X = N x
  cell / 2^30; "Estimated max memory in KV cache : X GiB" = the budget / 2^30
  (``configure_kv_cache_capacity``; GB = 1 << 30 in _util.py).

Not traced, refused by name: variable sliding windows (VSWA sizes memory, not max_tokens),
chunked attention (Llama 4), Mamba and linear-attention hybrids, sparse-attention indexers,
DeepSeek V4, layers without attention, configs without ``num_key_value_heads`` whose KV heads
differ from the query heads (Falcon), FP4 caches.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

__all__ = ["SOURCE", "SYMBOLS", "SYMBOLS_BY_NAME", "KV_BUDGET", "CELL_MHA", "CELL_MLA", "TOKENS",
           "SESSIONS",
           "DEFAULT_FRACTION", "TOKENS_PER_BLOCK", "MAX_BATCH_SIZE", "TRTLLMPool", "float32",
           "kv_budget", "tokens", "pool"]

SOURCE = ("NVIDIA/TensorRT-LLM at 0004396720054fd8e205cbf616f21f0b57c6b412, "
          "tensorrt_llm/_torch/pyexecutor/_util.py and resource_manager.py")
GiB = 1 << 30

M, W, O, phi = sp.symbols("M W_GPU O_T phi", positive=True)
N_kv, d, L, b, tp, d_L, d_R, c, B_KV, n = sp.symbols("N_kv d N_L b TP d_L d_R c B_KV n",
                                                    positive=True)
SYMBOLS = {"M": M, "W": W, "O": O, "phi": phi, "c": c, "n": n}
KV_BUDGET = sp.floor(sp.Add(M, -W, -O, evaluate=False) * phi)
CELL_MHA = 2 * L * sp.floor(d * N_kv / tp) * b
CELL_MLA = 1 * L * (d_L + d_R) * b
TOKENS = sp.ceiling(sp.floor(B_KV / c) / n) * n
# requests of C tokens at once: whole blocks each, at most max_batch_size S_max (pool())
T, C, S_max = sp.symbols("T C S_max", positive=True)
SESSIONS = sp.Min(S_max, sp.floor(T / (sp.ceiling(C / n) * n)))
# every expression's symbols by name (the book's planner passes values by name)
SYMBOLS_BY_NAME = {s.name: s for s in (M, W, O, phi, N_kv, d, L, b, tp, d_L, d_R, c, B_KV, n,
                                       T, C, S_max)}


def float32(x) -> Fraction:
    """The exact value of ``x`` stored as a float32 (the C++ KvCacheConfig's fraction)."""
    return Fraction(struct.unpack("f", struct.pack("f", float(x)))[0])


DEFAULT_FRACTION = float32(0.9)  # = 0.89999997615814208984375
TOKENS_PER_BLOCK = 32
MAX_BATCH_SIZE = 2048  # max_num_requests=2048 in trtllm-serve's default start-up line
_KV_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1}


@dataclass(frozen=True)
class TRTLLMPool:
    """What TensorRT-LLM allocates on one GPU (TP rank); bytes exact."""

    kv_budget: int
    cell: int
    block: int
    max_tokens: int  # budget // cell
    tokens: int  # whole blocks: the count in "(N)" of its [MemUsageChange] line
    blocks: int
    sessions: int
    context: int
    fraction: Fraction
    terms: tuple = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def kv_budget(total: int, weights: int, other_peak: int, fraction=DEFAULT_FRACTION) -> int:
    """int((M - peak + temporary) x fraction) with peak - temporary = W + O_T."""
    return math.floor((Fraction(total) - weights - other_peak) * Fraction(fraction))


def tokens(budget: int, cell: int, block: int = TOKENS_PER_BLOCK) -> tuple[int, int, int]:
    """(max_tokens, blocks, tokens in whole blocks) for a budget."""
    max_tokens = max(0, budget) // cell
    blocks = -(-max_tokens // block)
    return max_tokens, blocks, blocks * block


def pool(*, budget: int, cell: int, context: int, block: int = TOKENS_PER_BLOCK,
         fraction=DEFAULT_FRACTION, max_batch_size: int = MAX_BATCH_SIZE, terms=(),
         notes=()) -> TRTLLMPool:
    max_tokens, blocks, n = tokens(budget, cell, block)
    per_seq = -(-context // block)
    sessions = min(max_batch_size, blocks // per_seq)
    return TRTLLMPool(kv_budget=budget, cell=cell, block=block, max_tokens=max_tokens,
                      tokens=n, blocks=blocks, sessions=sessions, context=context,
                      fraction=Fraction(fraction), terms=tuple(terms), notes=tuple(notes))


def kv_bytes(kv_dtype: str) -> int:
    if kv_dtype not in _KV_BYTES:
        raise ValueError(f"--kv-dtype {kv_dtype}: TensorRT-LLM's per-token size is traced for "
                         "bf16, fp16 and fp8 only")
    return _KV_BYTES[kv_dtype]
