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
  2 (K and V) x layers x (head_dim x num_key_value_heads // TP) x b: the notebooks'
  ``GQA.bytes_per_token`` N_L N_g b (d_QK + d_V) with one head_dim (d_V = d_QK) and the heads
  per rank it counts (``HEADS_PER_RANK``) floor(d_QK N_kv / TP) / d_QK for N_g, a fraction of
  a head when N_kv < TP; MLA (a config with ``kv_lora_rank``) ``MLA_ROPE``'s N_L b (d_L +
  d_R), 1 x layers x (kv_lora_rank + qk_rope_head_dim) x b, not split by TP; b = 1 for an
  fp8 cache, 2 otherwise.
* **Tokens** (``TOKENS``): max_tokens = budget // cell (``kv_cache_max_memory //
  kv_size_per_token``), allocated in whole blocks of 32 tokens (``tokens_per_block``),
  rounded up: its log reads "max_tokens ... 86711" then "Allocated 5.95 GiB for max tokens
  in paged KV cache (86720)", 86720 = 2710 x 32 (and a maintainer, NVIDIA/TensorRT-LLM issue
  #224: the count "gets rounded up to the next multiple of block size during allocation").
* **Log**: "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)", X = N x
  cell / 2^30; "Estimated max memory in KV cache : X GiB" = the budget / 2^30
  (``configure_kv_cache_capacity``; GB = 1 << 30 in _util.py).

Python evaluates these expressions (:func:`kvlib.core.numeric.evaluate`: code generated from
each, exact); the one float step, the float32 fraction, is :func:`float32` on its input.

Not traced, refused by name: variable sliding windows (VSWA sizes memory, not max_tokens),
chunked attention (Llama 4), Mamba and linear-attention hybrids, sparse-attention indexers,
DeepSeek V4, layers without attention, configs without ``num_key_value_heads`` whose KV heads
differ from the query heads (Falcon), FP4 caches.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from kvlib.core.formulas import GQA, MLA_ROPE
from kvlib.core.notation import by_name
from kvlib.core.numeric import evaluate

__all__ = ["SOURCE", "SYMBOLS", "SYMBOLS_BY_NAME", "KV_BUDGET", "HEADS_PER_RANK", "CELL_MHA",
           "CELL_MLA", "MAX_TOKENS", "BLOCKS", "TOKENS", "SESSIONS",
           "DEFAULT_FRACTION", "TOKENS_PER_BLOCK", "MAX_BATCH_SIZE", "TRTLLMPool", "float32",
           "kv_budget", "tokens", "pool"]

SOURCE = ("NVIDIA/TensorRT-LLM at 0004396720054fd8e205cbf616f21f0b57c6b412, "
          "tensorrt_llm/_torch/pyexecutor/_util.py and resource_manager.py")
GiB = 1 << 30

M, W, O, phi = sp.symbols("M W_GPU O_T phi", positive=True)
# the cells' N_L, N_g, d_QK (TensorRT-LLM's one head_dim d), d_V, b, d_L, d_R and TP are the
# notation's (kvlib.core.notation); N_kv the config's num_key_value_heads
N_g, d, d_V, L, b, tp, d_L, d_R = (by_name(s).symbol for s in
                                   ("N_g", "d_QK", "d_V", "N_L", "b", "TP", "d_L", "d_R"))
N_kv = sp.Symbol("N_kv", positive=True)
c, B_KV, n = sp.symbols("c B_KV n", positive=True)
SYMBOLS = {"M": M, "W": W, "O": O, "phi": phi, "c": c, "n": n}
KV_BUDGET = sp.floor(sp.Add(M, -W, -O, evaluate=False) * phi)
HEADS_PER_RANK = sp.floor(d * N_kv / tp) / d  # head_dim x heads // TP, in heads
CELL_MHA = GQA.symbolic.bytes_per_token.subs(d_V, d).subs(N_g, HEADS_PER_RANK)
CELL_MLA = MLA_ROPE.symbolic.bytes_per_token  # kv_factor 1, not split by TP
MAX_TOKENS = sp.floor(B_KV / c)
BLOCKS = sp.ceiling(MAX_TOKENS / n)
TOKENS = BLOCKS * n
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
    """``KV_BUDGET``: int((M - peak + temporary) x fraction) with peak - temporary = W + O_T;
    ``fraction`` as given (pass it through :func:`float32`, as TensorRT-LLM holds it)."""
    return evaluate(KV_BUDGET, M=total, W_GPU=weights, O_T=other_peak, phi=fraction)


def tokens(budget: int, cell: int, block: int = TOKENS_PER_BLOCK) -> tuple[int, int, int]:
    """(``MAX_TOKENS``, ``BLOCKS``, ``TOKENS``: tokens in whole blocks) for a budget (none
    below 0)."""
    values = {"B_KV": max(0, budget), "c": cell}
    return (evaluate(MAX_TOKENS, **values), evaluate(BLOCKS, **values, n=block),
            evaluate(TOKENS, **values, n=block))


def pool(*, budget: int, cell: int, context: int, block: int = TOKENS_PER_BLOCK,
         fraction=DEFAULT_FRACTION, max_batch_size: int = MAX_BATCH_SIZE, terms=(),
         notes=()) -> TRTLLMPool:
    max_tokens, blocks, n_ = tokens(budget, cell, block)
    sessions = evaluate(SESSIONS, T=n_, C=context, n=block, S_max=max_batch_size)
    return TRTLLMPool(kv_budget=budget, cell=cell, block=block, max_tokens=max_tokens,
                      tokens=n_, blocks=blocks, sessions=sessions, context=context,
                      fraction=Fraction(fraction), terms=tuple(terms), notes=tuple(notes))


def kv_bytes(kv_dtype: str) -> int:
    if kv_dtype not in _KV_BYTES:
        raise ValueError(f"--kv-dtype {kv_dtype}: TensorRT-LLM's per-token size is traced for "
                         "bf16, fp16 and fp8 only")
    return _KV_BYTES[kv_dtype]
