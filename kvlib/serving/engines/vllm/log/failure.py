"""vLLM's start-up failure, explained: "To serve at least one request with the model's max seq
len (N), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB).
Based on the available memory, the estimated maximum model length is M." (issue 32).

vLLM 0.34.0, v1/core/kv_cache_planning.py (0.33.0 has the same code at :50-185):

* ``_check_enough_kv_cache_memory`` (:99-131) raises when ``needed > available``; both are
  printed by ``format_gib`` = ``str(round(bytes / 2**30, 2))`` (utils/mem_utils.py:31-32;
  earlier releases ``%.2f``): a figure stands for every byte count within 0.005 GiB of it.
* X, ``needed``: ``_max_memory_usage_bytes_from_groups`` (:1297-1329) = bytes per block x the
  blocks one request of N tokens takes, summed over KV-cache groups; kvlib's
  :func:`kvlib.serving.engines.vllm.layout.vllm_layout` gives both (``bytes_per_block`` x
  ``blocks_per_request``). Older releases summed ``max_memory_usage_bytes`` layer by layer
  (:134-139), the same figure for a model whose layers are all alike.
* Y, ``available``: the worker's KV budget less one block, the null block the BlockPool
  holds back (:1633-1643 and :214-223; 0.33.0 :170-178). 0.27.0 and 0.28.0 print the budget
  itself (kv_cache_utils.py: no such subtraction).
* M: ``_estimate_max_model_len_from_groups`` (:1332-1374) and ``estimate_max_model_len``
  (:142-193), a binary search over lengths 1..N for the largest whose blocks fit in Y;
  :func:`largest_fitting_len` is that search, line for line. The result is whole blocks.

What would make it fit is worked out by kvlib, never typed: the utilization that adds the
missing bytes (total x delta), the context M, an fp8 cache, more TP.
"""

from __future__ import annotations

import math
from fractions import Fraction

from kvlib.serving.engines.vllm.log.numbers import GiB, _bytes_range, _frac, _g, _round2_matches
from kvlib.serving.engines.vllm.log.reading import Found, VllmLog, _version_key
from kvlib.serving.engines.vllm.pages import largest_fitting_len
from kvlib.serving.gpus import get_gpu

__all__ = ["largest_fitting_len", "explain_failures"]  # the search lives in vllm_layout


def _null_block(log: VllmLog) -> bool | None:
    """Whether the printed "available" is the budget less one block (0.33 on), or the budget
    (0.27, 0.28); None when the log prints no version."""
    key = _version_key(log.version)
    if key is None:
        return None
    return key >= (0, 33)


def _utilization(log: VllmLog) -> tuple[Fraction | None, str]:
    """The gpu_memory_utilization the run used, and where it comes from."""
    raw = log.args.get("gpu_memory_utilization")
    if raw is not None:
        return Fraction(str(raw)), "the log's non-default args"
    raw = log.command.get("gpu_memory_utilization")
    if raw is not None:
        return Fraction(str(raw)), f"line {log.command_line}'s pasted launch command"
    for f in log.found:
        if f.kind in ("free_010", "free_033"):
            return _frac(f.values[2]), f"line {f.line.number}"
    key = _version_key(log.version)
    if key is None:
        return None, ""
    if key >= (0, 34):
        return Fraction(1), "vLLM 0.34's extensible KV cache resolves it to 1.0"
    if key >= (0, 20):
        return Fraction(92, 100), f"vLLM {log.version}'s default"
    return Fraction(9, 10), f"vLLM {log.version}'s default"


def _total_bytes(log: VllmLog, gpu: str | None) -> tuple[int | None, str]:
    """The device's total memory: --gpu's catalog figure, else the log's "Free memory on
    device (free/total GiB)"."""
    if gpu:
        g = get_gpu(gpu)
        return g.total_memory_bytes, f"{g.name}, {_g(Fraction(g.total_memory_bytes, GiB))} GiB"
    for f in log.found:
        if f.kind in ("free_010", "free_033"):
            return int(_frac(f.values[1]) * GiB), f"{f.values[1]} GiB (line {f.line.number})"
    return None, ""


def explain_failures(log: VllmLog, c, s, gpu: str | None) -> None:
    """Add the checks of every start-up failure line of ``log`` to ``c`` (a ``_Checks``);
    ``s`` is the log's setup (:class:`kvlib.serving.engines.vllm.log.rules._Setup`)."""
    for f in log.found:
        if f.kind == "kv_failure":
            _explain_one(log, c, s, gpu, f)
        elif f.kind == "no_kv_memory":
            c.add(f, "KV cache memory", "none available", "0 blocks",
                  "the budget (less the null block from 0.33) is 0 or below: weights, "
                  "activations and non-torch memory took all of total x utilization", True)


