"""``kvlib plan``: concurrent sequences of a model on N GPUs (notebook 06).

    kvlib plan llama-3.1-70b --gpu H200 --gpus 4 --tp 4 --context 131072
    kvlib plan llama-3.1-70b --gpu H200 --gpus 8 --tp 4 --context 32768 --kv-dtype fp8 --json

Exit status: 0 when the plan fits; 1 when it does not (the plan is still
printed, and one line on stderr says why); 2 on a bad flag or model
(:mod:`kvlib.cli` prints the one-line error).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

from kvlib.cli.args import (
    byte_size,
    count,
    kv_cache_dtype,
    parse_count,
    tokens,
    unit_fraction,
    vllm_release,
)
from kvlib.cli.model_folder import stored_weights_of
from kvlib.cli.plan_header import context_lines, kv_label, kv_why_lines
from kvlib.core.dtypes import DTYPE_BYTES
from kvlib.core.units import fmt_bytes
from kvlib.serving.engines.answer import first_line
from kvlib.serving.engines.vllm import planner as vllm_planner
from kvlib.serving.engines.vllm.defaults import (
    DEFAULT_OVERHEAD_BYTES,
    MEASURED_DEFAULTS,
    VLLM_DEFAULTS,
    VLLM_RELEASES,
)
from kvlib.serving.engines.vllm.deployment import MEMORY_BASES, Deployment
from kvlib.serving.gpus import CATALOG, get_gpu
from kvlib.serving.kv import KV_SCALES, sequence_shares

__all__ = ["add_parser", "run", "plan_json", "parse_count"]

GiB = 1024**3


def _positive_fraction(flag: str, text: str) -> Fraction:
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{flag} must be a number, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{flag} must be positive, got {text!r}")
    return value


def _gib_to_bytes(flag: str, text: str, allow_zero: bool = False) -> int:
    if allow_zero and text.strip() in ("0", "0.0"):
        return 0
    return round(_positive_fraction(flag, text) * GiB)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "plan", help="how many concurrent sequences fit on N GPUs",
        description="Weights, KV budget and maximum concurrent sequences per GPU under "
                    "vLLM (the default, in its terms: tensor_parallel_size, "
                    "gpu_memory_utilization, block_size, kv_cache_dtype), SGLang or "
                    "TensorRT-LLM, or all three side by side (--engine all). Exit status 1 "
                    "when the plan does not fit.")
    p.add_argument("model", help="a bundled model name (e.g. llama-3.1-70b) or a config.json path")
    p.add_argument("--gpu", required=True, help=f"one of {', '.join(CATALOG)}")
    p.add_argument("--gpus", type=count, default=1,
                   help="GPUs in all (default 1), under every engine: replicas = GPUs / TP, "
                        "sequences in all = replicas x sequences per replica")
    p.add_argument("--tp", type=count, default=1, help="tensor_parallel_size (default 1)")
    p.add_argument("--context", type=tokens, default=None, metavar="T",
                   help="tokens per sequence (max_model_len): 131072, 131,072 or 128K "
                        "(K = 1024); default: the config's max_position_embeddings")
    p.add_argument("--dcp", type=count, default=1,
                   help="decode_context_parallel_size: split replicated KV heads by tokens "
                        "(default 1)")
    p.add_argument("--kv-dtype", default="auto", type=kv_cache_dtype, metavar="DTYPE",
                   help="kv_cache_dtype, vLLM's names (auto, bfloat16, float16, fp8 = "
                        "fp8_e4m3, fp8_e5m2, int8_per_token_head, fp8_per_token_head, "
                        "int4_per_token_head, nvfp4; vllm/config/cache.py:44-67 in 0.34.0) or "
                        "kvlib's (bf16, fp16, fp8, int8, int4: plain int8/int4 have no scales "
                        "and no vLLM dtype); formats with scales count them (default auto, "
                        "vLLM's: the KV dtype the checkpoint asks for, else the model's; the "
                        "plan's first line says which and why)")
    p.add_argument("--kv-scales", default="none",
                   choices=["none", *KV_SCALES],
                   help="quantization scales stored with the cache (default none)")
    p.add_argument("--weight-dtype", default="checkpoint", choices=["checkpoint", *DTYPE_BYTES],
                   help="bytes per weight; default: the checkpoint's own format, counted "
                        "from the config (its quantization_config, else its dtype)")
    p.add_argument("--vllm", type=vllm_release, default=VLLM_RELEASES[0], metavar="RELEASE",
                   help=f"the vLLM release whose defaults and budget rule apply: "
                        f"{' or '.join(r.rsplit('.', 1)[0] for r in VLLM_RELEASES)} "
                        f"(default {VLLM_RELEASES[0]})")
    p.add_argument("--gpu-mem-util", type=unit_fraction, default=None,
                   help="gpu_memory_utilization, fraction of memory used (default: the "
                        "release's, 1.0 for 0.34.0's extensible KV cache, where a smaller "
                        "value shrinks the cache; 0.92 for 0.33.0)")
    p.add_argument("--block-size", type=count, default=None,
                   help="tokens per KV block (default: the release's, 64 for 0.34.0, 16 "
                        "for 0.33.0)")
    p.add_argument("--kv-cache-memory", type=byte_size, default=None, metavar="BYTES",
                   help="plan from a KV budget per GPU you already know, as vLLM's "
                        "kv_cache_memory_bytes: 42949672960 or 40GiB (in 0.34.0 this also "
                        "turns the extensible KV cache off)")
    p.add_argument("--overhead-gib", default=None,
                   help="vLLM 0.33.0: non-KV memory per GPU besides the weights, as vLLM "
                        "profiles it: activation peak, non-torch memory (NCCL, cuBLAS), "
                        f"CUDA-graph estimate (default {DEFAULT_OVERHEAD_BYTES // GiB})")
    for flag, key, what in (
            ("--in-use-gib", "in_use_bytes", "memory in use when vLLM starts (CUDA context, "
             "other processes)"),
            ("--activation-peak-gib", "activation_peak_bytes", "activation peak of the "
             "profiling run"),
            ("--graph-pool-gib", "graph_pool_bytes", "CUDA-graph pool (and vLLM's estimate "
             "of it)"),
            ("--non-torch-gib", "non_torch_bytes", "non-torch memory (NCCL, cuBLAS)")):
        p.add_argument(flag, default=None,
                       help=f"vLLM 0.34.0, what it measures and kvlib assumes: {what} "
                            f"(default {MEASURED_DEFAULTS[key] / GiB:g})"
                            + ("; SGLang: memory in use before the weights load"
                               if flag == "--in-use-gib" else ""))
    p.add_argument("--hbm-gib", default=None, help="GPU memory in GiB, overriding the catalog")
    p.add_argument("--memory", default="cuda", choices=list(MEMORY_BASES),
                   help="the total gpu_memory_utilization multiplies: cuda (default: the "
                        "total CUDA reports, as vLLM reads it, where the catalog has it; "
                        "else the datasheet's) or datasheet")
    p.add_argument("--params", default=None,
                   help="parameter count, e.g. 70.6B (default: counted from the config; "
                        "then the weights are params x --weight-dtype, bf16 by default)")
    p.add_argument("--draft", default=None, help="speculative-decoding draft model")
    p.add_argument("--shared-prefix", type=tokens, default=None, metavar="TOKENS",
                   help="vLLM: every request begins with the same prompt prefix of TOKENS "
                        "(a system prompt: 2000, 2K), counted as vLLM's prefix caching shares "
                        "it: its whole blocks stored once, the rest in each request's own")
    _add_engine_flags(p)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def _groups(deployment: Deployment, context: int) -> list[dict]:
    out = []
    for share in sequence_shares(deployment.model, context, deployment.kv_dtype,
                                          deployment.tp, deployment.block_size,
                                          deployment.scales, deployment.dcp):
        g, s = share.group, share.sharding
        out.append({
            "kind": str(g.kind), "layers": g.layers, "attention": g.attention,
            "window": g.window, "cached_tokens": share.cached, "block_slots": share.slots,
            "kv_heads": s.kv_heads, "kv_heads_per_gpu": s.per_rank,
            "kv_head_replicas": s.replicas,
            "kv_bytes_per_gpu": int(-(-Fraction(share.kv_bytes + share.scale_bytes) // 1)),
        })
    return out


def plan_json(deployment: Deployment, context: int, shared_prefix: int = 0) -> dict:
    """The plan as a JSON-ready dict: the keys every engine's plan has
    (:data:`~kvlib.serving.engines.answer.COMMON_KEYS`, vLLM's where both name one thing),
    then vLLM's own keys beside them, with the per-group breakdown of the target model.
    shared_prefix: as :meth:`Deployment.plan`."""
    plan = deployment.plan(context, shared_prefix=shared_prefix)
    own = plan.to_dict()
    common = vllm_planner.from_plan(deployment, plan, context).common()
    d = {k: own.get(k, v) for k, v in common.items()}  # vLLM's own value where it has one
    d.update(own)
    d["kv_scales"] = deployment.scales.name if deployment.scales else "none"
    d["kv_dtype_why"] = deployment.kv_dtype_why
    # the model folder's files the weights were read from (None: counted, or not counted)
    d["weights_read_from"] = list(deployment.stored.source) if deployment.stored else None
    if d["vllm_refuses_max_model_len"]:  # vLLM checks the context before any memory
        d["fits"], d["reason"] = False, d["vllm_max_model_len_why"]
    d["groups"] = _groups(deployment, context)
    return d


def _text(d: dict) -> str:
    def both(n):
        if n is None:
            return f"{'not counted':>11}"
        return f"{fmt_bytes(n, 'GB'):>11} = {fmt_bytes(n, 'GiB')}"

    basis = "CUDA total" if d["memory_basis"] == "cuda" else "datasheet"
    rows = [(f"memory per GPU ({basis})", d["total_memory_bytes_per_gpu"])]
    if d["memory_basis"] == "cuda":
        rows.append(("  datasheet", d["hbm_bytes_per_gpu"]))
    rule = d["budget_rule"]
    if rule == "extensible":
        rows += [("in use at start (assumed)", d["in_use_bytes_per_gpu"]),
                 ("margin: max(1 GiB, 0.75 x peak)", d["margin_bytes_per_gpu"]),
                 (f"usable (min of x {d['gpu_mem_util']:g} and rest)",
                  d["usable_bytes_per_gpu"])]
    elif rule == "profiled":
        rows.append((f"usable (x {d['gpu_mem_util']:g}, rounded up)", d["usable_bytes_per_gpu"]))
    rows.append(("weights per GPU", d["weights_bytes_per_gpu"]))
    if d["draft"]:
        rows.append((f"draft weights ({d['draft']})", d["draft_weights_bytes_per_gpu"]))
    if rule == "extensible":
        rows += [("non-torch + graph pool (assumed)", d["resident_bytes_per_gpu"]),
                 ("peak kept free (assumed)", d["peak_bytes_per_gpu"])]
    elif rule == "profiled":
        rows.append(("activations, NCCL, graphs", d["overhead_bytes_per_gpu"]))
    rows += [("KV budget per GPU" + (" (given)" if rule == "kv_cache_memory_bytes" else ""),
              d["kv_budget_bytes_per_gpu"]),
             (f"KV per sequence (block {d['block_size']})", d["kv_bytes_per_sequence_per_gpu"])]
    if d["shared_prefix_blocks"]:
        rows.append((f"shared prefix, once ({d['shared_prefix_blocks']:,} blocks)",
                     d["shared_prefix_blocks"] * d["vllm_bytes_per_block"]))
    if d["state_bytes_per_sequence_per_gpu"]:
        label = ("state per sequence (pages)" if d["sessions_basis"] == "vllm"
                 else "state per sequence (constant)")
        rows.append((label, d["state_bytes_per_sequence_per_gpu"]))
    w = 32
    lines = [
        first_line({**d, "kv_dtype": kv_label(d["kv_dtype"], d["kv_element_dtype"],
                                              d["kv_dtype_why"])},
                   vllm_planner.RULE_NAMES[rule]),
        *kv_why_lines(d["kv_dtype"], d["kv_dtype_why"]),
        *context_lines(d),
        *(f"  {label:<{w}}{both(n)}" for label, n in rows),
        f"  {'sequences per replica':<{w}}{d['max_sequences_per_replica']:>11,}"
        + (f" (vLLM's allocator: {d['vllm_blocks_per_sequence']:,} blocks each, "
           f"{d['vllm_prefill_blocks']:,} while prefilled, of {d['vllm_num_blocks']:,})"
           if d["sessions_basis"] == "vllm" else " (bytes alone)"),
        f"  {'sequences in all':<{w}}{d['max_sequences']:>11,}",
    ]
    if d["shared_prefix_tokens"]:
        lines.append(f"  {'  without the shared prefix':<{w}}"
                     f"{d['max_sequences_per_replica_without_prefix']:>11,} per replica "
                     f"(every request begins with the same {d['shared_prefix_tokens']:,} "
                     "tokens; prefix caching stores their whole blocks once)")
    if d["sessions_basis"] == "vllm" and (
            d["bytes_alone_sequences_per_replica"] != d["max_sequences_per_replica"]):
        lines.append(f"  {'  by bytes alone':<{w}}{d['bytes_alone_sequences_per_replica']:>11,}"
                     " (budget // cache and state bytes: no blocks, no prefill peak)")
    refuses = d["vllm_needed_bytes"] is not None and (
        d["vllm_needed_bytes"] > d["kv_budget_bytes_per_gpu"] - d["vllm_bytes_per_block"])
    if refuses:
        longest = d["vllm_max_model_len"]
        has = d["kv_budget_bytes_per_gpu"] - d["vllm_bytes_per_block"]
        lines.append(f"  {'vLLM at start-up':<{w}}{'refuses':>11}: vLLM would refuse to start: "
                     f"one request needs {fmt_bytes(d['vllm_needed_bytes'], 'GiB')} of KV "
                     + (f"cache, it has {fmt_bytes(has, 'GiB')}" if has > 0
                        else "cache, it has no KV-cache memory")
                     + (f"; the longest context that fits is {longest:,} tokens"
                        if longest else ""))
    elif d["vllm_max_concurrency"] == 0:
        lines.append(f"  {'vLLM would log (per replica)':<{w}}{'0':>11} blocks: vLLM would refuse "
                     "to start (no KV-cache memory, or less than one request needs)")
    elif d["vllm_max_concurrency"] is not None:
        sizes = d.get("vllm_block_sizes")
        block = (f"blocks of {' / '.join(f'{n:,} ({k})' for k, n in sizes.items())}"
                 if sizes else f"block {d['vllm_block_size']:,}")
        lines.append(f"  {'vLLM would log (per replica)':<{w}}{d['vllm_max_concurrency']:>11,.2f} "
                     f"x max concurrency ({d['vllm_kv_cache_groups']} KV-cache group"
                     f"{'s' if d['vllm_kv_cache_groups'] != 1 else ''}, "
                     f"{d['vllm_padding_layers']} padding layers, {block}, "
                     f"{d['vllm_blocks_per_request']:,} blocks per request)")
    if d["decode_step_seconds_lower_bound"] is not None:
        b = d["max_sequences_per_replica"]
        lines.append(f"  {f'decode step, batch {b:,}':<{w}}"
                     f"{d['decode_step_seconds_lower_bound'] * 1e3:>8.2f} ms or more "
                     f"(reads {fmt_bytes(d['decode_weights_read_bytes_per_gpu'], 'GB')} of "
                     f"weights per GPU + the caches)")
        if d["decode_step_seconds_uniform_routing"] is not None:
            lines.append(f"  {'  uniform routing':<{w}}"
                         f"{d['decode_step_seconds_uniform_routing'] * 1e3:>8.2f} ms "
                         f"({d['expected_experts_per_layer']:g} of {d['routed_experts']} "
                         f"experts per layer, {d['experts_per_token']} per token)")
        lines.append(f"  {'  every weight read':<{w}}"
                     f"{d['decode_step_seconds_all_weights'] * 1e3:>8.2f} ms")
    lines += [f"  assumed: {a}" for a in d.get("assumptions", ())]
    if d["kv_dtype_why"] is not None and d["kv_dtype"] == "auto":  # the model's dtype
        lines.append(f"  note: kv dtype: {d['kv_dtype_why']}")
    lines += [f"  note: {n}" for n in d["notes"]
              if not (d["vllm_refuses_max_model_len"] and n == d["vllm_max_model_len_why"])]
    if d.get("ignored_keys"):
        lines.append(f"  ignored keys (unknown to kvlib; nothing in their names or values says "
                     f"they shape the cache): {', '.join(d['ignored_keys'])}")
    return "\n".join(lines)


def _memory_note(deployment: Deployment) -> str:
    gpu = deployment.gpu
    sheet = fmt_bytes(gpu.hbm_bytes, "GB")
    if deployment.memory_basis == "cuda":
        return (f"memory: {fmt_bytes(gpu.cuda_total_bytes, 'GiB')}, the total CUDA reports "
                f"on the {gpu.name} (vLLM's start-up log), which vLLM multiplies by "
                f"gpu_memory_utilization; the datasheet says {sheet} (--memory datasheet)")
    if deployment.memory == "datasheet":
        return f"memory: the datasheet's {sheet} (--memory datasheet)"
    return (f"memory: the datasheet's {sheet}: the catalog has no CUDA-reported total for "
            f"the {gpu.name}, the figure vLLM would multiply (it differs from the datasheet's "
            f"and from nvidia-smi's)")


def _add_engine_flags(p) -> None:
    from kvlib.cli.plan_engines import add_engine_flags

    add_engine_flags(p)


_TERMS = {"--overhead-gib": "overhead_bytes", "--in-use-gib": "in_use_bytes",
          "--activation-peak-gib": "activation_peak_bytes",
          "--graph-pool-gib": "graph_pool_bytes", "--non-torch-gib": "non_torch_bytes"}


def _budget_terms(args) -> dict:
    """The budget terms given on the command line, checked against the release's rule: one
    line naming the option and its value when it does not apply."""
    given = {flag: getattr(args, flag[2:].replace("-", "_")) for flag in _TERMS}
    given = {f: v for f, v in given.items() if v is not None}
    rule = VLLM_DEFAULTS[args.vllm]["rule"]
    for flag, value in given.items():
        if args.kv_cache_memory is not None:
            raise ValueError(f"{flag} {value}: not used with --kv-cache-memory, which gives "
                             "the KV budget outright")
        if (flag == "--overhead-gib") != (rule == "profiled"):
            other = ("--overhead-gib" if rule == "profiled" else
                     "--in-use-gib, --activation-peak-gib, --graph-pool-gib, --non-torch-gib")
            raise ValueError(f"{flag} {value}: not a term of vLLM {args.vllm}'s budget "
                             f"(it takes {other})")
    return {_TERMS[f]: _gib_to_bytes(f, v, allow_zero=True) for f, v in given.items()}


def vllm_deployment(args) -> tuple[Deployment, int, list[str]]:
    """vLLM's :class:`Deployment` from ``kvlib plan``'s flags, the context (the config's
    max_position_embeddings when --context is not given) and the notes that say what was
    taken for them."""
    from kvlib.models.catalog import BUNDLED, bundled_name, load_model, variant_of
    from kvlib.models.readers.fields import load_config

    model = load_model(args.model)
    typed = variant_of(args.model.strip())
    if typed is not None and typed[1] and args.weight_dtype == "checkpoint":
        raise ValueError(f"{args.model.strip()} is a quantized re-packaging of the bundled "
                         f"{BUNDLED[typed[0]].repo}: same cache, other weights; give "
                         "--weight-dtype (fp8, int4, ...) or pass its own config.json")
    try:
        draft = load_model(args.draft) if args.draft else None
    except (ValueError, FileNotFoundError) as e:
        raise ValueError(f"--draft: {e}") from None
    hbm = _gib_to_bytes("--hbm-gib", args.hbm_gib) if args.hbm_gib is not None else None
    stored = stored_weights_of(args.model)
    deployment = Deployment(
        model, get_gpu(args.gpu, hbm_bytes=hbm), gpus=args.gpus, tp=args.tp,
        kv_dtype=args.kv_dtype, weight_dtype=args.weight_dtype,
        gpu_mem_util=args.gpu_mem_util,
        block_size=args.block_size,
        params=parse_count(args.params) if args.params is not None else None,
        draft=draft, scales=args.kv_scales, dcp=args.dcp, memory=args.memory,
        config=None if bundled_name(args.model) else load_config(args.model),
        vllm=args.vllm, kv_cache_memory=args.kv_cache_memory, stored=stored,
        **_budget_terms(args),
    )
    context = args.context
    said = []
    if context is None:
        context = model.max_position_embeddings
        if context is None:
            raise ValueError(f"{model.name}: the config gives no max_position_embeddings; "
                             "pass --context")
        said.append(f"context: the config's max_position_embeddings, {context:,} tokens")
    if hbm is None:
        said.append(_memory_note(deployment))
    else:
        catalog = get_gpu(args.gpu)
        said.append(f"memory per GPU: --hbm-gib {args.hbm_gib} overrides the catalog's "
                    f"{fmt_bytes(catalog.hbm_bytes, 'GB')} {catalog.name}; the bandwidth is "
                    f"still the {catalog.name}'s ({fmt_bytes(catalog.bandwidth, 'GB')}/s)")
    return deployment, context, said


def vllm_json(args) -> dict:
    """``kvlib plan --json``'s object for vLLM (also a column of ``--engine all``)."""
    deployment, context, said = vllm_deployment(args)
    d = plan_json(deployment, context, getattr(args, "shared_prefix", None) or 0)
    d["notes"] = said + d["notes"]
    d["ignored_keys"] = list(deployment.model.ignored_keys)
    return d


# SGLang's and TensorRT-LLM's own flags: refused by name under --engine vllm
_OTHER_ENGINES = ("mem_fraction_static", "page_size", "other_gib", "free_gpu_memory_fraction",
                  "tokens_per_block", "trtllm_peak_gib", "trtllm_release",
                  "trtllm_max_batch_size")


def _refuse_other_engines_flags(args) -> None:
    for key in _OTHER_ENGINES:
        value = getattr(args, key, None)
        if value is not None:
            value = f"{float(value):g}" if isinstance(value, Fraction) else value
            raise ValueError(f"--{key.replace('_', '-')} {value}: not an option of --engine "
                             "vllm (it is "
                             + ("SGLang's" if key in _OTHER_ENGINES[:3] else "TensorRT-LLM's")
                             + "; give --engine too)")


def run(args) -> int:
    if getattr(args, "engine", "vllm") == "all":
        from kvlib.cli.plan_engines import run_all

        return run_all(args, vllm_json)
    if getattr(args, "engine", "vllm") != "vllm":
        from kvlib.cli.plan_engines import run_engine

        return run_engine(args)
    _refuse_other_engines_flags(args)
    d = vllm_json(args)
    print(json.dumps(d, indent=2) if args.json else _text(d))
    if not d["fits"]:
        print(f"kvlib plan: {d['reason']}", file=sys.stderr)
        return 1
    return 0
