"""Equation labels never put math inside \\text{} (MathJax: "'_' allowed only in math mode")."""

import re

import pytest

from kvlib.views.show import equation, label_latex


@pytest.mark.parametrize("label, latex", [
    ("GQA cache per sequence", r"\text{GQA cache per sequence}"),
    ("equal FLOPs at N_Q", r"\text{equal FLOPs at } N_Q"),
    ("T^*", "T^*"),
])
def test_words_are_text_and_math_is_math(label, latex):
    assert label_latex(label) == latex


@pytest.mark.parametrize("label", ["equal FLOPs at N_Q", r"\partial / \partial N_{KV}", "T^*",
                                   "cache per GPU (TP <= N_g)", "plain words"])
def test_no_math_token_inside_text(label):
    for inside in re.findall(r"\\text\{([^}]*)\}", label_latex(label)):
        assert not re.search(r"[_^\\]", inside), inside


def test_equation_keeps_the_expression():
    import sympy as sp

    x = sp.Symbol("x")
    assert equation("f at N_Q", x**2).data == r"\text{f at } N_Q = x^{2}"
