"""`make bench` reports issue 42's start-up ratio: a first `kvlib estimate`, `kvlib plan` (under
each engine) and `kvlib --help` against `python -c "import numpy"`, measured in the same rounds
(scripts/bench.py, part 4). No wall-clock threshold here: machines vary; the bench prints the
ratios and flags those over the target."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))  # as when run as a script
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_bench_divides_each_command_by_importing_numpy(monkeypatch, capsys):
    bench = _bench(monkeypatch)
    # each command "takes" a time set by what it runs, so the ratios are known by hand
    cost = {"pass": 0.04, "import numpy": 0.2, "import numpy, sympy": 0.5, "--help": 0.3,
            "llama-3-70b": 0.4, "estimate llama-3.1-8b": 0.3, "plan llama-3.1-8b": 0.5,
            "H200 --engine sglang": 0.6, "H200 --engine trtllm": 0.4}
    ran, envs = [], []

    def fake_run_once(argv, env):
        line = " ".join(argv)
        ran.append(line)
        envs.append(env)
        t = next(v for k, v in sorted(cost.items(), key=lambda kv: -len(kv[0])) if k in line)
        return t, t / 2  # CPU time half the wall time: the same ratios

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(bench, "run_once", fake_run_once)
    c = bench.bench_cli(quick=True)
    assert c["import_numpy_seconds"] == 0.2
    ratio = c["startup_ratio"]
    assert ratio["estimate llama-3.1-8b"]["ratio"] == 0.3 / 0.2
    assert ratio["plan llama-3.1-8b --gpu H200"]["ratio"] == 0.5 / 0.2
    assert ratio["plan ... --engine sglang"]["ratio"] == 0.6 / 0.2
    assert ratio["plan ... --engine trtllm"]["cpu_ratio"] == 0.2 / 0.1
    assert ratio["--help"]["ratio"] == 0.3 / 0.2
    # rounds interleave: after one warm run each, every command once per round, in turn
    n = len(bench.STARTUP) + 4
    assert len(ran) == 6 * n and ran[n:2 * n] == ran[:n] == ran[-n:]
    # the children run with bytecode, as installed, whatever this shell says
    assert all("PYTHONDONTWRITEBYTECODE" not in e for e in envs)
    bench.print_cli({"cli": c})
    out = capsys.readouterr().out
    assert "start-up ratio, target x2.5 (floor: python -c 'import numpy'" in out
    assert "x2.50" in out and "--engine sglang" in out
    sglang = next(line for line in out.splitlines() if "--engine sglang" in line)
    assert sglang.endswith("x3.00  CPU x3.00  <- over x2.5")
    plan = next(line for line in out.splitlines() if "plan llama-3.1-8b" in line)
    assert plan.endswith("x2.50  CPU x2.50")  # at the target, not over it


def test_timed_rounds_takes_the_median_of_each_command(monkeypatch):
    bench = _bench(monkeypatch)
    runs = iter([(9.0, 9.0), (9.0, 9.0),  # the warm runs: not counted
                 (1.0, 0.5), (2.0, 1.0), (3.0, 1.5), (4.0, 2.0), (2.0, 1.0), (6.0, 3.0)])
    monkeypatch.setattr(bench, "run_once", lambda argv, env: next(runs))
    t = bench.timed_rounds({"a": ["a"], "b": ["b"]}, 3, {})
    assert t == {"a": {"wall": 2.0, "cpu": 1.0}, "b": {"wall": 4.0, "cpu": 2.0}}
