"""``kvlib plan`` where the weights are not counted from the config (issue 42 item 1 and the
model folder of its "What to build"): no parameter counter with --kv-cache-memory (the weights
do not enter the budget), and the weights read from a model folder's files. Every expected
value is hand arithmetic written out here, or a byte count the test writes itself."""

import json
import struct

import pytest
from test_cli_plan import run, run_json

GiB = 1024**3
FIXTURES = "tests/fixtures/configs"
# a family kvlib has no parameter counter for (Mellum's model_type), read as standard
# attention: 2 layers, 2 KV heads of 16 dims (given: Mellum's config class would say 128), bf16
TINY = {"model_type": "mellum", "num_hidden_layers": 2, "hidden_size": 64, "head_dim": 16,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096}
# bytes per token: 2 layers x 2 (K, V) x 2 heads x 16 dims x 2 B = 256 B
PER_TOKEN = 2 * 2 * 2 * 16 * 2




def _folder(tmp_path, config=TINY):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _safetensors(path, tensors: dict) -> int:
    """A safetensors file by hand: <Q header length, the JSON header, then zero bytes of data;
    returns the data's length."""
    header = json.dumps(tensors).encode()
    end = max(t["data_offsets"][1] for t in tensors.values())
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(end))
    return end


def test_no_counter_is_still_refused_without_a_budget(tmp_path, capsys):
    rc, _, err = run(capsys, str(_folder(tmp_path) / "config.json"), "--gpu", "L40S",
                     "--context", "4096")
    assert rc == 2 and err.count("\n") == 1
    assert "no parameter counter for it" in err and "--params" in err
    assert "--kv-cache-memory" in err
    # the other engines have no --kv-cache-memory: they refuse it by name
    rc, _, err = run(capsys, str(tmp_path / "model" / "config.json"), "--gpu", "L40S",
                     "--context", "4096", "--engine", "sglang", "--kv-cache-memory", "1GiB")
    assert rc == 2 and "--kv-cache-memory" in err and "a vLLM option" in err


def test_no_counter_plans_with_kv_cache_memory_by_hand(tmp_path, capsys):
    path = str(_folder(tmp_path) / "config.json")
    rc, d, err = run_json(capsys, path, "--gpu", "L40S", "--context", "4096",
                          "--kv-cache-memory", "64MiB")
    assert rc == 0 and d["fits"] and err == ""
    assert d["kv_budget_bytes_per_gpu"] == 64 * 1024**2
    assert d["kv_bytes_per_sequence_per_gpu"] == PER_TOKEN * 4096 == 1_048_576
    # 64 MiB / 1 MiB = 64 by bytes alone; vLLM's blocks of 64 tokens x 256 B = 16,384 B:
    # 4,096 blocks, one kept as the null block, 64 blocks a sequence: 4,095 // 64 = 63
    assert d["bytes_alone_sequences_per_replica"] == 64
    assert d["vllm_bytes_per_block"] == 64 * PER_TOKEN == 16_384
    assert d["max_sequences_per_replica"] == (64 * 1024**2 // 16_384 - 1) // 64 == 63
    assert d["params"] is None and d["weights_bytes_per_gpu"] is None
    assert d["weights_read_from"] is None
    assert d["active_params"] is None and d["decode_weights_read_bytes_per_gpu"] is None
    assert d["decode_step_seconds_lower_bound"] is None
    assert ("weights: not counted (no parameter counter for mellum; --kv-cache-memory gives "
            "the KV budget, so they do not enter it)") in d["notes"]
    rc, out, _ = run(capsys, path, "--gpu", "L40S", "--context", "4096",
                     "--kv-cache-memory", "64MiB")
    assert rc == 0 and "weights not counted" in out.splitlines()[0]
    assert any(line.split()[:3] == ["weights", "per", "GPU"] and "not counted" in line
               for line in out.splitlines())


QUANTIZED = {**TINY, "quantization_config": {
    "quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}}}}}


@pytest.mark.parametrize("name", ["plain", "quantized"])
def test_configs_without_a_counter_plan_with_kv_cache_memory(tmp_path, capsys, name):
    """A family without a counter (Mellum, as TINY), unquantized and quantized
    (compressed-tensors INT4): refused without a budget; with --kv-cache-memory the sessions are
    those of any weights: --params 1 and --params 1B give the same plan, and the budget is the
    one given. (Step 3.7 Flash's and Kimi K3's fixtures were this test's configs until their
    families got counters.)"""
    config = TINY if name == "plain" else QUANTIZED
    argv = (str(_folder(tmp_path, config) / "config.json"), "--gpu", "H200", "--context", "4K")
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and "no parameter counter" in err
    rc, d, _ = run_json(capsys, *argv, "--kv-cache-memory", "20GiB")
    assert rc == 0 and d["kv_budget_bytes_per_gpu"] == 20 * GiB
    assert d["weights_bytes_per_gpu"] is None and d["params"] is None
    if name == "plain":  # unquantized: --params is a bf16 count and changes nothing
        for params in ("1", "1B"):
            rc, e, _ = run_json(capsys, *argv, "--kv-cache-memory", "20GiB", "--params", params)
            assert rc == 0 and e["max_sequences_per_replica"] == d["max_sequences_per_replica"]
            assert e["weights_bytes_per_gpu"] == 2 * {"1": 1, "1B": 10**9}[params]


def test_folder_with_an_index_reads_its_total_size(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 3_000_000_000}, "weight_map": {}}))
    rc, d, _ = run_json(capsys, str(folder), "--gpu", "L40S", "--context", "4096",
                        "--vllm", "0.33", "--gpu-mem-util", "1", "--memory", "datasheet")
    assert rc == 0 and d["weights_bytes_per_gpu"] == 3_000_000_000
    # vLLM 0.33.0 at u = 1 on the L40S datasheet's 48 GB, less 4 GiB of overhead
    assert d["kv_budget_bytes_per_gpu"] == 48_000_000_000 - 3_000_000_000 - 4 * GiB
    note = next(n for n in d["notes"] if n.startswith("weights:"))
    assert "read from the checkpoint's files" in note
    assert "model.safetensors.index.json" in note and "3,000,000,000" in note
    assert d["weight_dtype"] == "checkpoint (read from its files)"
    assert d["weights_read_from"] == ["model.safetensors.index.json"]
    # the same folder with --params: the count wins (2 B each in bf16), the files are not used
    rc, d, _ = run_json(capsys, str(folder), "--gpu", "L40S", "--context", "4096",
                        "--params", "1000")
    assert d["weights_bytes_per_gpu"] == 2_000


