"""vLLM's folder: everything kvlib knows of vLLM 0.34.0 and 0.33.0 (docs/capacity.md), one
part a module, each rule with its source line under vllm/ in the release's wheel:

* ``defaults``: the releases kvlib follows and what each takes when an option is not given
  (gpu_memory_utilization, block size, budget rule, ``vllm serve``'s batch limits), and the
  start-up terms kvlib assumes (:data:`~kvlib.serving.engines.vllm.defaults.MEASURED_DEFAULTS`);
* ``budget``: the budget rules as SymPy expressions (0.33.0's profiled budget, 0.34.0's
  extensible one);
* ``deployment``: a model on N GPUs in vLLM's vocabulary (:class:`Deployment`), the budget
  per GPU by its release's rule, the cache per sequence, the longest context
  (``context_search``);
* layout and pools: ``blocks`` (the block size its attention backends take), ``pages`` (groups,
  blocks a request needs and holds, the logged concurrency), ``layout`` (the KV-cache groups
  it builds), ``v4`` (DeepSeek V4's packed groups), ``dtypes`` (its KV dtype names);
* sessions: ``sessions`` (what its allocator carries at the plan's context) and ``plan`` (the
  :class:`Plan`, ``kvlib plan``'s answer);
* ``log/``: its start-up log, read and worked out again (``kvlib explain-log``);
* ``planner``: the answer the registry (:mod:`kvlib.serving.engines`) asks of every engine.

The package itself imports nothing, so a module of the folder loads only what it needs.
"""
