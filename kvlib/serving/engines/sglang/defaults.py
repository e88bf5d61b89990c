"""SGLang 0.5.23's defaults: the release, mem_fraction_static when none is given
(``MEM_FRACTION`` and its reserve, arg_groups/memory_hook.py:281-343), the sliding pool's
ratio and architectures, the KV dtypes its pool rule is traced for. Paths under sglang/srt/
in the 0.5.23 wheel.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import arch
from kvlib.serving.engines.sglang import indexer as ix
from kvlib.serving.engines.sglang import kept
from kvlib.serving.engines.sglang import multimodal as mm

__all__ = ["RELEASE", "SWA_FULL_TOKENS_RATIO", "HYBRID_SWA_ARCHS", "prefill_graph_sizes",
           "default_mem_fraction", "kv_bytes", "untraced_swa", "sglang_page", "sglang_fraction",
           "model_path"]

RELEASE = "0.5.23"
MiB = 1 << 20
GiB = 1 << 30
# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expression itself is built with SymPy on first use
KEPT = ("MEM_FRACTION",)
_SYMBOLIC = KEPT
__all__ += [*_SYMBOLIC, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    from kvlib.serving.engines.sglang.symbols import G, R_mib

    return {"MEM_FRACTION": (G - R_mib) / G}  # then rounded to 3 decimals


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


SWA_FULL_TOKENS_RATIO = Fraction(4, 5)  # arg_groups/fields/schedule.py:160 (fallback=0.8)
# configs/model_config.py:2655-2679: the architectures whose sliding layers get a pool of
# their own (of those kvlib bundles: gpt-oss, Llama 4, Gemma 4, MiMo V2; Step 3.5, Beam and
# Laguna are refused below)
HYBRID_SWA_ARCHS = frozenset({"GptOssForCausalLM", "Llama4ForConditionalGeneration",
                              "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
                              "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM",
                              "Step3p5ForCausalLM", "BeamForCausalLM", "LagunaForCausalLM"})
_UNTRACED_SWA = ("Step3p5", "Beam", "Laguna")
_KV_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp32": 4}


def prefill_graph_sizes(max_bs: int) -> list[int]:
    """The prefill CUDA-graph sizes SGLang 0.5.23 captures up to ``max_bs`` tokens
    (arg_groups/cuda_graph_hook.py:480-497)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256))
             + list(range(4608, max_bs + 1, 512)))
    return [s for s in sizes if s <= max_bs]


