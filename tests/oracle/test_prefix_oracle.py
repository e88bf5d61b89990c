"""``kvlib plan --shared-prefix`` against vLLM 0.34.0's own scheduler with prefix caching on
(its default) and real shared token ids (``engine/prefix.py`` in .venv-oracle; issue 42 item 5).

For each case vLLM's engine config, KV-cache layout and pool are built from the published
config as ``make oracle`` builds them, and its scheduler serves requests whose prompts begin
with the same ``prefix_tokens`` ids: the most it carries to full length at once, without
preempting, must be kvlib's ``max_sequences_per_replica`` for the same pool
(``--kv-cache-memory``), prefix and context. Runs under ``make oracle``
(``KVLIB_REQUIRE_ORACLE=1``); skipped elsewhere.

Measured when written: Llama 3.1 8B at 8K in 20 GiB carries 19, 20, 26 and 38 requests with no
shared prefix, 100, 2,000 and 4,096 shared tokens (kvlib: the same four).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kvlib import Deployment, load_model
from kvlib.models.catalog import bundled_config

GiB = 2**30
ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
ENGINE = Path(__file__).resolve().parent / "engine"
CASES = [("llama-3.1-8b", 8192, 20, p) for p in (0, 100, 2000, 4096)] + [
    ("qwen3-32b", 4096, 16, 1000), ("deepseek-v2", 8192, 20, 3000)]


def _cases() -> list[dict]:
    out = []
    for model, context, pool, prefix in CASES:
        dep = Deployment(load_model(model), "H200", kv_cache_memory=pool * GiB)
        plan = dep.plan(context, shared_prefix=prefix)
        out.append({"id": f"{model} {context} {pool}GiB prefix {prefix}",
                    "config": bundled_config(model), "context": context,
                    "pool_bytes": pool * GiB, "prefix_tokens": prefix,
                    "guess": plan.max_sequences_per_replica,
                    "without": plan.max_sequences_per_replica_without_prefix})
    return out


def test_vllms_scheduler_carries_kvlibs_sessions(tmp_path):
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own scheduler: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: make oracle builds it")
    cases = _cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    subprocess.run([str(PYTHON), "prefix.py", str(tmp_path / "cases.json"),
                    str(tmp_path / "out.json")], check=True, cwd=ENGINE, timeout=1800,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True)
    measured = {m["id"]: m for m in json.loads((tmp_path / "out.json").read_text())}
    for case in cases:
        m = measured[case["id"]]
        assert "error" not in m, m
        assert m["enable_prefix_caching"] is True  # vLLM's default, as kvlib assumes
        assert m["carried"] == case["guess"], (case["id"], m)
        if case["prefix_tokens"] >= 64:  # at least one whole block shared: more sessions
            assert case["guess"] > case["without"]
