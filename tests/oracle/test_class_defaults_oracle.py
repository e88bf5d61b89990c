"""kvlib's head_dim and KV heads for configs that omit them (kvlib.models.readers.class_defaults)
against vLLM 0.34.0's own reading of the same config.json (``engine/class_defaults.py`` in
.venv-oracle: ``get_config``, then the model type's convertor's ``get_head_size`` and
``get_total_num_kv_heads``; issue 42).

Cases: the hand-worked configs of tests/test_class_defaults.py, and for every model type the
table gives a constant at the top level, a config of it without the keys (heads a multiple of
the KV constant, 64 wide), plus a few kvlib derives (Llama, Mistral's own keys, Phi-3). Runs
under ``make oracle`` (``KVLIB_REQUIRE_ORACLE=1``); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kvlib.models.readers.attention import heads
from kvlib.models.readers.class_defaults import table
from kvlib.models.readers.fields import Fields

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
SCRIPT = Path(__file__).resolve().parent / "engine" / "class_defaults.py"

HAND = {
    "glm4": {"model_type": "glm4", "hidden_size": 4096, "num_attention_heads": 32},
    "cwm": {"model_type": "cwm", "hidden_size": 4096, "num_attention_heads": 64},
    "qwen2": {"model_type": "qwen2", "hidden_size": 4096, "num_attention_heads": 64},
    "qwen2_vl text": {"model_type": "qwen2_vl", "text_config": {
        "hidden_size": 3584, "num_attention_heads": 32}},
    "gemma3 text": {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8}},
    "llama": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32},
    "phi3": {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 24},
}


def _cases() -> list[dict]:
    cases = [{"id": k, "config": v} for k, v in HAND.items()]
    for model_type, scopes in sorted(table()["families"].items()):
        rules = scopes.get("config", {})
        hd, kv = rules.get("head_dim"), rules.get("num_key_value_heads")
        if not (hd or kv) or any(r and r["rule"] != "constant" for r in (hd, kv)):
            continue
        n_h = 3 * (kv["value"] if kv else 4)
        cases.append({"id": model_type, "config": {
            "model_type": model_type, "hidden_size": 64 * n_h, "num_attention_heads": n_h}})
    return cases


def _kvlib(config: dict) -> tuple[int, int]:
    outer = Fields(config)
    c = Fields(config["text_config"], "text_config.", outer) if "text_config" in config \
        else outer
    _, n_g, d, _ = heads(c, [])
    return d, n_g


def test_kvlib_reads_what_vllm_reads(tmp_path):
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own code: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: make oracle builds it")
    cases = _cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    subprocess.run([str(PYTHON), str(SCRIPT), str(tmp_path / "cases.json"),
                    str(tmp_path / "out.json")], check=True, timeout=600, cwd=tmp_path,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"})
    measured = {m["id"]: m for m in json.loads((tmp_path / "out.json").read_text())}
    built, differ = 0, []
    for case in cases:
        m = measured[case["id"]]
        if m["status"] != "ok" or m["mla"]:  # latent attention: not attention.heads' to read
            continue
        built += 1
        if _kvlib(case["config"]) != (m["head_size"], m["kv_heads"]):
            differ.append((case["id"], _kvlib(case["config"]), m))
    assert not differ, differ
    assert all(measured[k]["status"] == "ok" for k in HAND), measured
    assert built >= len(HAND) + 50
