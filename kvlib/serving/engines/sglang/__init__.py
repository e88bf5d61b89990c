"""SGLang 0.5.23's folder: its KV budget, pools, sessions, log reader and defaults, as SymPy
expressions (``kvlib plan --engine sglang``; docs/engines.md). Each part is a module here
(``budget``, ``pools``, ``sessions``, ``log``, ``defaults``; ``planner`` answers the registry,
``symbols`` holds the expressions' symbols); this package re-exports their names.

Every term cites the released wheel (``pip download sglang==0.5.23 --no-deps``), path under
``sglang/srt/``:

* **Budget** (``KV_BUDGET``): the free memory after the weights load, less the slack
  F_0 (1 - f) that mem_fraction_static f leaves of the memory free *before* the weights:
  ``slack_gb = pre_model_load_memory * (1 - mem_fraction_static)``,
  mem_cache/kv_cache_configurator.py:3007; ``rest_memory = available_gpu_memory - slack_gb``
  (:3038); ``int(rest_memory * (1 << 30))`` bytes (:3060). F_0 is measured after the
  distributed set-up and before the weights (``measure_pre_model_load_memory``,
  distributed/bootstrap.py:193-223). kvlib writes the free memory after loading as
  F_0 - W - X (X: whatever else is allocated between, assumed 0).
* **f, mem_fraction_static** (``MEM_FRACTION``), when not given:
  round((G - reserve) / G, 3) with G the memory nvidia-smi reports in MiB
  (arg_groups/memory_hook.py:324-328; ``get_nvgpu_memory_capacity``, utils/common.py:802-832)
  and reserve = 512 + 1.5 max(chunked_prefill_size, 2048) + TP/8 x 1024 + the CUDA-graph
  reserve (:309-313), at least 10 GiB above 60 GiB of memory (:314-315). The graph reserve:
  2 x the decode graph's max batch (:368) plus 8 MiB per captured prefill size, or 1.5 GiB for
  MLA (:384-389); the prefill graph (breakable, on by default on CUDA,
  model_executor/cuda_graph_config.py:119-123) captures the sizes of
  ``generate_prefill_cuda_graph_batch_sizes`` up to chunked_prefill_size (MLA: at most 8192,
  memory_hook.py:233-238; arg_groups/cuda_graph_hook.py:480-497). chunked_prefill_size and the
  decode max batch by G (memory_hook.py:89-170).
* **Cell** (``CELL_MHA``, ``CELL_MLA``): bytes one token takes in the pool, the notebooks'
  ``GQA.bytes_per_token`` N_L N_g b (d_QK + d_V) with SGLang's heads per rank
  (``HEADS_PER_RANK``) max(1, KV heads // TP) for N_g (model_executor/pool_configurator.py:
  492-498; ``get_num_kv_heads``, configs/model_config.py:1700-1711), or ``MLA_ROPE``'s
  N_L b (d_L + d_R), (kv_lora_rank + qk_rope_head_dim) x layers x b (pool_configurator.py:
  379-386; mem_cache/kv_cache_configurator.py:3419).
* **Tokens** (``TOKENS``): budget // cell, down to whole pages (pool_configurator.py:637-647);
  a page is 1 token on CUDA (arg_groups/overrides.py:1341-1362) unless the attention backend
  forces one: TensorRT-LLM MHA, the default on SM100, 64 (arg_groups/model_override_base.py:
  312-325; overrides.py:1176-1187); trtllm_mla, DeepSeek V3's default on SM100 (model_overrides/
  deepseek_v2.py:177-185), 64 (overrides.py:1155-1163); FlashMLA 64 (:1147-1154).
* **Sliding-window pool** (``SWA_TOKENS``), for the architectures SGLang pools apart only
  (``is_hybrid_swa_model``, configs/model_config.py:2651-2697; gpt-oss, Llama 4, Gemma 4 and
  MiMo-V2 here), each pool's cell with its own layers' KV heads and K and V widths: full
  ``get_num_kv_heads`` x (head_dim + v_head_dim), sliding ``get_swa_num_kv_heads`` x
  (swa_head_dim + swa_v_head_dim) (pool_configurator.py:702-716; configs/model_config.py:
  1357-1365, 1713-1726; Gemma 4's full layers' global_head_dim and num_global_key_value_heads
  moved there by utils/hf_transformers/config.py:115-150):
  full tokens = budget // (full cell + r x SWA cell) in pages, SWA tokens = int(full x r) in
  pages, r = swa_full_tokens_ratio = 0.8 (pool_configurator.py:786-803, 859-893;
  arg_groups/fields/schedule.py:150-162). Every other sliding-window model (Gemma 2 and 3,
  Mistral) keeps every layer in the one pool at full length.
* **Multimodal reserves** (:mod:`~kvlib.serving.engines.sglang.multimodal`): for a model SGLang
  serves as multimodal, the default f times ``VLM_FACTOR`` (arg_groups/memory_hook.py:331-337,
  432-460), no prefill CUDA graph unless allowlisted (cuda_graph_hook.py:229-238), and 100 MiB
  less budget (``KV_BUDGET_MM``, kv_cache_configurator.py:202-221, 3034-3038; Qwen3-VL on a
  large Hopper GPU: 1 GiB of CUDA-IPC feature pool instead). Traced for Gemma 4, Kimi K2.5,
  Qwen3-VL, Qwen3.5 and 3.6; Gemma 3 and Llama 4 are served text-only
  (configs/model_config.py:690-704).
* **State pool** (:mod:`~kvlib.serving.engines.sglang.state`), for the Gated DeltaNet hybrid
  Qwen3-Next, Qwen3.5 and 3.6 and the Mamba2 hybrids Nemotron-H and Nemotron 3:
  mamba_full_memory_ratio 0.9 of the budget buys K = max_mamba_cache_size request states
  (``MAMBA_SLOTS``), the KV pool of the full-attention layers gets the rest
  (``KV_AFTER_STATE``), max_running_requests at most K // 5 (``MAMBA_CAP``)
  (kv_cache_configurator.py:3062-3088, 3134-3150, 3229-3403).
* **DSA pool** (:mod:`~kvlib.serving.engines.sglang.indexer`), DeepSeek V3.2 and GLM-5.x below
  SM100: the latent row plus the indexer's fp8 keys and scales a token, pages of 64.
* **DeepSeek V4** (:mod:`~kvlib.serving.engines.sglang.dsv4`), below SM100: the SWA pool of
  every layer at swa_full_tokens_ratio 0.1, the c4 and c128 compressed pools with the c4
  indexer's keys, the compressor state, pages of 256, max_running_requests 256
  (``DSV4PoolConfigurator``, pool_configurator.py:1046-1713).
* **max_running_requests** (``MAX_RUNNING``), when not given: min(max(min(int(tokens / context
  x 512), 4096), 2048), tokens // 2) (kv_cache_configurator.py:3119-3132).
* **Log**: "KV Cache is allocated. dtype: ..., #tokens: N, K size: X GB, V size: Y GB", with
  GB = 2^30 B (mem_cache/memory_pool.py:116, 2073-2098); K and V each hold N + one page of
  rows (memory_pool.py:2574-2578): ``K_SIZE`` = (N + page) x the cell's K part, heads x
  head_dim x layers x b.

Python evaluates these expressions by their kept code (:mod:`kvlib.serving.engines.sglang.kept`,
printed from each by ``python -m kvlib.core.keep`` as :func:`kvlib.core.numeric.evaluate`
generates it, exact, so that a plan imports no SymPy; each module builds its expressions on
first use, ``symbolic()``); the one step done in floats on purpose, SGLang's own, is
:func:`kv_budget`'s.
What kvlib assumes SGLang measures at start-up (the memory in use before the weights) is the
engines' shared assumption, :mod:`kvlib.serving.engines.startup`.

Not traced, refused by name: the other Mamba and linear-attention state pools (Falcon-H1's
Mamba2, Jamba's Mamba, Kimi Linear's KDA), DSA pools on SM100 (fp8 by default there), the
other sparse indexers (MiniMax M3), DeepSeek V4 on SM100, the sliding pools of Step 3.5,
Beam and Laguna, layers without attention, multimodal architectures other than Gemma 4,
Kimi K2.5, Qwen3-VL, Qwen3.5 and 3.6.
"""