def _capacity_defaults(gpu_mib, tp_size: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode graph max batch) by GPU memory in MiB
    (arg_groups/memory_hook.py:89-170)."""
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        return 4096, 48 if tp_size < 4 else 160
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp_size < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp_size < 4 else 512
    return 16384, 512


def default_mem_fraction(gpu_mib, tp_size: int = 1, mla: bool = False,
                         model_path: str = "", prefill_graph: bool = True
                         ) -> tuple[Fraction, str]:
    """SGLang 0.5.23's mem_fraction_static when none is given, and the reserve it came from.

    gpu_mib: what nvidia-smi reports as memory.total, in MiB (it may be fractional).
    model_path: the --model-path SGLang is given; one containing "llama-2" caps the prefill
    graph at 4096 tokens (memory_hook.py:258-263), so fewer graphs are reserved for.
    Single node, no pipeline parallelism, no speculative decoding, no DP attention, no DeepEP,
    CUDA graphs on (arg_groups/memory_hook.py:281-343). prefill_graph: False where SGLang
    captures no prefill graph (a multimodal architecture it has not allowlisted,
    arg_groups/cuda_graph_hook.py:229-238), so none is reserved for (memory_hook.py:379-389)."""
    gpu_mib = Fraction(gpu_mib)
    chunk, max_bs = _capacity_defaults(gpu_mib, tp_size)
    prefill_max = min(8192, chunk) if mla else chunk  # memory_hook.py:233-238
    if "llama-2" in model_path.lower():
        prefill_max = min(prefill_max, 4096)  # memory_hook.py:258-263
    graph = Fraction(max_bs * 2)  # :368
    if prefill_graph:
        graph += Fraction(3, 2) * 1024 if mla else 8 * len(prefill_graph_sizes(prefill_max))
    reserve = 512 + Fraction(3, 2) * max(chunk, 2048) + Fraction(tp_size, 8) * 1024 + graph
    if gpu_mib > 60 * 1024:
        reserve = max(reserve, Fraction(10 * 1024))
    value = Fraction(round(float(kept.evaluate("defaults.MEM_FRACTION", G=gpu_mib, R=reserve)), 3)
                     ).limit_denominator(1000)
    how = (f"round((G - R) / G, 3), G = {float(gpu_mib):g} MiB (nvidia-smi), R = "
           f"{float(reserve):g} MiB: 512 + 1.5 x chunked_prefill_size {chunk} + TP {tp_size}/8 "
           f"x 1024 + CUDA graphs {float(graph):g} (decode max batch {max_bs} x 2 + "
           + ("no prefill graph" if not prefill_graph else "1.5 GiB for MLA" if mla else
              f"{len(prefill_graph_sizes(prefill_max))} prefill sizes x 8")
           + (")" if reserve > 10 * 1024 or gpu_mib <= 60 * 1024 else "), raised to 10 GiB"))
    return value, how


def kv_bytes(kv_dtype: str) -> int:
    """b of SGLang's --kv-cache-dtype (auto = the model's bf16/fp16, fp8_e4m3, fp8_e5m2)."""
    if kv_dtype not in _KV_BYTES:
        raise ValueError(f"--kv-dtype {kv_dtype}: SGLang {RELEASE}'s pool rule is traced for "
                         "bf16, fp16, fp8 (fp8_e4m3, fp8_e5m2) only")
    return _KV_BYTES[kv_dtype]


def untraced_swa(arch: str) -> bool:
    return any(arch.startswith(a) for a in _UNTRACED_SWA)


def sglang_page(model, gpu, config: dict | None) -> tuple[int, str]:
    """SGLang 0.5.23's page (tokens) on ``gpu`` when none is given, and why; ValueError where
    it is not traced (MLA other than DeepSeek's on SM100)."""
    arch_ = arch(config)
    mla = any(g.kind == CacheKind.LATENT for g in model.groups)
    sm100 = gpu.cuda_capability is not None and gpu.cuda_capability[0] == 10
    if ix.is_dsa(config):
        return ix.dsa_page(config), ("DeepSeek DSA on CUDA: 64 x index_kpool "
                                     "(model_overrides/deepseek_v2.py:161-173)")
    if sm100 and not mla:
        return 64, ("its default attention backend on SM100 is trtllm_mha, which "
                    "needs pages of 16-128 tokens and gets 64 (arg_groups/"
                    "model_override_base.py:312-325, overrides.py:1176-1187)")
    if sm100 and arch_ in ("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"):
        return 64, ("DeepSeek's default on SM100 is trtllm_mla, pages of 64 "
                    "(model_overrides/deepseek_v2.py:177-185, overrides.py:1155-1163)")
    if sm100:
        raise ValueError(f"{model.name} on {gpu.name}: SGLang {RELEASE}'s MLA page size "
                         "on SM100 is traced for DeepSeek V2/V3 only; give --page-size")
    return 1, "1 token on CUDA (arg_groups/overrides.py:1341-1362)"


def sglang_fraction(gpu, tp: int, mla: bool, model_path: str = "",
                    config: dict | None = None) -> tuple[Fraction, str]:
    """SGLang 0.5.23's default mem_fraction_static on ``gpu`` at ``tp`` and how it came
    (:func:`~kvlib.serving.engines.sglang.default_mem_fraction`), for a multimodal ``config``
    cut by ``VLM_FACTOR`` (:mod:`~kvlib.serving.engines.sglang.multimodal`; the float SGLang
    holds, as an exact Fraction); ValueError for a GPU whose nvidia-smi memory.total kvlib does
    not know."""
    if gpu.reported_bytes is None:
        raise ValueError(f"--gpu {gpu.name}: kvlib has no nvidia-smi memory.total for it, "
                         f"which SGLang {RELEASE}'s default mem_fraction_static needs; "
                         "give --mem-fraction-static")
    if not mm.is_multimodal(config):
        return default_mem_fraction(Fraction(gpu.reported_bytes, MiB), tp, mla, model_path)
    graph = arch(config) in mm.BREAKABLE_GRAPH_ARCHS
    base, how = default_mem_fraction(Fraction(gpu.reported_bytes, MiB), tp, mla, model_path,
                                     prefill_graph=graph)
    value = mm.vlm_fraction(base, config)
    layers, hidden = mm.vision_shape(config) or (None, None)
    how += (f", then x {value / float(base):.6g} for a multimodal model (0.95 x the vision "
            f"tower's clamp(1 - 0.1 x ({layers} x {hidden}^2 / (24 x 1024^2) - 1), 0.8, 1.05), "
            "memory_hook.py:331-337, 432-460)" if layers else "")
    if not graph:
        how += (", no prefill CUDA graph for a multimodal architecture SGLang has not "
                "allowlisted (cuda_graph_hook.py:229-238)")
    return Fraction(value), how


def model_path(model) -> str:
    """The --model-path SGLang would be given: a bundled model's Hugging Face repository,
    else the model's name."""
    from kvlib.models.catalog import BUNDLED

    return BUNDLED[model.name].repo if model.name in BUNDLED else model.name
