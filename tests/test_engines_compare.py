"""One answer to compare (issue 41 item 2): every engine's plan opens with the same line, ends
with the same totals and gives the same JSON keys; --gpus means replicas = GPUs / TP for every
engine; ``--engine all`` puts them side by side, an engine a column, refusals by name. Values
are hand arithmetic written out here (the engines' rules as tests/test_engines.py traces them)."""

import json
import re

import pytest

from kvlib.cli import main
from kvlib.models.catalog import BUNDLED
from kvlib.serving.engines.answer import fmt_fraction
from kvlib.serving.engines.trtllm import DEFAULT_FRACTION

GiB = 1 << 30
H200_CUDA_TOTAL = 150_119_844_413  # kvlib's catalog, from a public vLLM start-up log
LLAMA_8B_WEIGHTS = 8_030_261_248 * 2  # Llama 3.1 8B's published parameter count x bf16
# the keys every engine's --json has at its top level (docs/cli.md's table)
SHARED = {"engine", "release", "model", "gpu", "gpus", "tp", "replicas", "context", "kv_dtype",
          "weight_dtype", "total_memory_bytes_per_gpu", "weights_bytes_per_gpu",
          "kv_budget_bytes_per_gpu", "budget_rule", "budget_base",
          "kv_bytes_per_token_per_gpu", "page_tokens", "pools", "window_pool", "state_pool",
          "kv_tokens_per_gpu", "max_sequences_per_replica", "max_sequences",
          "differs_from_vllm", "fits", "assumptions", "notes"}
LLAMA = ["plan", "llama-3.1-8b", "--gpu", "H200", "--gpus", "2", "--tp", "1",
         "--context", "8192"]
# llama-3.1-8b: 32 layers x 8 KV heads x (128 + 128) dims x 2 B, every engine alike
CELL = 32 * 8 * (128 + 128) * 2  # 131,072 B


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv):
    rc, out, err = run(capsys, *argv, "--json")
    return rc, json.loads(out), err


