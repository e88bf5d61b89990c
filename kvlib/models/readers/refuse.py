"""What kvlib cannot count yet, refused by name instead of read as full attention.

Today's hybrid and heterogeneous models keep a constant-size state in some layers
(Mamba, linear attention, short convolutions), skip attention in others, give
layers different head shapes, share one layer's cache with another, or add a
sparse-attention indexer with a key cache of its own. Read as "every layer is
standard attention" their cache comes out 1.1x to 13x wrong, so each field that
signals one of these, and each model family built on them, is refused with one
line naming it, unless the family has a reader of its own that accounts for it
(``handles`` in :mod:`.registry`).
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields

__all__ = ["MARKERS", "FAMILIES_REFUSED", "REMOVED_FROM_VLLM", "refuse_removed",
           "refuse_unknown_layers", "says_something"]

# field -> what it says about the layers
MARKERS = {
    "full_attention_interval": "only every n-th layer is full attention, the others linear "
                               "attention",
    "hybrid_override_pattern": "a per-layer pattern of Mamba2, attention and MLP blocks",
    "attn_layer_period": "attention only every n-th layer, Mamba layers in between",
    "attn_layer_offset": "attention only at some layers, Mamba layers in between",
    "layers_block_type": "per-layer block types (Mamba / attention)",
    "layer_block_types": "per-layer block types (recurrent / attention)",
    "block_configs": "per-layer blocks (skipped or linear attention, per-layer KV heads)",
    "attn_type_list": "per-layer attention types (lightning / linear attention)",
    "full_attn_idxs": "attention only at the listed layers, short convolutions elsewhere",
    "mamba_d_state": "Mamba layers (a constant-size SSM state per sequence)",
    "mamba_d_conv": "Mamba layers (a convolution state per sequence)",
    "mamba_expand": "Mamba layers",
    "mamba_num_heads": "Mamba2 layers",
    "ssm_cfg": "state-space (Mamba) layers",
    "linear_num_key_heads": "linear-attention (Gated DeltaNet) layers with a recurrent state",
    "linear_key_head_dim": "linear-attention layers with a recurrent state",
    "linear_conv_kernel_dim": "linear-attention layers with a convolution state",
    "conv_L_cache": "short-convolution layers with a convolution state",
    "num_kv_shared_layers": "later layers reuse an earlier layer's cache",
    "global_head_dim": "global layers with a different head dim than local ones",
    "num_global_key_value_heads": "global layers with a different KV-head count than local ones",
    "index_head_dim": "a sparse-attention indexer with its own per-token key cache",
    "index_n_heads": "a sparse-attention indexer with its own per-token key cache",
    "index_topk": "a sparse-attention indexer with its own per-token key cache",
}

# model_type -> what its layers are (families built on the layers above)
FAMILIES_REFUSED = {
    "mamba": "Mamba", "mamba2": "Mamba2", "falcon_mamba": "Mamba",
    "zamba": "Mamba + shared attention", "zamba2": "Mamba2 + shared attention",
    "bamba": "Mamba2 + attention",
    "recurrent_gemma": "recurrent + local attention", "rwkv": "RWKV recurrence",
    "xlstm": "xLSTM recurrence",
    # vLLM 0.33.0 dropped MiniMax-Text-01 / M1 (last supported in 0.23.0: registry.py)
    "minimax": "lightning + attention",
    # transformers 5.25.0's new families kvlib cannot count exactly (issue 31)
    "blt": "byte-level local encoder and decoder around a global transformer over patches cut "
           "by entropy at run time, so not a count per token; transformers 5.25.0 cannot build "
           "its cache (DynamicCache(config=BltConfig) fails: BltConfig has no num_hidden_layers, "
           "models/blt/modeling_blt.py:1190) and vLLM 0.34.0 has no BLT model",
}

# model_type -> (architecture, the last vLLM release that served it, where vLLM 0.34.0 says so):
# families vLLM 0.34.0 names as no longer supported (model_executor/models/registry.py:883-899,
# _PREVIOUSLY_SUPPORTED_MODELS; _raise_for_unsupported, registry.py:1310-1318, stops there)
REMOVED_FROM_VLLM = {
    # an encoder-decoder model (cross-attention to the image tokens), removed with vLLM's V0
    "mllama": ("MllamaForConditionalGeneration", "0.10.2",
               "vllm/model_executor/models/registry.py:899"),
}


def refuse_removed(outer: Fields, c: Fields) -> None:
    """ValueError naming ``model_type`` where vLLM 0.34.0 no longer serves the family."""
    for fields in (outer, c) if c is not outer else (outer,):
        family = fields.raw.get("model_type")
        if isinstance(family, str) and family in REMOVED_FROM_VLLM:
            arch, last, where = REMOVED_FROM_VLLM[family]
            raise ValueError(f"{fields.path('model_type')}={family!r}: vLLM 0.34.0 no longer "
                             f"serves {arch} (supported until v{last}: {where}), so kvlib has "
                             "no plan to make for it")


def says_something(value) -> bool:
    """False for an absent or empty field (null, 0, false, "", [], {}): it changes no layer."""
    return not (value is None or value is False or value == 0 or value in ("", [], {}))


def _all_attention(value) -> bool:
    """attn_type_list of 1s only: vLLM 0.34.0 counts ``t == 1`` as an attention layer
    (vllm/config/model.py:1791), so MiniMax M2.5/M2.7's list says every layer is attention."""
    return (isinstance(value, list) and bool(value)
            and all(v == 1 and not isinstance(v, bool) for v in value))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def refuse_unknown_layers(outer: Fields, c: Fields, family: str,
                          handled: frozenset[str] = frozenset()) -> None:
    """ValueError naming the first field (or model_type) that signals layers kvlib cannot count.

    handled: markers the family's own reader accounts for (not refused).
    """
    why = "; kvlib cannot count these layers' cache yet and refuses rather than read every " \
          "layer as full attention"
    if family in FAMILIES_REFUSED and not handled:
        raise ValueError(f"model_type {family!r} ({FAMILIES_REFUSED[family]} layers){why}")
    for fields in (c, outer) if c is not outer else (c,):
        for key, what in MARKERS.items():
            if key in handled:
                continue
            value = fields.raw.get(key)
            if key == "attn_type_list" and _all_attention(value):
                continue  # every layer attention (closed.neutral says so in the notes)
            if says_something(value):
                raise ValueError(f"{fields.path(key)}={_short(value)}: {what}{why}")
