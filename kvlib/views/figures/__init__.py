"""``make figures``: write the collection's figures to ``figures/`` (README shows them).

Each entry of :data:`FIGURES` is a function returning a matplotlib Figure, built by
the same kvlib functions the notebooks call, so the README and the notebooks show
the same picture. Usage: ``python -m kvlib.views.figures [OUTDIR]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from kvlib.core.formulas import GQA, MHA, MQA
from kvlib.views.style import apply_style, context_ticks, plot_cache_vs_context

__all__ = ["FIGURES", "heads_vs_context", "main"]

def heads_vs_context() -> Figure:
    """Llama 3 70B's shape as MHA (all its query heads keep K and V), GQA (as shipped) and
    MQA (one KV head), 1K..128K tokens, bf16; sizes read from the bundled config.json."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.gpus import get_gpu

    (group,) = load_model("llama-3-70b").groups
    sizes = dict(N_L=group.layers, b=2, **group.sizes)
    kv_heads = sizes.pop("N_g")
    contexts = np.array(context_ticks())
    h200 = get_gpu("H200").hbm_bytes
    fig = Figure(figsize=(10, 5.6), layout="constrained")
    ax = fig.add_subplot()
    plot_cache_vs_context(ax, contexts, {
        f"MHA: {sizes['N_h']} KV heads": MHA.bytes_per_sequence(**sizes, N_KV=contexts),
        f"GQA: {kv_heads} KV heads (Llama 3 70B as shipped)":
            GQA.bytes_per_sequence(**sizes, N_g=kv_heads, N_KV=contexts),
        "MQA: 1 KV head": MQA.bytes_per_sequence(**sizes, N_KV=contexts),
    }, unit="GiB", title="Llama 3 70B: KV cache of one sequence (bf16)",
        hline=(h200, f"one H200 ({h200 // 10**9} GB)"))
    return fig


def rope_price() -> Figure:
    """DeepSeek V2's decoupled RoPE: cache bytes and decode FLOPs against RoPE on the keys
    (re-expand keys, absorb values; and the naive extreme), the figure of notebook 04."""
    from kvlib.views.widgets.mla import draw, rope_price

    fig = Figure(figsize=(14, 5.6), layout="constrained")
    draw(fig, rope_price(d_L=512, d_R=64, N_h=128, context=131072))
    return fig


def _collect() -> dict[str, Callable[[], Figure]]:
    from kvlib.views.figures import capacity, compressed, hybrid, mla, models

    return {"heads_vs_context": heads_vs_context, "rope_price": rope_price,
            **mla.FIGURES, **models.FIGURES, **capacity.FIGURES, **hybrid.FIGURES,
            **compressed.FIGURES}


FIGURES = _collect()


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:] or ["figures"])[0])
    out.mkdir(parents=True, exist_ok=True)
    apply_style()
    for name, make in FIGURES.items():
        path = out / f"{name}.png"
        make().savefig(path, metadata={"Software": None})
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
