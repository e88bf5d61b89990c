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


def run_engine_log(args) -> int | None:
    """Explain ``args.log`` if it is an SGLang or TensorRT-LLM log; None otherwise."""
    try:
        text = log_text(args.log)
    except OSError:
        return None  # vLLM's reader names the missing file
    engine = detect_engine(text)
    if engine is None:
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
