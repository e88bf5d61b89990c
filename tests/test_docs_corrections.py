"""Issue 40, item 4: corrections of statements a reader met in the docs and in kvlib's own
words, each pinned where it is said, so that the old wording cannot come back."""

import re
from fractions import Fraction
from pathlib import Path

from kvlib.serving.engines.vllm.defaults import DEFAULT_GPU_MEM_UTIL, VLLM_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent


def _flat(path: str) -> str:
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def test_engines_page_sends_deepseek_v4_to_notebook_08_and_names_sglangs_ratio():
    row = next(line for line in (ROOT / "docs" / "engines.md").read_text().splitlines()
               if line.startswith("| sparse indexers, DeepSeek V4"))
    assert "notebook 08" in row and "notebook 07" not in row
    # SGLang 0.5.23 arg_groups/model_overrides/deepseek_v4.py: swa_full_tokens_ratio = 0.1 when
    # the user gives none, read from its wheel
    assert "`swa_full_tokens_ratio` 0.1" in row and "deepseek_v4.py:44-51" in row


def test_the_utilization_history_is_said_as_the_releases_had_it():
    # vLLM's CacheConfig.gpu_memory_utilization: 0.9 up to 0.19.1, 0.92 in 0.20.0-0.33.0, and
    # 0.34.0's extensible cache resolving it to 1.0 (engines/01, section 2, reads each wheel)
    assert VLLM_DEFAULTS["0.33.0"]["gpu_mem_util"] == DEFAULT_GPU_MEM_UTIL == Fraction(92, 100)
    assert VLLM_DEFAULTS["0.34.0"]["gpu_mem_util"] == 1
    history = "0.9 up to 0.19.1, 0.92 from 0.20.0"
    for said in ("kvlib/serving/gpus.py", "docs/capacity.md"):
        text = _flat(said)
        assert history in text, said
        assert not re.search(r"0\.9 up to 0\.11\b", text), said


def test_the_formula_sheet_labels_vllm_0_33_s_rule():
    sheet = _flat("docs/formula_sheet.md")
    assert "### Sessions per TP group, vLLM 0.33.0's rule" in sheet
    assert "d_c = 2 x 512" not in sheet
