"""What an SGLang start-up log says besides its KV lines, as people paste it (issue 43): the rank
label of each line, the launch command pasted above the log, the KV dtype and the sliding-window
pool sizes it prints, and which pool an unlabelled KV line is.

SGLang prefixes each scheduler's lines with its ranks, "[2026-02-27 17:10:28 TP1]" or "[... DP0
TP0 EP0]" (SGLang 0.5.23 managers/scheduler.py:6283-6292, " TPn" only where tp_size > 1; the
releases before 0.5, and bench_one_batch, label TP0 at TP 1 too, as the docs' logs of November
2024 and January 2025 show); a log holding TP0 and TP1 comes from two TP ranks or more. Each
model runner ends its pools with "Memory pool end" (mem_cache/kv_cache_configurator.py:499 in
0.5.23); a KV line a rank prints after its own "Memory pool end" is a second runner's: the draft
model of speculative decoding (managers/tp_worker.py builds the target's runner, then the draft
worker its own).
"""

from __future__ import annotations

import re

__all__ = ["normalise", "rank_of", "tp_from_ranks", "command_settings", "kv_dtype_line",
           "swa_tokens", "assign_pools", "tokens_of", "dp_attention_from_labels",
           "hybrid_evidence", "NO_HYBRID", "KV",
           "SWA_POOL", "LABEL", "POOL_END", "MAX_TOTAL", "LOAD_BEGIN", "LOAD_END",
           "REDUCED_FRACTION", "SGLANG_ONLY"]

#: the KV line; "#tokens" is absent from the releases of late 2024 to early 2025 ("KV Cache is
#: allocated. K size: X GB, V size: Y GB.", the docs' logs of January 2025): their count is the
#: rank's max_total_num_tokens line (:data:`MAX_TOTAL`)
KV = re.compile(r"KV Cache is allocated\.\s*(?:dtype:\s*(?P<dtype>[\w.]+),\s*)?(?:#tokens:\s*"
                r"(?P<n>\d+),\s*)?(?:K size:\s*(?P<k>[\d.]+) GB,\s*V size:\s*(?P<v>[\d.]+) GB"
                r"|KV size:\s*(?P<kv>[\d.]+) GB)")
#: the scheduler's "max_total_num_tokens=N, ..." (managers/scheduler.py:1269 in 0.5.23; printed
#: since the 0.1 releases, the one pool figure of the 0.3 logs, which have no KV line)
MAX_TOTAL = re.compile(r"\bmax_total_num_tokens=(?P<n>\d+)")
#: the free memory before and after the weights load ("Load weight begin. avail mem=A GB",
#: "Load weight end. type=..., avail mem=B GB"; model_runner.py, every release since 0.3) and
#: a multimodal model's lowered fraction (0.4.5-0.4.x server_args.py)
LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=(?P<gb>[\d.]+) GB")
LOAD_END = re.compile(r"Load weight end\.[^\[]*?\bavail mem=(?P<gb>[\d.]+) GB")
REDUCED_FRACTION = re.compile(r"Automatically reduce --mem-fraction-static to (?P<f>[\d.]+)")
SWA_POOL = re.compile(r"SWAKVPool (?:mem usage|VA upper bound): (?P<gb>[\d.]+) GB, swa size: "
                      r"(?P<swa>\d+), full size: (?P<full>\d+)")
LABEL = re.compile(r"\b(?P<label>Full|SWA) KV Cache (?:is allocated|VA upper bound)")
POOL_END = re.compile(r"Memory pool end\. avail mem=")
#: "Use sliding window memory pool. full_layer_tokens=F, swa_layer_tokens=S" (0.5.23
#: model_executor/pool_configurator.py:888-891; the posted 0.5.8-0.5.9 logs print the same)
_SWA_TOKENS = re.compile(r"Use sliding window memory pool\. full_layer_tokens=(?P<full>\d+), "
                         r"swa_layer_tokens=(?P<swa>\d+)")
