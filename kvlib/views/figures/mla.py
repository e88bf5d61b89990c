"""Notebook 04's roofline: when decoding MLA is limited by FLOPs, not by bytes read.

* :func:`decode_intensities`: FLOPs per byte of cache read for each design at DeepSeek V2's
  widths, from the decode-cost tables (:attr:`kvlib.core.decode_cost.DecodePath.context_intensity`).
* :func:`plot_roofline`: attainable FLOP/s against arithmetic intensity, one roof per GPU
  (peak dense BF16 from :mod:`kvlib.serving.compute`, bandwidth from the GPU catalog),
  with the designs marked.
* :func:`plot_intensity_vs_heads`: absorbed MLA's FLOPs per byte against the query heads
  one GPU runs for each cached latent (heads x query tokens), with each GPU's ridge point.

``FIGURES`` feeds ``make figures``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from kvlib.core.decode_cost import PATHS
from kvlib.serving.compute import peak_bf16_flops, ridge_point
from kvlib.serving.gpus import get_gpu
from kvlib.views.style import COLORS, log_value_axis, plain_log_axis

__all__ = ["ROOFLINE_GPUS", "HEADS", "decode_intensities", "plot_roofline",
           "plot_intensity_vs_heads", "mla_roofline", "FIGURES"]

ROOFLINE_GPUS = ("A100-80GB", "H200", "MI300X", "B200", "H100-80GB")
GPU_STYLES = {"A100-80GB": ("#999999", ":"), "H200": ("#000000", "--"),
              "MI300X": ("#56B4E9", "-."), "B200": ("#009E73", (0, (5, 1, 1, 1))),
              "H100-80GB": ("#555555", "-")}
HEADS = 2 ** np.arange(0, 10)  # 1 .. 512 query heads (x query tokens) per cached latent

# DeepSeek V2's widths (config.json): kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim.
_W = dict(d_L=512, d_R=64, d_QK=128, d_V=128, b=2)
_KEYS = dict(_W, d_QK=_W["d_QK"] + _W["d_R"])  # RoPE on keys: one 192-wide key per head
ABSORBED = PATHS["MLA+RoPE absorbed"]
RE_EXPAND_KEYS = PATHS["MLA+RoPE(keys) absorbed values"]


def _intensity(path, sizes: dict, **over):
    f = path.context_intensity_formula
    return f(**{k: v for k, v in {**sizes, **over}.items() if k in f.args})


def decode_intensities() -> dict[str, float]:
    """FLOPs per byte of cache read per cached token, bf16, for the designs the figure marks."""
    return {
        "MHA, any heads": float(_intensity(PATHS["MHA"], _W)),
        "GQA, 16 query heads per KV head": float(_intensity(PATHS["GQA"], _W, N_h=16, N_g=1)),
        "(b) absorbed MLA, 16 heads per GPU (TP 8)": float(_intensity(ABSORBED, _W, N_h=16)),
        "(b) absorbed MLA, 128 heads per GPU": float(_intensity(ABSORBED, _W, N_h=128)),
        "(b) absorbed MLA, 128 heads x 2 query tokens (MTP)":
            float(_intensity(ABSORBED, _W, N_h=256)),
        "(a) re-expand keys, 128 heads": float(_intensity(RE_EXPAND_KEYS, _KEYS, N_h=128)),
    }


_MARKERS = ("s", "D", "v", "o", "^", "P")


def _gpu_style(g: str) -> dict:
    color, ls = GPU_STYLES.get(g, ("black", "-"))
    return dict(color=color, ls=ls, lw=1.8)


def _design_color(label: str) -> str:
    if "(b)" in label:
        return COLORS["MLA+RoPE"]
    if "(a)" in label:
        return COLORS["MLA"]
    return COLORS[label.split(",")[0]]


def plot_roofline(ax, points: Mapping[str, float], gpus: Sequence[str] = ROOFLINE_GPUS,
                  on: str = "H200", legends: bool = True) -> tuple[list, list]:
    """Attainable TFLOP/s = min(peak, bandwidth x intensity) per GPU, intensity on a log axis;
    each design a marker on the roof of ``on``. Returns (the roofs' lines, the designs'
    markers); ``legends=False`` leaves naming them to the caller (:func:`mla_roofline`
    names them below both panels, the GPUs once for their roofs and their ridge points)."""
    lo, hi = 10 ** -0.3, 1e5  # FLOPs per byte
    roofs = []
    for g in gpus:
        peak, bw = peak_bf16_flops(g), get_gpu(g).bandwidth
        # Exact with three points: on log-log axes bandwidth x intensity is a straight
        # line up to the ridge point, the peak a flat one after it.
        x = np.array([lo, float(ridge_point(g)), hi])
        (ln,) = ax.plot(x, np.minimum(peak, bw * x) / 1e12, **_gpu_style(g),
                        label=f"{g}: ridge {float(ridge_point(g)):.0f} FLOP/B")
        roofs.append(ln)
    peak, bw = peak_bf16_flops(on), get_gpu(on).bandwidth
    marks = []
    for (label, i), m in zip(points.items(), _MARKERS, strict=False):
        (ln,) = ax.plot([i], [min(peak, bw * i) / 1e12], marker=m, ms=11, ls="none",
                        color=_design_color(label), label=f"{label}: {i:,.0f} FLOP/B")
        marks.append(ln)
    plain_log_axis(ax.xaxis)  # decades
    log_value_axis(ax)
    ax.set_xlabel("arithmetic intensity (FLOPs per byte of cache read, log scale)")
    ax.set_ylabel("attainable dense BF16 TFLOP/s (log scale)")
    ax.set_title(f"Roofline: GPUs' roofs, designs marked on the {on}'s")
    if legends:  # the roofs rise from the lower left: the upper left and lower right are free
        ax.add_artist(ax.legend(handles=roofs, loc="upper left", frameon=True,
                                framealpha=0.95, edgecolor="none"))
        ax.legend(handles=marks, loc="lower right", frameon=True, framealpha=0.95,
                  edgecolor="none")
    return roofs, marks


def plot_intensity_vs_heads(ax, gpus: Sequence[str] = ROOFLINE_GPUS,
                            legends: bool = True) -> None:
    """Absorbed MLA's FLOPs per byte of cache against N_h (query heads x query tokens per
    cached latent on one GPU), with MHA and each GPU's ridge point (named in the legend
    unless ``legends=False``, as in :func:`plot_roofline`)."""
    ax.plot(HEADS, _intensity(ABSORBED, _W, N_h=HEADS).astype(float), marker="o",
            color=COLORS["MLA+RoPE"], label="(b) decoupled RoPE, absorbed")
    ax.plot(HEADS, np.full(len(HEADS), float(_intensity(PATHS["MHA"], _W))), marker="o",
            color=COLORS["MHA"], label="MHA (any number of heads)")
    for g in gpus:
        ax.axhline(float(ridge_point(g)), **_gpu_style(g),
                   label=f"{g} ridge point" if legends else "_ridge")
    ax.set_xscale("log", base=2)
    ax.set_xticks(HEADS, [str(h) for h in HEADS])
    ax.minorticks_off()
    log_value_axis(ax)
    ax.set_xlabel(r"query heads per GPU $\times$ query tokens, $N_h N_Q$ (log scale)")
    ax.set_ylabel("FLOPs per byte of cache read (log scale)")
    ax.set_title("Compute-bound above the GPU's ridge point")
    # Below the rising MLA line and above MHA's flat one, the right half is free.
    ax.legend(loc="center right", bbox_to_anchor=(1, 0.3), frameon=True, framealpha=0.95,
              edgecolor="none")


def mla_roofline() -> Figure:
    """Both panels at DeepSeek V2's widths (d_L 512, d_R 64, bf16). The legends sit below
    the panels, at the house legend size: the designs, and the GPUs, each GPU's line a roof
    on the left and a ridge point on the right (inside the panels, 11 entries at a readable
    size would cover the roofs and the MHA marker)."""
    fig = Figure(figsize=(15, 8.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    roofs, marks = plot_roofline(left, decode_intensities(), legends=False)
    plot_intensity_vs_heads(right, legends=False)
    fig.legend(handles=marks, loc="outside lower left", ncols=1, frameon=False,
               title="designs, marked on the H200's roof (left)", title_fontsize=13)
    fig.legend(handles=roofs, loc="outside lower right", ncols=1, frameon=False,
               title="GPUs: roof (left), ridge point (right)", title_fontsize=13,
               handlelength=2.6)
    fig.suptitle(r"Decoding DeepSeek V2 ($d_L$ = 512, $d_R$ = 64, bf16): absorbed MLA "
                 "with many heads is limited by FLOPs, not bytes", fontsize=15,
                 fontweight="bold")
    return fig


FIGURES = {"mla_roofline": mla_roofline}
