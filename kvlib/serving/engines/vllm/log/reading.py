"""Reading a vLLM start-up log: which lines are vLLM's memory lines, what they print, which
TP rank printed them (``kvlib explain-log``, issue 24; the checks are in :mod:`.checks`)."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LogLine", "Found", "VllmLog", "read_log", "read_log_text", "model_name"]



@dataclass(frozen=True)
class LogLine:
    """One line of the log: its 1-based number, its text, and the TP rank that printed it
    (from a ``(Worker_TP3 ...)`` or ``rank=3`` prefix; None when the line does not say). A
    record a paste wrapped is one LogLine: the first line's number, the joined text."""

    number: int
    text: str
    rank: int | None
    #: how many lines of the file it spans: more than 1 where a paste wrapped one record
    #: over several lines and kvlib joined them (:func:`read_log_text`)
    spans: int = 1


@dataclass(frozen=True)
class Found:
    """A recognised line: its kind and the numbers it prints, as printed (strings)."""

    kind: str
    line: LogLine
    values: tuple


@dataclass
class VllmLog:
    """What :func:`read_log` found: the recognised lines in order, the engine's settings
    (``model``, ``tensor_parallel_size``, ``kv_cache_dtype``, ``dtype``, ``max_seq_len``,
    ...), the release, and ``non-default args``."""

    lines: list[LogLine]
    found: list[Found]
    version: str | None = None
    engine: dict = field(default_factory=dict)
    args: dict = field(default_factory=dict)
    v0: bool = False
    #: the line whose ``non-default args`` dict is cut off (a paste or the poster's excerpt
    #: ended inside it): only the settings before the cut were read, the rest are unknown
    args_cut: int | None = None
    #: the settings of a launch command pasted with the log (``vllm serve MODEL --flag value``,
    #: :func:`read_command`), flags as vLLM's argument names (``tensor_parallel_size``), and
    #: the line it is on; the engine line and ``non-default args`` win where they print one
    command: dict = field(default_factory=dict)
    command_line: int | None = None

# ------------------------------------------------------------------------------- reading

