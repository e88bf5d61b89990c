"""Serving: what every engine shares (GPUs, tensor-parallel shards, the paged cache one
sequence holds on one GPU, weights, decode bounds, levers, paging workloads, prefix sharing)
and the engines layer, :mod:`kvlib.serving.engines`: one folder per engine (vLLM, SGLang,
TensorRT-LLM) with its budget, pools, sessions, log reader and defaults, asked through one
registry. The shared modules import no engine folder (tests/test_layers.py).

May import :mod:`kvlib.core`, :mod:`kvlib.reference` and :mod:`kvlib.models`.
"""
