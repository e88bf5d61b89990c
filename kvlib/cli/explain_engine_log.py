"""``kvlib explain-log`` for SGLang's and TensorRT-LLM's start-up lines (issue 35; the checks
are :mod:`kvlib.serving.engines.log`). Verdict and exit status as for vLLM's logs:
"explained", 0, when a number was worked out again and none disagrees; 1 when one disagrees
(one line on stderr each) or nothing was checked; 2 when the log or the model cannot be read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kvlib.core.dtypes import bytes_per_element
from kvlib.serving.engines import detect_engine, explain_engine_log
from kvlib.serving.engines.sglang import log as sglang_log

__all__ = ["log_text", "run_engine_log"]

_STDIN: list[str] = []  # standard input, read once: both readers may ask for it

_STATUS = {"ok": "ok", "mismatch": "DISAGREES", "info": "info"}


def log_text(path: str) -> str:
    """The text of the log at ``path``, or of standard input for ``-`` (read once, bytes that
    are not UTF-8 replaced). OSError where there is no such file."""
    if path != "-":
        return Path(path).read_text(errors="replace")
    if not _STDIN:
        _STDIN.append(sys.stdin.buffer.read().decode("utf-8", errors="replace")
                      if hasattr(sys.stdin, "buffer") else sys.stdin.read())
    return _STDIN[0]


_NO_KV = {
    "sglang": "an SGLang start-up log with no KV-cache line kvlib reads: line {line} is SGLang's "
              "({what}), but no line reports its pool ('KV Cache is allocated. #tokens: N, K "
              "size: X GB, V size: Y GB', '... KV size: X GB', 'max_total_num_tokens=N')",
    "trtllm": "a TensorRT-LLM start-up log with no KV-cache line kvlib reads: line {line} is "
              "TensorRT-LLM's ({what}), but no line reports its KV cache ('[MemUsageChange] "
              "Allocated X GiB for max tokens in paged KV cache (N)', 'Estimated max memory in KV "
              "cache', 'Peak memory during memory usage profiling ... available KV cache memory', "
              "'Number of blocks in KV cache primary pool', 0.5-0.8's 'Allocate N bytes for k/v "
              "cache')",
}


def _refuse_unread(path: str, text: str) -> None:
    """Return where vLLM's reader reads ``text``; else raise ValueError (exit 2) naming the
    engine whose log it is by its own words (SGLang's, TensorRT-LLM's) with no KV line kvlib
    reads, or, for text that is no engine's, naming the three; vLLM's own refusals (text that
    quotes its words) stand."""
    from kvlib.serving.engines import log_signs
    from kvlib.serving.engines.vllm.log import read_log_text

    if path != "-" and "\ufffd" in text:
        try:
            Path(path).read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return  # vLLM's reader refuses it: not a text file
    try:
        read_log_text(text)
        return
    except ValueError as err:
        vllm_err = str(err)
    sign = log_signs(text)
    if sign is not None:
        engine, line, what = sign
        raise ValueError(f"{path}: " + _NO_KV[engine].format(line=line, what=what))
    if vllm_err.startswith("not a vLLM start-up log"):
        raise ValueError(f"{path}: not a vLLM start-up log, nor an SGLang or TensorRT-LLM one: "
                         "no line of it reports KV-cache memory, blocks, tokens or concurrency")
    raise ValueError(f"{path}: {vllm_err}")


def run_engine_log(args) -> int | None:
    """Explain ``args.log`` if it is an SGLang or TensorRT-LLM log; None otherwise."""
    try:
        text = log_text(args.log)
    except OSError:
        return None  # vLLM's reader names the missing file
    engine = detect_engine(text)
    if engine is None:
        _refuse_unread(args.log, text)
        return None
    model, source = None, "not given (--model): self-consistency only"
    if args.model is not None:
        from kvlib.models.catalog import load_model

        model, source = load_model(args.model), "--model"
    kv = int(bytes_per_element(args.kv_dtype)) if args.kv_dtype else None
    tp, page, said = args.tp or 1, 1, []
    if engine == "sglang":
        tp, page, kv, said, found = sglang_log.resolve(
            text, args.tp, getattr(args, "page_size", None), kv, args.kv_dtype)
        if model is None and found.get("model_path"):
            from kvlib.models.catalog import load_model

            try:
                model = load_model(found["model_path"])
                source = "the log's server_args model_path"
            except (ValueError, FileNotFoundError, KeyError, OSError):
                said.append(f"model {found['model_path']!r} (server_args): not one kvlib reads; "
                            "pass --model")
    e = explain_engine_log(text, model, tp=tp, page=page, kv_bytes=kv)
    name = {"sglang": "SGLang", "trtllm": "TensorRT-LLM"}[engine]
    if args.json:
        print(json.dumps({"log": args.log, "engine": engine,
                          "model": model.name if model else None, "model_from": source,
                          "tp": tp, "page_size": page, "settings": said,
                          "checks": [c.__dict__ for c in e.checks],
                          "verdict": {"verdict": e.verdict, "ok": e.ok,
                                      "explained": sum(c.status == "ok" for c in e.checks),
                                      "disagree": len(e.mismatches)}}, indent=2))
    else:
        out = [f"{name} start-up log {args.log}",
               f"  model: {model.name + ' (' + source + ')' if model else source}, "
               f"TP={'unknown' if tp is None else tp}"
               + (f", page {page}" if engine == "sglang" else "")]
        out += [f"  setting: {w}" for w in said]
        last = None
        for c in e.checks:
            if c.line != last:
                out.append(f"line {c.line:>5}  {c.text.strip()[:110]}")
                last = c.line
            out.append(f"  {_STATUS[c.status]:<12} {c.quantity}: log {c.printed}, kvlib {c.kvlib}")
            if c.how:
                out.append(f"               = {c.how}")
        ok = sum(c.status == "ok" for c in e.checks)
        out.append(f"verdict: {e.verdict}: {ok} number(s)"
                   f" agree, {len(e.mismatches)} disagree, "
                   f"{sum(c.status == 'info' for c in e.checks)} shown as information")
        print("\n".join(out))
    for c in e.mismatches:
        print(f"kvlib explain-log: line {c.line} ({c.quantity}): the log prints {c.printed}, "
              f"kvlib {c.kvlib}", file=sys.stderr)
    if not e.checked:
        print(f"kvlib explain-log: {args.log}: nothing checked: no number of it could be "
              "worked out again (" + ("pass what the log leaves unsaid, "
                                       "e.g. --tp or --kv-dtype" if model else
                                       "pass --model") + ")", file=sys.stderr)
    return 0 if e.ok else 1
