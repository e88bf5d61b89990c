"""The shrinking rule: a bundled config.json made tiny, its cache *structure* kept.

The cross-check (docs/crosscheck.md) builds each bundled model in transformers with
random weights. Real sizes would take gigabytes, so :func:`shrink` rewrites the sizes
and keeps every field that decides what the cache looks like. Pure: dict in, dict out.

Kept as they are (they decide the structure):
  model_type, multi_query, new_decoder_architecture, use_sliding_window,
  sliding_window_pattern, no_rope_layer_interval, interleave_moe_layer_step,
  rope settings, norms, activations, every flag not named below.

Rewritten (symbols as in kvlib: N_h query heads, N_g key/value heads):
  * layers: P = the period of the layer pattern, read from the config
    (:func:`pattern_period`); the tiny model keeps n = 2P layers when 2P <= 8, else
    P (Gemma 3: 6), at least 2, at most the real count. ``layer_types`` and
    ``no_rope_layers`` (when listed) are cut to their first n entries;
    ``max_window_layers`` (Qwen2) keeps every layer full if it did, else keeps a split;
    ``first_k_dense_replace`` (DeepSeek) becomes 1, so one dense and one MoE layer.
  * heads: MHA (N_g = N_h) -> 4 : 4; MQA (N_g = 1) -> 4 : 1; GQA keeps its ratio
    r = N_h / N_g with N_g = 2 (Llama 3: 16 : 2). Falcon's ``multi_query`` stays,
    so its single KV head comes from the same field as in the real model.
  * head_dim: explicit stays explicit, as 16; derived stays derived (no head_dim
    written). hidden_size / N_h is head_dim + 8 when the real ratio is above
    head_dim, head_dim - 8 when below, head_dim when equal; so a reader that
    derives head_dim where the config states it fails as it would on the real file.
  * MLA: kv_lora_rank 64, qk_rope_head_dim 8 (the real 512 : 64 = 8 : 1),
    qk_nope_head_dim and v_head_dim 16, q_lora_rank 48 (None stays None).
  * windows: every ``sliding_window`` becomes WINDOW = 8 tokens (an inert one, Qwen2.5's,
    stays inert: ``use_sliding_window`` is kept), ``attention_chunk_size`` becomes
    CHUNK = 12, so contexts can lie below, at and above both.
  * sizes: intermediate 32, MoE intermediate 16, 4 experts with at most 2 per token
    (DeepSeek: 2 groups, top-1 group), vocabulary 128. Positions stay as they are (RoPE
    tables are computed per position; GPT-2's 1024 learned positions are small).

Dropped: quantization_config (random weights are not quantized), architectures, auto_map,
dtypes, version strings. Token ids become None (they index the real vocabulary).
Llama 4's ``attn_temperature_tuning`` 4 becomes True (transformers 5 validates it as a bool;
it scales NoPE-layer queries and plays no part in the cache).
A wrapped config (Gemma 3, Llama 4) is replaced by its ``text_config``: the
language model is what holds the cache, and transformers builds it from that.
"""

from __future__ import annotations

import copy

__all__ = ["WINDOW", "CHUNK", "HEAD_DIM", "loadable", "shrink", "pattern_period", "tiny_layers",
           "smallest_period"]

WINDOW = 8  # every sliding window, in tokens
CHUNK = 12  # every attention chunk (Llama 4), in tokens
HEAD_DIM = 16
MAX_LAYERS = 8
GEMMA3_PATTERN = 6  # Gemma3TextConfig: kwargs.get("sliding_window_pattern", 6)
LLAMA4_INTERVAL = 4  # Llama4TextConfig.no_rope_layer_interval default

_DROP = {"quantization_config", "architectures", "auto_map", "torch_dtype", "dtype",
         "transformers_version", "_name_or_path", "task_specific_params"}
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")
_MLA = {"kv_lora_rank": 64, "qk_rope_head_dim": 8, "qk_nope_head_dim": HEAD_DIM,
        "v_head_dim": HEAD_DIM}
_SIZES = {"intermediate_size": 32, "intermediate_size_mlp": 32, "moe_intermediate_size": 16,
          "vocab_size": 128}


def smallest_period(seq: list) -> int:
    """The least P with seq[i] == seq[i % P] for every i ([a, b, a, b] -> 2)."""
    return next(p for p in range(1, len(seq) + 1)
                if all(seq[i] == seq[i % p] for i in range(len(seq))))


