"""SGLang 0.5.23's own sizing code, lifted from its released wheel and run beside kvlib on every
bundled model (issue 35). SGLang's functions are plain Python over a config and a few numbers;
this test takes their source out of the wheel with ``ast`` (``pool_configurator.py`` whole) and
runs it with stand-ins for what a GPU or a server would supply, so no SGLang, torch or
transformers is installed. What SGLang computes here from its own code: the default
mem_fraction_static (``arg_groups/memory_hook.py`` ``handle_gpu_memory_settings``), the KV
budget (``KVCacheConfigurator._profile_available_bytes``, in GB floats as it does), the model's
head counts, head sizes and layer split from its config.json (``ModelConfig._derive_model_shapes``,
``get_num_kv_heads``, ``get_hybrid_layer_ids``), the cell and the pools
(``pool_configurator.create_memory_pool_configurator`` and the configurator it picks) and
max_running_requests. kvlib supplies only what SGLang would measure on the GPU: the free memory
before the weights (its CUDA total less ``--in-use-gib``) and the weights per GPU.

Per-kind head sizes (Gemma 4, MiMo-V2-Flash, issue 41 item 3) and multimodal reserves (Gemma 4,
Kimi K2.5; Gemma 3 served text-only): SGLang's own ``_apply_gemma4_attention_overrides``,
``KimiK25VisionConfig``, ``adjust_mem_fraction_for_vlm``, ``is_multimodal_model`` and
``mm_runtime_reservation_gb`` run lifted. Stand-ins, each said where it is: transformers'
Gemma3Config / Gemma4Config from kvlib's environment (5.25.0; SGLang pins 5.19.0) build those
configs; the enable_multimodal default (``ModelConfig.__init__``, which reads the checkpoint) and
cuda_graph_hook.py's rule that turns the prefill graph off for a multimodal architecture not
allowlisted are restated, not lifted.

State pools (Qwen3-Next, Qwen3.5, Qwen3.6, Nemotron-H, Nemotron 3): SGLang's own config classes
(configs/qwen3_next.py, qwen3_5.py, qwen3_vl.py, nemotron_h.py, mamba_utils.py, run whole, over
transformers' PretrainedConfig) give the state per request; _mamba_radix_cache_resolution,
_handle_max_mamba_cache, _calculate_mamba_ratio and get_mamba_tracking_slots run lifted.
Stand-ins: the linear-attention spec registry (no spec for these; they are named in the
architecture lists), the environment at its defaults. DSA pools (DeepSeek V3.2, GLM-5.x):
DSATokenToKVPool's class constants, _should_elide_dsa_index_k, dsa_layer_skips_topk and the
DefaultPoolConfigurator run from the wheel; the page (64 x index_kpool, deepseek_v2.py:161-173)
and the DSA backends at their H200 defaults (overrides.py:712-726) are restated. transformers
comes from kvlib's crosscheck extra (5.25.0).

The wheel: ``make oracle`` downloads it into build/oracle (``pip download sglang==0.5.23
--no-deps``); without it the test is skipped (with KVLIB_REQUIRE_ORACLE=1 it fails).

DeepSeek V4 (Flash, Pro): pool_configurator.py run whole picks DSV4PoolConfigurator; its helpers
(deepseek_v4_memory_pool.py's ring sizes, indexer bytes, layer split and layouts,
unified_kv_gate.py) are lifted and kv_layout.py's KVLayout runs whole. Stand-ins, each said where
it is: V4's defaults restated (page 256, swa_full_tokens_ratio 0.1 recorded as set,
max_running_requests 256), the flashmla backend restated from _default_dsv4_attention_backend,
no speculative decoding, the environment at its defaults, is_hip() False, and
kv_source_layer_ids = [] (DeepSeekV4Config's default; the config.json has none)."""

import ast
import builtins
import copy
import enum
import glob
import json
import os
import types
import zipfile
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest
from engine_fit import float32 as _float32
from engine_fit import smallest_tp

from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines import sglang as sg
from kvlib.serving.engines.vllm.defaults import MEASURED_DEFAULTS
from kvlib.serving.gpus import get_gpu

ROOT = Path(__file__).resolve().parents[2]
GPU = "H200"  # SM90: SGLang's page is 1 token (arg_groups/overrides.py:1341-1362)
CONTEXT = 8192
MiB = 1 << 20

# Bundled models kvlib refuses for SGLang, each with the words of its refusal: SGLang's rule for
# them is not traced, so there is nothing to compare. Every other bundled model is compared.
REFUSED = {
    # fits no H200 node at TP 8: SGLang itself stops (kv_cache_configurator.py:3041-3058), so
    # there is no pool to compare; its state pool is the same code as Nemotron-H's, compared
    "nemotron-3-ultra-550b-a55b": "leave no GPU memory",
    "llama-3.3-nemotron-super-49b": "layers that keep no cache",
    # in bf16 weights GLM-5 fits no H200 node either: its DSA pool is compared at a fixed
    # budget below (test_dsa_pool_at_a_fixed_budget)
    "glm-5": "leave no GPU memory",
    "glm-5.2": "leave no GPU memory",
    "gemma-3n-e4b": "layers that keep no cache",
}
# DeepSeek V4: its own configurator (DSV4PoolConfigurator), compared field by field below
V4 = ("deepseek-v4-flash", "deepseek-v4-pro")
COMPARED = sorted(set(BUNDLED) - set(REFUSED) - set(V4))


def _wheel():
    found = sorted(glob.glob(os.environ.get("KVLIB_SGLANG_WHEEL", "")) or
                   glob.glob(str(ROOT / "build" / "oracle" / "sglang-0.5.23-*.whl")))
    if not found:
        if os.environ.get("KVLIB_REQUIRE_ORACLE"):
            pytest.fail("the SGLang 0.5.23 wheel is missing: run make oracle")
        pytest.skip("the SGLang 0.5.23 wheel is not in build/oracle (make oracle)")
    return found[0]


@cache
def _source(path: str) -> str:
    with zipfile.ZipFile(_wheel()) as z:
        return z.read(path).decode()


# -- running SGLang's source without SGLang: imports of sglang.* and torch get stand-ins ---------

class _Missing:
    """A name SGLang imports that no stand-in was given for: using it fails the test loudly."""

    def __init__(self, name):
        self._name = name

    def __call__(self, *a, **k):
        raise AssertionError(f"SGLang's code reached {self._name}, which the oracle has no "
                             "stand-in for: this model takes a path the oracle does not cover")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")


class _Module(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self.__name__}.{attr}")


def _namespace(stubs: dict) -> dict:
    """Globals whose ``import`` of torch or sglang.* returns the stand-in modules in ``stubs``
    (module name -> dict of names); everything else imports as usual."""
    real = builtins.__import__

    def module(name):
        m = _Module(name)
        for k, v in stubs.get(name, {}).items():
            setattr(m, k, v)
        return m

    def imp(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "torch" or name.startswith(("torch.", "sglang")):
            return module(name if fromlist else name.split(".")[0])
        return real(name, globals, locals, fromlist, level)

    return {"__builtins__": {**vars(builtins), "__import__": imp}, "__name__": __name__}


def _node(path: str, name: str, cls: str | None = None):
    tree = ast.parse(_source(path))
    scope = tree.body
    if cls is not None:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))
                and (getattr(n, "name", None) == name or any(
                    getattr(t, "id", None) == name for t in getattr(n, "targets", ()))))


