"""Notebook 08's figure: one sequence's cache against the context, 1K to 1M tokens, for one
model of each kind the collection derives.

:data:`KINDS` names the models (all bundled), :func:`sweep` computes every curve from the
models' own layer groups (``ModelSpec.total_bytes_per_sequence``: cache and constant state),
and :func:`plot_cache_per_sequence` draws it; notebook 08's explorer
(:mod:`kvlib.views.widgets.compressed`) and the book's draw the same sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from matplotlib.figure import Figure

from kvlib.core.dtypes import bytes_per_element
from kvlib.core.units import UNITS
from kvlib.models.catalog import BUNDLED, load_model
from kvlib.views.style import context_axis, context_ticks, log_value_axis

__all__ = ["KINDS", "CONTEXTS", "COLORS", "DTYPES", "Curve", "sweep", "plot_cache_per_sequence",
           "FIGURES"]

# (kind, bundled model): one model per way of keeping the context
KINDS: tuple[tuple[str, str], ...] = (
    ("MHA", "llama-2-7b"),
    ("GQA", "llama-3.1-8b"),
    ("MLA", "deepseek-v3"),
    ("MLA + indexer", "deepseek-v3.2"),
    ("compressed", "deepseek-v4-pro"),
    ("Gated DeltaNet hybrid", "qwen3-next-80b-a3b"),
    ("shared KV", "gemma-3n-e4b"),
)
CONTEXTS = tuple(context_ticks(1024, 1 << 20))  # 1K .. 1M tokens, doubling
# Okabe-Ito, one colour per kind (V4 in the strongest)
COLORS = ("#999999", "#0072B2", "#56B4E9", "#009E73", "#D55E00", "#CC79A7", "#E69F00")
DTYPES = ("bf16", "fp8")


@dataclass(frozen=True)
class Curve:
    """One model's sequence at every context of :data:`CONTEXTS`.

    bytes: cache + constant state of one sequence (bytes, exact) at each context; longest: the
    model's ``max_position_embeddings`` (None if its config has none).
    """

    kind: str
    name: str
    title: str
    bytes: tuple[int, ...]
    longest: int | None


@cache
def sweep(kv_dtype: str = "bf16", kinds=KINDS) -> tuple[Curve, ...]:
    """Every model of ``kinds`` at every context, its cache at ``kv_dtype`` (``bf16`` or
    ``fp8``); DeepSeek V4's entries keep their own layout (vLLM's fp8_ds_mla, 584 B) and the
    recurrent states vLLM's state dtypes, whatever ``kv_dtype`` says."""
    if kv_dtype not in DTYPES:
        raise ValueError(f"kv_dtype={kv_dtype!r}: this figure draws {' or '.join(DTYPES)}")
    b = bytes_per_element(kv_dtype)
    out = []
    for kind, name in kinds:
        spec = load_model(name)
        out.append(Curve(kind, name, BUNDLED[name].title,
                         tuple(int(spec.total_bytes_per_sequence(t, b)) for t in CONTEXTS),
                         spec.max_position_embeddings))
    return tuple(out)


def plot_cache_per_sequence(ax, kv_dtype: str = "bf16", unit: str = "GiB") -> None:
    """The curves of :func:`sweep` on log-log axes; past a model's longest context, dotted."""
    for curve, color in zip(sweep(kv_dtype), COLORS, strict=True):
        y = [v / UNITS[unit] for v in curve.bytes]
        n = sum(1 for t in CONTEXTS if curve.longest is None or t <= curve.longest)
        strong = curve.kind == "compressed"
        ax.plot(CONTEXTS[:n], y[:n], color=color, marker="o", ms=4, lw=3.2 if strong else 2,
                label=f"{curve.kind}: {curve.title}")
        if n < len(CONTEXTS):
            ax.plot(CONTEXTS[max(n - 1, 0):], y[max(n - 1, 0):], color=color, ls=":", lw=2.2,
                    alpha=0.85)
    context_axis(ax, CONTEXTS[0], CONTEXTS[-1])
    log_value_axis(ax)
    ax.set_ylabel(f"cache of one sequence ({unit}, log scale)")
    ax.set_title(f"One sequence: seven ways of keeping the context ({kv_dtype} cache;\n"
                 "V4 in vLLM's fp8_ds_mla; dotted: past the model's longest context)")
    ax.legend(loc="upper left", frameon=True, framealpha=0.95, edgecolor="none", fontsize=11)


def _figure() -> Figure:
    fig = Figure(figsize=(11, 6.4), layout="constrained")
    plot_cache_per_sequence(fig.add_subplot())
    return fig


FIGURES = {"cache_per_sequence_2026": _figure}
