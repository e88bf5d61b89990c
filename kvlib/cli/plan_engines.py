"""``kvlib plan --engine sglang|trtllm``: the same model and GPU under SGLang's or
TensorRT-LLM's budget, pages and pools (:mod:`kvlib.serving.engines`, docs/engines.md).

    kvlib plan llama-3.1-8b --gpu H200 --context 8192 --engine sglang
    kvlib plan llama-3.1-70b --gpu H200 --gpus 4 --tp 4 --engine trtllm --trtllm-peak-gib 6

Exit status: 0 when a request of the context fits; 1 when none does; 2 on a bad flag or a
model whose pool rule kvlib has not traced for that engine (one line naming it).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

from kvlib.cli.args import count, parse_count, unit_fraction
from kvlib.core.units import fmt_bytes

__all__ = ["add_engine_flags", "run_engine"]

GiB = 1 << 30
# vLLM's flags, meaningless for the other engines (refused by name there)
_VLLM_ONLY = ("gpu_mem_util", "block_size", "kv_cache_memory", "overhead_gib",
              "activation_peak_gib", "graph_pool_gib", "non_torch_gib")


def add_engine_flags(p) -> None:
    p.add_argument("--engine", default="vllm", choices=["vllm", "sglang", "trtllm"],
                   help="the serving engine whose budget, pages and pools apply: vllm "
                        "(default), sglang (0.5.23) or trtllm (TensorRT-LLM, PyTorch backend)")
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


def _gib_flag(flag: str, text: str) -> int:
    try:
        value = Fraction(str(text).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{flag} must be a number of GiB, got {text!r}") from None
    if value < 0:
        raise ValueError(f"{flag} must not be negative, got {text!r}")
    return round(value * GiB)


def _options(args) -> dict:
    engine = args.engine
    for key in _VLLM_ONLY:
        if getattr(args, key, None) is not None:
            flag, value = "--" + key.replace("_", "-"), getattr(args, key)
            value = f"{float(value):g}" if isinstance(value, Fraction) else value
            raise ValueError(f"{flag} {value}: a vLLM option; --engine {engine} "
                             "takes " + ("--mem-fraction-static, --page-size, --in-use-gib, "
                                         "--other-gib" if engine == "sglang" else
                                         "--free-gpu-memory-fraction, --tokens-per-block, "
                                         "--trtllm-peak-gib"))
    mine = {"sglang": ("mem_fraction_static", "page_size", "in_use_gib", "other_gib"),
            "trtllm": ("free_gpu_memory_fraction", "tokens_per_block", "trtllm_peak_gib")}[engine]
    for key in ("mem_fraction_static", "page_size", "other_gib", "free_gpu_memory_fraction",
                "tokens_per_block", "trtllm_peak_gib", "in_use_gib"):
        if key not in mine and getattr(args, key, None) is not None:
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
           "tokens_per_block": args.tokens_per_block}
    if args.trtllm_peak_gib is not None:
        out["other_peak_bytes"] = _gib_flag("--trtllm-peak-gib", args.trtllm_peak_gib)
    return out


def _text(d: dict) -> str:
    def both(n):
        return f"{fmt_bytes(n, 'GB'):>11} = {fmt_bytes(n, 'GiB')}"

    name = {"sglang": f"SGLang {d['release']}", "trtllm": "TensorRT-LLM"}[d["engine"]]
    w = 34
    lines = [f"{d['model']} on {d['gpu']}, TP={d['tp']}, context {d['context']:,}, kv "
             f"{d['kv_dtype']}, {name}"]
    for t in d["terms"]:
        lines.append(f"  {t['label']:<{w}}{both(t['value'])}   ({t['source']})")
    unit = "page" if d["engine"] == "sglang" else "block"
    lines.append(f"  {'bytes per token (cell)':<{w}}{d['cell']:>11,} B")
    label = f"KV tokens ({unit} {d['page']})"
    lines.append(f"  {label:<{w}}{d['tokens']:>11,}")
    if d.get("swa_tokens") is not None:
        lines.append(f"  {'sliding-window pool tokens':<{w}}{d['swa_tokens']:>11,} "
                     f"({d['swa_cell']:,} B per token)")
    if d.get("max_running_requests") is not None:
        lines.append(f"  {'max_running_requests':<{w}}{d['max_running_requests']:>11,}")
    lines.append(f"  {'requests of the context at once':<{w}}{d['sessions']:>11,}")
    lines += [f"  assumed: {a}" for a in d["assumptions"]]
    lines += [f"  note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def run_engine(args) -> int:
    from kvlib.models.catalog import bundled_name, load_model
    from kvlib.models.readers.fields import load_config
    from kvlib.serving.engines import engine_plan
    from kvlib.serving.engines.vllm.deployment import Deployment
    from kvlib.serving.gpus import get_gpu

    options = _options(args)
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
        config=None if bundled_name(args.model) else load_config(args.model))
    context = args.context or model.max_position_embeddings
    if context is None:
        raise ValueError(f"{model.name}: the config gives no max_position_embeddings; "
                         "pass --context")
    d = engine_plan(deployment, context, args.engine,
                    **{k: v for k, v in options.items() if v is not None}).to_dict()
    print(json.dumps(d, indent=2, default=str) if args.json else _text(d))
    if d["sessions"] == 0:
        print(f"kvlib plan: {d['tokens']:,} KV tokens hold no request of {context:,} tokens "
              f"under --engine {args.engine}", file=sys.stderr)
        return 1
    return 0