def _lift(path: str, names, ns: dict, cls: str | None = None) -> dict:
    """Define ``names`` (functions, classes or assignments of ``path``, or methods of ``cls``)
    in ``ns`` as SGLang's wheel defines them; annotations are left unevaluated."""
    body = [_node(path, n, cls) for n in ([names] if isinstance(names, str) else names)]
    for n in body:
        if isinstance(n, ast.FunctionDef):
            n.decorator_list = [d for d in n.decorator_list
                                if getattr(d, "id", None) == "staticmethod"]
    module = ast.Module(body=[ast.ImportFrom("__future__", [ast.alias("annotations")], 0)]
                        + body, type_ignores=[])
    exec(compile(ast.fix_missing_locations(module), f"sglang-0.5.23/{path}", "exec"), ns)  # noqa: S102
    return ns


def _function(path: str, name: str, cls: str | None = None, env: dict | None = None):
    """The function ``name`` (a method of ``cls``) as SGLang's wheel defines it."""
    ns = _namespace({})
    ns.update(env or {})
    return _lift(path, name, ns, cls)[name]


class _Dtype:
    def __init__(self, name, itemsize):
        self.name, self.itemsize = name, itemsize


BF16 = _Dtype("bfloat16", 2)
TORCH = {"bfloat16": BF16, "float16": _Dtype("float16", 2), "int64": "int64",
         "float32": _Dtype("float32", 4), "uint8": _Dtype("uint8", 1),
         "float8_e4m3fn": _Dtype("float8_e4m3fn", 1),
         "_utils": types.SimpleNamespace(_element_size=lambda d: d.itemsize),
         "iinfo": lambda t: types.SimpleNamespace(max=2 ** 63 - 1)}
TORCH_NS = types.SimpleNamespace(**TORCH)
ENVS = types.SimpleNamespace(  # sglang/srt/environ.py defaults read on these paths
    SGLANG_NPU_ENABLE_SPARSE_KV_OFFLOAD=types.SimpleNamespace(get=lambda: False),
    SGLANG_ENABLE_POST_CAPTURE_KV_SIZING=types.SimpleNamespace(get=lambda: False),  # :640
    SGLANG_VLM_CACHE_SIZE_MB=types.SimpleNamespace(get=lambda: 100),  # :1598
    SGLANG_MM_FEATURE_CACHE_MB=types.SimpleNamespace(get=lambda: 1024),  # :1622
    SGLANG_OPT_USE_ONLINE_COMPRESS=types.SimpleNamespace(get=lambda: False),  # :1830
    SGLANG_EXPERIMENTAL_ONLINE_C128_MTP=types.SimpleNamespace(get=lambda: False),
    SGLANG_DSV4_COMPRESS_STATE_DTYPE=types.SimpleNamespace(get=lambda: "float32"))  # :1832
MC = "sglang/srt/configs/model_config.py"
PC = "sglang/srt/model_executor/pool_configurator.py"
KC = "sglang/srt/mem_cache/kv_cache_configurator.py"


@cache
def _model_config_functions() -> dict:
    """SGLang's config readers (configs/model_config.py), lifted."""
    ns = _namespace({"sglang.srt.configs.dots3": {"Dots3Config": type("Dots3Config", (), {})}})
    ns.update(IntEnum=enum.IntEnum, auto=enum.auto, Optional=None, List=None,
              envs=types.SimpleNamespace(SGLANG_EXTERNAL_MM_MODEL_ARCH=types.SimpleNamespace(
                  get=lambda: None)),
              PretrainedConfig=None, logger=types.SimpleNamespace(debug=print, info=print),
              compute_mla_mscale_scaling=lambda rope, s: s, math=__import__("math"))
    _lift(MC, ["AttentionArch", "PURE_MAMBA1_ARCHITECTURES", "PURE_SSM_ARCHITECTURES",
               "MIMO_V2_MODEL_ARCHS", "MIMO_V2_MULTIMODAL_ARCHS", "multimodal_model_archs",
               "multimodal_breakable_cuda_graph_supported_model_archs", "is_multimodal_model",
               "is_multimodal_breakable_cuda_graph_supported", "SWA_SINK_ARCHS", "_hf_arch",
               "_hf_attr",
               "is_deepseek_dsa", "is_deepseek_v4", "is_minimax_sparse", "get_dsa_index_head_dim",
               "get_dsa_index_kpool", "dsa_layer_skips_topk",
               "resolve_spec_hidden_size", "is_hybrid_swa_model", "get_hybrid_layer_ids"], ns)
    ns["ModelConfig"] = type("ModelConfig", (), {})
    methods = ["_derive_model_shapes", "_derive_hybrid_model", "_detect_attention_sinks",
               "_init_mla_scaling", "get_total_num_kv_heads", "get_num_kv_heads",
               "get_swa_num_kv_heads", "_get_sliding_window_size"]
    _lift(MC, methods, ns, cls="ModelConfig")
    for m in methods:
        setattr(ns["ModelConfig"], m, ns.pop(m))
    return ns


# transformers' attribute_map for the two bundled families whose config.json names differ
# (FalconConfig, GPT2Config); SGLang reads the configs through transformers, which maps them
_ALIASES = {"falcon": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
            "gpt2": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer",
                     "hidden_size": "n_embd", "max_position_embeddings": "n_positions"}}


def _hf(d: dict, model_type: str | None) -> types.SimpleNamespace:
    d = {k: v for k, v in d.items()}
    for attr, key in _ALIASES.get(model_type, {}).items():
        if key in d and attr not in d:
            d[attr] = d[key]
    return types.SimpleNamespace(**d)


FIXTURES = ROOT / "tests" / "fixtures" / "configs"


def _raw(name: str) -> dict:
    """A bundled model's config.json, or a published one in tests/fixtures/configs."""
    if name in BUNDLED:
        return bundled_config(name)
    return json.loads((FIXTURES / f"{name}.json").read_text())


def sglang_model_config(name: str, repo: str):
    """SGLang's ModelConfig for a bundled config.json, as far as pool sizing reads it: its
    own _derive_model_shapes and _derive_hybrid_model run over stand-in HF configs (the
    config.json keys as attributes; the text_config for a multimodal one, as
    get_hf_text_config picks it)."""
    ns = _model_config_functions()
    raw = _raw(name)
    mc = ns["ModelConfig"]()
    mc.hf_config = _hf(raw, raw.get("model_type"))
    text = raw.get("text_config")
    mc.hf_text_config = _hf(text, text.get("model_type")) if text else mc.hf_config
    if text:
        mc.hf_config.text_config = mc.hf_text_config
    if raw.get("model_type") in _TRANSFORMERS:
        mc.hf_config = _transformers_config(raw)
        mc.hf_text_config = mc.hf_config.text_config
    elif "vision_config" in raw:
        mc.hf_config.vision_config = _vision_config(raw)
    if raw.get("model_type") == "deepseek_v4":
        # stand-in: SGLang's DeepSeekV4Config default for a key the published config.json
        # lacks (configs/deepseek_v4.py:106; the transformers alias: ())
        mc.hf_config.kv_source_layer_ids = []
    mc.model_path, mc.is_draft_model, mc.disable_hybrid_swa_memory = repo, False, False
    mc.is_multimodal = _is_multimodal(mc, ns)
    mc.context_len = CONTEXT
    mc._derive_model_shapes()
    mc._derive_hybrid_model()
    mc.sliding_window_size = mc._get_sliding_window_size()
    return mc, ns


