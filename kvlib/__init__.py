"""kvlib: KV-cache memory derived from tensor tables, evaluated exactly.

Layers, each importing only the ones before it (``tests/test_layers.py``):

* :mod:`kvlib.core`: notation, units, tensor tables -> SymPy derivation -> generated
  numeric functions -> the attention kinds and decode-cost tables;
* :mod:`kvlib.reference`: NumPy reference attention, MLA and RoPE;
* :mod:`kvlib.models`: config.json readers (one per family), layer groups, bundled models;
* :mod:`kvlib.serving`: GPUs, paging, tensor parallelism, levers, and the engines layer
  (:mod:`kvlib.serving.engines`: vLLM's, SGLang's and TensorRT-LLM's budgets and plans);
* :mod:`kvlib.views`: plotting style, figures, widgets, tables;
* :mod:`kvlib.cli`: the ``kvlib`` command.

The names a notebook uses are importable from here (``from kvlib import GQA,
load_model, plan``); each is loaded on first use, so ``import kvlib`` stays cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# name -> module that defines it
_NAMES = {
    "kvlib.core.dtypes": "DTYPE_BYTES bytes_per_element",
    "kvlib.core.units": "UNITS describe fmt_bytes to_unit",
    "kvlib.core.formulas": "Attention MHA GQA MQA MLA MLA_ROPE KINDS ratio",
    "kvlib.core.tables": "TABLE_1 TABLE_2 TABLE_2_ROPE TensorTable grouped query_compressed",
    "kvlib.core.decode_cost": "PATHS",
    "kvlib.models.spec": "CacheKind LayerGroup ModelSpec",
    "kvlib.models.readers": "parse_config read_config",
    "kvlib.models.catalog": "BUNDLED bundled_config load_model title attention_label simplified",
    "kvlib.models.estimate": "Estimate estimate",
    "kvlib.serving.gpus": "GPU CATALOG get_gpu",
    "kvlib.serving.sharding": "shard as_mha",
    "kvlib.serving.kv": "sequence_shares kv_bytes_per_sequence_per_gpu",
    "kvlib.serving.decode": "decode_step_seconds cache_dominates_at",
    "kvlib.serving.engines.vllm.pages": "vllm_sliding_window_tokens",
    "kvlib.serving.engines.vllm.deployment": "Deployment plan",
    "kvlib.serving.engines.vllm.plan": "Plan",
    "kvlib.views.style": "COLORS apply_style plot_bars plot_cache_vs_context context_ticks",
    "kvlib.views.show": "equation",
}
_WHERE = {name: module for module, names in _NAMES.items() for name in names.split()}
_LAYERS = ("core", "reference", "models", "serving", "views", "cli")

__all__ = sorted(_WHERE) + list(_LAYERS)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    elif name in _LAYERS:
        value = importlib.import_module(f"kvlib.{name}")
    else:
        raise AttributeError(f"module 'kvlib' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
