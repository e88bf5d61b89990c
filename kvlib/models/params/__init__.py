"""Parameters counted from a config.json, part by part (issue 24, "Weights from the checkpoint").

One counter per family, keyed by ``model_type`` like the readers; each follows its family's
modeling code (vLLM 0.33.0 ``vllm/model_executor/models/<family>.py``, transformers
``models/<family>/modeling_<family>.py``). Every count is an exact integer of elements:

    >>> count_params({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
    ...               "intermediate_size": 14336, "num_hidden_layers": 32,
    ...               "num_attention_heads": 32, "num_key_value_heads": 8}).total
    8030261248

``parts`` splits the model vLLM loads by default; ``mtp`` (next-n prediction layers, as the
checkpoint stores them) is apart and not in ``total``. ``active`` is what one text token
reads: everything but the routed experts, plus ``top_k`` of them per MoE layer (embedding
and head included, vision tower not). A family without a counter raises ValueError naming
its model_type: nothing is guessed.

The counters sit by family group: :mod:`.dense` (attention and a dense MLP), :mod:`.moe`
(attention with routed experts), :mod:`.latent` (MLA), :mod:`.hybrid` (state-space and
linear-attention mixers), the towers in :mod:`.vision`, what they share in :mod:`.tally`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kvlib.models.params.dense import (
    _STANDARD,
    _falcon,
    _gemma3n,
    _gemma4,
    _gpt2,
    _muse_glimmer,
    _nemotron_nas,
    _standard,
)
from kvlib.models.params.hybrid import _jamba, _kimi_linear, _nemotron_h, _qwen3_next
from kvlib.models.params.latent import _deepseek, _deepseek_v4, _glm4_moe_lite
from kvlib.models.params.moe import (
    _glm4_moe,
    _gpt_oss,
    _laguna,
    _llama4,
    _mimo_v2_flash,
    _minimax_m2,
    _minimax_m3,
    _mixtral,
    _qwen3_moe,
    _step3p7,
)
from kvlib.models.params.tally import PARTS, Fixed, Linear, ParamCount, _Tally
from kvlib.models.params.vision import _TALLY_TOWERS, _TOWERS
from kvlib.models.params.wrappers import TALLY_TOWERS as _MORE_TALLY
from kvlib.models.params.wrappers import count_apart
from kvlib.models.readers.fields import Fields, load_config

__all__ = ["PARTS", "Fixed", "Linear", "ParamCount", "count_params", "COUNTERS", "BY_ARCHITECTURE"]


COUNTERS: dict[str, Callable[[_Tally], None]] = {
    **{k: _standard for k in _STANDARD}, "llama4": _llama4, "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek, "deepseek_v3": _deepseek, "deepseek_v32": _deepseek,
    # GLM-5: vLLM serves GlmMoeDsaForCausalLM with the DeepSeek V3.2 code (registry.py:126)
    "glm_moe_dsa": _deepseek,
    # Kimi K2 / K2.5's text model: vLLM serves it as DeepseekV2ForCausalLM (kimi_k25.py:376-380)
    "kimi_k2": _deepseek,
    "mimo_v2_flash": _mimo_v2_flash,
    # Qwen3.5 / 3.6 (vLLM qwen3_5.py): Qwen3-Next's layers, the Gated DeltaNet projections split
    # (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a) with the same sizes; dense or MoE
    "qwen3_5": _qwen3_next, "qwen3_5_moe": _qwen3_next,
    "minimax_m2": _minimax_m2,
    "gpt2": _gpt2, "falcon": _falcon, "nemotron_h": _nemotron_h, "qwen3_next": _qwen3_next,
    "nemotron-nas": _nemotron_nas, "gemma4": _gemma4, "deepseek_v4": _deepseek_v4,
    "qwen3_moe": _qwen3_moe, "qwen3_vl_moe": _qwen3_moe, "mixtral": _mixtral,
    "glm4_moe": _glm4_moe, "glm4v_moe": _glm4_moe, "jamba": _jamba,
    # GLM-4.7-Flash: DeepSeek V3's MLA and MoE (vLLM glm4_moe_lite.py subclasses deepseek_v2)
    "glm4_moe_lite": _glm4_moe_lite,
    # MiniMax-M3 (text file) and its VL wrapper's text model (minimax_m3_vl_text)
    "minimax_m3": _minimax_m3, "minimax_m3_vl": _minimax_m3,
    # issue 42: Laguna, Step 3.7 (flat file, or its step3p5 text model), Kimi Linear and
    # Kimi K3's text model
    "laguna": _laguna, "step3p7": _step3p7, "step3p5": _step3p7, "kimi_linear": _kimi_linear,
    # Muse Glimmer's text model (muse_glimmer_text) and its tower (vision.py)
    "muse_glimmer": _muse_glimmer,
    # Gemma 3n's text model (gemma3n_text); its vision and audio towers in vision.py
    "gemma3n": _gemma3n,
}


# vLLM dispatches on ``architectures``, not ``model_type`` (model_executor/models/
# registry.py): a file whose model_type kvlib does not know is counted by the family its
# architecture names. SGLang's DeepSeek V4 FP8 files say model_type "deepseek_ref" and
# DeepseekV4ForCausalLM (vLLM 0.34.0 registry.py:99).
BY_ARCHITECTURE = {"DeepseekV4ForCausalLM": "deepseek_v4"}


def count_params(config) -> ParamCount:
    """Count the parameters of a config (path or dict) by its family's modeling code.

    Returns a :class:`ParamCount` (elements, exact ints). ValueError for a bad field (named
    with its value) or a ``model_type`` with no counter.
    """
    cfg = load_config(config)
    apart = count_apart(cfg, count_params)  # LFM2, Mistral 3, LFM2-VL, Voxtral (wrappers.py)
    if apart is not None:
        return apart
    outer, c = Fields(cfg), Fields(cfg)
    if isinstance(cfg.get("text_config"), Mapping):
        c = Fields(cfg["text_config"], "text_config.", outer)
    family = (c.text("model_type") or outer.text("model_type")).removesuffix("_text")
    arch, notes = outer.data.get("architectures"), []
    if family not in COUNTERS and isinstance(arch, list) and arch and arch[0] in BY_ARCHITECTURE:
        notes.append(f"model_type {family!r} read by its architectures[0] {arch[0]!r}, as "
                     "vLLM dispatches (model_executor/models/registry.py)")
        family = BY_ARCHITECTURE[arch[0]]
    if family not in COUNTERS:
        # the families that share the decoder's shapes, one table (imported here: it imports
        # params.tally, so a module-level import would make a cycle)
        from kvlib.models.params_shapes import SHAPES, count_by_shape

        shaped = count_by_shape(cfg)
        if shaped is not None:
            return shaped
        raise ValueError(f"model_type {family or '(none)'!r}: kvlib has no parameter counter "
                         f"for it (counted: {', '.join(sorted({*COUNTERS, *SHAPES}))})")
    t = _Tally(c, family, notes)
    COUNTERS[family](t)
    towers = "none"
    extra = [k for k in ("vision_config", "audio_config") if isinstance(cfg.get(k), Mapping)]
    tally_towers = {**_TALLY_TOWERS, **_MORE_TALLY}
    if extra and outer.text("model_type") in tally_towers:
        tally_towers[outer.text("model_type")](t, outer, c.int("hidden_size"))
        towers = "counted"
    elif extra:
        tower = _TOWERS.get(outer.text("model_type"))
        if extra == ["vision_config"] and tower is not None:
            t.add(vision=tower(Fields(cfg["vision_config"], "vision_config.", outer),
                               c.int("hidden_size")))
            towers = "counted"
        else:
            towers = "text only"
            t.notes.append(f"{' and '.join(extra)} not counted: the text model only")
    active = sum(t.parts.values()) - t.parts["vision"] - t.idle
    m = t.mtp or _Tally(c, family)
    return ParamCount(family, dict(t.parts), active, tuple(t.linears), sum(m.parts.values()),
                      tuple(m.linears), towers, tuple(t.notes), tuple(t.fixed), tuple(m.fixed))