def test_folder_with_safetensors_headers_by_hand(tmp_path, capsys):
    """Headers: bf16 [8, 64] = 1,024 B, f32 [64] = 256 B, bf16 [100, 64] = 12,800 B:
    14,080 B in all; TP 2 with no counter for the family splits it evenly, 7,040 B a GPU."""
    folder = _folder(tmp_path, {**TINY, "num_key_value_heads": 4})
    _safetensors(folder / "model-00001-of-00002.safetensors", {
        "a": {"dtype": "BF16", "shape": [8, 64], "data_offsets": [0, 1_024]},
        "b": {"dtype": "F32", "shape": [64], "data_offsets": [1_024, 1_280]}})
    _safetensors(folder / "model-00002-of-00002.safetensors", {
        "c": {"dtype": "BF16", "shape": [100, 64], "data_offsets": [0, 12_800]}})
    rc, d, _ = run_json(capsys, str(folder), "--gpu", "L40S", "--context", "4096")
    assert rc == 0 and d["weights_bytes_per_gpu"] == 1_024 + 256 + 12_800 == 14_080
    assert d["params"] is None and d["decode_step_seconds_lower_bound"] is None
    note = next(n for n in d["notes"] if n.startswith("weights:"))
    assert "read from the checkpoint's files" in note and "2 safetensors files" in note
    assert d["weights_read_from"] == ["model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors"]
    rc, d, _ = run_json(capsys, str(folder), "--gpu", "L40S", "--gpus", "2", "--tp", "2",
                        "--context", "4096")
    assert rc == 0 and d["weights_bytes_per_gpu"] == 14_080 // 2 == 7_040


def test_folder_of_config_alone_is_read_as_its_config(tmp_path, capsys):
    folder = _folder(tmp_path)
    rc, _, err = run(capsys, str(folder), "--gpu", "L40S", "--context", "4096")
    assert rc == 2 and "no parameter counter" in err


def test_malformed_index_is_one_line_naming_the_field(tmp_path, capsys):
    folder = _folder(tmp_path)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    rc, _, err = run(capsys, str(folder), "--gpu", "L40S", "--context", "4096")
    assert rc == 2 and err.count("\n") == 1 and "metadata.total_size" in err
