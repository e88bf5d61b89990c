"""kvlib's kv_cache_dtype "auto" (``kvlib.serving.engines.vllm.dtypes.resolve_auto``) against
vLLM 0.34.0's own reading of the same configs (``engine/kv_auto.py`` in .venv-oracle; issue 42
item 2): every published config of the 2025-2026 corpus (NVFP4, FP8, MXFP4 and
compressed-tensors re-packagings among them), every bundled config, and a ModelOpt FP8
checkpoint whose KV algorithm sits in the ``hf_quant_config.json`` beside config.json.

Where the checkpoint sets the KV dtype, vLLM's string is what kvlib plans with, so the logged
concurrency follows (the pool itself at fp8 / nvfp4 is checked by test_vllm_oracle.py). Runs
under ``make oracle`` (``KVLIB_REQUIRE_ORACLE=1``), where .venv-oracle is built; skipped
elsewhere.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.readers.fields import load_config
from kvlib.serving.engines.vllm.dtypes import resolve_auto

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
SCRIPT = Path(__file__).resolve().parent / "engine" / "kv_auto.py"
CORPUS = json.loads(gzip.decompress(
    (ROOT / "tests" / "fixtures" / "configs" / "corpus-2026.json.gz").read_bytes()))

# nvidia/Llama-3.1-70B-Instruct-FP8 as ModelOpt 0.29 laid it out: config.json without a
# quantization_config, the algorithms in hf_quant_config.json beside it
LLAMA_70B = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8192,
             "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
             "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16",
             "max_position_embeddings": 131072}
HF_QUANT = {"producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}


def _cases(tmp_path: Path) -> list[tuple[str, dict, dict]]:
    """(id, the config kvlib reads, the config vLLM reads) for each case."""
    out = [(name, e["config"], e["config"]) for name, e in sorted(CORPUS.items())]
    out += [(f"bundled:{n}", bundled_config(n), bundled_config(n)) for n in sorted(BUNDLED)]
    folder = tmp_path / "llama-70b-fp8"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_70B))
    (folder / "hf_quant_config.json").write_text(json.dumps(HF_QUANT))
    # vLLM merges the file in where config.json has no quantization_config
    # (transformers_utils/config.py:996-1009): the same dict, handed over merged
    out.append(("folder:llama-70b-fp8", load_config(folder / "config.json"),
                {**LLAMA_70B, "quantization_config": HF_QUANT}))
    return out


def test_the_folder_case_merges_the_file_beside():
    """kvlib's side of the folder case, by itself (runs everywhere): fp8_e4m3 from the file."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        case = dict((i, k) for i, k, _ in _cases(Path(d)))["folder:llama-70b-fp8"]
        assert resolve_auto(case).kv_cache_dtype == "fp8_e4m3"


def test_kvlib_auto_is_vllms(tmp_path):
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own code: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(".venv-oracle is missing: make oracle builds it")
    cases = _cases(tmp_path)
    (tmp_path / "cases.json").write_text(json.dumps(
        [{"id": i, "config": v} for i, _, v in cases]))
    subprocess.run([str(PYTHON), str(SCRIPT), str(tmp_path / "cases.json"),
                    str(tmp_path / "out.json")], check=True, cwd=SCRIPT.parent,
                   capture_output=True, timeout=600)
    vllm = {o["id"]: o for o in json.loads((tmp_path / "out.json").read_text())}
    assert set(vllm) == {i for i, _, _ in cases}
    wrong = []
    for i, mine, _ in cases:
        theirs = vllm[i]["kv_cache_dtype"]
        if theirs is None:  # vLLM cannot name the method: nothing to compare the dtype with
            continue
        ours = resolve_auto(mine).kv_cache_dtype
        if ours != theirs:
            wrong.append(f"{i}: vLLM {theirs!r} (method {vllm[i]['method']}), kvlib {ours!r}")
    assert not wrong, "\n".join(wrong)
    # the checkpoints that set it are many, and of each kind vLLM knows
    set_by_checkpoint = {v["kv_cache_dtype"] for v in vllm.values()} - {"auto", None}
    assert {"fp8_e4m3", "fp8"} <= set_by_checkpoint
    assert sum(v["kv_cache_dtype"] not in ("auto", None) for v in vllm.values()) >= 15
