"""kvlib.core.kept (issue 42 item 6): the exact scalar code of every attention and state formula,
kept so that evaluating one imports no SymPy, is a fresh derivation, and evaluates as the SymPy
Formula does; ``kvlib estimate`` then runs without SymPy."""

import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from kvlib.core import kept
from kvlib.core.exact import KeptFormula
from kvlib.core.formulas import GQA, KINDS, STATES
from kvlib.core.keep import PATH, SERVING, render, targets


def test_the_kept_code_is_a_fresh_derivation():
    assert PATH.read_text() == render(), "stale: run python -m kvlib.core.keep"


@pytest.mark.parametrize("path", list(targets()), ids=lambda p: p.name if p == PATH else
                         str(p.relative_to(PATH.parents[1])))
def test_every_kept_file_is_a_fresh_derivation(path):
    """kvlib.core.kept and the serving layer's kept files (the decode floor, each engine's
    budgets, pools and sessions) are what the SymPy expressions print today."""
    assert path.read_text() == targets()[path](), "stale: run python -m kvlib.core.keep"


def _serving_expressions():
    """(kept module, key, the SymPy expression) of every kept serving expression."""
    import importlib

    out = []
    for relative, names in SERVING.items():
        kept_module = importlib.import_module(
            "kvlib." + relative.removesuffix(".py").replace("/", "."))
        for name in names:
            module = importlib.import_module(name)
            for expr_name in module.KEPT:
                key = f"{name.rsplit('.', 1)[-1]}.{expr_name}"
                out.append((kept_module, key, module.symbolic()[expr_name]))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_kept_serving_code_is_the_sympy_expression(seed):
    """Property: each kept serving expression, evaluated by name without SymPy, equals SymPy's
    own substitution into the expression (exact rationals), at random positive values (whole
    where the symbol is an integer), and in floats the live expression's code; a missing or
    unknown name is one clear error."""
    import sympy as sp

    from kvlib.core.numeric import evaluate_floats

    rng = random.Random(seed)
    for kept_module, key, expr in _serving_expressions():
        # whole numbers where the symbol says integer, else a whole number or a fraction
        values = {s.name: rng.randint(1, 10**12) if s.is_integer or rng.random() < 0.5
                  else Fraction(rng.randint(1, 99), 100)
                  for s in sorted(expr.free_symbols, key=lambda s: s.name)}
        slow = expr.subs({s: sp.Rational(values[s.name]) for s in expr.free_symbols})
        assert slow.is_Rational, (key, slow)
        assert kept_module.evaluate(key, **values) == Fraction(int(slow.p), int(slow.q)), key
        # in floats (an engine's own arithmetic) as the live expression's generated code
        assert kept_module.evaluate_floats(key, **values) == evaluate_floats(expr, **values), key
    kept_module, key, expr = _serving_expressions()[0]
    first = sorted(s.name for s in expr.free_symbols)[0]
    with pytest.raises(ValueError, match=f"{key}: needs {first}; takes no nope"):
        kept_module.evaluate(key, **{s.name: 1 for s in expr.free_symbols
                                     if s.name != first}, nope=1)


def test_every_quantity_is_kept_and_the_names_are_the_tables():
    from kvlib.core.state_tables import STATE_TABLES

    assert kept.STATE_NAMES == tuple(STATE_TABLES) == tuple(STATES)
    assert kept.KIND_NAMES == tuple(KINDS)
    for group in (KINDS, STATES):
        for name, kind in group.items():
            for q in type(kind).QUANTITIES:
                assert (name, q) in kept.FUNCTIONS
                assert isinstance(getattr(kind, q), KeptFormula)


def _sizes(args, rng):
    out = {}
    for a in args:
        if kept.INTEGER[a]:
            out[a] = rng.randint(1, 4096)
        else:
            out[a] = rng.choice([Fraction(1, 2), 1, 2, 4])
    if "N_g" in out and "N_h" in out:
        out["N_h"] = out["N_g"] * rng.randint(1, 16)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_kept_and_sympy_agree_on_random_sizes(seed):
    """Property: for every formula, the kept code and the SymPy Formula (and plain SymPy
    substitution, the slow reference) give the same exact value."""
    rng = random.Random(seed)
    for group in (KINDS, STATES):
        for kind in group.values():
            for q in type(kind).QUANTITIES:
                fast = getattr(kind, q)
                sizes = _sizes(fast.args, rng)
                slow = kind.formula(q)
                assert fast.args == slow.args
                assert fast(**sizes) == slow(**sizes) == slow.subs(**sizes)


def test_errors_and_arrays_are_the_formulas():
    with pytest.raises(ValueError, match="N_g .* must divide N_h"):
        GQA.bytes_per_token(N_L=2, N_h=7, N_g=2, d_QK=4, d_V=4, b=2)
    with pytest.raises(ValueError, match="unknown parameter 'heads'"):
        GQA.bytes_per_token(heads=1)
    with pytest.raises(ValueError, match="needs N_L"):
        GQA.bytes_per_token(N_g=2, d_QK=4, d_V=4, b=2)
    got = GQA.bytes_per_token(N_L=np.array([1, 80]), N_g=8, d_QK=128, d_V=128, b=2)
    assert got.tolist() == [4096, 327_680]  # 80 x 8 x (128 + 128) x 2
    assert str(GQA.bytes_per_token.expr) == "N_L*N_g*b*(d_QK + d_V)"


def test_kvlib_estimate_imports_no_sympy():
    code = ("import sys; from kvlib.cli import main; "
            "rc = main(['estimate', 'llama-3.1-8b', '--json']); "
            "rc2 = main(['estimate', 'nemotron-h-56b', '--context', '8K']); "
            "print(rc, rc2, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip().splitlines()[-1]
    assert out == "0 0 False"


def test_a_kind_built_from_another_table_is_derived_from_it_not_kept():
    """The kept code is the canonical table's: a State or Attention built from any other table
    of the same name (a positive control's altered one) must answer from that table."""
    import dataclasses

    from kvlib.core import state_tables
    from kvlib.core.formulas import STATES, State

    t = state_tables.MAMBA2
    wrong = dataclasses.replace(t, tensors=tuple(
        dataclasses.replace(x, rows=state_tables.d_conv) if x.store == "conv" else x
        for x in t.tensors))  # d_conv rows instead of d_conv - 1
    sizes = dict(N_L=1, d_conv=4, d_inner=8 * 64, N_sh=8, d_sh=64, N_sg=1, d_state=16, b_c=2,
                 b_s=4)
    right = STATES["Mamba2"].bytes_per_sequence(**sizes)
    # conv state: (d_conv - 1) rows of d_inner + 2 N_sg d_state channels, b_c bytes each
    conv = (4 - 1) * (8 * 64 + 2 * 1 * 16) * 2
    assert right == conv + 8 * 64 * 16 * 4
    assert State("Mamba2", wrong).bytes_per_sequence(**sizes) == right + conv // 3
