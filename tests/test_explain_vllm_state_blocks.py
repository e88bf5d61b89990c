"""How many blocks a hybrid model's state group takes one request, by vLLM release and setting
(issue 43, FIX-C), a launch command pasted with the log, V0's "maximum number of tokens" failure
and the num_gpu_blocks_override line, and the rules the header names. Sources of the logs in
tests/fixtures/vllm_logs/SOURCES.md.

The rule per release, read in vLLM's wheels (kvlib/serving/engines/vllm/log/rules.py,
``STATE_MODES``): up to 0.11.0 one block whatever the settings (0.11.0
v1/kv_cache_interface.py:235-239); 0.11.1-0.14 cdiv(max_model_len, mamba_block_size) with
mamba_block_size = max_model_len, i.e. one block, unless prefix caching is on for a model that
supports it (Qwen's Gated DeltaNet never does); 0.15-0.25 one block unless prefix caching is on
(off by default for hybrids), then 2 (align); 0.26-0.27 prefix caching on by default; 0.28 align
for every model; checkpoint blocks from 0.32 (Mamba2) and 0.33 (Gated DeltaNet).

Every expected figure below is worked out by hand from the bundled configs:

* Qwen3-Next-80B-A3B (``qwen3-next-80b-a3b``): 48 layers, 12 full attention with 2 KV heads x
  256, 36 Gated DeltaNet with 16 key and 32 value heads of 128, conv kernel 4, states in the
  model dtype (2 B).
* Qwen3.6-35B-A3B (``qwen3.6-35b-a3b``): 40 layers, 10 full attention with 2 KV heads x 256, 30
  Gated DeltaNet with 16 key and 32 value heads of 128, conv kernel 4, temporal state fp32.
* Qwen3.5-27B (``qwen3.5-27b``): 64 layers, 16 full attention with 4 KV heads x 256, 48 Gated
  DeltaNet with 16 key and 48 value heads of 128, conv kernel 4, temporal state fp32.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvlib.cli import main
from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.log import read_log, read_log_text
from kvlib.serving.engines.vllm.log.reading import VllmLog, read_command
from kvlib.serving.engines.vllm.log.rules import state_modes

LOGS = Path(__file__).resolve().parent / "fixtures" / "vllm_logs"
GiB = 1024**3

NEXT_FP8 = "qwen3-next-80b-a3b-autoround_tp2_kvfp8e5m2_v0.11.0_issue26646.log"
NEXT_CMD = "qwen3-next-80b-a3b-autoround_tp2_command-and-2-lines_spliced_issue26646.log"
GGUF = "qwen3.5-gguf_override512_v0.18-dev_pr39559.log"
R1 = "deepseek-r1-distill-qwen-14b_2x4090_tp2_V0_failure_issue13061.log"
MITCH = "qwen3.8-27b-fp8_tp2_fp8kv_2-lines_mitchross-pr1995.log"
V013 = "qwen3-next-80b-a3b_w4a16_2xL40S_tp2_kvfp8_v0.13.0.log"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _two(x: Fraction) -> str:
    return f"{float(x):.2f}"


def _run(capsys, name, *argv):
    code = main(["explain-log", str(LOGS / name), *argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _judged(d):
    return [(c["line"], c["status"]) for c in d["checks"] if c["status"] != "info"]


# ------------------------------------------------ Qwen3-Next-80B-A3B, TP 2, fp8, vLLM 0.11.0

# state at TP 2: conv (4 - 1) rows x (128 x 8 x 2 + 128 x 16) channels x 2 B + temporal
# 16 value heads x 128 x 128 x 2 B
STATE_NEXT = 3 * (128 * 8 * 2 + 128 * 16) * 2 + 16 * 128 * 128 * 2
# fp8 attention at TP 2: 2 (K, V) x 1 KV head x 256 x 1 B = 512 B a token a layer
BLOCK_NEXT = _cdiv(_cdiv(STATE_NEXT, 512), 16) * 16
PER_BLOCK_NEXT = 12 * BLOCK_NEXT * 512  # groups of 12 layers: 1 full + 3 Gated DeltaNet
FULL_NEXT = _cdiv(215_040, BLOCK_NEXT)  # the full-attention group's blocks at 215,040 tokens


def test_hand_figures_of_issue_26646():
    assert STATE_NEXT == 548_864 and BLOCK_NEXT == 1_072 and PER_BLOCK_NEXT == 6_586_368
    assert FULL_NEXT == 201  # 215,040 / 1,072 = 200.6
    # 90,048 tokens = blocks // 4 groups x 1,072: 90,048 / 1,072 = 84, so blocks 336 to 339
    assert 90_048 == 84 * 1_072 and [b // 4 for b in (336, 339)] == [84, 84]
    # one block a state group (0.11.0): 201 + 3 = 204 blocks a request; 338 / 204 = 1.657 and
    # 339 / 204 = 1.662 print "1.66"; two (align): 201 + 6 = 207, 339 / 207 = 1.638 -> "1.64"
    assert FULL_NEXT + 3 == 204 and _two(Fraction(339, 204)) == _two(Fraction(338, 204)) == "1.66"
    assert {_two(Fraction(b, 207)) for b in range(336, 340)} == {"1.62", "1.63", "1.64"}


def test_issue_26646_one_block_a_state_group(capsys):
    """Before: 1.62 to 1.64x, DISAGREES (two blocks a state group). After: the log prints no
    release and no prefix-caching setting, so the three ways are tried and only one block a
    state group (0.11.0's rule) gives 1.66x."""
    code, d, _ = _run(capsys, NEXT_FP8, "--model", "qwen3-next-80b-a3b", "--tp", "2",
                      "--kv-dtype", "fp8", "--gpu", "A100-80GB")
    assert code == 0 and d["settings"]["state_blocks"] == "one"
    assert d["settings"]["block_size"] == BLOCK_NEXT
    assert d["settings"]["bytes_per_block"] == PER_BLOCK_NEXT
    assert d["settings"]["blocks_per_request"] == 204
    conc = [c for c in d["checks"] if c["quantity"].startswith("maximum concurrency")]
    assert [(c["line"], c["printed"], c["kvlib"], c["status"]) for c in conc] == [
        (2, "1.66x", "1.65 to 1.66x", "ok"), (4, "1.66x", "1.65 to 1.66x", "ok")]
    assert any("only 'one' explains" in n for n in d["notes"])


def test_issue_26646_changed_concurrency_is_not_explained_by_any_way(capsys, tmp_path):
    """1.64x is what two blocks a state group would print: then that way, not 0.11.0's, fits."""
    text = (LOGS / NEXT_FP8).read_text(encoding="utf-8")
    bad = tmp_path / "bad.log"
    bad.write_text(text.replace("1.66x", "1.64x"), encoding="utf-8")
    code = main(["explain-log", str(bad), "--model", "qwen3-next-80b-a3b", "--tp", "2",
                 "--kv-dtype", "fp8", "--gpu", "A100-80GB", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["settings"]["state_blocks"] == "align"
    assert d["settings"]["blocks_per_request"] == 207
    bad.write_text(text.replace("1.66x", "1.70x"), encoding="utf-8")  # no way gives it
    code = main(["explain-log", str(bad), "--model", "qwen3-next-80b-a3b", "--tp", "2",
                 "--kv-dtype", "fp8", "--gpu", "A100-80GB", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"]["disagree"] == 2


# --------------------------------------------------- the launch command pasted with the log

def test_issue_26646_command_gives_tp_and_kv_dtype(capsys):
    """The pasted `vllm serve ... --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2` gives TP 2
    and an fp8 cache without flags (before: TP 1 and bf16 assumed, nothing checked), said."""
    code, d, _ = _run(capsys, NEXT_CMD, "--model", "qwen3-next-80b-a3b", "--gpu", "A100-80GB")
    assert code == 0 and _judged(d) == [(6, "ok")]
    assert (d["settings"]["tensor_parallel_size"], d["settings"]["kv_dtype"]) == (2, "fp8")
    note = next(n for n in d["notes"] if n.startswith("from line 1's pasted launch command"))
    assert "tensor_parallel_size 2" in note and "kv_cache_dtype fp8_e5m2" in note
    # only what the checks take from it: the lines print max_model_len, the fp8 dtype makes the
    # model dtype moot, and gpu_memory_utilization serves only a failure's advice
    assert "max_model_len" not in note and "dtype float16" not in note
    assert "gpu_memory_utilization" not in note


def test_a_flag_wins_over_the_command_and_says_so(capsys):
    code, d, _ = _run(capsys, NEXT_CMD, "--model", "qwen3-next-80b-a3b", "--gpu", "A100-80GB",
                      "--tp", "4")
    assert d["settings"]["tensor_parallel_size"] == 4
    assert any(n.startswith("tensor_parallel_size 4: --tp (the log's line 1's pasted command "
                            "says 2: the flag wins)") for n in d["notes"])


@pytest.mark.parametrize("line, want", [
    ("vllm serve org/m --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2",
     {"model": "org/m", "tensor_parallel_size": 2, "kv_cache_dtype": "fp8_e5m2"}),
    ("$ vllm serve --tensor_parallel_size 2 --gpu_memory_utilization=0.98 /root/m",
     {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.98, "model": "/root/m"}),
    ("vllm serve m -tp 4 --max-model-len 8192 --block-size 32 --enable-prefix-caching",
     {"model": "m", "tensor_parallel_size": 4, "max_model_len": 8192, "block_size": 32,
      "enable_prefix_caching": True}),
    ("python3 -m vllm.entrypoints.openai.api_server --model m --no-enable-prefix-caching",
     {"model": "m", "enable_prefix_caching": False}),
    ("CUDA_VISIBLE_DEVICES=0,1 vllm serve m --override-generation-config '{\"a\": 1}' -tp 2",
     {"model": "m", "override_generation_config": '{"a": 1}', "tensor_parallel_size": 2}),
])
def test_read_command(line, want):
    assert read_command(line) == want


def test_words_quoting_vllm_serve_are_no_command():
    """The 0.13.0 warning "With `vllm serve`, you should provide the model as a positional
    argument" is no launch command."""
    assert read_log(LOGS / V013).command == {}
    assert read_command("WARNING With `vllm serve`, you should provide the model") == {}


# ------------------------------------------------ Qwen3.5 GGUF (PR 39559): 1 block, override

# bf16 attention at TP 1: 2 (K, V) x 2 KV heads x 256 x 2 B = 2,048 B a token a layer
STATE_35B = 3 * (128 * 16 * 2 + 128 * 32) * 2 + 32 * 128 * 128 * 4
BLOCK_GGUF = _cdiv(_cdiv(STATE_35B, 2_048), 16) * 16
PER_BLOCK_GGUF = 10 * BLOCK_GGUF * 2_048


def test_hand_figures_of_pr_39559():
    assert STATE_35B == 2_146_304 and BLOCK_GGUF == 1_056 and PER_BLOCK_GGUF == 21_626_880
    lo, hi = (int((Fraction("6.9") + d) * GiB) for d in (Fraction(-5, 1000), Fraction(5, 1000)))
    assert lo // PER_BLOCK_GGUF == hi // PER_BLOCK_GGUF == 342
    assert 342 // 4 * 1_056 == 89_760
    full = _cdiv(262_144, 1_056)  # 248.2 -> 249
    assert full == 249
    assert _two(Fraction(342, full + 3)) == "1.36"  # one block a state group: 342 / 252
    assert _two(Fraction(342, full + 6)) == "1.34"  # two (align): 342 / 255, not what it prints


def test_pr_39559_is_explained_with_one_block_a_state_group(capsys):
    """Before: 1.34x, DISAGREES. After: 89,760 tokens and 1.36x agree; the override line is
    shown."""
    code, d, _ = _run(capsys, GGUF, "--model", "qwen3.6-35b-a3b", "--gpu", "A100-80GB")
    assert code == 0 and d["settings"]["state_blocks"] == "one"
    assert d["settings"]["blocks_per_request"] == 252
    assert [(c["line"], c["printed"], c["kvlib"], c["status"]) for c in d["checks"]
            if c["status"] != "info"] == [(6, "89,760", "89,760", "ok"),
                                          (7, "1.36x", "1.36x", "ok")]
    over = next(c for c in d["checks"] if c["quantity"] == "num_gpu_blocks_override")
    assert (over["line"], over["printed"], over["status"]) == (
        1, "512 blocks (computed 0)", "info")


# --------------------------------------------------------- the state rule of each release

@pytest.mark.parametrize("version, prefix, want", [
    ("0.11.0", True, ("one",)),      # 0.11.0 kv_cache_interface.py:235-239
    ("0.13.0", True, ("one",)),      # prefix caching disabled for Qwen3-Next ("disabling")
    ("0.19.0", None, ("one",)),      # off by default for hybrids before 0.26
    ("0.20.1", True, ("align",)),
    ("0.24.0", True, ("align",)),
    ("0.26.0", None, ("align",)),    # on by default from 0.26
    ("0.32.0", None, ("align",)),    # Gated DeltaNet's checkpoint blocks from 0.33
    ("0.33.0", None, ("align_ckpt",)),
    ("0.34.0", False, ("one",)),
    (None, None, ("one", "align", "align_ckpt")),
    (None, False, ("one",)),
])
def test_state_modes_of_gated_deltanet(version, prefix, want):
    args = {} if prefix is None else {"enable_prefix_caching": prefix}
    log = VllmLog(lines=[], found=[], version=version, args=args)
    assert state_modes(log, load_model("qwen3-next-80b-a3b"), {}) == want


@pytest.mark.parametrize("version, prefix, want", [
    ("0.13.0", True, ("one", "all")),    # 'all' where the model supports it, else disabled
    ("0.24.0", True, ("align", "all")),
    ("0.28.0", None, ("align",)),        # 0.28: align for every model
    ("0.32.0", None, ("align_ckpt",)),   # Mamba2's checkpoint block from 0.32
])
def test_state_modes_of_mamba2(version, prefix, want):
    args = {} if prefix is None else {"enable_prefix_caching": prefix}
    log = VllmLog(lines=[], found=[], version=version, args=args)
    assert state_modes(log, load_model("nemotron-h-56b"), {}) == want


def test_the_0_13_log_takes_one_block_from_its_engine_line(capsys):
    """The 0.13.0 log prints enable_prefix_caching=False on its engine line (vLLM disabled it):
    one block a state group."""
    code, d, _ = _run(capsys, V013, "--model", "qwen3-next-80b-a3b")
    assert code == 0 and d["settings"]["state_blocks"] == "one"


# ----------------------------------------------------------- the rules the header names

def test_header_names_the_0_20_rule_it_used(capsys):
    """mitchross PR 1995 prints no release; its 302,921 tokens are no whole number of blocks by
    0.11-0.19's rule and int(208 / 90 x 131,072) = int(302,921.9) by 0.20's: the header says
    v1-0.20 (before: v1-0.11). At TP 2, fp8: page 1,568 x 1,024 B holds the 1,603,584 B state;
    84 + 3 x 2 = 90 blocks a request (align); one block a state group (87) fits no block count."""
    state = 3 * (128 * 8 * 2 + 128 * 24) * 2 + 24 * 128 * 128 * 4
    block = _cdiv(_cdiv(state, 1_024), 16) * 16
    assert (state, block, _cdiv(131_072, block)) == (1_603_584, 1_568, 84)
    assert int(Fraction(208, 90) * 131_072) == 302_921 and _two(Fraction(208, 90)) == "2.31"
    assert all(int(Fraction(b, 87) * 131_072) != 302_921 for b in range(195, 210))
    argv = ["--model", "qwen3.5-27b", "--tp", "2", "--kv-dtype", "fp8", "--gpu", "RTX-4090"]
    code, d, _ = _run(capsys, MITCH, *argv)
    assert code == 0 and d["settings"]["rules"] == "v1-0.20"
    assert d["settings"]["blocks_per_request"] == 90 and _judged(d) == [(2, "ok")]
    main(["explain-log", str(LOGS / MITCH), *argv])
    assert "rules v1-0.20;" in capsys.readouterr().out.splitlines()[2]


# ------------------------------------------------- V0's "maximum number of tokens" failure

def test_issue_13061_failure_line_is_shown(capsys):
    """V0 (multiproc workers), TP 2 from its command: 81,536 tokens = 5,096 blocks of 16
    (81,536 / 16 = 5,096 exactly). No model named and no KV-memory line in the excerpt: shown,
    nothing checked (before: the line was not shown at all)."""
    assert 81_536 % 16 == 0 and 81_536 // 16 == 5_096
    code, d, _ = _run(capsys, R1)
    assert code == 1 and d["settings"]["rules"] == "v0"
    assert d["settings"]["tensor_parallel_size"] == 2
    fail = next(c for c in d["checks"] if c["quantity"] == "tokens the KV cache can store")
    assert (fail["line"], fail["printed"], fail["kvlib"], fail["status"]) == (
        6, "81,536", "5,096 blocks x 16", "info")


V0_TEXT = (
    "INFO 02-11 07:40:40 worker.py:267] model weights take 14.99GiB; non_torch_memory takes "
    "0.14GiB; PyTorch activation peak memory takes 1.20GiB; the rest of the memory reserved "
    "for KV Cache is 1.00GiB.\n"
    "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
    "that can be stored in KV cache ({tokens}). Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine.\n")


@pytest.mark.parametrize("tokens, status", [(18_720, "ok"), (20_000, "mismatch")])
def test_v0_failure_checked_against_the_kv_line(tokens, status):
    """Qwen2.5-7B at TP 1, bf16: 28 layers x 2 x 4 KV heads x 128 x 2 B = 57,344 B a token,
    917,504 B a 16-token block; 1.00 GiB +- 0.005 holds 1,164 to 1,176 blocks (1,170 x 16 =
    18,720 tokens fits; 20,000 = 1,250 blocks does not)."""
    from kvlib.serving.engines.vllm.log import explain
    per_block = 28 * 2 * 4 * 128 * 2 * 16
    assert per_block == 917_504
    assert int(Fraction("0.995") * GiB) // per_block == 1_164
    assert int(Fraction("1.005") * GiB) // per_block == 1_176
    e = explain(read_log_text(V0_TEXT.format(tokens=tokens)), load_model("qwen2.5-7b"))
    check = next(c for c in e.checks if c.quantity == "tokens the KV cache can store")
    assert check.status == status and check.kvlib == "18,624 to 18,816"


def test_issue_26646_without_gpu_is_not_explained(capsys):
    """Without --gpu the 0.33+ way (checkpoint blocks, Hopper's 64-token GDN alignment) has no
    single layout, so it might fit too: the figures are said not explained, naming why."""
    code, d, _ = _run(capsys, NEXT_FP8, "--model", "qwen3-next-80b-a3b", "--tp", "2",
                      "--kv-dtype", "fp8")
    assert code == 1 and d["verdict"]["verdict"] == "nothing checked"
    assert [c["status"] for c in d["checks"]] == ["unexplained", "unexplained"]
    assert "'align_ckpt' (vLLM's layout of this model depends on the GPU" in d["checks"][0][
        "reason"]