def _is_multimodal(mc, ns) -> bool:
    """ModelConfig.is_multimodal (configs/model_config.py:820-828) with enable_multimodal at
    its default. Stand-in: the default's rule (:690-717, inside ModelConfig.__init__, which
    reads the checkpoint) is restated here; is_multimodal_model is SGLang's, lifted."""
    archs = mc.hf_config.architectures
    enable = not (archs[0] in ("Gemma3ForConditionalGeneration",
                               "Llama4ForConditionalGeneration",
                               "Step3VLForConditionalGeneration",
                               "InklingForConditionalGeneration")
                  or archs[0] in ns["MIMO_V2_MULTIMODAL_ARCHS"] and not (
                      hasattr(mc.hf_config, "vision_config")
                      and hasattr(mc.hf_config, "audio_config")))
    lm_only = getattr(mc.hf_config, "language_model_only", False)
    subconfig = mc.hf_config is not mc.hf_text_config  # :808-815, model_impl auto
    mc.is_multimodal_breakable_cuda_graph_supported = enable and ns[
        "is_multimodal_breakable_cuda_graph_supported"](archs)  # :1006-1008
    return enable and not lm_only and (ns["is_multimodal_model"](archs) or subconfig)


# the configs read through transformers' own classes (kvlib's environment holds transformers
# 5.25.0; SGLang 0.5.23 pins 5.19.0): Gemma 3's config.json leaves defaults to its class (no
# vocab_size in text_config); Gemma 4's per-layer head sizes are built by its class
_TRANSFORMERS = ("gemma3", "gemma4", "qwen3_vl", "qwen3_vl_moe")  # Qwen3-VL: SGLang registers
# no config class of its own (utils/hf_transformers/common.py:117-175)


def _transformers_config(raw: dict):
    """The config as SGLang reads it: transformers' Gemma3Config / Gemma4Config; for Gemma 4
    then SGLang's own _apply_gemma4_attention_overrides (utils/hf_transformers/config.py:
    115-150, applied at :312), lifted, which moves the full layers' head size and KV heads into
    head_dim / num_key_value_heads and the sliding layers' into swa_head_dim /
    swa_num_key_value_heads."""
    import transformers

    config = transformers.AutoConfig.for_model(**raw)
    if raw["model_type"] != "gemma4":
        return config
    path = "sglang/srt/utils/hf_transformers/config.py"
    ns = _lift(path, ["_GEMMA4_FLATTENED_PER_LAYER_ATTRS", "_gemma4_attention_shapes",
                      "_apply_gemma4_attention_overrides"], _namespace({}))
    ns["_apply_gemma4_attention_overrides"](config)
    return config


def _vision_config(raw: dict):
    """The vision_config SGLang's adjust_mem_fraction_for_vlm reads: Qwen3.5's through SGLang's
    own Qwen3VLVisionConfig (configs/qwen3_vl.py, run whole), Kimi K2.5's through
    SGLang's own KimiK25VisionConfig (configs/kimi_k25.py, lifted; its PretrainedConfig base
    a stand-in that keeps what it is given), which takes no vt_* key and so keeps its defaults;
    any other as its config.json keys (what transformers' vision configs hold)."""
    vision = raw["vision_config"]
    if raw["architectures"][0] in ("Qwen3_5ForConditionalGeneration",
                                   "Qwen3_5MoeForConditionalGeneration"):
        # SGLang's Qwen3_5Config builds it (configs/qwen3_5.py:7-12, 93-96): Qwen3VLVisionConfig
        return _run_module("sglang/srt/configs/qwen3_vl.py", {})["Qwen3VLVisionConfig"](**vision)
    if raw["architectures"][0] == "KimiK25ForConditionalGeneration":
        class Base:
            def __init__(self, **kw):
                self.__dict__.update(kw)
        ns = _namespace({})
        ns["PretrainedConfig"] = Base
        cls = _lift("sglang/srt/configs/kimi_k25.py", "KimiK25VisionConfig", ns)[
            "KimiK25VisionConfig"]
        return cls(**vision)
    return types.SimpleNamespace(**vision)


def _layer_info(mc) -> types.SimpleNamespace:
    """layer_setup.resolve_layer_indices without pipeline parallelism: every layer of
    _compute_model_num_layers on this rank, the hybrid split restricted to them."""
    path = "sglang/srt/model_executor/model_runner_components/layer_setup.py"
    ns = _lift(path, ["_compute_model_num_layers", "_get_loop_num",
                      "_resolve_local_hybrid_swa_layer_ids"], _namespace({}))
    n = ns["_compute_model_num_layers"](model=None, model_config=mc, is_draft_worker=False)
    swa, full = ns["_resolve_local_hybrid_swa_layer_ids"](model_config=mc,
                                                         owned_layers=range(0, n))
    return types.SimpleNamespace(start_layer=0, end_layer=n,
                                 num_effective_layers=n * ns["_get_loop_num"](mc.hf_config),
                                 swa_attention_layer_ids=swa, full_attention_layer_ids=full)


def sglang_mem_fraction(mc, gpu_mib: float, tp: int) -> float:
    """mem_fraction_static as SGLang's handle_gpu_memory_settings sets it when none is given:
    a single node, CUDA graphs at their defaults (decode on, prefill breakable), no
    speculative decoding, DP attention or DeepEP."""
    backend = types.SimpleNamespace(DISABLED="disabled", FULL="full", BREAKABLE="breakable")
    mla = mc.attention_arch == _model_config_functions()["AttentionArch"].MLA
    cfg = types.SimpleNamespace(
        device="cuda", tp_size=tp, pp_size=1, chunked_prefill_size=None,
        max_running_requests=None, mem_fraction_static=None, max_total_tokens=None,
        model_path=mc.model_path, disable_cuda_graph_padding=False, speculative_algorithm=None,
        speculative_num_draft_tokens=None, disaggregation_mode="null", language_only=False,
        language_model_only=False, max_prefill_tokens=16384, enable_symm_mem=False,
        moe_a2a_backend="none", attn_dp_size=1, torch_compile_max_bs=None,
        _cuda_graph_config_locked=set(),
        cuda_graph_config=types.SimpleNamespace(
            decode=types.SimpleNamespace(max_bs=None, bs=None, backend=backend.FULL),
            prefill=types.SimpleNamespace(max_bs=None, bs=None, backend=(
                # cuda_graph_hook.py:229-238, restated: a multimodal architecture not
                # allowlisted gets no prefill graph (apply_cuda_graph_compatibility runs
                # before handle_gpu_memory_settings, arg_groups/resolution_hooks.py:44-52)
                backend.DISABLED if mc.is_multimodal
                and not mc.is_multimodal_breakable_cuda_graph_supported
                else backend.BREAKABLE))))
    hook = "sglang/srt/arg_groups/cuda_graph_hook.py"
    graphs = _lift(hook, ["generate_decode_cuda_graph_batch_sizes",
                          "generate_prefill_cuda_graph_batch_sizes"],
                   {**_namespace({}), "resolving_view": lambda s: s})
    ns = _namespace({
        "sglang.srt.arg_groups.cuda_graph_hook": {
            "generate_decode_cuda_graph_batch_sizes":
                graphs["generate_decode_cuda_graph_batch_sizes"],
            "generate_prefill_cuda_graph_batch_sizes":
                graphs["generate_prefill_cuda_graph_batch_sizes"]},
        "sglang.srt.arg_groups.model_overrides.qwen3_vl": {
            "expand_multimodal_decode_graph_to_running_limit": lambda *a: None}})
    ns.update(resolving_view=lambda s: s, resolved_view=lambda s: s,
              declare_resolution=lambda s, who, **kw: [setattr(s, k, v) for k, v in kw.items()],
              model_config_of=lambda s: mc, use_mla_backend=lambda s: mla,
              post_capture_kv_sizing_planned=lambda s: False, envs=ENVS, Backend=backend,
              Phase=types.SimpleNamespace(PREFILL="prefill"),
              attn_dp_enabled_of=lambda s: False,
              get_platform=lambda: types.SimpleNamespace(is_xpu=False),
              get_device_memory_capacity=lambda device: gpu_mib, copy=copy,
              _DEFAULT_PP_PREFILL_CUDA_GRAPH_MAX_TOKENS=8192)
    _lift("sglang/srt/arg_groups/memory_hook.py",
          ["handle_gpu_memory_settings", "reserve_for_graph_mb", "reserve_for_deepep_a2a_mb",
           "adjust_mem_fraction_for_vlm"],
          ns)
    ns["handle_gpu_memory_settings"](cfg)
    return cfg.mem_fraction_static


