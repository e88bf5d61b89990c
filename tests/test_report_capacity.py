"""Notebook 06's Markdown tables: numbers checked against hand arithmetic, columns labelled."""

import functools

import pytest

from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.serving.gpus import get_gpu
from kvlib.serving.levers import Setting, Step
from kvlib.views.tables import gpu_table, levers_table, markdown_table, refinement_table, tp_table

# These hand values are vLLM 0.33.0's profiled budget, ceil(0.92 M) - W - O (notebook 06 as it
# stands): pinned to that release since 0.34.0 became the default (tests/test_cli_plan.py and
# tests/test_capacity_formulas.py hold 0.34.0's).
Deployment = functools.partial(Deployment, vllm="0.33.0")

GB, GiB = 10**9, 1024**3
LLAMA = load_model("llama-3.1-70b")


def _rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()]


def test_markdown_table_shape_and_alignment():
    md = markdown_table(["a", "b"], [("1", "2")])
    assert md.splitlines() == ["| a | b |", "|---|---:|", "| 1 | 2 |"]
    with pytest.raises(ValueError, match="one letter per column"):
        markdown_table(["a", "b"], [], align="l")


def test_gpu_table_h200_row():
    rows = _rows(gpu_table())
    h200 = next(r for r in rows if r[0] == "H200")
    # 143,771 MiB reported by nvidia-smi = 150,754,820,096 B
    assert 143_771 * 1024**2 == 150_754_820_096
    assert h200[:4] == ["H200", "141 GB", "4.8 TB/s", "150.75 GB"]
    # the CUDA total vLLM multiplies: floor(13981 x 2^30 / 100) B, printed as 139.81 GiB
    assert h200[4] == "139.81 GiB"
    assert rows[0] == ["GPU", "memory", "bandwidth", "nvidia-smi total", "CUDA total",
                       "datasheet"]


def test_refinement_table_post_a_example():
    pool = get_gpu("H200", hbm_bytes=4 * 141 * GB)
    naive = Deployment(LLAMA, pool, params=70 * 10**9, gpu_mem_util=1, overhead_bytes=0,
                       block_size=1)
    served = Deployment(LLAMA, "H200", 4, 4)
    rows = _rows(refinement_table([("naive", naive), ("served", served)], 131072))
    assert rows[0] == ["step", "KV budget (node)", "sessions", "change"]
    # (564 - 140) GB / (320 KiB x 131,072 tokens) = 9.87 sessions
    assert round((564 - 140) * GB / (327_680 * 131_072), 2) == 9.87
    assert rows[2] == ["naive", "424 GB", "9.87", ""]
    # per GPU: ceil(0.92 x 139.81 GiB CUDA total) = 138,110,256,860 B - the checkpoint's
    # 35,278,831,616 B per GPU (a quarter of 141,107,412,992 B, the 161 x 8,192 norms whole)
    # - 4 GiB, over 80 KiB x 131,072 tokens
    budget = 138_110_256_860 - 35_278_831_616 - 4 * GiB
    sessions = budget / (81_920 * 131_072)
    assert rows[3][2] == f"{sessions:.2f}" == "9.18"
    assert rows[3][3] == f"{sessions - 424 * GB / (327_680 * 131_072):+.2f}"
    assert rows[4][:3] == ["whole sessions: floor", "", "9"]


def test_tp_table_labels_every_column():
    rows = _rows(tp_table(LLAMA, load_model("deepseek-v2"), tps=(1, 16)))
    assert rows[0] == ["TP", "Llama 3.1 70B (GQA) per token per GPU", "KV heads/GPU", "copies",
                       "DeepSeek V2 (MLA) per token per GPU", "latent copies", "GQA/MLA"]
    # TP=1: 80 x 2 x 8 x 128 x 2 B = 320 KiB; the latent 60 x (512 + 64) x 2 B = 67.5 KiB
    assert 80 * 2 * 8 * 128 * 2 == 320 * 1024 and 60 * (512 + 64) * 2 == 67.5 * 1024
    assert rows[2] == ["1", "320 KiB", "8", "x1", "67.5 KiB", "x1", f"{320 / 67.5:.2f}"]
    # TP=16: one head per GPU, each held twice; the latent on all 16
    assert rows[3] == ["16", "40 KiB", "1", "x2", "67.5 KiB", "x16", f"{40 / 67.5:.2f}"]


def test_levers_table_factors():
    s = Setting(max_model_len=1024, batch=1)
    steps = [Step("start", "x", s, 8 * GiB), Step("1 half", "y", s, 4 * GiB)]
    rows = _rows(levers_table(steps))
    assert rows[2] == ["start", "x", "8 GiB", ""]
    assert rows[3] == ["1 half", "y", "4 GiB", "/2.00"]
