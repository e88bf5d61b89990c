"""Decode-step time from bytes read (notebook 06, "Decode: a lower bound on step time").

One decode step reads, at least once, every weight that some token of the batch
needs and every live sequence's cache. For a dense model that is every weight but
the input-embedding rows of tokens not in the batch; for a mixture of experts
(MoE) it is the weights one token needs (its *active* parameters: attention,
shared experts, the dense layers, its k routed experts per MoE layer) plus the
routed experts the other tokens pick. Hence, per GPU of a TP group of ``tp``:

    t_step >= (read_params x bytes per weight / tp + B x cache per sequence per GPU)
              / bandwidth,

with ``read_params`` = active parameters - the input-embedding table (a step
looks up only B of its rows; untied embeddings only: a tied table is read whole
as the output projection). The weights on the busiest GPU are at least the
average, so the bound holds however the weights are split (TP or experts).

With uniform routing of k of E experts per token, a batch of B tokens touches
E (1 - (1 - k/E)^B) distinct experts per MoE layer on average
(:func:`expected_distinct_experts`): DeepSeek V2 (E = 160, k = 6) reads 6 at
B = 1, 73.2 at B = 16, 146.1 at B = 64 and all 160 only as B grows into the hundreds. That is a
prediction, not a bound: real routers are not uniform.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from kvlib.core import validate
from kvlib.core.lazy import lazy_attributes
from kvlib.serving import kept

# The expressions kvlib.serving.kept keeps as code (python -m kvlib.core.keep), so that
# evaluating them imports no SymPy; ``STEP`` itself is built on first use (module __getattr__).
KEPT = ("STEP",)

__all__ = [
    *KEPT, "symbolic", "KEPT", "step_seconds",
    "MoELayout", "moe_layout", "expected_distinct_experts", "input_embedding_params",
    "derived_active_params", "read_params", "uniform_routing_read_params",
    "decode_step_seconds", "cache_dominates_at",
]


@cache
def symbolic() -> dict:
    """The decode-step floor, ``STEP`` = (R_W + B R_KV) / BW seconds: the weight bytes one GPU
    reads per step plus the cache of the B sessions decoding together, over the memory
    bandwidth (bytes/s). Every engine's decode obeys it; the symbols are the notation's
    (SERVING_SYMBOLS). Imports SymPy."""
    import sympy as sp

    from kvlib.core.notation import by_name

    R, B, K, BW = (by_name(n).symbol for n in ("R_W", "B", "R_KV", "BW"))
    return {"STEP": sp.Add(R, sp.Mul(B, K, evaluate=False), evaluate=False) / BW}


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, KEPT, symbolic)


def step_seconds(read_bytes, per_session_bytes, batch, bandwidth):
    """``STEP``: (read + batch x per-session cache) / bandwidth seconds, by its kept code;
    ``batch`` may be a NumPy array."""
    _, step = kept.EXPRESSIONS["decode.STEP"]
    return step(R_W=read_bytes, B=batch, R_KV=per_session_bytes, BW=bandwidth)


@dataclass(frozen=True)
class MoELayout:
    """The routed experts of a mixture-of-experts model, from its config.json.

    experts: E routed experts per MoE layer; per_token: k of them per token;
    shared: shared experts (always read; part of the active count); moe_layers: the
    layers with routed experts; expert_params: parameters of one routed expert
    (gate, up and down projections: 3 x hidden x expert width; biases left out).
    """

    experts: int
    per_token: int
    shared: int
    moe_layers: int
    expert_params: int

    @property
    def routed_params(self) -> int:
        """All routed experts of all MoE layers."""
        return self.moe_layers * self.experts * self.expert_params


def _text(config: dict) -> dict:
    """The language model's part of a config (Llama 4 and Gemma 3 nest it)."""
    inner = config.get("text_config")
    return {**config, **inner} if isinstance(inner, dict) else config


