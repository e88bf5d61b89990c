"""vLLM 0.34.0's own planning, cache manager and scheduler, driven on a CPU (``make oracle``).

Runs in the oracle's environment (vLLM installed there, never in kvlib's). Each step is the
call vLLM's engine makes at start-up (v1/engine/core.py ``_initialize_kv_caches``) or while
serving, in the same order:

1. :func:`build`: ``EngineArgs(...).create_engine_config`` as ``vllm serve`` does
   (OPENAI_API_SERVER defaults; text only, ``--language-model-only``: the KV cache is the same,
   and vLLM's multimodal processors need a tokenizer this check does not load), the model's
   own classes built on the meta device (``initialize_model``), then
   ``update_block_size_for_backend`` as the executor calls it after loading
   (v1/executor/uniproc_executor.py:75), then every layer's ``get_kv_cache_spec``
   (v1/worker/gpu/attn_utils.py:140).
2. :func:`plan_pool`: the KV-cache layout resolved, ``get_global_kv_cache_groups`` and
   ``get_kv_cache_configs`` for a pool of the given bytes (what ``kv_cache_memory_bytes``
   gives vLLM), the scheduler's view of it, and the concurrency vLLM logs
   (``get_max_concurrency_for_kv_cache_config``).
3. :func:`run`: vLLM's scheduler (``AsyncScheduler`` by default) over that pool, stepped as
   the engine steps it with async scheduling (a step is scheduled before the previous one's
   output is applied), the model's outputs replaced by one sampled token per scheduled request.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import deque
from dataclasses import dataclass

import boot
import torch
import vllm.distributed.parallel_state as parallel_state
from vllm.config import set_current_vllm_config
from vllm.distributed import init_distributed_environment, initialize_model_parallel
from vllm.engine.arg_utils import EngineArgs
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.sampling_params import SamplingParams
from vllm.usage.usage_lib import UsageContext
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.utils import (
    get_supported_kv_cache_layouts,
    record_kv_cache_layout,
    resolve_kv_cache_layout,
)
from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups, get_kv_cache_configs
from vllm.v1.core.kv_cache_utils import (
    generate_scheduler_kv_cache_config,
    get_max_concurrency_for_kv_cache_config,
    get_request_block_hasher,
    init_none_hash,
    resolve_kv_cache_block_sizes,
)
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager
from vllm.v1.worker import workspace
from vllm.v1.worker.gpu.attn_utils import get_kv_cache_spec
from vllm.v1.worker.worker_base import get_current_attn_backends


def _distributed(cfg, tp: int) -> None:
    """One process standing for one rank of ``tp``: layers shard their heads as rank 0 of a
    TP group does; nothing is communicated while they are built on the meta device."""
    with set_current_vllm_config(cfg):
        if parallel_state._WORLD is None:
            init_distributed_environment(
                world_size=1, rank=0, local_rank=0, backend="gloo",
                distributed_init_method=f"file://{tempfile.mktemp()}")
        parallel_state.destroy_model_parallel()  # its groups follow the model (EP for MoE)
        initialize_model_parallel(1, 1)
    parallel_state._TP.world_size = tp
    parallel_state._TP.rank_in_group = 0


def build(config: dict, max_model_len: int, kv_cache_dtype: str = "auto", tp: int = 1,
          gpu: tuple = ((9, 0), 150_109_880_320, "NVIDIA H200")):
    """(VllmConfig, {layer name: KVCacheSpec}) of ``config`` served at ``max_model_len``."""
    boot.set_gpu(*gpu)
    folder = tempfile.mkdtemp()
    try:
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        args = EngineArgs(model=folder, max_model_len=max_model_len, skip_tokenizer_init=True,
                          load_format="dummy", dtype="bfloat16", kv_cache_dtype=kv_cache_dtype,
                          tensor_parallel_size=tp, language_model_only=True,
                          distributed_executor_backend="uni" if tp == 1 else "mp")
        cfg = args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
        cfg.parallel_config.tensor_parallel_size = tp
        if config.get("model_type") == "deepseek_v4":
            # DeepSeek V4's backends warm up JIT kernels at start-up, which imports tilelang
            # (not in this CPU environment); the warm-up sizes no cache
            cfg.kernel_config.enable_jit_warmup = False
        _distributed(cfg, tp)
        if not workspace.is_workspace_manager_initialized():  # as the model runner does
            workspace.init_workspace_manager(torch.device("meta"))
        # as the loader builds it (model_loader/base_loader.py:86), on the meta device
        with set_current_vllm_config(cfg), set_default_torch_dtype(cfg.model_config.dtype), \
                boot.MetaTensors():
            initialize_model(vllm_config=cfg)
        with set_current_vllm_config(cfg):
            current_platform.update_block_size_for_backend(cfg)
            specs = get_kv_cache_spec(cfg)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return cfg, specs


@dataclass
class Pool:
    """The scheduler's KV-cache config for a pool, and what vLLM logs for it."""

    kv_cache_config: object
    num_blocks: int
    max_concurrency: float
    groups: list  # (spec class, block size, layers) per KV-cache group


