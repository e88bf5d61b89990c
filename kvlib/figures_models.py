"""Figures of real models (notebook 05), drawn on a given Axes; ``FIGURES`` for ``make figures``.

* :func:`plot_table_3`: the paper's simplified Table 3 against the corrected values.
* :func:`plot_layer_map`: which layers keep every token and which keep a window.
* :func:`plot_models_vs_context`: cache of one sequence vs context, per model.
* :func:`plot_params_vs_cache`: parameter count vs bytes per token.

Every number comes from :mod:`kvlib.models` (layer groups over the generated formulas).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.ticker as mticker
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from kvlib.models import BUNDLED, attention_label, load_model, reading, simplified, title
from kvlib.plotting import (
    COLORS,
    context_ticks,
    log_value_axis,
    plot_bars,
    plot_cache_vs_context,
)
from kvlib.spec import CacheKind
from kvlib.units import UNITS

__all__ = [
    "TABLE_3", "CONTEXT_MODELS", "LAYER_MAP_MODELS", "KIND_COLORS", "table_3_rows",
    "render_table_3", "plot_table_3", "plot_layer_map", "plot_models_vs_context",
    "plot_params_vs_cache", "FIGURES",
]

TABLE_3 = ("gemma-3-27b", "llama-3-70b", "deepseek-v2")  # the paper's Table 3
CONTEXT_MODELS = ("llama-3.1-70b", "gemma-3-27b", "qwen3-32b", "llama-4-scout",
                  "mistral-7b-v0.1", "deepseek-v3", "gpt-oss-20b")
LAYER_MAP_MODELS = ("gemma-3-27b", "gemma-2-9b", "llama-4-scout", "gpt-oss-20b")
KIND_COLORS = {CacheKind.FULL: COLORS["GQA"], CacheKind.SLIDING: "#F0E442",
               CacheKind.CHUNKED: COLORS["MQA"], CacheKind.LATENT: COLORS["MLA+RoPE"]}
PAPER_COLOR = "#999999"
T128K = 131072
BF16 = 2


def table_3_rows(names: Sequence[str] = TABLE_3, context: int = T128K, b=BF16) -> list[dict]:
    """Per model: bytes per token and per sequence of ``context`` tokens, paper vs corrected."""
    rows = []
    for name in names:
        spec = load_model(name)
        paper = simplified(spec)
        rows.append(dict(
            name=name, title=title(spec), attention=attention_label(spec),
            layers=spec.num_layers, params=spec.params,
            paper_per_token=paper.kv_bytes_per_token(b),
            paper_per_sequence=paper.kv_bytes_per_sequence(context, b),
            per_token=spec.kv_bytes_per_token(b),
            per_sequence=spec.kv_bytes_per_sequence(context, b),
        ))
    return rows


def _kib(n) -> str:
    return f"{float(n) / UNITS['KiB']:,.4g} KiB"


def _gib(n) -> str:
    return f"{float(n) / UNITS['GiB']:,.4g} GiB"


def render_table_3(rows: list[dict], corrected: bool, context: int = T128K) -> str:
    """A Markdown table of :func:`table_3_rows`, the paper's view or the corrected one."""
    head = f"| model | attention | layers | per token | {context:,} tokens |"
    lines = [head, "|---|---|---|---|---|"]
    for r in rows:
        tok = r["per_token"] if corrected else r["paper_per_token"]
        seq = r["per_sequence"] if corrected else r["paper_per_sequence"]
        lines.append(f"| {r['title']} | {r['attention']} | {r['layers']} | {_kib(tok)} "
                     f"| {_gib(seq)} |")
    return "\n".join(lines)


def plot_table_3(ax_token, ax_context, rows: list[dict], context: int = T128K) -> None:
    """Two bar panels: KiB per token and GiB at ``context`` tokens, paper vs corrected."""
    labels, per_token, per_seq, colors = [], [], [], []
    for r in rows:
        short = r["title"].replace(" ", "\n", 1)
        kind_color = COLORS["MLA+RoPE"] if r["attention"] == "MLA" else COLORS["GQA"]
        labels += [f"{short}\npaper", f"{short}\ncorrected"]
        per_token += [r["paper_per_token"], r["per_token"]]
        per_seq += [r["paper_per_sequence"], r["per_sequence"]]
        colors += [PAPER_COLOR, kind_color]
    plot_bars(ax_token, labels, per_token, "KiB", "Per token", "KV cache per token",
              colors=colors)
    plot_bars(ax_context, labels, per_seq, "GiB",
              f"One sequence of {context:,} tokens", "KV cache", colors=colors)
    for ax in (ax_token, ax_context):
        ax.tick_params(axis="x", labelsize=11)
        ax.margins(y=0.15)
    ax_token.legend(handles=[Patch(color=PAPER_COLOR, label="paper's simplification"),
                             Patch(color=COLORS["GQA"], label="corrected (GQA)"),
                             Patch(color=COLORS["MLA+RoPE"], label="corrected (MLA + RoPE key)")],
                    loc="upper right", frameon=False, fontsize=11)


