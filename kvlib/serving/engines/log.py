"""SGLang's and TensorRT-LLM's KV-cache start-up lines, worked out again (``kvlib explain-log``,
issue 35; vLLM's are :mod:`kvlib.serving.vllm_log`).

Recognised:

* SGLang (mem_cache/memory_pool.py:2073-2098 in 0.5.23): "KV Cache is allocated. [dtype: D,]
  #tokens: N, K size: X GB, V size: Y GB" (GB = 2^30 B, memory_pool.py:116) and the MLA form
  "... KV size: X GB". K holds N + one page of rows (:2574-2578): K = (N + page) x KV heads per
  rank x head_dim x full-attention layers x b, V the same with v_head_dim; MLA: (N + page) x
  (kv_lora_rank + qk_rope_head_dim) x layers x b.
* TensorRT-LLM: "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)" (N whole
  blocks of tokens_per_block, X = N x bytes per token / 2^30), "Estimated max memory in KV
  cache : X GiB", "Peak memory during memory usage profiling (torch + non-torch): P GiB,
  available KV cache memory when calculating max tokens: A GiB, fraction is set f, kv size
  [per token] is S. device total memory T GiB, ..., t GiB" (A = (T - P + t) x f,
  _util.py ``_cal_max_memory``) and "Max KV cache blocks per sequence: ..., tokens per
  block=n, primary blocks=B".

Each printed number is compared with its rounding (two decimals: ± 0.005).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.serving.engines import _cell, _heads
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines import trtllm as trt

__all__ = ["EngineCheck", "EngineExplanation", "detect_engine", "explain_engine_log"]

GiB = 1 << 30
HALF = Fraction(5, 1000)  # half a unit in the last of two printed decimals

_SG_KV = re.compile(r"KV Cache is allocated\.\s*(?:dtype:\s*(?P<dtype>[\w.]+),\s*)?#tokens:\s*"
                    r"(?P<n>\d+),\s*(?:K size:\s*(?P<k>[\d.]+) GB,\s*V size:\s*(?P<v>[\d.]+) GB"
                    r"|KV size:\s*(?P<kv>[\d.]+) GB)")
_TRT_ALLOC = re.compile(r"\[MemUsageChange\] Allocated (?P<x>[\d.]+) GiB for max tokens in "
                        r"paged KV cache \((?P<n>\d+)\)")
_TRT_EST = re.compile(r"Estimated max memory in KV cache\s*:\s*(?P<x>[\d.]+) GiB")
_TRT_PEAK = re.compile(r"Peak memory during memory usage profiling \(torch \+ non-torch\):\s*"
                       r"(?P<p>[\d.]+) GiB, available KV cache memory when calculating max "
                       r"tokens:\s*(?P<a>[\d.]+) GiB, fraction is set (?P<f>[\d.]+), kv size "
                       r"(?:per token )?is (?P<s>\d+)\. device total memory (?P<t>[\d.]+) GiB"
                       r".*?(?P<tmp>[\d.]+) GiB")
_TRT_BLOCKS = re.compile(r"tokens per block=(?P<b>\d+), primary blocks=(?P<p>\d+)")
_DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float8_e4m3fn": 1,
                "torch.float8_e5m2": 1, "torch.float32": 4, "torch.uint8": 1}


@dataclass(frozen=True)
class EngineCheck:
    line: int
    text: str
    quantity: str
    printed: str
    kvlib: str
    status: str  # ok, mismatch, info
    how: str = ""


@dataclass
class EngineExplanation:
    engine: str  # "sglang" or "trtllm"
    checks: list[EngineCheck] = field(default_factory=list)

    @property
    def mismatches(self) -> list[EngineCheck]:
        return [c for c in self.checks if c.status == "mismatch"]


def detect_engine(text: str) -> str | None:
    """'sglang', 'trtllm' or None (a vLLM log, or nothing recognised)."""
    if _SG_KV.search(text):
        return "sglang"
    if _TRT_ALLOC.search(text) or _TRT_EST.search(text) or _TRT_PEAK.search(text):
        return "trtllm"
    return None


def _gib_ok(printed: str, exact) -> bool:
    return abs(Fraction(printed) - Fraction(exact) / GiB) <= HALF


def _sglang(lines, model, tp: int, page: int, kv_bytes: int | None) -> EngineExplanation:
    from kvlib.models.spec import CacheKind

    e = EngineExplanation("sglang")
    full = [g for g in (model.groups if model else ()) if g.kind in (CacheKind.FULL,
                                                                      CacheKind.SLIDING,
                                                                      CacheKind.CHUNKED,
                                                                      CacheKind.LATENT)]
    for i, text in lines:
        m = _SG_KV.search(text)
        if not m:
            continue
        n = int(m["n"])
        b = _DTYPE_BYTES.get(m["dtype"]) if m["dtype"] else kv_bytes
        b = b or 2
        if m["k"] is not None and m["k"] == m["v"]:
            e.checks.append(EngineCheck(i, text, "K size = V size", f"{m['k']} GB",
                                        f"{m['v']} GB", "info",
                                        "K and V rows of equal width (head_dim = v_head_dim)"))
        per_token = (Fraction(m["k"] or m["kv"]) + Fraction(m["v"] or 0)) * GiB / (n + page)
        e.checks.append(EngineCheck(i, text, "bytes per token (from the line)",
                                    f"{m['k'] or m['kv']} + {m['v'] or 0} GB",
                                    f"about {float(per_token):,.0f} B", "info",
                                    f"(K + V) x 2^30 / (#tokens + page {page})"))
        if not full:
            continue
        if m["kv"] is not None:  # an MLA latent: SGLang's CELL_MLA per row
            exact = (n + page) * sum(
                _cell(sg, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                       "d_R": g.sizes.get("d_R", 0)}, tp, b)
                for g in full if g.kind == CacheKind.LATENT)
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(m["kv"], exact) else "mismatch",
                f"(#tokens {n:,} + page {page}) x (kv_lora_rank + rope) x layers x {b} B, "
                "GB = 2^30"))
            continue
        for name, printed, dim in (("K size", m["k"], "d_QK"), ("V size", m["v"], "d_V")):
            exact = sum(sg.k_size_bytes(n, page, _heads(g), g.sizes[dim], g.layers, b, tp)
                        for g in full if g.kind != CacheKind.LATENT)
            rows = exact // ((n + page) * b)
            e.checks.append(EngineCheck(
                i, text, name, f"{printed} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(printed, exact) else "mismatch",
                f"(#tokens {n:,} + page {page}) x {rows:,} (KV heads per rank x {dim} x "
                f"attention layers) x {b} B, TP={tp}, GB = 2^30 (memory_pool.py:2574-2578)"))
    return e


def _trtllm(lines, model, tp: int, kv_bytes: int | None) -> EngineExplanation:
    e = EngineExplanation("trtllm")
    cell = None
    if model is not None:
        from kvlib.models.spec import CacheKind
        b = kv_bytes or 2
        cell = 0  # TensorRT-LLM's cell expressions, per group (get_cache_size_per_token)
        for g in model.groups:
            if g.kind == CacheKind.LATENT:
                cell += _cell(trt, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                                "d_R": g.sizes.get("d_R", 0)}, tp, b)
            elif g.kind == CacheKind.FULL:
                cell += _cell(trt, "CELL_MHA", {"N_L": g.layers, "d_QK": g.sizes["d_QK"],
                                                "N_kv": _heads(g)}, tp, b)
    block = trt.TOKENS_PER_BLOCK
    implied = []
    estimated = None
    for i, text in lines:
        if (m := _TRT_BLOCKS.search(text)):
            block = int(m["b"])
            e.checks.append(EngineCheck(i, text, "tokens per block", m["b"], m["b"], "info",
                                        f"primary blocks {int(m['p']):,} x {block} = "
                                        f"{int(m['p']) * block:,} tokens"))
            implied.append(("blocks", int(m["p"]) * block, i))
        if (m := _TRT_PEAK.search(text)):
            a = (Fraction(m["t"]) - Fraction(m["p"]) + Fraction(m["tmp"])) * Fraction(m["f"])
            tol = HALF * 3 * Fraction(m["f"]) + HALF
            e.checks.append(EngineCheck(
                i, text, "available KV cache memory", f"{m['a']} GiB", f"{float(a):.3f} GiB",
                "ok" if abs(a - Fraction(m["a"])) <= tol else "mismatch",
                f"(device total {m['t']} - peak {m['p']} + temporary {m['tmp']}) GiB x "
                f"fraction {m['f']} (_util.py _cal_max_memory)"))
            if cell is not None:
                e.checks.append(EngineCheck(
                    i, text, "kv size per token", m["s"], f"{cell:,}",
                    "ok" if int(m["s"]) == cell else "mismatch",
                    f"2 x layers x head_dim x KV heads // TP {tp} x b (MLA: 1 x layers x "
                    "(kv_lora_rank + rope) x b), get_cache_size_per_token"))
            else:
                cell = int(m["s"])
        if (m := _TRT_EST.search(text)):
            estimated = (Fraction(m["x"]), i)
        if (m := _TRT_ALLOC.search(text)):
            n, x = int(m["n"]), Fraction(m["x"])
            for what, tokens_, j in implied:
                if j < i and what == "blocks":
                    e.checks.append(EngineCheck(
                        i, text, "tokens", f"{n:,}", f"{tokens_:,}",
                        "ok" if tokens_ == n else "mismatch", f"from line {j}'s {what}"))
            implied = [t for t in implied if t[0] != "blocks"]
            e.checks.append(EngineCheck(
                i, text, f"tokens in blocks of {block}", f"{n:,}",
                f"{n // block:,} x {block} + {n % block}",
                "ok" if n % block == 0 else "mismatch",
                "TensorRT-LLM allocates whole blocks"))
            per_token = x * GiB / n
            if cell is not None:
                exact = n * cell
                e.checks.append(EngineCheck(
                    i, text, "GiB allocated", f"{m['x']} GiB", f"{exact / GiB:.4f} GiB",
                    "ok" if _gib_ok(m["x"], exact) else "mismatch",
                    f"{n:,} tokens x {cell:,} B per token, GiB = 2^30"))
            else:
                e.checks.append(EngineCheck(i, text, "bytes per token", f"{m['x']} GiB",
                                            f"about {float(per_token):,.0f} B", "info",
                                            "GiB x 2^30 / tokens"))
                low = (x - HALF) * GiB / n
                high = (x + HALF) * GiB / n
                implied.append(("bytes per token", (low, high), i))
            if estimated is not None and cell is not None and estimated[1] < i:
                est, j = estimated
                lo = int((est - HALF) * GiB) // cell
                hi = int((est + HALF) * GiB) // cell
                lo_n, hi_n = -(-lo // block) * block, -(-hi // block) * block
                e.checks.append(EngineCheck(
                    i, text, "tokens from the estimate", f"{n:,}", f"{lo_n:,} to {hi_n:,}",
                    "ok" if lo_n <= n <= hi_n else "mismatch",
                    f"line {j}'s {est} GiB // {cell:,} B, rounded up to blocks of {block}"))
    # two allocations in one log: the same bytes per token (one model, one cell)
    ranges = [(lo_hi, i) for what, lo_hi, i in implied if what == "bytes per token"]
    for (a, i), (b_, j) in zip(ranges, ranges[1:], strict=False):
        ok = max(a[0], b_[0]) <= min(a[1], b_[1])
        e.checks.append(EngineCheck(
            j, lines[[k for k, _ in lines].index(j)][1], "bytes per token, line to line",
            f"{float((b_[0] + b_[1]) / 2):,.0f} B", f"{float((a[0] + a[1]) / 2):,.0f} B "
            f"(line {i})", "ok" if ok else "mismatch",
            "the same cell in both allocations, within the rounding of their GiB"))
    return e


def explain_engine_log(text: str, model=None, *, tp: int = 1, page: int = 1,
                       kv_bytes: int | None = None) -> EngineExplanation:
    """Check an SGLang or TensorRT-LLM start-up log; ``model`` (a ModelSpec) adds the checks
    that need its sizes."""
    lines = [(i, line.rstrip("\n")) for i, line in enumerate(text.splitlines(), 1)]
    engine = detect_engine(text)
    if engine == "sglang":
        return _sglang(lines, model, tp, page, kv_bytes)
    if engine == "trtllm":
        return _trtllm(lines, model, tp, kv_bytes)
    raise ValueError("no SGLang or TensorRT-LLM KV-cache line in the log")