def plan_pool(cfg, specs: dict, pool_bytes: int) -> Pool:
    """vLLM's KV-cache config for ``pool_bytes`` of available KV memory on this rank."""
    cfg.cache_config.enable_extensible_kv_cache = False  # a fixed pool: kv_cache_memory_bytes
    with set_current_vllm_config(cfg):
        backends = get_current_attn_backends(cfg)
        names = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
        layout = resolve_kv_cache_layout(cfg, [names], list(specs.values()))
        record_kv_cache_layout(cfg.cache_config, layout.name)
        groups = get_global_kv_cache_groups(cfg, [specs])
        configs = get_kv_cache_configs(cfg, [specs], [pool_bytes], groups)
        config = generate_scheduler_kv_cache_config(configs)
        cfg.cache_config.num_gpu_blocks = config.num_blocks
        kv_groups = config.kv_cache_groups
        sizes = [g.kv_cache_spec.block_size for g in kv_groups if g.kv_cache_spec.prefix_cacheable]
        cfg.cache_config.block_size = min(sizes or [g.kv_cache_spec.block_size for g in kv_groups])
        concurrency = get_max_concurrency_for_kv_cache_config(cfg, config)
    return Pool(config, config.num_blocks, concurrency,
                [(type(g.kv_cache_spec).__name__, g.kv_cache_spec.block_size, len(g.layer_names))
                 for g in kv_groups])


@dataclass
class Run:
    """What one run of the scheduler did: whether all ``n`` requests were carried to full
    length at once with no preemption, and what was seen."""

    n: int
    carried: bool
    preemptions: int
    most_running: int
    running_at_first_finish: int
    steps: int


_serial = [0]
STAGGER = 64  # tokens: the spread of the final lengths in :func:`run`


def _request(prompt_len: int, max_tokens: int, hasher) -> Request:
    """A distinct prompt (its first token differs from every other's, so prefix caching
    shares no block) of ``prompt_len`` tokens that decodes ``max_tokens`` tokens."""
    _serial[0] += 1
    i = _serial[0]
    prompt = [i % 60000 + 1] + [(i * 7 + k) % 60000 + 1 for k in range(1, prompt_len)]
    return Request(request_id=f"r{i}", prompt_token_ids=prompt,
                   sampling_params=SamplingParams(max_tokens=max_tokens, ignore_eos=True),
                   pooling_params=None, block_hasher=hasher)


