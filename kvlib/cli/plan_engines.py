"""``kvlib plan --engine sglang|trtllm|all``: the same model and GPUs under SGLang's or
TensorRT-LLM's budget, pages and pools (:mod:`kvlib.serving.engines`, docs/engines.md), or
under every engine side by side, an engine a column (``--engine all``).

    kvlib plan llama-3.1-8b --gpu H200 --context 8192 --engine sglang
    kvlib plan llama-3.1-70b --gpu H200 --gpus 4 --tp 4 --engine trtllm --trtllm-peak-gib 6
    kvlib plan qwen3-32b --gpu H100-80GB --gpus 4 --tp 2 --context 32K --engine all

Every engine's plan opens with the same line and ends with the same totals, and its --json
has the same keys (:data:`~kvlib.serving.engines.answer.COMMON_KEYS`); ``--gpus`` means the
same for all: replicas = GPUs / TP, sequences in all = replicas x sequences per replica.

Exit status, as under vLLM: 0 when a request of the context fits; 1 when none does, the
weights leaving the engine no memory for the KV cache included (the sizes that do not fit on
stdout and in one line on stderr, "kvlib plan: does not fit: ..."); 2 on a bad flag or a model
whose pool rule kvlib has not traced for that engine (one line naming it). With ``--engine
all``: 0 when at least one engine plans a request of the context, 1 when engines plan (or do
not fit) but none holds one, 2 when every engine refuses (each refusal is in its column).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

from kvlib.cli.args import count, parse_count, unit_fraction
from kvlib.cli.model_folder import stored_weights_of
from kvlib.cli.plan_header import kv_label, kv_why_lines
from kvlib.core.units import fmt_bytes
from kvlib.serving.engines.answer import (
    ENGINE_NAMES,
    DoesNotFit,
    engine_title,
    first_line,
    fmt_fraction,
    plural,
)

__all__ = ["add_engine_flags", "run_engine"]

GiB = 1 << 30
# TensorRT-LLM's releases kvlib traces (kvlib.serving.engines.trtllm.planner.RELEASES: the
# pinned commit, the default, then 1.1.0rc3), as --trtllm-release names them; kept here so
# that --help does not import the engine
_TRTLLM_RELEASES = ("0004396", "1.1.0rc3")
# vLLM's flags, meaningless for the other engines (refused by name there)
_VLLM_ONLY = ("gpu_mem_util", "block_size", "kv_cache_memory", "overhead_gib",
              "activation_peak_gib", "graph_pool_gib", "non_torch_gib", "shared_prefix")


def add_engine_flags(p) -> None:
    p.add_argument("--engine", default="vllm", choices=["vllm", "sglang", "trtllm", "all"],
                   help="the serving engine whose budget, pages and pools apply: vllm "
                        "(default), sglang (0.5.23), trtllm (TensorRT-LLM, PyTorch backend), "
                        "or all: one table, an engine a column, each engine's flags to it")
    p.add_argument("--mem-fraction-static", type=unit_fraction, default=None, metavar="F",
                   help="SGLang: mem_fraction_static (default: SGLang's own, from the GPU's "
                        "memory, chunked prefill size, TP and CUDA graphs)")
    p.add_argument("--page-size", type=count, default=None,
                   help="SGLang: tokens per page (default: SGLang's, 1 on CUDA; 64 where its "
                        "SM100 attention backend forces it)")
    p.add_argument("--other-gib", default=None,
                   help="SGLang: memory taken after the weights and before the KV pool "
                        "(default 0)")
    p.add_argument("--free-gpu-memory-fraction", type=unit_fraction, default=None,
                   metavar="F", help="TensorRT-LLM: free_gpu_memory_fraction (default 0.9)")
    p.add_argument("--tokens-per-block", type=count, default=None,
                   help="TensorRT-LLM: tokens per KV block (default 32)")
    p.add_argument("--trtllm-peak-gib", default=None,
                   help="TensorRT-LLM: its profiling peak less the weights and its temporary "
                        "cache (CUDA context, activations, CUDA graphs, NCCL; default 4.5)")
    p.add_argument("--trtllm-release", default=None, choices=_TRTLLM_RELEASES,
                   help="TensorRT-LLM: the release whose rules apply: the commit kvlib reads "
                        f"({_TRTLLM_RELEASES[0]}, the default) or {_TRTLLM_RELEASES[1]}, whose "
                        "logs size every windowed layer at full length")
    p.add_argument("--trtllm-max-batch-size", type=count, default=None, metavar="N",
                   help="TensorRT-LLM: max_batch_size, the most requests at once (default "
                        "2048, trtllm-serve's; a Mamba hybrid reserves a state slot for each "
                        "before any token)")


def _gib_flag(flag: str, text: str) -> int:
    try:
        value = Fraction(str(text).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{flag} must be a number of GiB, got {text!r}") from None
    if value < 0:
        raise ValueError(f"{flag} must not be negative, got {text!r}")
    return round(value * GiB)


def _options(args, engine: str | None = None) -> dict:
    """The engine's own options from the flags; a flag of another engine is refused by name,
    but under ``--engine all`` (``engine`` given), where each engine takes its own."""
    strict = engine is None
    engine = engine or args.engine
    for key in _VLLM_ONLY if strict else ():
        if getattr(args, key, None) is not None:
            flag, value = "--" + key.replace("_", "-"), getattr(args, key)
            value = f"{float(value):g}" if isinstance(value, Fraction) else value
            raise ValueError(f"{flag} {value}: a vLLM option; --engine {engine} "
                             "takes " + ("--mem-fraction-static, --page-size, --in-use-gib, "
                                         "--other-gib" if engine == "sglang" else
                                         "--free-gpu-memory-fraction, --tokens-per-block, "
                                         "--trtllm-peak-gib, --trtllm-release, "
                                         "--trtllm-max-batch-size"))
    mine = {"sglang": ("mem_fraction_static", "page_size", "in_use_gib", "other_gib"),
            "trtllm": ("free_gpu_memory_fraction", "tokens_per_block", "trtllm_peak_gib",
                       "trtllm_release", "trtllm_max_batch_size")}[engine]
    for key in ("mem_fraction_static", "page_size", "other_gib", "free_gpu_memory_fraction",
                "tokens_per_block", "trtllm_peak_gib", "in_use_gib", "trtllm_release",
                "trtllm_max_batch_size"):
        if strict and key not in mine and getattr(args, key, None) is not None:
            raise ValueError(f"--{key.replace('_', '-')} {getattr(args, key)}: not an option "
                             f"of --engine {engine}")
    if engine == "sglang":
        out = {"mem_fraction_static": args.mem_fraction_static, "page_size": args.page_size}
        if args.in_use_gib is not None:
            out["in_use_bytes"] = _gib_flag("--in-use-gib", args.in_use_gib)
        if args.other_gib is not None:
            out["other_bytes"] = _gib_flag("--other-gib", args.other_gib)
        return out
    out = {"free_gpu_memory_fraction": args.free_gpu_memory_fraction,
           "tokens_per_block": args.tokens_per_block,
           "release": getattr(args, "trtllm_release", None),
           "max_batch_size": getattr(args, "trtllm_max_batch_size", None)}
    if args.trtllm_peak_gib is not None:
        out["other_peak_bytes"] = _gib_flag("--trtllm-peak-gib", args.trtllm_peak_gib)
    return out


def _text(d: dict, rule: str, dep) -> str:
    def both(n):
        return f"{fmt_bytes(n, 'GB'):>11} = {fmt_bytes(n, 'GiB')}"

    own = d[d["engine"]]
    w = 34
    if own.get("kv_dtype_auto"):  # the engine resolves auto itself (SGLang's DeepSeek V4)
        lines = [first_line({**d, "kv_dtype": f"{d['kv_dtype']} (auto: "
                                              f"{own['kv_dtype_auto']})"}, rule)]
    else:
        lines = [first_line({**d, "kv_dtype": kv_label(d["kv_dtype"], dep.kv_dtype,
                                                       dep.kv_dtype_why)}, rule),
                 *kv_why_lines(d["kv_dtype"], dep.kv_dtype_why)]
    for t in own["terms"]:
        lines.append(f"  {t['label']:<{w}}{both(t['value'])}   ({t['source']})")
    unit = "page" if d["engine"] == "sglang" else "block"
    lines.append(f"  {'bytes per token (cell)':<{w}}{d['kv_bytes_per_token_per_gpu']:>11,} B")
    label = f"KV tokens ({unit} {d['page_tokens']})"
    lines.append(f"  {label:<{w}}{d['kv_tokens_per_gpu']:>11,}")
    if own.get("swa_tokens") is not None:
        lines.append(f"  {'sliding-window pool tokens':<{w}}{own['swa_tokens']:>11,} "
                     f"({own['swa_bytes_per_token']:,} B per token)")
    if own.get("max_running_requests") is not None:
        lines.append(f"  {'max_running_requests':<{w}}{own['max_running_requests']:>11,}")
    lines += [f"  {'sequences per replica':<{w}}{d['max_sequences_per_replica']:>11,} "
              f"(requests of {d['context']:,} tokens at once on one TP group)",
              f"  {'sequences in all':<{w}}{d['max_sequences']:>11,} "
              f"({plural(d['replicas'], 'replica')} x {d['max_sequences_per_replica']:,})"]
    lines.append(f"  differs from vLLM: {d['differs_from_vllm']}")
    if dep.kv_dtype_why is not None:
        lines.append(f"  note: kv dtype: {dep.kv_dtype_why}, as vLLM {_vllm_auto()} resolves "
                     f"auto (--kv-dtype names another)")
    lines += [f"  assumed: {a}" for a in d["assumptions"]]
    lines += [f"  note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def _engine_deployment(args):
    """The :class:`Deployment` SGLang and TensorRT-LLM plan from (no vLLM option in it), and
    the context."""
    from kvlib.models.catalog import bundled_name, load_model
    from kvlib.models.readers.fields import load_config
    from kvlib.serving.engines.vllm.deployment import Deployment
    from kvlib.serving.gpus import get_gpu

    model = load_model(args.model)
    hbm = _gib_flag("--hbm-gib", args.hbm_gib) if args.hbm_gib is not None else None
    params = None
    if args.params is not None:
        params = parse_count(args.params)
    deployment = Deployment(
        model, get_gpu(args.gpu, hbm_bytes=hbm), gpus=args.gpus, tp=args.tp,
        kv_dtype=args.kv_dtype, weight_dtype=args.weight_dtype, params=params,
        draft=load_model(args.draft) if args.draft else None, scales=args.kv_scales,
        dcp=args.dcp, memory=args.memory,
        config=None if bundled_name(args.model) else load_config(args.model),
        stored=stored_weights_of(args.model))
    context = args.context or model.max_position_embeddings
    if context is None:
        raise ValueError(f"{model.name}: the config gives no max_position_embeddings; "
                         "pass --context")
    return deployment, context


def _vllm_auto() -> str:
    from kvlib.serving.engines.vllm.defaults import VLLM_RELEASES

    return VLLM_RELEASES[0]


def _plan(args, engine: str, with_deployment: bool = False):
    """``engine``'s :class:`EnginePlan` for the flags (SGLang, TensorRT-LLM); with
    ``with_deployment``, (the plan, its Deployment)."""
    from kvlib.serving.engines import engine_plan

    options = _options(args, None if args.engine != "all" else engine)
    deployment, context = _engine_deployment(args)
    e = engine_plan(deployment, context, engine,
                    **{k: v for k, v in options.items() if v is not None})
    return (e, deployment) if with_deployment else e


def does_not_fit(err: ValueError) -> bool:
    """Whether an engine's planner refused because the deployment does not fit (the weights
    leave no memory for the KV cache: :class:`~kvlib.serving.engines.answer.DoesNotFit`), not
    because of its input."""
    return isinstance(err, DoesNotFit)


_BUDGET_RULE = {"sglang": "mem_fraction_static", "trtllm": "free_gpu_memory_fraction"}


def _no_fit_json(args, engine: str, err: ValueError) -> dict:
    """An engine's ``--json`` where the deployment does not fit: every common key
    (:data:`~kvlib.serving.engines.answer.COMMON_KEYS`), the deployment's as its plan would give
    them (GPU memory, weights per GPU), no budget, pool or sequence, ``fits`` false, and the
    sizes that do not fit (``does_not_fit``; ``reason`` as vLLM's)."""
    dep, context = _engine_deployment(args)
    replicas = dep.gpus // dep.tp
    return {"engine": engine, "release": _release(engine, args), "model": dep.model.name,
            "gpu": dep.gpu.name, "gpus": dep.gpus, "tp": dep.tp, "replicas": replicas,
            "context": context, "kv_dtype": dep.kv_cache_dtype, "weight_dtype": dep.weights_label,
            "total_memory_bytes_per_gpu": dep.total_memory_bytes_per_gpu,
            "weights_bytes_per_gpu": dep.weights_bytes_per_gpu, "kv_budget_bytes_per_gpu": None,
            "budget_rule": _BUDGET_RULE[engine], "budget_base": None,
            "kv_bytes_per_token_per_gpu": None, "page_tokens": None, "pools": [],
            "window_pool": None, "state_pool": None, "kv_tokens_per_gpu": 0,
            "max_sequences_per_replica": 0, "max_sequences": 0,
            "differs_from_vllm": None, "fits": False, "assumptions": [], "notes": [],
            "does_not_fit": str(err), "reason": f"does not fit: {err}"}


def run_engine(args) -> int:
    try:
        e, dep = _plan(args, args.engine, with_deployment=True)
    except ValueError as err:
        if not does_not_fit(err):
            raise
        d = _no_fit_json(args, args.engine, err)
        print(json.dumps(d, indent=2) if args.json else
              f"{d['model']} on {d['gpus']} x {d['gpu']}, TP={d['tp']}, context "
              f"{d['context']:,}, {engine_title(args.engine, d['release'])}: does not fit\n"
              f"  {err}\n  {'sequences in all':<34}{0:>11}")
        print(f"kvlib plan: {d['reason']}", file=sys.stderr)
        return 1
    d = e.to_dict()
    print(json.dumps(d, indent=2, default=str) if args.json else _text(d, e.rule_text, dep))
    if e.sessions == 0:
        print(f"kvlib plan: {e.tokens:,} KV tokens hold no request of {e.context:,} tokens "
              f"under --engine {args.engine}", file=sys.stderr)
        return 1
    return 0


def _release(engine: str, args) -> str:
    """The release an engine's refusal names, as its plan would (the flags' choice)."""
    from kvlib.serving.engines.vllm.defaults import vllm_release

    if engine == "vllm":
        return vllm_release(args.vllm)
    if engine == "sglang":
        from kvlib.serving.engines.sglang.defaults import RELEASE

        return RELEASE
    from kvlib.serving.engines.trtllm.planner import release_label, resolve_release

    return release_label(resolve_release(getattr(args, "trtllm_release", None)))


def _gib(n: int) -> str:
    return fmt_bytes(n, "GiB")


def _fraction(d: dict) -> str:
    """The fraction an engine's budget takes, by the engine's own option name."""
    if d["engine"] == "vllm":
        return (f"gpu_memory_utilization {fmt_fraction(d['gpu_mem_util'])}"
                if d["budget_rule"] != "kv_cache_memory_bytes" else "kv_cache_memory_bytes")
    return f"{d['budget_rule']} {fmt_fraction(d[d['engine']]['fraction']).split(' (')[0]}"


# the table's rows: label, and the cell from an engine's JSON
_ROWS = (
    ("KV budget per GPU", lambda d: _gib(d["kv_budget_bytes_per_gpu"])),
    ("budget's fraction", lambda d: _fraction(d)),
    ("bytes per token per GPU",
     lambda d: " + ".join(f"{p['bytes_per_token']:,}" for p in d["pools"]) + " B"),
    ("page (tokens)", lambda d: f"{d['page_tokens']:,}"),
    ("pools", lambda d: " + ".join(p["pool"] for p in d["pools"])),
    ("KV tokens per GPU", lambda d: " + ".join(f"{p['tokens']:,}" for p in d["pools"])),
    ("sequences per replica", lambda d: f"{d['max_sequences_per_replica']:,}"),
    ("sequences in all", lambda d: f"{d['max_sequences']:,}"),
)


def all_json(args, vllm_json) -> dict:
    """``kvlib plan --engine all --json``: each engine's plan as its own ``--json`` prints it
    (``vllm_json(args)``: vLLM's, :func:`kvlib.cli.plan.vllm_json`), or ``{"engine",
    "release", "refused"}`` where it refuses."""
    from kvlib.serving.engines import ENGINES

    plans, vllm = {}, None
    for engine in ENGINES:
        try:
            if engine == "vllm":
                d = vllm_json(args)
                vllm = d
            else:
                e = _plan(args, engine)
                d = e.to_dict(vllm)
        except ValueError as err:
            d = (_no_fit_json(args, engine, err) if does_not_fit(err) else
                 {"engine": engine, "release": _release(engine, args), "refused": str(err)})
        plans[engine] = d
    return {"engines": plans}


def _table(out: dict, args) -> str:
    plans = list(out["engines"].values())
    planned = [d for d in plans if "refused" not in d and "does_not_fit" not in d]
    head = planned[0] if planned else None
    cols = [[engine_title(d["engine"], d["release"])] + (
        ["refused (below)"] + ["-"] * (len(_ROWS) - 1) if "refused" in d
        else ["does not fit (below)"] + ["-"] * (len(_ROWS) - 3) + ["0", "0"]
        if "does_not_fit" in d else [cell(d) for _, cell in _ROWS]) for d in plans]
    w0 = max(len(label) for label, _ in _ROWS) + 2
    widths = [max(len(c) for c in col) + 3 for col in cols]
    lines = []
    if head is not None:
        label = (kv_label(head["kv_dtype"], head["kv_element_dtype"], head["kv_dtype_why"])
                 if head["engine"] == "vllm" else head["kv_dtype"])
        lines.append(first_line({**head, "kv_dtype": label}, "").rsplit(", ", 1)[0]
                     + ", engines side by side")
    else:  # every engine refuses: the deployment as given
        context = f", context {args.context:,}" if args.context else ""
        lines.append(f"{args.model} on {args.gpus} x {args.gpu}, TP={args.tp}{context}, "
                     f"kv {args.kv_dtype}, engines side by side")
    def row(label: str, i: int) -> str:
        return f"  {label:<{w0}}" + "".join(
            f"{c[i]:>{w}}" for c, w in zip(cols, widths, strict=True))

    lines.append(row("", 0))
    lines += [row(label, i) for i, (label, _) in enumerate(_ROWS, 1)]
    for d in plans:
        title = engine_title(d["engine"], d["release"])
        if "refused" in d:
            lines.append(f"  {title} refuses: {d['refused']}")
        elif "does_not_fit" in d:
            lines.append(f"  {title} does not fit: {d['does_not_fit']}")
        elif d["engine"] == "vllm":
            if d.get("vllm_refuses_max_model_len"):
                lines.append(f"  {title} refuses the context: {d['vllm_max_model_len_why']}")
            pools = [f"{w}: {d[w + '_pool']}" for w in ("window", "state") if d[w + "_pool"]]
            lines.append(f"  {title}, the reference: budget: {d['budget_base']}; page: "
                         f"{plural(d['page_tokens'], 'token')}"
                         + "".join(f"; {p}" for p in pools))
        else:
            lines.append(f"  {title} differs from vLLM: {d['differs_from_vllm']}")
    if getattr(args, "shared_prefix", None):
        lines.append(f"  --shared-prefix {args.shared_prefix:,}: vLLM's column only (SGLang's "
                     "radix cache and TensorRT-LLM's block reuse are not traced by kvlib)")
    lines.append("  each engine alone, with its terms and notes: kvlib plan ... --engine "
                 + "|".join(ENGINE_NAMES))
    return "\n".join(lines)


def run_all(args, vllm_json) -> int:
    """``kvlib plan --engine all``; ``vllm_json``: as :func:`all_json`."""
    out = all_json(args, vllm_json)
    print(json.dumps(out, indent=2, default=str) if args.json else _table(out, args))
    plans = [d for d in out["engines"].values() if "refused" not in d]
    if not plans:
        print("kvlib plan: every engine refuses (each says why in its column)",
              file=sys.stderr)
        return 2
    if not any(d["max_sequences_per_replica"] > 0
               and not d.get("vllm_refuses_max_model_len") for d in plans):
        print("kvlib plan: no engine holds a request of the context", file=sys.stderr)
        return 1
    return 0
