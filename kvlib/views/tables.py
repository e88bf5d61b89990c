"""Tables as Markdown, so notebook cells keep to the lesson (notebooks 04 and 06).

Each function takes what the notebook computed and returns a Markdown table;
every number comes from the generated formulas (:mod:`kvlib.core`) or the
serving layer (:mod:`kvlib.serving`), formatted with :func:`kvlib.core.units.fmt_bytes`.

* :func:`side_by_side` / :func:`to_markdown`: notebook 04's MHA / GQA / MLA /
  MLA with RoPE on keys (re-expand keys and absorb values, and the naive extreme
  that re-expands values too) / MLA + decoupled RoPE at DeepSeek V2's shape. All
  rows score queries against 192-wide keys (d_QK + d_R = 128 + 64) and read
  128-wide values per head, and all compress their queries as DeepSeek V2 does
  (q_lora_rank 1536), so the rows differ only in what they cache and how they
  compute. Every
  row is a multi-head attention: decoupled MLA too is an MHA with 192-wide heads
  (``modeling_deepseek.py`` broadcasts the shared ``k_pe`` into every head's
  ``key_states``); what its RoPE part gives up is the cheap absorbed form, not
  equivalence to MHA.

* :func:`gpu_table`: memory, bandwidth and the reported totals of each GPU.
* :func:`refinement_table`: sessions as each refinement of the 4 x H200 estimate is applied.
* :func:`tp_table`: cache per token per GPU of a GQA and an MLA model as TP grows.
* :func:`levers_table`: cache per GPU after each lever, and who can pull it
  (:func:`lever_owner`: GQA and a sliding window are properties of the model,
  the other levers are settings an operator switches on).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kvlib.core.decode_cost import PATHS
from kvlib.core.formulas import GQA, MHA, MLA, MLA_ROPE, Attention
from kvlib.core.units import fmt_bytes
from kvlib.models.catalog import attention_label, title
from kvlib.models.spec import ModelSpec
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.serving.gpus import CATALOG, GPU
from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu
from kvlib.serving.levers import Step
from kvlib.serving.sharding import shard
from kvlib.views.style import format_context
from kvlib.views.widgets.mla import DEEPSEEK_V2

__all__ = [
    "Row", "ROWS", "side_by_side", "to_markdown", "markdown_table", "gpu_table",
    "refinement_table", "tp_table", "levers_table", "lever_owner", "lever_label",
]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]],
                   align: str = "") -> str:
    """A Markdown table; ``align`` has one letter per column, "l" or "r" (default: "l" first,
    then "r")."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"align needs one letter per column ({len(header)}), got {align!r}")
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# The parts notebook 06's table was written with (its stored output shows these rows); the
# catalog has more (issue 36): ``gpu_table(CATALOG.values())`` shows them all.
NOTEBOOK_GPUS = ("A100-40GB", "A100-80GB", "H100-80GB", "H100-NVL", "H200", "B200", "B300",
                 "GB200", "MI300X", "MI325X", "L40S", "L4", "RTX-4090", "RTX-5090")


def gpu_table(gpus: Iterable[GPU] | None = None) -> str:
    """Memory, bandwidth, the totals ``nvidia-smi`` and CUDA report (where known; CUDA's is
    the one vLLM multiplies by ``gpu_memory_utilization``) and the datasheet; by default the
    parts of :data:`NOTEBOOK_GPUS`."""
    rows = [(g.name, fmt_bytes(g.hbm_bytes, "GB"), f"{g.bandwidth / 1e12:.3g} TB/s",
             fmt_bytes(g.reported_bytes, "GB") if g.reported_bytes else "-",
             fmt_bytes(g.cuda_total_bytes, "GiB") if g.cuda_total_bytes else "-",
             g.source.split(" (")[0])
            for g in (gpus if gpus is not None else (CATALOG[n] for n in NOTEBOOK_GPUS))]
    return markdown_table(["GPU", "memory", "bandwidth", "nvidia-smi total", "CUDA total",
                           "datasheet"], rows, align="lrrrrl")


