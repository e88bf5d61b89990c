"""SGLang 0.5.23's state pool for Gated DeltaNet and Mamba2 hybrids (Qwen3-Next, Qwen3.5, Qwen3.6;
Nemotron-H and Nemotron 3): the state one request
holds (``STATE_PER_REQ``), how many requests' state the budget keeps (``MAMBA_SLOTS``,
``max_mamba_cache_size``), what is left for the KV pool (``KV_AFTER_STATE``) and the cap the
slots put on max_running_requests (``MAMBA_CAP``). Bytes per GPU (TP rank); paths under
sglang/srt/ in the 0.5.23 wheel.

* **State per request**: per linear-attention layer a conv state of (conv_dim / TP, K - 1)
  elements of b_c bytes and a temporal state of (heads / TP, head_dim, state_size) elements of
  b_s bytes, conv_dim = intermediate + 2 n_groups x state_size, n_groups raised to a multiple
  of TP where it does not divide (configs/mamba_utils.py ``Mamba2StateShape.create``,
  ``BaseLinearStateParams.mamba_cache_per_req``). Gated DeltaNet fills it in as intermediate =
  N_lv d_lv, n_groups = N_lk, heads = N_lv, head_dim = d_lv, state_size = d_lk, K =
  linear_conv_kernel_dim (configs/qwen3_next.py:288-313); Mamba2 as intermediate =
  mamba_num_heads x mamba_head_dim, n_groups, heads = mamba_num_heads, head_dim =
  mamba_head_dim, state_size = ssm_state_size, K = conv_kernel (configs/nemotron_h.py:425-439).
  b_c = 2 (SGLANG_MAMBA_CONV_DTYPE
  bfloat16, environ.py:1628); b_s = 4 (float32) unless the config's mamba_ssm_dtype says
  otherwise (``mamba2_state_dtype``, configs/mamba_utils.py).
* **Budget split** (``KVCacheConfigurator._handle_max_mamba_cache``, mem_cache/
  kv_cache_configurator.py:3229-3403; no speculative decoding, max_mamba_cache_size not
  given): the state's share of the budget B is B r / (1 + r), r = mamba_full_memory_ratio 0.9
  (arg_groups/fields/schedule.py:220-227); K = (that - S) // S slots of S bytes
  (:3345-3385); the KV pool gets B - (K + 1) S (+1: the pool's padding slot, :3397-3403), in
  GB floats as SGLang does.
* **KV pool**: only the full-attention layers (model_executor/pool_configurator.py:229-236);
  Nemotron-H's MLP and MoE layers ("-", "E") keep nothing.
* **max_running_requests** is capped at K // ratio (kv_cache_configurator.py:3134-3150), ratio
  = 3 + 2 tracking slots where the radix cache keeps the extra buffer (arg_groups/overrides.py:
  403-450, 453-485: Qwen3-Next and Nemotron-H with the overlap schedule on and the triton
  linear-attention backend, the defaults; kv_cache_configurator.py:3062-3088;
  mem_cache/allocation_sizing.py:11-19).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.models.spec import CacheKind
from kvlib.serving.engines.sglang import kept

__all__ = ["MAMBA_FULL_MEMORY_RATIO", "TRACED_STATE_ARCHS", "state_per_request", "split_budget",
           "mamba_ratio", "state_dtype_bytes", "is_state_group"]

MAMBA_FULL_MEMORY_RATIO = Fraction(9, 10)  # arg_groups/fields/schedule.py:220-227 (fallback)
# the state-pool architectures traced, by the state layers they hold: Gated DeltaNet hybrids
# SGLang builds from Qwen3NextConfig (configs/hybrid_arch.py hybrid_gdn_config), Mamba2
# hybrids from NemotronHConfig (mamba2_config; configs/nemotron_h.py:409-439), text-only
# (Qwen3.5 and 3.6: Qwen3_5TextConfig, a Qwen3NextConfig, configs/qwen3_5.py:15-34)
TRACED_STATE_ARCHS = {"Qwen3NextForCausalLM": "Gated DeltaNet", "NemotronHForCausalLM": "Mamba2",
                      "Qwen3_5ForConditionalGeneration": "Gated DeltaNet",
                      "Qwen3_5MoeForConditionalGeneration": "Gated DeltaNet"}
# arg_groups/overrides.py:403-436: the radix cache keeps an extra state buffer for these
_EXTRA_BUFFER_ARCHS = frozenset({"Qwen3NextForCausalLM", "NemotronHForCausalLM",
                                 "Qwen3_5ForConditionalGeneration",
                                 "Qwen3_5MoeForConditionalGeneration"})
_SSM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("STATE_PER_REQ", "MAMBA_SLOTS", "KV_AFTER_STATE", "MAMBA_CAP")
_SYMBOLIC = KEPT
__all__ += [*_SYMBOLIC, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    L_s, d_in, n_g, h_s, d_h, d_st, k_c, b_c, b_s, TP = sp.symbols(
        "L_s d_inner n_g h_s d_h d_state K_conv b_c b_s TP", positive=True)
    B_rest, S, r, K_slots, q = sp.symbols("B_rest S r K q", positive=True)
    groups = n_g + sp.Piecewise((0, sp.Eq(sp.Mod(n_g, TP), 0)), (TP - n_g, True))
    return {
        "STATE_PER_REQ": L_s * ((d_in + 2 * groups * d_st) / TP * (k_c - 1) * b_c
                                + h_s / TP * d_h * d_st * b_s),
        "MAMBA_SLOTS": sp.floor((B_rest * r / (1 + r) - S) / S),
        "KV_AFTER_STATE": sp.floor(B_rest - (K_slots + 1) * S),
        "MAMBA_CAP": sp.floor(K_slots / q),
    }


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def state_dtype_bytes(config: dict) -> int:
    """b_s: SGLang's temporal-state bytes (float32 unless the config's mamba_ssm_dtype, or its
    text_config's, names another; configs/mamba_utils.py ``mamba2_state_dtype``)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    name = (text or {}).get("mamba_ssm_dtype") if text and "mamba_ssm_dtype" in text \
        else config.get("mamba_ssm_dtype")
    return _SSM_BYTES.get(name, 4)


