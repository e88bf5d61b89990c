"""TensorRT-LLM's Mamba hybrids (Nemotron-H): the state it allocates per request and how it
comes off the budget. Bytes per GPU (TP rank); pipeline parallelism 1.

The cost is affine: ``CacheCost(slope, intercept)`` (_util.py@000439672005:328-368) and
max_tokens = ``tokens_for_budget(budget) = max((budget - intercept) // slope, 0)``
(_util.py@000439672005:359-364), the budget being ``_cal_max_memory``'s
(_util.py@000439672005:879-896, called from configure_kv_cache_capacity,
_util.py@000439672005:1228-1459).
``CppMambaHybridCacheManager.get_cache_size_per_token`` (mamba legacy.py@28295084972c:1599-1634)
and the V2 manager's (mamba_cache_manager_v2.py@28295084972c) both call
``_estimate_mamba_hybrid_cache_cost`` (mamba common.py@28295084972c:875-951):

* slope = ``KVCacheManager.get_cache_size_per_token`` over the attention layers only
  (``num_layers=local_attention_layers``), plus a snapshot term that is 0 unless
  ``mamba_state_config.periodic_snapshot_interval`` is set (off by default);
* intercept = (max_batch_size x pp_size + 1 CUDA-graph padding slot) x the Mamba layers x
  ``get_states_bytes_per_layer``: every request slot's state is reserved before any token
  (``fixed_state_slots``; ``num_reserved_dummy_slots`` 1 without speculative decoding or
  attention DP);
* ``MambaKVCacheParams.get_states_bytes_per_layer`` (config_utils.py, the store's version of
  35,938 characters, its commit not shown): conv_dim = (mamba_head_dim x mamba_num_heads +
  2 x n_groups x ssm_state_size) // TP, conv bytes = conv_dim x (conv_kernel - 1) x b_c, SSM
  bytes = (mamba_num_heads // TP) x mamba_head_dim x ssm_state_size x b_s; b_c the config's
  torch_dtype, b_s ``mamba_ssm_cache_dtype`` (the KV cache config's, else the config's
  ``resolve_ssm_cache_dtype``, else torch_dtype; kvlib reads the config's
  ``mamba_ssm_cache_dtype`` key for the middle one, assumed). Mamba layers are the 'M' of
  ``hybrid_override_pattern``, attention layers its '*' (``extract_mamba_kv_cache_params``).
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.common import text_config
from kvlib.serving.engines.trtllm import kept

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("STATE_PER_LAYER", "INTERCEPT", "MAMBA_MAX_TOKENS")
_SYMBOLIC = ("D_HEAD", "N_HEADS", "N_GROUPS", "D_STATE", "K_CONV", "B_C", "B_S", "L_M",
             "CONV_DIM", *KEPT)
__all__ = [*_SYMBOLIC, "MambaParams", "mamba_params", "state_bytes", "intercept", "max_tokens",
           "largest_batch", "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions and this module's symbols by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.trtllm.symbols import B_KV, S_max, c, tp

    D_HEAD, N_HEADS, N_GROUPS, D_STATE, K_CONV, B_C, B_S, L_M = sp.symbols(
        "d_mh N_mh N_mg d_ss k_conv b_c b_s L_M", positive=True, integer=True)
    CONV_DIM = sp.floor((D_HEAD * N_HEADS + 2 * N_GROUPS * D_STATE) / tp)
    STATE_PER_LAYER = (CONV_DIM * (K_CONV - 1) * B_C
                       + sp.floor(N_HEADS / tp) * D_HEAD * D_STATE * B_S)
    INTERCEPT = (S_max + 1) * L_M * STATE_PER_LAYER
    MAMBA_MAX_TOKENS = sp.Max(0, sp.floor((B_KV - INTERCEPT) / c))
    found = locals()
    return {name: found[name] for name in _SYMBOLIC}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)

_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


class MambaParams(dict):
    """The config's Mamba fields by symbol name, with ``attention_layers``."""


def _dtype_bytes(name, field: str, model: str) -> int:
    if name not in _BYTES:
        raise ValueError(f"{model}: {field} {name!r}: TensorRT-LLM's state size is traced for "
                         f"{', '.join(_BYTES)} only")
    return _BYTES[name]


def mamba_params(model_name: str, config: dict | None) -> MambaParams:
    """``extract_mamba_kv_cache_params`` for a Nemotron-H config (``hybrid_override_pattern``);
    ValueError naming the field that is missing or not traced."""
    t = text_config(config)
    pattern = t.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise ValueError(f"{model_name}: no hybrid_override_pattern; TensorRT-LLM's Mamba "
                         "state is traced for Nemotron-H configs only")
    keys = ("mamba_head_dim", "mamba_num_heads", "n_groups", "ssm_state_size", "conv_kernel")
    missing = [k for k in keys if not isinstance(t.get(k), int)]
    if missing:
        raise ValueError(f"{model_name}: config has no integer {', '.join(missing)}")
    dtype = t.get("torch_dtype") or t.get("dtype") or "bfloat16"
    b_c = _dtype_bytes(dtype, "torch_dtype", model_name)
    ssm = t.get("mamba_ssm_cache_dtype")
    b_s = _dtype_bytes(ssm, "mamba_ssm_cache_dtype", model_name) if ssm else b_c
    return MambaParams(d_mh=t["mamba_head_dim"], N_mh=t["mamba_num_heads"],
                       N_mg=t["n_groups"], d_ss=t["ssm_state_size"], k_conv=t["conv_kernel"],
                       b_c=b_c, b_s=b_s, L_M=pattern.count("M"),
                       attention_layers=pattern.count("*"))


def _state_values(p: MambaParams) -> dict:
    return {k: v for k, v in p.items() if k != "attention_layers"}


def state_bytes(p: MambaParams, tp_: int) -> int:
    """One request slot's state on one rank: L_M x ``STATE_PER_LAYER``."""
    values = _state_values(p)
    return values.pop("L_M") * kept.evaluate("mamba.STATE_PER_LAYER", **values, TP=tp_)


def intercept(p: MambaParams, tp_: int, max_batch_size: int) -> int:
    """``INTERCEPT``: (max_batch_size + 1) slots of state, in bytes."""
    return kept.evaluate("mamba.INTERCEPT", **_state_values(p), TP=tp_, S_max=max_batch_size)


def max_tokens(p: MambaParams, tp_: int, max_batch_size: int, budget: int, cell: int) -> int:
    """``MAMBA_MAX_TOKENS``: ``tokens_for_budget`` with the state's intercept."""
    return kept.evaluate("mamba.MAMBA_MAX_TOKENS", **_state_values(p), TP=tp_,
                         S_max=max_batch_size, B_KV=budget, c=cell)


def largest_batch(p: MambaParams, tp_: int, budget: int, cell: int, tokens_per_request: int
                  ) -> int:
    """The largest max_batch_size S whose pool holds S requests of ``tokens_per_request``
    tokens (whole blocks) beside S + 1 slots of state: 0 when none fits."""
    s = state_bytes(p, tp_)
    per = s + tokens_per_request * cell
    # (budget - (S + 1) s) // cell >= S x tokens  <=>  S x (s + tokens x cell) <= budget - s
    return max(0, (budget - s) // per)
