"""Figures of real models (notebook 05), drawn on a given Axes; ``FIGURES`` for ``make figures``.

* :func:`plot_table_3`: blog post A's Table 3 arithmetic against the corrected values. (The
  paper's Table 3 lists the three models' specs; the per-token and 128K figures are the blog
  post's own, computed from those specs with the paper's Table 1 / Table 2 formulas.)
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

from kvlib.core.units import UNITS, fmt_bytes
from kvlib.models.catalog import (
    BUNDLED,
    HYBRIDS,
    attention_label,
    load_model,
    reading,
    simplified,
    title,
)
from kvlib.models.spec import CacheKind
from kvlib.views.style import (
    COLORS,
    context_axis,
    context_ticks,
    format_context,
    log_value_axis,
    plain_log_axis,
    plot_bars,
)

__all__ = [
    "TABLE_3", "CONTEXT_MODELS", "LAYER_MAP_MODELS", "KIND_COLORS", "table_3_rows",
    "render_table_3", "plot_table_3", "plot_layer_map", "CONTEXT_STYLES", "context_points",
    "plot_models_vs_context",
    "plot_params_vs_cache", "FIGURES",
]

TABLE_3 = ("gemma-3-27b", "llama-3-70b", "deepseek-v2")  # the models of the paper's Table 3
CONTEXT_MODELS = ("llama-3.1-70b", "gemma-3-27b", "qwen3-32b", "llama-4-scout",
                  "mistral-7b-v0.1", "deepseek-v3", "gpt-oss-20b")
LAYER_MAP_MODELS = ("gemma-3-27b", "gemma-2-9b", "llama-4-scout", "gpt-oss-20b")
KIND_COLORS = {CacheKind.FULL: COLORS["GQA"], CacheKind.SLIDING: "#F0E442",
               CacheKind.CHUNKED: COLORS["MQA"], CacheKind.LATENT: COLORS["MLA+RoPE"],
               CacheKind.INDEXER: "#661100",
               # constant-size states and empty layers (notebook 07), from Paul Tol's palette
               CacheKind.MAMBA: "#44AA99", CacheKind.LINEAR: "#882255",
               CacheKind.CONV: "#AA4499", CacheKind.NONE: "#DDDDDD", CacheKind.SHARED: "#999933",
               CacheKind.COMPRESSED: "#332288"}  # DeepSeek V4's compressed layers (notebook 08)
POST_A_COLOR = "#999999"
T128K = 131072
BF16 = 2


def table_3_rows(names: Sequence[str] = TABLE_3, context: int = T128K, b=BF16) -> list[dict]:
    """Per model: bytes per token and per sequence of ``context`` tokens, blog post A's
    arithmetic (``post_a_*`` keys: the simplified formulas applied to the paper's Table 3 specs)
    vs corrected."""
    rows = []
    for name in names:
        spec = load_model(name)
        post_a = simplified(spec)
        rows.append(dict(
            name=name, title=title(spec), attention=attention_label(spec),
            layers=spec.num_layers, params=spec.params,
            post_a_per_token=post_a.kv_bytes_per_token(b),
            post_a_per_sequence=post_a.kv_bytes_per_sequence(context, b),
            per_token=spec.kv_bytes_per_token(b),
            per_sequence=spec.kv_bytes_per_sequence(context, b),
        ))
    return rows


def render_table_3(rows: list[dict], corrected: bool, context: int = T128K) -> str:
    """A Markdown table of :func:`table_3_rows`, blog post A's arithmetic or the corrected one.

    Sizes print with at most two decimals (``fmt_bytes``), as everywhere else.
    """
    head = f"| model | attention | layers | per token | {context:,} tokens |"
    lines = [head, "|---|---|---|---|---|"]
    for r in rows:
        tok = r["per_token"] if corrected else r["post_a_per_token"]
        seq = r["per_sequence"] if corrected else r["post_a_per_sequence"]
        lines.append(f"| {r['title']} | {r['attention']} | {r['layers']} "
                     f"| {fmt_bytes(tok, 'KiB')} | {fmt_bytes(seq, 'GiB')} |")
    return "\n".join(lines)


def plot_table_3(ax_token, ax_context, rows: list[dict], context: int = T128K) -> None:
    """Two bar panels: KiB per token and GiB at ``context`` tokens, blog post A's Table 3
    arithmetic vs corrected."""
    labels, per_token, per_seq, colors = [], [], [], []
    for r in rows:
        short = r["title"].replace(" ", "\n", 1)
        kind_color = COLORS["MLA+RoPE"] if r["attention"] == "MLA" else COLORS["GQA"]
        labels += [f"{short}\npost A", f"{short}\ncorrected"]
        per_token += [r["post_a_per_token"], r["per_token"]]
        per_seq += [r["post_a_per_sequence"], r["per_sequence"]]
        colors += [POST_A_COLOR, kind_color]
    plot_bars(ax_token, labels, per_token, "KiB", "Per token", "KV cache per token",
              colors=colors)
    plot_bars(ax_context, labels, per_seq, "GiB",
              f"One sequence of {context:,} tokens", "KV cache", colors=colors)
    for ax in (ax_token, ax_context):
        ax.tick_params(axis="x", labelsize=11)
        ax.margins(y=0.15)
    ax_token.legend(handles=[Patch(color=POST_A_COLOR, label="blog post A's Table 3 arithmetic"),
                             Patch(color=COLORS["GQA"], label="corrected (GQA)"),
                             Patch(color=COLORS["MLA+RoPE"], label="corrected (MLA + RoPE key)")],
                    loc="upper right", frameon=False, fontsize=11)
    ax_token.figure.suptitle("Blog post A's Table 3 arithmetic vs corrected (bf16)",
                             fontsize=15, fontweight="bold")


def _summary(layers) -> str:
    """'10 of 62 keep every token; 52 keep 1,024' (and states, empty layers) for one row."""
    every = sum(k in (CacheKind.FULL, CacheKind.LATENT) for k, _ in layers)
    parts = [f"{every} of {len(layers)} keep every token"]
    windows = [w for k, w in layers if w]
    if windows:
        parts.append(f"{len(windows)} keep {windows[0]:,}")
    states = sum(k in (CacheKind.MAMBA, CacheKind.LINEAR, CacheKind.CONV) for k, _ in layers)
    if states:
        parts.append(f"{states} a fixed state")
    empty = sum(k in (CacheKind.NONE, CacheKind.SHARED) for k, _ in layers)
    if empty:
        parts.append(f"{empty} nothing")
    return "; ".join(parts)


def plot_layer_map(ax, names: Sequence[str] = LAYER_MAP_MODELS,
                   title: str = "Which layers keep every token (full) and which keep a window",
                   ) -> None:
    """One row per model, one cell per layer, coloured by cache kind (window in the legend).

    The x axis spans the deepest model's layers; each row's summary ("10 of 62
    keep every token; ...") sits in a column right of the axes.
    """
    from matplotlib.collections import PatchCollection

    seen: dict = {}
    depth = 0
    cells = []
    for row, name in enumerate(names):
        layers = reading(name).layer_map()
        depth = max(depth, len(layers))
        for i, (kind, window) in enumerate(layers):
            cells.append(_cell(i, row, KIND_COLORS[kind]))
            key = (kind, window)
            seen.setdefault(key, f"{kind}" + (f" ({window:,} tokens)" if window else ""))
        ax.annotate(_summary(layers), (1.0, row),
                    xycoords=("axes fraction", "data"), xytext=(12, 0),
                    textcoords="offset points", va="center", fontsize=12)
    # One collection, not a patch per layer: hundreds of add_patch calls each updated the
    # data limits the next lines set anyway, and each cell was drawn as its own path.
    ax.add_collection(PatchCollection(cells, match_original=True), autolim=False)
    ax.set_xlim(-0.7, depth - 0.3)
    ax.set_ylim(len(names) - 0.4, -0.6)
    ax.set_yticks(range(len(names)), [BUNDLED[n].title for n in names])
    ax.xaxis.set_major_locator(mticker.MultipleLocator(10))
    ax.set_xlabel("layer index")
    ax.grid(False)
    # The legend sits between the title and the cells, where a reader looks first (below the
    # axes it fell out of view in a notebook's output area).
    ax.set_title(title, pad=38)
    kinds_in_use = sorted({k for k, _ in seen}, key=list(KIND_COLORS).index)
    ax.legend(handles=[Patch(color=KIND_COLORS[k], label=_kind_label(k, seen))
                       for k in kinds_in_use],
              loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False,
              ncols=len(kinds_in_use), fontsize=12)


def _kind_label(kind, seen) -> str:
    windows = sorted(w for k, w in seen if k is kind and w)
    if not windows:
        return str(kind)
    return f"{kind} ({', '.join(f'{w:,}' for w in windows)} tokens)"


def _cell(i, row, color):
    from matplotlib.patches import Rectangle

    return Rectangle((i - 0.45, row - 0.35), 0.9, 0.7, color=color)


# Colour, marker and line style per model of CONTEXT_MODELS (Okabe-Ito; DeepSeek V3 in the
# MLA colour of the other figures). Neighbouring blues differ in marker and style too.
CONTEXT_STYLES = {
    "llama-3.1-70b": ("#0072B2", "o", "-"),
    "gemma-3-27b": ("#D55E00", "s", "-"),
    "qwen3-32b": ("#009E73", "^", "-"),
    "llama-4-scout": ("#CC79A7", "D", "-"),
    "mistral-7b-v0.1": ("#56B4E9", "v", "--"),
    "deepseek-v3": (COLORS["MLA+RoPE"], "P", "--"),
    "gpt-oss-20b": ("#000000", "X", ":"),
}
OTHER_STYLES = [("#999999", "o", "-."), ("#F0E442", "s", "-.")]


def context_points(limit: int | None, lo: int = 1024, hi: int = 1 << 20) -> list[int]:
    """The contexts drawn for a model: powers of two from ``lo`` up to its limit, then the limit.

    A ``limit`` that is not a power of two (DeepSeek V3's 163,840, Qwen3's
    40,960) is appended so the line ends at the model's real maximum; limits
    beyond ``hi`` (or none) stop at ``hi``.
    """
    end = min(limit or hi, hi)
    points = context_ticks(lo, end)
    if points[-1] != end:
        points.append(end)
    return points


def plot_models_vs_context(ax, names: Sequence[str] = CONTEXT_MODELS, b=BF16,
                           hi: int = 1 << 20) -> list:
    """Bytes of one sequence vs context (log-log), each line ending at the model's max context.

    Models allowed more than ``hi`` tokens stop at ``hi`` (said in their label).
    Returns the Line2D per model.
    """
    lines = []
    for i, name in enumerate(names):
        spec = load_model(name)
        limit = spec.max_position_embeddings
        x = context_points(limit, hi=hi)
        y = np.array([float(spec.kv_bytes_per_sequence(t, b)) for t in x]) / UNITS["GiB"]
        color, marker, ls = CONTEXT_STYLES.get(name, OTHER_STYLES[i % len(OTHER_STYLES)])
        if limit is None:
            end = ""
        elif limit > hi:
            end = f", max {format_context(limit)}, drawn to {format_context(hi)}"
        else:
            end = f", max {format_context(limit)}"
        (line,) = ax.plot(x, y, color=color, marker=marker, ls=ls, ms=8,
                          label=f"{title(spec)} ({_shape(spec)}{end})")
        lines.append(line)
    context_axis(ax, 1024, hi)
    log_value_axis(ax)
    ax.set_ylabel("KV cache (GiB, log scale)")
    ax.set_title("KV cache of one sequence, bf16, up to each model's max context")
    # Lines rise to the right; below them, right of 32K, the plot is empty.
    ax.legend(loc="lower right", frameon=True, framealpha=0.95, edgecolor="none", fontsize=11)
    return lines


def _shape(spec) -> str:
    kinds = {str(g.kind) for g in spec.groups}
    label = attention_label(spec)
    extra = [k for k in ("sliding", "chunked") if k in kinds]
    return label + (" + " + " + ".join(extra) if extra else "")


# Labels that would sit on a neighbour's dot or label: (offset in points, alignment).
LABEL_PLACES = {
    "Mistral 7B v0.1": ((6, -14), "right"),  # off Llama 3.1 8B's
    "DeepSeek V2": ((0, -20), "center"),  # DeepSeek V3 sits just right of it
    "DeepSeek V3": ((0, 9), "center"),
}


def plot_params_vs_cache(ax, names: Sequence[str] | None = None, b=BF16) -> None:
    """Total parameters (log x) vs KiB per token (log y): size does not predict cache.

    Models at the same point (Llama 3 and 3.1 70B) share one dot and one label.
    """
    points: dict = {}
    # by default the attention-only models: hybrids' per-token cost tells half their story
    # (notebook 07 plots cache + state)
    default = [n for n in BUNDLED if n not in HYBRIDS]
    for name in names or default:
        spec = load_model(name)
        key = (spec.params, spec.kv_bytes_per_token(b), attention_label(spec))
        points.setdefault(key, []).append(BUNDLED[name].title if name in BUNDLED else name)
    for (params, per_token, label), titles in points.items():
        color = COLORS["MLA+RoPE"] if label == "MLA" else COLORS.get(label, COLORS["other"])
        x, y = params / 1e9, float(per_token) / UNITS["KiB"]
        ax.scatter([x], [y], s=90, color=color, zorder=3)
        text = " / ".join(titles)
        offset, ha = LABEL_PLACES.get(text, ((6, 4), "left"))
        ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=11, ha=ha)
    plain_log_axis(ax.xaxis)  # decades
    log_value_axis(ax)
    ax.set_xlabel("total parameters (billions, log scale; mixture-of-experts: every expert)")
    ax.set_ylabel("KV cache per token (KiB, bf16, log scale)")
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
    "table_3_post_a_vs_corrected": table_3_figure,
    "layer_map": layer_map_figure,
    "models_vs_context": models_vs_context_figure,
    "params_vs_cache": params_vs_cache_figure,
}
