"""SGLang 0.5.23's KV budget, pools and defaults, as SymPy expressions (``kvlib plan --engine
sglang``; docs/engines.md).

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
  (``is_hybrid_swa_model``, configs/model_config.py:2651-2697; gpt-oss and Llama 4 here):
  full tokens = budget // (full cell + r x SWA cell) in pages, SWA tokens = int(full x r) in
  pages, r = swa_full_tokens_ratio = 0.8 (pool_configurator.py:786-803, 859-893;
  arg_groups/fields/schedule.py:150-162). Every other sliding-window model (Gemma 2 and 3,
  Mistral) keeps every layer in the one pool at full length.
* **max_running_requests** (``MAX_RUNNING``), when not given: min(max(min(int(tokens / context
  x 512), 4096), 2048), tokens // 2) (kv_cache_configurator.py:3119-3132).
* **Log**: "KV Cache is allocated. dtype: ..., #tokens: N, K size: X GB, V size: Y GB", with
  GB = 2^30 B (mem_cache/memory_pool.py:116, 2073-2098); K and V each hold N + one page of
  rows (memory_pool.py:2574-2578): ``K_SIZE`` = (N + page) x the cell's K part, heads x
  head_dim x layers x b.

Python evaluates these expressions (:func:`kvlib.core.numeric.evaluate`: code generated from
each, exact); the one step done in floats on purpose, SGLang's own, is :func:`kv_budget`'s.

Not traced, refused by name: Mamba and linear-attention state pools (r/(1+r) of the budget,
kv_cache_configurator.py:3350-3357, but the per-request state size is not), sparse-attention
indexers (DeepSeek V3.2, GLM-5), DeepSeek V4's compressed pools, Gemma 4's and MiMo's
per-kind head sizes, layers without attention, multimodal reserves.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp

from kvlib.core.formulas import GQA, MLA_ROPE
from kvlib.core.notation import by_name
from kvlib.core.numeric import evaluate, evaluate_floats

__all__ = ["RELEASE", "SYMBOLS", "KV_BUDGET", "HEADS_PER_RANK", "CELL_MHA", "CELL_MLA", "TOKENS",
           "CELL_SWA", "FULL_TOKENS_SWA", "SWA_TOKENS", "MAX_RUNNING", "SESSIONS", "SESSIONS_SWA",
           "K_SIZE", "MEM_FRACTION", "KV_BUDGET_MEASURED", "SYMBOLS_BY_NAME",
           "SWA_FULL_TOKENS_RATIO", "HYBRID_SWA_ARCHS", "SGLangPool", "default_mem_fraction",
           "prefill_graph_sizes", "kv_budget", "pool", "k_size_bytes"]

RELEASE = "0.5.23"
MiB = 1 << 20
GiB = 1 << 30

# symbols: F_0 free before weights, W weights, X other memory taken before the pool, F_1 the
# free memory SGLang measures after the weights (F_0 - W - X), f mem_fraction_static, c the
# cell, p the page, r swa_full_tokens_ratio, T tokens, C context; the cells' N_L, N_g, d_QK,
# d_V, d_L, d_R, b and TP are the notation's (kvlib.core.notation), N_kv the config's KV heads
F0, F1, W, X, f = sp.symbols("F_0 F_1 W_GPU X f", positive=True)
c, c_full, c_swa, p, r = sp.symbols("c c_full c_swa p r", positive=True)
N_g, d_k, d_v, L, b, d_L, d_R, tp = (by_name(n).symbol for n in
                                     ("N_g", "d_QK", "d_V", "N_L", "b", "d_L", "d_R", "TP"))
N_kv = sp.Symbol("N_kv", positive=True)
T, C, G, R_mib = sp.symbols("T C G R", positive=True)
SYMBOLS = {"F0": F0, "F1": F1, "W": W, "X": X, "f": f, "c": c, "p": p, "r": r, "T": T,
           "C": C, "tp": tp, "G": G, "R": R_mib}

KV_BUDGET = sp.floor(sp.Add(F0, -W, -X, -F0 * (1 - f), evaluate=False))
# the same budget from the two free memories SGLang measures (what kv_budget evaluates)
KV_BUDGET_MEASURED = KV_BUDGET.subs({W: F0 - F1, X: 0})
HEADS_PER_RANK = sp.Max(1, sp.floor(N_kv / tp))  # get_num_kv_heads
CELL_MHA = GQA.symbolic.bytes_per_token.subs(N_g, HEADS_PER_RANK)
CELL_MLA = MLA_ROPE.symbolic.bytes_per_token
TOKENS = sp.floor(sp.floor(sp.Symbol("B_KV") / c) / p) * p
CELL_SWA = c_full + r * c_swa
FULL_TOKENS_SWA = sp.floor(sp.floor(sp.Symbol("B_KV") / CELL_SWA) / p) * p
SWA_TOKENS = sp.floor(sp.floor(T * r) / p) * p
# SGLang's int(T / C x 512) is a float's; the exact floor is the same (T x 512 / C is a whole
# number exactly when T / C is a multiple of 1/512, which a float holds exactly)
MAX_RUNNING = sp.Min(sp.Max(sp.Min(sp.floor(T / C * 512), 4096), 2048), sp.floor(T / 2))
K_SIZE = (T + p) * CELL_MHA.subs(d_v, 0)  # the K buffer: T + one page rows of the cell's K
MEM_FRACTION = (G - R_mib) / G  # then rounded to 3 decimals
# requests of C tokens at once: whole pages each, at most max_running_requests (pool()); with
# a sliding-window pool of T_SWA tokens, also min(C, window w) + one page each (the admission
# floor, pool_configurator.py:198-216)
T_swa, w = sp.symbols("T_SWA w", positive=True)
SESSIONS = sp.Min(MAX_RUNNING, sp.floor(T / (sp.ceiling(C / p) * p)))
SESSIONS_SWA = sp.Min(SESSIONS, sp.floor(T_swa / (sp.Min(C, w) + p)))
# every expression's symbols by name (the book's planner passes values by name)
SYMBOLS_BY_NAME = {s.name: s for s in (F0, F1, W, X, f, c, c_full, c_swa, p, r, N_kv, d_k, d_v, L,
                                       b, d_L, d_R, tp, T, C, G, R_mib, T_swa, w,
                                       sp.Symbol("B_KV"))}

SWA_FULL_TOKENS_RATIO = Fraction(4, 5)  # arg_groups/fields/schedule.py:160 (fallback=0.8)
# configs/model_config.py:2655-2679: the architectures whose sliding layers get a pool of
# their own (of those kvlib bundles: gpt-oss, Llama 4; Gemma 4 and MiMo V2 are refused below)
HYBRID_SWA_ARCHS = frozenset({"GptOssForCausalLM", "Llama4ForConditionalGeneration",
                              "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
                              "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM",
                              "Step3p5ForCausalLM", "BeamForCausalLM", "LagunaForCausalLM"})
_UNTRACED_SWA = ("Gemma4", "MiMoV2", "Step3p5", "Beam", "Laguna")
_KV_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp32": 4}


def prefill_graph_sizes(max_bs: int) -> list[int]:
    """The prefill CUDA-graph sizes SGLang 0.5.23 captures up to ``max_bs`` tokens
    (arg_groups/cuda_graph_hook.py:480-497)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def _capacity_defaults(gpu_mib, tp_size: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode graph max batch) by GPU memory in MiB
    (arg_groups/memory_hook.py:89-170)."""
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        return 4096, 48 if tp_size < 4 else 160
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp_size < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp_size < 4 else 512
    return 16384, 512


def default_mem_fraction(gpu_mib, tp_size: int = 1, mla: bool = False,
                         model_path: str = "") -> tuple[Fraction, str]:
    """SGLang 0.5.23's mem_fraction_static when none is given, and the reserve it came from.

    gpu_mib: what nvidia-smi reports as memory.total, in MiB (it may be fractional).
    model_path: the --model-path SGLang is given; one containing "llama-2" caps the prefill
    graph at 4096 tokens (memory_hook.py:258-263), so fewer graphs are reserved for.
    Single node, no pipeline parallelism, no speculative decoding, no DP attention, no DeepEP,
    CUDA graphs on (arg_groups/memory_hook.py:281-343)."""
    gpu_mib = Fraction(gpu_mib)
    chunk, max_bs = _capacity_defaults(gpu_mib, tp_size)
    prefill_max = min(8192, chunk) if mla else chunk  # memory_hook.py:233-238
    if "llama-2" in model_path.lower():
        prefill_max = min(prefill_max, 4096)  # memory_hook.py:258-263
    graph = Fraction(max_bs * 2)  # :368
    graph += Fraction(3, 2) * 1024 if mla else 8 * len(prefill_graph_sizes(prefill_max))
    reserve = 512 + Fraction(3, 2) * max(chunk, 2048) + Fraction(tp_size, 8) * 1024 + graph
    if gpu_mib > 60 * 1024:
        reserve = max(reserve, Fraction(10 * 1024))
    value = Fraction(round(float(evaluate(MEM_FRACTION, G=gpu_mib, R=reserve)), 3)
                     ).limit_denominator(1000)
    how = (f"round((G - R) / G, 3), G = {float(gpu_mib):g} MiB (nvidia-smi), R = "
           f"{float(reserve):g} MiB: 512 + 1.5 x chunked_prefill_size {chunk} + TP {tp_size}/8 "
           f"x 1024 + CUDA graphs {float(graph):g} (decode max batch {max_bs} x 2 + "
           + ("1.5 GiB for MLA" if mla else
              f"{len(prefill_graph_sizes(prefill_max))} prefill sizes x 8")
           + (")" if reserve > 10 * 1024 or gpu_mib <= 60 * 1024 else "), raised to 10 GiB"))
    return value, how


@dataclass(frozen=True)
class SGLangPool:
    """What SGLang 0.5.23 allocates on one GPU (TP rank); bytes exact."""

    kv_budget: int
    cell: int  # bytes per token of the (full) pool: every layer the pool holds
    page: int
    tokens: int  # max_total_num_tokens: the "#tokens" it logs
    max_running_requests: int
    sessions: int  # requests of `context` tokens that fit at once
    context: int
    mem_fraction_static: Fraction
    swa_cell: int | None = None  # bytes per token of the sliding-window pool, if any
    swa_tokens: int | None = None
    terms: tuple = ()  # (label, value, source) rows for the report
    notes: tuple[str, ...] = field(default_factory=tuple)


def _float32(x) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _measured(free: int, world: int) -> float:
    """A free memory in bytes as SGLang holds it: a float64 (of GB, bytes / 2^30: the same
    float times 2^30), all-reduced as a float32 when ``world`` > 1 (utils/common.py:569-574;
    distributed/bootstrap.py:207-212). SGLang's rounding step, applied to the inputs."""
    return _float32(free) if world > 1 else float(free)


