"""MiMo-V2-Flash: sliding-window and full-attention layers, each kind with its own heads and widths.

As vLLM 0.34.0 builds it (``MiMoV2FlashDecoderLayer``, vllm/model_executor/models/mimo_v2.py):

* layer i slides iff ``hybrid_layer_pattern[i] == 1`` (``is_compressed_softmax_layer``,
  mimo_v2.py:512); any other entry is a full-attention layer;
* a sliding layer has ``swa_num_key_value_heads`` key/value heads, keys of ``swa_head_dim``
  and values of ``swa_v_head_dim`` (``swa_head_dim`` when absent), over a window of
  ``sliding_window_size`` tokens (mimo_v2.py:423-428);
* a full layer has ``num_key_value_heads`` heads, keys of ``head_dim`` and values of
  ``v_head_dim`` (``head_dim`` when absent), no window (mimo_v2.py:445-451; the layer clears
  ``cache_config.sliding_window`` so a full layer never inherits the window, :415-418);
* the cache keeps K and V at their own widths: a page holds ``head_size + head_size_v``
  per head and token (vllm/v1/kv_cache_interface.py:601).

transformers 5.25.0's MiMoV2FlashConfig writes the window as ``sliding_window_size + 1``
(configuration_mimo_v2_flash.py:128, the query counted); kvlib counts vLLM's window.
"""

from __future__ import annotations

from kvlib.core import validate
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, layer, tally
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

_PATTERN_LINE = "vllm/model_executor/models/mimo_v2.py:512"


def _kind(c: Fields, n_key: str, g_key: str, d_key: str, v_key: str) -> dict:
    n_h = c.int(n_key)
    n_g = c.int(g_key)
    validate.check_divides(c.path(g_key), n_g, c.path(n_key), n_h)
    d = c.int(d_key)
    d_v = c.int(v_key, required=False)
    return {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d if d_v is None else d_v}


# Weights and values, not cached shapes (checked against mimo_v2.py): the sink biases are one
# learned logit per head (:315); attention_projection_layout and moe_layer_freq pick weight
# layouts (:401, :505); attention_value_scale multiplies V before attention (:385);
# swa_rope_theta is a RoPE value (:434).
_IGNORES = ("add_swa_attention_sink_bias", "add_full_attention_sink_bias",
            "attention_projection_layout", "moe_layer_freq", "attention_value_scale",
            "swa_rope_theta", "layernorm_epsilon", "n_shared_experts")


@register("mimo_v2_flash", handles=(), ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    pattern = c.data.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) != n or any(
            isinstance(v, bool) or v not in (0, 1) for v in pattern):
        raise ValueError(f"{c.path('hybrid_layer_pattern')} must list 0 (full) or 1 (sliding) "
                         f"for each of the {n} layers (vLLM 0.34.0 reads it per layer, "
                         f"{_PATTERN_LINE}), got {describe(pattern)}")
    full = _kind(c, "num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim")
    swa = _kind(c, "swa_num_attention_heads", "swa_num_key_value_heads",
                "swa_head_dim", "swa_v_head_dim")
    w = c.int("sliding_window_size", why="MiMo-V2's sliding layers slide over it "
              "(vllm/model_executor/models/mimo_v2.py:428)")
    for key in ("sliding_window", "attention_chunk_size"):
        if c.has(key):
            notes.append(f"{key}={c.data[key]!r} is not what vLLM 0.34.0 reads for MiMo-V2: its "
                         f"sliding layers use sliding_window_size={w} (mimo_v2.py:428) and its "
                         "full layers clear the window (:418); no layer is chunked")
    n_swa = pattern.count(1)
    notes.append(f"hybrid_layer_pattern decides each layer ({_PATTERN_LINE}): {n - n_swa} full "
                 f"({full['N_g']} KV heads, K {full['d_QK']} + V {full['d_V']}), {n_swa} sliding "
                 f"over {w} tokens ({swa['N_g']} KV heads, K {swa['d_QK']} + V {swa['d_V']}); "
                 "transformers counts the window as sliding_window_size + 1, vLLM as "
                 "sliding_window_size")
    layers = tally([layer(CacheKind.SLIDING, "GQA", w, **swa) if v == 1
                    else layer(CacheKind.FULL, "GQA", **full) for v in pattern])
    n_h, n_g = full["N_h"], full["N_g"]
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, full, layers)
