"""TensorRT-LLM's fp8 context-MLA workspace: what it reserves off the KV budget for an MLA model
with an fp8 cache. Bytes per GPU (TP rank).

``KvCacheCreator.configure_kv_cache_capacity`` (_util.py@000439672005:1228-1459; the reserve
at lines 1377-1402), after ``_cal_max_memory``: w = the attention backend's
``runtime_workspace_bytes_per_token``; when w > 0 and a cap applies,
``get_mla_context_workspace_reserve`` (_util.py@000439672005:433-452) takes
``reserve = min(w x kv_len_cap, budget x w / (k + w))`` (k the cache's bytes per token) and the
budget becomes ``int(budget - reserve)``: equivalently the pool keeps
max((budget - w L_cap) / k, budget / (k + w)) tokens.

* w: ``TrtllmAttention.runtime_workspace_bytes_per_token`` (trtllm.py@017aa0caf767:1551-1613):
  0 unless the config is MLA, the KV cache fp8 and the GPU's SM one of 90, 100,
  103, 107, 120 (and not a sparse MLA on SM 100/103/107, which kvlib refuses anyway); then
  ``contextMlaWorkspaceBytesPerToken`` (attentionOp.cpp@eea41b73a7bd): (num_attention_heads //
  TP) x (qk_rope_head_dim + qk_nope_head_dim + v_head_dim), 1 byte an element (fp8).
* the cap: ``get_mla_context_workspace_kv_len_cap`` (_util.py@000439672005:400-430): none (no
  reserve) unless block reuse is on without chunked prefill (or chunked prefill with an unbounded
  workspace); then ``min(max_batch_size, max_num_tokens) x max_seq_len``. kvlib takes
  TensorRT-LLM's defaults, block reuse on and chunked prefill off (``KvCacheConfig`` and
  ``TorchLlmArgs`` defaults, assumed: llm_args.py not read), max_num_tokens 8192, max_batch_size
  2048 and max_seq_len the planned context.

The reserve is a Python float in TensorRT-LLM (``budget * w / (k + w)``); kvlib evaluates it
exactly, which can differ from the float by under a byte before the floor.
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.common import text_config
from kvlib.serving.engines.trtllm import kept

# kept as code in kvlib.serving.engines.trtllm.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("W_MLA", "L_CAP", "RESERVE", "B_AFTER")
_SYMBOLIC = KEPT
__all__ = ["FP8_CONTEXT_MLA_SMS", "MAX_NUM_TOKENS", *KEPT, "workspace_bytes_per_token",
           "reserve", "KEPT", "symbolic"]

FP8_CONTEXT_MLA_SMS = frozenset({90, 100, 103, 107, 120})
MAX_NUM_TOKENS = 8192  # TensorRT-LLM's default max_num_tokens



@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    from kvlib.serving.engines.trtllm.symbols import B_KV, C, S_max, c, tp

    N_HQ, D_ROPE, D_NOPE, D_VH, W_TOK, M_TOK = sp.symbols("N_hq d_rope d_nope d_vh w M_tok",
                                                         positive=True, integer=True)
    l_cap = sp.Min(S_max, M_TOK) * C
    reserve = sp.Min(W_TOK * l_cap, B_KV * W_TOK / (c + W_TOK))
    return {"W_MLA": sp.floor(N_HQ / tp) * (D_ROPE + D_NOPE + D_VH),  # bytes a token, fp8
            "L_CAP": l_cap, "RESERVE": reserve, "B_AFTER": sp.floor(B_KV - reserve)}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def workspace_bytes_per_token(model_name: str, config: dict | None, tp_: int, kv_dtype: str,
                              sm: int | None) -> int:
    """``runtime_workspace_bytes_per_token`` for a dense MLA config (0 where it stages none)."""
    t = text_config(config)
    if t.get("kv_lora_rank") is None or kv_dtype not in ("fp8", "fp8_e4m3") or (
            sm not in FP8_CONTEXT_MLA_SMS):
        return 0
    keys = ("num_attention_heads", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    missing = [k for k in keys if not isinstance(t.get(k), int)]
    if missing:
        raise ValueError(f"{model_name}: MLA config has no integer {', '.join(missing)}")
    return kept.evaluate("workspace.W_MLA", N_hq=t["num_attention_heads"],
                         d_rope=t["qk_rope_head_dim"], d_nope=t["qk_nope_head_dim"],
                         d_vh=t["v_head_dim"], TP=tp_)


def reserve(budget: int, cell: int, w: int, context: int, max_batch_size: int,
            max_num_tokens: int = MAX_NUM_TOKENS) -> tuple[int, int]:
    """(the budget after the reserve, ``B_AFTER``; the reserve in whole bytes, budget - that)."""
    if w <= 0 or budget <= 0:
        return budget, 0
    after = kept.evaluate("workspace.B_AFTER", B_KV=budget, c=cell, w=w, C=context,
                          S_max=max_batch_size, M_tok=max_num_tokens)
    return after, budget - after
