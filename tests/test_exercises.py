"""The answer checks of the exercises (issue 26): every exercise checkable with all its answers,
right answers pass however a learner writes them, the usual slips get the hint that matches
them, and nothing a learner passes makes check() raise."""

import re
from fractions import Fraction
from pathlib import Path

import nbformat
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from kvlib.views.exercises import ANSWERS, check, solution, verdict

ROOT = Path(__file__).resolve().parent.parent

# Right answers, by hand from the exercise statements (never from kvlib).
RIGHT = {
    "01.1": (32 * 32 * (128 + 128) * 2, 32 * 32 * 256 * 2 * 4096),  # Llama 2 7B: 512 KiB, 2 GiB
    "01.2": (80_000_000_000 // (80 * 64 * 256 * 2),),  # 30,517 tokens of Llama 3 70B as MHA
    "01.3": (3 * 4 * 16 * 32 * 33 // 2, 32),  # 192 t summed over t = 1..32; step 32 / step 1
    "02.1": (32 * 8 * (128 + 128) * 2, 32 // 8),  # Mistral 7B: 131,072 B, 4x
    "02.2": (8,),  # 62 x 8 x 256 x 2 = 253,952 B < 327,680 B; 16 heads give 507,904 B
    "02.3": (ValueError,),  # 6 does not divide 64
    "03.1": (61 * 512 * 2, 61 * 512 * 2 * 131_072),  # DeepSeek V3 latent alone
    "03.2": (8 * (128 + 128),),  # d_L = 2,048
    "03.3": (2 * 128 * (512 + 512), 2 * 128 * (192 + 128), 2 * 128 * 1024 // (512 * 2), 1),
    "04.1": (61 * (512 + 64) * 2, Fraction(64, 576)),  # 70,272 B; one ninth RoPE keys
    "04.2": (100 * 2**30 // (60 * 512 * 2 * 131_072), 100 * 2**30 // (60 * 576 * 2 * 131_072)),
    "04.3": (60 * 576, 60 * 576 * 131_072),  # fp8: 34,560 B; 4.21875 GiB
    "05.1": (10 * 8192 * 8192 + 52 * 8192 * 1024,  # Gemma 3 27B at 8K (8 KiB per layer-token)
             Fraction(62 * 8192 * 8192, 10 * 8192 * 8192 + 52 * 8192 * 1024)),
    "05.2": (14 * 2048 * 32768 + 14 * 2048 * 4096,),  # Qwen2.5 7B, 14 layers windowed
    "05.3": (100 * 2**30 // (61 * 576 * 131_072),),  # DeepSeek V3 fp8: 23
    # Notebook 06 (vLLM 0.34.0 with kvlib's assumed terms): CUDA total - weights per GPU (the
    # 161 x 8,192 bf16 norms whole on every GPU) - 9.125 GiB held back, over a session's bytes.
    "06.1": ((7922 * 2**30 // 100 - ((70_553_706_496 - 1_318_912) * 2 // 8 + 1_318_912 * 2)
              - 9 * 2**30 - 2**27) // (2 * 80 * 1 * 128 * 2 * 32768),),  # 42
    # int4_per_token_head at TP=4: 80 layers x K, V x 2 heads x (64 B + a 4-byte scale)
    "06.2": (80 * 2 * 2 * (64 + 4),
             (13981 * 2**30 // 100 - ((70_553_706_496 - 1_318_912) * 2 // 4 + 1_318_912 * 2)
              - 9 * 2**30 - 2**27) // (80 * 2 * 2 * (64 + 4) * 131072)),  # 21,760 B; 36
    "06.3": ((4442 * 2**30 // 100 - 8_030_000_000 * 2 - 9 * 2**30 - 2**27)
             // (2 * 32 * 8 * 128 * 8192), "42.2 ms"),  # 40 sessions
    # --- E01 begin: engines/01. E01.1, E01.3: vLLM 0.33.0's budget, ceil(0.92 M) - W - 4 GiB:
    # DeepSeek V2 at 236B x 2 B / 8 per GPU over the 60 x (512 + 64) x 2 B latent at 32K (whole,
    # or an eighth with DCP 8); Llama 3.1 70B on 8 x H100 as notebook 06's exercise 1
    "E01.1": ((-(-(13981 * 2**30 // 100) * 92 // 100) - 236_000_000_000 * 2 // 8 - 4 * 2**30)
              // (60 * 576 * 2 * 32768),
              (-(-(13981 * 2**30 // 100) * 92 // 100) - 236_000_000_000 * 2 // 8 - 4 * 2**30)
              // (60 * 576 * 2 * 32768 // 8)),  # 33, 264
    # a 4,096-token window: 4,095 tokens + 2 x 8,192 in flight, in 64-token blocks, plus one
    "E01.2": ((-(-(4095 + 2 * 8192) // 64) + 1) * 64,),  # 20,544 slots
    "E01.3": ((-(-(7922 * 2**30 // 100) * 92 // 100)
               - ((70_553_706_496 - 1_318_912) * 2 // 8 + 1_318_912 * 2) - 4 * 2**30)
              // (2 * 80 * 1 * 128 * 2 * 32768),),  # 41
    # --- E01 end
    "07.1": (Fraction(54 * (3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4),
                      54 * (3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4)
                      + 10 * 2 * 8 * 128 * 2 * 8192),),
    "07.2": (36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4),),  # Qwen3-Next fp32 state
    "07.3": (Fraction(80 * 2 * 8 * 128 * 2 * 2**20,
                      12 * 2 * 2 * 256 * 2 * 2**20 + 39_518_208),),
    # DeepSeek V4, an m = 4 layer: a 584-byte entry (448 fp8 + 64 bf16 + 8 scale bytes) and a
    # 132-byte indexer key (128 fp8 + one fp32 scale) per 4 tokens
    "08.1": (Fraction(448 + 64 * 2 + 8 + 128 + 4, 4),),
    # V4-Pro at 64K: 30 m = 4 layers, a 132-byte key per 4 tokens; the whole sequence is 30 x
    # (16,384 entries + 128-token window + 8-slot states) + 31 x (512 entries + window + state)
    "08.2": (30 * 16384 * 132,
             Fraction(30 * 16384 * 132,
                      30 * 16384 * 132 + 61 * 128 * 584 + 30 * 16384 * 584 + 31 * 512 * 584
                      + 30 * 8 * (2 * 1024) * 4 + 30 * 8 * (2 * 256) * 4
                      + 31 * 128 * (2 * 512) * 4)),
    # Gemma 3n E4B at 16K: 4 full layers and 16 sliding (512 tokens) store; 2 KV heads of 256
    "08.3": (4 * 2 * 2 * 256 * 2 * 16384 + 16 * 2 * 2 * 256 * 2 * 512,),
    # engines/04: an MXFP4 key of 128 values is 64 B of 4-bit values + 4 UE8M0 scale bytes (one
    # per 32); V4-Flash keeps one key per 4 tokens in its 21 m = 4 layers: 374,341,632 B at 1M
    "E04.1": (128 // 2 + 128 // 32, 21 * (2**20 // 4) * (128 // 2 + 128 // 32)),
    # a 256-token block of m = 4 entries: 64 entries of 584 B = 37,376 B, up to 65 x 576 = 37,440
    "E04.2": (256 // 4, -(-64 * 584 // 576) * 576),
    # engines/06: Nemotron-H 56B in vLLM 0.34.0. One Mamba2 layer's state: a bf16 conv state of
    # 3 x (256 x 64 + 2 x 8 x 256) and a float32 SSM state of 256 heads x 64 x 256 = 16,900,096 B;
    # one attention layer: 2 x 8 x 128 x 2 = 4,096 B a token; 4,126 tokens, up to 64's multiple
    "E06.1": (64 * -(-((3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4) // 4096) // 64),
              4160 * 4096 - (3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 4)),  # 139,264
    # TP = 8: 32 heads, 1 B/C group and 2,048 channels per GPU, 54 layers
    "E06.2": (54 * (3 * (2048 + 2 * 1 * 256) * 2 + 32 * 64 * 256 * 4),),  # 114,075,648 B
    # engines/02: SGLang's budget F_0 f - W - X is linear in f; F_0 = 79.22 GiB - 0.5 GiB; 48,128 B
    # a token (94 layers, 1 KV head of 128, K and V, bf16): f = 0.93 - (367,404 - 178,880) x
    # 48,128 / F_0
    "E02.1": (Fraction(93, 100) - Fraction((367_404 - 178_880) * 94 * 256 * 2,
                                           7922 * 2**30 // 100 - 2**29),),
    # gpt-oss-20b, SGLang on one H100: budget = F_0 x 0.83 - 13,761,264,768 B of weights; each
    # full-pool token costs 12 x 8 x (64 + 64) x 2 = 24,576 B + 0.8 x 24,576 B of window pool
    "E02.2": (((7922 * 2**30 // 100 - 2**29) * 83 // 100 - 13_761_264_768) * 5 // (9 * 24_576),
              ((7922 * 2**30 // 100 - 2**29) * 83 // 100 - 13_761_264_768) * 5 // (9 * 24_576)
              * 4 // 5),
    # TensorRT-LLM, Llama 3.1 70B, TP 4 on H100s: (M - W - 4.5 GiB) x float32(0.9) = 15,099,494 /
    # 2^24, over 2 x 80 x (128 x 8 // 4) x 2 = 81,920 B, rounded up to blocks of 32; 1,024 a session
    "E02.3": (-(-((7922 * 2**30 // 100 - 35_278_831_616 - 9 * 2**30 // 2) * 15_099_494 // 2**24
                  // 81_920) // 32) * 32,
              -(-((7922 * 2**30 // 100 - 35_278_831_616 - 9 * 2**30 // 2) * 15_099_494 // 2**24
                  // 81_920) // 32) // 1024),
    # engines/03: 25.91 GiB over 16 x 48 x 2 x (128 + 128) x 1 B (fp8) blocks; 2,048 per request
    "E03.1": (2591 * 2**30 // 100 // (16 * 48 * 2 * 256) * 16,
              Fraction(2591 * 2**30 // 100 // (16 * 48 * 2 * 256), 32768 // 16)),
    # SGLang's K: (#tokens + one page) x 8 KV heads x 128 x 64 layers x 2 B
    "E03.2": ((17_667 + 1) * 8 * 128 * 64 * 2,),
    # engines/05: d_L = 256, d_QK = d_V = 128, d_R = 64. Per head, re-expanding pays
    # d_L (d_QK + d_V) per key, absorbing as much per query; per pair 2 d_L + d_R = 576 against
    # d_QK + d_R + d_V = 320. Long context: N_Q = 256 x 256 / (576 - 320) = 256 query tokens
    "E05.1": (256 * (128 + 128) // ((2 * 256 + 64) - (128 + 64 + 128)),),
    # DeepSeek V3 in vLLM: a 64-token page of (512 + 64) bf16 values, K only; 61 layers
    "E05.2": (64 * (512 + 64) * 2, 61 * 64 * (512 + 64) * 2),  # 73,728 B; 4,497,408 B
}


def test_all_exercises_are_checked():
    # the lessons 01-08 (06.4 went with SGLang to engines/02), then the engines track:
    # engines/01 3, /02 3, /03 2, /04 2, /05 2, /06 2
    lessons = [k for k in RIGHT if not k.startswith("E")]
    assert len(lessons) == 24 and len(RIGHT) == 24 + 3 + 3 + 2 + 2 + 2 + 2
    assert set(ANSWERS) == set(RIGHT)
    for exercise, answers in RIGHT.items():
        assert len(ANSWERS[exercise].parts) == len(answers), exercise


@pytest.mark.parametrize("exercise", sorted(RIGHT))
def test_the_right_answers_pass(exercise, capsys):
    assert check(exercise, *RIGHT[exercise]) is True
    assert capsys.readouterr().out.startswith(f"{exercise}: ")
    assert "not yet" not in verdict(exercise, *RIGHT[exercise])[1]


@pytest.mark.parametrize("exercise, answers", [
    ("01.1", ("512 kib", "2 GiB")), ("01.1", ("512KiB", "2gib")), ("01.1", ("524,288", "2 GiB")),
    ("01.1", ("524288 B", "2147483648 bytes")), ("01.1", ("0.5 MiB", "2048 MiB")),
    ("01.1", ([524_288, 2**31],)), ("01.1", (np.int64(524_288), sp.Integer(2**31))),
    ("01.2", ("30,517 tokens",)), ("01.2", ("30 517",)), ("01.2", ("30_517",)),
    ("01.2", (30517.0,)), ("03.2", (sp.Integer(2048),)),
    ("04.1", (70_272, "11.1%")), ("04.1", (70_272, 0.111)), ("04.1", (70_272, "1/9")),
    ("04.1", (70_272, sp.Rational(1, 9))), ("04.1", (70_272, 1 / 9)),
    ("05.1", ("1.03 GiB", "3.76x")), ("05.1", ("1,107,296,256", 3.76)),
    ("03.1", ("61 KiB", "7.63 GiB")),  # 7.625 GiB to the digits given
    ("06.3", (40, 0.0422)), ("06.3", (40, "42.23 ms")),
    ("02.3", ("ValueError",)), ("02.3", ("valueerror",)), ("02.3", (ValueError("x"),)),
    ("1.1", (524_288, 2**31)),
    ("01.1", ("524 KB", "2.15 GB")),  # decimal units, rounded to three digits
    ("03.3", ("262,144 FLOPs", "81,920", "256 FLOP/B", "1 flops/byte")),
    ("05.1", (1_107_296_256, "3.8x")),  # a ratio to two digits
    ("06.3", (40, "42227 us")),
])
def test_answers_as_learners_write_them(exercise, answers):
    right, message = verdict(exercise, *answers)
    assert right, message


@pytest.mark.parametrize("exercise, answers, hint", [
    ("01.1", (524_288 // 2, 2**31), "factor 2"),  # K only
    ("01.1", ("512 KB", 2**31), "KiB vs KB: 1 KiB = 1,024 B, 1 KB = 1,000 B"),
    ("01.1", (524_288, "2 GB"), "GiB vs GB: 1 GiB = 1,073,741,824 B, 1 GB = 1,000,000,000 B"),
    ("01.1", (524_288, "2 MB"), "recompute"),  # not a unit mix-up of the right answer
    ("01.2", (80 * 2**30 // 2_621_440,), "80 GB is decimal"),
    ("01.2", (80e9 / 2_621_440,), "round down"),
    ("02.1", (32 * 32 * 256 * 2, 4), "that is MHA"),
    ("02.2", (16,), "already has 16 KV heads"),
    ("02.3", (TypeError,), "read the exception's type"),
    ("03.1", (61 * 576 * 2, 61 * 512 * 2 * 131_072), "latent alone"),
    ("03.1", (61 * 512 * 2, "7.6 GiB"), "three significant digits"),
    # issue 36: every "close" hint against the input that triggers it
    ("01.2", ("3.05e4",), "a count is exact: write the whole number"),
    ("01.2", ("30.5e3 tokens",), "a count is exact"),
    ("01.3", (101_376, "3e1"), "at least two significant digits"),  # ratio 32 as one digit
    ("02.1", ("1.3e5", 4), "at least three significant digits"),  # 131,072 B as two digits
    ("04.1", (61 * 512 * 2, "1/9"), "RoPE key"),
    ("04.1", (70_272, "1/8"), "64 of 512 + 64"),
    ("05.1", (62 * 8192 * 8192, 3.76), "1,024-token window"),
    ("05.2", (28 * 2048 * 32768,), "every layer at full context"),
    ("05.2", (28 * 2048 * 4096,), "the first max_window_layers"),
    ("05.3", (100 * 2**30 // (61 * 576 * 2 * 131_072),), "bf16 cache"),
    ("07.2", (36 * (3 * 8192 * 2 + 32 * 128 * 128 * 2),), "float32"),
    ("07.2", (36 * (3 * 8192 * 4 + 32 * 128 * 128 * 4),), "convolution state stays bf16"),
    ("04.3", (60 * 576 * 2, 60 * 576 * 131_072), "that is bf16"),
    ("01.2", (30_518,), "round down"),
    ("01.2", (80 * 10**9 // (80 * 64 * 128 * 2),), "factor 2"),  # K or V only: 61,035
    ("01.3", (192 * 31 * 32 // 2, 32), "to step 32 included"),
    ("02.1", (131_072, "1/4"), "upside down"),
    ("02.1", (131_072, "75%"), "the share saved"),
    ("05.3", (100 * 2**30 // (61 * 512 * 131_072),), "RoPE key"),  # 26 without the RoPE key
    ("06.1", (43,), "32,768"),  # 32,000-token sessions
    ("06.1", (39,), "not the datasheet's 80 GB"),
    ("06.1", (41,), "an older vLLM's budget"),
    ("06.2", (80 * 2 * 2 * 64, 36), "the scales are cached too"),
    ("06.2", (80 * 2 * 8 * 68, 36), "all 8 KV heads"),
    ("06.3", (40, "43.44 ms"), "reads every weight"),
    ("06.3", (43, "42.23 ms"), "an older vLLM's budget"),
    ("06.3", (40, "42.23"), "milliseconds"),
    ("E01.1", (35, 264), "vLLM 0.34.0's budget"),
    ("E01.2", (12_352,), "two batches are in flight"),
    ("E01.2", (20_480,), "plus one block"),
    ("E01.3", (42,), "vLLM 0.34.0's budget"),
    ("07.1", ("73.1",), "% sign"),
    ("07.1", ("57.8%",), "float32"),  # the SSM state taken as bf16
    ("E02.1", ("0.4528",), "not the cache"),  # 0.93 x 178,880 / 367,404
    ("E02.1", ("0.819",), "SGLang's default"),
    ("E02.2", (2_294_696, 1_019_864), "a pool of their own"),  # budget // 24,576 B
    ("E02.3", (493_848, 15), "rounds the token count up"),  # max_tokens, not whole blocks
    ("E03.1", (566_000, "34.55x"), "bf16 cache"),  # 25.91 GiB // 786,432 B x 16
    ("E03.2", (17_667 * 131_072,), "one page of rows"),
    ("E03.2", ("2.16 GB",), "GiB vs GB"),  # SGLang's "GB" is 2^30 B
    ("E04.1", (128 // 2, 21 * 2**18 * 68), "one UE8M0 scale byte per 32"),  # no scales
    ("E05.1", ("170.67",), "d_L = 512"),  # DeepSeek V2's own latent: 512 x 256 / 768
    ("E05.2", (2 * 64 * 576 * 2, 61 * 64 * 576 * 2), "K only"),
    ("E05.2", (64 * 512 * 2, 61 * 64 * 576 * 2), "RoPE key"),
    ("E04.1", (68, 21 * 2**18 * 132), "the fp8 cache"),
    ("E04.2", (64, 64 * 584), "before the padding"),
    ("E06.1", (4126, 139_264), "rounds it up to a multiple of 64"),
    ("E06.1", (4128, 139_264), "vLLM 0.33.0's without prefix caching"),
    ("E06.2", (54 * (3 * 2560 * 2 + 32 * 64 * 256 * 2),), "float32"),  # SSM state as bf16
    ("E06.2", (912_605_184,), "TP = 8 divides"),  # the whole state, on one GPU
])
def test_a_usual_slip_gets_its_own_hint(exercise, answers, hint):
    right, message = verdict(exercise, *answers)
    assert not right and hint in message, message


@pytest.mark.parametrize("exercise, answers", [
    ("01.2", ("3.05e4",)),  # a count must be exact, even in scientific notation
    ("01.2", ("30,500",)), ("05.1", (1_107_296_256, "4x")),  # one digit is not enough
])
def test_a_rounded_answer_that_is_not_precise_enough_is_not_right(exercise, answers):
    assert not verdict(exercise, *answers)[0]


def test_no_example_shown_to_learners_is_an_answer():
    """The formats check() and the student edition show ("96 KiB", "4,567 tokens", ...) must
    not be any exercise's answer, or the page gives it away (issue 26, fresh-eyes walk)."""
    import importlib.util

    from kvlib.views.exercises import reading
    spec = importlib.util.spec_from_file_location("student",
                                                  ROOT / "scripts" / "student_edition.py")
    student = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(student)
    workshop = (ROOT / "docs" / "workshop.md").read_text()
    intros = [c.source.split("**1.**")[0] for path in sorted((ROOT / "notebooks").glob("0*.ipynb"))
              for c in nbformat.read(path, as_version=4).cells if "## Exercises" in c.source]
    shown = " ".join([*reading._EXAMPLE.values(), *student.UNITS.values(), student.ANSWER_HERE,
                      *re.findall(r"type them \(([^)]*)\)", workshop),
                      *(intro.split("## Exercises")[1] for intro in intros)])
    for exercise in ANSWERS.values():
        for part in exercise.parts:
            want = part.value()
            if part.kind == "exception":
                assert want not in shown, want
                continue
            for example in re.findall(r"[\d.,/]+\s*(?:%|x|KiB|MB|ms|tokens)?", shown):
                try:
                    r = reading.read(example.strip(), part.kind)
                except reading.Unreadable:
                    continue
                assert r.value == 0 or not r.rounds_to(want) or r.value < 10, \
                    (part.what, example)


def test_one_of_two_answers_says_which_is_right_and_what_is_missing():
    right, message = verdict("01.1", "2 GiB")
    assert not right
    assert message == ('01.1 asks for 2 answers (bytes per token; bytes per 4,096-token '
                       'sequence), got 1: check("01.1", per_token, per_sequence); right so far: '
                       'bytes per 4,096-token sequence')


@pytest.mark.parametrize("answer, expected", [
    ("", "expected a whole number"), ("   ", "expected a whole number"),
    ("a lot", "expected a whole number"), ("32K", "cannot read the unit 'k'"),
    ("1,5", "group thousands by three"), ("2 GiB", "not a size in bytes"),
    ([1, 2], "got list [1, 2]"), ({"a": 1}, "got dict"), (True, "got True"),
    (float("nan"), "got nan"), (np.array([1, 2]), "got ndarray"), (object(), "got object"),
])
def test_input_that_is_not_an_answer_gets_one_line(answer, expected, capsys):
    assert check("01.2", answer) is False
    out = capsys.readouterr().out
    assert expected in out and out.count("\n") == 1, out


def test_no_answer_yet_and_unknown_exercise(capsys):
    assert verdict("01.1", ..., ...) == (
        False, "01.1: no answer yet (set per_token, per_sequence = ..., then run the cell)")
    assert verdict("01.2", None)[1] == "01.2: no answer yet (set tokens = ..., then run the cell)"
    assert check("09.9", 1) is False
    assert capsys.readouterr().out.startswith("'09.9' is not an exercise; they are 01.1, 01.2")


_LEARNER_INPUT = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.fractions(), st.text(max_size=20),
    st.from_regex(r"\s*[0-9][0-9,_. ]{0,12}\s*(KiB|kb|GB|gib|tokens|x|%|ms|s|K|)\s*",
                  fullmatch=True),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers()))


@given(exercise=st.sampled_from(sorted(RIGHT)), answers=st.lists(_LEARNER_INPUT, max_size=5))
def test_check_never_raises_on_learner_input(exercise, answers):
    right, message = verdict(exercise, *answers)
    assert isinstance(right, bool) and "\n" not in message and message


def test_a_solution_that_disagrees_with_the_check_fails_the_notebook():
    folded = solution("01.2", 30_517, say="30,517 tokens")
    assert repr(folded) == ("Answer to 01.2: folded (open it in JupyterLab, VS Code or the "
                            "book)")
    assert re.match(r'<details class="kvlib-answer"><summary>Show the answer to 01\.2'
                    r"</summary><pre>30,517 tokens</pre>", folded._repr_html_())
    with pytest.raises(AssertionError, match="the solution of 01.2 disagrees"):
        solution("01.2", 30_518, say="30,518 tokens")


# --- Issue 36: every general hint against the input that triggers it ------------------------
# "3.05e4" tokens was told to give three significant digits, which it has. Each case below is
# one hint's trigger; the sweep after it types every answer the ways learners round and slip
# (1-6 significant digits, rounded, cut off or up; in every unit; times 2, 1/2, 100, 1,000;
# upside down; one more) and holds each general hint to what the typed answer shows.


@pytest.mark.parametrize("exercise, answers, hint", [
    ("01.2", ("30,500",), "a count is exact"),  # a whole number with its zeros rounded
    ("01.2", (30_500,), "a count is exact"),  # the same, as a Python int
    ("01.1", ("524,000", 2**31), "a whole number of bytes is read as exact"),
    ("07.3", ("13x",), "this answer is not whole: give it with its decimals"),
    ("03.3", (262_144, 81_920, "260", 1), "a whole number is read as exact: give the exact"),
    ("01.3", (101_376, "30x"), "at least two significant digits"),  # one digit, 30 for 32
    ("01.1", (524_288, "2000 MiB"), "one of the steps B, KiB, MiB, GiB, TiB taken as 1,000"),
    ("01.1", ("500 KB", 2**31), "two of the steps"),  # 0.5 MiB written as 0.5 MB
    ("01.1", ("512 MiB", 2**31), "off by a factor 1,024: check the unit"),
    ("01.1", (524_288, "2.14 GB"), "the last digit is off by one"),  # 2.147 GB cut off
    ("03.3", (131_072, 81_920, 256, 1), "a multiply-add is two FLOPs"),
    ("06.3", (40, "42227 ms"), "off by a factor 1,000: check the unit"),  # microseconds
    ("06.3", (40, "42.23 s"), "off by a factor 1,000: check the unit"),
])
def test_each_general_hint_on_the_input_that_triggers_it(exercise, answers, hint):
    right, message = verdict(exercise, *answers)
    assert not right and hint in message, message


@pytest.mark.parametrize("exercise, answers, not_said", [
    ("02.1", (131_072, "400"), "a share is a fraction"),  # 4x is not a share
    ("03.3", (262_144, 81_920, "25600x", 1), "a share is a fraction"),
    ("02.2", (9,), "round down"),  # KV heads are not rounded: they divide the query heads
    ("03.2", (2049,), "round down"),
    ("03.3", (262_144, 81_920 * 2, 256, 1), "what each token caches"),  # FLOPs, not bytes
    ("06.3", (40, "42227 ms"), "write 'ms' after it"),
])
def test_a_hint_that_does_not_apply_is_not_given(exercise, answers, not_said):
    right, message = verdict(exercise, *answers)
    assert not right and not_said not in message, message


def _typed(value: Fraction, digits: int, rounding: str) -> str:
    from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_UP, Decimal

    d = Decimal(value.numerator) / Decimal(value.denominator)
    if not d:
        return "0"
    step = Decimal(1).scaleb(d.adjusted() - digits + 1)
    mode = {"round": ROUND_HALF_EVEN, "down": ROUND_DOWN, "up": ROUND_UP}[rounding]
    return format(d.quantize(step, rounding=mode), "f")


_UNITS_TYPED = {"bytes": ["", " KiB", " MiB", " GiB", " KB", " MB", " GB"],
                "ratio": ["", "x", "%"], "count": [""], "seconds": ["", " ms", " s"]}


def _significant(text: str) -> int:
    number = re.match(r"[\d.,]+", text).group(0).replace(",", "")
    if "." in number:
        return len(number.replace(".", "").lstrip("0"))
    return len(number.strip("0"))


def _claims_hold(part, text, want) -> list[str]:
    """What is wrong with the hint ``text`` gets: each general hint's claim, checked."""
    from kvlib.views.exercises import _hint
    from kvlib.views.exercises.reading import read

    r = read(text, part.kind, part.unit)
    if r.matches(want):
        return []
    hint, said = _hint(part, r, want), _significant(text)
    wrong = {
        "at least three significant digits": said >= 3,
        "at least two significant digits": said >= 2,
        "a count is exact": r.value == want,
        "a share is a fraction": want >= 1,
        "write 'ms' after it": bool(r.unit),
        "round down": part.unit not in ("tokens", "sequences", "sessions"),
        "what each token caches": part.unit in ("FLOPs", "multiply-adds"),
        "a multiply-add is two FLOPs": part.unit not in ("FLOPs", "multiply-adds"),
        "the last digit is off by one": not r.tolerance or abs(r.value - want) > 2 * r.tolerance,
        "read as exact": "." in text,
        "this answer is not whole": Fraction(want).denominator == 1,
        "upside down": not r.matches(1 / Fraction(want)),
    }
    return [f"{text!r} -> {hint!r}" for claim, bad in wrong.items() if claim in hint and bad]


@pytest.mark.parametrize("exercise", [k for k, e in ANSWERS.items()
                                      if any(p.kind != "exception" for p in e.parts)])
def test_every_general_hint_says_only_what_the_typed_answer_shows(exercise):
    from kvlib.core.units import UNITS

    wrong = []
    for part in ANSWERS[exercise].parts:
        if part.kind == "exception":
            continue
        want = Fraction(part.value())
        for unit in _UNITS_TYPED[part.kind]:
            scale = {"%": Fraction(1, 100), " ms": Fraction(1, 1000)}.get(
                unit, UNITS.get(unit.strip(), 1))
            for variant in (want, want * 2, want / 2, want * 100, want * 1000, want + 1,
                            1 / want if want else want):
                for digits in range(1, 7):
                    for rounding in ("round", "down", "up"):
                        text = _typed(variant / scale, digits, rounding) + unit
                        wrong += _claims_hold(part, text, want)
    assert not wrong, f"{len(wrong)} hints say what the answer does not show: {wrong[:10]}"
