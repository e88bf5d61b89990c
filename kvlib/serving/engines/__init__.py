"""The engines layer's registry: one model, three engines (vLLM, SGLang, TensorRT-LLM), asked
the same questions (``kvlib plan --engine``; docs/engines.md).

Each engine is one folder beside this module, with the same parts, each a small module: its
budget, its pools or layout, its sessions, its log reader and its defaults per release, the
rules written once as SymPy expressions citing the engine's source lines (vLLM:
:mod:`~kvlib.serving.engines.vllm`; SGLang: :mod:`~kvlib.serving.engines.sglang`;
TensorRT-LLM: :mod:`~kvlib.serving.engines.trtllm`). The bytes per token are the notebooks'
(every engine caches the same keys and values); the budget, the page and the pools are each
engine's own. Beside the folders, the code they share: :mod:`~kvlib.serving.engines.answer`
(:class:`EnginePlan`, the one answer: the same first line, totals and JSON keys,
:data:`~kvlib.serving.engines.answer.COMMON_KEYS`, for every engine, so that ``kvlib plan
--engine all`` reads them side by side), :mod:`~kvlib.serving.engines.common` (a config's heads
and architecture, the refusals), :mod:`~kvlib.serving.engines.startup` (what kvlib assumes an
engine measures at start-up) and :mod:`~kvlib.serving.engines.log` (the log checks' types).

This module is the only one outside a folder that imports the folders, and no folder
imports another (tests/test_layers.py). Each folder answers through :data:`ENGINES`:
``engine_plan(dep, context, **options)`` (and, but for vLLM, ``refuse_model(model, config)``
and a ``log`` module with ``detect(text)`` and ``explain(...)``). :func:`engine_plan` answers for
a :class:`~kvlib.serving.engines.vllm.deployment.Deployment` (its weights per GPU, its GPU, TP
and KV dtype); :func:`engine_tokens` is the one-call form notebook 06 uses. What an engine
measures at start-up and kvlib cannot know is assumed aloud (``assumptions``), each with the
option that overrides it. A model or option whose pool rule kvlib has not traced for that
engine is refused by name (ValueError).

The folders are imported when an engine is asked for, not with this module: ``kvlib plan``
under vLLM never loads SGLang's or TensorRT-LLM's rules (their SymPy expressions), and
``kvlib.serving.engines.sglang`` / ``.trtllm`` load on first use, as attributes too.
"""

from __future__ import annotations

from kvlib.serving.engines.answer import COMMON_KEYS, EnginePlan
from kvlib.serving.engines.log import EngineExplanation

__all__ = ["ENGINES", "COMMON_KEYS", "EnginePlan", "engine_plan", "engine_tokens", "refuse_model",
           "detect_engine", "log_signs", "explain_engine_log", "sglang", "trtllm"]

ENGINES = ("vllm", "sglang", "trtllm")


def _folder(engine: str):
    """What answers for ``engine``, imported on first use (vLLM's planner module: its package
    loads nothing); ValueError naming the engines for another name."""
    if engine == "vllm":
        from kvlib.serving.engines.vllm import planner

        return planner
    if engine == "sglang":
        import kvlib.serving.engines.sglang as sglang  # not "from . import": __getattr__

        return sglang
    if engine == "trtllm":
        import kvlib.serving.engines.trtllm as trtllm

        return trtllm
    raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")


