"""``kvlib plan``: JSON fields against hand arithmetic, exit statuses, one-line errors."""

import json

import pytest

from kvlib.cli import main
from kvlib.cli.plan import parse_count

GiB = 1024**3
LLAMA_70B_PARAMS = 70_600_000_000  # the count on the meta-llama/Llama-3.1-70B model page

REQUIRED = (
    "hbm_bytes_per_gpu", "usable_bytes_per_gpu", "weights_bytes_per_gpu",
    "overhead_bytes_per_gpu", "kv_budget_bytes_per_gpu", "kv_bytes_per_sequence_per_gpu",
    "replicas", "max_sequences_per_replica", "max_sequences", "decode_step_seconds_lower_bound",
)


def run(capsys, *argv):
    rc = main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    return rc, json.loads(out), err


def test_json_has_the_required_fields_with_hand_values(capsys):
    rc, d, err = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "8", "--tp", "4",
                          "--context", "131072", "--vllm", "0.33")
    assert rc == 0 and err == ""
    assert all(k in d for k in REQUIRED)
    # vLLM 0.33.0: ceil(0.92 x the CUDA total); an H200 reports 139.81 GiB = floor(13981 x
    # 2^30 / 100) B
    cuda_total = 13981 * 1024**3 // 100
    usable = -(-cuda_total * 92 // 100)
    # the bf16 checkpoint, counted from the config: 70,553,706,496 parameters (the safetensors
    # total_size, 141,107,412,992 B, / 2); every rank holds the (2 x 80 + 1) RMSNorm weights of
    # 8,192 whole, and a quarter of the rest (the 128,256-row vocabulary is a multiple of 64)
    norms = (2 * 80 + 1) * 8192 * 2
    weights = (141_107_412_992 - norms) // 4 + norms
    budget = usable - weights - 4 * GiB
    per_seq = 2 * 80 * (8 // 4) * 128 * 2 * 131072
    assert d["hbm_bytes_per_gpu"] == 141_000_000_000
    assert d["total_memory_bytes_per_gpu"] == cuda_total == 150_119_844_413
    assert d["memory_basis"] == "cuda"
    assert d["usable_bytes_per_gpu"] == usable == 138_110_256_860
    assert d["weights_bytes_per_gpu"] == weights == 35_278_831_616
    assert d["overhead_bytes_per_gpu"] == 4 * GiB
    assert d["kv_budget_bytes_per_gpu"] == budget
    assert d["kv_bytes_per_sequence_per_gpu"] == per_seq
    assert d["replicas"] == 2
    assert d["max_sequences_per_replica"] == budget // per_seq == 9
    assert d["max_sequences"] == 18
    # the bound reads the weights but the untied input embedding (128,256 x 8,192), /TP
    read = (70_553_706_496 - 128_256 * 8192) * 2 // 4
    assert d["decode_weights_read_bytes_per_gpu"] == read == 34_751_516_672
    assert d["decode_step_seconds_lower_bound"] == pytest.approx(
        (read + 9 * per_seq) / 4_800_000_000_000)
    assert d["decode_step_seconds_all_weights"] == pytest.approx(
        (weights + 9 * per_seq) / 4_800_000_000_000)
    assert d["decode_step_seconds_uniform_routing"] is None  # dense
    assert d["fits"] is True
    (g,) = d["groups"]
    assert (g["kv_heads"], g["kv_heads_per_gpu"], g["kv_head_replicas"]) == (8, 2, 1)


def test_mla_latent_is_replicated_in_the_json(capsys):
    rc, d, _ = run_json(capsys, "deepseek-v2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                        "--context", "32768")
    assert rc == 0
    assert d["kv_bytes_per_sequence_per_gpu"] == 60 * (512 + 64) * 2 * 32768
    assert d["kv_replication"] == 8 and d["groups"][0]["kv_head_replicas"] == 8


def test_dcp_flag_splits_the_replicated_latent(capsys):
    rc, d, _ = run_json(capsys, "deepseek-v2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                        "--dcp", "8", "--context", "32768")
    assert rc == 0 and d["dcp"] == 8 and d["kv_replication"] == 1
    assert d["kv_bytes_per_sequence_per_gpu"] == 32768 // 8 * 60 * (512 + 64) * 2


def test_flags_change_what_they_name(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "h200", "--gpus", "4", "--tp", "4",
                        "--context", "1000", "--kv-dtype", "fp8", "--weight-dtype", "fp8",
                        "--gpu-mem-util", "0.95", "--block-size", "32", "--overhead-gib", "2",
                        "--hbm-gib", "140", "--vllm", "0.33")
    assert rc == 0
    assert d["hbm_bytes_per_gpu"] == d["total_memory_bytes_per_gpu"] == 140 * GiB
    assert d["memory_basis"] == "datasheet"  # the override replaces the reported totals
    assert d["usable_bytes_per_gpu"] == 140 * GiB * 95 // 100
    assert d["weights_bytes_per_gpu"] == LLAMA_70B_PARAMS // 4
    assert d["overhead_bytes_per_gpu"] == 2 * GiB
    # ceil(1000 / 32) = 32 blocks of 32 tokens, fp8: 1 byte per element
    assert d["kv_bytes_per_sequence_per_gpu"] == 32 * 32 * (2 * 80 * 2 * 128 * 1)


def test_params_override(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--context", "8192",
                        "--params", "70B")
    assert d["params"] == 70 * 10**9 and d["weights_bytes_per_gpu"] == 140 * 10**9


def test_params_for_a_quantized_checkpoint_needs_a_weight_dtype(capsys):
    """DeepSeek V3.2 is published in fp8: --params alone would weigh it as bf16, silently."""
    rc, out, err = run(capsys, "deepseek-v3.2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                       "--params", "671B")
    assert rc == 2 and "quantized checkpoint (fp8)" in err and err.count("\n") == 1
    rc, d, _ = run_json(capsys, "deepseek-v3.2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                        "--params", "671B", "--weight-dtype", "fp8", "--context", "32768")
    assert rc == 0 and d["weights_bytes_per_gpu"] == 671 * 10**9 // 8


def test_deepseek_v3_2_fits_eight_h200_in_fp8(capsys):
    """Issue 24: weights from the checkpoint's fp8 (128 x 128 blocks), not 671B x 2 B."""
    rc, d, _ = run_json(capsys, "deepseek-v3.2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                        "--context", "32768")
    assert rc == 0 and d["fits"] and d["weight_dtype"] == "checkpoint (fp8)"
    # about half of 671.9B x 2 B / 8 = 167.97 GB: fp8 values, fp32 block scales, bf16 norms,
    # routers and the MLA down projections whole on every rank
    assert 80e9 < d["weights_bytes_per_gpu"] < 90e9


def test_draft_model(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "32768", "--draft", "llama-3.1-8b")
    assert rc == 0 and d["draft"] == "llama-3.1-8b"
    # the draft's bf16 checkpoint too (16,060,522,496 B): a quarter, its (2 x 32 + 1) x 4,096
    # norm weights whole on every rank
    norms = (2 * 32 + 1) * 4096 * 2
    assert d["draft_weights_bytes_per_gpu"] == (16_060_522_496 - norms) // 4 + norms
    draft_seq = 2 * 32 * 2 * 128 * 2 * 32768
    assert d["draft_kv_bytes_per_sequence_per_gpu"] == draft_seq
    assert d["kv_bytes_per_sequence_per_gpu"] == 2 * 80 * 2 * 128 * 2 * 32768 + draft_seq


def test_plan_that_does_not_fit_exits_1_with_one_clear_line(capsys):
    rc, out, err = run(capsys, "llama-3.1-70b", "--gpu", "A100-80GB", "--context", "8192")
    assert rc == 1
    assert err.count("\n") == 1
    assert err.startswith("kvlib plan: does not fit: weights 141.11 GB")
    assert "sequences in all" in out  # the plan is still shown


def test_not_fitting_json_says_why(capsys):
    rc, d, err = run_json(capsys, "llama-3.1-70b", "--gpu", "L40S", "--gpus", "2", "--tp", "2",
                          "--context", "8192", "--vllm", "0.33")
    assert rc == 1 and d["fits"] is False and d["max_sequences"] == 0
    # an L40S reports 44.42 GiB; the bf16 checkpoint on two ranks: half of all but the norms
    usable = -(-(4442 * GiB // 100) * 92 // 100)
    norms = (2 * 80 + 1) * 8192 * 2
    weights = (141_107_412_992 - norms) // 2 + norms
    assert d["kv_budget_bytes_per_gpu"] == usable - weights - 4 * GiB
    assert d["reason"].startswith("does not fit")


def test_text_output_shows_the_budget(capsys):
    rc, out, _ = run(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                     "--context", "131072", "--vllm", "0.33")
    assert rc == 0
    assert "150.12 GB = 139.81 GiB" in out and "141 GB = 131.32 GiB" in out
    assert "138.11 GB = 128.63 GiB" in out  # ceil(0.92 x 150,119,844,413 B)
    assert "sequences in all" in out and "ms or more" in out
    assert "note: memory: 139.81 GiB, the total CUDA reports on the H200" in out


def test_memory_flag_takes_the_datasheet(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "131072", "--memory", "datasheet", "--vllm", "0.33")
    assert rc == 0 and d["memory_basis"] == "datasheet"
    assert d["usable_bytes_per_gpu"] == 141_000_000_000 * 92 // 100 == 129_720_000_000
    assert any(n == "memory: the datasheet's 141 GB (--memory datasheet)" for n in d["notes"])


def test_gpu_without_cuda_total_says_so(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H100-NVL", "--gpus", "8", "--tp",
                        "8", "--context", "32768", "--vllm", "0.33")
    assert rc == 0 and d["memory_basis"] == "datasheet"
    assert d["usable_bytes_per_gpu"] == 94 * 10**9 * 92 // 100
    assert any("no CUDA-reported total for the H100-NVL" in n for n in d["notes"])


def test_moe_decode_lines(capsys):
    rc, out, _ = run(capsys, "deepseek-v2", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                     "--context", "32768")
    assert rc == 0
    assert "uniform routing" in out and "of 160 experts per layer, 6 per token" in out
    assert "every weight read" in out


@pytest.mark.parametrize("argv, message", [
    (["llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "3", "--context", "8"],
     "gpus=4 must be a multiple of tensor_parallel_size=3"),
    (["llama-3.1-70b", "--gpu", "H200", "--gpus", "3", "--tp", "3", "--context", "8"],
     "tensor_parallel_size=3 must divide the query heads"),
    (["llama-3.1-70b", "--gpu", "V100", "--context", "8"], "GPU must be one of"),
    (["no-such-model", "--gpu", "H200", "--context", "8"], "unknown model 'no-such-model'"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "0"],
     "argument --context: must be a whole number of tokens"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--gpu-mem-util", "1.5"],
     "argument --gpu-mem-util: must be a number in (0, 1] such as 0.9, got '1.5'"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--gpu-mem-util", "x"],
     "argument --gpu-mem-util: must be a number in (0, 1]"),
    (["llama-3.1-70b", "--gpu", "A100", "--context", "8"],
     "GPU 'A100' names 2 parts: choose one of A100-40GB, A100-80GB"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--params", "lots"],
     "--params must be a positive whole count"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--hbm-gib", "-1"],
     "--hbm-gib must be positive"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--vllm", "0.35"],
     "argument --vllm: vLLM release must be one of 0.34.0, 0.33.0, got '0.35'"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--kv-cache-memory", "40XB"],
     "argument --kv-cache-memory: must be a number of bytes such as 42949672960 or 40GiB"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--kv-cache-memory", "0.5"],
     "argument --kv-cache-memory: must be a positive whole number of bytes, got '0.5'"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--overhead-gib", "2"],
     "--overhead-gib 2: not a term of vLLM 0.34.0's budget"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--vllm", "0.33", "--graph-pool-gib",
      "1"], "--graph-pool-gib 1: not a term of vLLM 0.33.0's budget (it takes --overhead-gib)"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--kv-cache-memory", "40GiB",
      "--non-torch-gib", "1"], "--non-torch-gib 1: not used with --kv-cache-memory"),
    (["llama-3.1-70b", "--gpu", "H200", "--context", "8", "--peak-gib", "1"],
     "unrecognized arguments: --peak-gib 1"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_argparse_errors_are_one_line_too(capsys):
    assert main(["plan", "llama-3.1-70b", "--gpu", "H200", "--context", "8",
                 "--kv-dtype", "fp6"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_config_without_params_needs_the_flag(tmp_path, capsys):
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
           "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    rc, _, err = run(capsys, str(path), "--gpu", "L40S", "--context", "4096")
    assert rc == 2 and "give it (--params)" in err
    rc, d, _ = run_json(capsys, str(path), "--gpu", "L40S", "--context", "4096",
                        "--params", "1000000")
    assert rc == 0 and d["weights_bytes_per_gpu"] == 2_000_000
    assert d["kv_bytes_per_sequence_per_gpu"] == 2 * 2 * 2 * (64 // 4) * 2 * 4096


@pytest.mark.parametrize("text, value", [
    ("70600000000", 70_600_000_000), ("70.6B", 70_600_000_000), ("8.03e9", 8_030_000_000),
    ("124M", 124_000_000), ("1T", 10**12),
])
def test_parse_count(text, value):
    assert parse_count(text) == value


def test_review_mends_one_line_each(capsys, tmp_path):
    """A bad --draft names the flag; nothing fitting says vLLM would not start; int4 says vLLM
    has no plain int4 cache; explain-log takes vLLM's dtype spellings and names a folder."""
    rc, _, err = run(capsys, "llama-3.1-70b", "--gpu", "H200", "--draft", "nope")
    assert rc == 2 and err.startswith("kvlib plan: error: --draft: unknown model 'nope'")
    rc, out, _ = run(capsys, "glm-5", "--gpu", "H200", "--gpus", "8", "--tp", "8", "--context",
                     "8192")
    assert rc == 1 and "vLLM would refuse to start" in out and "0.00 x" not in out
    rc, out, _ = run(capsys, "llama-3.1-8b", "--gpu", "H200", "--context", "8192", "--kv-dtype",
                     "int4")
    assert rc == 0 and "has no plain int4 kv_cache_dtype" in out
    log = "tests/fixtures/vllm_logs/llama-3.1-8b-instruct_RTX3090_V0_issue10517.log"
    assert main(["explain-log", log, "--model", "llama-3.1-8b", "--kv-dtype", "bfloat16"]) == 0
    capsys.readouterr()
    assert main(["explain-log", str(tmp_path)]) == 2
    assert "is a folder, not a log file" in capsys.readouterr().err


def _h200_llama_70b_tp4():
    """The CUDA total of an H200 (139.81 GiB, kvlib/serving/gpus.py) and Llama 3.1 70B's bf16
    weights on one of 4 ranks (a quarter of all but the 161 x 8,192 norm weights)."""
    norms = (2 * 80 + 1) * 8192 * 2
    return 13981 * GiB // 100, (141_107_412_992 - norms) // 4 + norms


def test_vllm_0_34_budget_by_hand(capsys):
    """vLLM 0.34.0's extensible cache (the default): u = 1.0, margin max(1 GiB, 0.75 P),
    min(ceil(u M), M - M_0 - margin) - W - (non-torch + graph pool) - P."""
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "128K")
    total, weights = _h200_llama_70b_tp4()
    in_use, activation, graphs, non_torch = GiB // 2, 3 * GiB // 2, 2 * GiB, GiB // 2
    peak = activation + graphs  # 3.5 GiB: the profiling peak + the CUDA-graph estimate
    margin = max(GiB, peak * 3 // 4)  # 2.625 GiB
    usable = min(total, total - in_use - margin)
    budget = usable - weights - (non_torch + graphs) - peak
    assert rc == 0 and d["vllm"] == "0.34.0" and d["budget_rule"] == "extensible"
    assert d["gpu_mem_util"] == 1.0 and d["block_size"] == 64
    assert d["margin_bytes_per_gpu"] == margin == 2_818_572_288
    assert d["usable_bytes_per_gpu"] == usable == 146_764_401_213
    assert d["kv_budget_bytes_per_gpu"] == budget == 105_043_118_653
    assert d["max_sequences_per_replica"] == budget // (10 * GiB) == 9
    assert any("(--graph-pool-gib)" in a and "2 GiB" in a for a in d["assumptions"])
    assert d["notes"][0].startswith("memory:") and any(
        n.startswith("budget: vLLM 0.34.0's extensible KV cache") for n in d["notes"])


def test_vllm_0_34_with_a_utilization_below_one_shrinks_the_cache(capsys):
    rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                        "--context", "128K", "--gpu-mem-util", "0.9", "--activation-peak-gib",
                        "1", "--graph-pool-gib", "1", "--non-torch-gib", "0", "--in-use-gib", "0")
    total, weights = _h200_llama_70b_tp4()
    requested = -(-total * 9 // 10)  # below total - 0 - max(1 GiB, 1.5 GiB): it binds
    assert d["usable_bytes_per_gpu"] == requested
    assert d["kv_budget_bytes_per_gpu"] == requested - weights - GiB - 2 * GiB


def test_vllm_flag_chooses_the_release(capsys):
    _, d33, _ = run_json(capsys, "llama-3.1-8b", "--gpu", "H200", "--context", "8192",
                         "--vllm", "v0.33.0")
    _, d34, _ = run_json(capsys, "llama-3.1-8b", "--gpu", "H200", "--context", "8192",
                         "--vllm", "0.34")
    assert (d33["vllm"], d33["budget_rule"], d33["block_size"]) == ("0.33.0", "profiled", 16)
    assert (d34["vllm"], d34["budget_rule"], d34["block_size"]) == ("0.34.0", "extensible", 64)
    assert d33["gpu_mem_util"] == 0.92 and d33["overhead_bytes_per_gpu"] == 4 * GiB
    assert not any("vLLM 0.34.0" in n for n in d33["notes"])
    rc, out, _ = run(capsys, "llama-3.1-8b", "--gpu", "H200", "--context", "8192")
    assert "vLLM 0.34.0 (extensible KV cache, measured after warmup)" in out.splitlines()[0]
    assert "  assumed: in use when vLLM starts (CUDA context, other processes): 0.5 GiB" in out


@pytest.mark.parametrize("release", ["0.34", "0.33"])
def test_kv_cache_memory_plans_from_a_known_budget(capsys, release):
    """vLLM's kv_cache_memory_bytes: the budget outright (in 0.34.0 the extensible cache off,
    vllm/config/vllm.py:3203), whatever the weights and the utilization."""
    for text in ("42949672960", "42,949,672,960", "40GiB", "40 GiB"):
        rc, d, _ = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                            "--context", "128K", "--vllm", release, "--kv-cache-memory", text)
        assert rc == 0 and d["budget_rule"] == "kv_cache_memory_bytes"
        assert d["kv_budget_bytes_per_gpu"] == 40 * GiB
        # 40 GiB / 10 GiB is 4 by bytes alone; vLLM keeps one block as its null block, so
        # (40 GiB / one block - 1) // (one sequence's blocks) = 3 sequences
        assert d["bytes_alone_sequences_per_replica"] == 4
        block = d["vllm_bytes_per_block"]
        assert d["vllm_blocks_per_sequence"] * block == 10 * GiB
        assert d["max_sequences_per_replica"] == (40 * GiB // block - 1) // (10 * GiB // block) \
            == 3
        assert d["assumptions"] == []
    off = "turns its extensible KV cache off" in d["notes"][1]
    assert off == (release == "0.34")
    rc, d, err = run_json(capsys, "llama-3.1-70b", "--gpu", "H200", "--gpus", "4", "--tp", "4",
                          "--context", "128K", "--vllm", release, "--kv-cache-memory", "120GB")
    assert rc == 1 and not d["fits"] and "exceed the 150.12 GB of the H200" in err
