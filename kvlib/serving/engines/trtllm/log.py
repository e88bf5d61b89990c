"""TensorRT-LLM's KV-cache start-up lines, worked out again (``kvlib explain-log``, issue 35).

"[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)" (N whole blocks of
tokens_per_block, X = N x bytes per token / 2^30), "Estimated max memory in KV cache : X GiB",
"Peak memory during memory usage profiling (torch + non-torch): P GiB, available KV cache
memory when calculating max tokens: A GiB, fraction is set f, kv size [per token] is S. device
total memory T GiB, ..., t GiB" (A = (T - P + t) x f, _util.py ``_cal_max_memory``) and "Max
KV cache blocks per sequence: ..., tokens per block=n, primary blocks=B". Each printed number
is compared with its rounding (two decimals: ± 0.005).
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import cell_bytes, kv_heads
from kvlib.serving.engines.log import HALF, EngineCheck, EngineExplanation, GiB
from kvlib.serving.engines.log import gib_ok as _gib_ok
from kvlib.serving.engines.trtllm import pools as trt

__all__ = ["detect", "explain"]

_TRT_ALLOC = re.compile(r"\[MemUsageChange\] Allocated (?P<x>[\d.]+) GiB for max tokens in "
                        r"paged KV cache \((?P<n>\d+)\)")
_TRT_EST = re.compile(r"Estimated max memory in KV cache\s*:\s*(?P<x>[\d.]+) GiB")
_TRT_PEAK = re.compile(r"Peak memory during memory usage profiling \(torch \+ non-torch\):\s*"
                       r"(?P<p>[\d.]+) GiB, available KV cache memory when calculating max "
                       r"tokens:\s*(?P<a>[\d.]+) GiB, fraction is set (?P<f>[\d.]+), kv size "
                       r"(?:per token )?is (?P<s>\d+)\. device total memory (?P<t>[\d.]+) GiB"
                       r".*?(?P<tmp>[\d.]+) GiB")
_TRT_BLOCKS = re.compile(r"tokens per block=(?P<b>\d+), primary blocks=(?P<p>\d+)")


def detect(text: str) -> bool:
    """Whether ``text`` holds one of TensorRT-LLM's KV-cache lines."""
    return bool(_TRT_ALLOC.search(text) or _TRT_EST.search(text) or _TRT_PEAK.search(text))


def explain(lines, model, tp: int, kv_bytes: int | None) -> EngineExplanation:
    """The checks of TensorRT-LLM's lines (``lines``: (line number, text)); ``model`` (a
    ModelSpec) adds those that need its sizes."""
    e = EngineExplanation("trtllm")
    cell = None
    if model is not None:
        b = kv_bytes or 2
        cell = 0  # TensorRT-LLM's cell expressions, per group (get_cache_size_per_token)
        for g in model.groups:
            if g.kind == CacheKind.LATENT:
                cell += cell_bytes(trt, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                                "d_R": g.sizes.get("d_R", 0)}, tp, b)
            elif g.kind == CacheKind.FULL:
                cell += cell_bytes(trt, "CELL_MHA", {"N_L": g.layers, "d_QK": g.sizes["d_QK"],
                                                "N_kv": kv_heads(g)}, tp, b)
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
