"""``kvlib explain-log -`` reads the log from standard input (``docker logs NAME 2>&1 | kvlib
explain-log -``), for vLLM's, SGLang's and TensorRT-LLM's logs alike, with the verdict the same
file gets; text that is no start-up log is refused in one line, exit 2."""

import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOGS = [FIXTURES / "vllm_logs" / "gpt-oss-120b_H100_v0.10.1_issue23278.log",
        FIXTURES / "sglang_logs"
        / "mimo-v2-flash_tp4_hybrid-swa_interleaved-ranks_sglang-pr15464.log",
        FIXTURES / "trtllm_logs" / "gpt-oss-20b_dgx-spark_1.1.0rc3_from-source.log"]


def _run(*argv, stdin=None):
    return subprocess.run([sys.executable, "-m", "kvlib", "explain-log", *argv], input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.parent.name)
def test_standard_input_reads_as_the_file_does(path):
    from_file = _run(str(path))
    piped = _run("-", stdin=path.read_text())
    assert piped.returncode == from_file.returncode
    verdict = [line for line in from_file.stdout.splitlines() if line.startswith("verdict:")]
    assert verdict and verdict == [line for line in piped.stdout.splitlines()
                                   if line.startswith("verdict:")]


def test_standard_input_that_is_no_log_is_refused_in_one_line():
    r = _run("-", stdin="hello\n")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "not a vLLM start-up log" in r.stderr