#: "Using KV cache dtype: torch.bfloat16" (printed by the 0.5.9 logs posted, ktransformers#1870
#: and sglang#19718; gone from 0.5.23)
_KV_DTYPE = re.compile(r"Using KV cache dtype: (?P<dtype>torch\.\w+)")
_PREFIX = re.compile(r"\[(?P<p>[^\]]*\bTP\d+\b[^\]]*)\]")
_TP = re.compile(r"\bTP(?P<r>\d+)\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: the lines read, and the words that start each: a line holding these words that its pattern
#: does not match is tried joined with the next ones (a paste wrapped at its width)
_WRAPPED = (("KV Cache is allocated", KV), ("SWAKVPool ", SWA_POOL),
            ("Use sliding window memory pool", _SWA_TOKENS), ("Load weight begin", LOAD_BEGIN),
            ("Load weight end", LOAD_END),
            # the server's line goes on after the count: one that stops there was cut (the
            # bench_one_batch line, which is the count alone, joins nothing and is kept)
            ("max_total_num_tokens=", re.compile(r"\bmax_total_num_tokens=\d+,")))
#: a pasted launch command: python -m sglang.launch_server ... / sglang serve ... / the
#: benchmarks that start the same model runner (sglang.bench_one_batch, bench_offline_throughput)
_COMMAND = re.compile(r"sglang(?:\.launch_server|\.bench_one_batch|\.bench_offline_throughput"
                      r"| serve)\b")
_FLAGS = {"model_path": ("--model-path", "--model"), "tp_size": ("--tp-size", "--tp"),
          "page_size": ("--page-size",), "kv_cache_dtype": ("--kv-cache-dtype",),
          "dp_size": ("--dp-size", "--dp"), "mem_fraction_static": ("--mem-fraction-static",),
          "max_total_tokens": ("--max-total-tokens",), "pp_size": ("--pp-size", "--pp"),
          "speculative_algorithm": ("--speculative-algorithm",)}
_OVERRIDE = re.compile(r"--json-model-override-args[= ]+"
                       r"(?:'(?P<a>[^']*)'|\"(?P<b>(?:[^\"\\]|\\.)*)\")")
#: a line that starts a log record (the command's continuation lines do not)
_RECORD = re.compile(r"^\s*(?:\[|\x1b|INFO|WARNING|ERROR|DEBUG|\d{4}-\d\d-\d\d|[\w-]+\s+\|)")
#: phrases only SGLang prints: with the scheduler's token line, a log that has no KV line (the
#: 0.3 releases) is still SGLang's
SGLANG_ONLY = (re.compile(r"Memory pool end\. avail mem="), re.compile(r"Load weight end\. type="))


def normalise(lines, patterns=()) -> tuple[list[tuple[int, str]], list[str]]:
    """``lines`` ((number, text)) as SGLang printed them: ANSI colour codes dropped, and a line
    that starts one of SGLang's pool lines but does not match its pattern (``patterns``: more
    (words, regex) pairs, e.g. the state line's) joined with the lines after it (up to 3, with
    no space, then with one) where the joined text matches: a paste wrapped at its width. The
    joined line keeps the first one's number; the others are dropped. Returns the lines and one
    sentence for each join."""
    text = [(i, _ANSI.sub("", t)) for i, t in lines]
    rules = [(w, r) for w, r in (*_WRAPPED, *patterns) if r is not None]
    out, notes, skip = [], [], 0
    for k, (i, t) in enumerate(text):
        if skip:
            skip -= 1
            continue
        rule = next((r for w, r in rules if w in t), None)
        if rule is not None and not rule.search(t):
            for extra in range(1, 4):
                rest = [x for _, x in text[k + 1:k + 1 + extra]]
                joined = next((j for sep in ("", " ")
                               if rule.search(j := sep.join([t.rstrip("\n"), *rest]))), None)
                if joined is not None and len(rest) == extra:
                    notes.append(f"lines {i}-{i + extra} joined: one line wrapped by the paste")
                    t, skip = joined, extra
                    break
        out.append((i, t))
    return out, notes


def rank_of(line: str) -> int | None:
    """The TP rank in ``line``'s "[time TPn]" prefix (wherever it stands: after a docker
    "service |" prefix too); None where it has none."""
    p = _PREFIX.search(line)
    m = _TP.search(p["p"]) if p else None
    return int(m["r"]) if m else None


_DP = re.compile(r"\bDP(?P<r>\d+)\b")


def dp_attention_from_labels(lines) -> bool:
    """Whether the rank labels show DP attention over one-rank attention groups: every label
    with both a DP and a TP rank has them equal ("[... DP3 TP3 EP3]"), some above 0. With DP
    attention the DP rank is tp_rank // attn_tp_size (0.5.23 runtime_context.py:73-76), so equal
    ranks beyond 0 mean attn_tp_size 1; plain data parallelism restarts TP at 0 in each
    replica ("DP1 TP0")."""
    pairs = set()
    for _, t in lines:
        p = _PREFIX.search(t)
        if p and (d := _DP.search(p["p"])) and (r := _TP.search(p["p"])):
            pairs.add((int(d["r"]), int(r["r"])))
    return bool(pairs) and all(d == r for d, r in pairs) and max(d for d, _ in pairs) > 0


#: "Disable hybrid SWA memory for Gemma3ForConditionalGeneration as it is not yet supported."
#: (0.5.23 arg_groups/model_overrides/gemma2_gemma3.py; the same warning since 0.4.9)
NO_HYBRID = re.compile(r"Disable hybrid SWA memory for ")


def hybrid_evidence(lines) -> bool:
    """Whether the log shows a hybrid-SWA pool: a SWAKVPool line, a "Full"/"SWA" pool label or
    the "Use sliding window memory pool" line."""
    return any(SWA_POOL.search(t) or LABEL.search(t) or _SWA_TOKENS.search(t) for _, t in lines)


def tp_from_ranks(lines) -> tuple[int | None, list[int]]:
    """(highest TP rank + 1, the ranks seen) over ``lines`` ((number, text) pairs); (None, [])
    where no line carries a rank. A lower bound on TP where the paste holds some ranks only."""
    seen = sorted({r for _, t in lines if (r := rank_of(t)) is not None})
    return (seen[-1] + 1 if seen else None), seen


def command_settings(text) -> tuple[dict[str, str], int | None]:
    """The settings of a launch command pasted with the log (``--model-path``, ``--tp``,
    ``--page-size``, ``--kv-cache-dtype``, ``--dp``), as server_args names, and its line
    number; ({}, None) where none is pasted. ``text``: a string or (number, line) pairs."""
    lines = list(enumerate(text.splitlines(), 1) if isinstance(text, str) else text)
    for k, (i, line) in enumerate(lines):
        if not _COMMAND.search(line):
            continue
        line = _joined_command(line, [t for _, t in lines[k + 1:k + 12]])
        words = line.replace("\\", " ").split()
        out = {}
        for key, flags in _FLAGS.items():
            for j, w in enumerate(words[:-1]):
                name, _, value = w.partition("=")
                if name in flags:
                    out[key] = value or words[j + 1]
        if "--enable-dp-attention" in words:
            out["enable_dp_attention"] = "True"
        if (m := _OVERRIDE.search(line)):
            out["json_model_override_args"] = m["a"] if m["a"] is not None else m["b"]
        return out, i
    return {}, None


def _joined_command(line: str, after: list[str]) -> str:
    """A launch command with the lines that continue it: after a trailing "\\" (joined with a
    space), or, where the paste wrapped it at its width, the lines up to the first that starts
    a log record (joined as they were cut: with nothing between, or a space where the next
    line starts with one or with a flag)."""
    for nxt in after:
        if _RECORD.match(nxt) or not nxt.strip():
            break
        if line.rstrip().endswith("\\") or nxt[:1].isspace() or nxt.lstrip().startswith("--"):
            line = line.rstrip().rstrip("\\") + " " + nxt
        elif " --" in nxt or line.rstrip() != line:
            line = line + nxt
        else:
            break
    return line


def tokens_of(lines, i: int, rank) -> int | None:
    """The token count of the KV line at ``i`` that prints none (the releases of early 2025):
    the max_total_num_tokens line of its rank, else the one value every such line prints."""
    ranked = [(j, int(m["n"])) for j, t in lines if (m := MAX_TOTAL.search(t))
              and rank_of(t) == rank]
    values = {n for j, t in lines if (m := MAX_TOTAL.search(t)) for n in [int(m["n"])]}
    if ranked:
        return ranked[0][1]
    return values.pop() if len(values) == 1 else None


def kv_dtype_line(lines) -> tuple[str | None, int | None]:
    """The dtype of a "Using KV cache dtype: torch.X" line and its number, else (None, None)."""
    for i, t in lines:
        if (m := _KV_DTYPE.search(t)):
            return m["dtype"], i
    return None, None


def swa_tokens(lines) -> tuple[int, int] | None:
    """(swa, full) tokens of a "Use sliding window memory pool" line, else None."""
    for _, t in lines:
        if (m := _SWA_TOKENS.search(t)):
            return int(m["swa"]), int(m["full"])
    return None


def assign_pools(lines, hybrid: bool) -> dict[int, str]:
    """What each KV line is, by line number: "draft" (printed by a rank after its own "Memory
    pool end": a second model runner's pool), and for a hybrid-SWA model "swa" or "full" (its
    label, 0.5.23; else the pool sizes where the log's "Use sliding window memory pool" or
    "SWAKVPool" line tells them apart; else its place among its rank's lines: releases before
    0.5.23 print the sliding pool first, then the full pool, then "SWAKVPool",
    swa_memory_pool.py:63-90 in 0.5.8.post1 and 0.5.9), or "unknown" where the place does not
    say (one unlabelled line of a rank, neither followed by its SWAKVPool line nor preceded by
    the other pool's). Lines of a one-pool model are not named."""
    ended: set = set()
    by_rank: dict = {}
    out: dict[int, str] = {}
    for i, t in lines:
        r = rank_of(t)
        if POOL_END.search(t):
            ended.add(r)
        elif (m := KV.search(t)):
            if r in ended:
                out[i] = "draft"
            else:
                by_rank.setdefault(r, []).append((i, t, m))
        elif SWA_POOL.search(t) and r not in ended:
            by_rank.setdefault(r, []).append((i, t, None))
    if not hybrid:
        return out
    sizes = swa_tokens(lines)
    if sizes is None:
        sizes = next(((int(m["swa"]), int(m["full"])) for _, t in lines
                      if (m := SWA_POOL.search(t))), None)
    for rows in by_rank.values():
        kv = [(i, t, m) for i, t, m in rows if m is not None]
        before_total = [i for k, (i, _, m) in enumerate(rows) if m is not None
                        and k + 1 < len(rows) and rows[k + 1][2] is None]
        for k, (i, t, m) in enumerate(kv):
            if (lab := LABEL.search(t)):
                out[i] = "swa" if lab["label"] == "SWA" else "full"
            elif sizes and sizes[0] != sizes[1] and m["n"] and int(m["n"]) in sizes:
                out[i] = "swa" if int(m["n"]) == sizes[0] else "full"
            elif i in before_total:
                out[i] = "full"
            elif k + 1 < len(kv):
                out[i] = "swa"
            elif k > 0:
                out[i] = "full"
            else:
                out[i] = "unknown"
    return out