def kv_budget(free_before: int, weights: int, other: int, fraction, world: int = 1) -> int:
    """``KV_BUDGET``, F_0 - W - X - F_0 (1 - f) bytes, the budget SGLang 0.5.23 sizes its pools
    from, in its own floating point: ``KV_BUDGET_MEASURED`` evaluated in floats
    (:func:`~kvlib.core.numeric.evaluate_floats`) on the free memories before and after the
    weights as SGLang measures them (:func:`_measured`) and float(f)
    (kv_cache_configurator.py:2990-3060: GB floats, utils/common.py:427-576, whose scaling by
    2^30 is exact). Within a few KiB of the exact floor; negative (floored) where SGLang
    stops."""
    return evaluate_floats(KV_BUDGET_MEASURED, F_0=_measured(free_before, world),
                           F_1=_measured(free_before - weights - other, world), f=fraction)


def k_size_bytes(tokens_: int, page: int, kv_heads: int, head_dim: int, layers: int,
                 b: int, tp: int = 1) -> int:
    """``K_SIZE``, the K buffer SGLang logs: (N + page) rows x max(1, kv_heads // tp) x
    head_dim x layers x b (mem_cache/memory_pool.py:2574-2578)."""
    return evaluate(K_SIZE, T=tokens_, p=page, N_kv=kv_heads, TP=tp, d_QK=head_dim, N_L=layers,
                    b=b)


