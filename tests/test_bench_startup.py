"""`make bench` reports issue 42's start-up ratio: a first `kvlib estimate` and `kvlib plan`
against `python -c "import numpy"`, measured in the same run (scripts/bench.py, part 4)."""

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
            "llama-3-70b": 0.4, "estimate llama-3.1-8b": 0.3, "plan llama-3.1-8b": 0.5}
    ran = []

    def fake_run(argv, **_):
        ran.append(" ".join(argv))

    def fake_median(f, _repeat):
        f()
        line = ran[-1]
        return next(v for k, v in sorted(cost.items(), key=lambda kv: -len(kv[0])) if k in line)

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    monkeypatch.setattr(bench, "median_time", fake_median)
    c = bench.bench_cli(quick=True)
    assert c["import_numpy_seconds"] == 0.2
    ratio = c["startup_ratio"]
    assert ratio["estimate llama-3.1-8b"]["ratio"] == 0.3 / 0.2
    assert ratio["plan llama-3.1-8b --gpu H200"]["ratio"] == 0.5 / 0.2
    bench.print_cli({"cli": c})
    out = capsys.readouterr().out
    assert "start-up ratio (floor: python -c 'import numpy'" in out and "x2.50" in out