def sglang_by_hand():
    # free before the weights = CUDA total - 0.5 GiB; mem_fraction_static 0.903 on an H200 at
    # TP 1 (tests/test_engines.py); budget = free x 0.903 - weights, floored
    budget = ((H200_CUDA_TOTAL - GiB // 2) * 903 - LLAMA_8B_WEIGHTS * 1000) // 1000
    tokens = budget // CELL  # page 1
    return budget, tokens, tokens // 8192  # 119,012,902,575 B, 907,996 tokens, 110


def trtllm_by_hand():
    # (CUDA total - weights - 4.5 GiB) x 0.9 as a float32 = 15,099,494 / 2^24
    budget = (H200_CUDA_TOTAL - LLAMA_8B_WEIGHTS - 9 * GiB // 2) * 15_099_494 // (1 << 24)
    blocks = -(-(budget // CELL) // 32)  # max_tokens in whole blocks of 32, rounded up
    return budget, blocks * 32, blocks // (8192 // 32)


def test_hand_values_are_what_the_engines_code_traces():
    assert sglang_by_hand() == (119_012_902_575, 907_996, 110)
    budget, tokens, sessions = trtllm_by_hand()
    assert tokens % 32 == 0 and sessions * 8192 <= tokens < (sessions + 1) * 8192


@pytest.mark.parametrize(("engine", "title"), [
    ("vllm", "vLLM 0.34.0 (extensible KV cache, measured after warmup)"),
    ("sglang", "SGLang 0.5.23 (mem_fraction_static 0.903)"),
    ("trtllm", "TensorRT-LLM at 000439672005 (free_gpu_memory_fraction 0.9)"),
])
def test_every_engine_opens_with_the_same_line(capsys, engine, title):
    rc, out, err = run(capsys, *LLAMA, "--engine", engine)
    assert rc == 0 and err == ""
    first = out.splitlines()[0]
    assert first == ("llama-3.1-8b on 2 x H200, TP=1 (2 replicas), context 8,192, "
                     "kv bf16 (auto: the model's dtype), "
                     f"weights checkpoint (bf16), {title}")


def _total(out: str, label: str) -> int:
    (line,) = [x for x in out.splitlines() if x.strip().startswith(label)]
    return int(line.strip()[len(label):].split()[0].replace(",", ""))


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_gpus_make_replicas_for_every_engine(capsys, engine):
    """--gpus 2 --tp 1: two replicas, sequences in all = 2 x per replica (issue 41: SGLang and
    TensorRT-LLM dropped --gpus)."""
    budget, tokens, per_replica = (sglang_by_hand() if engine == "sglang"
                                   else trtllm_by_hand())
    rc, out, _ = run(capsys, *LLAMA, "--engine", engine)
    assert rc == 0
    assert _total(out, "sequences per replica") == per_replica
    assert _total(out, "sequences in all") == 2 * per_replica
    rc, d, _ = run_json(capsys, *LLAMA, "--engine", engine)
    assert (d["gpus"], d["tp"], d["replicas"]) == (2, 1, 2)
    assert d["kv_budget_bytes_per_gpu"] == budget
    assert d["kv_tokens_per_gpu"] == tokens
    assert d["kv_bytes_per_token_per_gpu"] == CELL
    assert d["page_tokens"] == (1 if engine == "sglang" else 32)
    assert d["max_sequences_per_replica"] == per_replica
    assert d["max_sequences"] == 2 * per_replica
    assert d["weights_bytes_per_gpu"] == LLAMA_8B_WEIGHTS


def test_every_engine_gives_the_same_json_keys(capsys):
    keys = {}
    for engine in ("vllm", "sglang", "trtllm"):
        rc, d, _ = run_json(capsys, *LLAMA, "--engine", engine)
        assert rc == 0 and d["engine"] == engine
        keys[engine] = set(d)
    assert keys["sglang"] == SHARED | {"sglang"}
    assert keys["trtllm"] == SHARED | {"trtllm"}
    assert SHARED <= keys["vllm"]  # vLLM's own keys stay at the top level, as before
    rc, d, _ = run_json(capsys, *LLAMA)
    # vLLM: 2 replicas; its pages of 64 tokens, the same bytes per token
    assert (d["replicas"], d["page_tokens"], d["kv_bytes_per_token_per_gpu"]) == (2, 64, CELL)
    assert d["max_sequences"] == 2 * d["max_sequences_per_replica"]
    assert d["kv_tokens_per_gpu"] == d["vllm_num_blocks"] * 64


def test_sglang_extras_sit_under_its_name(capsys):
    rc, d, _ = run_json(capsys, *LLAMA, "--engine", "sglang")
    own = d["sglang"]
    assert own["fraction"] == 0.903
    assert own["max_running_requests"] == 4096  # min(max(min(int(907996 / 8192 x 512), ...
    rc, d, _ = run_json(capsys, *LLAMA, "--engine", "trtllm")
    assert d["trtllm"]["source"].startswith("NVIDIA/TensorRT-LLM at 0004396720054fd8")
    assert d["release"] == "at 000439672005"


def test_fractions_are_printed_for_people():
    assert fmt_fraction(0.9) == "0.9"
    assert fmt_fraction(DEFAULT_FRACTION) == "0.9 (float32 0.8999999761581421)"
    assert fmt_fraction(0.828) == "0.828"
    assert fmt_fraction(1) == "1"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "all"])
def test_no_raw_float_in_a_row_label(capsys, engine):
    """A float's digits appear only where the float matters, said to be a float32."""
    rc, out, _ = run(capsys, *LLAMA, "--engine", engine)
    for line in out.splitlines():
        for m in re.finditer(r"\d+\.\d{7,}", line):
            assert line[:m.start()].endswith("float32 "), line


def _columns(out: str) -> dict[str, list[str]]:
    """The --engine all table's rows, by label: the cells, split on runs of spaces."""
    rows = {}
    for line in out.splitlines()[2:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 4:
            rows[cells[0]] = cells[1:]
    return rows


def test_engine_all_one_column_an_engine(capsys):
    rc, out, err = run(capsys, *LLAMA, "--engine", "all")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("llama-3.1-8b on 2 x H200, TP=1 (2 replicas), context 8,192, "
                        "kv bf16 (auto: the model's dtype), "
                        "weights checkpoint (bf16), engines side by side")
    assert lines[1].split() == ["vLLM", "0.34.0", "SGLang", "0.5.23", "TensorRT-LLM", "at",
                                "000439672005"]
    rows = _columns(out)
    _, sg_tokens, sg_sessions = sglang_by_hand()
    _, trt_tokens, trt_sessions = trtllm_by_hand()
    assert rows["bytes per token per GPU"] == ["131,072 B"] * 3
    assert rows["page (tokens)"] == ["64", "1", "32"]
    assert rows["KV tokens per GPU"][1:] == [f"{sg_tokens:,}", f"{trt_tokens:,}"]
    assert rows["sequences per replica"][1:] == [f"{sg_sessions:,}", f"{trt_sessions:,}"]
    assert rows["sequences in all"][1:] == [f"{2 * sg_sessions:,}", f"{2 * trt_sessions:,}"]
    assert rows["budget's fraction"] == ["gpu_memory_utilization 1", "mem_fraction_static 0.903",
                                         "free_gpu_memory_fraction 0.9"]
    assert rows["KV budget per GPU"][1] == "110.84 GiB"  # 119,012,902,575 / 2^30 = 110.837...
    (sg,) = [x for x in lines if x.strip().startswith("SGLang 0.5.23 differs from vLLM:")]
    assert "memory free before the weights load" in sg and "page: 1 token (vLLM: 64)" in sg
    (trt,) = [x for x in lines if x.strip().startswith("TensorRT-LLM at 000439672005 differs")]
    assert "page: 32 tokens (vLLM: 64)" in trt


def test_engine_all_sets_the_engines_side_by_side(capsys):
    rc, out, err = run(capsys, "plan", "gpt-oss-120b", "--gpu", "H200", "--context", "8192",
                       "--engine", "all")
    assert rc == 0 and err == ""  # all three plan it (TensorRT-LLM at full length, its default)
    rows = _columns(out)
    assert "refused" not in rows["KV budget per GPU"][2]
    # SGLang's two pools: 18 full + 18 sliding layers, 8 KV heads x (64 + 64) x 2 B each
    assert rows["pools"][1] == "full + sliding window"
    assert rows["bytes per token per GPU"][1] == f"{18 * 8 * 128 * 2:,} + {18 * 8 * 128 * 2:,} B"
    assert not [x for x in out.splitlines() if " refuses: " in x]
    rc, d, _ = run_json(capsys, "plan", "gpt-oss-120b", "--gpu", "H200", "--context", "8192",
                        "--engine", "all")
    assert set(d["engines"]) == {"vllm", "sglang", "trtllm"}
    assert "refused" not in d["engines"]["trtllm"]
    window = d["engines"]["sglang"]["window_pool"]
    assert "0.8 x the full pool" in window


def test_engine_all_shows_a_refusal_in_its_column(capsys):
    # TensorRT-LLM's Gated DeltaNet state pool is not traced: refused by name, in its column
    rc, out, _ = run(capsys, "plan", "qwen3-next-80b-a3b", "--gpu", "H200", "--gpus", "4",
                     "--tp", "4", "--context", "8192", "--engine", "all")
    assert rc == 0  # vLLM plans it
    rows = _columns(out)
    assert rows["KV budget per GPU"][2] == "refused (below)"
    refusals = [x.strip() for x in out.splitlines() if " refuses: " in x]
    trt = [x for x in refusals if x.startswith("TensorRT-LLM at 000439672005 refuses: ")]
    assert len(trt) == 1 and "qwen3-next-80b-a3b" in trt[0] and "Gated DeltaNet" in trt[0]
    rc, d, _ = run_json(capsys, "plan", "qwen3-next-80b-a3b", "--gpu", "H200", "--gpus", "4",
                        "--tp", "4", "--context", "8192", "--engine", "all")
    assert set(d["engines"]["trtllm"]) == {"engine", "release", "refused"}


def test_engine_all_every_engine_refuses_exits_2(capsys):
    # 28 query heads do not split over TP 8, whatever the engine
    rc, out, err = run(capsys, "plan", "qwen2.5-7b", "--gpu", "H200", "--gpus", "8", "--tp",
                       "8", "--context", "8192", "--engine", "all")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert out.splitlines()[0].startswith("qwen2.5-7b on 8 x H200, TP=8, context 8,192")
    assert sum(" refuses: " in x for x in out.splitlines()) == 3


def test_engine_all_holds_each_engines_own_json(capsys):
    rc, both, _ = run_json(capsys, *LLAMA, "--engine", "all")
    for engine in ("vllm", "sglang", "trtllm"):
        rc, alone, _ = run_json(capsys, *LLAMA, "--engine", engine)
        mine = dict(both["engines"][engine])
        if engine != "vllm":  # alone, it names no vLLM value beside its own
            assert mine.pop("differs_from_vllm").endswith("(vLLM: 64); no window or state "
                                                          "pool in this model")
            alone.pop("differs_from_vllm")
        assert mine == alone


def test_engine_all_gives_each_engine_its_flags(capsys):
    rc, out, err = run(capsys, *LLAMA, "--engine", "all", "--mem-fraction-static", "0.85",
                       "--gpu-mem-util", "0.9", "--free-gpu-memory-fraction", "0.8")
    assert rc == 0 and err == ""
    rows = _columns(out)
    assert rows["budget's fraction"] == ["gpu_memory_utilization 0.9", "mem_fraction_static 0.85",
                                         "free_gpu_memory_fraction 0.8"]


@pytest.mark.parametrize("name", list(BUNDLED))
def test_engine_all_answers_for_every_bundled_model(capsys, name):
    rc, d, err = run_json(capsys, "plan", name, "--gpu", "H200", "--context", "8192",
                          "--engine", "all")
    assert rc in (0, 1), err
    assert "vllm" in d["engines"] and "refused" not in d["engines"]["vllm"]
    for engine, plan in d["engines"].items():
        if "refused" in plan:
            assert "\n" not in plan["refused"] and plan["refused"]
        else:
            assert SHARED <= set(plan), engine
            assert plan["max_sequences"] == plan["replicas"] * plan["max_sequences_per_replica"]
