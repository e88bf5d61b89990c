"""Issue 42 item 6: ``kvlib estimate`` loads only what it uses. ``kvlib COMMAND`` imports that
command's module alone (kvlib.cli.MODULES), and kvlib.cli.args reads vLLM's release table only
when ``--vllm`` is parsed, so estimate imports no engine's planner: only vLLM's resolver of
``--kv-dtype auto`` (kvlib.serving.engines.vllm.dtypes), which ``kvlib plan`` uses too.

No command that only evaluates imports SymPy, under any engine: the formulas, the decode floor
and every engine's budgets, pools and sessions are evaluated by their kept code
(kvlib.core.keep), printed from the SymPy expressions, which are built only when something asks
for one (a notebook, the formula sheet, the book's page)."""

import subprocess
import sys

import pytest

from kvlib.cli import MODULES, SUBCOMMANDS, build_parser

PROBE = ("import sys; from kvlib.cli import main; rc = main({argv!r}); "
         "print(rc, sorted(m for m in sys.modules if m.startswith(('kvlib.serving', "
         "'kvlib.cli.plan', 'kvlib.cli.explain'))))")


def _loaded(argv):
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip().splitlines()[-1]
    rc, _, modules = out.partition(" ")
    return int(rc), eval(modules)  # a printed list of names


def test_estimate_loads_no_engine():
    rc, modules = _loaded(["estimate", "llama-3.1-8b", "--json"])
    assert rc == 0 and "kvlib.serving.engines.vllm.dtypes" in modules  # --kv-dtype auto
    assert not [m for m in modules if m.startswith(("kvlib.cli.plan.", "kvlib.cli.explain",
                                                    "kvlib.serving.engines.sglang",
                                                    "kvlib.serving.engines.trtllm"))]
    assert not [m for m in modules if m.startswith("kvlib.serving.engines.vllm.")
                and m != "kvlib.serving.engines.vllm.dtypes"]


SYMPY_PROBE = ("import sys, io, contextlib; from kvlib.cli import main\n"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    rc = main({argv!r})\n"
               "print(rc, sorted(m for m in sys.modules if m == 'sympy' or m.startswith('sympy.')"
               ")[:3])")


def _sympy_loaded(argv) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", SYMPY_PROBE.format(argv=argv)],
                         capture_output=True, text=True, check=True,
                         timeout=120).stdout.strip().splitlines()[-1]
    rc, _, modules = out.partition(" ")
    return int(rc), eval(modules)  # a printed list of names


@pytest.mark.parametrize("argv", [
    ["estimate", "llama-3.1-8b"],
    ["estimate", "nemotron-h-56b", "--context", "8K", "--json"],
    ["plan", "llama-3.1-8b", "--gpu", "H200"],
    ["plan", "deepseek-v3", "--gpu", "H200", "--gpus", "8", "--tp", "8", "--context", "8K",
     "--json"],
    ["plan", "gemma-3-27b", "--gpu", "H100-80GB", "--context", "32K", "--vllm", "0.33"],
    ["plan", "llama-3.1-8b", "--gpu", "H200", "--engine", "sglang"],
    ["plan", "deepseek-v4-flash", "--gpu", "H200", "--gpus", "8", "--tp", "8", "--context",
     "8K", "--engine", "sglang"],
    ["plan", "qwen3-next-80b-a3b", "--gpu", "H200", "--gpus", "2", "--tp", "2", "--context",
     "8K", "--engine", "sglang"],
    ["plan", "llama-3.1-8b", "--gpu", "H200", "--engine", "trtllm"],
    ["plan", "gpt-oss-120b", "--gpu", "H200", "--context", "32K", "--engine", "trtllm"],
    ["plan", "deepseek-v3", "--gpu", "H200", "--gpus", "8", "--tp", "8", "--context", "8K",
     "--engine", "trtllm", "--kv-dtype", "fp8"],
    ["plan", "gemma-3-27b", "--gpu", "H200", "--context", "8K", "--engine", "all", "--json"],
    ["--help"],
    ["plan", "--help"],
], ids=" ".join)
def test_a_command_that_only_evaluates_imports_no_sympy(argv):
    """The numbers still come from the SymPy expressions, through the kept code printed from
    them (tests/test_kept_formulas.py regenerates it); SymPy itself is never imported."""
    rc, sympy = _sympy_loaded(argv)
    assert rc == 0 and sympy == []


def test_the_probe_sees_sympy_where_a_formula_is_shown():
    """Positive control: the same probe reports SymPy once an expression is asked for."""
    code = ("import sys; from kvlib.serving.engines.vllm import budget; budget.KV_BUDGET; "
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert out == "True"


def test_plan_still_loads_what_it_needs():
    rc, modules = _loaded(["plan", "llama-3.1-8b", "--gpu", "H200", "--context", "8K",
                           "--vllm", "0.34"])
    assert rc == 0 and "kvlib.serving.engines.vllm.defaults" in modules


def test_plan_under_vllm_loads_no_other_engine():
    """kvlib.serving.engines imports an engine's folder when that engine is asked for: a vLLM
    plan loads neither SGLang's nor TensorRT-LLM's rules (their SymPy budgets)."""
    rc, modules = _loaded(["plan", "llama-3.1-8b", "--gpu", "H200", "--context", "8K"])
    assert rc == 0 and "kvlib.serving.engines" in modules
    assert not [m for m in modules if m.startswith(("kvlib.serving.engines.sglang",
                                                    "kvlib.serving.engines.trtllm"))]


@pytest.mark.parametrize("engine, loaded, absent", [("sglang", "sglang", "trtllm"),
                                                    ("trtllm", "trtllm", "sglang")])
def test_plan_loads_the_engine_asked_for_alone(engine, loaded, absent):
    rc, modules = _loaded(["plan", "llama-3.1-8b", "--gpu", "H200", "--context", "8K",
                           "--engine", engine])
    assert rc == 0 and f"kvlib.serving.engines.{loaded}" in modules
    assert not [m for m in modules if m.startswith(f"kvlib.serving.engines.{absent}")]


@pytest.mark.parametrize("command", list(MODULES))
def test_one_command_parser_is_the_full_parsers_subcommand(command, capsys):
    """The parser built for one command gives that command the same flags as the full one."""
    def flags(parser):
        sub = next(a for a in parser._actions if a.dest == "command")
        return sorted(o for a in sub.choices[command]._actions for o in a.option_strings)

    assert flags(build_parser(command)) == flags(build_parser())
    assert sorted(MODULES.values()) == sorted(SUBCOMMANDS)
