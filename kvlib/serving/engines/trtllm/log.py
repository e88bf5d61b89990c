"""TensorRT-LLM's KV-cache start-up lines, worked out again (``kvlib explain-log``, issue 35).

"[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)" (N whole blocks of
tokens_per_block, X = N x bytes per token / 2^30), "Estimated max memory in KV cache : X GiB",
"Peak memory during memory usage profiling (torch + non-torch): P GiB, available KV cache
memory when calculating max tokens: A GiB, fraction is set f, kv size [per token] is S. device
total memory T GiB, ..., t GiB" (A = (T - P + t) x f, _util.py ``_cal_max_memory``) and "Max
KV cache blocks per sequence: ..., tokens per block=n, primary blocks=B". Each printed number
is compared with its rounding (two decimals: ± 0.005).

Read from the log before any flag (issue 43 item 3):

* the release ("[TensorRT-LLM] TensorRT-LLM version: X"). A windowed model (gpt-oss) is sized
  with every layer at full length: in 1.1.x as its posted logs show (gpt-oss-20b on a DGX Spark,
  1.1.0rc3: 4,128 tokens x 24 layers x 2 x 8 x 64 x 2 B = 0.19 GiB, printed "0.19"), and in
  other releases as the V1 KVCacheManager's default (``max_attention_window`` unset: one window,
  max_seq_len; resource_manager.py at the pinned commit). A log whose block lines name more than
  one ``[window size=W]`` has per-window pools (VSWA): their tokens and bytes are summed over
  the windows, each pool with its own layers (:mod:`.log_vswa`).
* the KV dtype, where the log prints none and ``--kv-dtype`` is not given: the first
  allocation's GiB / tokens, within its rounding, fits one element size; said as an inference.
* AutoDeploy's placeholder ("Using fake cache manager with head_dim=0", then "Allocated 0.00
  GiB ..."): its GiB is shown as information, not a KV size.

The 0.5-0.8 releases' "Allocate N bytes for k/v cache." / "Using T tokens in paged KV cache"
lines and their refusal are :mod:`.log_legacy`'s.
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import cell_bytes, kv_heads
from kvlib.serving.engines.log import HALF, EngineCheck, EngineExplanation, GiB
from kvlib.serving.engines.log import gib_ok as _gib_ok
from kvlib.serving.engines.trtllm import log_legacy, log_vswa
from kvlib.serving.engines.trtllm import pools as trt
from kvlib.serving.engines.trtllm.defaults import DEFAULT_FRACTION

__all__ = ["detect", "signs", "explain", "release", "cell_bytes_per_token", "groups_cell"]

_TRT_ALLOC = re.compile(r"\[MemUsageChange\] Allocated (?P<x>[\d.]+) GiB for max tokens in "
                        r"paged KV cache \((?P<n>\d+)\)")
_TRT_EST = re.compile(r"Estimated max memory in KV cache\s*:\s*(?P<x>[\d.]+) GiB")
_TRT_PEAK = re.compile(r"Peak memory during memory usage profiling \(torch \+ non-torch\):\s*"
                       r"(?P<p>[\d.]+) GiB, available KV cache memory when calculating max "
                       r"tokens:\s*(?P<a>[\d.]+) GiB, fraction is set (?P<f>[\d.]+), kv size "
                       r"(?:per token )?is (?P<s>\d+)\. device total memory (?P<t>[\d.]+) GiB"
                       r".*?(?P<tmp>[\d.]+) GiB")
_TRT_BLOCKS = re.compile(r"tokens per block=(?P<b>\d+), primary blocks=(?P<p>\d+)")
_TRT_PRIMARY = re.compile(r"Number of blocks in KV cache primary pool: (?P<p>\d+)")
_TRT_TPB = re.compile(r"Number of tokens per block: (?P<b>\d+)")
_VERSION = re.compile(r"TensorRT-LLM version:\s*v?(?P<v>\d+\.\d+\.\d+[\w.]*)")
_WINDOW = re.compile(r"\[window size=(?P<w>\d+)\]")
_FAKE = re.compile(r"Using fake cache manager with head_dim=0")
_ATTN = (CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED)


def release(lines) -> tuple[str | None, int | None]:
    """The release the log prints ("TensorRT-LLM version: 1.1.0rc3") and its line; (None, None)
    where it prints none."""
    for i, text in lines:
        if (m := _VERSION.search(text)):
            return m["v"], i
    return None, None


def cell_bytes_per_token(model, tp: int, b: int) -> int:
    """TensorRT-LLM's bytes per token (``get_cache_size_per_token``) with every attention layer
    at full length, sliding ones included (module docstring): MHA 2 x layers x head_dim x KV
    heads per rank x b, MLA layers x (kv_lora_rank + rope) x b."""
    return groups_cell(model.groups, tp, b)


def groups_cell(groups, tp: int, b: int) -> int:
    """:func:`cell_bytes_per_token` of some of a model's groups (one VSWA pool's layers)."""
    cell = 0
    for g in groups:
        if g.kind == CacheKind.LATENT:
            cell += cell_bytes(trt, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                            "d_R": g.sizes.get("d_R", 0)}, tp, b)
        elif g.kind in _ATTN:
            cell += cell_bytes(trt, "CELL_MHA", {"N_L": g.layers, "d_QK": g.sizes["d_QK"],
                                            "N_kv": kv_heads(g)}, tp, b)
    return cell


def _infer_bytes(lines, model, tp: int):
    """The element size the first allocation line implies (1, 2 or 4 B: the one whose cell
    falls within the printed GiB's rounding), with that line; (None, None) if none or several."""
    for i, text in lines:
        if (m := _TRT_ALLOC.search(text)) and Fraction(m["x"]) > 0:
            n, x = int(m["n"]), Fraction(m["x"])
            fits = [b for b in (1, 2, 4)
                    if abs(Fraction(n * cell_bytes_per_token(model, tp, b), GiB) - x) <= HALF]
            return (fits[0], i) if len(fits) == 1 else (None, None)
    return None, None


def detect(text: str) -> bool:
    """Whether ``text`` holds one of TensorRT-LLM's KV-cache lines."""
    return bool(_TRT_ALLOC.search(text) or _TRT_EST.search(text) or _TRT_PEAK.search(text)
                or log_legacy.detect(text) or _TRT_PRIMARY.search(text))


#: what only TensorRT-LLM prints besides its KV lines: its log prefixes ("[TensorRT-LLM][INFO]"
#: of the C++ runtime, "[TRT-LLM] [I]" of the Python one, logger.py at the pinned commit), its
#: release line, its module and commands. vLLM's "TRTLLM" attention backend is not one.
_SIGNS = ((re.compile(r"\[TensorRT-LLM\]"), "the C++ runtime's prefix, [TensorRT-LLM]"),
          (re.compile(r"\[TRT-LLM\]"), "the Python runtime's prefix, [TRT-LLM]"),
          (_VERSION, "its release line"),
          (re.compile(r"\btensorrt_llm\b"), "its module, tensorrt_llm"),
          (re.compile(r"\btrtllm-(?:serve|build|bench)\b"), "a trtllm- command"))


def signs(text: str) -> tuple[int, str] | None:
    """The first line of ``text`` that only TensorRT-LLM prints (its number, and what it is),
    a KV line or not; None where there is none (``kvlib explain-log`` names the engine of a log
    whose KV lines it does not find)."""
    for i, line in enumerate(text.splitlines(), 1):
        for rx, what in _SIGNS:
            if rx.search(line):
                return i, what
    return None


def explain(lines, model, tp: int, kv_bytes: int | None) -> EngineExplanation:
    """The checks of TensorRT-LLM's lines (``lines``: (line number, text)); ``model`` (a
    ModelSpec) adds those that need its sizes."""
    e = EngineExplanation("trtllm")
    cell = None
    rel, rel_at = release(lines)
    windows = {int(m["w"]) for _, t in lines if (m := _WINDOW.search(t))}
    windowed = model is not None and any(g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED)
                                         for g in model.groups)
    first = lines[0] if lines else (1, "")
    if rel is not None:
        e.checks.append(EngineCheck(rel_at, lines[[k for k, _ in lines].index(rel_at)][1],
                                    "release", rel, rel, "info", "read from the log"))
    vswa = len(windows) > 1
    if vswa:
        e.checks.append(EngineCheck(
            first[0], first[1], "window rule", f"windows {sorted(windows)}",
            "one pool per window", "info", "per-window pools (VSWA): each pool holds its "
            "window's layers only; the allocation is their sum (log_vswa.py)"))
    elif windowed:
        legacy = any(log_legacy.detect(t) for _, t in lines)
        rule = ("1.1.x sizes every layer at full length (its posted gpt-oss logs)"
                if rel is not None and rel.startswith("1.1.") else
                "0.5-0.8 lines: bytes = tokens x every layer's cell (checked below)" if legacy
                else
                "every layer at full length: the V1 KVCacheManager's default, "
                "max_attention_window unset (resource_manager.py, pinned commit)")
        e.checks.append(EngineCheck(first[0], first[1], "window rule",
                                    f"release {rel or 'not printed'}", rule, "info",
                                    "sliding layers counted like full ones"))
    inferred_at = None
    if model is not None:
        b = kv_bytes
        if b is None and not vswa:
            b, at = _infer_bytes(lines, model, tp)
            if b is None:  # 0.5-0.8: "Allocate N bytes" over "Using T tokens", exactly
                b, at = log_legacy.infer_bytes(
                    lines, lambda x: cell_bytes_per_token(model, tp, x))
            if b is not None and b != 2:  # the default 2 B is no inference
                inferred_at = at
                e.checks.append(EngineCheck(
                    at, lines[[k for k, _ in lines].index(at)][1], "KV dtype (inferred)",
                    "not printed", f"{b} B a value", "info",
                    f"an inference: line {at}'s GiB / tokens fits {b}-byte values and no "
                    "other size; --kv-dtype overrides"))
        b = b or 2
        cell = cell_bytes_per_token(model, tp, b)
    block = trt.TOKENS_PER_BLOCK
    implied = []
    estimated = None
    fake = primary = None
    for i, text in lines:
        if _FAKE.search(text):
            fake = i
        if (m := _TRT_TPB.search(text)):
            block = int(m["b"])
        if (m := _TRT_PRIMARY.search(text)):
            primary = (int(m["p"]), i)
        if (m := _TRT_BLOCKS.search(text)):
            block = int(m["b"])
            e.checks.append(EngineCheck(i, text, "tokens per block", m["b"], m["b"], "info",
                                        f"primary blocks {int(m['p']):,} x {block} = "
                                        f"{int(m['p']) * block:,} tokens"))
            if not vswa:  # per-window pools: their sum is log_vswa's
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
            if primary is not None:
                e.checks.append(EngineCheck(
                    i, text, "tokens", f"{n:,}", f"{primary[0] * block:,}",
                    "ok" if primary[0] * block == n else "mismatch",
                    f"line {primary[1]}'s {primary[0]:,} primary blocks x {block} tokens"))
                primary = None
            e.checks.append(EngineCheck(
                i, text, f"tokens in blocks of {block}", f"{n:,}",
                f"{n // block:,} x {block} + {n % block}",
                "ok" if n % block == 0 else "mismatch",
                "TensorRT-LLM allocates whole blocks"))
            per_token = x * GiB / n
            if vswa and fake is None and x != 0:
                continue  # the sum over the windows' pools: log_vswa's check
            if fake is not None or x == 0:
                e.checks.append(EngineCheck(
                    i, text, "GiB allocated", f"{m['x']} GiB", "a placeholder", "info",
                    "AutoDeploy's fake cache manager (head_dim=0"
                    + (f", line {fake}" if fake else "") + "), not a KV size"))
                continue
            if cell is not None and i == inferred_at:
                e.checks.append(EngineCheck(
                    i, text, "GiB allocated", f"{m['x']} GiB", f"{n * cell / GiB:.4f} GiB",
                    "info", f"{n:,} tokens x {cell:,} B per token: the line the KV dtype was "
                    "inferred from, so no independent check"))
            elif cell is not None:
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
    e.checks.extend(log_legacy.explain_legacy(lines, cell, inferred_at))
    e.checks.extend(log_legacy.explain_cpp_budget(lines, None if model is None else cell,
                                                  DEFAULT_FRACTION))
    if vswa:
        e.checks.extend(log_vswa.explain_windows(
            lines, model, lambda groups: groups_cell(groups, tp, b)))
    e.checks.sort(key=lambda c: c.line)
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