def run(cfg, pool: Pool, n: int, length: int, decode: int = 64) -> Run:
    """Requests arrive one after another, each when the previous one has finished its
    prefill; each one's prompt and output lengths are chosen so that all ``n`` reach their
    full length in the same step, ``length`` less at most :data:`STAGGER` - 1 tokens (the
    last ``decode`` steps are decode for all). Carried when all ``n`` run at once, reach
    their length, and nothing is preempted."""
    config = pool.kv_cache_config
    with set_current_vllm_config(cfg):
        block_size, hash_block_size = resolve_kv_cache_block_sizes(config, cfg)
        scheduler = cfg.scheduler_config.get_scheduler_cls()(
            vllm_config=cfg, kv_cache_config=config,
            structured_output_manager=StructuredOutputManager(cfg),
            block_size=block_size, hash_block_size=hash_block_size)
        hasher = None
        if cfg.cache_config.enable_prefix_caching:
            fn = get_hash_fn_by_name(cfg.cache_config.prefix_caching_hash_algo)
            init_none_hash(fn)
            hasher = get_request_block_hasher(hash_block_size, fn,
                                              cfg.num_hash_lookahead_tokens)
        budget = cfg.scheduler_config.max_num_batched_tokens
        # in align mode a prefill chunk ends on a state block boundary
        # (Scheduler._mamba_block_aligned_split)
        align = (cfg.cache_config.mamba_cache_mode == "align"
                 and any(kind == "MambaSpec" for kind, _, _ in pool.groups))
        state_block = cfg.cache_config.block_size

        def prefill_steps(i):  # request i shares each step with i decoding requests
            chunk, start, steps = max(1, budget - i), 0, 1
            while length - start > chunk:  # a chunk ends on a block boundary if one is in reach
                last = (start + chunk) // state_block * state_block
                start = last if align and last > start else start + chunk
                steps += 1
            return steps

        # every request must be admitted before the first one finishes: a margin on top
        target = sum(prefill_steps(i) + 1 for i in range(n)) + decode + n // 8 + 2
        requests, pending = [], deque()
        step = preemptions = most = at_first_finish = 0

        def arrive():
            # request i ends at length - (i mod 64): all n run at once within 64 tokens of the
            # full length, and no more than n / 64 of them cross a block boundary in the same
            # step (a state layer holds two blocks for one step when it crosses one; in real
            # traffic sequences are not in lockstep)
            i = len(requests)
            total = length - i % STAGGER
            out = max(1, target - step - prefill_steps(i))
            r = _request(max(1, total - out), min(out, total - 1), hasher)
            requests.append(r)
            scheduler.add_request(r)

        arrive()
        while True:
            out = scheduler.schedule()
            if out.num_scheduled_tokens:
                pending.append(out)
            if len(pending) >= 2 or (pending and not out.num_scheduled_tokens):
                done = pending.popleft()
                ids = list(done.num_scheduled_tokens)
                scheduler.update_from_output(done, ModelRunnerOutput(
                    req_ids=ids, sampled_token_ids=[[7] for _ in ids], logprobs=None,
                    prompt_logprobs_dict={}, pooler_output=[]))
            step += 1
            running = len(scheduler.running)
            most = max(most, running)
            if not at_first_finish and any(r.is_finished() for r in requests):
                at_first_finish = running + sum(r.is_finished() for r in requests)
            last = requests[-1]
            if (len(requests) < n and last.num_computed_tokens >= last.num_prompt_tokens
                    and not last.is_finished()):
                arrive()
            if not scheduler.has_requests() and not pending:
                break
            if step > 4 * target + 1000:
                break
    preemptions = sum(r.num_preemptions for r in requests)
    reached = sum(r.num_tokens >= length - k % STAGGER for k, r in enumerate(requests))
    carried = (len(requests) == n and reached == n and preemptions == 0
               and at_first_finish >= n)
    return Run(n, carried, preemptions, most, at_first_finish, step)


def carried(cfg, pool: Pool, length: int, guess: int) -> tuple[int, list[Run]]:
    """The most requests vLLM's scheduler carries to ``length`` at once (see :func:`run`):
    ``guess`` and ``guess + 1`` first, then a search outward while they do not bracket it."""
    runs: dict[int, Run] = {}

    def ok(n):
        if n <= 0:
            return True
        if n not in runs:
            runs[n] = run(cfg, pool, n, length)
        return runs[n].carried

    lo, hi = max(0, guess), max(0, guess) + 1
    step = 1
    while not ok(lo):
        hi, lo = lo, max(0, lo - step)
        step *= 2
    while ok(hi):
        lo, hi = hi, hi + step
        step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo, [runs[k] for k in sorted(runs)]


def spec_summary(specs: dict) -> list:
    """(spec class, window, block size, page bytes, layers) per distinct spec, sorted."""
    counts: dict[tuple, int] = {}
    for s in specs.values():
        key = (type(s).__name__, getattr(s, "sliding_window", None), s.block_size,
               s.page_size_bytes)
        counts[key] = counts.get(key, 0) + 1
    return sorted([*k, v] for k, v in counts.items())


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "") if isinstance(dtype, torch.dtype) else str(dtype)