_NUM = r"(-?\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"
_PATTERNS: list[tuple[str, re.Pattern]] = [(k, re.compile(p)) for k, p in [
    ("engine", r"Initializing (?:a V([01]) LLM engine|an LLM engine) \(v([^)\s]+)\) with "
               r"config: (.*)"),
    ("version", r"vLLM API server version (\d[\w.+-]*)"),
    # the start-up banner of 0.19 on ("█  version 0.25.0", beside the block-letter logo)
    ("version", r"\u2588\s+version (\d[\w.+-]*)\s*$"),
    ("banner_model", r"\u2588\s+model\s+(\S+)\s*$"),
    ("args", r"non-default args: (\{.*\})\s*$"),
    ("args_cut", r"non-default args: (\{.*)$"),
    ("capacity", r"(\w+(?: \+ host)?) KV cache size: " + _INT + r" tokens, Maximum concurrency "
                 r"for " + _INT + r" tokens per request: " + _NUM + "x"),
    ("tokens", r"GPU KV cache size: " + _INT + r" tokens\s*$"),
    ("concurrency", r"Maximum concurrency for " + _INT + r" tokens per request: " + _NUM + "x"),
    ("available", r"Available KV cache memory: " + _NUM + " GiB"),
    # the CPU backend's budget: 0.34.0 v1/worker/cpu_worker.py:210-214 (explicit) and :246-253
    ("available", r"(?:Explicitly|Auto) set \(" + _NUM + "/" + _NUM + r"\) GiB for KV cache "
                  r"on node \d+"),
    # a budget the user fixed with --kv-cache-memory (kv_cache_memory_bytes), profiling
    # skipped: 0.34.0 v1/worker/gpu_worker.py:688-699 (format_gib: "49.0")
    ("available", r"Initial free memory -?\d+(?:\.\d+)? GiB, reserved " + _NUM + r" GiB memory "
                  r"for KV Cache as specified by kv_cache_memory_bytes config"),
    # 0.34.0 platforms/__init__.py:286-288 (debug there; info in earlier releases)
    ("platform", r"Automatically detected platform (\w+)\."),
    # V1 before "GPU KV cache size" (vLLM 0.7.x, PR 12569 to PR 13596, Jan-Feb 2025):
    # "# GPU blocks: N" alone, then "Maximum concurrency" = N x block / max_model_len
    ("v1_blocks", r"# GPU blocks: (\d+)\s*$"),
    # the TPU backend (vllm-project/tpu-inference, tpu_jax_runner.py, PR 145): HBM in use per
    # device before the cache, then the cache's shape, its mesh and HBM after it
    ("tpu_model", r"Init model \| hbm=\[([^\]]*)\]Gb"),
    ("tpu_kv", r"Init kv-cache \| shape=(\d+) \* \((\d+), (\d+), (\d+), (\d+)\)(.*)$"),
    ("blocks", r"(?:# )?(\w+) blocks: (\d+), # CPU blocks: (\d+)"),
    ("v0_requested", r"total_gpu_memory \(" + _NUM + r"GiB\) x gpu_memory_utilization \("
                     + _NUM + r"\) = " + _NUM + "GiB"),
    ("v0_budget", r"model weights take " + _NUM + r"GiB; non_torch_memory takes " + _NUM
                  + r"GiB; PyTorch activation peak memory takes " + _NUM + r"GiB; the rest of "
                  r"the memory reserved for KV Cache is " + _NUM + "GiB"),
    ("v0_profile", r"Memory profiling results: total_gpu_memory=" + _NUM + r"GiB "
                   r"initial_memory_usage=" + _NUM + r"GiB peak_torch_memory=" + _NUM
                   + r"GiB memory_usage_post_profile=" + _NUM + r"Gi?B non_torch_memory="
                   + _NUM + r"GiB kv_cache_size=" + _NUM + r"GiB gpu_memory_utilization="
                   + _NUM),
    ("v0_table_start", r"Memory profiling results:\s*$"),
    ("v0_row", r"(total_gpu_memory|gpu_memory_utilization|the current vLLM instance can use|"
               r"model weights take|non_torch_memory|PyTorch activation peak memory|"
               r"available_kv_cache_memory)\s+" + _NUM + r"(?:GiB)?\s*$"),
    ("max_len_error", r"The model's max seq len \((\d+)\) is larger than the maximum number of "
                      r"tokens that can be stored in KV cache \((\d+)\)"),
    ("loading", r"(?:Model loading took|Loading model weights took) " + _NUM + r" (GiB|GB)"),
    ("free_010", r"Free memory on device \(" + _NUM + "/" + _NUM + r" GiB\) on startup\. "
                 r"Desired GPU memory utilization is \(" + _NUM + ", " + _NUM + r" GiB\)\. "
                 r"Actual usage is " + _NUM + r" GiB for weight, " + _NUM + r" GiB for peak "
                 r"activation, " + _NUM + r" GiB for non-torch memory, and " + _NUM
                 + r" GiB for CUDAGraph memory\. Replace gpu_memory_utilization config with "
                 r"`--kv-cache-memory=(-?\d+)`(?: \([-\d.]+ GiB\))? to fit into requested "
                 r"memory, or `--kv-cache-memory=(-?\d+)`(?: \([-\d.]+ GiB\))? to fully utilize "
                 r"gpu memory\. Current kv cache memory in use is " + _NUM + r" (bytes|GiB)"),
    ("free_033", r"Free memory on device \(" + _NUM + "/" + _NUM + r" GiB\) on startup\. "
                 r"Desired GPU memory utilization is \(" + _NUM + ", " + _NUM + r" GiB\)\. "
                 r"Actual usage is " + _NUM + r" GiB for consumed memory \(weights \+ "
                 r"non-torch\), " + _NUM + r" GiB for peak activation, and " + _NUM
                 + r" GiB for CUDAGraph memory\. Replace gpu_memory_utilization config with "
                 r"`--kv-cache-memory=(-?\d+)` \([-\d.]+ GiB\) to fit into requested memory, "
                 r"or `--kv-cache-memory=(-?\d+)` \([-\d.]+ GiB\) to fully utilize gpu "
                 r"memory\. Current kv cache memory in use is " + _NUM + " GiB"),
    ("graphs", r"Graph capturing finished in \d+ secs?, took " + _NUM + " GiB"),
    ("mamba_block", r"Setting attention block size to (\d+) tokens to ensure that attention "
                    r"page size is >= mamba page size"),
    ("mamba_pad", r"Padding mamba page size by " + _NUM + r"% to ensure that mamba page size "
                  r"and attention page size are exactly equal"),
    ("padding_layers", r"Add (\d+) padding layers, may waste at most " + _NUM
                       + r"% KV cache memory"),
    ("block_size", r"Setting kv cache block size to (\d+) for"),
    # 0.18.0 v1/core/kv_cache_utils.py:826-830 (V0's cache engine printed the same words)
    ("override", r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)"),
    ("batched", r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)"),
    # The start-up failure (issue 32). The wording moved: "models's" up to at least 0.15,
    # "model's" by 0.27.0; the needed figure "%.2f" in early releases, format_gib's
    # str(round(x, 2)) ("24.0") later; the estimate sentence from PR 16168 (April 2025) on;
    # what follows the figures (the hint) differs in every release and is not read.
    # 0.34.0 v1/core/kv_cache_planning.py:99-131 (0.33.0 :50-87, 0.27.0 kv_cache_utils.py:778-788)
    ("kv_failure", r"To serve at least one request with the models?'s max seq len \((\d+)\), ?"
                   r"\(?" + _NUM + r" GiB KV ?cache is needed, which is larger than the "
                   r"available KV cache memory \(" + _NUM + r" GiB\)\.(?: Based on the "
                   r"available memory, the estimated maximum model length is (\d+)\.)?"),
    ("no_kv_memory", r"No available memory for the cache blocks\."),
    # vLLM 0.34's extensible KV cache: v1/worker/extensible_kv_cache.py:693-705 and :536-540
    ("warmup", r"Memory after warmup: " + _NUM + r" GiB free, " + _NUM + r" GiB committed to "
               r"the KV cache, " + _NUM + r" GiB kept for transient activations \(" + _NUM
               + r" GiB allocated at peak, " + _NUM + r" GiB of torch reservation growth\); "
               r"(\d+) KV cache blocks \(" + _NUM + r" GiB\) fit within the requested " + _NUM
               + r" GiB\. Torch may reserve up to " + _NUM + " GiB"),
    ("extended", r"Extended KV cache to (\d+) blocks \(" + _NUM + r" GiB\)"),
    ("failed", r"EngineCore failed to start|Engine core initialization failed"),
]]
#: what a log record carries before vLLM's words, and quoted text does not: a level, a source
#: file ``[kv_cache_utils.py:1168]``, a process ``(EngineCore_DP0 pid=1)``, a timestamp, an
#: exception's name (a start-up failure pasted from its traceback)
_RECORD = re.compile(r"\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|\[[\w./-]+\.py:\d+\]|"
                     r"\bpid=\d+|\d\d:\d\d:\d\d|^\s*(?:\w+\.)*\w*(?:Error|Exception):")
