"""``kvlib explain-log LOG``: every number of a vLLM start-up log, worked out again (issue 24).

    kvlib explain-log vllm.log
    kvlib explain-log vllm.log --model path/to/config.json --json

The model comes from the log's engine-config line (``model='...'``) or ``--model``; what
the log does not say (``--tp``, ``--kv-dtype``, ``--gpu``) may be given. The parsing and
the checks are :mod:`kvlib.serving.engines.vllm.log`; this module prints them.

Verdict and exit status: "explained", 0, when at least one number was worked out again and
every one agrees with kvlib within the rounding of its printed digits; "DISAGREES", 1, when
one disagrees (one line on stderr for each, naming the log line and both values); "nothing
checked", 1, when no number could be worked out (lines recognised, but none recomputed: a
missing model, say; one line on stderr says so); 2 when the file is not a start-up log, or
the log, a flag or the model cannot be read (one line on stderr, naming the file).
"""

from __future__ import annotations

import json
import re
import sys

from kvlib.cli.args import count, kv_dtype
from kvlib.serving.engines.vllm.log import Explanation, VllmLog, explain, model_name, read_log
from kvlib.serving.gpus import CATALOG, get_gpu

__all__ = ["add_parser", "run", "to_json", "render"]

_STATUS = {"ok": "ok", "mismatch": "DISAGREES", "info": "info", "unexplained": "not explained"}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "explain-log", help="check every number of a vLLM start-up log against kvlib",
        description="Read a vLLM start-up log (V1 engines 0.8 to 0.34, V0 'Memory profiling' "
                    "and '# GPU blocks' lines) and work out each KV-cache number it prints "
                    "with kvlib's formulas: memory budget, blocks, tokens, concurrency, "
                    "padding layers, mamba block sizes, the start-up failure 'KV cache is "
                    "needed, which is larger than the available KV cache memory' (and what "
                    "would make it fit). Exit status 1 when one disagrees.")
    p.add_argument("log", help="the log file, or - to read it from standard input (docker logs "
                              "NAME 2>&1 | kvlib explain-log -)")
    p.add_argument("--model", default=None, metavar="NAME_OR_CONFIG",
                   help="a bundled model or a config.json (default: the model the log's "
                        "engine-config line names)")
    p.add_argument("--tp", type=count, default=None,
                   help="tensor_parallel_size, when the log does not print it (a flag "
                        "given wins over the log; the output says which)")
    p.add_argument("--kv-dtype", default=None, type=kv_dtype, metavar="DTYPE",
                   help="kv cache dtype, when the log does not print it (default: the "
                        "log's kv_cache_dtype, 'auto' read as the model dtype)")
    p.add_argument("--gpu", default=None,
                   help=f"the GPU, where vLLM's layout depends on it ({', '.join(CATALOG)})")
    p.add_argument("--block-size", type=count, default=None, metavar="TOKENS",
                   help="the KV-cache block, when the log does not print it (default: the "
                        "log's, else the backend's: CPU 128, TPU 256, else the release's)")
    p.add_argument("--page-size", type=count, default=None, metavar="TOKENS",
                   help="SGLang's page size, when its log's server_args do not print it "
                        "(default: the log's page_size, else 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _message(text: str, width: int = 120) -> str:
    """A log line without its prefix (process, level, time, source file), trimmed."""
    m = re.search(r"\[[\w./-]+(?::\d+)?\]\s?(.*)$", text) or re.search(r"\.py:\d+\]\s?(.*)$",
                                                                       text)
    body = (m.group(1) if m else text).strip()
    return body if len(body) <= width else body[:width - 3] + "..."


def _verdict(e: Explanation) -> dict:
    tally = {k: sum(c.status == k for c in e.checks) for k in _STATUS}
    return {"explained": tally["ok"], "information": tally["info"],
            "disagree": tally["mismatch"], "not_explained": tally["unexplained"],
            "verdict": e.verdict, "ok": e.ok}


def to_json(path: str, log: VllmLog, e: Explanation, source: str) -> dict:
    """The ``--json`` object: the settings used, one entry per check, the verdict."""
    return {
        "log": path,
        "model": e.model,
        "model_from": source,
        "vllm_version": log.version,
        "settings": e.settings,
        "notes": list(e.notes),
        "checks": [{"line": c.line.number, "lines": c.line.spans, "rank": c.line.rank,
                    "text": _message(c.line.text, 400),
                    "quantity": c.quantity, "printed": c.printed, "kvlib": c.kvlib,
                    "formula": c.formula, "status": c.status, "reason": c.reason}
                   for c in e.checks],
        "verdict": _verdict(e),
    }


def render(path: str, log: VllmLog, e: Explanation, source: str) -> str:
    """The readable explanation: the settings, then each line with kvlib's figure and the
    formula with its numbers, then a verdict line."""
    st = e.settings
    layout = ""
    if "bytes_per_block" in st:
        layout = f", {st['bytes_per_block']:,} B per block"
    if "kv_cache_groups" in st:
        layout += (f", {st['kv_cache_groups']} KV-cache group"
                   f"{'s' if st['kv_cache_groups'] != 1 else ''}, {st['padding_layers']} padding "
                   f"layers, {st['blocks_per_request']:,} blocks per request")
    lines = [
        f"vLLM start-up log {path}",
        f"  model: {e.model or 'none'} ({source})",
        f"  vLLM {log.version or 'version not printed'}, rules {e.rules}; "
        f"TP={st['tensor_parallel_size']}, kv {st['kv_dtype'] or '-'}, block "
        f"{st['block_size']:,}{layout}",
    ]
    lines += [f"  note: {n}" for n in e.notes]
    last = None
    for c in e.checks:
        if c.line.number != last:
            lines += ["", f"line {c.line.number:>5}  {_message(c.line.text)}"]
            if c.line.spans > 1:
                lines.append(f"{'':<12}(lines {c.line.number}-{c.line.number + c.line.spans - 1}"
                             " joined: the paste wrapped one record)")
            last = c.line.number
        head = f"  {_STATUS[c.status]:<14} {c.quantity}: log {c.printed}"
        if c.kvlib and c.kvlib != "-":
            head += f", kvlib {c.kvlib}"
        lines.append(head)
        if c.formula:
            lines.append(f"  {'':<14} = {c.formula}")
        if c.reason:
            lines.append(f"  {'':<14} ({c.reason})")
    v = _verdict(e)
    lines += ["", f"verdict: {e.verdict}: {v['explained']} "
                  f"number(s) agree, {v['disagree']} disagree, {v['information']} shown as "
                  f"information, {v['not_explained']} recognised but not explained"]
    return "\n".join(lines)


def _load(args, log: VllmLog):
    """(model or None, where it came from, kvlib's checkpoint bytes or None)."""
    from kvlib.models.catalog import bundled_config, bundled_name, load_model

    name, source = args.model, "--model"
    if name is None:
        name, source = model_name(log), "the log's engine-config line"
        if name is None:
            fail = next((f for f in log.found if f.kind == "kv_failure"), None)
            if fail is not None:
                raise ValueError(
                    f"line {fail.line.number} is vLLM's start-up failure ({fail.values[1]} GiB "
                    f"for {int(fail.values[0]):,} tokens) and the log names no model: pass "
                    "--model NAME_OR_CONFIG (and --gpu, --tp, --kv-dtype where they differ "
                    "from one GPU's bf16 cache)")
            return None, "the log names no model; only the memory arithmetic is checked", None
        try:
            model = load_model(name)
        except (ValueError, FileNotFoundError) as e:
            raise ValueError(f"the log's model {name!r} is not one kvlib can read ({e}); "
                             "pass --model NAME_OR_CONFIG") from None
    else:
        model = load_model(name)
    config = bundled_config(bundled_name(name)) if bundled_name(name) else name
    try:
        from kvlib.models.quantization import checkpoint_bytes
        weights = checkpoint_bytes(config)
    except (ImportError, ValueError, KeyError, TypeError, FileNotFoundError):
        weights = None  # information only: a checkpoint kvlib cannot count is left out
    return model, source, weights


def run(args) -> int:
    if args.gpu is not None:
        get_gpu(args.gpu)  # a bad name: one line, exit 2
    from kvlib.cli.explain_engine_log import run_engine_log

    done = run_engine_log(args)  # an SGLang or TensorRT-LLM log (issue 35), else None
    if done is not None:
        return done
    if args.log == "-":  # what run_engine_log read from standard input, read as vLLM's
        from kvlib.cli.explain_engine_log import log_text
        from kvlib.serving.engines.vllm.log import read_log_text

        log = read_log_text(log_text("-"))
    else:
        log = read_log(args.log)
    model, source, weights = _load(args, log)
    e = explain(log, model, tp=args.tp, kv_dtype=args.kv_dtype, gpu=args.gpu,
                weights_bytes=weights, block_size=args.block_size)
    print(json.dumps(to_json(args.log, log, e, source), indent=2) if args.json
          else render(args.log, log, e, source))
    for c in e.mismatches:
        print(f"kvlib explain-log: line {c.line.number} ({c.quantity}): the log prints "
              f"{c.printed}, kvlib {c.kvlib}", file=sys.stderr)
    if not e.checked:
        print(f"kvlib explain-log: {args.log}: nothing checked: no number of it could be "
              "worked out again" + (f" ({e.notes[-1]})" if e.notes else ""), file=sys.stderr)
    return 0 if e.ok else 1
