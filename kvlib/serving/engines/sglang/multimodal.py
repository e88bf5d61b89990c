"""SGLang 0.5.23's multimodal reserves: which configs it serves as multimodal, the factor its
default mem_fraction_static is cut by for them (``VLM_FACTOR``), and the KV budget it holds
back for the embedding cache (``MM_RESERVE``). Paths under sglang/srt/ in the 0.5.23 wheel.

* **Multimodal**: ``ModelConfig.is_multimodal`` (configs/model_config.py:820-828) is
  ``enable_multimodal`` and (the architecture is in ``multimodal_model_archs``, :2391-2473, or
  the config has a text_config, ``has_multimodal_subconfig``, :808-815). ``enable_multimodal``
  defaults on, except for Gemma 3, Llama 4, Step3-VL and Inkling, and MiMoV2ForCausalLM without
  vision_config and audio_config (:690-717).
* **Fraction** (``VLM_FACTOR``): the default mem_fraction_static f times
  0.95 x clamp(1 - 0.1 (L_v H_v^2 / (24 x 1024^2) - 1), 0.8, 1.05), L_v and H_v the vision
  tower's num_hidden_layers and hidden_size (24 and 1024 when missing), in floats
  (arg_groups/memory_hook.py:331-337, 418-458); given --mem-fraction-static, no cut.
* **CUDA graphs**: a multimodal architecture not on ``multimodal_breakable_cuda_graph_supported_
  model_archs`` (configs/model_config.py:2501-2516) gets no prefill CUDA graph
  (arg_groups/cuda_graph_hook.py:229-238), so its default fraction reserves none for one.
* **Budget** (``MM_RESERVE``): SGLANG_VLM_CACHE_SIZE_MB = 100 MiB (environ.py:1598) less
  of the KV budget (``mm_runtime_reservation_gb``, mem_cache/kv_cache_configurator.py:202-221,
  3034-3038); the feature-transport pool (1 GiB more) only with --mm-feature-transport
  cuda_ipc / cuda_vmm, not the single-node default (cpu, arg_groups/fields/mm.py:144-158).
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes

__all__ = ["TRACED_MM_ARCHS", "MM_ARCHS", "MM_DISABLED", "BREAKABLE_GRAPH_ARCHS", "MM_RESERVE",
           "MM_RESERVE_MIB", "HOPPER_FEATURE_CACHE_MIB", "is_multimodal", "vision_shape",
           "vlm_fraction", "mm_reserve"]

# configs/model_config.py:2391-2473 (multimodal_model_archs)
MM_ARCHS = frozenset("""
CLIPModel Cohere2VisionForConditionalGeneration Cosmos3EdgeForConditionalGeneration
DeepseekVL2ForCausalLM Ernie4_5_VLMoeForConditionalGeneration
MiniMaxM3SparseForConditionalGeneration Gemma3ForConditionalGeneration
Gemma3nForConditionalGeneration Gemma4ForConditionalGeneration EmbeddingGemma2Model
Gemma4UnifiedForConditionalGeneration DiffusionGemmaForBlockDiffusion
Glm4vForConditionalGeneration Glm4vMoeForConditionalGeneration Glm5NextForConditionalGeneration
GlmOcrForConditionalGeneration GlmAsrForConditionalGeneration GlmImageForConditionalGeneration
Grok1VForCausalLM Grok1AForCausalLM LlavaLlamaForCausalLM Llama4ForConditionalGeneration
LlavaMistralForCausalLM LlavaQwenForCausalLM LlavaForConditionalGeneration LlavaVidForCausalLM
Lfm2VlForConditionalGeneration LightOnOCRForConditionalGeneration MiMoV2ForCausalLM
MiMoV2ASRForCausalLM MiniCPMO MiniCPMV Mistral3ForConditionalGeneration MultiModalityCausalLM
MllamaForConditionalGeneration MossVLForConditionalGeneration NemotronH_Nano_VL_V2
NemotronH_Nano_Omni_Reasoning_V3 NemotronH_Omni_Reasoning_V3
MuseGlimmerForConditionalGeneration MuseSparkForConditionalGeneration
PixtralForConditionalGeneration Qwen2AudioForConditionalGeneration Qwen2VLForConditionalGeneration
Qwen2_5_VLForConditionalGeneration Qwen3VLForConditionalGeneration
Qwen3VLMoeForConditionalGeneration Qwen3_5ForConditionalGeneration
Qwen3_5MoeForConditionalGeneration Qwen4ExpForConditionalGeneration
InternS2PreviewForConditionalGeneration InternS2MobiusForConditionalGeneration
Qwen3ASRForConditionalGeneration Qwen3OmniMoeForConditionalGeneration
KimiVLForConditionalGeneration LocateAnythingForConditionalGeneration InternVLChatModel
InternS1ForConditionalGeneration InternS1ProForConditionalGeneration Phi4MMForCausalLM
VoxtralForConditionalGeneration WhisperForConditionalGeneration Step3VLForConditionalGeneration
POINTSV15ChatModel DotsVLMForCausalLM Dots3NoteForCausalLM DotsOCRForCausalLM
Sarashina2VisionForCausalLM NVILAForConditionalGeneration NVILALiteForConditionalGeneration
DeepseekOCRForCausalLM UnlimitedOCRForCausalLM JetVLMForConditionalGeneration
PaddleOCRVLForConditionalGeneration MiDashengLMModel StepVLForConditionalGeneration
Step3p7ForConditionalGeneration KimiK25ForConditionalGeneration
BailingMMNativeForConditionalGeneration BailingMM2NativeForConditionalGeneration
BailingMoeV3VLForConditionalGeneration""".split())
# the multimodal architectures whose reserves kvlib has traced end to end (their vision config
# read as SGLang reads it, their model overrides read: model_overrides/gemma4.py sets only the
# attention backend, model_overrides/qwen3_5.py acts on SM100 only, KimiK25 has none).
# Others are refused by name: Qwen3-VL, for one, takes
# profiled defaults on Hopper (a 1 GiB CUDA-IPC feature pool instead of the 100 MiB cache,
# model_overrides/qwen3_vl.py:85-140), and transformers reads its vision depth from "depth"
TRACED_MM_ARCHS = frozenset({"Gemma4ForConditionalGeneration",
                             "KimiK25ForConditionalGeneration",
                             "Qwen3_5ForConditionalGeneration",
                             "Qwen3_5MoeForConditionalGeneration",
                             "Qwen3VLForConditionalGeneration",
                             "Qwen3VLMoeForConditionalGeneration"})
# Qwen3-VL on a large Hopper GPU (SM90, at least 60 GiB) takes profiled serving defaults: no
# embedding cache (SGLANG_VLM_CACHE_SIZE_MB 0) and, on one node, the CUDA-IPC feature transport,
# which reserves SGLANG_MM_FEATURE_CACHE_MB = 1024 MiB instead (model_overrides/qwen3_vl.py:
# 20-31, 81-140; kv_cache_configurator.py:209-211)
_HOPPER_PROFILED = frozenset({"Qwen3VLForConditionalGeneration",
                              "Qwen3VLMoeForConditionalGeneration"})
HOPPER_FEATURE_CACHE_MIB = 1024  # environ.py:1622
# configs/model_config.py:692-704: multimodal off unless --enable-multimodal
MM_DISABLED = frozenset({"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
                         "Step3VLForConditionalGeneration", "InklingForConditionalGeneration"})
# configs/model_config.py:2501-2516: multimodal architectures that keep the prefill CUDA graph
BREAKABLE_GRAPH_ARCHS = frozenset({
    "MiniMaxM3SparseForConditionalGeneration", "Cohere2VisionForConditionalGeneration",
    "Glm5NextForConditionalGeneration", "InternS2MobiusForConditionalGeneration",
    "PaddleOCRVLForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen4ExpForConditionalGeneration",
    "MuseGlimmerForConditionalGeneration", "MuseSparkForConditionalGeneration",
    "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration",
    "MiniMaxM3SparseForCausalLM"})

# built with SymPy on first use (vlm_fraction computes in SGLang's floats; tests check it
# against VLM_FRACTION)
_SYMBOLIC = ("VLM_FACTOR", "VLM_FRACTION")
__all__ += [*_SYMBOLIC, "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    L_v, H_v, f0 = sp.symbols("L_v H_v f_0", positive=True)
    ratio = L_v * H_v**2 / (24 * 1024**2)  # memory_hook.py:443-453
    factor = sp.Rational(95, 100) * sp.Max(sp.Rational(4, 5), sp.Min(
        sp.Rational(21, 20), 1 - sp.Rational(1, 10) * (ratio - 1)))  # :456-460
    # :460, f0 the fraction rounded to 3 decimals
    return {"VLM_FACTOR": factor, "VLM_FRACTION": f0 * factor}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)
MM_RESERVE_MIB = 100  # environ.py:1598 SGLANG_VLM_CACHE_SIZE_MB
MM_RESERVE = MM_RESERVE_MIB << 20  # bytes: reserved_mb / 1024 GB, kv_cache_configurator.py:221

# the vision tower's shape where its config class fills in what config.json leaves out:
# Kimi K2.5's KimiK25VisionConfig(**vision_config) takes no vt_* key, so its defaults stand
# (configs/kimi_k25.py:45-46, 144-147)
_VISION_DEFAULTS = {"KimiK25ForConditionalGeneration": (27, 1152)}
# Qwen3.5's vision config is SGLang's own Qwen3VLVisionConfig (configs/qwen3_5.py:7-12,
# utils/hf_transformers/common.py:117-165), which keeps the layers as "depth" and has no
# num_hidden_layers: memory_hook.py:440 reads the default 24 (configs/qwen3_vl.py:4-36)
_DEPTH_UNREAD = frozenset({"Qwen3_5ForConditionalGeneration",
                           "Qwen3_5MoeForConditionalGeneration"})


def _arch(config: dict | None) -> str:
    return ((config or {}).get("architectures") or [""])[0]


def is_multimodal(config: dict | None) -> bool:
    """Whether SGLang 0.5.23 serves ``config`` (a config.json) as multimodal by default
    (configs/model_config.py:690-717, 808-828)."""
    config = config or {}
    arch = _arch(config)
    if arch in MM_DISABLED or config.get("language_model_only"):
        return False
    if arch == "MiMoV2ForCausalLM" and not ("vision_config" in config
                                            and "audio_config" in config):
        return False
    return arch in MM_ARCHS or "text_config" in config


def vision_shape(config: dict) -> tuple[int, int]:
    """(L_v, H_v): the vision tower's layers and hidden size as SGLang reads them
    (memory_hook.py:440-441: 24 and 1024 when the vision config has none); ValueError where
    the config has no vision_config the rule can read."""
    arch = _arch(config)
    if arch in _VISION_DEFAULTS:
        return _VISION_DEFAULTS[arch]
    vision = config.get("vision_config")
    if vision is None:
        return None
    if arch in _DEPTH_UNREAD:
        return 24, vision.get("hidden_size", 1152)  # configs/qwen3_vl.py:11: 1152 by default
    if arch in _HOPPER_PROFILED:
        # transformers' Qwen3VLVisionConfig (SGLang registers no config of its own for it)
        # maps num_hidden_layers to depth (its attribute_map)
        return vision["depth"], vision["hidden_size"]
    return vision.get("num_hidden_layers", 24), vision.get("hidden_size", 1024)


def mm_reserve(config: dict | None, gpu) -> int:
    """``MM_RESERVE``'s bytes for a multimodal ``config`` on ``gpu`` (0 for a text model):
    100 MiB of embedding cache, or for Qwen3-VL on a large Hopper GPU the 1 GiB CUDA-IPC feature
    pool instead."""
    if not is_multimodal(config):
        return 0
    hopper = (gpu.cuda_capability is not None and gpu.cuda_capability[0] == 9
              and gpu.reported_bytes is not None and gpu.reported_bytes >= 60 << 30)
    if _arch(config) in _HOPPER_PROFILED and hopper:
        return HOPPER_FEATURE_CACHE_MIB << 20
    return MM_RESERVE


def vlm_fraction(fraction: float, config: dict) -> float:
    """``VLM_FRACTION``: SGLang's default mem_fraction_static for a multimodal ``config``, in
    its floats (memory_hook.py:331-337, 432-460); unchanged without a vision_config (:434-435)."""
    shape = vision_shape(config)
    if shape is None:
        return float(fraction)
    # VLM_FRACTION in SGLang's order of float operations (memory_hook.py:443-460), so that
    # the last bit is its; tests check it against the expression
    layers, hidden = shape
    ratio = layers * (hidden**2) / (24 * (1024**2))
    factor = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return float(fraction) * (0.95 * factor)
