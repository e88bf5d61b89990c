"""``kvlib estimate MODEL``: the KV cache a real model needs (notebook 05, "The command").

MODEL is a bundled short name (``kvlib.BUNDLED``) or the path of a
Hugging Face ``config.json``. Options: ``--context T`` (default: the config's
``max_position_embeddings``), ``--batch B`` (default 1), ``--kv-dtype`` (default ``auto``,
resolved as ``kvlib plan`` resolves it, by vLLM 0.34.0's rule:
:func:`kvlib.serving.engines.vllm.dtypes.resolve_auto`, the KV dtype the checkpoint asks for,
else the model's; the header says which and why) and ``--json``. The numbers come from
:func:`kvlib.models.estimate`, i.e. from the generated formulas.

The ``--json`` object (:func:`to_json`) holds: ``model``, ``title``, ``source``,
``attention`` (MHA/GQA/MQA/MLA), ``params``, ``kv_dtype`` (as given, vLLM's name or
kvlib's, or what ``auto`` became; a format's scales, nvfp4's or int4_per_token_head's, are in
the byte counts), ``kv_dtype_why`` (under ``auto``: which dtype and why, else null),
``bytes_per_element`` (of the values), ``context``, ``batch``, ``kv_bytes_per_token``,
``kv_bytes_per_sequence``, ``kv_bytes_total`` (x batch) (the growing caches only),
``state_bytes_per_sequence`` (the constant-size state of Mamba, linear-attention and
convolution layers; 0 for a pure-attention model), ``total_bytes_per_sequence``
(kv + state), ``groups`` (one per layer group: ``kind``, ``attention``, ``layers``,
``window``, ``sizes``, ``cached_tokens``, ``bytes_per_token``, ``bytes_per_sequence``,
``state_bytes_per_sequence``) and ``assumptions``. Byte counts are exact integers.
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction

from kvlib.cli.args import count, kv_cache_dtype, tokens
from kvlib.cli.plan_header import kv_label, kv_why_lines
from kvlib.core.dtypes import KV_SCALES, kv_format
from kvlib.core.units import auto_unit, describe, fmt_size
from kvlib.models.catalog import BUNDLED, attention_label, title
from kvlib.models.estimate import Estimate, estimate

__all__ = ["add_parser", "to_json", "render", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``estimate`` on the ``kvlib`` command's subparsers."""
    p = subparsers.add_parser(
        "estimate", help="KV cache of a bundled model or a config.json",
        description="KV-cache bytes of a model, per token, per sequence and per batch, "
                    "read from its config.json (layer groups: full, sliding, chunked, latent).",
        epilog=f"bundled models: {', '.join(BUNDLED)}")
    p.add_argument("model", help="a bundled model name or the path of a config.json")
    p.add_argument("--context", type=tokens, default=None, metavar="T",
                   help="tokens per sequence: 131072, 131,072 or 128K (K = 1024); default: "
                        "the config's max_position_embeddings")
    p.add_argument("--batch", type=count, default=1, metavar="B",
                   help="sequences held at once (default: 1)")
    p.add_argument("--kv-dtype", type=kv_cache_dtype, default="auto", metavar="DTYPE",
                   help="the cache's dtype: kvlib's (bf16, fp16, fp32, fp8, int8, int4) or "
                        "vLLM's kv_cache_dtype (auto, bfloat16, fp8_e5m2, "
                        "int8_per_token_head, int4_per_token_head, nvfp4, ...), formats with "
                        "scales counted with them, as kvlib plan counts them (default auto, "
                        "as kvlib plan resolves it, vLLM's: the KV dtype the checkpoint asks "
                        "for, else the model's; the header says which and why)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
    return p


def _number(x):
    """Exact ints stay ints; a fractional byte count (4-bit dtypes) becomes a float."""
    x = Fraction(x)
    return x.numerator if x.denominator == 1 else float(x)


def to_json(e: Estimate, why: str | None = None) -> dict:
    """The ``--json`` object of an estimate (see the module docstring); ``why``: what ``auto``
    became and why (:func:`resolve_kv_dtype`), None for a dtype given."""
    spec = e.spec
    return {
        "model": spec.name,
        "title": title(spec),
        "source": spec.source,
        "attention": attention_label(spec),
        "params": spec.params,
        "kv_dtype": e.kv_dtype,
        "kv_dtype_why": why,
        "bytes_per_element": _number(e.b),
        "context": e.context,
        "batch": e.batch,
        "kv_bytes_per_token": _number(e.kv_bytes_per_token),
        "kv_bytes_per_sequence": _number(e.kv_bytes_per_sequence),
        "kv_bytes_total": _number(e.kv_bytes_total),
        "state_bytes_per_sequence": _number(e.state_bytes_per_sequence),
        "total_bytes_per_sequence": _number(e.total_bytes_per_sequence),
        "groups": [
            {
                "kind": str(g.group.kind),
                "attention": g.group.attention,
                "layers": g.group.layers,
                "window": g.group.window,
                "sizes": dict(g.group.sizes),
                "cached_tokens": g.cached_tokens,
                "bytes_per_token": _number(g.bytes_per_token),
                "bytes_per_sequence": _number(g.bytes_per_sequence),
                "state_bytes_per_sequence": _number(g.state_bytes_per_sequence),
            }
            for g in e.groups
        ],
        "assumptions": list(e.assumptions),
        "ignored_keys": list(spec.ignored_keys),
    }


def _heads(e: Estimate) -> str:
    attention = [g for g in e.spec.groups if g.grows]
    if not attention:
        return f"no attention layers: {attention_label(e.spec)}"
    g = attention[0]
    s = g.sizes
    v4 = [x for x in attention if x.attention == "V4 entry"]
    if v4:  # DeepSeek V4 (notebook 08): the entry is the same in the window and compressed
        ratios = sorted({x.ratio for x in v4 if x.ratio})
        return (f"DeepSeek V4 compressed attention: one d_c={v4[0].sizes['d_c']} entry (RoPE part "
                f"d_R={v4[0].sizes['d_R']}) per token in the window, per m tokens in compressed "
                f"layers (m = {', '.join(map(str, ratios))})")
    if g.attention.startswith("MLA"):
        rope = f" + decoupled RoPE key d_R={s['d_R']}" if "d_R" in s else ""
        return f"MLA: latent d_L={s['d_L']}{rope} per token per layer"
    heads = (f"{attention_label(e.spec)}: {s['N_h']} query heads, {s['N_g']} key/value heads, "
             f"head dim {s['d_QK']}")
    shapes = {(x.sizes.get("N_g"), x.sizes.get("d_QK")) for x in attention}
    return heads + (" (other layers differ: see the groups)" if len(shapes) > 1 else "")


def render(e: Estimate, auto=None) -> str:
    """The readable table ``kvlib estimate`` prints by default; ``auto``: what ``--kv-dtype
    auto`` became (:class:`~kvlib.serving.engines.vllm.dtypes.AutoKVDtype`), said as the
    plan's header says it."""
    spec = e.spec
    params = f"; {spec.params / 1e9:,.4g}B parameters" if spec.params else ""
    source = f", {spec.source}" if spec.source else ""
    # groups that store their own bytes whatever the KV dtype (DeepSeek V4's fp8_ds_mla entries,
    # fp32 compressor states, indexer keys): name what each stores
    own = {"V4 entry": "entries", "Compressor state": "compressor state", "Indexer": "indexer keys"}
    fixed = all(g.group.sizes.get("b") is not None for g in e.groups if g.group.grows)
    scaled = kv_format(e.kv_dtype).scales
    per = (f"{_number(e.b)} B/element" if scaled is None else
           f"{_number(e.b)} B/element + {KV_SCALES[scaled].name} scales")
    why = auto.why if auto is not None else None
    name = kv_label(auto.kv_cache_dtype, e.kv_dtype, why) if auto is not None else e.kv_dtype
    said = f"{name[:-1]}; {per})" if name.endswith(")") else f"{name} ({per})"
    given = "auto" if auto is not None else e.kv_dtype
    dtype = (f"KV dtype {said}" if not fixed else
             f"KV dtype not used (--kv-dtype {given}): every group stores its own bytes")
    notes = list(e.assumptions)
    if auto is not None and not auto.from_checkpoint:  # the model's dtype: said in a note
        notes.insert(0, f"kv dtype: {auto.why}")
    lines = [
        f"{title(spec)}  ({spec.name}{source})",
        f"{_heads(e)}{params}",
        f"{dtype}, context {e.context:,} tokens, batch {e.batch:,}",
        *(line.strip() for line in kv_why_lines(auto.kv_cache_dtype if auto else "", why)),
        "",
        f"{'layers':>8}  {'kind':<10} {'window':>9} {'cached tokens':>14}  "
        f"{'per token':>12}  {'per sequence':>14}",
    ]
    for g in e.groups:
        w = f"{g.group.window:,}" if g.group.window is not None else "-"
        if g.group.grows:
            what = (f"  {own[g.group.attention]}" if g.group.attention in own
                    and str(g.group.kind) in ("sliding", "compressed") else "")
            lines.append(f"{g.group.layers:>8,}  {str(g.group.kind):<10} {w:>9} "
                         f"{g.cached_tokens:>14,}  {fmt_size(g.bytes_per_token):>12}  "
                         f"{fmt_size(g.bytes_per_sequence):>14}{what}")
        elif g.state_bytes_per_sequence:  # a constant-size state: no tokens, no per-token bytes
            lines.append(f"{g.group.layers:>8,}  {str(g.group.kind):<10} {w:>9} {'-':>14}  "
                         f"{'-':>12}  {fmt_size(g.state_bytes_per_sequence):>14}  state")
        else:
            lines.append(f"{g.group.layers:>8,}  {str(g.group.kind):<10} {w:>9} {'-':>14}  "
                         f"{'-':>12}  {'-':>14}  nothing kept")
    lines += [
        f"{spec.num_layers:>8,}  {'all':<10} {'':>9} {'':>14}  "
        f"{fmt_size(e.kv_bytes_per_token):>12}  {fmt_size(e.kv_bytes_per_sequence):>14}",
        "",
    ]
    rows = [("per token:", e.kv_bytes_per_token), ("per sequence:", e.kv_bytes_per_sequence)]
    if e.state_bytes_per_sequence:
        rows += [("state per seq:", e.state_bytes_per_sequence),
                 ("cache + state:", e.total_bytes_per_sequence),
                 (f"total (x{e.batch:,}):", e.total_bytes)]
    else:
        rows.append((f"total (x{e.batch:,}):", e.kv_bytes_total))
    for label, n in rows:
        binary = auto_unit(n)
        decimal = binary.replace("i", "") if binary != "B" else "B"
        lines.append(f"{label:<15}{describe(n, binary, decimal)}")
    if notes:
        lines += ["", "assumptions:"] + [f"  - {a}" for a in notes]
    lines += ignored_lines(spec)
    return "\n".join(lines)


def ignored_lines(spec) -> list[str]:
    """The config keys kvlib did not know and judged harmless, said aloud."""
    if not spec.ignored_keys:
        return []
    return ["", f"ignored keys (unknown to kvlib; nothing in their names or values says they "
                f"shape the cache): {', '.join(spec.ignored_keys)}"]


def resolve_kv_dtype(model: str, spec):
    """What ``--kv-dtype auto`` becomes for ``model`` (as typed; ``spec`` its ModelSpec): the
    plan's resolver (:func:`kvlib.serving.engines.vllm.dtypes.resolve_auto`, vLLM 0.34.0's
    rule) on the same config the plan reads: the bundled one, else the file (with an
    ``hf_quant_config.json`` beside it merged in, :func:`kvlib.models.readers.fields.
    load_config`)."""
    from kvlib.models.catalog import bundled_config, bundled_name
    from kvlib.models.readers.fields import load_config
    from kvlib.serving.engines.vllm.dtypes import resolve_auto

    if spec.name in BUNDLED:
        config = bundled_config(spec.name)
    elif not bundled_name(model):
        config = load_config(model)
    else:
        config = None
    return resolve_auto(config)


def run(args: argparse.Namespace) -> int:
    from kvlib.models.catalog import load_model

    spec = load_model(args.model)
    auto = resolve_kv_dtype(args.model, spec) if args.kv_dtype == "auto" else None
    e = estimate(spec, context=args.context, batch=args.batch,
                 kv_dtype=auto.kv_dtype if auto is not None else args.kv_dtype)
    why = auto.why if auto is not None else None
    print(json.dumps(to_json(e, why), indent=2) if args.json else render(e, auto))
    return 0