def moe_layout(config: dict | None) -> MoELayout | None:
    """The routed-expert layout of a config, or None for a dense model (or no config).

    Experts E: ``n_routed_experts`` (DeepSeek, Nemotron), ``num_local_experts`` (Llama 4,
    gpt-oss, Mixtral) or ``num_experts`` (Qwen MoE, Gemma 4); k:
    ``num_experts_per_tok``, ``experts_per_token`` or ``top_k_experts``; expert width:
    ``moe_intermediate_size``, else ``intermediate_size``. MoE layers: the ``E`` marks
    of a ``hybrid_override_pattern``; the 1s of a ``moe_layer_freq`` that lists one 0 or 1
    per layer (MiMo-V2-Flash; vLLM 0.34.0 mimo_v2.py:503-509 ``is_moe_layer``, where a plain
    number means no MoE layer at all); layers from ``first_k_dense_replace`` on, every
    ``moe_layer_freq``-th (DeepSeek); every ``interleave_moe_layer_step``-th (Llama 4) or
    ``decoder_sparse_step``-th (Qwen) layer, less ``mlp_only_layers``; else every layer.
    A per-layer list of the wrong length or with other entries raises ValueError naming it.
    An expert is gated (gate, up, down: 3 x hidden x width) unless its activation is
    ``relu2`` (up, down: 2 x hidden x width). Shared experts: ``n_shared_experts``, or
    one for Llama 4 and for a config with ``shared_expert_intermediate_size``.
    """
    if not config:
        return None
    c = _text(config)
    e = c.get("n_routed_experts") or c.get("num_local_experts") or c.get("num_experts")
    k = (c.get("num_experts_per_tok") or c.get("experts_per_token")
         or c.get("top_k_experts"))
    hidden, layers = c.get("hidden_size"), c.get("num_hidden_layers")
    width = c.get("moe_intermediate_size") or c.get("intermediate_size")
    if not (e and k and hidden and layers and width):
        return None
    freq = c.get("moe_layer_freq")
    if isinstance(c.get("hybrid_override_pattern"), str):
        moe = c["hybrid_override_pattern"].count("E")
    elif isinstance(freq, list):
        if len(freq) != layers or any(x not in (0, 1) for x in freq):
            raise ValueError(f"moe_layer_freq must list 0 (dense) or 1 (MoE) for each of the "
                             f"{layers} layers, got {str(freq)[:60]}")
        moe = sum(1 for x in freq if x)
    elif str(c.get("model_type", "")).startswith("mimo_v2"):
        moe = 0  # mimo_v2.py:503-509: without a per-layer list no layer is MoE
    elif "first_k_dense_replace" in c or "moe_layer_freq" in c:
        first, freq = c.get("first_k_dense_replace") or 0, c.get("moe_layer_freq") or 1
        moe = sum(1 for i in range(layers) if i >= first and i % freq == 0)
    else:
        step = c.get("interleave_moe_layer_step") or c.get("decoder_sparse_step") or 1
        dense = set(c.get("mlp_only_layers") or ())
        moe = sum(1 for i in range(layers) if (i + 1) % step == 0 and i not in dense)
    if not moe:
        return None
    shared = c.get("n_shared_experts")
    if shared is None:
        llama4 = str(c.get("model_type", "")).startswith("llama4")
        shared = 1 if llama4 or c.get("shared_expert_intermediate_size") else 0
    mats = 2 if c.get("mlp_hidden_act") == "relu2" else 3
    return MoELayout(int(e), int(k), int(shared), int(moe), mats * int(hidden) * int(width))


def expected_distinct_experts(experts: int, per_token: int, batch) -> Fraction:
    """E (1 - (1 - k/E)^B): distinct experts a batch of B tokens reaches per layer, on
    average, when each token picks k of E uniformly (exact for integer B)."""
    validate.positive_int("experts", experts)
    validate.positive_int("experts per token", per_token)
    validate.positive_int("batch", batch)
    return experts * (1 - (1 - Fraction(per_token, experts)) ** batch)


def input_embedding_params(config: dict | None) -> int:
    """vocab x hidden for an untied input embedding (a step reads only B rows); 0 if tied
    (the table is read whole as the output projection; transformers' default when the
    config leaves ``tie_word_embeddings`` out) or unknown."""
    if not config:
        return 0
    c = _text(config)
    # transformers' PretrainedConfig ties by default (Gemma, GPT-2 and Falcon leave the key out)
    tied = config.get("tie_word_embeddings", c.get("tie_word_embeddings", True))
    if tied or not c.get("vocab_size") or not c.get("hidden_size"):
        return 0
    return int(c["vocab_size"]) * int(c["hidden_size"])


def derived_active_params(total_params: int, layout: MoELayout | None) -> int:
    """Total - the routed experts one token does not use: moe_layers x (E - k) x expert."""
    if layout is None:
        return total_params
    return total_params - layout.moe_layers * (layout.experts - layout.per_token) \
        * layout.expert_params


def read_params(active_params: int, config: dict | None) -> int:
    """Parameters one decode step must read at least: active - untied input embedding."""
    return active_params - input_embedding_params(config)


def uniform_routing_read_params(active_params: int, config: dict | None, batch: int) -> Fraction:
    """Parameters a batch of B reads with uniform routing: :func:`read_params` plus, per
    MoE layer, the expected distinct experts beyond the k one token reads."""
    base = read_params(active_params, config)
    layout = moe_layout(config)
    if layout is None:
        return Fraction(base)
    extra = expected_distinct_experts(layout.experts, layout.per_token, batch) - layout.per_token
    return base + layout.moe_layers * extra * layout.expert_params


def decode_step_seconds(weights_bytes, kv_bytes_per_sequence, batch, bandwidth):
    """(weights read + batch x cache) / bandwidth, per GPU.

    ``weights_bytes`` is what the step reads of the weights (for the lower bound:
    :func:`read_params` x bytes per weight / tp); ``batch`` may be a NumPy array
    (returns floats). The formula is :data:`STEP`.
    """
    return step_seconds(weights_bytes, kv_bytes_per_sequence, batch, bandwidth)


def cache_dominates_at(weights_bytes: int, kv_bytes_per_sequence: int) -> int:
    """The smallest batch whose caches outweigh the weights in a decode step's reads."""
    validate.positive_int("KV bytes per sequence", kv_bytes_per_sequence)
    return weights_bytes // kv_bytes_per_sequence + 1
