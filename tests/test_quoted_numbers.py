"""Every number the lessons promise (issues, paper, blog posts) is in a stored output.

nbval re-runs the notebooks and compares these outputs, so a number listed here is
both shown to the reader and recomputed on every `make test`. Each entry carries enough
context ("saving 8x", "| 576 |") that it cannot match some unrelated number ("80" alone
would match any output that mentions 80 layers).
"""

import json
from pathlib import Path

import pytest

NB = Path(__file__).parent.parent / "notebooks"

QUOTED = {
    "01_attention_and_kv_cache.ipynb": [
        "2,621,440 B", "2.5 MiB", "2.62 MB", "21.5 GB", "343.6 GB",
    ],
    "02_gqa_and_mqa.ipynb": [
        "327,680 B", "320 KiB", "saving 8x", "40 GiB", "507,904 B", "496 KiB", "saving 2x",
        "1.55x",
    ],
    "03_latent_attention_mla.ipynb": ["61,440", "60 KiB", "4,915,200", "bytes ratio: 80 x",
                                      "CUDA total 633.76 GiB", "= 583.06 GiB for weights"],
    "04_rope_decoupling.ipynb": ["69,120", "67.5 KiB", "12.5%", "8.44 GiB", "7.5 GiB", "| 576 |"],
    "05_real_models.ipynb": [
        "496 KiB", "320 KiB", "60 KiB", "62 GiB", "40 GiB", "7.5 GiB", "1.55x", "8.3x",
        "67.5 KiB", "10.41 GiB",
    ],
    "06_capacity_planning.ipynb": [
        "564 GB", "1,293,945", "= 40%", "9.87 sessions of 128K", "requested_memory at 0.92",
        "**9 sessions of 128K**", "| 4.74 |", "97.49% of reserved slots empty",
        "0.23% of reserved slots empty", "3.76% of reserved slots empty",
        "13.44% of reserved slots empty", "| 8.05 GiB |", "| 7.93 GiB |", "39.7x less",
        "3.556x smaller than bf16", "3.765x smaller than bf16", "scales add 3.12%",
    ],
}

# Numbers a markdown cell states (first) that an output shows (second): when kvlib's answer
# changes, nbval fails on the stored output, the output is re-executed, and then this fails
# until the prose says the new number. Numbers kvlib computes in the middle of an argument are
# not typed in markdown at all: a code cell prints the sentence (notebook 06, sections 3, 8-10).
PROSE = {
    "03_latent_attention_mla.ipynb": [
        ("CUDA 8 x 79.22 GiB = 633.76 GiB", "CUDA total 633.76 GiB"),
        ("leaves at most 583.06 GiB", "= 583.06 GiB for weights"),
    ],
    "06_capacity_planning.ipynb": [
        ("**9** as a server counts", "**9 sessions of 128K**"),
        ("`gpu_memory_utilization` is 0.92 unless set", "requested_memory at 0.92"),
        ("**rounded up**, where `gpu_memory_utilization` is **0.92**", "requested_memory at 0.92"),
        ("Reproduced: 424 GB left, 1,293,945 tokens, 9.87 sessions", "9.87 sessions of 128K"),
        ("0.23% at 16 tokens, 3.76% even at 256", "3.76% of reserved slots empty"),
        ("at `max_model_len` 128K, 97.49% of the reserved", "97.49% of reserved slots empty"),
        ("the 13.44% bar above", "13.44% of reserved slots empty"),
        ("(8.05 to 7.93 GiB in the chart)", "| 7.93 GiB |"),
        ("At TP=1 Llama 3.1 70B caches 4.74x more", "| 4.74 |"),
    ],
}


def _outputs(path: Path) -> str:
    text = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            text.append("".join(out.get("text", "")))
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    text.append("".join(value))
    return "\n".join(text)


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_quoted_numbers_are_in_the_outputs(name):
    shown = _outputs(NB / name)
    missing = [q for q in QUOTED[name] if q not in shown]
    assert not missing, f"{name} does not show {missing}"


def _markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("name", sorted(PROSE))
def test_numbers_in_prose_are_the_outputs(name):
    prose, shown = _markdown(NB / name), _outputs(NB / name)
    for said, computed in PROSE[name]:
        assert said in prose, f"{name}: the markdown no longer says {said!r}"
        assert computed in shown, f"{name}: no output shows {computed!r}, which {said!r} quotes"
