"""Inkling (``inkling_mm_model`` and its text model): attention beside four short convolutions.

As vLLM 0.34.0 builds it (paths under vllm/, the 0.34.0 wheel; transformers 5.25.0 agrees on
the layers, models/inkling/):

* every decoder layer attends, full or over a sliding window: a layer is local iff its index is
  in ``local_layer_ids`` (models/inkling/nvidia/model.py:282-288); a local layer keeps
  ``swa_num_key_value_heads`` x ``swa_head_dim`` over ``sliding_window_size`` tokens
  (``SlidingWindowSpec``, models/inkling/nvidia/attention.py:185-193, window from model.py:166),
  the others ``num_key_value_heads`` x ``head_dim`` for every token (``FullAttentionSpec``,
  attention.py:194-199), K and V both ``head_dim`` wide, in the KV-cache dtype (:162-167).
  transformers 5.25.0: the same heads and window per layer (modeling_inkling.py:181-187);
* every layer also convolves four streams over their last ``sconv_kernel_size`` (d_conv) inputs:
  its keys and values before they are cached (attention.py:137-146), and the outputs of its
  attention and of its MLP (model.py:193-199). vLLM keeps the four as one sliding window of
  d_conv tokens per layer, ``InklingConvState`` (model.py:140-150): a ``SlidingWindowSpec`` with
  sliding_window = block_size = d_conv, the layer's KV heads, each head a row of
  2 head_dim + 2 hidden_size / KV heads values rounded up to a power of two, in bf16 (the only
  dtype it accepts) (sconv_swa_attn.py:150-172, 185-192). kvlib counts that window with
  ``KINDS["Short-conv window"]``: d_w = KV heads x that padded row, b = 2.
  transformers 5.25.0 keeps the same four streams as four convolution states of
  conv_kernel_size inputs each, in float32 (configuration_inkling.py:171-172,
  modeling_inkling.py:198-203, 555-557, 592-597; cache_utils.py:1242-1301):
  make crosscheck compares them by a stated rule (tests/crosscheck/allocation.py).

Which layers are local: vLLM 0.34.0 reads ``local_layer_ids`` only (its InklingModelConfig
defaults it to [], every layer full, and never reads ``layer_types``: models/inkling/configs.py:
100-101, 126); transformers 5.25.0 reads ``layer_types`` ("hybrid" or "hybrid_sliding"), made
from ``local_layer_ids`` when absent, else from its default, layer i local iff (i + 1) % 6
(configuration_inkling.py:152-159). Where the two engines would build different layers (only
one of the keys, or neither), kvlib refuses rather than pick one. The multi-token-prediction
layers (``num_mtp_layers``, ``mtp_config``, ``num_nextn_predict_layers``) are a speculative
draft, not counted.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

__all__ = ["read", "vllm_row_width", "INKLING_IGNORES"]

# Weights, routing, norms, logits and the towers: no shape of what a layer keeps. d_rel,
# rel_extent and the log scaling change the attention's logits (a relative-position bias over
# rel_extent tokens, attention.py:131-133; transformers modeling_inkling.py:240-254), not what
# is cached; q_bias / o_bias are projection biases; use_sconv is stored and never read by the
# model (vLLM builds the four convolutions whatever it says: model.py:140-199).
INKLING_IGNORES = (
    "d_rel", "rel_extent", "log_scaling_n_floor", "log_scaling_alpha", "q_bias", "o_bias",
    "use_embed_norm", "use_global_scale", "use_gate_bias", "dense_mlp_idx",
    "dense_intermediate_size", "moe_intermediate_size", "mlp_layer_types", "n_routed_experts",
    "n_shared_experts", "num_experts_per_tok", "route_scale", "norm_after_topk",
    "gate_activation", "shared_expert_sink", "shared_experts_size",
    "inference_moe_w13_interleaved", "unpadded_vocab_size", "padded_vocab_size",
    "logits_mup_width_multiplier", "rms_norm_eps_moe_gate", "use_sconv", "num_mtp_layers",
    "chain_hidden_post_norm", "mtp_hidden_states_first", "mtp_local_layer_ids", "mtp_config",
    "num_nextn_predict_layers", "number_of_conv_states", "audio_config", "vision_config",
    "image_bos_token_id", "audio_bos_token_id", "image_token_id", "audio_token_id",
)
_KINDS = ("hybrid", "hybrid_sliding")  # transformers' layer_types (configuration_inkling.py:158)


def vllm_row_width(kv_heads: int, head_dim: int, hidden: int) -> int:
    """d_w of one layer's conv window in vLLM 0.34.0: ``kv_heads`` rows of 2 head_dim + 2
    hidden / kv_heads values, each rounded up to a power of two (sconv_swa_attn.py:151-157)."""
    raw = 2 * head_dim + 2 * (hidden // kv_heads)
    return kv_heads * (1 << (raw - 1).bit_length())


def _aliased(c: Fields, names: tuple[str, str], what: str, default: int,
             notes: list[str], note: str) -> int:
    """The value under either of two names of one setting (the checkpoints' and transformers'
    attribute_map name); ValueError if both are given and disagree; ``default`` (noted) if
    neither is."""
    first, second = names
    if c.has(first) and c.has(second) and c.data[first] != c.data[second]:
        raise ValueError(f"{c.path(first)} and {c.path(second)} disagree; they name one "
                         f"{what} (attribute_map)")
    key = c.first(first, second)
    c.touch(first, second)
    if key is None:
        notes.append(note)
        return default
    return c.int(key)


def kernel(c: Fields, notes: list[str]) -> int:
    """d_conv: ``sconv_kernel_size`` (the checkpoints' name) or ``conv_kernel_size``
    (transformers' name for it, attribute_map), default 4 in both engines (vLLM configs.py:98-99,
    transformers configuration_inkling.py:101, 126)."""
    return _aliased(c, ("sconv_kernel_size", "conv_kernel_size"), "kernel", 4, notes,
                    "no sconv_kernel_size: the default kernel of 4 applies (both engines)")


def window_size(c: Fields, default: int, notes: list[str]) -> int:
    """``sliding_window_size``, or ``sliding_window`` (transformers' attribute_map name)."""
    return _aliased(c, ("sliding_window_size", "sliding_window"), "window", default, notes,
                    f"no sliding_window_size: the default of {default} tokens applies")


def layer_types(c: Fields, n: int) -> list[str] | None:
    """``layer_types`` checked: one "hybrid" or "hybrid_sliding" per layer, or None."""
    types = c.data.get("layer_types")
    if types is None:
        return None
    if not (isinstance(types, list) and len(types) == n and set(types) <= set(_KINDS)):
        raise ValueError(f"{c.path('layer_types')} must list hybrid or hybrid_sliding for each "
                         f"of the {n} layers, got {describe(types)[:60]}")
    return types


def _local_layers(c: Fields, n: int, notes: list[str]) -> set[int]:
    ids = c.data.get("local_layer_ids")
    types = layer_types(c, n)
    c.touch("local_layer_ids", "layer_types")
    if ids is not None:
        if not (isinstance(ids, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                              and 0 <= i < n for i in ids)):
            raise ValueError(f"{c.path('local_layer_ids')} must list layer indices below {n}, "
                             f"got {describe(ids)[:60]}")
        local = set(ids)
        if types is not None and {i for i, t in enumerate(types) if t == "hybrid_sliding"} \
                != local:
            raise ValueError(f"{c.path('layer_types')} disagrees with "
                             f"{c.path('local_layer_ids')}: vLLM 0.34.0 reads local_layer_ids "
                             "(models/inkling/nvidia/model.py:282), transformers 5.25.0 "
                             "layer_types; kvlib refuses rather than pick one")
        notes.append(f"local_layer_ids: {len(local)} sliding layers, {n - len(local)} full")
        return local
    if types is not None and "hybrid_sliding" not in types:
        notes.append("layer_types lists every layer as hybrid (full attention), as vLLM 0.34.0 "
                     "reads a config without local_layer_ids (configs.py:100-101)")
        return set()
    what = ("layer_types without local_layer_ids" if types is not None
            else "neither local_layer_ids nor layer_types")
    raise ValueError(f"{c.path('local_layer_ids')} is missing ({what}): vLLM 0.34.0 then makes "
                     "every layer full attention (models/inkling/configs.py:100-101; it never "
                     "reads layer_types), transformers 5.25.0 "
                     + ("reads layer_types" if types is not None else
                        "makes layer i sliding iff (i + 1) % 6 (configuration_inkling.py:156)")
                     + "; kvlib refuses rather than pick one")


def _heads(c: Fields, local: bool) -> tuple[int, int, int]:
    """(N_h, N_g, head dim) of a full layer, or of a sliding one (the swa_* keys)."""
    p = "swa_" if local else ""
    why = "Inkling's defaults differ between vLLM 0.34.0 and transformers 5.25.0"
    n_h = c.int(f"{p}num_attention_heads", why=why)
    n_g = c.int(f"{p}num_key_value_heads", why=why)
    d = c.int(f"{p}head_dim", why=why)
    v = c.data.get(f"{p}v_head_dim")
    if v is not None:
        c.touch(f"{p}v_head_dim")
        if v != d:
            raise ValueError(f"{c.path(p + 'v_head_dim')}={v!r}: vLLM 0.34.0 caches values "
                             f"{p}head_dim={d} wide whatever it says (models/inkling/nvidia/"
                             "attention.py:108-115, 194-199); kvlib refuses rather than guess")
    return n_h, n_g, d


@register("inkling", "inkling_mm_model",
          handles=("sconv_kernel_size", "conv_kernel_size"), ignores=INKLING_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    """Per layer: its attention (full, or sliding over ``sliding_window_size``) and its four
    short-convolution streams as vLLM 0.34.0 keeps them, a window of d_conv tokens in bf16."""
    hidden = c.int("hidden_size", why="Inkling convolves the attention and MLP outputs over it")
    K = kernel(c, notes)
    local = _local_layers(c, n, notes)
    W = window_size(c, 512, notes) if local else None
    if not local:
        window_size(c, 512, [])  # read, and inert: no layer slides
    shapes = {False: _heads(c, False)}
    if local:
        for key in ("swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim"):
            if not c.has(key):
                raise ValueError(f"{c.path(key)} is missing: vLLM 0.34.0 then takes the full "
                                 "layers' value (models/inkling/configs.py:74-81), "
                                 "transformers 5.25.0 its own default "
                                 "(configuration_inkling.py:114-116); kvlib refuses rather "
                                 "than pick one")
        shapes[True] = _heads(c, True)
    else:
        for key in ("swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim",
                    "swa_v_head_dim"):
            c.touch(key)  # no sliding layer reads them
    kinds: dict[bool, tuple] = {}
    for is_local, (n_h, n_g, d) in shapes.items():
        if hidden % n_g:
            raise ValueError(f"{c.path('hidden_size')}={hidden} is not a whole number of "
                             f"rows for {n_g} KV heads: vLLM 0.34.0 splits the attention- and "
                             "MLP-output streams across the KV heads (sconv_swa_attn.py:151); "
                             "kvlib refuses rather than guess")
        sizes = dict(N_h=n_h, N_g=n_g, d_QK=d, d_V=d)
        att = (layer(CacheKind.SLIDING, "GQA", W, **sizes) if is_local
               else layer(CacheKind.FULL, "GQA", **sizes))
        conv = layer(CacheKind.SLIDING, "Short-conv window", K,
                     d_w=vllm_row_width(n_g, d, hidden), b=2)
        kinds[is_local] = (att, conv)
    counts: dict = {}
    for is_local, (att, conv) in kinds.items():
        count = len(local) if is_local else n - len(local)
        for key in (att, conv):
            counts[key] = counts.get(key, 0) + count
    for is_local, (_, conv) in kinds.items():
        n_h, n_g, d = shapes[is_local]
        raw = 2 * d + 2 * (hidden // n_g)
        notes.append(
            f"{'sliding' if is_local else 'full'} layers also keep their four short-convolution "
            f"streams (K, V, attention and MLP outputs) as a window of the last {K} tokens "
            f"(sconv_kernel_size): {n_g} rows of 2 x {d} + 2 x {hidden} / {n_g} = {raw} values, "
            f"padded to {dict(conv[3])['d_w'] // n_g}, in bf16 whatever the KV dtype (vLLM "
            "0.34.0 InklingConvState)")
    n_h, n_g, d = shapes[False]
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    return Attention("GQA", label, {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d},
                     Layers(lambda i: kinds[i in local][0], counts))