class _Env:
    """An environment variable of sglang/srt/environ.py at its default, settable."""

    def __init__(self, default):
        self.value, self.set_ = default, False

    def get(self):
        return self.value

    def is_set(self):
        return self.set_

    def set(self, value):
        self.value, self.set_ = value, True


def _mm_serving_defaults(mc, gpu_mib: float):
    """(envs, mm_feature_transport) after Qwen3-VL's profiled Hopper defaults
    (model_overrides/qwen3_vl.py: large_hopper_qwen3_vl_model_type and
    _qwen3vl_hopper_serving_overrides, lifted; stand-ins: is_sm90_supported() True, the H200
    being SM90, one node) for its architectures; for the others the defaults (no transport)."""
    envs = types.SimpleNamespace(SGLANG_VLM_CACHE_SIZE_MB=_Env(100),  # environ.py:1598
                                 SGLANG_MM_FEATURE_CACHE_MB=_Env(1024))  # environ.py:1622
    if mc.hf_config.architectures[0] not in ("Qwen3VLForConditionalGeneration",
                                             "Qwen3VLMoeForConditionalGeneration"):
        return envs, None
    ns = _namespace({})
    ns.update(resolving_view=lambda s: s, model_config_of=lambda s: mc, envs=envs,
              get_device_memory_capacity=lambda device: gpu_mib, is_sm90_supported=lambda: True,
              logger=types.SimpleNamespace(info=lambda *a: None), Optional=None, Any=object)
    _lift("sglang/srt/arg_groups/model_overrides/qwen3_vl.py",
          ["_HOPPER_QWEN3_VL_TYPES", "large_hopper_qwen3_vl_model_type",
           "_qwen3vl_hopper_serving_overrides"], ns)
    cfg = types.SimpleNamespace(
        device="cuda", mm_preprocess_cache_size_mb=None, mm_feature_transport=None, nnodes=1,
        max_running_requests=None, radix_eviction_policy="lru",
        _radix_eviction_policy_explicitly_set=False, prefill_decode_interval=None,
        attention_backend=None, decode_attention_backend=None)
    updates = ns["_qwen3vl_hopper_serving_overrides"](cfg, mc.hf_config)
    return envs, updates.get("mm_feature_transport")