def refinement_table(steps: Sequence[tuple[str, Deployment]], context: int) -> str:
    """One row per (label, deployment): the node's KV budget, sessions of ``context`` tokens
    (exact, shown to 2 decimals) and the change from the row before; a last row floors the
    last deployment's sessions to whole ones."""
    rows, previous = [], None
    for label, d in steps:
        s = d.sessions(context)
        change = "" if previous is None else f"{float(s - previous):+.2f}"
        rows.append((label, fmt_bytes(d.kv_budget_bytes_per_gpu * d.gpus, "GB"),
                     f"{float(s):.2f}", change))
        previous = s
    if steps:
        whole = steps[-1][1].max_sequences_per_replica(context)
        rows.append(("whole sessions: floor", "", str(whole), f"{whole - float(previous):+.2f}"))
    return markdown_table(["step", "KV budget (node)", "sessions", "change"], rows)


def tp_table(gqa: ModelSpec, mla: ModelSpec, tps: Sequence[int] = (1, 2, 4, 8, 16)) -> str:
    """Per TP: each model's cache per token per GPU, the KV heads each GPU holds and how many
    GPUs hold each head (copies), and the ratio of the two caches.

    Both models' first layer group decides the head counts (every group of these models
    shares them).
    """
    rows = []
    for tp in tps:
        g = kv_bytes_per_sequence_per_gpu(gqa, 1, tp=tp, block_size=1)
        m = kv_bytes_per_sequence_per_gpu(mla, 1, tp=tp, block_size=1)
        _, heads = shard(gqa.groups[0], tp)
        _, latent = shard(mla.groups[0], tp)
        rows.append((str(tp), fmt_bytes(g, "KiB"), str(heads.per_rank), f"x{heads.replicas}",
                     fmt_bytes(m, "KiB"), f"x{latent.replicas}", f"{g / m:.2f}"))
    a, b = attention_label(gqa), attention_label(mla)
    return markdown_table(
        ["TP", f"{title(gqa)} ({a}) per token per GPU", "KV heads/GPU", "copies",
         f"{title(mla)} ({b}) per token per GPU", "latent copies", f"{a}/{b}"], rows)


# Levers that are properties of the model: an operator cannot switch them on for a model
# trained without them, only choose another model (blog post B lists GQA as a lever).
MODEL_LEVERS = {
    "GQA": "choose a model with fewer KV heads (GQA)",
    "sliding window": "choose a model trained with a sliding window",
}


def _model_lever(lever: str) -> str | None:
    name = lever.split(" ", 1)[1] if lever[:1].isdigit() else lever
    return name if name in MODEL_LEVERS else None


def lever_owner(lever: str) -> str:
    """"model choice" for a lever that is a property of the model (GQA, a sliding window),
    "operator" for a serving setting (paging, KV dtype, max_model_len, batch)."""
    return "model choice" if _model_lever(lever) else "operator"


def lever_label(lever: str, width: int | None = None) -> str:
    """The lever's name, with a model property spelt as the choice it really is
    ("3 GQA" -> "3 choose a model with fewer KV heads (GQA)"); ``width`` wraps it onto lines
    of at most that many characters (for axis labels)."""
    name = _model_lever(lever)
    number = lever.split(" ", 1)[0] + " " if lever[:1].isdigit() else ""
    label = lever if name is None else number + MODEL_LEVERS[name]
    return label if width is None else textwrap.fill(label, width)


def levers_table(steps: Sequence[Step], unit: str = "GiB", owners: bool = False) -> str:
    """One row per lever step: what changed, the cache per GPU, and the factor over the step
    before. A model property is named as the choice it is (:func:`lever_label`); ``owners``
    adds a column saying who can pull each lever (:func:`lever_owner`)."""
    rows = []
    for i, s in enumerate(steps):
        factor = "" if i == 0 else f"/{steps[i - 1].kv_bytes_per_gpu / s.kv_bytes_per_gpu:.2f}"
        owner = ("" if i == 0 else lever_owner(s.lever),) if owners else ()
        rows.append((lever_label(s.lever), s.change, *owner,
                     fmt_bytes(s.kv_bytes_per_gpu, unit), factor))
    header = ["lever", "change", *(["who decides"] if owners else []), "KV per GPU", "factor"]
    return markdown_table(header, rows, align="lllrr" if owners else "llrr")


# --- notebook 04: the four designs side by side -------------------------------------

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
# DeepSeek V2's query compression (q_lora_rank) in every row, so rows differ only in what
# they cache and how they compute.
_HEAD = dict(N_h=_S["N_h"], d_in=_S["d_in"], d_V=_S["d_V"], d_Lq=_S["d_Lq"])
_WIDE = dict(_HEAD, d_QK=_S["d_QK"] + _S["d_R"])  # one 192-wide key per head, no separate RoPE part
_Q = ", query latent"

