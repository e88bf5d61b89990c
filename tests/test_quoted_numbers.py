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
    "03_latent_attention_mla.ipynb": ["61,440", "60 KiB", "4,915,200", "bytes ratio: 80 x"],
    "04_rope_decoupling.ipynb": ["69,120", "67.5 KiB", "12.5%", "8.44 GiB", "7.5 GiB", "| 576 |"],
    "05_real_models.ipynb": [
        "496 KiB", "320 KiB", "60 KiB", "62 GiB", "40 GiB", "7.5 GiB", "1.55x", "8.3x",
        "67.5 KiB", "10.41 GiB",
    ],
    "06_capacity_planning.ipynb": ["564 GB", "1,293,945", "= 40%"],
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