_RANK = re.compile(r"\((?:\w*?Worker\w*?_TP(\d+)\w*|[^)]*\brank[= ](\d+))\b[^)]*\)")
_ENGINE_KEYS = ("model", "dtype", "max_seq_len", "tensor_parallel_size",
                "pipeline_parallel_size", "decode_context_parallel_size", "quantization",
                "kv_cache_dtype", "enable_prefix_caching", "block_size")


def _engine_settings(text: str) -> dict:
    out = {}
    for key in _ENGINE_KEYS:
        m = re.search(rf"(?:^|, ){key}=('[^']*'|[^,]*)", text)
        if m:
            out[key] = m.group(1).strip().strip("'")
    # "speculative_config=SpeculativeConfig(method='mtp', model='...', num_spec_tokens=2)"
    # (vLLM 0.34.0 config/vllm.py:2893, speculative.py:1829-1842): its method and k
    m = re.search(r"speculative_config=SpeculativeConfig\(method='(?P<m>[^']*)'.*?"
                  r"num_spec_tokens=(?P<k>\d+)\)", text)
    if m:
        out["speculative_method"], out["num_spec_tokens"] = m["m"], m["k"]
    return out


_ARG = re.compile(r"'(\w+)': ('(?:[^'\\]|\\.)*'|True|False|None|-?\d+(?:\.\d+)?|"
                  r"\{[^{}]*\}|\[[^\[\]]*\])(?=[,}])")