def pool(*, kind: str, budget: int, page: int, context: int, fraction, full_cell: int,
         swa_cell: int = 0, window: int | None = None, ratio=SWA_FULL_TOKENS_RATIO,
         terms=(), notes=()) -> SGLangPool:
    """The pools for a budget: kind "single" (one pool, every layer) or "hybrid_swa"; every
    count is the module's expression, evaluated exactly."""
    budget_in = max(0, budget)
    ratio = Fraction(ratio)
    if kind == "single":
        n = evaluate(TOKENS, B_KV=budget_in, c=full_cell, p=page)
        swa_n = None
    else:
        n = evaluate(FULL_TOKENS_SWA, B_KV=budget_in, c_full=full_cell, c_swa=swa_cell, r=ratio,
                     p=page)
        swa_n = evaluate(SWA_TOKENS, T=n, r=ratio, p=page)
    running = evaluate(MAX_RUNNING, T=n, C=context)
    if swa_n is not None and window is not None:
        # the admission floor: min(tokens, window) + one page per request (pool_configurator.py:
        # 198-216)
        sessions = evaluate(SESSIONS_SWA, T=n, C=context, p=page, T_SWA=swa_n, w=window)
    else:
        sessions = evaluate(SESSIONS, T=n, C=context, p=page)
    return SGLangPool(kv_budget=budget, cell=full_cell, page=page, tokens=n,
                      max_running_requests=running, sessions=sessions, context=context,
                      mem_fraction_static=Fraction(fraction),
                      swa_cell=swa_cell if swa_n is not None else None, swa_tokens=swa_n,
                      terms=tuple(terms), notes=tuple(notes))


def kv_bytes(kv_dtype: str) -> int:
    """b of SGLang's --kv-cache-dtype (auto = the model's bf16/fp16, fp8_e4m3, fp8_e5m2)."""
    if kv_dtype not in _KV_BYTES:
        raise ValueError(f"--kv-dtype {kv_dtype}: SGLang {RELEASE}'s pool rule is traced for "
                         "bf16, fp16, fp8 (fp8_e4m3, fp8_e5m2) only")
    return _KV_BYTES[kv_dtype]


def untraced_swa(arch: str) -> bool:
    return any(arch.startswith(a) for a in _UNTRACED_SWA)
