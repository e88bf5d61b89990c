"""Llama 1-3, GPT-2 and MiniMax-M2: standard attention on every layer, read by the generic
reader.

MiniMax-M2 (``minimax_m2``; M2.1, M2.5, M2.7 the same): vLLM 0.34.0 models/minimax_m2.py builds
every layer as ``MiniMaxM2Attention`` with ``num_key_value_heads`` x ``head_dim`` and no
window; ``qk_norm_type`` ("per_layer") only says how the query/key norms are shaped (weights).
The older MiniMax-Text-01 / M1 (``minimax``, lightning attention) is refused
(:mod:`.refuse`).

Phi-3 and Phi-4-mini (``phi3``): vLLM 0.34.0's Phi3ForCausalLM is its Llama
(models/phi3.py), and a ``sliding_window`` without ``layer_types`` applies to every layer: the
engine sets ``CacheConfig.sliding_window`` when no ``layer_types`` says otherwise
(engine/arg_utils.py:2321-2327), Llama's attention passes no per-layer window then
(models/llama.py:185-205), so the layer takes the cache config's
(model_executor/layers/attention/attention.py:281-289); transformers' Phi3Attention slides
every layer by it too. Phi-4-mini-reasoning's 262,144 is wider than its 131,072 positions, but
vLLM still keeps each layer's cache as a sliding window's (its blocks, not a full layer's).

Only families checked against transformers' modeling code are registered; an
unregistered ``model_type`` is still read by the generic reader, with the
assumption said aloud (see :func:`kvlib.models.readers.parse_config`).
"""

from __future__ import annotations

from kvlib.models.readers import attention, mistral
from kvlib.models.readers.fields import describe
from kvlib.models.readers.registry import register


@register("llama", "gpt2")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes)


@register("phi3")
def read_phi3(c, family, n, notes):
    """Phi-3, Phi-4-mini: Llama's layers, ``sliding_window`` on every layer (module docstring);
    ``layer_types``, where a config writes it, decides per layer as in Llama."""
    return attention.read(c, family, n, notes, windows=mistral.windows)


_M2_LAYER = "vllm/model_executor/models/minimax_m2.py:270"
_COUNT_LINE = "vllm/config/model.py:1791"


@register("minimax_m2", handles=("attn_type_list",), ignores=("qk_norm_type",))
def read_minimax_m2(c, family, n, notes):
    """MiniMax-M2.x. ``attn_type_list``: vLLM 0.34.0 counts ``t == 1`` as an attention layer
    (config/model.py:1791) and builds every minimax_m2 layer as ``MiniMaxM2Attention``
    (minimax_m2.py:270), never reading the list there. A list of 1s (M2.5, M2.7) is read: every
    layer full attention. A 0 entry is a lightning-attention layer of MiniMax-Text-01 / M1, which
    vLLM 0.34.0's minimax_m2 model cannot build (it would make a full-attention layer the weights
    do not fit, while the counting at config/model.py:1791 leaves it out): refused, naming both."""
    types = c.data.get("attn_type_list")
    if types is not None and types != []:
        if not isinstance(types, list) or len(types) != n or any(
                isinstance(t, bool) or t not in (0, 1) for t in types):
            raise ValueError(f"{c.path('attn_type_list')} must hold 0 or 1 for each of the {n} "
                             f"layers, got {describe(types)}")
        zeros = types.count(0)
        if zeros:
            shown = repr(types) if len(repr(types)) <= 40 else repr(types)[:37] + "..."
            raise ValueError(
                f"{c.path('attn_type_list')}={shown}: {zeros} of {n} layers are lightning "
                f"(linear) attention; vLLM 0.34.0 reads this key where it counts attention "
                f"layers ({_COUNT_LINE}: only t == 1 is attention), while its minimax_m2 model "
                f"builds every layer as full attention ({_M2_LAYER}); kvlib cannot count a "
                "lightning layer's state and refuses rather than read it as full attention")
        notes.append(f"attn_type_list is read: all {n} entries are 1, which vLLM 0.34.0 counts "
                     f"as attention layers ({_COUNT_LINE}), and {_M2_LAYER} builds every layer "
                     "as full attention")
    return attention.read(c, family, n, notes)
