"""One symbol, one meaning (issue 40, item 3): the math of every notebook and page, read symbol by
symbol against the notation (``kvlib.core.notation``).

What is read: the LaTeX between ``$...$`` and ``$$...$$`` in the Markdown cells and in the
``text/latex`` / ``text/markdown`` outputs of notebooks/*.ipynb and notebooks/engines/*.ipynb,
in docs/*.md and in README.md (code spans and fenced code left out); and the names the
notation retired (``M_w``, ``R_m``, ``S_h`` ...) in the plain-text outputs.

How a symbol is decided:

1. **Tokens.** Each formula is cut into symbols: a letter or a Greek letter with its
   subscript and superscript (``N_{KV}``, ``W^{LK\\,T}_h``, ``\\alpha_t``, ``q^R_{t,i}``). A
   transpose (``^T``), a prime and a star (``N_{KV}^*``, ``m'``) are decorations, exponents and
   numbers are not symbols, function names (``\\mathrm{softmax}``, ``\\max``) are not symbols,
   nor ``e`` before an exponent or ``O`` before ``(`` (big O). A subscript either belongs to the
   name (``N_h``, ``d_QK``, ``M_pk``: the notation has that name) or holds indices (``Q_h``,
   ``k_{h,n}``, ``K_{g(h)}``): then the symbol is the letter with its superscript and each index
   is a symbol of its own.
2. **(a) Registered.** Every symbol is a notation entry (its canonical spelling is the
   tokeniser's reading of the entry's LaTeX), another paper's spelling that an entry's source
   names (``N_{heads}``, ``d^R_h``, ``d'_c``), or a local symbol of :data:`LOCAL` (each with
   its one meaning and the files it may appear in).
3. **(b) One meaning.** A test of names alone cannot see ``m`` written for a position, or ``S``
   for scores. So the words around each lone symbol are read where they define it: "where $X$
   is ...", "$X$ is the ...", "$X$ = ...", "$X$, the ...", "$X$ (the ...)", "... ($X$)", a
   table row "| $X$ | ... |" and "$X$: ...". The defining words are checked against the
   entry's :func:`kvlib.core.notation.sense`: a definition that names one of the entry's known
   wrong senses (m as a position or a maximum, S as scores, h as a head size, g as a gate, k as
   draft tokens or a dimension, M as a matrix, P as a peak, d_c as DeepSeek-V2's latent ...)
   fails, and so does a "where $X$ is" / "$X$ denotes" definition that names none of the entry's
   keywords.

Positive controls (``test_the_checker_flags_*``) feed the checker the wrong sentences these
files held at commit b1b1d4a (quoted below with the notebook and cell they came from) and
assert each is flagged, so a pass means something.

The notebooks are being rewritten to the notation while this test lands: a notebook that still
fails is marked xfail (strict=False) in :data:`NOTEBOOKS_IN_PROGRESS`; the docs pages must pass.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
import sympy as sp

from kvlib.core.notation import ALL_SYMBOLS, INDEX_SYMBOLS, by_name, sense

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + \
    sorted((ROOT / "notebooks" / "engines").glob("*.ipynb"))
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

# Notebooks a teammate is rewriting to the notation today (issue 40): their failures are
# reported, not fatal. Remove a name once its notebook passes.
NOTEBOOKS_IN_PROGRESS: set[str] = set()

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
         "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau",
         "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda",
         "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega"}
# LaTeX commands whose argument is words, not symbols
TEXT_COMMANDS = ("text", "textbf", "textit", "operatorname", "mathrm", "mathit", "mathbf",
                 "begin", "end", "label")
# multi-letter names written upright without a subscript
WORDS = ("TP", "BW")

# Local symbols: one meaning each, in the files named (a glob on the file name).
LOCAL = {
    "I": ("the identity matrix (R_0 = I)", ("04_*",)),
    # notebook 07's crossing of a hybrid and a pure-attention model, one derivation
    "sigma": ("bytes of a hybrid's constant state per sequence (the crossing)", ("07_*",)),
    "kappa_hyb": ("bytes per token of the hybrid's growing cache (the crossing)", ("07_*",)),
    "kappa_attn": ("bytes per token of the pure-attention model's cache (the crossing)",
                   ("07_*",)),
}
# Words that never share a sentence with the symbol: its old meaning's unmistakable names
NEVER_NEAR = {"d_c": ("DeepSeek-V2", "kv_lora_rank", "Table 1", "V2's latent"),
              "C": ("chunk", "chunked", "prefill")}
# Names the notation retired, looked for in plain-text outputs (and any math)
RETIRED_PLAIN = {"M_w": "R_W", "M_kv": "R_KV", "R_m": "R_i", "R_n": "R_j", "S_h": "A_h",
                 "s_h": "A_h (a row)"}


# ---------------------------------------------------------------------------------------------
# Tokeniser
# ---------------------------------------------------------------------------------------------

def _group(s: str, i: int) -> tuple[str, int]:
    """The braced group starting at s[i] == '{' (contents, index after it), or one item."""
    if i >= len(s):
        return "", i
    if s[i] == "{":
        depth, j = 0, i
        while j < len(s):
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            if depth == 0:
                return s[i + 1:j], j + 1
            j += 1
        return s[i + 1:], len(s)
    if s[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", s[i:])
        return m.group(0), i + len(m.group(0))
    return s[i], i + 1


def _clean(tex: str) -> str:
    # an upright label in a script is part of the name: C^{\mathrm{conv}} is C^{conv}
    tex = re.sub(r"([_^])\s*\{\s*\\(?:mathrm|text|operatorname)\{([A-Za-z]+)\}\s*\}", r"\1{\2}",
                 tex)
    tex = re.sub(r"\\(?:" + "|".join(TEXT_COMMANDS) + r")\s*\{[^{}]*\}",
                 lambda m: _upright(m.group(0)), tex)
    tex = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg|displaystyle)(?![A-Za-z])", " ", tex)
    tex = re.sub(r"\\[,;:!> ]|\\quad|\\qquad|~|&|\\\\", " ", tex)
    return tex


def _upright(command: str) -> str:
    """``\\mathrm{TP}`` is the symbol TP; ``\\mathrm{softmax}``, ``\\text{bytes}`` are words."""
    inner = command[command.index("{") + 1:-1].strip()
    return f" {inner} " if inner in WORDS else " "


def _strip_transpose(sup: str) -> str:
    sup = sup.replace("\\,", " ").strip()
    sup = re.sub(r"(^|\s)T$", "", sup).strip()
    return "" if sup in ("", "*", "\\prime", "\\top", "T", "-1") else sup


def canonical(base: str, sup: str = "", sub: str = "") -> str:
    """One spelling for a name: ``W^{LK}_h``, ``N_KV``, ``alpha``."""
    name = base
    sup, sub = sup.replace(" ", ""), sub.replace(" ", "")
    if sup:
        name += f"^{sup}" if len(sup) == 1 else f"^{{{sup}}}"
    if sub:
        name += f"_{sub}"
    return name


def _raw_tokens(tex: str):
    """Yield (base, sup, sub) for each symbol of ``tex``, before the registry is consulted."""
    s = _clean(tex)
    i = 0
    while i < len(s):
        c = s[i]
        if s.startswith(WORDS, i) and not (i and s[i - 1].isalpha()):
            word = next(w for w in WORDS if s.startswith(w, i))
            if i + len(word) >= len(s) or not s[i + len(word)].isalpha():
                yield word, "", ""
                i += len(word)
                continue
        if c in "^_":  # a script after a bracket: (R_i q)^T, (...)^2
            group, i = _group(s, i + 1)
            if group.strip() not in ("T", "\\top", "*", "-1", "\\prime"):
                yield from _raw_tokens(group)
            continue
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+)", s[i:])
            if not m:
                i += 2
                continue
            name, i = m.group(1), i + len(m.group(0))
            if name not in GREEK:  # \frac, \max, \sum, \lfloor ...: its sub/superscripts are
                continue           # read as formulas of their own below
            base = name
        elif c.isalpha():
            base, i = c, i + 1
        else:
            i += 1
            continue
        sup = sub = ""
        while i < len(s) and s[i] in "_^'":
            if s[i] == "'":  # a prime is part of the name: d'_c is not d_c
                base += "'"
                i += 1
                continue
            kind = s[i]
            j = i + 1
            while j < len(s) and s[j] == " ":
                j += 1
            group, i = _group(s, j)
            if kind == "_":
                sub = group
            else:
                sup = group
        if base == "e" and sup:          # e^{...}: the exponential
            yield from _raw_tokens(sup)
            continue
        if base == "O" and s[i:i + 1] == "(":  # big O
            continue
        yield base, sup, sub


def _is_expression(sup: str) -> bool:
    """An exponent (N^2, 10^{-2i/d}) rather than a label (W^{LK}, K^R, C^{conv})."""
    return bool(re.search(r"[\d+\-/()]", sup)) or sup.startswith("\\frac")


@cache
def _registry() -> dict[str, object]:
    """Canonical spelling -> entry; entries whose subscript is an index slot (``W^Q_h``) are
    also found by their letter and superscript (``W^K_g`` is ``W^K`` at head group g)."""
    index_names = {s.name for s in INDEX_SYMBOLS}
    found = {}
    for entry in ALL_SYMBOLS:
        for base, sup, sub in _raw_tokens(sp.latex(entry.symbol)):
            found[canonical(base, _strip_transpose(sup), sub)] = entry
            if sub in index_names and entry.unit == "matrix":
                found.setdefault(canonical(base, _strip_transpose(sup)), entry)
    return found


@cache
def _aliases() -> dict[str, object]:
    """Other papers' spellings that an entry's source names: paper (N_heads), DeepSeek
    (d_h^R), DeepSeek (d'_c) ... Each is the same meaning as its entry."""
    found = {}
    for entry in ALL_SYMBOLS:
        for alias in re.findall(r"(?<![\w\\])([A-Za-z]'?_[A-Za-z]+(?:\^[A-Za-z])?|[A-Za-z]\^"
                                r"[A-Za-z]_[A-Za-z]+|[A-Za-z]'|(?<=\()[A-Za-z](?=[),]))(?![\w{])",
                                entry.source):
            alias = re.sub(r"([_^])([A-Za-z]+)", r"\1{\2}", alias)
            for base, sup, sub in _raw_tokens(alias):
                key = canonical(base, sup, sub)
                if key not in _registry():
                    found[key] = entry
                    # d_h^R and d^R_h are one spelling
    return found


def symbols(tex: str) -> list[tuple[str, object]]:
    """The symbols of one formula: (canonical name, entry, or None where unregistered)."""
    out = []
    reg, alias = _registry(), _aliases()
    for base, sup, sub in _raw_tokens(tex):
        if sup and _is_expression(sup):      # N^2: the exponent is a formula of its own
            out += symbols(sup)
            sup = ""
        sup = _strip_transpose(sup)
        whole = canonical(base, sup, sub)
        if whole in reg or whole in alias:
            out.append((whole, reg.get(whole) or alias.get(whole)))
            continue
        if re.fullmatch(r"[A-Za-z]{2,}", sub.strip()):  # a word, not indices: c_{full}
            out.append((whole, None))
            continue
        if sub:  # indices: k_{h,n}, K_{g(h)}, R_{j-i}
            head = canonical(base, sup)
            out.append((head, reg.get(head) or alias.get(head)))
            out += symbols(sub)
        else:
            out.append((whole, None))
        if sup and not (whole in reg or canonical(base, sup) in reg):
            pass
    return out


# ---------------------------------------------------------------------------------------------
# Reading the files
# ---------------------------------------------------------------------------------------------

MATH = re.compile(r"\$\$(.+?)\$\$|\$((?:[^$\n]|\n(?!\n))+?)\$", re.S)  # inline math may wrap


def _prose_of_doc(path: Path, text: str | None = None) -> list[str]:
    text = path.read_text(encoding="utf-8") if text is None else text
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return [re.sub(r"`[^`\n]*`", "CODE", text)]


def _prose_of_notebook(path: Path, text: str | None = None) -> tuple[list[str], list[str]]:
    """(Markdown texts with math: cells and rich outputs; plain-text outputs)."""
    md, plain = [], []
    text = path.read_text(encoding="utf-8") if text is None else text
    for cell in json.loads(text)["cells"]:
        if cell["cell_type"] == "markdown":
            md.append(re.sub(r"`[^`\n]*`", "CODE", "".join(cell["source"])))
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            for mime in ("text/latex", "text/markdown"):
                if mime in data:
                    md.append("".join(data[mime]))
            if "text/plain" in data and not ({"text/latex", "text/markdown", "text/html"}
                                             & set(data)):
                plain.append("".join(data["text/plain"]))
            if out.get("output_type") == "stream":
                plain.append("".join(out.get("text", "")))
    return md, plain


# Where the words around a lone symbol define it. Each pattern sees the text with the symbol's
# formula replaced by SYM; its group is the defining words.
_WORDS = r"([^.;:|\n]{3,120})"
STRONG = [re.compile(r"\bwhere\s+SYM\s+(?:is|are|stands for|denotes|counts|=)\s+" + _WORDS,
                     re.I),
          re.compile(r"\bSYM\s+(?:denotes|stands for|counts|is the number of|is the size of)\s+"
                     + _WORDS, re.I)]
WEAK = [re.compile(r"\bSYM\s+(?:is|are)\s+(?:the|a|an|its|one)\s+" + _WORDS, re.I),
        re.compile(r"\bSYM\s*=\s*([A-Za-z][^.;:|\n]{2,120})"),
        re.compile(r"\bSYM,?\s+(?:the|a|an|its)\s+" + _WORDS, re.I),
        re.compile(r"\bSYM\s+\((?:the\s+)?([^)]{3,60})\)"),
        re.compile(r"\bSYM\s*:\s+" + _WORDS),
        re.compile(r"\|\s*SYM\s*\|\s*([^|\n]{3,120})\|"),
        re.compile(r"(?:^|[\s(])((?:[A-Za-z'-]+\s+){1,6})\(SYM\)"),
        re.compile(r"((?:[A-Za-z'-]+\s+){1,5})SYM\b(?!\s*[=(:])")]


def _rhs_words(tex: str) -> str:
    """The words of a formula's right-hand side: its function names and text (``\\max``,
    ``\\mathrm{lse}``, ``\\text{peak}``)."""
    words = re.findall(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}|\\([A-Za-z]+)", tex)
    return " ".join(a or b for a, b in words if (a or b) not in ("left", "right", "frac"))


def definitions(text: str):
    """(name, entry, defining words, strong) for each lone symbol the text defines."""
    found = []
    for m in MATH.finditer(text):
        tex = m.group(1) or m.group(2)
        lhs, eq, rhs = tex.partition("=")
        lhs_syms = symbols(re.sub(r"\(.*\)\s*$", "", lhs))  # M(\Delta) is M
        if eq and len(lhs_syms) == 1 and _rhs_words(rhs):   # $m = \max_r ...$
            found.append((*lhs_syms[0], _rhs_words(rhs), False))
        syms = symbols(re.sub(r"\(.*\)\s*$", "", tex))
        if len(syms) != 1:
            continue
        name, entry = syms[0]
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        line = text[line_start:m.start()] + "SYM" + text[m.end():line_end]
        line = MATH.sub(" MATHX ", line)  # other formulas on the line are not words
        for strong, patterns in ((True, STRONG), (False, WEAK)):
            for pattern in patterns:
                for d in pattern.finditer(line):
                    words = d.group(1).strip()
                    if pattern is WEAK[-1]:  # words before the symbol: after any formula
                        words = words.rsplit("MATHX", 1)[-1].strip()
                    elif "MATHX" in words:   # a definition is words, not another formula
                        continue
                    if words and "SYM" not in words:
                        found.append((name, entry, words, strong))
    return found


def _matches(terms, words: str) -> list[str]:
    return [t for t in terms if re.search(rf"(?<![\w-]){t}", words, re.I)]


def check_text(text: str, where: str = "") -> list[str]:
    """Every problem of one Markdown text: unregistered symbols, and definitions that give a
    registered symbol a meaning other than its entry's."""
    problems = []
    for m in MATH.finditer(text):
        tex = m.group(1) or m.group(2)
        for name, entry in symbols(tex):
            if entry is None and not _local(name, where):
                problems.append(f"{where}: ${tex.strip()[:80]}$: {name} is not in the notation")
            if name in RETIRED_PLAIN:
                problems.append(f"{where}: {name} is retired, write {RETIRED_PLAIN[name]}")
        # an indexed entry's letter defined anew by an equation: R_i is a rotation, so
        # "R = R_W + B R_KV" gives R a second meaning the words around it need not say
        lhs = re.match(r"\s*([A-Za-z])\s*=(?!=)", tex)
        if lhs:
            entry = _registry().get(lhs.group(1))
            if entry is not None and entry.name != lhs.group(1):
                problems.append(f"{where}: ${tex.strip()[:80]}$: {lhs.group(1)} defined by an "
                                f"equation, but it is {entry.name}'s letter ({entry.meaning})")
        # a dimension is a size: k x n, h x d write a vector or an index as a count
        for side in re.findall(r"([A-Za-z](?:_\{?\w+\}?)?)\s*\\times|"
                               r"\\times\s*([A-Za-z](?:_\{?\w+\}?)?)(?![\w{^_])", tex):
            for name, entry in symbols(side[0] or side[1]):
                if entry is not None and entry.unit in ("vector", "index"):
                    problems.append(f"{where}: ${tex.strip()[:80]}$: {name} as a dimension "
                                    f"({entry.name} is {entry.meaning})")
    for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):   # words never near a symbol
        for m in MATH.finditer(sentence):
            for name, entry in symbols(m.group(1) or m.group(2)):
                near = _matches(NEVER_NEAR.get(getattr(entry, "name", ""), ()),
                                MATH.sub(" ", sentence))
                if near:
                    problems.append(f"{where}: ${name}$ in a sentence about '{near[0]}' "
                                    f"({entry.name} is {entry.meaning})")
    for name, entry, words, strong in definitions(text):
        if entry is None:
            continue
        right, wrong = sense(entry.name)
        bad = _matches(wrong, words)
        if bad:
            problems.append(f"{where}: ${name}$ defined as '{words}' ({bad[0]}: {entry.name} "
                            f"is {entry.meaning})")
        elif strong and not _matches(right, words):
            problems.append(f"{where}: ${name}$ defined as '{words}', none of "
                            f"{entry.name}'s words {right}")
    return problems


