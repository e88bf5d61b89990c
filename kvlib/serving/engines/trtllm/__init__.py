"""TensorRT-LLM's (PyTorch backend) folder: its KV budget, blocks, sessions, log reader and
defaults, as SymPy expressions (``kvlib plan --engine trtllm``; docs/engines.md). Each part is
a module here (``budget``, ``pools``, ``sessions``, ``log``, ``defaults``; ``planner`` answers the
registry, ``symbols`` holds the expressions' symbols); this package re-exports their names.

No TensorRT-LLM wheel can be downloaded here (PyPI holds a stub that fetches it from NVIDIA's
index), so the source read is the repository as stored at commit
0004396720054fd8e205cbf616f21f0b57c6b412 (``tensorrt_llm/_torch/pyexecutor/_util.py``) and
the ``resource_manager.py`` beside it; cited here by function, in the modules by file:line at
the commit (:mod:`~kvlib.serving.engines.trtllm.sources`):

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

Python evaluates these expressions by their kept code (:mod:`kvlib.serving.engines.trtllm.kept`,
printed from each by ``python -m kvlib.core.keep`` as :func:`kvlib.core.numeric.evaluate`
generates it, exact, so that a plan imports no SymPy; each module builds its expressions on
first use, ``symbolic()``); the one float step, the float32 fraction, is :func:`float32` on
its input.

Sliding windows, Mamba hybrids and the fp8 context-MLA workspace (issue 41 item 4):
:mod:`~kvlib.serving.engines.trtllm.windows` (every layer at full length by default, as
1.1.0rc3's logs show; the per-window split VSWA makes when ``max_attention_window`` is set),
:mod:`~kvlib.serving.engines.trtllm.mamba` (Nemotron-H: the state of max_batch_size + 1 slots off
the budget first) and :mod:`~kvlib.serving.engines.trtllm.workspace` (the reserve of an fp8 MLA
cache); each file and commit they were read at: :mod:`~kvlib.serving.engines.trtllm.sources`.
The release is a choice (``engine_plan(..., release="1.1.0rc3")``; default the pinned commit).

Not traced, refused by name: hybrids other than Nemotron-H's Mamba2 (Gated DeltaNet, configs
without ``hybrid_override_pattern``), per-kind head sizes (Gemma 4: KVCacheManagerV2), windows
shrunk to fit (``adjust_window_sizes_for_vswa``), sparse-attention indexers, DeepSeek V4,
layers without attention, configs without ``num_key_value_heads`` whose KV heads differ from
the query heads (Falcon), FP4 caches; at 1.1.0rc3, the Mamba state and the fp8 MLA workspace.
"""

from __future__ import annotations

from kvlib.serving.engines.trtllm.budget import kv_budget
from kvlib.serving.engines.trtllm.defaults import (
    DEFAULT_FRACTION,
    MAX_BATCH_SIZE,
    SOURCE,
    TOKENS_PER_BLOCK,
    TRTLLM_OTHER_PEAK,
    float32,
    kv_bytes,
)
from kvlib.serving.engines.trtllm.planner import RELEASES, engine_plan, refuse_model
from kvlib.serving.engines.trtllm.pools import (
    TRTLLMPool,
    evaluate_cell,
    pool,
    tokens,
    trtllm_groups,
)

# the SymPy expressions and symbols, by the module that builds them on first use (their code
# is kept in kvlib.serving.engines.trtllm.kept, so that a plan imports no SymPy)
_SYMBOLIC = {
    "KV_BUDGET": "budget", "MAMBA_MAX_TOKENS": "mamba",
    **dict.fromkeys(("HEADS_PER_RANK", "CELL_MHA", "CELL_MLA", "MAX_TOKENS", "BLOCKS", "TOKENS"),
                    "pools"),
    "SESSIONS": "sessions", "SYMBOLS": "symbols", "SYMBOLS_BY_NAME": "symbols",
    "W_MLA": "workspace", "B_AFTER": "workspace",
}

__all__ = ["SOURCE", *_SYMBOLIC, "DEFAULT_FRACTION", "TOKENS_PER_BLOCK", "MAX_BATCH_SIZE",
           "TRTLLMPool", "float32", "kv_budget", "tokens", "pool", "kv_bytes", "trtllm_groups",
           "TRTLLM_OTHER_PEAK", "engine_plan", "refuse_model", "RELEASES", "evaluate_cell"]


def __getattr__(name: str):  # an expression or symbol table, built with SymPy on first use
    if name in _SYMBOLIC:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_SYMBOLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
