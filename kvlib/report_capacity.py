"""Notebook 06's tables as Markdown, so its cells keep to the lesson (notebook 06).

Each function takes what the notebook computed (GPUs, deployments, lever steps)
and returns a Markdown table; every number comes from :mod:`kvlib.capacity`,
:mod:`kvlib.levers` or :mod:`kvlib.gpus`, formatted with :func:`kvlib.units.fmt_bytes`.

* :func:`gpu_table`: memory and bandwidth of each GPU.
* :func:`refinement_table`: sessions as each refinement of the 4 x H200 estimate is applied.
* :func:`tp_table`: cache per token per GPU of a GQA and an MLA model as TP grows.
* :func:`levers_table`: cache per GPU after each lever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kvlib.capacity import Deployment, kv_bytes_per_sequence_per_gpu, shard
from kvlib.gpus import CATALOG, GPU
from kvlib.levers import Step
from kvlib.models import attention_label, title
from kvlib.spec import ModelSpec
from kvlib.units import fmt_bytes

__all__ = ["markdown_table", "gpu_table", "refinement_table", "tp_table", "levers_table"]


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


def gpu_table(gpus: Iterable[GPU] | None = None) -> str:
    """Memory, bandwidth, the total ``nvidia-smi`` reports (where known) and the datasheet."""
    rows = [(g.name, fmt_bytes(g.hbm_bytes, "GB"), f"{g.bandwidth / 1e12:.3g} TB/s",
             fmt_bytes(g.reported_bytes, "GB") if g.reported_bytes else "-",
             g.source.split(" (")[0])
            for g in (gpus if gpus is not None else CATALOG.values())]
    return markdown_table(["GPU", "memory", "bandwidth", "nvidia-smi total", "datasheet"],
                          rows, align="lrrrl")


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


def levers_table(steps: Sequence[Step], unit: str = "GiB") -> str:
    """One row per lever step: what changed, the cache per GPU, and the factor over the
    step before."""
    rows = []
    for i, s in enumerate(steps):
        factor = "" if i == 0 else f"/{steps[i - 1].kv_bytes_per_gpu / s.kv_bytes_per_gpu:.2f}"
        rows.append((s.lever, s.change, fmt_bytes(s.kv_bytes_per_gpu, unit), factor))
    return markdown_table(["lever", "change", "KV per GPU", "factor"], rows, align="llrr")
