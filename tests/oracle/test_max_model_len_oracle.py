"""kvlib's reading of vLLM 0.34.0's max_model_len check (``kvlib.serving.engines.vllm.
max_model_len``) against vLLM's own ``_get_and_verify_max_len`` run on the same configs
(``engine/max_model_len.py`` in .venv-oracle; issue 42 item 4).

Every bundled config at its derived maximum (accepted) and one token past it (refused), and
hand-made configs for each RoPE rule: a linear factor multiplies the length, llama3 / yarn /
longrope do not, Gemma 3 is never scaled, ``model_max_length`` wins. Runs under ``make
oracle`` (``KVLIB_REQUIRE_ORACLE=1``), where .venv-oracle is built; skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from kvlib.models.catalog import BUNDLED, bundled_config, load_model
from kvlib.serving.engines.vllm.max_model_len import check_max_model_len

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
SCRIPT = Path(__file__).resolve().parent / "engine" / "max_model_len.py"

HAND = {
    "linear x4": {"model_type": "llama", "max_position_embeddings": 4096,
                  "rope_scaling": {"type": "linear", "factor": 4.0}},  # 16,384
    "dynamic x2": {"model_type": "llama", "max_position_embeddings": 4096,
                   "rope_scaling": {"type": "dynamic", "factor": 2.0}},  # 8,192
    "llama3 x8": {"model_type": "llama", "max_position_embeddings": 131072,
                  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 8192}},  # 131,072
    "yarn x4": {"model_type": "qwen2", "max_position_embeddings": 32768,
                "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 32768}},  # 32,768
    "gemma3 linear x8": {"model_type": "gemma3_text",
                         "rope_scaling": {"rope_type": "linear", "factor": 8.0}},  # 131,072
}
# the family's own default where config.json leaves the length out (Gemma3TextConfig's
# max_position_embeddings=131072, which kvlib's reader takes as max_position_embeddings)
DEFAULTS = {"gemma3 linear x8": 131072}
EXPECTED = {"linear x4": 16384, "dynamic x2": 8192, "llama3 x8": 131072, "yarn x4": 32768,
            "gemma3 linear x8": 131072}


def _cases() -> list[dict]:
    cases = []
    for name, config in HAND.items():
        limit = EXPECTED[name]
        cases += [{"id": f"{name} @{n}", "config": config, "max_model_len": n,
                   "default": DEFAULTS.get(name)} for n in (limit, limit + 1)]
    for name in BUNDLED:
        config = bundled_config(name)
        default = load_model(name).max_position_embeddings
        limit = check_max_model_len(config, 1, default_length=default).limit
        if limit is None:
            continue
        cases += [{"id": f"{name} @{n}", "config": config, "max_model_len": n,
                   "default": default} for n in (limit, limit + 1)]
    return cases


def test_hand_limits_are_kvlibs():
    """The hand-worked limits, by kvlib alone (these run everywhere)."""
    for name, config in HAND.items():
        d = DEFAULTS.get(name)
        assert check_max_model_len(config, EXPECTED[name], allow_long=False,
                                   default_length=d).refuses is False
        assert check_max_model_len(config, EXPECTED[name] + 1, allow_long=False,
                                   default_length=d).refuses


def test_kvlib_refuses_where_vllm_does(tmp_path):
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own code: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: make oracle builds it")
    cases = _cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("VLLM_ALLOW_LONG_MAX_MODEL_LEN", None)
    subprocess.run([str(PYTHON), str(SCRIPT), str(tmp_path / "cases.json"),
                    str(tmp_path / "out.json")], check=True, env=env, timeout=600,
                   cwd=tmp_path)
    measured = {m["id"]: m for m in json.loads((tmp_path / "out.json").read_text())}
    built = 0
    for case in cases:
        m = measured[case["id"]]
        if m["status"] == "cannot_build":
            continue
        built += 1
        kvlib = check_max_model_len(case["config"], case["max_model_len"], allow_long=False,
                                    default_length=case["default"])
        assert kvlib.refuses == (m["status"] == "refused"), (case["id"], m)
        if kvlib.refuses:  # the same maximum (its key may be an alias: GPT-2's n_positions is
            # max_position_embeddings through GPT2Config.attribute_map)
            found = re.search(r"derived max_model_len \((\w+)=([\d.]+)", m["error"])
            assert found and float(found.group(2)) == kvlib.limit, (case["id"], m)
    assert built >= len(HAND) * 2 + 20
