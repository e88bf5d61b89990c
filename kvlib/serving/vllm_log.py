"""A vLLM start-up log, read and checked number by number (issue 24, ``kvlib explain-log``).

:func:`read_log` finds the lines vLLM prints about memory while it starts (V1 engines of
0.8 to 0.33, and the V0 engine's "Memory profiling" / "# GPU blocks" lines);
:func:`explain` works each number out again with kvlib's formulas and says whether it
agrees. Pure functions: nothing here prints.

**What is taken as given.** The memory vLLM *measures* (weights, activation peak,
non-torch memory, CUDA graphs, hence "Available KV cache memory") is not a formula kvlib
owns: those lines are checked for their arithmetic only. Every number vLLM *derives* from
them (blocks, tokens, concurrency, block sizes, padding) is recomputed from the model's
config through :func:`kvlib.serving.vllm_layout.vllm_layout` (pages, groups, padding
layers, per-rank heads under tensor parallelism).

**Rounding.** A GiB figure printed to 2 decimals (``%.2f``, or 0.33's
``str(round(x, 2))``) stands for every byte count within 0.005 GiB of it, so a KV budget
line allows an interval of block counts, and a printed count is accepted when some block
count in that interval gives it. Where the same rank prints its budget in bytes (0.10's
"Current kv cache memory in use is N bytes"), the check is exact. Sums of rounded terms
carry each term's half-step.

**Releases** (the formulas differ; :data:`RULES`):

* ``v0``: the V0 engine. ``num_gpu_blocks = int(kv // block bytes)``, block bytes = layers x
  block x (K + V) x dtype bytes for every attention layer (vllm 0.8.5 worker/cache_engine.py);
  tokens = blocks x block; concurrency = blocks x block / max_model_len (executor_base.py).
* ``v1-0.8``: ``num_blocks = avail // page // layers``; tokens = blocks x block; concurrency
  = tokens / max_model_len (0.8.5 v1/core/kv_cache_utils.py).
* ``v1-0.11``: two lines; ``num_blocks = avail // page // group size``; tokens =
  ``num_blocks // groups x block``; concurrency = blocks / blocks one request needs summed
  over groups (0.11.0 v1/core/kv_cache_utils.py:780-795, 1076-1092). Used for every V1 log
  that prints "GPU KV cache size" and "Maximum concurrency" on two lines (0.9 onwards).
* ``v1-0.33``: one line "GPU KV cache size: N tokens, Maximum concurrency for L tokens per
  request: Zx"; ``num_blocks = avail // bytes per block`` (min over ranks); concurrency as
  above; tokens = ``int(concurrency x max_model_len)`` (0.33.0 kv_cache_utils.py:1078-1154).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from kvlib.models.spec import STATEFUL, ModelSpec
from kvlib.serving.gpus import get_gpu
from kvlib.serving.sharding import shard
from kvlib.serving.vllm_layout import VllmLayout, state_page_bytes, vllm_layout

__all__ = ["LogLine", "Found", "VllmLog", "Check", "Explanation", "RULES", "read_log",
           "read_log_text", "model_name", "explain"]

GiB = 1024**3
HALF = Fraction(5, 1000)  # half the step of a GiB figure printed to 2 decimals
REDUNDANCY = 150 * 1024**2  # the 150 MiB buffer of the "--kv-cache-memory" suggestions
RULES = ("v0", "v1-0.8", "v1-0.11", "v1-0.33")


@dataclass(frozen=True)
class LogLine:
    """One line of the log: its 1-based number, its text, and the TP rank that printed it
    (from a ``(Worker_TP3 ...)`` or ``rank=3`` prefix; None when the line does not say)."""

    number: int
    text: str
    rank: int | None


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


@dataclass(frozen=True)
class Check:
    """One number of the log and kvlib's figure for it.

    status: ``ok`` (agrees within the printed rounding), ``mismatch``, ``info`` (shown
    beside kvlib's figure, never a failure: measured weights), ``unexplained``
    (recognised, but kvlib cannot work it out: ``reason`` says why).
    """

    line: LogLine
    quantity: str
    printed: str
    kvlib: str
    formula: str
    status: str
    reason: str = ""


@dataclass(frozen=True)
class Explanation:
    """Every check of one log, and the settings they used."""

    checks: tuple[Check, ...]
    rules: str
    model: str | None
    settings: dict
    notes: tuple[str, ...]

    @property
    def mismatches(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "mismatch")

    @property
    def ok(self) -> bool:
        return not self.mismatches


# ------------------------------------------------------------------------------- reading

_NUM = r"(-?\d+(?:\.\d+)?)"
_INT = r"(\d[\d,]*)"
_PATTERNS: list[tuple[str, re.Pattern]] = [(k, re.compile(p)) for k, p in [
    ("engine", r"Initializing (?:a V([01]) LLM engine|an LLM engine) \(v([^)\s]+)\) with "
               r"config: (.*)"),
    ("version", r"vLLM API server version (\d[\w.+-]*)"),
    ("args", r"non-default args: (\{.*\})\s*$"),
    ("capacity", r"(\w+(?: \+ host)?) KV cache size: " + _INT + r" tokens, Maximum concurrency "
                 r"for " + _INT + r" tokens per request: " + _NUM + "x"),
    ("tokens", r"GPU KV cache size: " + _INT + r" tokens\s*$"),
    ("concurrency", r"Maximum concurrency for " + _INT + r" tokens per request: " + _NUM + "x"),
    ("available", r"Available KV cache memory: " + _NUM + " GiB"),
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
    ("batched", r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)"),
    ("failed", r"EngineCore failed to start|Engine core initialization failed"),
]]
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
    return out


def _version_key(version: str | None) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def read_log_text(text: str) -> VllmLog:
    """Every recognised line of a log's text (see :data:`_PATTERNS`); ValueError when
    nothing in it is a vLLM start-up line kvlib reads."""
    lines = [LogLine(i, t.rstrip("\r"), None) for i, t in enumerate(text.split("\n"), 1)]
    log = VllmLog(lines=[], found=[])
    table = False
    for raw in lines:
        m_rank = _RANK.search(raw.text)
        rank = None
        if m_rank:
            rank = int(m_rank.group(1) if m_rank.group(1) is not None else m_rank.group(2))
        line = LogLine(raw.number, raw.text, rank)
        log.lines.append(line)
        for kind, pattern in _PATTERNS:
            m = pattern.search(line.text)
            if not m:
                continue
            if kind == "v0_row" and not table:
                continue
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
                if isinstance(parsed, dict):
                    log.args = parsed
            table = kind in ("v0_table_start", "v0_row") or (table and kind == "v0_row")
            log.found.append(Found(kind, line, values))
            break
        else:
            table = table and not line.text.strip() == ""
    if not any(f.kind not in ("version", "args", "failed") for f in log.found):
        raise ValueError("not a vLLM start-up log: no line of it reports KV-cache memory, "
                         "blocks or concurrency")
    if any(f.kind in ("blocks", "v0_requested", "v0_budget", "v0_profile", "v0_table_start")
           for f in log.found):
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
        return read_log_text(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file (not UTF-8)") from None


def model_name(log: VllmLog) -> str | None:
    """The model the log names: the engine-config line's ``model=``, else
    ``non-default args``' ``model``; None when neither says."""
    name = log.engine.get("model") or log.args.get("model")
    return str(name) if name else None


# ----------------------------------------------------------------------------- intervals

def _frac(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _gib_range(text: str) -> tuple[Fraction, Fraction]:
    """GiB values a 2-decimal figure stands for: [x - 0.005, x + 0.005]."""
    x = _frac(text)
    return x - HALF, x + HALF


def _bytes_range(text: str) -> tuple[int, int]:
    lo, hi = _gib_range(text)
    return math.ceil(lo * GiB), math.floor(hi * GiB)


def _g(x) -> str:
    """A GiB figure for a reader: 2 decimals."""
    return f"{float(x):.2f}"


def _near(printed: str, lo: Fraction, hi: Fraction, half: Fraction = HALF) -> bool:
    """Whether a printed value (± half) meets the interval [lo, hi]."""
    x = _frac(printed)
    return x + half >= lo and x - half <= hi


def _round2_matches(printed: str, value: Fraction) -> bool:
    """Whether ``value`` printed with ``%.2f`` can read ``printed`` (ties either way)."""
    return abs(value - _frac(printed)) <= HALF


# ------------------------------------------------------------------------------ the model

@dataclass(frozen=True)
class _Setup:
    """What the checks need: the release's rules, and kvlib's layout on one rank."""

    rules: str
    tp: int
    kv_dtype: str | None
    layout: VllmLayout | None
    v0_block_bytes: int | None
    why_not: str  # why the layout is None
    block_size: int


_KV_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16",
              "fp16": "fp16", "float32": "fp32", "float": "fp32", "fp8": "fp8",
              "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


def _kv_dtype(log: VllmLog, given: str | None, notes: list[str]) -> str | None:
    if given:
        return given
    raw = log.engine.get("kv_cache_dtype") or log.args.get("kv_cache_dtype")
    if raw in (None, "auto"):
        dtype = log.engine.get("dtype") or log.args.get("dtype")
        if dtype is None:
            notes.append("kv cache dtype: the log does not say; bf16 assumed (pass --kv-dtype)")
            return "bf16"
        return _KV_DTYPES.get(str(dtype).replace("torch.", ""))
    found = _KV_DTYPES.get(str(raw))
    if found is None:
        notes.append(f"kv_cache_dtype={raw}: a layout kvlib does not model")
    return found


def _int_setting(log: VllmLog, key: str, given: int | None, default: int) -> int:
    if given:
        return given
    raw = log.engine.get(key, log.args.get(key))
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _rules(log: VllmLog) -> str:
    if log.v0:
        return "v0"
    if any(f.kind == "capacity" for f in log.found):
        return "v1-0.33"
    key = _version_key(log.version)
    if key is not None and key < (0, 9):
        return "v1-0.8"
    return "v1-0.11"


def _setup(log: VllmLog, model: ModelSpec | None, *, tp: int | None, kv_dtype: str | None,
           gpu: str | None, notes: list[str]) -> _Setup:
    rules = _rules(log)
    tp_ = _int_setting(log, "tensor_parallel_size", tp, 1)
    if tp is None and "tensor_parallel_size" not in log.engine and \
            "tensor_parallel_size" not in log.args:
        notes.append("tensor_parallel_size: the log does not say; 1 assumed (pass --tp)")
    pp = _int_setting(log, "pipeline_parallel_size", None, 1)
    dcp = _int_setting(log, "decode_context_parallel_size", None, 1)
    dtype = _kv_dtype(log, kv_dtype, notes) if model is not None else None
    bs_line = [f for f in log.found if f.kind == "block_size"]
    user_bs = log.engine.get("block_size") or log.args.get("block_size")
    block = int(bs_line[-1].values[0]) if bs_line else int(user_bs) if user_bs and \
        str(user_bs).isdigit() else None
    if model is None:
        return _Setup(rules, tp_, None, None, None, "no model: the log names none (pass --model)",
                      block or 16)
    if tp is not None:  # a TP the model's heads do not allow is the user's slip: say so
        for g in model.groups:
            if g.grows:
                try:
                    shard(g, tp_)
                except ValueError as e:
                    raise ValueError(f"--tp {tp}: {e}") from None
    if dtype is None:
        return _Setup(rules, tp_, None, None, None, "the kv cache dtype is not one kvlib "
                      "models", block or 16)
    if pp > 1 or dcp > 1:
        return _Setup(rules, tp_, dtype, None, None, "pipeline or decode-context parallelism: "
                      "kvlib's vLLM layout is for tensor parallelism only", block or 16)
    if rules == "v0":
        if any(g.kind in STATEFUL for g in model.groups):
            return _Setup(rules, tp_, dtype, None, None, "the V0 engine's state cache is not "
                          "modelled", block or 16)
        bs = block or 16
        per_token = sum(shard(g, tp_)[0].bytes_per_token(_bytes(dtype)) for g in model.groups
                        if g.grows)
        return _Setup(rules, tp_, dtype, None, int(per_token * bs), "", bs)
    batched = [f for f in log.found if f.kind == "batched"]
    n_batched = int(batched[-1].values[0]) if batched else log.args.get("max_num_batched_tokens")
    prefix = log.engine.get("enable_prefix_caching", log.args.get("enable_prefix_caching"))
    prefix_on = str(prefix) != "False"
    kwargs = dict(batched_tokens=n_batched, prefix_caching=prefix_on, block_size=block)

    def layout(g):
        return vllm_layout(model, _max_len(log), dtype, tp_, g, **kwargs)

    try:
        if gpu:
            lay = layout(get_gpu(gpu))
        else:
            lays = {(x.block_size, x.bytes_per_block, x.blocks_per_request): x
                    for x in (layout(get_gpu(n)) for n in ("H200", "L40S", "B200"))}
            if len(lays) > 1:
                return _Setup(rules, tp_, dtype, None, None, "vLLM's layout of this model "
                              "depends on the GPU, which the log does not name (pass --gpu)",
                              block or 16)
            lay = next(iter(lays.values()))
    except ValueError as e:
        return _Setup(rules, tp_, dtype, None, None, f"kvlib's vLLM layout: {e}", block or 16)
    if rules != "v1-0.33" and any(g.kind == "sliding" for g in lay.groups):
        notes.append("sliding-window blocks per request follow vLLM 0.33's rule (window + "
                     "in-flight tokens); older releases counted them differently")
    return _Setup(rules, tp_, dtype, lay, None, "", lay.block_size)


def _bytes(kv_dtype: str) -> Fraction:
    from kvlib.core.dtypes import bytes_per_element
    return Fraction(bytes_per_element(kv_dtype))


def _max_len(log: VllmLog) -> int:
    for f in log.found:
        if f.kind == "capacity":
            return int(f.values[2].replace(",", ""))
        if f.kind == "concurrency":
            return int(f.values[0].replace(",", ""))
    raw = log.engine.get("max_seq_len") or log.args.get("max_model_len")
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 2048  # only the blocks-per-request count uses it; the checks say so


# -------------------------------------------------------------------------------- checks

class _Checks:
    def __init__(self) -> None:
        self.out: list[Check] = []

    def add(self, f: Found, quantity: str, printed: str, kvlib: str, formula: str,
            ok: bool | None, reason: str = "") -> None:
        status = "unexplained" if ok is None else ("ok" if ok else "mismatch")
        self.out.append(Check(f.line, quantity, printed, kvlib, formula, status, reason))

    def info(self, f: Found, quantity: str, printed: str, kvlib: str, formula: str) -> None:
        self.out.append(Check(f.line, quantity, printed, kvlib, formula, "info"))


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"


def _tokens_of(s: _Setup, blocks: int, max_len: int | None) -> int | None:
    lay = s.layout
    if s.rules == "v1-0.33":
        return None if max_len is None else int(Fraction(blocks, lay.blocks_per_request)
                                                * max_len)
    if s.rules == "v1-0.8":
        return blocks * lay.block_size
    return blocks // len(lay.groups) * lay.block_size


def _concurrency_of(s: _Setup, blocks: int, max_len: int) -> Fraction:
    if s.rules == "v1-0.8":
        return Fraction(blocks * s.layout.block_size, max_len)
    return Fraction(blocks, s.layout.blocks_per_request)


def _tokens_formula(s: _Setup, max_len: int | None) -> str:
    lay = s.layout
    if s.rules == "v1-0.33":
        return (f"int(blocks / {lay.blocks_per_request:,} blocks per request x {max_len:,}) "
                "(vLLM 0.33)")
    if s.rules == "v1-0.8":
        return f"blocks x block size {lay.block_size:,}"
    return (f"blocks // {len(lay.groups)} KV-cache group{'s' if len(lay.groups) > 1 else ''} "
            f"x block size {lay.block_size:,}")


def _layout_words(s: _Setup) -> str:
    lay = s.layout
    per_layer = (f"{lay.group_size} layers x {lay.page_bytes:,} B page" if lay.page_bytes
                 else f"{lay.group_size} layers' pages summed")
    return (f"bytes per block = {per_layer} = {lay.bytes_per_block:,} B (TP={s.tp}, kv "
            f"{s.kv_dtype}, block {lay.block_size:,})")


def _budget_blocks(s: _Setup, lo: int, hi: int) -> list[int]:
    b = s.layout.bytes_per_block
    return list(range(max(0, lo) // b, max(0, hi) // b + 1))


def _v1_capacity(c: _Checks, s: _Setup, avail: Found | None, exact: int | None,
                 tokens: Found | None, conc: Found | None, capacity: Found | None,
                 pairing: str) -> None:
    """Check one rank's (or, in 0.33, the engine's) tokens and concurrency lines."""
    targets = [f for f in (capacity, tokens, conc) if f is not None]
    why = s.why_not if s.layout is None else "no \"Available KV cache memory\" line to " \
        "start from" if avail is None and exact is None else ""
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
        while i < len(found) and found[i].kind in ("available", "loading", "graphs"):
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
        if s.rules == "v1-0.33" and len(caps) == 1 and len(avail) > 1:
            # one line for the engine: the smallest rank's blocks (all ranks are cut to it)
            low = min(avail, key=lambda a: _frac(a.values[0]))
            _v1_capacity(c, s, low, exact.get((run, low.line.rank)), caps[0][1], caps[0][2],
                         caps[0][0], "vLLM cuts every rank to the smallest")
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


def _exact_agrees(n: int | None, avail: Found) -> bool:
    return n is not None and _round2_matches(avail.values[0], Fraction(n, GiB))


def _explain_available(c: _Checks, f: Found, s: _Setup) -> None:
    x = _frac(f.values[0])
    if x < 0:
        c.add(f, "Available KV cache memory", f.values[0] + " GiB", "0 blocks",
              "negative: weights + activation peak + non-torch memory exceed "
              "total x gpu_memory_utilization, so no block fits and vLLM refuses to start", True)
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
    u = _frac(util)
    c.add(f, "memory vLLM may use", printed + " GiB", f"{_g(lo * u)} to {_g(hi * u)} GiB",
          f"total_gpu_memory {total} GiB x gpu_memory_utilization {util}",
          _near(printed, lo * u, hi * u))


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
        elif f.kind == "available":
            _explain_available(c, f, s)


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
    by_kind: dict[str, list[int]] = {}
    for g in s.layout.groups:
        n = by_kind.setdefault(g.kind, [0, 0])
        n[0] += g.layers
        n[1] += g.slots
    expected = [(slots - n, Fraction(100 * (slots - n), n)) for n, slots in by_kind.values()
                if slots > n]
    for i, f in enumerate(lines):
        if i < len(expected):
            pad, pct = expected[i]
            c.add(f, "padding layers", f"{f.values[0]} ({f.values[1]}%)",
                  f"{pad} ({float(pct):.2f}%)", f"groups of {s.layout.group_size} layers: "
                  f"slots - layers of that kind", int(f.values[0]) == pad and
                  _round2_matches(f.values[1], pct))
        else:
            c.add(f, "padding layers", f.values[0], "0", f"groups of {s.layout.group_size} "
                  "layers leave no empty slot", False)


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


def explain(log: VllmLog, model: ModelSpec | None, *, tp: int | None = None,
            kv_dtype: str | None = None, gpu: str | None = None,
            weights_bytes: int | None = None) -> Explanation:
    """Every recognised number of ``log`` worked out again (see the module docstring).

    model: the model the log serves (None: only the memory arithmetic is checked).
    tp, kv_dtype, gpu: what the log does not say (its engine line wins over nothing, a
    given value wins over the log). weights_bytes: kvlib's checkpoint size, shown beside
    "Model loading took" (information, never a failure).
    """
    notes: list[str] = []
    s = _setup(log, model, tp=tp, kv_dtype=kv_dtype, gpu=gpu, notes=notes)
    if s.layout is None and s.v0_block_bytes is None and s.why_not:
        notes.append(f"not explained without a layout: {s.why_not}")
    for line in (s.layout.notes if s.layout else ()):
        notes.append(line)
    c = _Checks()
    if s.rules == "v0":
        _explain_v0(log, c, s)
    else:
        _pair_v1(log, c, s)
    avail_by_rank: dict[int | None, Found] = {}
    for f in log.found:
        if f.kind == "available":
            avail_by_rank.setdefault(f.line.rank, f)
        elif f.kind in ("free_010", "free_033"):
            _explain_free(c, f, avail_by_rank, f.kind)
    _explain_mamba(log, c, s, model)
    _explain_padding(log, c, s)
    _explain_loading(log, c, s, weights_bytes)
    _explain_graphs(log, c)
    failed = [f for f in log.found if f.kind == "failed"]
    negative = [f for f in log.found if f.kind == "available" and _frac(f.values[0]) < 0]
    for f in failed:
        c.add(f, "engine start", "failed",
              "expected" if negative else "-",
              f"the KV budget was negative (line {negative[0].line.number})" if negative
              else "", True if negative else None,
              "" if negative else "no negative budget before it: another cause")
    checks = sorted(c.out, key=lambda x: x.line.number)
    settings = {"tensor_parallel_size": s.tp, "kv_dtype": s.kv_dtype,
                "block_size": s.block_size, "version": log.version, "rules": s.rules}
    if s.layout is not None:
        settings.update(bytes_per_block=s.layout.bytes_per_block,
                        kv_cache_groups=len(s.layout.groups),
                        padding_layers=s.layout.padding_layers,
                        blocks_per_request=s.layout.blocks_per_request)
    if s.v0_block_bytes is not None:
        settings["bytes_per_block"] = s.v0_block_bytes
    return Explanation(tuple(checks), s.rules, model.name if model else None, settings,
                       tuple(notes))
