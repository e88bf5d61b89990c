"""SGLang 0.5.23's pools for DeepSeek V4 (Flash, Pro): the sliding-window pool of every layer,
the compressed pools of its c4 and c128 layers with the c4 indexer's keys, and the compressor
state, as ``DSV4PoolConfigurator`` sizes them on CUDA with the flashmla backend (model_executor/
pool_configurator.py:1046-1713). Bytes per GPU (TP rank): one latent head, the same on every rank.
Paths under sglang/srt/ in the 0.5.23 wheel.

* **Which**: ``is_deepseek_v4`` (configs/model_config.py:395-400) with is_hybrid_swa
  (:2651-2697 lists the V4 architectures), ``create_memory_pool_configurator``
  (pool_configurator.py:1715-1719).
* **Defaults** (arg_groups/model_overrides/deepseek_v4.py:44-51): swa_full_tokens_ratio 0.1 and
  pages of 256 tokens; max_running_requests 256 (arg_groups/deepseek_v4_hook.py:138-146). The
  ratio, declared before ``handle_cache_compatibility`` records whether it was set
  (arg_groups/pipeline.py:225, 334; kv_cache_hook.py:415-420), counts as the operator's, so the
  SWA pool is sized by the ratio, not by the request cap (pool_configurator.py:1049-1055,
  1328-1332).
* **Entry** (pool_configurator.py:1106-1108, 1353-1370; mem_cache/deepseek_v4_memory_pool.py:
  198-234, SGLANG_DSV4_KV_LAYOUT "v4", environ.py:1754): one FlashMLA V4 row,
  d_nope fp8 bytes + d_R bf16 + 8 B of ue8m0 scales = 448 + 128 + 8 = 584 B, stored in pages
  padded to 576 B (kernels/ops/attention/dsv4/kv_layout.py:49-105): a page of P rows takes
  ceil(584 P / 576) x 576 B (``ROW``). The SWA pool pages by P, the c4 pool by P / 4, the c128
  pool by P / 128: 585, 585 and 864 B a row at P = 256. The KV dtype does not change it.
* **Indexer keys** (deepseek_v4_memory_pool.py:53-58): fp8 keys and a 4 B scale per 128,
  index_head_dim + index_head_dim / 128 x 4 = 132 B per c4 entry (``INDEX``).
* **Compressor state** (fp32, SGLANG_DSV4_COMPRESS_STATE_DTYPE, environ.py:1832;
  pool_configurator.py:136-146): c4 keeps a ring of 8 rows per SWA page (deepseek_v4_memory_pool.
  py:61-91) of 2 x 2 x (d_attn + index_head_dim) fp32 a c4 layer, priced per SWA token
  (pool_configurator.py:1372-1388); c128 a ring of 128 rows per request slot (max_running_requests
  + 1), ``size + ring + 1`` rows padded to 128, of 2 d_attn fp32 a c128 layer: fixed bytes
  (``C128_STATE``, :1509-1528).
* **Tokens** (:1437-1446, 1638-1701): bytes per full token B = r x (SWA row x N_L + c4 state
  a SWA token) + N_4 (row(P/4) + index) / 4 + N_128 row(P/128) / 128; T = (budget - c128 state)
  // B in pages (``FULL_TOKENS_V4``); SWA tokens int(T r) in pages (:1457-1461); the c4 and c128
  pools T // 4 and T // 128 entries (:1489-1500). SGLang divides in floats; B is a multiple of
  1/20 and the budget a whole number, so the exact quotient is at least 1/(20 B) from a whole
  number, far above a float's error, and the floor is the exact one.
* **max_running_requests** (kv_cache_configurator.py:3119-3132): min(256, T // 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.answer import DoesNotFit
from kvlib.serving.engines.sglang import kept

__all__ = ["V4_ARCHS", "PAGE", "RATIO", "MAX_RUNNING_V4", "RING_C4", "RING_C128", "V4Pool",
           "is_v4", "v4_pool"]

# configs/model_config.py:395-400
V4_ARCHS = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN",
                      "DeepseekV4ForCausalLMDSpark"})
PAGE = 256  # model_overrides/deepseek_v4.py:51
RATIO = Fraction(1, 10)  # model_overrides/deepseek_v4.py:44-49 (SGLang holds the float 0.1)
MAX_RUNNING_V4 = 256  # deepseek_v4_hook.py:138-146
RING_C4, RING_C128 = 8, 128  # get_compress_state_ring_size, no speculation (:61-79)
STATE_BYTES = 4  # fp32 compressor state (environ.py:1832; pool_configurator.py:136-146)
V4_DATA, V4_SCALE, V4_ALIGN = 576, 8, 576  # KVLayout.V4 (kv_layout.py:49-97)

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("ENTRY", "ROW", "INDEX", "SWA_TOKEN", "FULL_TOKEN", "C128_STATE", "FULL_TOKENS_V4",
        "SWA_TOKENS_V4", "RUNNING_V4")
_SYMBOLIC = KEPT
__all__ += [*_SYMBOLIC, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    d_nope, d_R, d_I, P, q = sp.symbols("d_nope d_R d_I P q", positive=True)
    N_L, N_4, N_128, R, r, B_KV, T = sp.symbols("N_L N_4 N_128 R r B_KV T", positive=True)
    entry = d_nope + 2 * d_R + 8  # kv_bytes, pool_configurator.py:1106-1108
    # bytes a row takes in pages of q rows: KVLayout.V4.page_bytes(q) / q (kv_layout.py:103-105)
    row = sp.ceiling(q * (V4_DATA + V4_SCALE) / V4_ALIGN) * V4_ALIGN / q
    index = d_I + sp.floor(d_I / 128) * 4  # get_dsv4_indexer_bytes_per_token (:53-58)
    d_attn = d_nope + d_R
    swa_token = (row.subs(q, P) * N_L
                 + sp.Rational(RING_C4) / P * 2 * 2 * (d_attn + d_I) * STATE_BYTES * N_4)
    full_token = (r * swa_token + N_4 * (row.subs(q, P / 4) + index) / 4
                  + N_128 * row.subs(q, P / 128) / 128)
    c128_state = (sp.ceiling(((R + 1) * RING_C128 + RING_C128 + 1) / 128) * 128
                  * 2 * d_attn * STATE_BYTES * N_128)
    return {"ENTRY": entry, "ROW": row, "INDEX": index, "SWA_TOKEN": swa_token,
            "FULL_TOKEN": full_token, "C128_STATE": c128_state,
            "FULL_TOKENS_V4": sp.floor(sp.floor((B_KV - c128_state) / full_token) / P) * P,
            "SWA_TOKENS_V4": sp.floor(sp.floor(T * r) / P) * P,
            "RUNNING_V4": sp.Min(R, sp.floor(T / 2))}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def is_v4(config: dict | None) -> bool:
    """``is_deepseek_v4`` for a config.json."""
    return ((config or {}).get("architectures") or [""])[0] in V4_ARCHS


@dataclass(frozen=True)
class V4Pool:
    """DSV4PoolConfigurator's sizes for one budget (bytes, tokens, rows)."""

    entry: int  # bytes of one V4 latent row
    swa_row: Fraction  # bytes a SWA row takes in its pages, over every layer's 1 row
    swa_token: Fraction  # bytes one SWA slot costs, all layers, c4 state included
    full_token: Fraction  # bytes per full token, the SWA share r included
    c128_state: int  # fixed bytes of the c128 compressor state
    tokens: int  # full_max_total_num_tokens (#tokens)
    swa_tokens: int
    c4_tokens: int
    c128_tokens: int
    c4_state_rows: int
    c128_state_rows: int
    max_running_requests: int
    layers: int
    c4_layers: int
    c128_layers: int


