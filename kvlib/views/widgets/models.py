"""Notebook 05's explorer: a bundled or pasted model's cache, broken down by layer group.

:func:`breakdown` is the computation (it is :func:`kvlib.models.estimate`, the
same one ``kvlib estimate`` prints); :func:`render` and :func:`draw` show it, and
:func:`model_explorer` wires it to controls (model, a pasted config.json, context,
batch, KV dtype). :func:`read_pasted` and :func:`pasted_config_box` are shared with
notebook 06's planner (:mod:`kvlib.views.widgets.capacity`); the table and the size of
each number come from :mod:`kvlib.views.widgets.kit`.
"""

from __future__ import annotations

import json

import ipywidgets as widgets

from kvlib.core.dtypes import VLLM_EXACT_KV_DTYPES
from kvlib.core.units import UNITS
from kvlib.models.catalog import BUNDLED, attention_label, title
from kvlib.models.estimate import Estimate, estimate
from kvlib.models.readers import read_config
from kvlib.models.spec import ModelSpec
from kvlib.views.figures.models import KIND_COLORS
from kvlib.views.style import context_ticks, format_context
from kvlib.views.widgets.kit import fmt_size as size
from kvlib.views.widgets.kit import html_table, labelled_hbars

__all__ = ["CONTEXTS", "read_pasted", "pasted_config_box", "breakdown", "render", "draw",
           "figure_height", "model_explorer"]

CONTEXTS = context_ticks(1024, 1 << 20)  # 1K .. 1M tokens
PASTED = "pasted config.json"  # the source label of a pasted config


def read_pasted(text: str, params: int | None = None) -> tuple[ModelSpec, dict] | None:
    """A pasted ``config.json`` (JSON text) read as ``kvlib.read_config`` reads a file.

    Returns (spec, the config as a dict), or None when ``text`` is blank. Errors are the
    reader's one-line ValueErrors, as ``kvlib estimate PATH`` prints them; text that is
    not JSON, or JSON that is not an object, is refused in ``load_config``'s words.
    """
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"the pasted config is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the pasted config must hold a JSON object, got a "
                         f"{type(data).__name__}")
    return read_config(data, params=params, source_label=PASTED), data


def breakdown(model: str, context: int, batch: int, kv_dtype: str, config: str = "") -> Estimate:
    """The cache of ``batch`` sequences of ``context`` tokens, per layer group.

    model: a bundled name; config: a pasted config.json, read instead when not blank.
    """
    pasted = read_pasted(config)
    return estimate(model if pasted is None else pasted[0], context=context, batch=batch,
                    kv_dtype=kv_dtype)


def _group_name(g) -> str:
    window = f" {g.group.window:,}" if g.group.window else ""
    return f"{g.group.layers} {g.group.kind}{window}"


def _held(e: Estimate, g) -> int:
    """What the group holds for the whole batch: its growing cache plus its constant states."""
    return g.bytes_per_batch + e.batch * g.state_bytes_per_sequence


def render(e: Estimate) -> str:
    """HTML table: one row per layer group (layers, window, tokens kept, bytes), then totals.

    A constant-size state shows "state" instead of tokens kept and per-token bytes. Each
    size is in the largest unit that keeps it at least 1 (``kit.fmt_size``)."""
    rows = [[str(g.group.kind), str(g.group.layers),
             "" if g.group.window is None else f"{g.group.window:,}",
             *([f"{g.cached_tokens:,}", size(g.bytes_per_token)] if g.group.grows
               else ["state", "-"]),
             size(_held(e, g))] for g in e.groups]
    rows.append([f"<b>{v}</b>" if v else "" for v in
                 ["all", str(e.spec.num_layers), "", "", size(e.kv_bytes_per_token),
                  size(e.total_bytes)]])
    limit = e.spec.max_position_embeddings
    warn = (f"<p style='color:#b00'><b>Beyond this model's max_position_embeddings "
            f"({limit:,}).</b></p>" if limit is not None and e.context > limit else "")
    return (
        f"<p><b>{title(e.spec)}</b> ({attention_label(e.spec)}), {e.kv_dtype}, "
        f"{e.context:,} tokens x {e.batch} sequence{'s' if e.batch > 1 else ''}</p>{warn}"
        + html_table(["kind", "layers", "window", "tokens kept", "per token",
                      f"x {e.batch} sequence{'s' if e.batch > 1 else ''}"], rows,
                     [False, True, True, True, True, True]))


def figure_height(groups: int) -> float:
    """Inches for ``groups`` bars: title and axis label, plus a fixed height per bar."""
    return 1.3 + 0.45 * groups


def draw(fig, e: Estimate) -> None:
    """Horizontal bars: each group's share of the batch's cache (GiB), first group on top.

    Built once, then updated in place; a model with another number of layer groups
    replaces the bars and their labels, and the figure's height follows the number of
    bars (:func:`figure_height`). Each bar's label is in its own unit (``kit.fmt_size``).
    """
    if not fig.axes:
        ax = fig.add_subplot()
        ax.invert_yaxis()
        ax.set_xlabel("KV cache (and state) of the batch (GiB)")
        ax.grid(axis="y", visible=False)
    ax = fig.axes[0]
    held = [_held(e, g) for g in e.groups]
    if labelled_hbars(ax, [float(v) / UNITS["GiB"] for v in held], [size(v) for v in held],
                      [_group_name(g) for g in e.groups],
                      [KIND_COLORS[g.group.kind] for g in e.groups]):
        fig.set_size_inches(fig.get_size_inches()[0], figure_height(len(e.groups)))
    ax.set_title(f"{title(e.spec)}: {format_context(e.context)} tokens x {e.batch}, "
                 f"{e.kv_dtype}; total {size(e.total_bytes)}")


def model_explorer(model="gemma-3-27b", context=131072, batch=1, kv_dtype="bf16"):
    """Controls: bundled model, a pasted config.json (read instead when not blank),
    context (1K..1M), batch (1..256), KV dtype: vLLM's names for the formats kvlib models
    exactly (:data:`kvlib.core.dtypes.VLLM_EXACT_KV_DTYPES`; the value stays kvlib's bf16 for
    bfloat16, so the default reads as before)."""
    from kvlib.views.widgets.kit import Explorer

    style = {"description_width": "90px"}
    wide = widgets.Layout(width="98%")
    c = dict(
        model=widgets.Dropdown(options=[(m.title, n) for n, m in BUNDLED.items()], value=model,
                               description="model", style=style, layout=wide),
        context=widgets.SelectionSlider(options=[(format_context(t), t) for t in CONTEXTS],
                                        value=context, description="context", style=style,
                                        layout=wide),
        batch=widgets.IntSlider(batch, min=1, max=256, description="batch", style=style,
                                layout=wide),
        kv_dtype=widgets.Dropdown(options=list(VLLM_EXACT_KV_DTYPES.items()), value=kv_dtype,
                                  description="KV dtype", style=style, layout=wide),
        config=pasted_config_box(style),
    )
    return Explorer(c, breakdown, render, draw, figsize=(9, figure_height(2)))


def pasted_config_box(style: dict) -> widgets.Textarea:
    """The text area for a pasted config.json; the Explorer gives it a row of its own, the
    width of both control columns.

    It updates when it loses focus (not on every keystroke, which would read half a file)."""
    return widgets.Textarea(
        value="", placeholder="or paste a config.json here (read instead of the model above; "
                              "clear it to go back)",
        description="config.json", continuous_update=False, style=style,
        layout=widgets.Layout(width="99%", height="60px"))