ROWS = (
    Row("MHA (decompressed heads)", MHA, dict(N_h=_S["N_h"], d_QK=192, d_V=_S["d_V"]),
        "MHA" + _Q, _WIDE, "the reference"),
    Row("GQA, 8 KV heads (illustrative)", GQA, dict(N_h=_S["N_h"], N_g=8, d_QK=192, d_V=_S["d_V"]),
        "GQA" + _Q, dict(_WIDE, N_g=8),
        "exactly MHA with each KV head repeated for its 16 query heads"),
    Row("MLA, no RoPE, absorbed", MLA, dict(d_L=_S["d_L"]), "MLA absorbed" + _Q,
        dict(_WIDE, d_L=_S["d_L"]),
        "exactly MHA with rank-512 key and value projections; absorbed = naive"),
    Row("MLA, RoPE on keys: re-expand keys, absorb values", MLA, dict(d_L=_S["d_L"]),
        "MLA+RoPE(keys) absorbed values" + _Q, dict(_WIDE, d_L=_S["d_L"]),
        "exactly MHA with rank-512 key and value projections, RoPE on the keys; W^LK has no "
        "absorbed form, so every step rebuilds and rotates every key, while the values are "
        "still absorbed (latents summed, then W^LV once per head)"),
    Row("MLA, RoPE on keys: re-expand keys and values (naive extreme)", MLA,
        dict(d_L=_S["d_L"]), "MLA+RoPE(keys) naive" + _Q, dict(_WIDE, d_L=_S["d_L"]),
        "the same function as the row above, computed the slow way: every value rebuilt too"),
    Row("MLA + decoupled RoPE, absorbed", MLA_ROPE, dict(d_L=_S["d_L"], d_R=_S["d_R"]),
        "MLA+RoPE absorbed" + _Q, dict(_HEAD, d_QK=_S["d_QK"], d_L=_S["d_L"], d_R=_S["d_R"]),
        "exactly MHA with 192-wide heads: 128 dims from rank-512 key projections, 64 RoPE dims "
        "whose key is shared by all heads, rank-512 values; absorbed = naive for the latent "
        "part, while the RoPE part has no cheap absorbed form (it is scored as it is)"),
)


def side_by_side(contexts=(4096, 131072), N_L: int = _S["N_L"], b=_S["b"]) -> list[dict]:
    """For each row: cached elements per token per layer, bytes per token (N_L layers, b bytes),
    attention FLOPs per generated token (one decode step through all N_L layers), and the
    FLOPs per byte of cache read (each cached token's FLOPs over its bytes: the step's
    arithmetic intensity at long context, :attr:`DecodePath.context_intensity`)."""
    out = []
    for r in ROWS:
        f = r.kind.elements_per_token_layer
        elements = f(**{k: v for k, v in r.cache_sizes.items() if k in f.args or k == "N_h"})
        path = PATHS[r.path]
        per_token = r.kind.bytes_per_token(
            **{k: v for k, v in r.cache_sizes.items()
               if k in r.kind.bytes_per_token.args or k == "N_h"}, N_L=N_L, b=b)
        flops = {n: N_L * path.formula(**r.step_sizes, N_KV=n) for n in contexts}
        intensity = path.context_intensity_formula(
            **{k: v for k, v in {**r.step_sizes, **r.cache_sizes, "b": b}.items()
               if k in path.context_intensity_formula.args})
        out.append(dict(label=r.label, elements=elements, bytes_per_token=per_token, flops=flops,
                        intensity=intensity, equivalent=r.equivalent))
    return out


def to_markdown(rows: list[dict]) -> str:
    """The table as Markdown (GFLOPs per generated token, all layers)."""
    contexts = list(rows[0]["flops"])
    head = ("| design | cached elements / token / layer | bytes / token | "
            + " | ".join(f"GFLOPs / token at {format_context(n)}" for n in contexts)
            + " | FLOPs per byte of cache | mathematically equivalent to |")
    lines = [head, "|" + "---|" * (5 + len(contexts))]
    for r in rows:
        flops = " | ".join(f"{r['flops'][n] / 1e9:,.1f}" for n in contexts)
        lines.append(f"| {r['label']} | {r['elements']:,} | {r['bytes_per_token']:,} "
                     f"({fmt_bytes(r['bytes_per_token'], 'KiB')}) | {flops} | "
                     f"{float(r['intensity']):,.0f} | {r['equivalent']} |")
    return "\n".join(lines)
