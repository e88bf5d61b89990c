"""The closed world: every key of a config is accounted for, or the config is refused.

A reader reads the keys it understands (``Fields.seen`` records each look-up). Every
other key, at the top level, in ``text_config`` and in nested objects, is one of:

* **known not to shape the cache** (:data:`HARMLESS`: vocabulary, token ids, norms,
  dropout, RoPE scaling, MoE routing, MLP sizes, multimodal towers, ...): accounted;
* **unknown, and its name or value says it may shape the cache** (:func:`shaping_reason`:
  a layer pattern, layer or block types, windows, chunks, per-kind head counts or widths,
  sparse / index / compression / sharing / linear / state / conv settings, one value per
  layer, ...): refused with one line naming it, never read as full attention;
* **unknown and harmless-looking**: accepted, and listed as ignored, so nothing is
  dropped silently (``kvlib estimate`` and ``kvlib plan`` print the list).

The rule judges a name by its words, not by a list of names, so it refuses keys no one
has listed yet (``tests/test_closed_world.py`` runs it on published configs it was not
written from). A false refusal costs a user one line; a false acceptance costs a wrong
number, so the words are chosen wide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kvlib.models.readers.engine import Engine, data, engine_for, read_by_any
from kvlib.models.readers.fields import Fields
from kvlib.models.readers.refuse import MARKERS, says_something

__all__ = ["HARMLESS", "account", "neutral", "shaping_reason", "words"]

# Keys known not to change what a layer caches, by theme, with why. Matched by full name,
# or by the patterns below; a family reader may add its own (``Family.ignores``).
_THEMES: dict[str, tuple[str, ...]] = {
    "identity and bookkeeping": (
        "_name_or_path", "architectures", "auto_map", "model_type", "transformers_version",
        "torch_dtype", "dtype", "_attn_implementation", "_attn_implementation_autoset",
        "_commit_hash", "attribute_map",
        "return_dict", "use_cache", "torchscript", "tie_encoder_decoder", "problem_type",
        "id2label", "label2id", "task_specific_params", "finetuning_task", "tokenizer_class",
        "prefix", "chunk_size_feed_forward", "tf_legacy_loss",
        "use_bfloat16", "cross_attention_hidden_size", "is_decoder",
        "cache_implementation", "generation_config", "num_logits_to_keep", "license",
        "model_name", "name", "version", "library_name", "base_model", "organization",
        "summary_activation", "summary_first_dropout", "summary_proj_to_labels",
        "summary_type", "summary_use_proj", "pretraining_tp", "use_return_dict",
        "use_flash_attn", "use_flash_attention", "_flash_attn_2_enabled", "fused_mlp",
        "output_scores", "remove_invalid_values", "default_output_length",
        "enable_memory_efficient", "for_llm_compressor", "ep_size", "tp_size",
        "use_mamba_kernels", "is_causal", "use_sdpa",
    ),
    "norms and their placement (weights, not the cache)": (
        "do_layer_norm_before", "layernorm_embedding", "norm_head", "norm_type",
        "layer_norm_type", "layer_scale_init", "head_scale",
    ),
    "vocabulary and embeddings (weights, not the cache)": (
        "word_embed_proj_dim", "dim_model_base", "embed_dim", "hidden_dim",
        "vocab_size", "tie_word_embeddings", "embedding_multiplier", "emb_dropout",
        "scale_embedding", "padded_vocab_size", "embedding_size", "tie_embeddings",
        "vocab_size_per_layer_input", "hidden_size_per_layer_input", "logits_scaling",
        "output_multiplier", "lm_head_multiplier", "final_logit_softcapping",
        "logit_scale", "logits_scale",
    ),
    "sizes of the MLP and the residual stream (weights, not the cache)": (
        "hidden_size", "intermediate_size", "ffn_hidden_size", "n_inner", "hidden_act",
        "hidden_activation", "activation_function", "mlp_bias", "mlp_hidden_act",
        "intermediate_size_mlp", "use_double_wide_mlp", "swiglu_limit", "use_clipped_linears",
        "residual_multiplier", "residual_in_fp32", "rescale_prenorm_residual",
        "apply_residual_connection_post_layernorm", "parallel_attn", "parallel_block",
        "use_bias", "bias", "use_parallel_residual", "use_post_norm", "post_norm",
        "mlp_only_layers", "clip_qkv", "alibi", "bias_dropout_fusion",
    ),
    "attention details that leave the cached shapes alone": (
        "attention_bias", "attn_logit_softcapping", "query_pre_attn_scalar", "attn_scale",
        "attention_multiplier", "use_qk_norm", "qk_layernorm", "attn_temperature_tuning",
        "floor_scale", "attention_out_bias", "no_rope_layers", "use_bidirectional_attention",
        "partial_rotary_factor", "rotary_pct", "rotary_emb_base", "rotary_dim",
        "position_embedding_type", "max_position_embeddings", "n_positions", "n_ctx",
        "seq_length", "model_max_length", "initial_context_length", "max_sequence_length",
        "original_max_position_embeddings", "max_seq_len",
        "qk_norm", "softmax_scale", "attention_softmax_in_fp32", "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
        "attention_value_scale", "use_scaled_rope", "norm_topk_prob", "rotary_percent",
        # Muse Glimmer: multiplies the query after its QK-norm (vLLM 0.34.0
        # model_executor/models/muse_glimmer.py:15, :889), a scale, no shape
        "qk_scale_factor",
    ),
    "mixture-of-experts routing and sizes (weights, not the cache)": (
        "topk_group", "topk_method", "n_group", "scoring_func", "seq_aux", "first_k_dense_replace",
        "num_experts_per_tok", "experts_per_token", "top_k_experts", "decoder_sparse_step",
        "interleave_moe_layer_step", "enable_moe_block", "aux_loss_alpha", "routed_scaling_factor",
        "e_score_correction_bias", "moe_intermediate_size", "num_local_experts", "jitter_noise",
        "capacity_factor", "load_balance_coeff", "dense_intermediate_size", "use_grouped_topk",
        "num_expert_group",
    ),
    "the checkpoint's weight format (read for weights, not for the cache)": (
        "quantization_config", "compression_config", "quantization", "modules_to_not_convert",
    ),
    "multimodal towers and their tokens (encoders, outside the decoder's KV cache)": (
        "vision_config", "audio_config", "vision_feature_layer", "vision_feature_select_strategy",
        "mm_tokens_per_image", "multi_modal_projector_bias", "projector_hidden_act",
        "vision_soft_tokens_per_image", "image_size", "patch_size", "num_channels",
        "pixel_shuffle_ratio", "projector_dropout", "projector_input_dim", "projector_output_dim",
        "vision_output_dim", "vision_use_head", "pooling_kernel_size", "position_embedding_size",
        "spatial_merge_size", "temporal_patch_size", "vision_start_token_id",
        "vision_end_token_id", "vision_token_id", "mm_projector_type", "image_grid_pinpoints",
        "multimodal_projector_bias", "spatial_patch_size", "downsample_ratio", "fmt",
    ),
    "generation defaults (sampling settings older transformers wrote into configs)": (
        "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
        "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
        "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
        "return_dict_in_generate", "exponential_decay_length_penalty", "suppress_tokens",
        "begin_suppress_tokens", "forced_bos_token_id", "forced_eos_token_id",
    ),
    "training only": (
        "initializer_range", "initializer_factor", "router_aux_loss_coef", "router_jitter_noise",
        "output_router_logits", "gradient_checkpointing", "z_loss_coef", "use_auxiliary_loss",
        "init_std", "mup_scale", "aux_loss_coef", "router_z_loss_coef", "ignore_index",
        "layerdrop",
    ),
}

# Names matched by pattern, checked before the shaping words. The first ones (token ids,
# dropout, epsilons, outputs, initialisation, activations, biases) hold whatever else the name
# says; the others (RoPE, MoE, MLP, multipliers, towers, MTP) yield to a strong cache word.
_ABSOLUTE = 7  # how many of the patterns below are absolute
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(^|_)token_?(id|ids|index)$|^(bos|eos|pad|sep|cls|unk|mask|decoder_start)_token",
     "token ids"),
    (r"dropout$|pdrop$|_drop$|^dropout", "dropout (training only)"),
    (r"(^|_)(eps|epsilon)$|norm_eps|layer_?norm_eps|rms_?norm", "norm epsilons"),
    (r"^output_|^use_return", "what the forward pass returns"),
    (r"^initializ|_init_|^init_", "initialisation (training only)"),
    (r"(^|_)(act|activation|act_fn)$|^activation", "activation functions"),
    (r"_bias$|^bias_", "biases (weights, not the cache)"),
    (r"(^|_)rope($|_)|rotary|_theta$|^rope", "rotary position encoding (values, not widths)"),
    (r"(^|_)(moe|experts?|router|routed|routing|gate_topk)($|_)",
     "mixture-of-experts routing and sizes (weights, not the cache)"),
    (r"(^|_)(mlp|ffn|intermediate)($|_)", "the MLP (weights, not the cache)"),
    (r"(^|_)(softcap|softcapping|multiplier|scale_emb|scale_depth|logit_scale)($|_)",
     "scalar multipliers (values, not shapes)"),
    (r"(^|_)(vision|image|video|audio|mm|visual|speech|patch)($|_)",
     "multimodal towers and their tokens (encoders, outside the decoder's KV cache)"),
    (r"(^|_)(mtp|nextn)($|_)", "multi-token-prediction layers (they cache only as a "
     "speculative-decoding draft, which kvlib plans apart)"),
    (r"^time_step_|^dt_(min|max|floor|limit|init|rank)", "the SSM time step's range (values)"),
)

HARMLESS: dict[str, str] = {key: why for why, keys in _THEMES.items() for key in keys}

# Words that say a key may change what a layer keeps. Stems match inside a word
# ("slidingwindow", "kv_cache"); short words only as whole words.
_STEMS = ("swa", "dsa", "sliding", "window", "chunk", "sparse", "indexer", "index", "compress",
          "share", "sharing", "reuse", "linear", "mamba", "ssm", "conv", "recurr", "rnn",
          "lightning", "delta", "xlstm", "rwkv", "retention", "hybrid", "pattern", "latent",
          "lora", "mla", "nope", "topk", "top_k", "global", "local", "state", "cache", "memory",
          "interval", "period", "offset", "skip", "stride", "pool", "sink", "landmark",
          "segment", "gist", "persistent", "block", "layer", "attn", "attention", "head")
_WORDS = {"kv", "k", "v", "q", "qk", "dim", "dims", "rank", "type", "types", "kind", "kinds",
          "group", "groups", "ratio", "ratios", "gdn", "kda", "idx", "idxs", "ids", "heads",
          "width", "size_per_layer", "mixer", "mixers", "token_mixer", "seq", "n_heads", "mem",
          "every"}
# Words strong enough to override a harmless-looking pattern ("expert_kv_heads", "rope_kv_dim",
# "mtp_window", "vision_kv_heads" are read as cache shapes, not as MoE, RoPE, MTP or vision)
_STRONG = ("kv", "window", "sliding", "swa", "chunk", "sparse", "index", "cache", "latent",
           "lora", "conv", "state", "ssm", "mamba", "linear", "recurr", "hybrid", "pattern",
           "sink", "landmark", "compress")
# True only on a model whose decoder keeps a second cache (cross-attention) or fewer heads
_REFUSE_IF_SET = {
    "is_encoder_decoder": "an encoder-decoder model: its decoder also keeps a cross-attention "
                          "cache of the encoder's output, which kvlib does not count",
    "add_cross_attention": "cross-attention layers keep a cache of the encoder's output, which "
                           "kvlib does not count",
    "pruned_heads": "pruned heads leave some layers with fewer key/value heads",
}
_LAYER_KINDS = {"full_attention", "sliding_attention", "chunked_attention", "linear_attention"}
# Harmless keys whose objects are not walked: other towers and bookkeeping
_OPAQUE = {"vision_config", "audio_config", "auto_map", "id2label", "label2id",
           "task_specific_params", "generation_config", "attribute_map", "quantization_config",
           "compression_config"}
# Values that name layer kinds, inside a list or a string
_KIND_WORDS = re.compile(r"attention|attn|mamba|ssm|linear|conv|sliding|swa|full|global|local|"
                         r"recurrent|rnn|delta|lightning|mla|chunk|sparse|hybrid", re.I)


def words(key: str) -> list[str]:
    """A key's words: ``numKVHeads`` -> ``['num', 'kv', 'heads']``; ``swa_head_dim`` ->
    ``['swa', 'head', 'dim']``."""
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key)  # KVHeads -> KV_Heads
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", spaced)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def _harmless(key: str) -> str | None:
    if key in HARMLESS:
        return HARMLESS[key]
    name = key.lower()
    strong = any(w.startswith(_STRONG) for w in words(key))
    return next((why for i, (pattern, why) in enumerate(_PATTERNS)
                 if re.search(pattern, name) and (i < _ABSOLUTE or not strong)), None)


def _per_layer(value, n: int) -> bool:
    if isinstance(value, str):  # a pattern string ("M-M*", "AMAM"), not a word ("gelu")
        symbolic = value.isupper() or not any(ch.isalpha() for ch in value)
        return n > 1 and len(value) == n and 1 < len(set(value)) <= 6 and symbolic
    return isinstance(value, list) and n > 1 and len(value) == n


def shaping_reason(key: str, value, n: int) -> str | None:
    """Why an unknown ``key`` may shape the cache (a word of its name, or its value), else None.

    n: the model's layer count (a list or string of n entries is one value per layer).
    """
    name = key.lower()
    ws = words(key)
    stem = next((s for s in _STEMS if s in name), None)
    if stem is not None:
        return f"its name says {stem!r}"
    word = next((w for w in ws if w in _WORDS), None)
    if word is not None:
        return f"its name says {word!r}"
    if _per_layer(value, n):
        return f"it holds one value for each of the {n} layers"
    if isinstance(value, list) and any(isinstance(v, str) and _KIND_WORDS.search(v)
                                       for v in value):
        return "its values name layer kinds"
    if isinstance(value, str) and _KIND_WORDS.fullmatch(value.strip()):
        return "its value names a layer kind"
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _refusal(path: str, value, reason: str) -> ValueError:
    return ValueError(f"{path}={_short(value)}: kvlib does not know this key and {reason}, so "
                      "it may shape the cache; kvlib refuses rather than read the model without "
                      "it")


# Entries of a per-layer type list that mean "an ordinary full-attention layer"
_FULL_ENTRIES = {"full_attention", "full", "attention", "global", "global_attention"}


# A window key and the family's switch that turns it off (Qwen2Config: sliding_window and
# max_window_layers apply only with use_sliding_window true, which defaults to false)
_SWITCHED = {"max_window_layers": "use_sliding_window", "sliding_window": "use_sliding_window"}


def neutral(key: str, value, obj: Mapping | None = None,
            switches: frozenset[str] = frozenset()) -> str | None:
    """What a value that means "nothing special" was read as, else None: a layer-type list of
    full-attention entries only (``attn_type_list`` of 1s: vLLM counts ``t == 1`` as an
    attention layer, config/model.py:1791; GLM's ``indexer_types`` of "full": each layer its own
    indexer, model_executor/models/utils.py:1026-1042), a gate or switch set to false, null, or a
    window key whose family switch (one of ``switches``: the family's engine reads it) is off."""
    if value is None or value == [] or value == {} or value == "":
        return f"{key}={value!r} is empty: read as absent"
    switch = _SWITCHED.get(key)
    if switch in switches and obj is not None and obj.get(switch) in (False, None):
        state = "false" if obj.get(switch) is False else "absent (false by default)"
        return (f"{key}={value!r} is read as inert: {switch} is {state}, so no layer slides "
                "(transformers' Qwen2Config, vLLM models/qwen2.py:248-249)")
    if value is False:
        return f"{key}=false is read: the feature it switches is off, nothing changes in the cache"
    if isinstance(value, list) and value:
        if all(isinstance(v, str) and v.lower() in _FULL_ENTRIES for v in value):
            return (f"{key} is read: all {len(value)} entries are {value[0]!r}, an ordinary "
                    "full-attention layer each (nothing special)")
        if key == "attn_type_list" and all(v == 1 and v is not True for v in value):
            return (f"attn_type_list is read: all {len(value)} entries are 1, which vLLM counts "
                    "as attention layers (config/model.py:1791), so every layer is full "
                    "attention")
    return None


def _engine_refusal(path: str, value, engine: Engine, family: str) -> ValueError:
    return ValueError(f"{path}={_short(value)}: {engine.name} reads this key where it builds "
                      f"{engine.model_type}'s layers ({engine.keys[path.rsplit('.', 1)[-1]]}) "
                      f"and kvlib's reader for {family or 'this family'} does not; kvlib "
                      "refuses rather than read the model without it")


# The family-independent reads vLLM 0.34.0 makes of ``hf_text_config``, the text_config of a
# wrapper (transformers_utils/config.py:1303-1317, get_text_config()), never of the wrapper
# itself: model_arch_config_convertor.py:80 (num_hidden_layers), :83 (num_attention_heads), :95
# (head_dim), :100 (qk_nope_head_dim), :112 (hidden_size_per_head), :295 (model_type), :333
# (model); config/model.py:1647 (sliding_window), :1796 (layer_types), :1825
# (mamba_chunk_size), :1828 (chunk_size), :2109 (kv_lora_rank), :2115 (is_causal).
TEXT_CONFIG_READS = frozenset({
    "num_hidden_layers", "num_attention_heads", "head_dim", "qk_nope_head_dim",
    "hidden_size_per_head", "model_type", "model", "sliding_window", "layer_types",
    "mamba_chunk_size", "chunk_size", "kv_lora_rank", "is_causal"})


def _text_config_only(key: str, engine: Engine) -> str | None:
    """Where vLLM reads ``key``, when the wrapper's engine reads it only from the text_config
    (one of the family-independent reads of :data:`TEXT_CONFIG_READS`), else None."""
    common = data()["common"]["vllm"]
    if key in TEXT_CONFIG_READS and key in common and engine.keys.get(key) == common[key]:
        return common[key]
    return None


def _beside_text(path: str, key: str, value, text: Mapping, engine: Engine) -> str | None:
    """What a wrapper's key beside its text_config was read as, when vLLM does not read it at
    the wrapper: a family-independent read that vLLM makes of the text_config only, or a copy
    of a text_config key that the wrapper's engine does not read at all. Else None."""
    inside = (f"text_config.{key}={_short(text[key])}" if key in text
              else f"text_config has no {key}")
    where = _text_config_only(key, engine)
    if where is not None:
        return (f"{path}={_short(value)} beside text_config is not read: {engine.name} reads "
                f"{key} from the text_config ({where}, hf_text_config), as kvlib does ({inside})")
    if key in text and key not in engine.keys:
        return (f"{path}={_short(value)} repeats a text_config key ({inside}) at the top level, "
                f"where {engine.name} does not read it for {engine.model_type} (it builds the "
                "language model from the text_config); kvlib reads the text_config's")
    return None


def _switches(engine: Engine | None, obj: Mapping) -> frozenset[str]:
    """The window switches this family has: its engine reads them, or its config writes them."""
    keys = engine.keys if engine is not None else {}
    return frozenset(s for s in set(_SWITCHED.values()) if s in keys or s in obj)


def _refuse_if_set(path: str, key: str, value) -> None:
    """A key that changes what the model is when set (encoder-decoder, ...): refused by name
    unless its value says nothing (false, null, empty)."""
    if says_something(value):
        raise ValueError(f"{path}={_short(value)}: {_REFUSE_IF_SET[key]}; kvlib refuses rather "
                         "than read the model without it")


def _walk_known(obj: Mapping, prefix: str, seen: set[str], ignores: frozenset[str],
                ignored: list[str], engine: Engine, family: str, notes: list[str],
                skip: frozenset[str] = frozenset(), text: Mapping | None = None) -> None:
    """A family an engine knows: a key is refused only when the engine reads it where it
    builds a layer (and kvlib's reader does not); any other key is listed as ignored.

    text: the text_config, when ``obj`` is the wrapper around it: a wrapper's key that vLLM
    reads only from the text_config (Qwen2.5-VL checkpoints repeat ``num_attention_heads`` at
    the top level) is said and not refused."""
    for key, value in obj.items():
        path = prefix + str(key)
        if key in _REFUSE_IF_SET:
            _refuse_if_set(path, key, value)
            continue  # false, null or empty: a decoder-only model with all its heads
        if key in skip or path in seen or key in ignores or key in _OPAQUE:
            continue
        if key in MARKERS and not says_something(value):
            continue  # refuse.py: an empty marker describes no special layer
        if text is not None and not _harmless(str(key)):
            said = _beside_text(path, str(key), value, text, engine)
            if said is not None:
                notes.append(said)
                continue
        if key in engine.keys:
            if _harmless(str(key)):
                continue  # read for weights, norms, RoPE values or routing, not cache shapes
            said = neutral(str(key), value, obj, _switches(engine, obj))
            if said is None:
                raise _engine_refusal(path, value, engine, family)
            notes.append(said)
            continue
        if _harmless(str(key)):
            continue
        if key in read_by_any() and shaping_reason(str(key), value, 0) and says_something(
                value):
            other, where = read_by_any()[key]
            said = neutral(str(key), value, obj, _switches(engine_for(other), obj))
            if said is not None:
                notes.append(said)
                continue
            raise ValueError(f"{path}={_short(value)}: {engine.name} does not read this key "
                             f"for {engine.model_type} but reads it where it builds {other}'s "
                             f"layers ({where}): a config of another family? kvlib refuses "
                             "rather than read the model without it")
        ignored.append(path)


def _walk(obj: Mapping, prefix: str, seen: set[str], ignores: frozenset[str], n: int,
          ignored: list[str], skip: frozenset[str] = frozenset()) -> None:
    for key, value in obj.items():
        path = prefix + str(key)
        if key in _REFUSE_IF_SET:
            _refuse_if_set(path, key, value)
            continue  # false, null or empty: a decoder-only model with all its heads
        if key in skip:
            continue
        if path in seen or key in ignores or _harmless(str(key)):
            if isinstance(value, Mapping) and key not in _OPAQUE and path not in seen:
                _walk_names(value, path + ".")  # rope_scaling, ffn_config, ...: names only
            continue
        if key in MARKERS and not says_something(value):
            continue  # refuse.py: an empty marker describes no special layer
        if value is None:
            continue  # null holds nothing that could be dropped
        if value == {} or value == []:
            ignored.append(path)  # says nothing, whatever its name
            continue
        reason = shaping_reason(str(key), value, n)
        if isinstance(value, Mapping) and reason is None:
            _walk(value, path + ".", seen, ignores, n, [])  # refuses a shaping child
            ignored.append(path)  # else the object is listed once, by its own name
            continue
        if reason is not None:
            raise _refusal(path, value, reason)
        ignored.append(path)


def _walk_names(obj: Mapping, prefix: str) -> None:
    """Inside a harmless object (``rope_scaling``, ``ffn_config``): refuse a key whose name holds
    a strong cache word (``rope_scaling.sliding_window``). Values are not judged: RoPE's
    per-frequency factors are lists as long as a model may be deep."""
    for key, value in obj.items():
        if key in _LAYER_KINDS:
            continue  # RoPE settings per layer kind (rope_parameters.sliding_attention)
        if any(w.startswith(_STRONG) for w in words(str(key))):
            raise _refusal(prefix + str(key), value, f"its name says {str(key)!r} inside "
                           f"{prefix.rstrip('.')}")
        if isinstance(value, Mapping):
            _walk_names(value, f"{prefix}{key}.")


def account(outer: Fields, c: Fields, n: int, ignores: frozenset[str] = frozenset(),
            family: str = "", notes: list[str] | None = None) -> tuple[str, ...]:
    """The keys kvlib ignored, in config order; ValueError naming the first unknown key that
    may shape the cache.

    outer: the whole config; c: the language model's fields (``text_config`` or ``outer``);
    n: its layer count; ignores: keys the family's reader knows do not shape its cache;
    family: the model_type read; notes: where to say what a "nothing special" value was read as.

    A family an engine knows (:mod:`.engine`): a key is refused only when that engine reads it
    where it builds a layer, naming the file and line; the wrapper around a ``text_config`` is
    judged by its own model_type's engine when one knows it. A family no engine knows: the
    word rule (:func:`shaping_reason`).
    """
    ignored: list[str] = []
    notes = notes if notes is not None else []
    engine = engine_for(family) if family else None
    if engine is not None:
        _walk_known(c.raw, c.prefix, c.seen, ignores, ignored, engine, family, notes)
        if c is not outer:
            wrapper = engine_for(outer.raw.get("model_type") or "") if isinstance(
                outer.raw.get("model_type"), str) else None
            _walk_known(outer.raw, outer.prefix, outer.seen, ignores, ignored,
                        wrapper or engine, family, notes,
                        skip=frozenset({c.prefix.rstrip(".")}), text=c.raw)
        return tuple(ignored)
    if c is not outer:
        _walk(c.raw, c.prefix, c.seen, ignores, n, ignored)
        _walk(outer.raw, outer.prefix, outer.seen, ignores, n, ignored,
              skip=frozenset({c.prefix.rstrip(".")}))
    else:
        _walk(outer.raw, outer.prefix, outer.seen, ignores, n, ignored)
    return tuple(ignored)
