"""Check a reader's answer to an exercise: right, or wrong with a hint (all notebooks).

``check("01.1", 524288)`` compares with the answer computed by kvlib's own formulas
(never a number typed here) and, when it is wrong, names the usual slip: a unit
mix-up (KiB vs KB, GiB vs GB), a factor 2 (K and V, or bytes per bf16 element),
or the exercise's own traps (an MHA count where the model has fewer KV heads, ...).
Answers are numbers: bytes, tokens, heads or sequences, as the exercise asks; a
string with a unit ("2 GiB", "512 KiB", "131,072") is converted exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from kvlib.core.formulas import GQA, MHA, MLA, MLA_ROPE, STATES
from kvlib.core.units import UNITS
from kvlib.models.catalog import load_model

__all__ = ["Answer", "ANSWERS", "check", "verdict"]


@dataclass(frozen=True)
class Answer:
    """One exercise's answer: what it counts, and how kvlib computes it (and its slips)."""

    unit: str  # "bytes", "tokens", "heads", "sequences"
    value: Callable[[], int]
    slips: Callable[[], dict[int, str]] = dict  # a wrong answer -> the hint that explains it


def _llama2_7b_token() -> int:
    return MHA.bytes_per_token(N_L=32, N_h=32, d_QK=128, d_V=128, b=2)


ANSWERS: dict[str, Answer] = {
    "01.1": Answer("bytes", _llama2_7b_token, lambda: {
        _llama2_7b_token() // 2: "counted K or V only: each token caches both, a factor 2",
        _llama2_7b_token() // 2 // 32: "counted one layer's K or V only"}),
    "01.2": Answer("tokens", lambda: 80 * 10**9 // MHA.bytes_per_token(
        N_L=80, N_h=64, d_QK=128, d_V=128, b=2), lambda: {
        80 * 2**30 // MHA.bytes_per_token(N_L=80, N_h=64, d_QK=128, d_V=128, b=2):
            "80 GB is decimal: 80 x 10^9 bytes, not 80 GiB"}),
    "02.1": Answer("bytes", lambda: GQA.bytes_per_token(N_L=32, N_h=32, N_g=8, d_QK=128,
                                                        d_V=128, b=2), lambda: {
        MHA.bytes_per_token(N_L=32, N_h=32, d_QK=128, d_V=128, b=2):
            "that is MHA: Mistral 7B has 8 KV heads, not 32"}),
    "03.1": Answer("bytes", lambda: MLA.bytes_per_token(N_L=61, d_L=512, b=2), lambda: {
        MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2):
            "the exercise asks for the latent alone, as blog post A counts it"}),
    "04.1": Answer("bytes", lambda: MLA_ROPE.bytes_per_token(N_L=61, d_L=512, d_R=64, b=2),
                   lambda: {MLA.bytes_per_token(N_L=61, d_L=512, b=2):
                            "the decoupled RoPE key (qk_rope_head_dim) is cached too"}),
    "04.3": Answer("bytes", lambda: MLA_ROPE.bytes_per_token(N_L=60, d_L=512, d_R=64, b=1)),
    "05.1": Answer("bytes", lambda: load_model("gemma-3-27b").kv_bytes_per_sequence(8192, 2),
                   lambda: {GQA.bytes_per_sequence(N_L=62, N_h=32, N_g=16, d_QK=128, d_V=128,
                                                   b=2, N_KV=8192):
                            "52 of Gemma 3's 62 layers keep only their 1,024-token window"}),
    "07.2": Answer("bytes", lambda: STATES["Gated DeltaNet"].bytes_per_sequence(
        N_L=36, b_c=2, b_s=4, d_conv=4, N_lk=16, d_lk=128, N_lv=32, d_lv=128), lambda: {
        STATES["Gated DeltaNet"].bytes_per_sequence(
            N_L=36, b_c=2, b_s=2, d_conv=4, N_lk=16, d_lk=128, N_lv=32, d_lv=128):
            "that is the bf16 state: the recurrent state is float32 (4 bytes) here",
        STATES["Gated DeltaNet"].bytes_per_sequence(
            N_L=36, b_c=4, b_s=4, d_conv=4, N_lk=16, d_lk=128, N_lv=32, d_lv=128):
            "the flag changes the recurrent state only: the convolution state stays bf16"}),
}

_UNIT = re.compile(r"^\s*([0-9][0-9,_]*(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?\s*$")


def _as_number(answer) -> Fraction:
    if isinstance(answer, bool):
        raise ValueError(f"an answer is a number, got {answer!r}")
    if isinstance(answer, int | Fraction):
        return Fraction(answer)
    if isinstance(answer, float):
        return Fraction(repr(answer))
    m = _UNIT.match(str(answer))
    if not m:
        raise ValueError(f"an answer is a number, optionally with a unit such as 'GiB', "
                         f"got {answer!r}")
    return Fraction(m.group(1).replace(",", "").replace("_", "")) * UNITS[m.group(2) or "B"]


def verdict(exercise: str, answer) -> tuple[bool, str]:
    """(right, message) for ``answer`` to ``exercise`` (e.g. "01.1")."""
    if exercise not in ANSWERS:
        raise ValueError(f"no answer check for exercise {exercise!r}; checked exercises are "
                         f"{', '.join(ANSWERS)}")
    spec = ANSWERS[exercise]
    if answer is None or answer is Ellipsis:
        return False, f"{exercise}: no answer yet (set answer = ... in {spec.unit})"
    got, want = _as_number(answer), Fraction(spec.value())
    if got == want:
        return True, f"{exercise}: right, {int(want):,} {spec.unit}"
    hint = spec.slips().get(got)
    if hint is None and spec.unit == "bytes" and got:
        ratio = want / got
        for name, r in (("KiB vs KB", Fraction(1024, 1000)), ("MiB vs MB", Fraction(2**20, 10**6)),
                        ("GiB vs GB", Fraction(2**30, 10**9))):
            if ratio in (r, 1 / r):
                hint = f"a unit mix-up ({name}): KiB = 1,024 B, KB = 1,000 B"
        if ratio in (2, Fraction(1, 2)):
            hint = ("off by a factor 2: the K and V of each head, or the 2 bytes of a bf16 "
                    "element")
    return False, f"{exercise}: not yet" + (f" ({hint})" if hint else "; recompute step by step")


def check(exercise: str, answer) -> bool:
    """Print right / wrong (with a hint) for ``answer`` to ``exercise``; return whether right."""
    right, message = verdict(exercise, answer)
    print(message)
    return right