def plot_layer_map(ax, names: Sequence[str] = LAYER_MAP_MODELS) -> None:
    """One row per model, one cell per layer, coloured by cache kind (window in the legend)."""
    seen: dict = {}
    for row, name in enumerate(names):
        layers = reading(name).layer_map()
        for i, (kind, window) in enumerate(layers):
            ax.add_patch(_cell(i, row, KIND_COLORS[kind]))
            key = (kind, window)
            seen.setdefault(key, f"{kind}" + (f" ({window:,} tokens)" if window else ""))
        n_full = sum(k is CacheKind.FULL for k, _ in layers)
        local = [w for k, w in layers if k is not CacheKind.FULL]
        what = f"; {len(local)} keep {local[0]:,}" if local else ""
        ax.annotate(f"{n_full} of {len(layers)} keep every token{what}", (len(layers) + 0.8, row),
                    va="center", fontsize=12)
    ax.set_xlim(-0.5, 90)
    ax.set_ylim(len(names) - 0.4, -0.6)
    ax.set_yticks(range(len(names)), [BUNDLED[n].title for n in names])
    ax.set_xlabel("layer index")
    ax.grid(False)
    ax.set_title("Which layers keep every token (full) and which keep a window")
    kinds_in_use = sorted({k for k, _ in seen}, key=list(KIND_COLORS).index)
    ax.legend(handles=[Patch(color=KIND_COLORS[k], label=_kind_label(k, seen))
                       for k in kinds_in_use],
              loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False,
              ncols=len(kinds_in_use), fontsize=12)


def _kind_label(kind, seen) -> str:
    windows = sorted(w for k, w in seen if k is kind and w)
    if not windows:
        return str(kind)
    return f"{kind} ({', '.join(f'{w:,}' for w in windows)} tokens)"


def _cell(i, row, color):
    from matplotlib.patches import Rectangle

    return Rectangle((i - 0.45, row - 0.35), 0.9, 0.7, color=color)


def plot_models_vs_context(ax, names: Sequence[str] = CONTEXT_MODELS, b=BF16,
                           contexts: Sequence[int] | None = None) -> None:
    """Bytes of one sequence vs context (log-log), each line stopping at the model's limit."""
    contexts = np.array(contexts if contexts is not None else context_ticks(1024, 1 << 20))
    series, colors = {}, {}
    palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
    for i, name in enumerate(names):
        spec = load_model(name)
        limit = spec.max_position_embeddings or contexts[-1]
        y = np.array([float(spec.kv_bytes_per_sequence(int(t), b)) if t <= limit else np.nan
                      for t in contexts])
        label = f"{title(spec)} ({_shape(spec)})"
        series[label] = y
        colors[label.split(" ")[0]] = palette[i % len(palette)]
    lines = plot_cache_vs_context(ax, contexts, series, unit="GiB",
                                  title="KV cache of one sequence, bf16 (each line ends at the "
                                        "model's max context)")
    for line, color in zip(lines, palette * 2, strict=False):
        line.set_color(color)
    ax.legend(loc="upper left", frameon=True, framealpha=0.95, edgecolor="none", fontsize=11)


def _shape(spec) -> str:
    kinds = {str(g.kind) for g in spec.groups}
    label = attention_label(spec)
    extra = [k for k in ("sliding", "chunked") if k in kinds]
    return label + (" + " + " + ".join(extra) if extra else "")


def plot_params_vs_cache(ax, names: Sequence[str] | None = None, b=BF16) -> None:
    """Total parameters (log x) vs KiB per token (log y): size does not predict cache.

    Models at the same point (Llama 3 and 3.1 70B) share one dot and one label.
    """
    points: dict = {}
    for name in names or BUNDLED:
        spec = load_model(name)
        key = (spec.params, spec.kv_bytes_per_token(b), attention_label(spec))
        points.setdefault(key, []).append(BUNDLED[name].title if name in BUNDLED else name)
    for (params, per_token, label), titles in points.items():
        color = COLORS["MLA+RoPE"] if label == "MLA" else COLORS.get(label, COLORS["other"])
        x, y = params / 1e9, float(per_token) / UNITS["KiB"]
        ax.scatter([x], [y], s=90, color=color, zorder=3)
        below = y < 200 and 5 < x < 7.5  # keeps Mistral 7B's label off Llama 3.1 8B's
        ax.annotate(" / ".join(titles), (x, y), xytext=(6, -14 if below else 4),
                    textcoords="offset points", fontsize=11, ha="right" if below else "left")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:,.10g}"))
    log_value_axis(ax)
    ax.set_xlabel("total parameters (billions; mixture-of-experts models count every expert)")
    ax.set_ylabel("KV cache per token (KiB, bf16)")
    ax.set_title("Model size does not predict cache size")
    ax.legend(handles=[Patch(color=COLORS[k], label=k) for k in ("MHA", "GQA", "MQA")]
              + [Patch(color=COLORS["MLA+RoPE"], label="MLA")],
              loc="lower right", frameon=False)


def _figure(draw, *, ncols: int = 1, size=(10, 5.6)) -> Figure:
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(1, ncols) if ncols > 1 else [fig.add_subplot()]
    draw(*axes)
    return fig


def table_3_figure() -> Figure:
    rows = table_3_rows()
    return _figure(lambda a, c: plot_table_3(a, c, rows), ncols=2, size=(15, 6))


def layer_map_figure() -> Figure:
    return _figure(plot_layer_map, size=(14, 4.6))


def models_vs_context_figure() -> Figure:
    return _figure(plot_models_vs_context, size=(12, 6.5))


def params_vs_cache_figure() -> Figure:
    return _figure(plot_params_vs_cache, size=(11, 6.5))


FIGURES = {
    "table_3_paper_vs_corrected": table_3_figure,
    "layer_map": layer_map_figure,
    "models_vs_context": models_vs_context_figure,
    "params_vs_cache": params_vs_cache_figure,
}