def _leading_args(text: str) -> dict:
    """The settings of a ``non-default args`` dict cut off before its end: every
    ``'key': value`` pair whole before the cut (a literal, a flat dict or list)."""
    out = {}
    for m in _ARG.finditer(text):
        try:
            out[m.group(1)] = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError):
            continue
    return out


def _version_key(version: str | None) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


#: the start of a new log record (a level, a timestamp, maybe after a container's "name | ",
#: a process prefix and colour codes), or vLLM's source marker "[core.py:93]" anywhere: a
#: line that has one is never the tail of a wrapped one
_START = re.compile(r"^\s*(?:[\w.-]+\s+\|\s*)?(?:\x1b\[[\d;]*m)*(?:\([^)]*pid=\d+\)\s*)?"
                    r"(?:\x1b\[[\d;]*m)*(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|"
                    r"\[?\d{4}-\d\d-\d\d|\d\d-\d\d \d\d:\d\d|Traceback\b)"
                    r"|\s\[[\w./-]+\.py:\d+\]\s")
#: a quote marker a poster put before each line (Markdown's "> ", a "▎ " bar), dropped
_QUOTE = re.compile(r"^\s*(?:[>\u258e\u258d\u258c\u2502\u2503]\s?)+")
#: a process prefix repeated on each line of a message split by the poster
_PROCESS = re.compile(r"^\s*\([^)]*pid=\d+\)\s?")
#: words one of kvlib's lines holds, spaces removed (a cheap test before trying joins)
_CUES = re.compile(r"kvcache|concurr|freememory|maxseqlen|blocks|padding|blocksize|graphcaptur|"
                   r"modelloading|weightstook|args|engine|serverversion|chunkedprefill|memory",
                   re.IGNORECASE)
_GREEDY = {"engine", "args_cut"}  # patterns whose tail runs to the end of the record
_MAX_JOIN = 12  # a 1,000-character line at 80 columns


def _match(text: str, table: bool, start_before: int | None = None,
           end_after: int | None = None) -> tuple[str, re.Match] | None:
    """The first of :data:`_PATTERNS` that matches ``text`` (a V0 table row only inside the
    table); with a join, one that starts in its first line (before ``start_before``) and
    reaches its last (past ``end_after``)."""
    for kind, pattern in _PATTERNS:
        if kind == "v0_row" and not table:
            continue
        for m in pattern.finditer(text):
            if start_before is None or (m.start() < start_before and m.end() > end_after):
                return kind, m
            if m.start() >= (start_before or 0):
                break
    return None


def _tail(text: str) -> str | None:
    """``text`` as the tail of a wrapped record, or None when it starts a record of its own
    or is blank (a repeated process prefix is dropped)."""
    if not text.strip() or _START.search(text):
        return None
    m = _PROCESS.match(text)
    if m:
        rest = text[m.end():]
        return None if not rest.strip() or _START.search(rest) else rest
    return text


def _joins(parts: list[str]) -> list[str]:
    """The texts ``parts`` (a line and its tails) may have been before a paste wrapped them:
    a space lost at every break (word wrap, trailing spaces trimmed); nothing lost where a
    line is as wide as the widest (a hard wrap at a fixed width), else a space; nothing lost
    anywhere. The first that reads wins; where every line but the last is equally wide (a hard
    wrap, at 80 columns for one break) the width's rule is tried first."""
    width = max(len(x) for x in parts[:-1])
    def sep(a: str, b: str, rule: str) -> str:
        if a.endswith((" ", "\t")) or b.startswith((" ", "\t")):
            return ""
        if rule == "width":
            return "" if len(a) == width and width >= 60 else " "
        return rule
    heads = {len(x) for x in parts[:-1]}
    hard = len(heads) == 1 and width >= 60 and (len(parts) > 2 or width == 80)
    out = []
    for rule in (("width", " ", "") if hard else (" ", "width", "")):
        text = parts[0]
        for a, b in zip(parts, parts[1:], strict=False):
            text += sep(a, b, rule) + b
        if text not in out:
            out.append(text)
    return out


