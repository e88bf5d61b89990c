"""The answer checks of the exercises: right answers pass, the usual slips get their hint."""

import pytest

from kvlib.views.exercises import ANSWERS, check, verdict

# Right answers, by hand from the exercise statements.
RIGHT = {
    "01.1": 32 * 32 * (128 + 128) * 2,  # Llama 2 7B, MHA, fp16: 524,288 B per token
    "01.2": 80_000_000_000 // (80 * 64 * 256 * 2),  # 30,517 tokens of Llama 3 70B as MHA
    "02.1": 32 * 8 * (128 + 128) * 2,  # Mistral 7B: 131,072 B
    "03.1": 61 * 512 * 2,  # DeepSeek V3, latent alone: 62,464 B
    "04.1": 61 * (512 + 64) * 2,  # with the RoPE key: 70,272 B
    "04.3": 60 * 576 * 1,  # DeepSeek V2, fp8: 34,560 B
    "05.1": 10 * 8192 * 8192 + 52 * 8192 * 1024,  # Gemma 3 27B at 8K: 1,107,296,256 B
    "07.2": 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4),  # Qwen3-Next fp32 state: 77,266,944 B
}


def test_every_checked_exercise_has_a_hand_answer():
    assert set(RIGHT) == set(ANSWERS)


@pytest.mark.parametrize("exercise", sorted(RIGHT))
def test_the_right_answer_passes(exercise, capsys):
    assert check(exercise, RIGHT[exercise]) is True
    assert capsys.readouterr().out.startswith(f"{exercise}: right")


@pytest.mark.parametrize("exercise, wrong, hint", [
    ("01.1", 524_288 // 2, "factor 2"),  # K only
    ("01.1", 524_288 * 1000 // 1024, "KiB vs KB"),  # 512 read as 512 KB
    ("01.2", 80 * 2**30 // 2_621_440, "80 GB is decimal"),
    ("02.1", 32 * 32 * 256 * 2, "that is MHA"),
    ("03.1", 61 * 576 * 2, "latent alone"),
    ("04.1", 61 * 512 * 2, "RoPE key"),
    ("05.1", 62 * 8192 * 8192, "1,024-token window"),
    ("07.2", 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 2), "float32"),
    ("04.3", 60 * 576 * 2, "factor 2"),  # bf16 instead of fp8
])
def test_a_usual_slip_gets_its_hint(exercise, wrong, hint):
    right, message = verdict(exercise, wrong)
    assert not right and hint in message


@pytest.mark.parametrize("text", ["512 KiB", "524,288", "524288 B", "0.5 MiB"])
def test_answers_with_units(text):
    assert verdict("01.1", text)[0]


def test_no_answer_and_bad_input():
    assert verdict("01.1", ...) == (False, "01.1: no answer yet (set answer = ... in bytes)")
    assert verdict("01.1", 7) == (False, "01.1: not yet; recompute step by step")
    with pytest.raises(ValueError, match="no answer check for exercise '09.9'"):
        verdict("09.9", 1)
    with pytest.raises(ValueError, match="optionally with a unit"):
        verdict("01.1", "a lot")
