"""Issue 42 item 2's last step: ``kvlib plan``'s default --kv-dtype is ``auto``, as vLLM
0.34.0's is (``kv_cache_dtype: ... = CacheConfig.cache_dtype``, engine/arg_utils.py:517;
``cache_dtype: CacheDType | str = "auto"``, config/cache.py:245), and the plan's header says
which dtype auto became and why, in text and JSON.

Hand-worked: Llama 3.1 70B (80 layers, 8 KV heads, head_dim 128) at 8,192 tokens is
80 x 8 x 2 x 128 x 8192 = 1,342,177,280 B a sequence in fp8 (1.25 GiB), twice that in bf16;
a 100 GiB pool of 64-token blocks (80 x 8 x 2 x 128 x 64 = 10,485,760 B each in fp8) is
10,240 blocks, 128 a request: vLLM logs 10,240 / 128 = 80.00 (issue 42 item 2's figure for
nvidia/Llama-3.1-70B-Instruct-FP8), 40.00 in bf16.
"""

import json

import pytest
from test_kv_auto import HF_QUANT, LLAMA_70B

from kvlib.cli import main

POOL = ["--kv-cache-memory", "100GiB", "--context", "8K", "--gpu", "H200"]


def _folder(tmp_path, hf_quant=None):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_70B))
    if hf_quant is not None:
        (tmp_path / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    return str(tmp_path)


def _run(capsys, *argv):
    rc = main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_hand_worked_numbers():
    assert 80 * 8 * 2 * 128 * 8192 == 1_342_177_280 == 1.25 * 2**30
    assert 100 * 2**30 // (80 * 8 * 2 * 128 * 64) == 10_240 and 8192 // 64 == 128
    assert 10_240 / 128 == 80.0 and 10_240 // 2 / 128 == 40.0


def test_the_default_is_vllms_auto_from_the_checkpoint(tmp_path, capsys):
    folder = _folder(tmp_path, HF_QUANT)
    rc, out, _ = _run(capsys, folder, *POOL, "--json")
    d = json.loads(out)
    assert (d["kv_dtype"], d["kv_element_dtype"]) == ("fp8_e4m3", "fp8")
    assert d["kv_dtype_why"].startswith(
        "kv_cache_dtype auto is fp8_e4m3: the checkpoint asks for it "
        "(quantization_config.quantization.kv_cache_quant_algo='FP8')")
    assert d["kv_bytes_per_sequence_per_gpu"] == 1_342_177_280
    assert d["vllm_max_concurrency"] == 80.0
    rc, text, _ = _run(capsys, folder, *POOL)
    first, second = text.splitlines()[:2]
    assert ", kv fp8_e4m3 (auto: the checkpoint asks for it), " in first
    assert second == f"  kv dtype: {d['kv_dtype_why']}"
    # the same plan with --kv-dtype auto spelt out
    rc, again, _ = _run(capsys, folder, *POOL, "--json", "--kv-dtype", "auto")
    assert json.loads(again) == d


def test_auto_without_a_request_is_the_models_dtype_said_in_a_note(tmp_path, capsys):
    folder = _folder(tmp_path)
    rc, out, _ = _run(capsys, folder, *POOL, "--json")
    d = json.loads(out)
    assert (d["kv_dtype"], d["kv_element_dtype"]) == ("auto", "bf16")
    assert d["kv_dtype_why"].startswith("kv_cache_dtype auto is the model's dtype, bf16")
    assert d["vllm_max_concurrency"] == 40.0
    rc, text, _ = _run(capsys, folder, *POOL)
    lines = text.splitlines()
    assert ", kv bf16 (auto: the model's dtype), " in lines[0]
    assert not lines[1].startswith("  kv dtype:")  # no second header line: nothing to explain
    assert f"  note: kv dtype: {d['kv_dtype_why']}" in lines


@pytest.mark.parametrize("given, first", [("bf16", "kv bf16, "), ("fp8", "kv fp8, "),
                                          ("nvfp4", "kv nvfp4, ")])
def test_a_dtype_given_is_printed_as_given_with_no_why(tmp_path, capsys, given, first):
    folder = _folder(tmp_path, HF_QUANT)
    rc, out, _ = _run(capsys, folder, *POOL, "--json", "--kv-dtype", given)
    d = json.loads(out)
    assert d["kv_dtype"] == given and d["kv_dtype_why"] is None
    rc, text, _ = _run(capsys, folder, *POOL, "--kv-dtype", given)
    assert first in text.splitlines()[0] and "kv dtype:" not in text


def test_other_engines_name_the_dtype_auto_became(tmp_path, capsys):
    """SGLang and TensorRT-LLM plan from the same Deployment; their first line names the
    dtype and a note says it is vLLM's resolution of auto."""
    folder = _folder(tmp_path, HF_QUANT)
    for engine in ("sglang", "trtllm"):
        rc, text, _ = _run(capsys, folder, "--gpu", "H200", "--gpus", "2", "--tp", "2",
                           "--context", "8K", "--engine", engine)
        lines = text.splitlines()
        assert ", kv fp8_e4m3 (auto: the checkpoint asks for it), " in lines[0]
        assert lines[1].startswith("  kv dtype: kv_cache_dtype auto is fp8_e4m3")
        rc, out, _ = _run(capsys, folder, "--gpu", "H200", "--gpus", "2", "--tp", "2",
                          "--context", "8K", "--engine", engine, "--json")
        assert json.loads(out)["kv_bytes_per_token_per_gpu"] == 80 * 4 * 2 * 128  # fp8, TP 2


def test_vllm_defaults_to_auto_in_the_wheel():
    """The wheel's own lines, where it lies on disk (pip download vllm==0.34.0 --no-deps -d
    /tmp/vllm; skipped elsewhere: nothing is fetched)."""
    import zipfile
    from pathlib import Path

    wheel = Path("/tmp/vllm/vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl")
    if not wheel.exists():
        pytest.skip("vLLM 0.34.0's wheel is not here")
    with zipfile.ZipFile(wheel) as z:
        arg_utils = z.read("vllm/engine/arg_utils.py").decode().splitlines()
        cache = z.read("vllm/config/cache.py").decode().splitlines()
    assert "kv_cache_dtype: CacheDType | str = CacheConfig.cache_dtype" in arg_utils[516]
    assert 'cache_dtype: CacheDType | str = "auto"' in cache[244]