def is_state_group(group, arch: str) -> bool:
    """Whether ``group`` is the state layers SGLang keeps in the state pool for ``arch``."""
    return (arch in TRACED_STATE_ARCHS and group.attention == TRACED_STATE_ARCHS[arch]
            and group.kind in (CacheKind.LINEAR, CacheKind.MAMBA))


def _shape(group) -> dict:
    """Mamba2StateShape.create's arguments for ``group``: Gated DeltaNet's as
    configs/qwen3_next.py:298-309 gives them, Mamba2's as configs/nemotron_h.py:427-435."""
    s = group.sizes
    if group.attention == "Gated DeltaNet":
        return dict(d_inner=s["N_lv"] * s["d_lv"], n_g=s["N_lk"], h_s=s["N_lv"], d_h=s["d_lv"],
                    d_state=s["d_lk"], K_conv=s["d_conv"])
    if group.attention == "Mamba2":
        return dict(d_inner=s["N_sh"] * s["d_sh"], n_g=s["N_sg"], h_s=s["N_sh"], d_h=s["d_sh"],
                    d_state=s["d_state"], K_conv=s["d_conv"])
    raise ValueError(f"{group.attention} state layers: SGLang 0.5.23's state size is traced "
                     "for Gated DeltaNet and Mamba2 only")


def state_per_request(group, config: dict, tp: int) -> int:
    """``STATE_PER_REQ`` for a Gated DeltaNet (sizes N_lk, N_lv, d_lk, d_lv, d_conv) or Mamba2
    (N_sg, N_sh, d_sh, d_state, d_conv) layer group at TP ``tp``; ValueError where SGLang's
    ``divide`` would fail (heads or conv_dim not a multiple of TP)."""
    v = _shape(group)
    # extra_groups_for_head_shards: n + (tp - n) = tp where tp does not divide n
    groups = v["n_g"] if v["n_g"] % tp == 0 else tp
    conv_dim = v["d_inner"] + 2 * groups * v["d_state"]
    if v["h_s"] % tp or conv_dim % tp:
        raise ValueError(f"TP={tp}: SGLang 0.5.23 shards {v['h_s']} state heads and a conv "
                         f"state of {conv_dim} channels evenly (configs/mamba_utils.py "
                         "Mamba2StateShape.create, divide)")
    return kept.evaluate("state.STATE_PER_REQ", L_s=group.layers, **v, b_c=2,
                         b_s=state_dtype_bytes(config), TP=tp)


def split_budget(rest_bytes: float, per_req: int, ratio=MAMBA_FULL_MEMORY_RATIO
                 ) -> tuple[int, int]:
    """(max_mamba_cache_size K, the KV pool's budget in bytes) from rest_memory, the budget
    before the state pool as the float SGLang holds (bytes; :func:`~kvlib.serving.engines.
    sglang.budget.kv_rest`), in its GB floats (kv_cache_configurator.py:3345-3403, then
    int(rest x 2^30), :3060): ``MAMBA_SLOTS`` and ``KV_AFTER_STATE`` step by step."""
    rest = rest_bytes / (1 << 30)
    r_ = float(ratio)
    mamba_budget_bytes = rest * r_ / (1 + r_) * (1 << 30)
    slots = int((mamba_budget_bytes - per_req) // per_req)
    rest = rest - (slots + 1) * per_req / (1 << 30)
    return slots, int(rest * (1 << 30))


def mamba_ratio(arch: str) -> int:
    """State slots a running request may hold (kv_cache_configurator.py:3062-3088): 3, plus 2
    tracking slots where the radix cache keeps the extra buffer (overlap schedule on)."""
    return 3 + (2 if arch in _EXTRA_BUFFER_ARCHS else 0)
