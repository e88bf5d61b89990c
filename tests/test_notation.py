"""One symbol, one meaning (issue 34): the notation's table, and the formulas the notebooks, the
formula sheet and the docs write with it."""

import json
import re
from pathlib import Path

import pytest
import sympy as sp

from kvlib.core.notation import ALL_SYMBOLS, MATRIX_SYMBOLS, SERVING_SYMBOLS, by_name
from kvlib.serving.engines.vllm import budget as cf

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + \
    sorted((ROOT / "notebooks" / "engines").glob("[0-9][0-9]_*.ipynb"))
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SOURCES = ("paper", "DeepSeek", "vLLM", "ours", "CUDA", "Vaswani et al.", "RoFormer",
           "Gated DeltaNet")


def test_no_symbol_in_the_table_has_two_meanings():
    names = [s.name for s in ALL_SYMBOLS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    meanings = [s.meaning.casefold() for s in ALL_SYMBOLS]
    assert len(meanings) == len(set(meanings)), sorted(m for m in meanings
                                                        if meanings.count(m) > 1)
    # nor one name printed two ways: LaTeX is what a reader compares
    printed = [sp.latex(s.symbol) for s in ALL_SYMBOLS]
    assert len(printed) == len(set(printed))
    for s in ALL_SYMBOLS:
        assert s.source.startswith(SOURCES), (s.name, s.source)


def test_the_table_holds_what_the_issue_names():
    for name in ("u", "M", "O", "S", "R_W", "W_GPU", "R_KV", "BW", "F_pk", "P", "N_W", "B", "N_KV"):
        by_name(name)
    deepseek = {s.name for s in MATRIX_SYMBOLS if s.source.startswith("DeepSeek")}
    assert deepseek == {"W^{DQ}", "W^{UQ}_h", "W^{QR}_h", "W^{KR}"}
    # one name for the up-projections from the latent; DeepSeek's named beside it
    assert "DeepSeek's W^{UK}" in by_name("W^{LK}_h").source
    assert "DeepSeek's W^{UV}" in by_name("W^{LV}_h").source
    # N_Q: neither blog post has it, and the paper's tables are not checked here
    assert by_name("N_Q").source == "ours"


def test_the_table_holds_issue_40s_symbols_in_new_tuples():
    """Issue 40: indices, scores and weights, the LSE maximum, Gated DeltaNet's scalars, draft
    tokens, the merged RoPE matrix and the rotation at i, each with one meaning; in tuples of
    their own (the notebooks print SYMBOLS and SERVING_SYMBOLS, which keep their entries)."""
    from kvlib.core import notation as n

    new = n.INDEX_SYMBOLS + n.TENSOR_SYMBOLS + n.RECURRENT_SYMBOLS + n.SERVING_EXTRA_SYMBOLS
    assert set(new) <= set(ALL_SYMBOLS)
    assert not set(new) & set(n.SYMBOLS + n.SERVING_SYMBOLS)
    assert [s.name for s in n.SYMBOLS] == ["N_L", "N_h", "N_g", "N_KV", "N_Q", "d_in", "d_QK",
                                           "d_V", "d_L", "d_R", "d_Lq", "B", "b"]
    for name, words in {"h": "query-head index", "g": "key/value-head index",
                        "i": "query token", "j": "key token", "t": "decode step",
                        "Z": "scores before the softmax", "A": "softmax(Z)",
                        "mu": "running maximum", "alpha": "decay gate",
                        "beta": "update strength", "N_spec": "draft tokens",
                        "W^{QK}_h": "merged query-key", "R_i": "position i", "k": "key vector",
                        "S": "one session's bytes", "M": "memory", "m": "merged",
                        "d_c": "DeepSeek V4", "d_L": "latent"}.items():
        assert words in by_name(name).meaning, (name, by_name(name).meaning)
    with pytest.raises(KeyError):
        by_name("R_m")  # the rotation is at i (query) or j (key); m is V4's merge ratio


def test_the_capacity_formulas_use_the_table():
    table = {s.symbol for s in SERVING_SYMBOLS} | {by_name("B").symbol}
    for expr in (cf.KV_BUDGET, cf.SESSIONS, cf.STEP, cf.KV_BUDGET_EXTENSIBLE):
        assert expr.free_symbols <= table, expr.free_symbols - table
    assert cf.SYMBOLS["K"] is by_name("R_KV").symbol  # a session's cache read, not the keys


def _latex(text: str) -> list[str]:
    return [a or b for a, b in re.findall(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", text, re.S)]


def _notebook_math(path: Path) -> list[str]:
    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            found += _latex("".join(cell["source"]))
        for out in cell.get("outputs", []):
            for mime in ("text/latex", "text/markdown"):
                found += _latex("".join(out.get("data", {}).get(mime, "")))
    return found


# Spellings that once meant something the table now writes otherwise. A bare letter is one not
# followed by a sub- or superscript; T after ^, { or , is a transpose (K^T, K^{R\,T}).
RETIRED = {
    r"(?<![\\\w{^_])W(?![\w^_{])": "a window is N_W, a bandwidth BW, the weights W_GPU",
    r"(?<![\\\w{^_,])T(?![\w^_{])": "the context is N_KV",
    r"W\^\{U[KV]\}": "the up-projections are W^{LK}_h, W^{LV}_h",
    r"M_\{?(kv|w)\}?": "the cache read per session is R_KV, the weights read R_W",
    r"E_\{in\}": "the input embedding's parameters are P_emb",
    r"(?<![\w])k\s*/\s*E": "experts per token are E_k",
    r"\\text\{bandwidth\}": "the bandwidth is BW",
}


def _docs_math(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return _latex(re.sub(r"`[^`\n]*`", " ", text))


@pytest.mark.parametrize("path", NOTEBOOKS + DOCS, ids=lambda p: p.name)
def test_formulas_write_each_meaning_with_the_tables_symbol(path):
    math = _notebook_math(path) if path.suffix == ".ipynb" else _docs_math(path)
    bad = [(m, why) for m in math for pattern, why in RETIRED.items() if re.search(pattern, m)]
    assert not bad, bad


@pytest.mark.parametrize("letter, where", [
    # K is the keys; a session's cache read is R_KV. P counts parameters; a peak FLOP/s is F_pk,
    # a peak kept free M_pk. B is the batch; Mamba's input matrix is named in words.
    ("K", ("05_", "06_", "07_", "formula_sheet", "capacity")),
    ("P", ("02_", "03_", "04_", "05_", "07_", "formula_sheet")),
    ("B", ("07_",)),
])
def test_letters_kept_for_one_meaning(letter, where):
    bare = re.compile(rf"(?<![\\\w{{^_]){letter}(?![\w^_{{])")
    for path in [p for p in NOTEBOOKS if p.parent.name == "notebooks"] + DOCS:  # lessons
        if not path.name.startswith(where) and path.stem not in where:
            continue
        math = _notebook_math(path) if path.suffix == ".ipynb" else _docs_math(path)
        assert not [m for m in math if bare.search(m)], (path.name, letter)


def test_one_form_of_the_decode_bound():
    """Notebook 06 and the formula sheet write the bound as capacity_formulas.STEP prints."""
    bound = rf"t_{{step}} \ge {sp.latex(cf.STEP, order='none')}"
    assert bound == r"t_{step} \ge \frac{R_{W} + B R_{KV}}{BW}"
    sheet = (ROOT / "docs" / "formula_sheet.md").read_text(encoding="utf-8")
    nb06 = next(p for p in NOTEBOOKS if p.name.startswith("06_"))
    markdown = "".join("".join(c["source"]) for c in json.loads(nb06.read_text())["cells"]
                       if c["cell_type"] == "markdown")
    assert f"$${bound}$$" in sheet and f"$${bound}$$" in markdown
    assert markdown.count(r"t_{step}") == 1 and r"t_{\text{step}}" not in markdown


def test_the_retired_spellings_are_caught():
    """The scan finds the spellings issue 34 lists (so a pass means something)."""
    caught = {m for m in (r"\max(Q/W, F/P)", r"\min(T, W)", r"W^{UK}", r"B\, M_{kv}",
                          r"(P_a - E_{in})")
              if any(re.search(p, m) for p in RETIRED)}
    assert len(caught) == 5
    assert not any(re.search(p, m) for m in (r"K_h^{T}", r"K^{R\,T}", r"W_{GPU}", r"W^{LK}_h",
                                              r"\min(N_{KV}, N_W)", r"q_h k_{h,n}^T")
                   for p in RETIRED)