def __getattr__(name: str):
    """``kvlib.serving.engines.sglang`` and ``.trtllm`` as attributes, imported on first use."""
    if name in ("sglang", "trtllm"):
        return _folder(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def refuse_model(model, config: dict | None, engine: str) -> None:
    """Raise (ValueError, by name) what ``engine``'s rule ("sglang" or "trtllm") is not traced
    for in ``model`` alone, whatever the GPU, TP and KV dtype: its layer kinds, and SGLang's
    multimodal and per-kind sliding pools or TensorRT-LLM's variable windows (the book's
    planner reads it too)."""
    _folder(engine).refuse_model(model, config)


def engine_plan(dep, context: int, engine: str = "vllm", **options) -> EnginePlan:
    """``engine``'s pools for ``dep`` (a :class:`Deployment`) at ``context`` tokens per request.

    options: SGLang: mem_fraction_static, in_use_bytes (memory in use before the weights),
    other_bytes, page_size; TensorRT-LLM: free_gpu_memory_fraction, other_peak_bytes (the
    profiling peak less the weights and the temporary cache), tokens_per_block."""
    return _folder(engine).engine_plan(dep, context, **options)


def engine_tokens(model, gpu, engine: str = "vllm", *, tp: int = 1, context: int | None = None,
                  kv_dtype: str = "bf16", **options) -> EnginePlan:
    """The KV tokens (and pools, budget, sessions) ``engine`` would hold for ``model`` on one
    ``gpu`` with ``tp`` ranks: ``engine_tokens("llama-3.1-8b", "H200", "sglang").tokens``.

    model: a bundled name or a :class:`~kvlib.models.spec.ModelSpec`; context: tokens per
    request (default: the model's max_position_embeddings). Options as :func:`engine_plan`;
    vLLM options (vllm=..., gpu_mem_util=...) go to its Deployment."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines.vllm.deployment import Deployment

    spec = load_model(model) if isinstance(model, str) else model
    vllm_keys = {"vllm", "gpu_mem_util", "block_size", "in_use_bytes",
                 "activation_peak_bytes", "graph_pool_bytes", "non_torch_bytes",
                 "overhead_bytes", "kv_cache_memory"} if engine == "vllm" else set()
    dep_opts = {k: options.pop(k) for k in list(options) if k in vllm_keys}
    dep = Deployment(spec, gpu, gpus=tp, tp=tp, kv_dtype=kv_dtype, **dep_opts)
    if context is None:
        context = spec.max_position_embeddings
        if context is None:
            raise ValueError(f"{spec.name}: no max_position_embeddings; give context")
    return engine_plan(dep, context, engine, **options)


def detect_engine(text: str) -> str | None:
    """'sglang', 'trtllm' or None (a vLLM log, or nothing recognised)."""
    from kvlib.serving.engines.sglang import log as sglang_log
    from kvlib.serving.engines.trtllm import log as trtllm_log

    if sglang_log.detect(text):
        return "sglang"
    if trtllm_log.detect(text):
        return "trtllm"
    return None


def log_signs(text: str) -> tuple[str, int, str] | None:
    """Whose log ``text`` is by words only that engine prints, KV line or not: ('sglang' or
    'trtllm', the line's number, what it is), or None (a log kvlib reads no KV line of is
    still named by its engine: ``kvlib explain-log``)."""
    from kvlib.serving.engines.sglang import log as sglang_log
    from kvlib.serving.engines.trtllm import log as trtllm_log

    found = [(hit[0], engine, hit[1]) for engine, reader in (("sglang", sglang_log),
                                                              ("trtllm", trtllm_log))
             if (hit := reader.signs(text))]
    if not found:
        return None
    line, engine, what = min(found)
    return engine, line, what


def explain_engine_log(text: str, model=None, *, tp: int = 1, page: int = 1,
                       kv_bytes: int | None = None) -> EngineExplanation:
    """Check an SGLang or TensorRT-LLM start-up log; ``model`` (a ModelSpec) adds the checks
    that need its sizes (each engine's reader: ``engines/<engine>/log.py``)."""
    lines = [(i, line.rstrip("\n")) for i, line in enumerate(text.splitlines(), 1)]
    engine = detect_engine(text)
    from kvlib.serving.engines.sglang import log as sglang_log
    from kvlib.serving.engines.trtllm import log as trtllm_log

    if engine == "sglang":
        return sglang_log.explain(lines, model, tp, page, kv_bytes)
    if engine == "trtllm":
        return trtllm_log.explain(lines, model, tp, kv_bytes)
    raise ValueError("no SGLang or TensorRT-LLM KV-cache line in the log")
