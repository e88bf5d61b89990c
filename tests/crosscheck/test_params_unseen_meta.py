"""kvlib's parameter count of the tester's unseen configs (issue 42) against the model
transformers 5.25.0 builds from the same file on the meta device (params_meta.py: parameters
plus persistent buffers, tied ones once, nothing downloaded; HF_HUB_OFFLINE=1).

tests/fixtures/configs/unseen-2026/ (SOURCES.md): Devstral Small 2 and Ministral 3 3B (Mistral
3, a Pixtral tower), LFM2.5-VL-1.6B (and its LFM2 text model alone), Voxtral Mini 3B (an audio
tower), Qwen3.5-9B (a vision tower). Equal, but where vLLM 0.34.0 holds more than transformers'
module, the difference written out: Voxtral's Whisper qkv_proj carries a bias for k too
(QKVParallelLinear(bias=True), whisper.py:235-250), 32 layers x 1,280 = 40,960 elements
transformers' k_proj (bias=False) lacks. Ministral 3 3B's file (mlc-llm's preset) names the
text family's model_type: transformers builds it from the same keys as the Hugging Face file
says, model_type mistral3. One model at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from params_meta import _config, meta_params

from kvlib.models.params import count_params

UNSEEN = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "unseen-2026"


def load(name: str) -> dict:
    return json.loads((UNSEEN / f"{name}.json").read_text(encoding="utf-8"))


def voxtral_meta(config: dict) -> int:
    """VoxtralForConditionalGeneration (no Auto class takes an audio wrapper here) on the
    meta device: parameters plus persistent buffers, as params_meta.meta_params counts."""
    from transformers import VoxtralForConditionalGeneration

    with torch.device("meta"):
        model = VoxtralForConditionalGeneration(_config(config))
    seen, total = set(), 0
    for module in model.modules():
        for name, t in [*module.named_parameters(recurse=False),
                        *module.named_buffers(recurse=False)]:
            if name in module._non_persistent_buffers_set or id(t) in seen:
                continue
            seen.add(id(t))
            total += t.numel()
    return total


# name -> (the config transformers builds, elements vLLM holds beyond it)
CASES = {
    "devstral-small-2-24b-fp8": (lambda c: c, 0),
    "ministral3-3b-2512": (lambda c: {**c, "model_type": "mistral3"}, 0),
    "lfm2.5-vl-1.6b": (lambda c: c, 0),
    "qwen3.5-9b": (lambda c: c, 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_unseen_equal_transformers_meta_count(name):
    config = load(name)
    as_built, more = CASES[name]
    count = count_params(config)
    total, text, cls = meta_params(as_built(config))
    assert count.towers == "counted", name
    assert (count.total, count.text) == (total + more, text + more), (name, cls)


def test_lfm2_text_model_alone():
    text = load("lfm2.5-vl-1.6b")["text_config"]
    total, _, cls = meta_params(text)
    assert cls == "Lfm2ForCausalLM" and count_params(text).total == total


def test_voxtral_within_the_k_bias_vllm_holds():
    config = load("voxtral-mini-3b-2507")
    theirs = voxtral_meta(config)
    ours = count_params(config).total
    k_bias = 32 * 1280  # audio_config: 32 layers of 1,280
    assert ours - theirs == k_bias == 40_960
    assert ours - theirs < theirs / 100