def sglang_plan(name: str, tp: int, free_before: int, weights: int,
                budget: int | None = None, fp8: bool = False) -> dict:
    """What SGLang 0.5.23 logs and schedules for bundled model ``name`` on one H200 rank of
    TP ``tp``, given the free memory before the weights and the weights (bytes); ``budget``:
    size the pools from this many bytes instead of the profiled budget (a model too large for
    the node); fp8: --kv-cache-dtype fp8_e4m3 (DSA's backends then flashmla_kv, restated from
    overrides.py:712-720)."""
    gpu = get_gpu(GPU)
    mc, mns = sglang_model_config(name, BUNDLED[name].repo if name in BUNDLED else name)
    fraction = sglang_mem_fraction(mc, gpu.reported_bytes / MiB, tp)
    layer_info = _layer_info(mc)
    world = tp

    def available_gb(free: int, distributed: bool) -> float:
        # utils/common.py get_available_gpu_memory: free bytes / 2^30, the minimum over the
        # ranks all-reduced as a float32 tensor when distributed
        return (_float32(free) if distributed else free) / (1 << 30)

    parallel = types.SimpleNamespace(attn_tp_size=tp, attn_dcp_size=1, attn_cp_size=1,
                                     launch_world_size=world, tp_size=tp,
                                     world_group=types.SimpleNamespace(cpu_group=None))
    v4 = mns["is_deepseek_v4"](mc.hf_config)
    schedule = types.SimpleNamespace(
        mem_fraction_static=fraction, max_total_tokens=None, max_running_requests=None,
        swa_full_tokens_ratio=0.8,  # arg_groups/fields/schedule.py:160
        _swa_full_tokens_ratio_explicitly_set=False, swa_prefix_tails=None,
        prefill_max_requests=None, max_mamba_cache_size=None,
        mamba_full_memory_ratio=0.9,  # arg_groups/fields/schedule.py:220-227 (fallback)
        disable_overlap_schedule=False)
    if v4:
        # DeepSeek V4's defaults, restated: swa_full_tokens_ratio 0.1 (model_overrides/
        # deepseek_v4.py:44-49), declared by handle_model_specific_adjustments
        # (arg_groups/pipeline.py:225; model_hook.py:193-202) before handle_cache_compatibility
        # records it as set (pipeline.py:334; kv_cache_hook.py:415-420); max_running_requests
        # 256 (deepseek_v4_hook.py:138-146)
        schedule.swa_full_tokens_ratio, schedule._swa_full_tokens_ratio_explicitly_set = 0.1, True
        schedule.max_running_requests = 256
    memory = types.SimpleNamespace(enable_hisparse=False, enable_unified_memory=False,
                                   disable_radix_cache=False,
                                   enable_unified_cache_external_linker=False)
    disagg = types.SimpleNamespace(disaggregation_mode="null", disaggregation_decode_extra_slots=0)
    runtime = {"get_parallel": lambda: parallel, "get_schedule": lambda: schedule,
               "get_memory": lambda: memory, "get_disagg": lambda: disagg,
               **_dsv4_runtime()}
    raw = _raw(name)
    mamba = _mamba_config(raw, tp) if raw["architectures"][0] in _STATE_CONFIGS else None
    if mamba is not None and hasattr(mamba, "text_config"):
        mamba = mamba.get_text_config()  # configs/hybrid_arch.py hybrid_gdn_config
    common = _lift("sglang/srt/utils/common.py", ["ceil_div", "ceil_align"], _namespace({}))
    cp = _lift("sglang/srt/layers/cp/utils.py", "get_glm_dsa_layer_split_effective_num_layers",
               _namespace({}))
    cp.update(is_glm_dsa_cache_layer_split_enabled=lambda kvc: False, get_parallel=runtime[
        "get_parallel"])
    qsa = _lift("sglang/srt/layers/attention/qsa/config.py", ["_text_config",
                                                              "parse_qsa_profile"], _namespace({}))
    # DSATokenToKVPool's class constants as the wheel defines them (memory_pool.py:5279-5282),
    # its base a stand-in
    dsa_pool = _lift("sglang/srt/mem_cache/memory_pool.py", "DSATokenToKVPool",
                     {**_namespace({}), "torch": TORCH_NS, "MLATokenToKVPool": object})[
        "DSATokenToKVPool"]
    # the DSA backends at their H200 bf16 default, restated from arg_groups/overrides.py:721-726
    # (flashmla_sparse prefill, fa3 decode: neither trtllm nor tilelang)
    kernel = types.SimpleNamespace(dsa_prefill_backend="flashmla_kv" if fp8 else
                                   "flashmla_sparse",
                                   dsa_decode_backend="flashmla_kv" if fp8 else "fa3")
    kv_dtype = TORCH["float8_e4m3fn"] if fp8 else BF16
    kvc_ns = _namespace({})
    kvc_ns.update(is_deepseek_dsa=mns["is_deepseek_dsa"], ModelConfig=None, torch=TORCH_NS,
                  get_disagg=runtime["get_disagg"], _is_hip=False, _is_npu=False,
                  get_exec=lambda: types.SimpleNamespace(kernel=kernel),
                  get_memory=runtime["get_memory"], DSATokenToKVPool=dsa_pool)
    _lift(KC, ["calculate_mla_kv_cache_dim", "mm_runtime_reservation_gb",
               "_should_elide_dsa_index_k"], kvc_ns)
    mm_envs, transport = _mm_serving_defaults(mc, gpu.reported_bytes / MiB)
    kvc_ns.update(envs=mm_envs, logger=types.SimpleNamespace(info=lambda *a: None))
    cp_more = _lift("sglang/srt/layers/cp/utils.py", ["get_glm_dsa_cp_layer_shard_info",
                                                      "get_layer_shard_range"], _namespace({}))
    cp_more.update(is_glm_dsa_cache_layer_split_enabled=lambda kvc: False)
    stubs = {
        "torch": TORCH,
        "sglang.srt.arg_groups.overrides": {"resolving_view": lambda s: s},
        "sglang.srt.configs.hybrid_arch": {"mambaish_config": lambda mc: mamba},
        "sglang.srt.configs.model_config": {
            k: mns[k] for k in ("AttentionArch", "is_deepseek_dsa", "is_deepseek_v4",
                                "is_minimax_sparse", "get_dsa_index_head_dim",
                                "get_dsa_index_kpool", "dsa_layer_skips_topk")},
        "sglang.srt.mem_cache.memory_pool": {"DSATokenToKVPool": dsa_pool},
        "sglang.srt.environ": {"envs": ENVS},
        # logical-page KV sharding is off by default: no scratch
        "sglang.srt.mem_cache.page_interleave": {
            "compute_page_shard_scratch_bytes": lambda kvc, include_mtp: 0},
        "sglang.srt.runtime_context": runtime,
        "sglang.srt.utils.common": {
            "ceil_div": common["ceil_div"], "ceil_align": common["ceil_align"],
            "is_float4_e2m1fn_x2": lambda dtype: False, "is_hip": lambda: False,
            "is_npu": lambda: False},
        "sglang.srt.layers.cp.utils": {
            "get_glm_dsa_layer_split_effective_num_layers":
                cp["get_glm_dsa_layer_split_effective_num_layers"],
            "get_glm_dsa_cp_layer_shard_info": cp_more["get_glm_dsa_cp_layer_shard_info"],
            "get_layer_shard_range": cp_more["get_layer_shard_range"]},
        "sglang.srt.layers.attention.qsa.config": {"parse_qsa_profile": qsa["parse_qsa_profile"]},
        "sglang.srt.mem_cache.kv_cache_configurator": {
            "calculate_mla_kv_cache_dim": kvc_ns["calculate_mla_kv_cache_dim"],
            "_should_elide_dsa_index_k": kvc_ns["_should_elide_dsa_index_k"]},
        **_dsv4_modules(runtime),
    }
    # the page: 64 x index_kpool for DSA on CUDA, restated from model_overrides/deepseek_v2.py:
    # 161-173; otherwise 1 (overrides.py:1341-1362)
    page = (64 * mns["get_dsa_index_kpool"](mc.hf_config)
            if mns["is_deepseek_dsa"](mc.hf_config) else 1)
    if v4:
        page = 256  # DeepSeek V4 on CUDA, restated from model_overrides/deepseek_v4.py:51
    schedule.page_size = page
    pool_ns = _namespace(stubs)
    exec(compile(_source(PC), f"sglang-0.5.23/{PC}", "exec"), pool_ns)  # noqa: S102
    never = types.SimpleNamespace(is_eagle=lambda: False, is_standalone=lambda: False,
                                  is_none=lambda: True, is_dspark=lambda: False,
                                  is_dflash_family=lambda: False)
    kvc = types.SimpleNamespace(
        model_config=mc, kv_cache_dtype=kv_dtype,
        kv_cache_dtype_str="fp8_e4m3" if fp8 else "bfloat16", model_dtype=BF16,
        server_args=types.SimpleNamespace(enable_hisparse=False), layer_info=layer_info,
        use_mla_backend=mc.attention_arch == mns["AttentionArch"].MLA,
        is_hybrid_swa=mc.is_hybrid_swa, sliding_window_size=mc.sliding_window_size,
        page_size=page, spec_algorithm=never, is_draft_worker=False, pp_size=1, attn_dp_size=1,
        mambaish_config=mamba, post_capture_kv_active=False, device="cuda", gpu_id=0,
        fused_entry_bytes=lambda kind: None, hybrid_gdn_config=mamba, hybrid_kda_config=None,
        extra_mamba_cache_bytes_per_req=0)
    if mamba is not None:
        _mamba_methods(kvc, schedule, memory, _mamba_settings(mc))
    configurator = pool_ns["create_memory_pool_configurator"](kvc)

    # the budget: KVCacheConfigurator._profile_available_bytes, pre_model_load_memory as
    # distributed/bootstrap.py measure_pre_model_load_memory takes it
    profile_ns = _namespace({})
    profile_ns.update(
        gc=types.SimpleNamespace(collect=lambda: None), math=__import__("math"),
        get_available_gpu_memory=lambda device, gpu_id, distributed=False, cpu_group=None:
            available_gb(free_before - weights, distributed),
        get_parallel=runtime["get_parallel"], get_schedule=runtime["get_schedule"],
        get_disagg=runtime["get_disagg"],
        get_exec=lambda: types.SimpleNamespace(graph=types.SimpleNamespace(
            cuda_graph_config=types.SimpleNamespace(prefill=types.SimpleNamespace(
                full_prefill_max_req=None, backend="breakable")))),
        Backend=types.SimpleNamespace(FULL="full"),
        mm_runtime_reservation_gb=kvc_ns["mm_runtime_reservation_gb"],
        get_mm=lambda: types.SimpleNamespace(mm_feature_transport=transport))
    profile = _lift(KC, "_profile_available_bytes", profile_ns, cls="KVCacheConfigurator")[
        "_profile_available_bytes"]
    if budget is None:
        budget = profile(kvc, pre_model_load_memory=available_gb(free_before, world > 1))
    config = configurator.calculate_pool_sizes(budget, kvc.page_size)
    resolve = _function(KC, "resolve_max_num_reqs", cls="KVCacheConfigurator",
                        env={"get_schedule": lambda: schedule,
                             "logger": types.SimpleNamespace(warning=lambda *a: None)})
    kvc.model_config.context_len = CONTEXT
    running = resolve(kvc, config.max_total_num_tokens)
    out = {"fraction": fraction, "budget": budget,
           "cell": getattr(configurator, "_cell_size", None),
           "tokens": config.max_total_num_tokens, "swa_tokens": config.swa_max_total_num_tokens,
           "running": running, "hybrid": mc.is_hybrid_swa, "page": page,
           "slots": schedule.max_mamba_cache_size,
           "state": mamba.mamba2_cache_params.mamba_cache_per_req if mamba else None}
    if v4:  # DSV4PoolConfigurator's own figures, and its finalize step (kv_cache_configurator.
        # py:3182-3189)
        config.max_running_requests = running
        config = configurator.finalize_with_max_running_requests(config)
        out.update(cell=configurator.bytes_per_full_token,
                   swa_cell=configurator.bytes_per_swa_token,
                   c128_state=configurator._get_c128_state_fixed_bytes(running),
                   c4_tokens=config.c4_max_total_num_tokens,
                   c128_tokens=config.c128_max_total_num_tokens,
                   c4_state_rows=config.c4_state_pool_size,
                   c128_state_rows=config.c128_state_pool_size,
                   entry=configurator.kv_bytes, layers=configurator.num_layers_total,
                   c4_layers=configurator.num_layers(4),
                   c128_layers=configurator.num_layers(128))
    return out