def _in_flight_unknown(log: VllmLog, lay, x: str) -> str:
    """Why a needed figure kvlib does not reproduce is not a disagreement: a sliding-window
    group's blocks a request are cdiv(window - 1 + in-flight tokens, block) + 1 (0.34.0
    v1/kv_cache_interface.py:932-958; max_num_batched_tokens in earlier releases), and the log
    prints no max_num_batched_tokens (kvlib took its default). Said with the in-flight tokens
    that would give the printed figure; "" when none would, or when the log prints it."""
    if any(f.kind == "batched" for f in log.found) or "max_num_batched_tokens" in log.args \
            or "max_num_batched_tokens" in log.command:
        return ""
    slid = [g for g in lay.groups if g.kind == "sliding" and g.window]
    if not slid or len({(g.window, g.block_size) for g in slid}) != 1:
        return ""
    fixed = sum(g.blocks_per_request for g in lay.groups if g not in slid)
    lo, hi = _bytes_range(x)
    bpb = lay.bytes_per_block
    ks = [k for k in range(max(2, (-(-lo // bpb) - fixed) // len(slid)),
                           (hi // bpb - fixed) // len(slid) + 1)
          if lo <= (fixed + k * len(slid)) * bpb <= hi]
    if not ks:
        return ""
    w, b = slid[0].window, slid[0].block_size
    f_lo, f_hi = (ks[0] - 2) * b - w + 2, (ks[-1] - 1) * b - w + 1
    if f_hi < 1:
        return ""
    return (f"the {len(slid)} sliding-window group(s) (window {w:,}) hold cdiv({w:,} - 1 + "
            f"in-flight tokens, {b}) + 1 blocks a request, and the log prints no "
            f"max_num_batched_tokens (kvlib took {lay.in_flight_tokens:,} in-flight tokens: "
            f"{slid[0].blocks_per_request:,} blocks); {ks[0]:,} to {ks[-1]:,} blocks, "
            f"{max(f_lo, 1):,} to {f_hi:,} in-flight tokens, give the printed {x} GiB")


def _explain_one(log: VllmLog, c, s, gpu: str | None, f: Found) -> None:
    n, x, y, m = int(f.values[0]), f.values[1], f.values[2], f.values[3]
    if s.relayout is None:
        for q, p in (("KV cache one request needs", x + " GiB"),
                     ("estimated maximum model length", m)):
            if p and p != "None GiB":
                c.add(f, q, p, "-", "", None, s.why_not)
        return
    cache: dict[tuple, object] = {}

    def layout(length: int, dtype: str = s.kv_dtype, tp: int = s.tp):
        key = (length, dtype, tp)
        if key not in cache:
            cache[key] = s.relayout(length, dtype, tp)
        return cache[key]

    def needed(length: int, dtype: str = s.kv_dtype, tp: int = s.tp) -> int:
        lay = layout(length, dtype, tp)
        return lay.bytes_per_block * lay.blocks_per_request

    lay = layout(n)
    bpb = lay.bytes_per_block
    need = needed(n)
    groups = " + ".join(f"{g.blocks_per_request:,}" for g in lay.groups)
    words = (f"{bpb:,} B per block (TP={s.tp}, kv {s.kv_dtype}, block {lay.block_size}) x "
             f"{lay.blocks_per_request:,} blocks for {n:,} tokens"
             + (f" ({groups} over {len(lay.groups)} groups)" if len(lay.groups) > 1 else "")
             + f" = {need:,} B = {need / GiB:.4f} GiB (GiB = 2^30 B)")
    agrees = _round2_matches(x, Fraction(need, GiB))
    why = "" if agrees else _in_flight_unknown(log, lay, x)
    c.add(f, "KV cache one request needs", x + " GiB", f"{_g(Fraction(need, GiB))} GiB", words,
          None if why else agrees, why)
    lo, hi = _bytes_range(y)
    c.info(f, "available KV cache memory", y + " GiB", f"{lo // bpb:,} to {hi // bpb:,} blocks",
           "measured by vLLM (the budget"
           + {True: " less the null block, one block", False: "",
              None: ", less the null block from 0.33"}[_null_block(log)]
           + f"); {y} GiB ± 0.005 / {bpb:,} B per block")
    m_lo, m_hi = largest_fitting_len(needed, lo, n), largest_fitting_len(needed, hi, n)
    how = (f"vLLM's binary search over 1..{n:,} for the largest length whose blocks fit in "
           f"{y} GiB ± 0.005: {m_lo:,} at {lo:,} B, {m_hi:,} at {hi:,} B")
    span = f"{m_lo:,}" if m_lo == m_hi else f"{m_lo:,} to {m_hi:,}"
    if m is not None:
        p = int(m)
        # the search gives p for some budget b in [lo, hi] iff needed(p) <= b < needed(p + 1)
        ok = m_lo <= p <= m_hi and needed(p) <= hi and (p == n or needed(p + 1) > lo)
        c.add(f, "estimated maximum model length", m, span,
              how + f" ({layout(p).blocks_per_request:,} blocks of {lay.block_size})", ok)
    else:
        c.info(f, "estimated maximum model length", "not printed", span, how)
    _avail_relation(log, c, f, y, bpb)
    fit = int(m) if m is not None and c.out[-1].status == "ok" else m_lo
    _what_fits(log, c, s, gpu, f, n, y, need, needed, fit)


def _avail_relation(log: VllmLog, c, f: Found, y: str, bpb: int) -> None:
    """Y against the same run's "Available KV cache memory" line, where there is one."""
    before = [a for a in log.found if a.line.number < f.line.number and a.kind in
              ("available", "engine", "capacity", "tokens", "concurrency")]
    if not before or before[-1].kind != "available":
        return  # none, or it belongs to an earlier run (one that printed its capacity)
    a = before[-1]
    lo, hi = _bytes_range(a.values[0])
    y_lo, y_hi = _bytes_range(y)
    null = _null_block(log)
    options = {True: [bpb], False: [0], None: [0, bpb]}[null]
    ok = any(lo - k <= y_hi and hi - k >= y_lo for k in options)
    less = {True: f" - one block {bpb:,} B (the null block)", False: "",
            None: f" (- one block {bpb:,} B from 0.33 on)"}[null]
    c.add(f, "available KV cache memory", y + " GiB", f"{a.values[0]} GiB{less}",
          f"line {a.line.number}'s budget" + less, ok)


def _what_fits(log: VllmLog, c, s, gpu: str | None, f: Found, n: int, y: str, need: int,
               needed, fit: int) -> None:
    """What would make N fit: each figure kvlib's."""
    lo, hi = _bytes_range(y)
    short = need - lo
    c.info(f, "to fit: shorter context", f"--max-model-len {n:,}",
           f"--max-model-len {fit:,}" if fit else "none fits",
           "the estimated maximum model length above, vLLM's own where kvlib agrees with it "
           "(else the low end of kvlib's)")
    total, where = _total_bytes(log, gpu)
    u, u_from = _utilization(log)
    if total is None:
        c.info(f, "to fit: gpu_memory_utilization", "-", "pass --gpu",
               f"{_g(Fraction(short, GiB))} GiB more KV memory is needed; the log names no GPU "
               "total to turn it into a utilization")
    else:
        delta = Fraction(short, total)
        if u is None:
            c.info(f, "to fit: gpu_memory_utilization", "-", f"+{math.ceil(delta * 100) / 100:.2f}",
                   f"{_g(Fraction(short, GiB))} GiB short / total {where} (the log prints no "
                   "version or utilization: add this to the one you used)")
        else:
            target = Fraction(math.ceil((u + delta) * 100), 100)
            if u >= 1 or target > 1:
                verdict = f"none: {float(u + delta):.3f} would exceed 1.0"
            else:
                verdict = f"{float(target):.2f}"
            c.info(f, "to fit: gpu_memory_utilization", f"{float(u):g} ({u_from})", verdict,
                   f"{float(u):g} + {_g(Fraction(short, GiB))} GiB short / total {where}, "
                   "rounded up to 0.01 (the budget grows by total x the added utilization)")
    if s.kv_dtype not in ("fp8",):
        try:
            need8 = needed(n, "fp8")
            m8 = largest_fitting_len(lambda length: needed(length, "fp8"), lo, n)
            fits = need8 <= lo
            c.info(f, "to fit: fp8 KV cache (--kv-cache-dtype fp8)", f"kv {s.kv_dtype}",
                   f"{_g(Fraction(need8, GiB))} GiB needed, "
                   + ("fits" if fits else f"does not fit; longest {m8:,} tokens"),
                   f"kvlib's layout with fp8 rows: {need8:,} B for {n:,} tokens vs {lo:,} B "
                   f"(the low end of {y} GiB)")
        except ValueError as e:
            c.info(f, "to fit: fp8 KV cache", f"kv {s.kv_dtype}", "-", str(e))
    tried = []
    for tp in (s.tp * 2, s.tp * 4, s.tp * 8):
        if tp > 64:
            break
        try:
            per_rank = needed(n, s.kv_dtype, tp)
        except ValueError:
            continue
        tried.append(f"TP={tp}: {_g(Fraction(per_rank, GiB))} GiB")
        if per_rank <= lo:
            c.info(f, "to fit: more tensor parallelism", f"TP={s.tp}", f"TP={tp}",
                   f"KV per rank: {'; '.join(tried)} (fits in {y} GiB; each rank's budget only "
                   "grows as the weights split further)")
            break
    else:
        if tried:
            c.info(f, "to fit: more tensor parallelism", f"TP={s.tp}", "none up to "
                   + tried[-1].split(":")[0], "KV per rank: " + "; ".join(tried))