def check_plain(text: str, where: str = "") -> list[str]:
    return [f"{where}: {m.group(0)} printed, write {RETIRED_PLAIN[m.group(0)]}"
            for m in re.finditer(r"(?<![\w.])(" + "|".join(RETIRED_PLAIN) + r")(?![\w])", text)]


# Docs write much of their notation in plain text (``min(N_KV, N_W)``, ``R_W = ...``): a name
# with a subscript anywhere, or a lone letter beside an operator, is read as a symbol too.
_PLAIN = re.compile(r"(?<![\w/.\\'$-])([A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?(?:\^\{?[A-Za-z]+\}?)?)"
                    r"(?![\w/'$-])")
_OPERATOR = re.compile(r"[=<>+*/]|(?<![\w])x(?![\w])|\bmin\(|\bmax\(|\bceil\(|\bfloor\(|[(,]\s*$")


def check_prose(text: str, where: str = "") -> list[str]:
    """The plain-text notation of a page (outside code, math and links): each name with a
    subscript, and each lone letter written as a formula's operand (``min(T, W)``, ``P = ...``),
    must be registered or local; and a name defined in words ("X = words", "X the words") is
    checked against its entry's sense, as in the math."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " CODE ", text)
    text = MATH.sub(" MATHX ", text)
    text = re.sub(r"\]\([^)]*\)|<[^>\n]*>|https?://\S+", " ", text)
    text = re.sub(r'"[^"]{0,300}"', " QUOTE ", text)  # a quotation keeps its source's letters
    problems, seen = [], []
    for m in _PLAIN.finditer(text):
        token = re.sub(r"([_^])([A-Za-z0-9]+)", r"\1{\2}", m.group(1))  # N_KV is N_{KV}
        before, after = text[max(0, m.start() - 6):m.start()], text[m.end():m.end() + 6]
        lone = "_" not in token and "^" not in token
        operand_after = re.match(r"\s*(?:[=<>+/)]|\*(?![\w*])|x\s|,\s*[A-Za-z]\w*\))", after)
        operand_before = _OPERATOR.search(before.rstrip()[-2:] if before.strip() else "")
        if lone and not (operand_after or operand_before and token.isupper()
                         or token.isupper() and token not in "AI"):  # a capital alone: a symbol
            continue  # a word, an article, a unit: not a formula's operand
        if re.match(r"\.\w", after):  # e.g., i.e.
            continue
        if lone and re.search(r"\d\s*$", before) and token in "sBx":  # 3.2 s, 70 B, 8 x
            continue
        if re.fullmatch(r"[a-z]_\{[a-z]{3,}\}", token) and not symbols(token)[0][1]:
            continue  # a config key (n_groups) written without backticks, not a symbol
        for name, entry in symbols(token):
            if entry is not None:
                seen.append((m.start(), name, entry))
            if entry is None and not _local(name, where):
                problems.append(f"{where}: '{text[max(0, m.start() - 30):m.end() + 30]}': "
                                f"{name} is not in the notation".replace("\n", " "))
        line_start = text.rfind("\n", 0, m.start()) + 1
        rest = text[m.end():text.find("\n", m.end()) if "\n" in text[m.end():] else None]
        d = re.match(r"\s*(?:=|is|,)?\s*(?:the\s+)?([A-Za-z][^.;:|()\n]{2,80})", rest)
        syms = symbols(token)
        if d and len(syms) == 1 and syms[0][1] is not None and (
                re.match(r"\s*=\s*[A-Za-z]", rest) or re.match(r"\s+the\s", rest)):
            name, entry = syms[0]
            bad = _matches(sense(entry.name)[1], d.group(1))
            if bad:
                problems.append(f"{where}: {name} defined as '{d.group(1).strip()}' ({bad[0]}: "
                                f"{entry.name} is {entry.meaning})")
        del line_start
    for at, name, entry in seen:  # words never near a symbol, in its sentence or table cell
        start = max(text.rfind(". ", 0, at), text.rfind("\n\n", 0, at), text.rfind("|", 0, at))
        ends = [e for e in (text.find(". ", at), text.find("\n\n", at), text.find("|", at))
                if e >= 0]
        sentence = text[start + 1:min(ends) if ends else len(text)]
        near = _matches(NEVER_NEAR.get(entry.name, ()), sentence)
        if near:
            problems.append(f"{where}: {name} in a sentence about '{near[0]}' "
                            f"({entry.name} is {entry.meaning})")
    return problems


def _local(name: str, where: str) -> bool:
    if name not in LOCAL:
        return False
    file = where.split(":")[0].rsplit("/", 1)[-1]
    return any(Path(file).match(g) for g in LOCAL[name][1])


def problems_of(path: Path, content: str | None = None) -> list[str]:
    """Every problem of one notebook or page (``content``: its text at another commit)."""
    where = str(path.relative_to(ROOT))
    if path.suffix == ".ipynb":
        md, plain = _prose_of_notebook(path, content)
        found = [p for text in md for p in check_text(text, where)]
        return found + [p for text in plain for p in check_plain(text, where)]
    text = path.read_text(encoding="utf-8") if content is None else content
    return [p for t in _prose_of_doc(path, text) for p in check_text(t, where)] + \
        check_prose(text, where)


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------

def test_every_entry_has_keywords_and_the_local_symbols_are_not_entries():
    for entry in ALL_SYMBOLS:
        right, _ = sense(entry.name)
        assert right, entry.name
    assert not set(LOCAL) & set(_registry())
    assert not set(RETIRED_PLAIN) & {s.name for s in ALL_SYMBOLS}


def test_the_tokeniser_reads_names_indices_and_decorations():
    def names(tex):
        return [n for n, _ in symbols(tex)]
    assert names(r"N_{KV} N_{L} b \left(d_{QK} + d_{V}\right)") == ["N_KV", "N_L", "b", "d_QK",
                                                                   "d_V"]
    assert names(r"q_h k_{h,n}^T") == ["q", "h", "k", "h", "n"]
    assert names(r"W^Q_h W^{LK\,T}_h") == ["W^Q_h", "W^{LK}_h"]
    assert names(r"K_{g(h)}^{T}") == ["K", "g", "h"]
    assert names(r"\alpha_t H_h") == ["alpha", "t", "H", "h"]
    assert names(r"O(N_{KV}^2 d_{QK})") == ["N_KV", "d_QK"]
    assert names(r"(R_i q)^T (R_j k)^{2}") == ["R_i", "q", "R", "j", "k"]  # R_j: R at j
    assert names(r"e^{\mathrm{lse}_r - \mu}") == ["r", "mu"]
    assert names(r"\lfloor N_{pre}/N_{blk} \rfloor") == ["N_pre", "N_blk"]
    assert names(r"N_g/\mathrm{TP}") == ["N_g", "TP"]
    assert names(r"t_{step} \ge \frac{R_{W} + B R_{KV}}{BW}") == ["t_step", "R_W", "B", "R_KV",
                                                                 "BW"]
    assert names(r"\theta_p = 10000^{-2p/d_{QK}}") == ["theta", "p", "p", "d_QK"]
    assert names(r"N_{KV}^* \; m' \; d'_c") == ["N_KV", "m'", "d'_c"]
    assert names(r"c_{full} + r\,c_{swa}") == ["c_full", "r", "c_swa"]
    assert dict(symbols("m' d'_c"))["d'_c"] is by_name("d_Lq")
    # registered, aliased, unregistered
    reg = dict(symbols(r"N_{heads} d^R_h d'_c W^{QK}_h(\Delta) R_i R_{j} d"))
    assert reg["N_heads"] is by_name("N_h") and reg["W^{QK}_h"] is by_name("W^{QK}_h")
    assert reg["R_i"] is by_name("R_i") and reg["Delta"] is by_name("Delta")
    assert reg["d"] is None


# --- positive controls: the wrong sentences of commit b1b1d4a --------------------------------

WRONG_AT_B1B1D4A = {
    # notebook 04, cell 2: m is a position (and i a pair of dimensions, d a head size)
    "m as a position": "Rotary position embedding cuts a $d$-wide query or key into $d/2$ pairs "
                       "and turns pair $i$ by the angle $m\\,\\theta_i$ at position $m$, with "
                       "$\\theta_i = 10000^{-2i/d}$. As a matrix, $R_m$ is block-diagonal.",
    # notebook 06, cell 31: m is the LSE maximum
    "m as a maximum": "The partial outputs are merged exactly by their LSEs: with "
                      "$m = \\max_r \\mathrm{lse}_r$, $o = \\sum_r e^{\\mathrm{lse}_r - m} o_r / "
                      "\\sum_r e^{\\mathrm{lse}_r - m}$ (CODE).",
    # notebook 03, cell 12: s the attention weights
    "s as weights": "The same holds on the output side: head $h$ adds "
                    "$s\\,V_h W^O_h = (s\\,L)\\,W^{LV}_h W^O_h$.",
    # notebook 08, cell 3 (kvlib's compressor table): S as scores
    "S as scores": "| $S^{score}$ | $1$ | $N_{KV} \\times 4 d_{c}$ | cache | gate scores, fp32 |",
    # notebook 06, cell 44: h a head size
    "h as head size": "Their overheads in bits per element, by hand ($h$ the head size): "
                      "$h/2 + h/16$ bytes per head and token.",
    # notebook 07, cell 2: g the decay gate
    "g as a gate": "one $d_{lk} \\times d_{lv}$ matrix $H_h$ updated as "
                   "$H_h \\leftarrow g\\,H_h + k_h^T v_h$, where $g$ is the decay gate.",
    # notebook 07, cell 34: k draft tokens
    "k as draft tokens": "each convolution state keeps $d_{conv} - 1 + k$ rows instead of "
                         "$d_{conv} - 1$, where $k$ is the number of draft tokens.",
    # notebook 03, cell 29: k x n a matrix's dimensions
    "k x n": "the weight products' $k \\times n$ are the weights it reads.",
    # notebook 04, cells 22-23: the merged matrix M(Delta)
    "M as a matrix": "Write $\\Delta = n - m$: the merged matrix $M(\\Delta)$ depends on it, "
                     "$\\left.\\frac{\\partial M_{00}}{\\partial \\Delta}\\right|_{\\Delta = 0}$.",
    # notebook 03, cell 37: d_c the DeepSeek-V2 latent
    "d_c as V2's latent": "The DeepSeek-V2 paper and its Table 1, which counts MLA's cache as "
                          "$(d_c + d^R_h)\\,l$ elements per token, about $4.5\\,d_h l$, \"equal "
                          "to GQA with only 2.25 groups\": with $d_c = 512$, $d^R_h = 64$, "
                          "$d_h = 128$ and $l = 60$ layers that is the 67.5 KiB of notebook 04.",
    # notebook 05, cell 11: C a chunk, then the context
    "C as a chunk": "chunked layers keep $\\min(N_{KV}, C)$ tokens, $C$ the chunk.",
    # notebook 01, cells 11-12: N and d in O(N^2 d)
    "N and d": "so the whole sequence costs $O(N^2 d)$.",
    # docs/capacity.md at b1b1d4a, in symbols: P the peak
    "P as a peak": "$O_R$ = non-torch + graph pool, $P$ = activation peak + graph pool.",
    # notebook 07, cells 21-23: kappa_h's h labels the hybrid, not a head
    "h as a label": "a state of $\\sigma$ bytes plus $\\kappa_h$ bytes per token",
    # notebook 06, cell 37 / notebook 05, cell 32: W a window, T the context
    "W as window": "a sliding window keeps $\\min(T, W)$ tokens",
}


# what each control must be flagged for (the symbol and the kind of problem)
FLAGGED_FOR = {"m as a position": "$m$ defined as", "m as a maximum": "$m$ defined as",
               "s as weights": "s is not in the notation", "S as scores": "S^{score} is not",
               "h as head size": "$h$ defined as", "g as a gate": "$g$ defined as",
               "k as draft tokens": "$k$ defined as", "k x n": "k as a dimension",
               "M as a matrix": "$M$ defined as", "d_c as V2's latent": "$d_c$ in a sentence",
               "C as a chunk": "$C$ in a sentence about 'chunk'",
               "N and d": "N is not in the notation",
               "P as a peak": "$P$ defined as", "h as a label": "kappa is not in the notation",
               "W as window": "W is not in the notation"}


@pytest.mark.parametrize("what", WRONG_AT_B1B1D4A)
def test_the_checker_flags_the_wrong_sentences_of_b1b1d4a(what):
    found = check_text(WRONG_AT_B1B1D4A[what], "control.md")
    assert any(FLAGGED_FOR[what] in p for p in found), (what, found)


def test_the_checker_flags_an_indexed_letter_defined_by_an_equation():
    # the audit's blind spot (issue 40): R is R_i's letter (a rotation), not a byte count
    assert any("defined by an equation" in p
               for p in check_text("Per step it reads $R = R_W + B R_{KV}$ bytes.", "x.md"))
    assert not check_text("Per step it reads $D = R_W + B R_{KV}$ bytes.", "x.md")


def test_the_checker_flags_wrong_meanings_not_only_unknown_names():
    """Registered symbols given another meaning (part b), each caught by its words."""
    for text in ("where $m$ is the position of the query",
                 "$m$, the running maximum of the LSEs",
                 "$S$ (the score matrix) is softmaxed",
                 "where $h$ is the head size",
                 "$g$ = the decay gate of Gated DeltaNet",
                 "where $k$ is the number of draft tokens",
                 "$M$ is the merged matrix",
                 "the memory peak ($P$)",
                 "where $d_c$ is DeepSeek-V2's latent width (kv_lora_rank)",
                 "| $N_W$ | the context length |"):
        assert check_text(text, "control.md"), text
    # and their right meanings pass
    for text in ("where $m$ is the number of tokens merged into one compressed entry",
                 "$\\mu$, the running maximum of the LSEs",
                 "$Z$ (the scores before the softmax)",
                 "where $h$ is the query-head index",
                 "$\\alpha_t$, the decay gate at step $t$",
                 "where $N_{spec}$ is the number of draft tokens",
                 "$M_{pk}$ = the transient peak vLLM keeps free",
                 "where $d_L$ is the latent width (DeepSeek-V2's paper calls it d_c)",
                 "$R_i$ is RoPE's rotation at position $i$"):
        assert not check_text(text, "control.md"), (text, check_text(text, "control.md"))


# The files as they were at b1b1d4a, before issue 40, and a problem each must show
AT_B1B1D4A = {
    "notebooks/04_rope_decoupling.ipynb": "$m$ defined as",            # m a position
    "notebooks/06_capacity_planning.ipynb": "M_w printed",              # and m = max_r lse_r
    "notebooks/03_latent_attention_mla.ipynb": "$d_c$ in a sentence",   # d_c as V2's latent
    "notebooks/07_hybrid_models.ipynb": "kappa is not",                 # kappa_h's h a label
    "notebooks/08_compressed_shared_selected.ipynb": "S^{score} is not",  # S for scores
    "docs/capacity.md": "P defined as",                                 # P the peak
    "docs/crosscheck.md": "T is not in the notation",                   # T the context
}


def test_the_checker_flags_the_files_of_b1b1d4a():
    """Whole files at commit b1b1d4a (git show), each flagged for its known wrong meaning."""
    import subprocess

    for name, expected in AT_B1B1D4A.items():
        shown = subprocess.run(["git", "show", f"b1b1d4a:{name}"], cwd=ROOT, capture_output=True,
                               text=True)
        if shown.returncode:
            pytest.skip("commit b1b1d4a is not in this clone's history")
        found = problems_of(ROOT / name, shown.stdout)
        assert any(expected in p for p in found), (name, found[:5])


def test_the_plain_text_outputs_are_read():
    """Notebook 06, cell 66 at b1b1d4a printed M_w and M_kv for R_W and R_KV."""
    assert check_plain("Llama 3.1 70B, TP=4: M_w = 34.75 GB (of 35.28 GB stored), "
                       "M_kv = 0.67 GB, 156 fit")
    assert not check_plain("R_W = 34.75 GB, R_KV = 0.67 GB; gpu_memory_utilization M_pk")


def test_the_prose_scan_flags_b1b1d4a_docs():
    """docs/capacity.md, docs/cli.md and docs/crosscheck.md at b1b1d4a wrote their notation in
    plain text: P for the peak, T for the context, W for a window, C for a chunk."""
    for text in ("memory (0.5 GiB): O_R = non-torch + graph pool, P = activation peak + graph "
                 "pool, warmup's own peak and T taken as no larger.",
                 "- *Paging*: ceil(min(T, window) / block_size) blocks per sequence",
                 "| context | int | tokens per sequence T |",
                 "visible: min(T, W-1) x E (tiny: 7 x 64 = 448)",
                 "tokens kept (min(N_KV, N_W) sliding, min(N_KV, C) chunked)",
                 "Llama 3.1 70B, TP=4: M_w = 34.75 GB, M_kv = 0.67 GB"):
        assert check_prose(text, "control.md"), text
    for text in ("O_R = non-torch + graph pool, M_pk = activation peak + graph pool",
                 "ceil(min(N_KV, N_W) / N_blk) blocks, a step of 3.2 s, a 70 B model, 8 x H200",
                 "t_step >= (R_W + B R_KV) / BW, e.g. at B = 1 (a batch of one)"):
        assert not check_prose(text, "control.md"), (text, check_prose(text, "control.md"))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_write_one_symbol_one_meaning(path):
    assert not problems_of(path), "\n".join(problems_of(path))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks")
                         .as_posix())
def test_notebooks_write_one_symbol_one_meaning(path, request):
    if path.name in NOTEBOOKS_IN_PROGRESS:
        request.applymarker(pytest.mark.xfail(reason="being rewritten to the notation (issue 40)",
                                              strict=False))
    assert not problems_of(path), "\n".join(problems_of(path))


if __name__ == "__main__":  # python tests/test_symbols.py [FILE ...]: what the test flags, per file
    import sys

    for arg in sys.argv[1:] or [str(p) for p in NOTEBOOKS + DOCS]:
        found = problems_of(Path(arg).resolve())
        print(f"{arg}: {len(found)} problem(s)")
        for problem in found:
            print("   ", problem.split(": ", 1)[1])