def _values(config: dict, page: int, ratio, running: int) -> dict:
    layers = config["num_hidden_layers"]
    ratios = list(config["compress_ratios"])[:layers]  # the PP stage: every layer, no PP
    bad = sorted({x for x in ratios if x not in (0, 4, 128)})
    if bad:
        raise ValueError(f"compress_ratios {bad}: SGLang 0.5.23's DeepSeek V4 pool is traced "
                         "for ratios 0, 4 and 128 (V4 Flash and Pro) only")
    if page % 128:
        raise ValueError(f"page_size {page}: SGLang's DeepSeek V4 pool needs a multiple of 128 "
                         "(pool_configurator.py:1641-1643)")
    rope = config["qk_rope_head_dim"]
    return {"d_nope": config["head_dim"] - rope, "d_R": rope, "d_I": config["index_head_dim"],
            "P": page, "N_L": layers, "N_4": ratios.count(4), "N_128": ratios.count(128),
            "R": running, "r": Fraction(ratio)}


def _ev(name: str, **values):
    """Expression ``name`` exactly, by its kept code, at the values of its own symbols among
    ``values``."""
    names, _ = kept.EXPRESSIONS[f"dsv4.{name}"]
    return kept.evaluate(f"dsv4.{name}", **{k: v for k, v in values.items() if k in names})


def v4_pool(config: dict, budget: int, page: int = PAGE, ratio=RATIO,
            running: int = MAX_RUNNING_V4) -> V4Pool:
    """The V4 pools SGLang 0.5.23 sizes from ``budget`` bytes (its KV budget on one rank);
    DoesNotFit (a ValueError) where the budget holds no page or the SWA pool cannot admit one
    request (validate_swa_pool_size, pool_configurator.py:198-216)."""
    v = _values(config, page, ratio, running)
    state = _ev("C128_STATE", **v)
    tokens = max(0, _ev("FULL_TOKENS_V4", B_KV=budget, **v))
    swa = _ev("SWA_TOKENS_V4", T=tokens, **v)
    window = config.get("sliding_window")
    if window is not None and window + page >= swa:
        raise DoesNotFit(f"SGLang would stop: its DeepSeek V4 SWA pool ({swa} tokens) cannot hold "
                         f"one request, sliding_window {window} + page {page} "
                         "(pool_configurator.py:198-216): a budget of "
                         f"{budget:,} B is too small")
    return V4Pool(entry=_ev("ENTRY", **v), swa_row=_ev("ROW", q=page),
                  swa_token=_ev("SWA_TOKEN", **v), full_token=_ev("FULL_TOKEN", **v),
                  c128_state=state, tokens=tokens, swa_tokens=swa, c4_tokens=tokens // 4,
                  c128_tokens=tokens // 128, c4_state_rows=swa // page * RING_C4,
                  c128_state_rows=(running + 1) * RING_C128 if v["N_128"] else 0,
                  max_running_requests=_ev("RUNNING_V4", T=tokens, **v),
                  layers=v["N_L"], c4_layers=v["N_4"], c128_layers=v["N_128"])
