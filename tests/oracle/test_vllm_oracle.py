"""kvlib against vLLM 0.34.0's own planning, KV-cache manager and scheduler (``make oracle``).

``make oracle`` writes the cases (``cases.py``, kvlib's prediction in each), measures them
with vLLM's code in an environment of its own (``engine/measure.py``) and runs this module on
the result, ``build/oracle/measured.json`` (or the file ``KVLIB_ORACLE`` names). Without it
(``make test``) every test here is skipped, and says why; with ``KVLIB_REQUIRE_ORACLE=1``
(``make oracle``) a missing file fails instead.

For every case vLLM could build, three figures must agree:

* **the pool's blocks**: ``get_kv_cache_configs``' block count for the pool, exactly;
* **the logged concurrency**: ``get_max_concurrency_for_kv_cache_config``, exactly
  (blocks / blocks per request);
* **the start-up check**: where vLLM refuses to start (one request needs more than the pool
  less its null block), kvlib says so;
* **the sessions**: the most requests vLLM's scheduler carried to full length at once without
  preempting (``engine/drive.py``, ``carried``) against ``VllmLayout.sessions``, within one
  sequence or 1% (issue 32): the oracle's requests end within 64 tokens of the full length so
  that state layers do not all cross a block boundary in the same step, and its last prompt
  shares its steps with the others' decode tokens; kvlib counts every sequence at full length
  and the last prompt's chunks whole.

A case vLLM refuses (``ValueError``/``NotImplementedError`` on any machine) must be refused by
kvlib quoting vLLM's message; a case vLLM could not build on a CPU must be one of
:data:`CANNOT_BUILD`, with its reason; a case kvlib refuses and vLLM builds must be listed in
:data:`KVLIB_REFUSES`.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import pytest

PATH = Path(os.environ.get("KVLIB_ORACLE", "build/oracle/measured.json"))
CASES = Path(os.environ.get("KVLIB_ORACLE_CASES", "build/oracle/cases.json"))

# vLLM 0.34.0 raises while building these on a CPU, or for this configuration on any machine;
# each with what it says (docs/crosscheck.md, "make oracle").
_NAS = ("vLLM's ModelConfig asks for trust_remote_code: the config class of a DeciLM "
        "(nemotron-nas) checkpoint lives in the checkpoint's own code (auto_map), which this "
        "offline check does not have")
CANNOT_BUILD: dict[str, str] = {
    f"llama-3.3-nemotron-super-49b@{n}@{d}": _NAS
    for n in (8192, 32768, 131072) for d in ("auto", "fp8")}

# kvlib refuses the layout (its reason is in the plan's notes); vLLM builds it.
KVLIB_REFUSES: dict[str, str] = {}


def _said_by_both(vllm_error: str, kvlib_error: str) -> bool:
    """Whether kvlib's refusal quotes vLLM's error (its message after the exception class)."""
    said = vllm_error.split(": ", 1)[-1].rstrip(".")
    return len(said) > 20 and said in kvlib_error


def _load(path: Path):
    if not path.exists():
        if os.environ.get("KVLIB_REQUIRE_ORACLE") == "1":
            pytest.fail(f"{path} is missing: make oracle writes it")
        pytest.skip(f"{path} is missing: make oracle measures it with vLLM 0.34.0")
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def results():
    cases = {c["id"]: c for c in _load(CASES)}
    measured = {m["id"]: m for m in _load(PATH)}
    return cases, measured


def _ids():
    try:
        with open(CASES) as f:
            return [c["id"] for c in json.load(f)]
    except OSError:
        return ["no-cases"]


@pytest.mark.parametrize("case_id", _ids())
def test_kvlib_agrees_with_vllm(results, case_id):
    cases, measured = results
    if case_id not in cases:
        pytest.skip("no cases: make oracle writes them")
    case, m = cases[case_id], measured.get(case_id)
    assert m is not None, f"{case_id} was not measured"
    assert m["vllm"] == "0.34.0"
    kv = case["kvlib"]
    if "error" in m and m["error"].startswith("ValueError: To serve at least one request"):
        # vLLM refuses to start: one request needs more than the pool less the null block
        assert kv.get("refuses"), f"vLLM refuses {case_id} and kvlib does not: {m['error']}"
        return
    if "error" in m and "error" in kv and _said_by_both(m["error"], kv["error"]):
        return  # both refuse, for the reason vLLM gives (kvlib quotes it)
    if "error" in m:
        assert case_id in CANNOT_BUILD, f"vLLM could not build {case_id}: {m['error']}"
        return
    assert case_id not in CANNOT_BUILD, f"{case_id} builds now: take it off CANNOT_BUILD"
    assert not kv.get("refuses"), f"kvlib says vLLM refuses {case_id}; it started"
    if "error" in kv:
        assert case_id in KVLIB_REFUSES, (
            f"kvlib refuses {case_id} ({kv['error']}) but vLLM builds it: "
            f"{m['num_blocks']} blocks, {m['max_concurrency']} x, carries {m['carried']}")
        return
    assert kv["num_blocks"] == m["num_blocks"], (case_id, m["groups"], m["specs"])
    blocks, per_request = kv["max_concurrency"]
    assert float(Fraction(blocks, per_request)) == pytest.approx(m["max_concurrency"],
                                                                   rel=1e-12)
    assert kv["block_size"] == m["block_size"]
    tolerance = max(1, m["carried"] // 100)
    assert abs(kv["sessions"] - m["carried"]) <= tolerance, (
        f"{case_id}: kvlib {kv['sessions']}, vLLM's scheduler {m['carried']} "
        f"(runs {[(r['n'], r['carried'], r['preemptions']) for r in m['runs']]})")


def test_every_bundled_model_was_measured(results):
    from kvlib.models.catalog import BUNDLED

    cases, measured = results
    models = {c["model"] for c in cases.values()}
    assert models == set(BUNDLED)
    built = {cases[i]["model"] for i, m in measured.items() if "error" not in m}
    unbuilt = models - built
    assert all(any(k.startswith(f"{model}@") for k in CANNOT_BUILD) for model in unbuilt)