from __future__ import annotations

from kvlib.serving.engines.sglang.budget import kv_budget
from kvlib.serving.engines.sglang.defaults import (
    HYBRID_SWA_ARCHS,
    RELEASE,
    SWA_FULL_TOKENS_RATIO,
    default_mem_fraction,
    kv_bytes,
    model_path,
    prefill_graph_sizes,
    sglang_fraction,
    sglang_page,
    untraced_swa,
)
from kvlib.serving.engines.sglang.planner import engine_plan, refuse_model
from kvlib.serving.engines.sglang.pools import (
    SGLangPool,
    evaluate_cell,
    k_size_bytes,
    pool,
    sglang_groups,
)

# the SymPy expressions and symbols, by the module that builds them on first use (their code
# is kept in kvlib.serving.engines.sglang.kept, so that a plan imports no SymPy)
_SYMBOLIC = {
    "KV_BUDGET": "budget", "KV_BUDGET_MEASURED": "budget", "KV_BUDGET_MM": "budget",
    "MEM_FRACTION": "defaults",
    **dict.fromkeys(("HEADS_PER_RANK", "CELL_MHA", "CELL_MLA", "TOKENS", "CELL_SWA",
                     "FULL_TOKENS_SWA", "SWA_TOKENS", "K_SIZE"), "pools"),
    **dict.fromkeys(("MAX_RUNNING", "SESSIONS", "SESSIONS_SWA"), "sessions"),
    "SYMBOLS": "symbols", "SYMBOLS_BY_NAME": "symbols",
}

__all__ = ["RELEASE", *_SYMBOLIC, "SWA_FULL_TOKENS_RATIO", "HYBRID_SWA_ARCHS", "SGLangPool",
           "default_mem_fraction", "prefill_graph_sizes", "kv_budget", "pool", "k_size_bytes",
           "kv_bytes", "untraced_swa", "sglang_page", "sglang_fraction", "sglang_groups",
           "model_path", "engine_plan", "refuse_model", "evaluate_cell"]


def __getattr__(name: str):  # an expression or symbol table, built with SymPy on first use
    if name in _SYMBOLIC:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_SYMBOLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