def _dsv4_runtime() -> dict:
    """runtime_context's names DSV4PoolConfigurator reads, at a launch's defaults on an H200.
    Stand-ins: get_exec (the kernel's dsv4_attn_backend "flashmla", what
    _default_dsv4_attention_backend picks for model_type deepseek_v4, arg_groups/
    deepseek_v4_hook.py:45-60, restated; encoder SWA replay off, fields/exec_.py:165-169), no
    speculative decoding (get_spec, max_speculative_num_draft_tokens)."""
    kernel = types.SimpleNamespace(dsv4_attn_backend="flashmla",
                                   enable_deepseek_v4_fp4_indexer=False)
    features = types.SimpleNamespace(enable_encoder_swa_bounded_replay=False)
    return {"get_exec": lambda: types.SimpleNamespace(kernel=kernel, features=features),
            "get_spec": lambda: types.SimpleNamespace(speculative_algorithm=None,
                                                      speculative_num_draft_tokens=None),
            "max_speculative_num_draft_tokens": lambda: None}


DV4 = "sglang/srt/mem_cache/deepseek_v4_memory_pool.py"


def _dsv4_modules(runtime: dict) -> dict:
    """The DeepSeek V4 pool's helpers as the wheel defines them: deepseek_v4_memory_pool.py's
    sizing functions and layouts and layers/attention/dsv4/unified_kv_gate.py, lifted;
    kernels/ops/attention/dsv4/kv_layout.py (KVLayout) run whole. Stand-ins: the environment
    at its defaults (SGLANG_DSV4_KV_LAYOUT "v4", SGLANG_DSV4_COMPRESSED_KV_LAYOUT "auto",
    SGLANG_OPT_USE_ONLINE_COMPRESS off, environ.py:1754-1757, 1830), is_hip() False (CUDA)."""
    layout = _run_module("sglang/kernels/ops/attention/dsv4/kv_layout.py", {})
    envs = types.SimpleNamespace(
        SGLANG_DSV4_KV_LAYOUT=_Env("v4"), SGLANG_DSV4_COMPRESSED_KV_LAYOUT=_Env("auto"),
        SGLANG_HACK_FLASHMLA_BACKEND=_Env("auto"), SGLANG_DSV4_UNIFIED_KV_FP8=_Env(False))
    gate = _lift("sglang/srt/layers/attention/dsv4/unified_kv_gate.py",
                 ["is_unified_kv_triton", "is_unified_kv_fp8"],
                 {**_namespace({}), "envs": envs, "is_hip": lambda: False,
                  "is_gfx95_supported": lambda: False})
    ns = _namespace({"sglang.srt.layers.attention.dsv4.unified_kv_gate": {
        "is_unified_kv_fp8": gate["is_unified_kv_fp8"]}})
    ns.update(envs=envs, get_exec=runtime["get_exec"], get_spec=runtime["get_spec"],
              KVLayout=layout["KVLayout"], _is_hip=False, ONLINE_C128=False,
              ceil_div=lambda a, b: -(-a // b), Sequence=list, List=list, Optional=None,
              Tuple=tuple, Union=None)
    _lift(DV4, ["get_dsv4_indexer_bytes_per_token", "get_compress_state_ring_size",
                "resolve_compress_state_ring_size", "collect_sources_by_ratio",
                "get_compress_state_write_pad", "uses_draft_swa_ring", "get_draft_swa_ring_size",
                "get_swa_ring_size", "resolve_compressed_kv_layout", "select_dsv4_kv_layout",
                "dsv4_unified_row_bytes"], ns)
    names = ("collect_sources_by_ratio", "get_compress_state_write_pad",
             "get_draft_swa_ring_size", "get_dsv4_indexer_bytes_per_token", "get_swa_ring_size",
             "resolve_compress_state_ring_size", "uses_draft_swa_ring",
             "resolve_compressed_kv_layout", "select_dsv4_kv_layout", "dsv4_unified_row_bytes")
    return {DV4.replace("/", ".")[:-3]: {k: ns[k] for k in names},
            "sglang.srt.layers.attention.dsv4.unified_kv_gate": {
                "is_unified_kv_triton": gate["is_unified_kv_triton"],
                "is_unified_kv_fp8": gate["is_unified_kv_fp8"]}}


MU = "sglang/srt/configs/mamba_utils.py"


# the state-pool architectures the oracle builds SGLang's own config class for
QN = "sglang/srt/configs/qwen3_next.py"
_STATE_CONFIGS = {"Qwen3NextForCausalLM": (QN, "Qwen3NextConfig"),
                  "NemotronHForCausalLM": ("sglang/srt/configs/nemotron_h.py", "NemotronHConfig"),
                  "Qwen3_5ForConditionalGeneration": ("sglang/srt/configs/qwen3_5.py",
                                                      "Qwen3_5Config"),
                  "Qwen3_5MoeForConditionalGeneration": ("sglang/srt/configs/qwen3_5.py",
                                                         "Qwen3_5MoeConfig")}


def _run_module(path: str, stubs: dict) -> dict:
    """A module of the wheel run whole, its sglang.* imports given ``stubs``."""
    ns = _namespace(stubs)
    exec(compile(_source(path), f"sglang-0.5.23/{path}", "exec"), ns)  # noqa: S102
    return ns


def _mamba_config(raw: dict, tp: int):
    """SGLang's Qwen3NextConfig or NemotronHConfig over the config.json: configs/qwen3_next.py
    or configs/nemotron_h.py and configs/mamba_utils.py, each run whole from the wheel, with
    transformers' PretrainedConfig (kvlib's environment, 5.25.0). Stand-ins: torch's dtypes
    (their itemsize), the environment at its defaults (SGLANG_MAMBA_CONV_DTYPE bfloat16,
    SGLANG_MAMBA_SSM_DTYPE unset, environ.py:1628-1629), linear_attn_tp_size() and
    get_parallel().attn_tp_size = TP (no attention DP or CP), is_cpu() False; divide is
    SGLang's (distributed/utils.py), lifted."""
    envs = types.SimpleNamespace(
        SGLANG_MAMBA_CONV_DTYPE=types.SimpleNamespace(get=lambda: "bfloat16"),
        SGLANG_MAMBA_SSM_DTYPE=types.SimpleNamespace(get=lambda: None))
    dist = _lift("sglang/srt/distributed/utils.py", ["ensure_divisibility", "divide"],
                 _namespace({}))
    mu = _namespace({"torch": TORCH, "sglang.srt.distributed.utils": {"divide": dist["divide"]},
                     "sglang.srt.environ": {"envs": envs}})
    exec(compile(_source(MU), f"sglang-0.5.23/{MU}", "exec"), mu)  # noqa: S102
    path, cls = _STATE_CONFIGS[raw["architectures"][0]]
    stubs = {
        "sglang.srt.configs.mamba_utils": {k: mu[k] for k in (
            "Mamba2CacheParams", "Mamba2StateShape", "mamba2_state_dtype")},
        "sglang.srt.configs.update_config": {
            "adjust_tp_num_heads_if_necessary": lambda *a: None},
        "sglang.srt.runtime_context": {
            "get_parallel": lambda: types.SimpleNamespace(attn_tp_size=tp),
            "linear_attn_tp_size": lambda: tp},
        "sglang.srt.utils": {"is_cpu": lambda: False}}
    if path != QN:  # Qwen3.5: its text config is a Qwen3NextConfig, its vision SGLang's own
        stubs["sglang.srt.configs.qwen3_next"] = {
            "Qwen3NextConfig": _run_module(QN, stubs)["Qwen3NextConfig"]}
        stubs["sglang.srt.configs.qwen3_vl"] = {
            "Qwen3VLVisionConfig": _run_module("sglang/srt/configs/qwen3_vl.py", {})[
                "Qwen3VLVisionConfig"]}
    return _run_module(path, stubs)[cls](**raw)


def _mamba_settings(mc) -> types.SimpleNamespace:
    """exec.mamba as SGLang resolves it at its defaults: overrides.py's
    _mamba_radix_cache_resolution and supports_mamba_cache_extra_buffer, lifted, on the radix
    cache on, the overlap schedule on, the triton linear-attention backend, no page size given
    (stand-ins: the linear-attention spec registry, which has no spec for Qwen3-Next, named in
    the architecture lists instead; the platform CUDA), then model_override_base.py's
    mamba_extra_buffer_of."""
    ns = _namespace({"sglang.srt.configs.linear_attn_model_registry": {
        "get_linear_attn_spec": lambda hf: None}})
    ns.update(get_platform=lambda: types.SimpleNamespace(is_xpu=False),
              model_config_of=lambda view: mc, Dict=dict, Any=object)
    _lift("sglang/srt/arg_groups/overrides.py",
          ["_MAMBA_RADIX_CACHE_ARCHS", "_MAMBA_EXTRA_BUFFER_ARCHS",
           "supports_mamba_cache_extra_buffer", "_mamba_radix_cache_resolution"], ns)
    view = types.SimpleNamespace(disable_radix_cache=False, mamba_radix_cache_strategy="auto",
                                 disable_overlap_schedule=False, page_size=None,
                                 linear_attn_backend="triton")
    for k, v in ns["_mamba_radix_cache_resolution"](view).items():
        setattr(view, k, v)
    extra = _function("sglang/srt/arg_groups/model_override_base.py", "mamba_extra_buffer_of")
    return types.SimpleNamespace(enable_mamba_extra_buffer=extra(view),
                                 enable_mamba_extra_buffer_lazy=False,
                                 enable_linear_replayssm_spec=False,
                                 overlap=not view.disable_overlap_schedule)


def _mamba_methods(kvc, schedule, memory, mamba) -> None:
    """KVCacheConfigurator._handle_max_mamba_cache and _calculate_mamba_ratio, lifted, bound to
    ``kvc`` (no speculative decoding, max_mamba_cache_size not given; get_context().override
    writes the schedule, as runtime_context does)."""
    sizing = _lift("sglang/srt/mem_cache/allocation_sizing.py", "get_mamba_tracking_slots",
                   _namespace({}))
    ns = _namespace({})
    ns.update(get_schedule=lambda: schedule, get_memory=lambda: memory,
              get_exec=lambda: types.SimpleNamespace(mamba=mamba),
              get_context=lambda: types.SimpleNamespace(
                  override=lambda name, **kw: [setattr(schedule, k, v) for k, v in kw.items()]),
              envs=types.SimpleNamespace(SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK=types.SimpleNamespace(
                  get=lambda: False)),
              get_mamba_tracking_slots=sizing["get_mamba_tracking_slots"],
              logger=types.SimpleNamespace(warning=lambda *a: None))
    _lift(KC, ["MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO",
               "MAMBA_CACHE_BASE_RATIO_DROP_ON_SKIP",
               "MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_BUFFER"], ns)
    for m in ("_handle_max_mamba_cache", "_calculate_mamba_ratio"):
        fn = _lift(KC, m, ns, cls="KVCacheConfigurator")[m]
        setattr(kvc, m, fn.__get__(kvc))


def _tp(name: str) -> int:
    return smallest_tp(name, "sglang", GPU, CONTEXT)


def test_prefill_graph_sizes_are_sglangs():
    theirs = _function("sglang/srt/arg_groups/cuda_graph_hook.py",
                       "generate_prefill_cuda_graph_batch_sizes")
    for max_bs in (2048, 4096, 8192, 16384):
        assert sg.prefill_graph_sizes(max_bs) == theirs(max_bs)


def test_every_bundled_model_is_compared_or_refused():
    assert set(REFUSED) <= set(BUNDLED)
    for name, words in REFUSED.items():
        with pytest.raises(ValueError, match=words) as err:
            engine_tokens(name, GPU, "sglang", tp=8, context=CONTEXT)
        assert name in str(err.value)


@pytest.mark.parametrize("name", COMPARED)
def test_sglang_tokens_are_kvlibs(name):
    """SGLang's #tokens, sliding-window pool, cell, budget, mem_fraction_static and
    max_running_requests from its own code equal kvlib's, for kvlib's free memory and
    weights; page 1 on an H200, so exactly."""
    _wheel()
    tp = _tp(name)
    ours = engine_tokens(name, GPU, "sglang", tp=tp, context=CONTEXT)
    free_before = ours.total_memory - MEASURED_DEFAULTS["in_use_bytes"]
    theirs = sglang_plan(name, tp, free_before, ours.weights)
    assert ours.page == theirs["page"]
    extras = dict(ours.extras)
    assert theirs["fraction"] == float(ours.fraction), name
    assert theirs["budget"] == extras.get("kv_pool_budget", ours.kv_budget), name
    assert theirs["slots"] == extras.get("max_mamba_cache_size"), name
    assert theirs["state"] == extras.get("state_bytes_per_request"), name
    assert theirs["hybrid"] == (ours.swa_tokens is not None), name
    if theirs["hybrid"]:
        full = ours.cell + Fraction(4, 5) * ours.swa_cell
        assert theirs["cell"] == pytest.approx(float(full), rel=1e-12), name
        assert theirs["swa_tokens"] == ours.swa_tokens, name
    else:
        assert theirs["cell"] == ours.cell, name
    assert theirs["tokens"] == ours.tokens, name
    assert theirs["running"] == ours.max_running_requests, name


@pytest.mark.parametrize(("name", "tp"), [("qwen3-next-80b-a3b", 2), ("qwen3-next-80b-a3b", 8),
                                          ("nemotron-3-nano-30b-a3b", 1),
                                          ("nemotron-3-nano-30b-a3b", 4)])
def test_state_pool_at_other_tps(name, tp):
    """The state pool at other TPs as well (the state per request halves as TP doubles)."""
    _wheel()
    ours = engine_tokens(name, GPU, "sglang", tp=tp, context=CONTEXT)
    theirs = sglang_plan(name, tp, ours.total_memory - MEASURED_DEFAULTS["in_use_bytes"],
                         ours.weights)
    extras = dict(ours.extras)
    assert (theirs["state"], theirs["slots"], theirs["budget"], theirs["tokens"],
            theirs["running"]) == (extras["state_bytes_per_request"],
                                   extras["max_mamba_cache_size"], extras["kv_pool_budget"],
                                   ours.tokens, ours.max_running_requests)


@pytest.mark.parametrize("name", ["qwen3-vl-8b"])
def test_a_published_multimodal_config(name):
    """A published config kvlib does not bundle (tests/fixtures/configs): Qwen3-VL on an H200
    takes the profiled Hopper defaults, a 1 GiB feature pool instead of the 100 MiB cache."""
    from kvlib.models.readers import read_config
    from kvlib.serving.engines import engine_plan
    from kvlib.serving.engines.vllm.deployment import Deployment

    _wheel()
    raw = _raw(name)
    dep = Deployment(read_config(raw, name=name), GPU, gpus=1, tp=1, config=raw)
    ours = engine_plan(dep, CONTEXT, "sglang")
    theirs = sglang_plan(name, 1, ours.total_memory - MEASURED_DEFAULTS["in_use_bytes"],
                         ours.weights)
    assert (theirs["fraction"], theirs["budget"], theirs["cell"], theirs["tokens"],
            theirs["running"], theirs["page"]) == (
        float(ours.fraction), ours.kv_budget, ours.cell, ours.tokens,
        ours.max_running_requests, ours.page)


@pytest.mark.parametrize("fp8", [False, True])
@pytest.mark.parametrize("name", ["deepseek-v3.2", "glm-5", "glm-5.2"])
def test_dsa_pool_at_a_fixed_budget(name, fp8):
    """The DSA pool (latent rows, the indexer's fp8 keys and scales, pages of 64) for the same
    budget, 40 GiB, through SGLang's DefaultPoolConfigurator and kvlib's expressions, with a
    bf16 and an fp8 KV cache."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines.sglang import indexer, pools

    _wheel()
    budget = 40 << 30
    theirs = sglang_plan(name, 8, 0, 0, budget=budget, fp8=fp8)
    config = bundled_config(name)
    mla, index = indexer.dsa_cells(load_model(name), config, 1 if fp8 else 2)
    page = indexer.dsa_page(config)
    ours = pools.pool(kind="single", budget=budget, page=page, context=CONTEXT,
                      fraction=Fraction(9, 10), full_cell=mla + index)
    assert (theirs["page"], theirs["cell"], theirs["tokens"]) == (page, mla + index, ours.tokens)


def _v4_fields(v) -> dict:
    """kvlib's V4Pool as the oracle's keys (SGLang's floats compared with kvlib's exact
    fractions, which are binary fractions here, so ==)."""
    return {"cell": v.full_token, "swa_cell": v.swa_token, "c128_state": v.c128_state,
            "tokens": v.tokens, "swa_tokens": v.swa_tokens, "c4_tokens": v.c4_tokens,
            "c128_tokens": v.c128_tokens, "c4_state_rows": v.c4_state_rows,
            "c128_state_rows": v.c128_state_rows, "running": v.max_running_requests,
            "entry": v.entry, "layers": v.layers, "c4_layers": v.c4_layers,
            "c128_layers": v.c128_layers}


@pytest.mark.parametrize("name", V4)
def test_v4_pools_are_sglangs(name):
    """DeepSeek V4 on 8 H200s at TP 8: SGLang's DSV4PoolConfigurator (pool_configurator.py:
    1046-1713, run whole from the wheel), its budget and resolve_max_num_reqs give kvlib's
    mem_fraction_static, budget, bytes per full and per SWA token, c128 state, #tokens, SWA,
    c4 and c128 pools, compressor-state rows and max_running_requests."""
    _wheel()
    ours = engine_tokens(name, GPU, "sglang", tp=8, context=CONTEXT)
    theirs = sglang_plan(name, 8, ours.total_memory - MEASURED_DEFAULTS["in_use_bytes"],
                         ours.weights)
    extras = dict(ours.extras)
    assert (theirs["fraction"], theirs["budget"], theirs["page"]) == (
        float(ours.fraction), ours.kv_budget, ours.page), name
    assert (theirs["cell"], theirs["swa_cell"], theirs["tokens"], theirs["swa_tokens"],
            theirs["running"]) == (ours.cell, ours.swa_cell, ours.tokens, ours.swa_tokens,
                                   ours.max_running_requests), name
    assert (theirs["c4_tokens"], theirs["c128_tokens"], theirs["c128_state"]) == (
        extras["c4_tokens"], extras["c128_tokens"], extras["c128_state_bytes"]), name


@pytest.mark.parametrize("budget_gib", [3, 40, 100])
@pytest.mark.parametrize("name", V4)
def test_v4_pool_at_fixed_budgets(name, budget_gib):
    """The same configurator and kvlib's expressions (kvlib.serving.engines.sglang.dsv4) for
    budgets of 3, 40 and 100 GiB: every pool, row and state count; where SGLang stops (V4 Pro
    at 3 GiB: an SWA pool too small for one request, validate_swa_pool_size), kvlib refuses."""
    from kvlib.serving.engines.sglang import dsv4

    _wheel()
    budget = budget_gib << 30
    try:
        theirs = sglang_plan(name, 8, 0, 0, budget=budget)
    except ValueError as stop:
        assert "cannot hold even one request" in str(stop)
        with pytest.raises(ValueError, match="cannot hold one request"):
            dsv4.v4_pool(bundled_config(name), budget)
        return
    ours = _v4_fields(dsv4.v4_pool(bundled_config(name), budget))
    assert {k: theirs[k] for k in ours} == ours


def test_the_oracle_has_stand_ins_for_every_path_it_takes():
    """A positive control: the lifted code fails loudly where no stand-in was given."""
    _wheel()
    ns = _namespace({})
    missing = ns["__builtins__"]["__import__"]("sglang.srt.x", fromlist=("f",)).f
    with pytest.raises(AssertionError, match="sglang.srt.x.f"):
        missing()


def test_json_config_is_the_bundled_one():
    # the stand-in HF config is the bundled config.json itself
    raw = bundled_config("llama-3.1-8b")
    path = ROOT / "kvlib" / "models" / "configs" / "llama-3.1-8b.json"
    assert raw == json.loads(path.read_text())


# -- what the oracle found, worked by hand (these run without the wheel) ------------------------

def test_llama_2_caps_the_prefill_graph_at_4096():
    """memory_hook.py:258-263: a --model-path containing "llama-2" captures prefill graphs up to
    4096 tokens, not chunked_prefill_size 8192, so 50 sizes are reserved for, not 58. On an H200
    (nvidia-smi 143771 MiB) at TP 1: R = 512 + 1.5 x 8192 + 1/8 x 1024 + 256 x 2 + 50 x 8 =
    13840 MiB, round(129931 / 143771, 3) = round(0.90373, 3) = 0.904 (0.903 without the cap,
    R = 13904). The oracle found kvlib at 0.903 for llama-2-7b: 285 tokens short."""
    assert len(sg.prefill_graph_sizes(4096)) == 50 and len(sg.prefill_graph_sizes(8192)) == 58
    assert sg.default_mem_fraction(143771, 1, False, "meta-llama/Llama-2-7b-hf")[0] == \
        Fraction(904, 1000)
    assert sg.default_mem_fraction(143771, 1, False, "meta-llama/Llama-3.1-8B")[0] == \
        Fraction(903, 1000)
    assert engine_tokens("llama-2-7b", GPU, "sglang", context=CONTEXT).fraction == \
        Fraction(904, 1000)


def test_the_budget_is_sglangs_floating_point():
    """kv_cache_configurator.py:2990-3060 in GB floats; with TP > 1 each free memory is
    all-reduced as a float32 (utils/common.py:569-574). F_0 = 2^37 + 1000 B, W = 2^36 B, f = 0.9:
    exactly 2^36 + 1000 - (2^37 + 1000) x 0.1 = 54,975,582,288.8 -> 54,975,582,288 at TP 1;
    as float32s both round to 2^37 and 2^36 (steps of 16 KiB and 8 KiB), 64 - 128 x 0.1 GB =
    51.2 GB = 54,975,581,388.8 -> 54,975,581,388 at TP 2: 900 B less."""
    f = Fraction(9, 10)
    assert sg.kv_budget(2 ** 37 + 1000, 2 ** 36, 0, f) == 54_975_582_288
    assert sg.kv_budget(2 ** 37 + 1000, 2 ** 36, 0, f, world=2) == 54_975_581_388
