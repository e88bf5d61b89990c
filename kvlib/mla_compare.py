"""Notebook 04's side-by-side table: MHA / GQA / MLA / MLA + decoupled RoPE at DeepSeek V2's shape.

Every number comes from the generated formulas: cache from :mod:`kvlib.formulas`,
decode FLOPs from :mod:`kvlib.decode_cost`. All rows score queries against
192-wide keys and read 128-wide values per head (DeepSeek V2's 128 + 64 and 128),
so the rows differ only in what they cache and how they compute.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvlib.decode_cost import PATHS
from kvlib.formulas import GQA, MHA, MLA, MLA_ROPE, Attention
from kvlib.plotting import format_context
from kvlib.units import fmt_bytes
from kvlib.widgets_mla import DEEPSEEK_V2

__all__ = ["Row", "ROWS", "side_by_side", "to_markdown"]


@dataclass(frozen=True)
class Row:
    """One design: its cache kind and sizes, its decode path and sizes, what it equals."""

    label: str
    kind: Attention
    cache_sizes: dict
    path: str
    step_sizes: dict
    equivalent: str


_S = DEEPSEEK_V2
_HEAD = dict(N_h=_S["N_h"], d_in=_S["d_in"], d_V=_S["d_V"])
_WIDE = dict(_HEAD, d_QK=_S["d_QK"] + _S["d_R"])  # one 192-wide key per head, no separate RoPE part

ROWS = (
    Row("MHA (decompressed heads)", MHA, dict(N_h=_S["N_h"], d_QK=192, d_V=_S["d_V"]),
        "MHA", _WIDE, "the reference"),
    Row("GQA, 8 KV heads (illustrative)", GQA, dict(N_h=_S["N_h"], N_g=8, d_QK=192, d_V=_S["d_V"]),
        "GQA", dict(_WIDE, N_g=8), "exactly MHA with each KV head repeated for its 16 query heads"),
    Row("MLA, no RoPE, absorbed", MLA, dict(d_L=_S["d_L"]), "MLA absorbed",
        dict(_WIDE, d_L=_S["d_L"]),
        "exactly MHA with rank-512 key and value projections; absorbed = naive"),
    Row("MLA, RoPE on keys, re-expand", MLA, dict(d_L=_S["d_L"]), "MLA+RoPE(keys) naive",
        dict(_WIDE, d_L=_S["d_L"]),
        "no absorbed form exists; every step rebuilds and rotates every key"),
    Row("MLA + decoupled RoPE, absorbed", MLA_ROPE, dict(d_L=_S["d_L"], d_R=_S["d_R"]),
        "MLA+RoPE absorbed", dict(_HEAD, d_QK=_S["d_QK"], d_L=_S["d_L"], d_R=_S["d_R"]),
        "absorbed = naive; its RoPE key is shared by all heads (MQA-like), so it equals no MHA"),
)


def side_by_side(contexts=(4096, 131072), N_L: int = _S["N_L"], b=_S["b"]) -> list[dict]:
    """For each row: cached elements per token per layer, bytes per token (N_L layers, b bytes),
    and attention FLOPs per generated token (one decode step through all N_L layers)."""
    out = []
    for r in ROWS:
        f = r.kind.elements_per_token_layer
        elements = f(**{k: v for k, v in r.cache_sizes.items() if k in f.args or k == "N_h"})
        per_token = r.kind.bytes_per_token(
            **{k: v for k, v in r.cache_sizes.items()
               if k in r.kind.bytes_per_token.args or k == "N_h"}, N_L=N_L, b=b)
        flops = {n: N_L * PATHS[r.path].formula(**r.step_sizes, N_KV=n) for n in contexts}
        out.append(dict(label=r.label, elements=elements, bytes_per_token=per_token, flops=flops,
                        equivalent=r.equivalent))
    return out


def to_markdown(rows: list[dict]) -> str:
    """The table as Markdown (GFLOPs per generated token, all layers)."""
    contexts = list(rows[0]["flops"])
    head = ("| design | cached elements / token / layer | bytes / token | "
            + " | ".join(f"GFLOPs / token at {format_context(n)}" for n in contexts)
            + " | mathematically equivalent to |")
    lines = [head, "|" + "---|" * (4 + len(contexts))]
    for r in rows:
        flops = " | ".join(f"{r['flops'][n] / 1e9:,.1f}" for n in contexts)
        lines.append(f"| {r['label']} | {r['elements']:,} | {r['bytes_per_token']:,} "
                     f"({fmt_bytes(r['bytes_per_token'], 'KiB')}) | {flops} | {r['equivalent']} |")
    return "\n".join(lines)