#: a launch command at the start of a line or after a shell prompt: ``vllm serve``, or the
#: OpenAI server module run by Python (never the words quoted in a warning)
_COMMAND = re.compile(r"^\s*(?:[^`\n]*?[$#>]\s+)?(?:(?:CUDA_VISIBLE_DEVICES|VLLM_\w+)=\S+\s+)*"
                      r"(?:[\w./-]*python[\d.]*\s+-m\s+vllm\.entrypoints\.openai\.api_server|"
                      r"vllm\s+serve)(?=\s|$)")
#: vLLM's short flags (0.34.0 engine/arg_utils.py: ``-tp``, ``-pp``, ``-dp``, ``-q``)
_SHORT = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size",
          "dp": "data_parallel_size", "q": "quantization"}


def read_command(text: str) -> dict:
    """The settings of one launch command (``vllm serve MODEL --tensor-parallel-size 2
    --kv-cache-dtype fp8_e5m2 ...``): each ``--flag value``, ``--flag=value`` or ``--flag`` (True;
    ``--no-flag`` False) under vLLM's argument name (dashes as underscores, ``-tp`` as
    ``tensor_parallel_size``), numbers as numbers; ``model`` the positional argument."""
    m = _COMMAND.search(text)
    if m is None:
        return {}
    rest = text[m.end():].replace("\\\n", " ")
    try:
        words = shlex.split(rest, comments=False)
    except ValueError:  # an unclosed quote (a cut paste): split on blanks
        words = rest.split()
    out: dict = {}
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if not w.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", w):
            if "model" not in out and not w.startswith(("`", "|", ">")):
                out["model"] = w
            continue
        name, eq, value = w.lstrip("-").partition("=")
        name = _SHORT.get(name, name).replace("-", "_")
        if not eq:
            nxt = words[i] if i < len(words) else None
            if nxt is not None and (not nxt.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", nxt)):
                value, i = nxt, i + 1
            else:
                value = None
        if value is None:
            flag = not name.startswith("no_")
            out[name[3:] if not flag else name] = flag
            continue
        out[name] = int(value) if value.isdigit() else (
            float(value) if re.fullmatch(r"\d*\.\d+", value) else value)
    return out


def read_log_text(text: str) -> VllmLog:
    """Every recognised line of a log's text (see :data:`_PATTERNS`); ValueError when
    nothing in it is a vLLM start-up line kvlib reads.

    A record a paste wrapped over several lines (at 80 columns, say: "Maximum concurrency for
    32,768 tokens per" / "request: 1.85x"), or a failure the poster split, is read as one:
    the lines after it that start no record of their own and match nothing alone are joined
    to it when the joined text matches a pattern that starts in the first and reaches the
    last (a space or nothing at each break, whichever reads)."""
    raw = [_QUOTE.sub("", t.rstrip("\r")) for t in text.split("\n")]
    log = VllmLog(lines=[], found=[])
    for i, t in enumerate(raw):  # a pasted launch command, its continuation lines joined
        if _COMMAND.search(t):
            j, cmd = i, t
            while cmd.rstrip().endswith("\\") and j + 1 < len(raw):
                j += 1
                cmd = cmd.rstrip()[:-1] + " " + raw[j]
            log.command, log.command_line = read_command(cmd), i + 1
            break
    table = False
    skip = 0
    for i, t in enumerate(raw):
        m_rank = _RANK.search(t)
        rank = None
        if m_rank:
            rank = int(m_rank.group(1) if m_rank.group(1) is not None else m_rank.group(2))
        log.lines.append(LogLine(i + 1, t, rank))
        if skip:
            skip -= 1
            continue
        hit = _match(t, table)
        tails: list[str] = []
        greedy = hit is not None and hit[0] in _GREEDY
        for nxt in raw[i + 1:i + 1 + (40 if greedy else _MAX_JOIN)]:
            tail = _tail(nxt)
            if tail is None or (greedy and _match(nxt, True)):
                break
            tails.append(tail)
        joined = None
        if tails and greedy and hit[0] == "args_cut":
            # a settings dict a paste wrapped: the fewest tails that close it; none closes it:
            # the dict was cut where the paste ends, its line read alone
            for k in range(1, len(tails) + 1):
                cand = next((c for c in _joins([t, *tails[:k]])
                             if (x := _match(c, table)) is not None and x[0] == "args"), None)
                if cand is not None:
                    joined = (cand, k)
                    break
        elif tails and greedy:
            joined = (_joins([t, *tails])[1], len(tails))
        elif tails and _CUES.search(re.sub(r"\s", "", " ".join([t, *tails]))):
            for k in range(len(tails), 0, -1):
                parts = [t, *tails[:k]]
                alone = _match(tails[k - 1], True)
                if alone is not None and hit is not None:
                    continue  # two records of a bare excerpt, each read alone
                for cand in _joins(parts):
                    last = len(cand) - len(parts[-1])
                    found = _match(cand, table, start_before=len(t), end_after=last)
                    if found is not None and found[0] != "args_cut" and (
                            alone is None or found[0] != alone[0]):
                        joined = (cand, k)
                        break
                if joined:
                    break
        line = LogLine(i + 1, t, rank)
        if joined is not None:
            line = LogLine(i + 1, joined[0], rank, joined[1] + 1)
            skip = joined[1]
            hit = _match(line.text, table)
        if hit is None:
            table = table and not t.strip() == ""
            continue
        kind, m = hit
        values = m.groups()
        if kind == "engine":
            log.v0 = log.v0 or m.group(1) == "0"
            log.version = log.version or m.group(2)
            log.engine = _engine_settings(m.group(3))
        elif kind == "version":
            log.version = log.version or m.group(1)
        elif kind == "args":
            try:
                parsed = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                parsed = None
            log.args = parsed if isinstance(parsed, dict) else _leading_args(m.group(1))
        elif kind == "args_cut":
            log.args, log.args_cut = _leading_args(m.group(1)), i + 1
        table = kind in ("v0_table_start", "v0_row") or (table and kind == "v0_row")
        log.found.append(Found(kind, line, values))
    numbers = [f for f in log.found if f.kind not in ("version", "banner_model", "args",
                                                       "args_cut", "failed")]
    if not numbers:
        raise ValueError("not a vLLM start-up log: no line of it reports KV-cache memory, "
                         "blocks or concurrency")
    # Text that quotes a line (a README, an issue's prose) is no log: none of the lines read
    # is a log record, and they are a small part of the text. A pasted excerpt of bare
    # messages (no prefixes) is mostly the lines read.
    body = sum(1 for x in raw if x.strip())
    if 4 * len(numbers) < body and not any(_RECORD.search(f.line.text) for f in log.found
                                           if f.kind != "v0_row"):
        where = ", ".join(str(f.line.number) for f in numbers[:3])
        raise ValueError(f"not a start-up log: line{'s' if len(numbers) > 1 else ''} {where} "
                         f"of {body} quote{'' if len(numbers) > 1 else 's'} vLLM's words, but "
                         "no line read is a log record (no level, source file, process, "
                         "timestamp or exception name before it)")
    # V0's words: its memory lines, and its failure "The model's max seq len (N) is larger
    # than the maximum number of tokens that can be stored in KV cache (M)" (0.7.2
    # worker/worker.py raise_if_cache_size_invalid; V1 says "To serve at least one request")
    if any(f.kind in ("blocks", "v0_requested", "v0_budget", "v0_profile", "v0_table_start",
                      "max_len_error") for f in log.found):
        log.v0 = True
    return log


def read_log(path) -> VllmLog:
    """:func:`read_log_text` of a file (FileNotFoundError if there is none; ValueError if
    it is not text)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{path} is a folder, not a log file")
    if not p.is_file():
        raise FileNotFoundError(f"no such log file: {path}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file (not UTF-8)") from None
    try:
        return read_log_text(text)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def model_name(log: VllmLog) -> str | None:
    """The model the log names: the engine-config line's ``model=``, else
    ``non-default args``' ``model``, else the start-up banner's (0.19 on); None when none
    says."""
    banner = next((f.values[0] for f in log.found if f.kind == "banner_model"), None)
    name = log.engine.get("model") or log.args.get("model") or banner
    full = log.args.get("model")
    if name and isinstance(full, str) and full != name and full.startswith(str(name)):
        name = full  # the engine line cut off inside the name: the args hold it whole
    return str(name) if name else None