def pattern_period(c: dict) -> int:
    """The period of the layer pattern, from the fields transformers reads, first match wins:

    1. ``layer_types`` listed: its smallest period (gpt-oss: 2);
    2. ``no_rope_layers`` listed and non-empty (Llama 4): its smallest period;
    3. ``sliding_window_pattern`` / ``_sliding_window_pattern``, else 6 for Gemma 3;
    4. Llama 4 without ``no_rope_layers``: ``no_rope_layer_interval`` (default 4);
    5. Gemma 2 alternates by architecture: 2;
    6. otherwise every layer alike: 1.
    """
    family = str(c.get("model_type", "")).removesuffix("_text")
    if isinstance(c.get("layer_types"), list):
        return smallest_period(c["layer_types"])
    if c.get("no_rope_layers"):
        return smallest_period(c["no_rope_layers"])
    for key in ("sliding_window_pattern", "_sliding_window_pattern"):
        if c.get(key):
            return c[key]
    if family == "gemma3":
        return GEMMA3_PATTERN
    if family == "llama4":
        return c.get("no_rope_layer_interval") or LLAMA4_INTERVAL
    if family == "gemma2":
        return 2
    return 1


def tiny_layers(real_layers: int, period: int) -> int:
    """n = 2P when 2P <= 8, else P; at least 2, at most the real count."""
    n = 2 * period if 2 * period <= MAX_LAYERS else period
    return min(real_layers, max(2, n))


def _heads(n_h: int, n_g: int) -> tuple[int, int]:
    if n_g == n_h:
        return 4, 4
    if n_g == 1:
        return 4, 1
    assert n_h % n_g == 0, (n_h, n_g)
    return 2 * (n_h // n_g), 2


def loadable(config: dict) -> dict:
    """The language model's config at its real sizes, as transformers 5 accepts it.

    ``text_config`` when wrapped; dropped and converted fields as in the module docstring.
    """
    c = copy.deepcopy(config.get("text_config") or config)
    for key in _DROP:
        c.pop(key, None)
    for key in _TOKEN_IDS:  # None, not absent: the class default would index the vocabulary
        c[key] = None
    if isinstance(c.get("attn_temperature_tuning"), int):  # Llama 4's 4; transformers 5: bool
        c["attn_temperature_tuning"] = bool(c["attn_temperature_tuning"])
    return c


def shrink(config: dict) -> dict:
    """A tiny config with the cache structure of ``config`` (a config.json as a dict)."""
    c = loadable(config)
    layers_key = "n_layer" if "n_layer" in c else "num_hidden_layers"
    real_n = c[layers_key]
    n = tiny_layers(real_n, pattern_period(c))
    c[layers_key] = n
    for key in ("layer_types", "no_rope_layers"):
        if c.get(key):
            c[key] = c[key][:n]
    if c.get("max_window_layers") is not None:
        m = c["max_window_layers"]
        c["max_window_layers"] = n if m >= real_n else max(1, min(m, n - 1))
    if c.get("first_k_dense_replace"):
        c["first_k_dense_replace"] = 1

    heads_key = "n_head" if "n_head" in c else "num_attention_heads"
    kv_key = next((k for k in ("num_key_value_heads", "num_kv_heads") if c.get(k)), None)
    n_h = c[heads_key]
    n_g = c[kv_key] if kv_key else n_h
    t_h, t_g = _heads(n_h, n_g)
    c[heads_key] = t_h
    if kv_key:
        c[kv_key] = t_g

    hidden_key = "n_embd" if "n_embd" in c else "hidden_size"
    if "kv_lora_rank" in c:
        c.update({k: v for k, v in _MLA.items() if k in c})
        if c.get("q_lora_rank") is not None:
            c["q_lora_rank"] = 48
        c[hidden_key] = t_h * HEAD_DIM
    elif c.get("head_dim") is not None:
        real_ratio = c[hidden_key] / n_h
        step = 8 if real_ratio > c["head_dim"] else -8 if real_ratio < c["head_dim"] else 0
        c["head_dim"] = HEAD_DIM
        c[hidden_key] = t_h * (HEAD_DIM + step)
    else:
        c[hidden_key] = t_h * HEAD_DIM

    if c.get("sliding_window") is not None:
        c["sliding_window"] = WINDOW
    if c.get("attention_chunk_size") is not None:
        c["attention_chunk_size"] = CHUNK
    for key, value in _SIZES.items():
        if c.get(key) is not None:
            c[key] = value
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        if c.get(key):
            c[key] = 4
    for key in ("num_experts_per_tok", "experts_per_token"):
        if c.get(key):
            c[key] = min(c[key], 2)
    if c.get("n_shared_experts"):
        c["n_shared_experts"] = 1
    if c.get("n_group"):
        c["n_group"], c["topk_group"] = 2, 1
    return c
