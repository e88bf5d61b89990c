"""The checks: each recognised line's numbers worked out again with kvlib's formulas."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from kvlib.models.spec import STATEFUL, ModelSpec
from kvlib.serving.engines.vllm.layout import state_page_bytes
from kvlib.serving.engines.vllm.log.failure import explain_failures
from kvlib.serving.engines.vllm.log.numbers import (
    HALF,
    Check,
    Explanation,
    GiB,
    _bytes_range,
    _frac,
    _g,
    _gib_range,
    _near,
    _round2_matches,
)
from kvlib.serving.engines.vllm.log.reading import Found, VllmLog
from kvlib.serving.engines.vllm.log.rules import (
    ENGINE_WIDE,
    _budget_blocks,
    _bytes,
    _concurrency_of,
    _layout_words,
    _Setup,
    _tokens_formula,
    _tokens_of,
    setups,
)
from kvlib.serving.engines.vllm.log.tpu import shape_of_model, tpu_cache

__all__ = ["explain"]

REDUNDANCY = 150 * 1024**2  # the 150 MiB buffer of the "--kv-cache-memory" suggestions


# -------------------------------------------------------------------------------- checks

class _Checks:
    def __init__(self) -> None:
        self.out: list[Check] = []
        self.rules = ""  # the rules the checks used (a log that prints no release: either)

    def add(self, f: Found, quantity: str, printed: str, kvlib: str, formula: str,
            ok: bool | None, reason: str = "") -> None:
        status = "unexplained" if ok is None else ("ok" if ok else "mismatch")
        self.out.append(Check(f.line, quantity, printed, kvlib, formula, status, reason))

    def info(self, f: Found, quantity: str, printed: str, kvlib: str, formula: str) -> None:
        self.out.append(Check(f.line, quantity, printed, kvlib, formula, "info"))


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"


def _v1_capacity(c: _Checks, s: _Setup, avail: Found | None, exact: int | None,
                 tokens: Found | None, conc: Found | None, capacity: Found | None,
                 pairing: str) -> None:
    """Check one rank's (or, from 0.27, the engine's) tokens and concurrency lines."""
    targets = [f for f in (capacity, tokens, conc) if f is not None]
    why = s.why_not if s.layout is None else "no \"Available KV cache memory\" line to " \
        "start from" if avail is None and exact is None else ""
    if why and (s.layout is not None or s.rules == "v1-0.8") and \
            _from_tokens(c, s, tokens, conc, capacity):
        return
    if why:
        for f in targets:
            printed = (f"{f.values[0]} tokens" if f.kind == "tokens" else f"{f.values[1]}x"
                       if f.kind == "concurrency" else f"{f.values[1]} tokens, {f.values[3]}x")
            c.add(f, "KV cache size / concurrency", printed, "-", "", None, why)
        return
    if exact is not None:
        lo = hi = exact
        source = f"{exact:,} B (the rank's exact budget, \"Current kv cache memory in use\")"
    else:
        lo, hi = _bytes_range(avail.values[0])
        source = f"{avail.values[0]} GiB ± 0.005 (line {avail.line.number})"
    blocks = _budget_blocks(s, lo, hi)
    words = _layout_words(s)
    if capacity is not None:
        printed_tokens, max_len, printed_conc = (capacity.values[1], int(capacity.values[2]
                                                 .replace(",", "")), capacity.values[3])
        tok_f = conc_f = capacity
    else:
        printed_tokens = tokens.values[0] if tokens else None
        max_len = int(conc.values[0].replace(",", "")) if conc else None
        printed_conc = conc.values[1] if conc else None
        tok_f, conc_f = tokens, conc
    note = f"; {pairing}" if pairing else ""
    per_block = f"floor({source} / {s.layout.bytes_per_block:,} B)"
    fits = blocks
    if printed_tokens is not None:
        want = int(printed_tokens.replace(",", ""))
        fits = [b for b in blocks if _tokens_of(s, b, max_len) == want]
        s, fits, said = _either_tokens_rule(s, fits, want, max_len, blocks)
        if said:
            c.rules = s.rules
        note += said
        kv = [_tokens_of(s, b, max_len) for b in blocks]
        c.add(tok_f, "GPU KV cache size (tokens)", printed_tokens, _span(kv),
              f"blocks = {per_block} = {_span(blocks)}; {words}; tokens = "
              f"{_tokens_formula(s, max_len)}{note}", bool(fits))
    if printed_conc is not None:
        pool = fits or blocks
        values = [_concurrency_of(s, b, max_len) for b in pool]
        ok = any(_round2_matches(printed_conc, v) for v in values)
        shown = sorted({f"{float(v):.2f}" for v in values}, key=float)
        kvlib = shown[0] if len(shown) == 1 else f"{shown[0]} to {shown[-1]}"
        if s.rules == "v1-0.8":
            how = f"blocks x {s.layout.block_size} / {max_len:,}"
        else:
            parts = " + ".join(f"{g.blocks_per_request:,}" for g in s.layout.groups)
            how = (f"blocks / ({parts} blocks one request needs per group = "
                   f"{s.layout.blocks_per_request:,})")
        c.add(conc_f, f"maximum concurrency for {max_len:,} tokens", printed_conc + "x",
              kvlib + "x", f"{how}, blocks = {_span(pool)}", ok)


def _either_tokens_rule(s: _Setup, fits: list[int], want: int, max_len: int | None,
                        blocks: list[int]) -> tuple[_Setup, list[int], str]:
    """A log that prints no release and whose tokens no block count gives by 0.11-0.19's rule
    (blocks // groups x block) is tried by 0.20's (int(concurrency x max_model_len),
    :data:`~kvlib.serving.engines.vllm.log.rules.TOKENS_FROM_CONCURRENCY`): the setup whose
    rule some block count meets, those blocks, and the words saying which rule it was."""
    if fits or s.version_known or s.rules != "v1-0.11" or max_len is None:
        return s, fits, ""
    alt = replace(s, rules="v1-0.20")
    alt_fits = [b for b in blocks if _tokens_of(alt, b, max_len) == want]
    if not alt_fits:
        return s, fits, ""
    return alt, alt_fits, ("; the log prints no release and its tokens follow vLLM 0.20+'s "
                           "rule (0.11-0.19 divided the blocks among the groups)")


def _from_tokens(c: _Checks, s: _Setup, tokens: Found | None, conc: Found | None,
                 capacity: Found | None) -> bool:
    """Where no budget line precedes them (an excerpt), the printed tokens still fix the
    blocks, hence the concurrency: the blocks whose tokens (by the release's rule) are the
    printed ones, then their concurrency (0.11.0 kv_cache_utils.py:780-795, 1076-1092; 0.27.0
    :2210-2240). The tokens themselves are not checked (no budget to start from): True when
    the concurrency was."""
    if capacity is not None:
        printed_tokens, max_len, printed_conc, f = (capacity.values[1], int(
            capacity.values[2].replace(",", "")), capacity.values[3], capacity)
    elif tokens is not None and conc is not None:
        printed_tokens, max_len, printed_conc, f = (tokens.values[0], int(
            conc.values[0].replace(",", "")), conc.values[1], conc)
    else:
        return False
    want = int(printed_tokens.replace(",", ""))
    lay = s.layout
    if s.rules == "v1-0.8":  # one group: concurrency = tokens / max_model_len (0.8.5
        conc_ = Fraction(want, max_len)  # v1/core/kv_cache_utils.py), no model needed
        c.add(f, f"maximum concurrency for {max_len:,} tokens", printed_conc + "x",
              f"{float(conc_):.2f}x", f"the printed {printed_tokens} tokens / {max_len:,} "
              "(V1 before 0.9: one KV-cache group)", _round2_matches(printed_conc, conc_))
        return True
    if s.rules in ENGINE_WIDE:  # tokens = int(blocks / per request x max_len)
        lo = want * lay.blocks_per_request // max_len
        hi = -(-(want + 1) * lay.blocks_per_request // max_len)
        span = range(max(lo - 1, 0), hi + 2)
    else:  # tokens = blocks // groups x block (0.8: blocks x block)
        groups = 1 if s.rules == "v1-0.8" else len(lay.groups)
        base = want // lay.block_size * groups
        span = range(base, base + groups)
    pool = [b for b in span if _tokens_of(s, b, max_len) == want]
    if not pool and not s.version_known and s.rules == "v1-0.11":
        alt = replace(s, rules="v1-0.20")  # the 0.20+ rule, inverted as above
        lo = want * lay.blocks_per_request // max_len
        hi = -(-(want + 1) * lay.blocks_per_request // max_len)
        pool = [b for b in range(max(lo - 1, 0), hi + 2) if _tokens_of(alt, b, max_len) == want]
        s = alt if pool else s
        if pool:
            c.rules = s.rules
    if not pool:
        c.add(f, "GPU KV cache size (tokens)", printed_tokens, "no whole block count",
              f"tokens = {_tokens_formula(s, max_len)}", False)
        return True
    values = [_concurrency_of(s, b, max_len) for b in pool]
    shown = sorted({f"{float(v):.2f}" for v in values}, key=float)
    kvlib = shown[0] if len(shown) == 1 else f"{shown[0]} to {shown[-1]}"
    c.add(f, f"maximum concurrency for {max_len:,} tokens", printed_conc + "x", kvlib + "x",
          f"from the printed {printed_tokens} tokens (no \"Available KV cache memory\" line): "
          f"blocks = {_span(pool)} ({_layout_words(s)}; tokens = "
          f"{_tokens_formula(s, max_len)}), concurrency = blocks / "
          f"{lay.blocks_per_request:,} blocks one request needs",
          any(_round2_matches(printed_conc, v) for v in values))
    return True


def _explain_v1_blocks(log: VllmLog, c: _Checks, s: _Setup) -> set[int]:
    """V1's "# GPU blocks: N" of 0.7.x (PR 12569: kv_cache_utils.py:395-398) and the
    "Maximum concurrency" after it: N x block / max_model_len, from the printed count (the
    model only names the block). The concurrency lines it checks (ids), for :func:`_pair_v1`
    to skip."""
    used: set[int] = set()
    for f, nxt in zip(log.found, log.found[1:] + [None], strict=True):
        if f.kind != "v1_blocks":
            continue
        n = int(f.values[0])
        if nxt is None or nxt.kind != "concurrency":
            c.info(f, "# GPU blocks", f"{n:,}", f"{n * s.block_size:,} tokens",
                   f"{n:,} blocks x {s.block_size} tokens")
            continue
        used.add(id(nxt))
        L = int(nxt.values[0].replace(",", ""))
        conc = Fraction(n * s.block_size, L)
        c.add(nxt, f"maximum concurrency for {L:,} tokens", nxt.values[1] + "x",
              f"{float(conc):.2f}x", f"{n:,} blocks (line {f.line.number}) x {s.block_size} "
              f"tokens / {L:,} (V1 of 0.7.x: one KV-cache group)",
              _round2_matches(nxt.values[1], conc))
    return used


def _pair_v1(log: VllmLog, c: _Checks, s: _Setup) -> None:
    """Available-memory lines, then the engine's capacity lines, paired by rank."""
    found = log.found
    exact: dict[tuple[int, int | None], int] = {}  # (run, rank) -> exact budget in bytes
    run = 0
    for f in found:
        if f.kind == "engine":
            run += 1
        if f.kind == "free_010" and f.values[11] == "bytes":
            exact[(run, f.line.rank)] = int(_frac(f.values[10]))
    i, run = 0, 0
    while i < len(found):
        f = found[i]
        if f.kind == "engine":
            run += 1
        if f.kind not in ("available", "capacity", "tokens", "concurrency"):
            i += 1
            continue
        avail: list[Found] = []
        while i < len(found) and found[i].kind in ("available", "loading", "graphs",
                                                    "free_010", "free_033"):
            if found[i].kind == "available":
                avail.append(found[i])
            i += 1
        caps: list[tuple[Found | None, Found | None, Found | None]] = []
        while i < len(found) and found[i].kind in ("capacity", "tokens", "concurrency"):
            g = found[i]
            if g.kind == "capacity":
                caps.append((g, None, None))
            elif g.kind == "tokens":
                nxt = found[i + 1] if i + 1 < len(found) else None
                if nxt is not None and nxt.kind == "concurrency":
                    caps.append((None, g, nxt))
                    i += 1
                else:
                    caps.append((None, g, None))
            else:
                caps.append((None, None, g))
            i += 1
        for a in avail:
            _explain_available(c, a, s)
        if not caps:
            continue
        ranked = sorted(avail, key=lambda a: (a.line.rank is None, a.line.rank or 0))
        if s.rules in ENGINE_WIDE and len(caps) == 1 and len(avail) > 1:
            # one line for the engine: the smallest rank's blocks (all ranks are cut to it)
            low = min(avail, key=lambda a: _frac(a.values[0]))
            _v1_capacity(c, s, low, exact.get((run, low.line.rank)), caps[0][1], caps[0][2],
                         caps[0][0], _ranks_words(avail))
            continue
        if len(caps) == len(ranked):
            ranks_known = all(a.line.rank is not None for a in ranked)
            how = ("paired with the rank printed in the same position" if ranks_known and
                   len(caps) > 1 else "" if len(caps) == 1 else
                   "paired in the order printed (the lines carry no rank)")
            if len(caps) == 1 and s.tp > 1:
                how = (f"the log holds 1 of the {s.tp} ranks' lines; they may come from "
                       "different ranks")
            for a, (cap, tok, conc) in zip(ranked, caps, strict=True):
                key = (run, a.line.rank)
                _v1_capacity(c, s, a, exact.get(key) if _exact_agrees(exact.get(key), a)
                             else None, tok, conc, cap, how)
            continue
        # Counts differ (a pasted excerpt lost a line): match each capacity line to a budget
        # line that explains it; one that none explains is a mismatch against the lowest.
        how = f"{len(caps)} capacity line(s) for {len(avail)} budget line(s)"
        if len({a.line.rank for a in avail} - {None}) > 1:
            how += " " + _ranks_words(avail, minimum=False)
        for cap, tok, conc in caps:
            matched = None
            for a in sorted(avail, key=lambda a: _frac(a.values[0])):
                trial = _Checks()
                _v1_capacity(trial, s, a, None, tok, conc, cap, "")
                if trial.out and all(x.status != "mismatch" for x in trial.out):
                    matched = a
                    break
            low = min(avail, key=lambda a: _frac(a.values[0])) if avail else None
            _v1_capacity(c, s, matched or low, None, tok, conc, cap,
                         (f"{how}: matched to the budget line that explains it (line "
                          f"{matched.line.number})" if matched else
                          f"{how}: none explains it; compared with the lowest budget")
                         if avail else "")


def _ranks_words(avail: list[Found], minimum: bool = True) -> str:
    """Budget lines of several ranks pasted together, said as such: vLLM takes the smallest
    rank's block count for every rank (get_kv_cache_configs: 0.27.0 kv_cache_utils.py:2210-2221,
    0.34.0 v1/core/kv_cache_planning.py:1671-1683), so different budgets are no disagreement."""
    ranks = sorted({a.line.rank for a in avail} - {None})
    values = {a.values[0] for a in avail}
    who = (f"lines from {len(ranks)} TP ranks (ranks {', '.join(map(str, ranks))})" if ranks
           else f"{len(avail)} budget lines without rank prefixes")
    if not minimum:
        return f"({who}, each paired with a line it explains)"
    spread = f", budgets {min(values, key=_frac)} to {max(values, key=_frac)} GiB" \
        if len(values) > 1 else ""
    return f"{who}{spread}: vLLM uses the minimum across ranks"


def _explain_extensible(log: VllmLog, c: _Checks, s: _Setup) -> None:
    """vLLM 0.34's "Memory after warmup" and "Extended KV cache to N blocks" lines
    (v1/worker/extensible_kv_cache.py:693-705, :536-540): their arithmetic, and the blocks
    against kvlib's bytes per block."""
    bpb = s.layout.bytes_per_block if s.layout is not None else None
    warm: dict[int | None, Found] = {}
    for f in log.found:
        if f.kind == "warmup":
            free, committed, kept, peak, growth, n, size, requested, limit = f.values
            warm[f.line.rank] = f
            most = max(_frac(peak), _frac(growth))
            c.add(f, "kept for transient activations", kept + " GiB", f"{_g(most)} GiB",
                  f"max(allocated at peak {peak}, torch reservation growth {growth}) "
                  "(each printed to 0.01 GiB)", abs(_frac(kept) - most) <= 2 * HALF)
            if bpb is None:
                c.add(f, "KV cache blocks after warmup", f"{n} ({size} GiB)", "-", "", None,
                      s.why_not)
                continue
            b = int(n) * bpb
            c.add(f, "KV cache blocks after warmup (GiB)", size + " GiB",
                  f"{_g(Fraction(b, GiB))} GiB", f"{int(n):,} blocks x {bpb:,} B per block "
                  f"({_layout_words(s)}) = {b:,} B", _round2_matches(size, Fraction(b, GiB)))
            _, hi = _bytes_range(requested)
            c.add(f, "blocks within the requested memory", n, f"at most {hi // bpb:,}",
                  f"floor({requested} GiB + 0.005 / {bpb:,} B per block)", int(n) <= hi // bpb)
        elif f.kind == "extended":
            n, size = int(f.values[0]), f.values[1]
            if bpb is None:
                c.add(f, "extended KV cache", f"{n:,} blocks ({size} GiB)", "-", "", None,
                      s.why_not)
                continue
            least = Fraction(n * bpb, GiB)
            c.add(f, "extended KV cache (GiB, mapped)", size + " GiB", f"at least {_g(least)} GiB",
                  f"{n:,} blocks x {bpb:,} B per block, each tensor then rounded up to the "
                  "2 MiB granule (the tensor count is not printed)",
                  _frac(size) + HALF >= least)
            w = warm.get(f.line.rank)
            if w is not None:
                c.add(f, "extended blocks vs the blocks that fit after warmup", f"{n:,}",
                      f"at most {int(w.values[5]):,}", f"line {w.line.number}; the engine "
                      "commits the smallest rank's count", n <= int(w.values[5]))


def _exact_agrees(n: int | None, avail: Found) -> bool:
    return n is not None and _round2_matches(avail.values[0], Fraction(n, GiB))


def _explain_available(c: _Checks, f: Found, s: _Setup) -> None:
    x = _frac(f.values[0])
    if x < 0:
        c.add(f, "Available KV cache memory", f.values[0] + " GiB", "0 blocks",
              "negative: weights + activation peak + non-torch memory exceed "
              "total x gpu_memory_utilization, so no block fits and vLLM refuses to start", True)
    elif "kv_cache_memory_bytes" in f.line.text:
        c.info(f, "KV cache memory (kv_cache_memory_bytes)", f.values[0] + " GiB",
               "taken as given", "the budget the user fixed with --kv-cache-memory (vLLM skips "
               "its profiling run): the blocks, tokens and concurrency below start from it")
    else:
        c.info(f, "Available KV cache memory", f.values[0] + " GiB", "taken as given",
               "measured by vLLM's profiling run: the blocks, tokens and concurrency below "
               "start from it")


def _explain_free(c: _Checks, f: Found, avail: dict, kind: str) -> None:
    v = f.values
    free, total, util, requested = v[0], v[1], v[2], v[3]
    lo, hi = _gib_range(total)
    u = _frac(util)
    c.add(f, "requested memory", requested + " GiB", f"{_g(lo * u)} to {_g(hi * u)} GiB",
          f"total {total} GiB x gpu_memory_utilization {util}", _near(requested, lo * u,
                                                                        hi * u))
    if kind == "free_010":
        weights, peak, non_torch, graphs, to_req, to_gpu, current, unit = v[4:12]
        terms = [weights, peak, non_torch]
        words = (f"requested {requested} - weights {weights} - activation peak {peak} - "
                 f"non-torch {non_torch} (CUDA graphs are not subtracted in this release)")
    else:
        consumed, peak, graphs, to_req, to_gpu, current = v[4:10]
        unit = "GiB"
        terms = [consumed, peak]
        words = (f"requested {requested} - consumed (weights + non-torch) {consumed} - "
                 f"activation peak (with the CUDA-graph estimate) {peak}")
    r = _frac(requested)
    est = r - sum(_frac(t) for t in terms)
    spread = HALF * (1 + len(terms))
    cur = Fraction(_frac(current), GiB) if unit == "bytes" else _frac(current)
    cur_half = Fraction(0) if unit == "bytes" else HALF
    ok = abs(cur - est) <= spread + cur_half
    shown = f"{int(_frac(current)):,} B = {_g(cur)} GiB" if unit == "bytes" else current + " GiB"
    c.add(f, "KV cache memory in use", shown, f"{_g(est - spread)} to {_g(est + spread)} GiB",
          words, ok)
    same = avail.get(f.line.rank)
    if same is not None and unit == "bytes":
        c.add(f, "same rank's \"Available KV cache memory\"", same.values[0] + " GiB",
              f"{_g(cur)} GiB", f"{int(_frac(current)):,} B / 2^30 to 2 decimals (line "
              f"{same.line.number})", _round2_matches(same.values[0], cur))
    left = Fraction(int(to_req) + REDUNDANCY, GiB)
    cg = (cur - left) if unit == "bytes" else None
    if cg is not None:
        c.add(f, "CUDA-graph memory", graphs + " GiB", f"{_g(cg)} GiB",
              f"current {int(_frac(current)):,} B - suggested --kv-cache-memory "
              f"{int(to_req):,} B - 150 MiB buffer", _round2_matches(graphs, cg))
    else:
        c.add(f, "CUDA-graph memory", graphs + " GiB", f"{_g(cur - left)} GiB ± 0.005",
              f"current {current} GiB - suggested --kv-cache-memory {int(to_req):,} B - 150 MiB "
              "buffer", abs(cur - left - _frac(graphs)) <= 2 * HALF)
    gap = Fraction(int(to_gpu) - int(to_req), GiB)
    c.add(f, "the two --kv-cache-memory suggestions' gap", f"{int(to_gpu) - int(to_req):,} B",
          f"{_g(_frac(free) - r)} GiB ± 0.01", f"free {free} GiB - requested {requested} GiB "
          f"(= {_g(gap)} GiB)", abs(gap - (_frac(free) - r)) <= 2 * HALF)


def _check_requested(c: _Checks, f: Found, total: str, util: str, printed: str) -> None:
    """V0's "memory vLLM may use" = total_gpu_memory x gpu_memory_utilization, each printed."""
    lo, hi = _gib_range(total)
    u_lo, u_hi = _frac(util) - HALF, _frac(util) + HALF
    c.add(f, "memory vLLM may use", printed + " GiB", f"{_g(lo * u_lo)} to {_g(hi * u_hi)} GiB",
          f"total_gpu_memory {total} GiB x gpu_memory_utilization {util}, both printed to 2 "
          "decimals (the utilization too: 0.945 prints \"0.94\")",
          _near(printed, lo * u_lo, hi * u_hi))


def _check_kv_left(c: _Checks, f: Found, what: str, printed: str, requested: Fraction,
                   weights: Fraction, non_torch: Fraction, peak: Fraction) -> None:
    """V0's KV memory = what vLLM may use - weights - non-torch - activation peak, each term
    printed to 0.01 GiB (so the sum may be off by 0.005 per term)."""
    est = requested - weights - non_torch - peak
    c.add(f, what, printed + " GiB", f"{_g(est)} GiB ± 0.02",
          f"{_g(requested)} - weights {_g(weights)} - non-torch {_g(non_torch)} - activation "
          f"peak {_g(peak)} (each rounded: ± 0.005 apiece)",
          abs(est - _frac(printed)) <= 5 * HALF)


def _explain_v0(log: VllmLog, c: _Checks, s: _Setup) -> None:
    kv: Found | None = None  # the last budget line giving the KV memory, and its value
    kv_value: str | None = None
    blocks: Found | None = None
    table: dict[str, Found] = {}
    for f in log.found:
        v = f.values
        if f.kind == "v0_requested":
            _check_requested(c, f, v[0], v[1], v[2])
            table["requested"] = f
        elif f.kind == "v0_budget":
            req = table.get("requested")
            if req is not None:
                _check_kv_left(c, f, "KV cache memory", v[3],
                               *(_frac(x) for x in (req.values[2], v[0], v[1], v[2])))
            kv, kv_value = f, v[3]
        elif f.kind == "v0_profile":
            total, peak, non_torch, kv_size, util = v[0], v[2], v[4], v[5], v[6]
            est = _frac(total) * _frac(util) - _frac(peak) - _frac(non_torch)
            spread = HALF * (_frac(util) + 2)
            c.add(f, "kv_cache_size", kv_size + " GiB", f"{_g(est)} GiB ± {float(spread):.3f}",
                  f"total_gpu_memory {total} x gpu_memory_utilization {util} - "
                  f"peak_torch_memory {peak} - non_torch_memory {non_torch}",
                  abs(est - _frac(kv_size)) <= spread + HALF)
            kv, kv_value = f, kv_size
        elif f.kind == "v0_table_start":
            table = {}
        elif f.kind == "v0_row":
            table[v[0]] = f
            if v[0] == "the current vLLM instance can use" and "total_gpu_memory" in table and \
                    "gpu_memory_utilization" in table:
                _check_requested(c, f, table["total_gpu_memory"].values[1],
                                 table["gpu_memory_utilization"].values[1], v[1])
            if v[0] == "available_kv_cache_memory":
                keys = ("the current vLLM instance can use", "model weights take",
                        "non_torch_memory", "PyTorch activation peak memory")
                if all(k in table for k in keys):
                    _check_kv_left(c, f, "available_kv_cache_memory", v[1],
                                   *(_frac(table[k].values[1]) for k in keys))
                kv, kv_value = f, v[1]
        elif f.kind == "blocks":
            blocks = f
            if s.v0_block_bytes is None:
                c.add(f, f"# {v[0]} blocks", v[1], "-", "", None, s.why_not)
            elif kv is None:
                c.add(f, f"# {v[0]} blocks", v[1], "-", "", None,
                      "no KV-memory line before it to start from")
            else:
                lo, hi = _bytes_range(kv_value)
                b = s.v0_block_bytes
                span = list(range(max(lo, 0) // b, max(hi, 0) // b + 1))
                c.add(f, f"# {v[0]} blocks", v[1], _span(span),
                      f"floor({kv_value} GiB ± 0.005 (line {kv.line.number}) / {b:,} B per "
                      f"block = every attention layer x {s.block_size} tokens x (K + V), TP="
                      f"{s.tp}, kv {s.kv_dtype})", int(v[1]) in span)
        elif f.kind == "concurrency" and blocks is not None:
            n, L = int(blocks.values[1]), int(v[0].replace(",", ""))
            conc = Fraction(n * s.block_size, L)
            c.add(f, f"maximum concurrency for {L:,} tokens", v[1] + "x", f"{float(conc):.2f}x",
                  f"{n:,} blocks x {s.block_size} tokens / {L:,} (the printed block count)",
                  _round2_matches(v[1], conc))
        elif f.kind == "max_len_error" and blocks is not None:
            n = int(blocks.values[1])
            c.add(f, "tokens the KV cache can store", v[1], f"{n * s.block_size:,}",
                  f"{n:,} blocks (line {blocks.line.number}) x {s.block_size} tokens",
                  int(v[1]) == n * s.block_size)
        elif f.kind == "max_len_error":
            _v0_max_len_alone(c, f, s, kv, kv_value)
        elif f.kind == "available":
            _explain_available(c, f, s)


def _v0_max_len_alone(c: _Checks, f: Found, s: _Setup, kv: Found | None,
                      kv_value: str | None) -> None:
    """V0's failure "max seq len (N) is larger than the maximum number of tokens that can be
    stored in KV cache (M)" with no "# GPU blocks" line before it: M = blocks x block (the
    smallest rank's blocks, 0.7.2 worker/worker.py raise_if_cache_size_invalid). Checked
    against a KV-memory line where the log has one, else shown with the memory it means."""
    n_max, tokens = int(f.values[0]), int(f.values[1])
    bs = s.block_size
    if tokens % bs:
        c.add(f, "tokens the KV cache can store", f"{tokens:,}", f"a multiple of {bs}",
              f"blocks x block size {bs}", False)
        return
    blocks = tokens // bs
    if s.v0_block_bytes is None:
        c.info(f, "tokens the KV cache can store", f"{tokens:,}", f"{blocks:,} blocks x {bs}",
               f"{tokens:,} = {blocks:,} blocks of {bs} tokens, fewer than max_model_len "
               f"{n_max:,} (no model or dtype to turn the blocks into bytes: {s.why_not})")
        return
    b = s.v0_block_bytes
    need = blocks * b
    if kv is None:
        c.info(f, "tokens the KV cache can store", f"{tokens:,}",
               f"{blocks:,} blocks = {_g(Fraction(need, GiB))} GiB", f"{blocks:,} blocks x "
               f"{b:,} B per block (every attention layer x {bs} tokens x (K + V), TP={s.tp}, "
               f"kv {s.kv_dtype}) = {need:,} B of KV cache on the smallest rank; shown, not "
               "checked: the log prints no KV-memory line to start from")
        return
    lo, hi = _bytes_range(kv_value)
    span = list(range(max(lo, 0) // b, max(hi, 0) // b + 1))
    c.add(f, "tokens the KV cache can store", f"{tokens:,}", _span([x * bs for x in span]),
          f"floor({kv_value} GiB ± 0.005 (line {kv.line.number}) / {b:,} B per block) x {bs} "
          "tokens", blocks in span)


def _explain_tpu(log: VllmLog, c: _Checks, s: _Setup, model: ModelSpec | None) -> None:
    """tpu-inference's "Init kv-cache | shape=..." line (:mod:`.tpu`): the page, the shape
    against the model, the HBM the cache took on each device."""
    lines = [f for f in log.found if f.kind == "tpu_kv"]
    if not lines:
        return
    tok = next((f for f in log.found if f.kind == "tokens"), None)
    tc = tpu_cache(log.found, int(tok.values[0].replace(",", "")) if tok else None)
    f = lines[0]
    if tc is None:
        c.add(f, "TPU KV cache shape", "x".join(f.values[1:5]), "-", "", None,
              "no \"GPU KV cache size\" line whose tokens tell the shape's blocks and page")
        return
    shape = f"{tc.layers} x ({', '.join(f.values[1:5])})"
    c.add(tok, "GPU KV cache size (blocks x page)", tok.values[0], f"{tc.blocks * tc.page:,}",
          f"line {f.line.number}'s {tc.blocks:,} blocks x {tc.page}-token pages (the TPU's "
          "page, not the GPU's 16)", tc.blocks * tc.page == int(tok.values[0].replace(",", "")))
    if model is not None:
        want = shape_of_model(model, s.tp)
        if want is None:
            c.add(f, "TPU KV cache shape", shape, "-", "", None, "the model has more than one "
                  "kind of attention layer: one shape per group is not what this line prints")
        else:
            layers, heads, d = want
            h = heads if tc.separate_kv else 2 * heads
            c.add(f, "TPU KV cache shape (layers, heads, head_dim)",
                  f"{tc.layers}, {tc.heads}, {tc.head_dim}", f"{layers}, {h}, {d}",
                  f"{model.name}: {layers} attention layers, " + (
                      f"{heads} KV heads (K and V arrays apiece)" if tc.separate_kv else
                      f"2 x {heads} KV heads (K and V side by side)") + f", head_dim {d}",
                  (tc.layers, tc.heads, tc.head_dim) == (layers, h, d))
    if tc.before and tc.after and (model is not None or s.kv_dtype):
        b = _bytes(s.kv_dtype) if s.kv_dtype else None
        if b is None:
            return
        per = tc.bytes_per_device(int(b))
        delta = tc.after[0] - tc.before[0]
        tp = tc.tp or 1
        c.add(f, "HBM the KV cache took (per device)", f"{_g(delta)} GiB",
              f"{_g(Fraction(per, GiB))} GiB", f"{tc.layers} x {tc.blocks:,} x {tc.page} x "
              f"{tc.heads} x {tc.head_dim} x {b} B" + (" x 2 (K, V)" if tc.separate_kv else "")
              + f" / TP {tp} (the mesh's 'model' axis) = {int(per):,} B; HBM in use after "
              f"{_g(tc.after[0])} - before {_g(tc.before[0])} (each printed to 0.01)",
              abs(delta - Fraction(per, GiB)) <= 2 * HALF)


def _explain_mamba(log: VllmLog, c: _Checks, s: _Setup, model: ModelSpec | None) -> None:
    blocks = [f for f in log.found if f.kind == "mamba_block"]
    pads = [f for f in log.found if f.kind == "mamba_pad"]
    if not blocks and not pads:
        return
    if s.layout is None or model is None or not any(g.kind in STATEFUL for g in model.groups):
        why = s.why_not or "kvlib reads no state layers in this model"
        for f in blocks + pads:
            c.add(f, "mamba alignment", f.line.text.strip(), "-", "", None, why)
        return
    state_page, attn_page = state_page_bytes(model, s.tp), s.layout.page_bytes
    pct = Fraction(100 * (attn_page - state_page), state_page)
    for f in blocks:
        c.add(f, "attention block size (hybrid)", f.values[0] + " tokens",
              f"{s.layout.block_size:,} tokens",
              f"the smallest multiple of 16 tokens whose attention page holds one state page "
              f"({state_page:,} B per layer, TP={s.tp}, kv {s.kv_dtype})",
              int(f.values[0]) == s.layout.block_size)
    for f in pads:
        c.add(f, "mamba page padding", f.values[0] + "%", f"{float(pct):.2f}%",
              f"100 x (attention page {attn_page:,} B - state page {state_page:,} B) / "
              f"state page", _round2_matches(f.values[0], pct))
    if blocks and not pads:
        c.add(blocks[-1], "mamba page padding", "no \"Padding mamba page size\" line",
              f"{float(pct):.2f}%", f"attention page {attn_page:,} B vs state page "
              f"{state_page:,} B: vLLM prints the padding line only when they differ",
              pct == 0)


def _explain_padding(log: VllmLog, c: _Checks, s: _Setup) -> None:
    lines = [f for f in log.found if f.kind == "padding_layers"]
    if not lines:
        return
    if s.layout is None:
        for f in lines:
            c.add(f, "padding layers", f.values[0], "-", "", None, s.why_not)
        return
    expected = _paddings(s.layout)
    unseen = _paddings(s.mtp_layout) if s.mtp_layout is not None else []
    for i, f in enumerate(lines):
        ok = i < len(expected) and int(f.values[0]) == expected[i][0] and \
            _round2_matches(f.values[1], expected[i][1])
        if not ok and i < len(unseen) and int(f.values[0]) == unseen[i][0] and \
                _round2_matches(f.values[1], unseen[i][1]):
            pad, pct = unseen[i]
            c.add(f, "padding layers", f"{f.values[0]} ({f.values[1]}%)",
                  f"{pad} ({float(pct):.2f}%) with an MTP drafter", "", None,
                  f"the model alone leaves {expected[i][0] if i < len(expected) else 0}; an MTP "
                  f"drafter's full-attention layer (groups of {s.mtp_layout.group_size}) gives "
                  "the printed count, but the log shows none of its settings (pass the log "
                  "with its engine line or non-default args)")
        elif i < len(expected):
            pad, pct = expected[i]
            c.add(f, "padding layers", f"{f.values[0]} ({f.values[1]}%)",
                  f"{pad} ({float(pct):.2f}%)", f"groups of {s.layout.group_size} layers: "
                  f"slots - layers of that kind", ok)
        else:
            c.add(f, "padding layers", f.values[0], "0", f"groups of {s.layout.group_size} "
                  "layers leave no empty slot", False)


def _paddings(lay) -> list[tuple[int, Fraction]]:
    """(padding slots, % of the kind's layers) of each layer kind that leaves empty slots."""
    by_kind: dict[str, list[int]] = {}
    for g in lay.groups:
        n = by_kind.setdefault(g.kind, [0, 0])
        n[0] += g.layers
        n[1] += g.slots
    return [(slots - n, Fraction(100 * (slots - n), n)) for n, slots in by_kind.values()
            if slots > n]


def _explain_loading(log: VllmLog, c: _Checks, s: _Setup, weights: int | None) -> None:
    for f in log.found:
        if f.kind != "loading":
            continue
        unit = "GiB" if f.values[1] == "GiB" else "GB (printed; vLLM divides by 2^30)"
        if weights is None:
            c.info(f, "weights loaded (measured)", f"{f.values[0]} {unit}", "-",
                   "measured by vLLM; shown, never checked")
        else:
            c.info(f, "weights loaded (measured)", f"{f.values[0]} {unit}",
                   f"{_g(Fraction(weights, GiB * s.tp))} GiB",
                   f"kvlib's checkpoint bytes {weights:,} B / TP={s.tp} (info only: experts, "
                   "embeddings and replicated layers split unevenly)")


def _explain_override(log: VllmLog, c: _Checks) -> None:
    """"Overriding num_gpu_blocks=N with num_gpu_blocks_override=M" (``may_override_num_blocks``,
    vLLM 0.18.0 v1/core/kv_cache_utils.py:820-831): shown; the capacity lines after it are
    checked from their own budget line, which the override does not print."""
    for f in log.found:
        if f.kind == "override":
            computed, forced = int(f.values[0]), int(f.values[1])
            c.info(f, "num_gpu_blocks_override", f"{forced:,} blocks (computed {computed:,})",
                   f"{forced:,} blocks", "the blocks vLLM computed are replaced by the "
                   "override (may_override_num_blocks); shown, not checked: which KV cache it "
                   "sized (a profiling run's or the engine's) the line does not say")


def _explain_graphs(log: VllmLog, c: _Checks) -> None:
    frees = [f for f in log.found if f.kind in ("free_010", "free_033")]
    for f in log.found:
        if f.kind != "graphs" or not frees:
            continue
        same = [g for g in frees if g.line.rank == f.line.rank] or frees
        free = min(same, key=lambda g: abs(g.line.number - f.line.number))
        graph = free.values[7 if free.kind == "free_010" else 6]
        c.add(f, "CUDA graphs captured", f.values[0] + " GiB", graph + " GiB",
              f"the CUDA-graph memory the same worker reports (line {free.line.number})",
              abs(_frac(f.values[0]) - _frac(graph)) <= 2 * HALF)


#: the settings a cut-off ``non-default args`` dict may have held that change the layout
_CUT_SETTINGS = ("tensor_parallel_size", "kv_cache_dtype", "block_size", "speculative_config",
                 "max_num_batched_tokens", "enable_prefix_caching")


def _unknown_settings(checks: list[Check], line: int, notes: list[str]) -> list[Check]:
    """Where the log's ``non-default args`` dict is cut off (line ``line``), the settings after
    the cut (TP, KV dtype, block, speculative decoding) are unknown: a layout figure that
    disagrees is said not explained for that reason, never a disagreement; agreeing ones stand
    (the settings used are printed with them)."""
    notes.append(f"line {line}'s non-default args are cut off: the settings after the cut "
                 f"({', '.join(_CUT_SETTINGS)}) are unknown unless a flag gives them")
    return [replace(x, status="unexplained", reason="the log's settings are cut off (line "
                    f"{line}): kvlib's figure used defaults or flags for what it does not print")
            if x.status == "mismatch" else x for x in checks]


def explain(log: VllmLog, model: ModelSpec | None, *, tp: int | None = None,
            kv_dtype: str | None = None, gpu: str | None = None,
            weights_bytes: int | None = None, block_size: int | None = None) -> Explanation:
    """Every recognised number of ``log`` worked out again (see the module docstring).

    model: the model the log serves (None: only the memory arithmetic is checked).
    tp, kv_dtype, gpu, block_size: what the log does not say (its engine line wins over
    nothing, a given value wins over the log; the block otherwise from the log, else the
    backend's: CPU 128, TPU 256). weights_bytes: kvlib's checkpoint size, shown beside
    "Model loading took" (information, never a failure).

    A hybrid model whose log does not say how its release counts a state group's blocks a
    request (:func:`~kvlib.serving.engines.vllm.log.rules.state_modes`) is checked under each
    way it allows: the one under which every figure agrees is taken and said; where none or
    several do, the figures the ways disagree on are said not explained.
    """
    runs = [(mode, s, notes, _run(log, model, s, notes, weights_bytes, gpu))
            for mode, s, notes in setups(log, model, tp=tp, kv_dtype=kv_dtype, gpu=gpu,
                                         block_size=block_size)]
    mode, s, notes, (checks, rules) = _choose(runs)
    settings = {"tensor_parallel_size": s.tp, "kv_dtype": s.kv_dtype,
                "block_size": s.block_size, "version": log.version, "rules": rules}
    if mode is not None:
        settings["state_blocks"] = mode
    if s.layout is not None:
        settings.update(bytes_per_block=s.layout.bytes_per_block,
                        kv_cache_groups=len(s.layout.groups),
                        padding_layers=s.layout.padding_layers,
                        blocks_per_request=s.layout.blocks_per_request)
    if s.v0_block_bytes is not None:
        settings["bytes_per_block"] = s.v0_block_bytes
    return Explanation(tuple(checks), rules, model.name if model else None, settings,
                       tuple(notes))


def _fits(checks: list[Check]) -> bool:
    return any(x.status == "ok" for x in checks) and not any(x.status == "mismatch"
                                                              for x in checks)


def _choose(runs: list) -> tuple:
    """The run to report among the state modes tried (one run: that one). Ways that give the
    same figures count as one. Exactly one way whose figures all agree: that one, said. None
    or several (or a way kvlib does not trace beside the one): the most likely (the first),
    with every figure the ways do not give alike said not explained."""
    if len(runs) == 1 or all(r[1].layout is None for r in runs):
        return runs[0]  # one way, or no way with a layout (its notes say why)
    from kvlib.serving.engines.vllm.log.rules import _MODE_WORDS

    def key(r):
        return tuple((x.line.number, x.quantity, x.kvlib, x.status) for x in r[3][0])

    names = [m for m, *_ in runs]
    tried = "; ".join(_MODE_WORDS[m] for m in names)
    fitting = [r for r in runs if r[1].layout is not None and _fits(r[3][0])]
    distinct = list({key(r): r for r in reversed(fitting)}.values())[::-1]
    untraced = [r for r in runs if r[1].layout is None]
    if len(distinct) == 1 and not untraced:
        mode, s, notes, out = distinct[0]
        same = [r[0] for r in fitting]
        notes.append(f"state groups: the log does not say how its release counts them (its "
                     f"release or prefix caching); tried {len(runs)} ways ({tried}): only "
                     f"{' and '.join(map(repr, same))} "
                     f"{'explains' if len(same) == 1 else 'explain (alike here)'} the figures")
        return mode, s, notes, out
    chosen = distinct[0] if distinct else runs[0]
    mode, s, notes, (checks, rules) = chosen
    others = [r[3][0] for r in (distinct[1:] + untraced if distinct else runs[1:])]
    if len(distinct) > 1:
        why = ("the log does not say how its release counts a state group's blocks a request; "
               f"{' and '.join(repr(r[0]) for r in distinct)} all give the printed figures")
    elif distinct:
        why = ("the log does not say how its release counts a state group's blocks a request; "
               f"{mode!r} gives the printed figures, but "
               + "; ".join(f"{r[0]!r} ({r[1].why_not})" for r in untraced) + " may too")
    else:
        why = ("the log does not say how its release counts a state group's blocks a request, "
               "and no way tried gives every figure")
    marked = []
    for x in checks:
        alike = all(any(y.line.number == x.line.number and y.quantity == x.quantity and
                        y.kvlib == x.kvlib and y.status == x.status for y in other)
                    for other in others)
        everywhere = all(any(y.line.number == x.line.number and y.quantity == x.quantity and
                             y.status == "mismatch" for y in other) for other in others)
        if (x.status == "ok" and not alike) or (x.status == "mismatch" and not everywhere):
            x = replace(x, status="unexplained", reason=why)
        marked.append(x)
    notes.append(f"state groups: {why} (tried {tried})")
    return mode, s, notes, (marked, rules)


def _run(log: VllmLog, model: ModelSpec | None, s: _Setup, notes: list[str],
         weights_bytes: int | None, gpu: str | None) -> tuple[list[Check], str]:
    """The checks under one setup, and the rules they used (a log that prints no release and
    whose tokens follow 0.20's rule is said so)."""
    if s.layout is None and s.v0_block_bytes is None and s.why_not:
        notes.append(f"not explained without a layout: {s.why_not}")
    for line in (s.layout.notes if s.layout else ()):
        notes.append(line)
    c = _Checks()
    c.rules = s.rules
    if s.rules == "v0":
        _explain_v0(log, c, s)
    else:
        used = _explain_v1_blocks(log, c, s)
        _pair_v1(replace(log, found=[f for f in log.found if id(f) not in used]), c, s)
    avail_by_rank: dict[int | None, Found] = {}
    for f in log.found:
        if f.kind == "available":
            avail_by_rank.setdefault(f.line.rank, f)
        elif f.kind in ("free_010", "free_033"):
            _explain_free(c, f, avail_by_rank, f.kind)
    _explain_tpu(log, c, s, model)
    _explain_mamba(log, c, s, model)
    _explain_padding(log, c, s)
    _explain_loading(log, c, s, weights_bytes)
    _explain_override(log, c)
    _explain_graphs(log, c)
    explain_failures(log, c, s, gpu)
    _explain_extensible(log, c, s)
    failed = [f for f in log.found if f.kind == "failed"]
    negative = [f for f in log.found if f.kind == "available" and _frac(f.values[0]) < 0]
    short = [f for f in log.found if f.kind in ("kv_failure", "no_kv_memory")]
    for f in failed:
        if negative:
            why = f"the KV budget was negative (line {negative[0].line.number})"
        elif short:
            why = f"the KV cache cannot hold one request (line {short[0].line.number})"
        else:
            why = ""
        c.add(f, "engine start", "failed", "expected" if why else "-", why,
              True if why else None, "" if why else "no negative budget before it: another cause")
    checks = sorted(c.out, key=lambda x: x.line.number)
    if log.args_cut is not None:
        checks = _unknown_settings(checks, log.args_cut, notes)
    if s.tp_inferred:
        checks = [replace(x, status="unexplained", reason=f"TP={s.tp} was inferred from the "
                          "ranks the log prints, not read (pass --tp)")
                  if x.status == "mismatch" else x for x in checks]
    return checks, c.rules
