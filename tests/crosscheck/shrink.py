"""The shrinking rule: a config.json made tiny, its cache *structure* kept.

The cross-check (docs/crosscheck.md) builds each bundled model in transformers with
random weights. Real sizes would take gigabytes, so :func:`shrink` rewrites the sizes
and keeps every field that decides what the cache looks like. Pure: dict in, dict out.

Kept as they are (they decide the structure):
  model_type, multi_query, new_decoder_architecture, use_sliding_window,
  sliding_window_pattern, no_rope_layer_interval, interleave_moe_layer_step,
  full_attention_interval, attn_layer_period / attn_layer_offset, attention_k_eq_v,
  every convolution kernel (linear_conv_kernel_dim, conv_kernel, mamba_d_conv, conv_L_cache),
  mamba_expand, mamba_ssm_cache_dtype, the dtype (torch_dtype / dtype: vLLM keeps states in
  it), rope settings, norms, activations, every flag not named below.

Rewritten (symbols as in kvlib: N_h query heads, N_g key/value heads):
  * layers: P = the period of the layer pattern, read from the config
    (:func:`pattern_period`); the tiny model keeps n = 2P layers when 2P <= 8, else
    P (Gemma 3: 6), at least 2, at most the real count. A pattern with no period of 8 or
    less (Nemotron-H's ``hybrid_override_pattern`` / ``layers_block_type``, an LFM2 layer
    list, Kimi Linear's ``linear_attn_config``) keeps its shortest prefix that holds every
    kind of layer (:func:`tiny_layer_count`). A pattern periodic only after a prefix of k
    layers (:func:`periodic_tail`, k + P <= 8: MiMo-V2-Flash 1 + 6, GLM-5.2's indexers 2 + 4)
    keeps k + 2P layers, or k + P when that is over 8. Per-layer lists (``layer_types``,
    ``no_rope_layers``, ``activation_sparsity_pattern``, ``layers_block_type``,
    ``attn_type_list``, ``indexer_types``, ``mlp_layer_types``, ``hybrid_layer_pattern``, a
    list ``moe_layer_freq``, DeepSeek V4's ``compress_ratios``, whose entries past
    ``num_hidden_layers`` are multi-token-prediction layers and are dropped) and
    ``hybrid_override_pattern`` are cut to their first n entries; Kimi Linear's 1-based
    ``kda_layers`` / ``full_attn_layers`` keep the numbers up to n, and lists of layer numbers
    (Kolibri 1.1's ``index_layers``, ``mlp_only_layers``, Inkling's ``local_layer_ids``) the
    numbers below n. Inkling 2 Loop's loop (:func:`_loop`): its attention-residual block
    becomes 2 layers, each end of the loop keeps its number of blocks (the end at most n),
    ``loop_num_passes`` is kept, so each pass still keeps its own caches. A config with no
    ``num_hidden_layers`` (Nemotron 3 Ultra: transformers and kvlib count
    ``layers_block_type``) gets none;
    ``max_window_layers`` (Qwen2) keeps every layer full if it did, else keeps a split;
    ``first_k_dense_replace`` (DeepSeek) becomes 1, so one dense and one MoE layer, or, where
    the file also writes ``mlp_layer_types`` (GLM-5.2), the cut list's leading dense layers.
  * KV sharing (``num_kv_shared_layers`` s > 0, Gemma 3n / Gemma 4): the unshared layers
    shrink as above, then min(s, P) shared layers follow them, so both the producing
    pattern and the sharing are kept.
  * heads: MHA (N_g = N_h) -> 4 : 4; MQA (N_g = 1) -> 4 : 1; GQA keeps its ratio
    r = N_h / N_g with N_g = 2 (Llama 3: 16 : 2). Falcon's ``multi_query`` stays,
    so its single KV head comes from the same field as in the real model. A config with
    a second KV-head count (Gemma 4's ``num_global_key_value_heads``) keeps all three
    in their real proportion, divided by their greatest common divisor (16 : 8 : 2 -> 8 : 4 : 1).
    MiMo-V2's and Inkling's sliding layers' own ``swa_num_attention_heads`` /
    ``swa_num_key_value_heads`` keep the four counts' proportion with the full layers at
    N_g = 2 (MiMo-V2 64 : 4, 64 : 8 -> 32 : 2, 32 : 4; Inkling 64 : 8, 64 : 16 -> 16 : 2, 16 : 4).
  * head_dim: explicit stays explicit, as 16; derived stays derived (no head_dim
    written). hidden_size / N_h is head_dim + 8 when the real ratio is above
    head_dim, head_dim - 8 when below, head_dim when equal; so a reader that
    derives head_dim where the config states it fails as it would on the real file.
    ``attention_head_dim`` (an older Nemotron-H name) is shrunk like ``head_dim`` and
    written as ``head_dim``, the name transformers' NemotronHConfig and vLLM read;
    a hidden_size that is no whole multiple of N_h (Qwen3.5-27B: 5120 / 24) stays so in the
    tiny config (+2, or +1 with 2 heads), so kvlib says the same about head_dim for both;
    ``global_head_dim`` keeps its ratio to head_dim (Gemma 4: 512 / 256 -> 32), and so does
    MiniMax-M2's partial-RoPE ``rotary_dim`` (64 / 128 -> 8). Values narrower than keys
    (MiMo-V2's ``v_head_dim``, ``swa_head_dim``, ``swa_v_head_dim``): values 16 wide, keys in
    the real ratio (192 : 128 -> 24 : 16), which also keeps its partial RoPE width even.
  * MLA: kv_lora_rank 64, qk_rope_head_dim 8 (the real 512 : 64 = 8 : 1),
    qk_nope_head_dim and v_head_dim 16, q_lora_rank 48 (None stays None); where the file
    writes them (GLM-5), ``qk_head_dim`` = nope + rope (24) and ``head_dim`` = the RoPE
    width (8), as transformers' GlmMoeDsaConfig sets them.
    DeepSeek V3.2's indexer: ``index_head_dim`` stays 128 (vLLM stores one fp32 scale per
    128 fp8 values, so a smaller one would change the layout), 4 indexer heads, top-4.
  * DeepSeek V4: ``head_dim`` 512 and ``qk_rope_head_dim`` 64 are kept (vLLM 0.34.0's 584-byte
    fp8_ds_mla entry is written for those only, and kvlib refuses any other), and so are the
    compression ratios 4 and 128 (vLLM builds no other compressor); hidden_size 4 x 16,
    q_lora_rank 48, o_lora_rank 16, index_head_dim 128; the window becomes 8 as every other.
  * linear attention (Gated DeltaNet): N_lk key heads -> 2, value heads keep their ratio
    N_lv / N_lk; key head dim 16 and value head dim 8 (unequal on purpose: a reader that
    swaps them changes the convolution's channel count). Kimi Delta Attention
    (``linear_attn_config``): ``num_heads`` 2, ``head_dim`` 16 (one width for q, k and v),
    ``short_conv_kernel_size`` kept.
  * Mamba2: n_groups N_sg -> 2 (1 stays 1), heads keep their ratio N_sh / N_sg,
    mamba_head_dim 8, ssm_state_size 16. Mamba (Jamba): mamba_d_state 16; its inner size
    is mamba_expand x hidden_size. Short convolution (LFM2): conv_dim follows hidden_size
    when it equals it (transformers convolves hidden_size channels).
  * windows: every ``sliding_window`` becomes WINDOW = 8 tokens (an inert one, Qwen2.5's,
    stays inert: ``use_sliding_window`` is kept), and so does Gemma 2's
    ``sliding_window_size`` alias where the file writes it (kvlib requires the two to
    agree, as they do in the real file), and dots3 Note's ``sliding_window_size``, its only
    window key; ``attention_chunk_size`` becomes
    CHUNK = 12, so contexts can lie below, at and above both.
  * sizes: intermediate 32, MoE and shared-expert intermediate 16, 4 experts with at most
    2 per token (DeepSeek: 2 groups, top-1 group; a single group stays single), MoE latent
    width (Nemotron 3 Ultra's ``moe_latent_size``) 16, vocabulary
    128 (Gemma's per-layer-input vocabulary too, and Inkling 2's ``unpadded_vocab_size``, the
    rows of its head; None stays None), per-layer input width 8 (0 stays 0),
    LAuReL rank 4. Positions stay as they are (RoPE tables are computed per position;
    GPT-2's 1024 learned positions are small).

Dropped: quantization_config (random weights are not quantized), architectures, auto_map,
version strings. Token ids become None (they index the real vocabulary).
Llama 4's ``attn_temperature_tuning`` 4 becomes True (transformers 5 validates it as a bool;
it scales NoPE-layer queries and plays no part in the cache). Kimi-K3's ``hidden_act``
"situ" becomes "silu": transformers 5.24's kimi_linear (written for Kimi-Linear-48B) has no
SiTU activation (``ACT2FN``), and an MLP activation plays no part in the cache.
A wrapped config (Gemma 3, Gemma 4, Llama 4) is replaced by its ``text_config``: the
language model is what holds the cache, and transformers builds it from that.
"""

from __future__ import annotations

import copy
import math

__all__ = ["WINDOW", "CHUNK", "HEAD_DIM", "INDEX_HEAD_DIM", "loadable", "shrink",
           "pattern_period", "pattern", "tiny_layers", "tiny_layer_count", "smallest_period",
           "shared_layers"]

WINDOW = 8  # every sliding window, in tokens
CHUNK = 12  # every attention chunk (Llama 4), in tokens
HEAD_DIM = 16
INDEX_HEAD_DIM = 128  # DeepSeek V3.2's indexer key: vLLM's fp8 block of 128 values + 1 scale
MAX_LAYERS = 8
GEMMA3_PATTERN = 6  # Gemma3TextConfig: kwargs.get("sliding_window_pattern", 6)
LLAMA4_INTERVAL = 4  # Llama4TextConfig.no_rope_layer_interval default

_DROP = {"quantization_config", "architectures", "auto_map", "transformers_version",
         "_name_or_path", "task_specific_params"}
_TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")
_PER_LAYER = ("layer_types", "no_rope_layers", "activation_sparsity_pattern",
              "layers_block_type", "attn_type_list", "indexer_types", "mlp_layer_types",
              "hybrid_layer_pattern", "moe_layer_freq", "kv_source_layers", "compress_ratios")
# Lists of layer numbers (Kolibri 1.1's indexer and dense-MLP layers, Inkling's sliding layers):
# those below n are kept.
_LAYER_NUMBERS = ("index_layers", "mlp_only_layers", "local_layer_ids")
# Inkling 2 Loop's attention-residual block, in layers, in the tiny model (:func:`_loop`)
LOOP_BLOCK = 2
# Written patterns, read together (:func:`pattern`).
_PATTERNS = ("layer_types", "no_rope_layers", "hybrid_override_pattern", "layers_block_type",
             "hybrid_layer_pattern", "indexer_types", "attn_type_list", "compress_ratios")
# MLA sizes of dots3 Note's sliding layers, each scaled as its DSA counterpart is (swa_ -> key)
_SWA_MLA = {"swa_kv_lora_rank": "kv_lora_rank", "swa_qk_rope_head_dim": "qk_rope_head_dim",
            "swa_qk_nope_head_dim": "qk_nope_head_dim", "swa_v_head_dim": "v_head_dim",
            "swa_q_lora_rank": "q_lora_rank", "swa_head_dim": "head_dim"}
_MLA = {"kv_lora_rank": 64, "qk_rope_head_dim": 8, "qk_nope_head_dim": HEAD_DIM,
        "v_head_dim": HEAD_DIM}
_SIZES = {"intermediate_size": 32, "intermediate_size_mlp": 32, "moe_intermediate_size": 16,
          "shared_expert_intermediate_size": 16, "moe_shared_expert_intermediate_size": 16,
          "vocab_size": 128, "vocab_size_per_layer_input": 128, "laurel_rank": 4,
          "index_n_heads": 4, "index_topk": 4, "mamba_head_dim": 8, "ssm_state_size": 16,
          "mamba_d_state": 16, "linear_key_head_dim": HEAD_DIM, "linear_value_head_dim": 8,
          "moe_latent_size": 16, "o_lora_rank": 16, "unpadded_vocab_size": 128}
KDA_HEADS = 2  # Kimi Linear's linear_attn_config num_heads (q, k and v heads alike)


def smallest_period(seq) -> int:
    """The least P with seq[i] == seq[i % P] for every i ([a, b, a, b] -> 2)."""
    return next(p for p in range(1, len(seq) + 1)
                if all(seq[i] == seq[i % p] for i in range(len(seq))))


def shared_layers(c: dict) -> int:
    """``num_kv_shared_layers`` (0 when absent or null)."""
    return c.get("num_kv_shared_layers") or 0


def _kda_pattern(c: dict) -> list | None:
    """Kimi Linear's layers from ``linear_attn_config``'s 1-based lists ("K" KDA, "F" MLA)."""
    la = c.get("linear_attn_config")
    if not isinstance(la, dict) or "kda_layers" not in la:
        return None
    n = len(la["kda_layers"]) + len(la.get("full_attn_layers", []))
    return ["K" if i + 1 in la["kda_layers"] else "F" for i in range(n)]


def pattern(c: dict) -> list | None:
    """The per-layer pattern a config writes out, if it writes one (shared layers excluded).

    ``layer_types``, ``no_rope_layers``, Nemotron-H's ``hybrid_override_pattern`` (one
    character per layer) or ``layers_block_type``, MiMo-V2's ``hybrid_layer_pattern`` (1
    sliding, 0 full), GLM-5.2's / Mistral Large 4's ``indexer_types`` ("full" or "shared"
    indexer), MiniMax-M2's ``attn_type_list``: one list when the config writes one of them,
    layer by layer tuples when it writes several (Mistral Large 4: ``layer_types``,
    ``no_rope_layers`` and ``indexer_types``), with, where ``kv_source_layers`` makes a layer
    read another's K/V (Kolibri 1.1), whether each layer keeps its own; else Kimi Linear's
    ``linear_attn_config``; None when the pattern follows from a rule instead.
    """
    lists = []
    for key in _PATTERNS:
        if c.get(key):
            seq = list(c[key])
            if key == "compress_ratios":  # DeepSeek V4: entries past the layers are MTP layers
                seq = seq[:c.get("num_hidden_layers", len(seq))]
            lists.append(seq[:len(seq) - shared_layers(c)] if key == "layer_types" else seq)
    sources = c.get("kv_source_layers")
    if lists and isinstance(sources, list) and any(s != i for i, s in enumerate(sources)):
        lists.append([s == i for i, s in enumerate(sources)])  # keeps its own K/V
    if not lists:
        return _kda_pattern(c)
    return lists[0] if len(lists) == 1 else list(zip(*lists, strict=False))


def periodic_tail(seq) -> tuple[int, int] | None:
    """(k, P): the least P, then the least k, with k + P <= 8 and seq[i] == seq[i - P] for
    every i >= k + P: a prefix of k layers, then a period of P. None when there is none.

    MiMo-V2-Flash's ``hybrid_layer_pattern`` 0 1 1 1 1 0 (1 1 1 1 1 0)...: (1, 6); GLM-5.2's
    ``indexer_types`` F F F S S S (F S S S)...: (2, 4); a periodic list: (0, its period).
    """
    for p in range(1, MAX_LAYERS + 1):
        for k in range(MAX_LAYERS + 1 - p):
            if all(seq[i] == seq[i - p] for i in range(k + p, len(seq))):
                return k, p
    return None


def pattern_offset(c: dict) -> int:
    """k of :func:`periodic_tail` for a written pattern (0 for every other config)."""
    written = pattern(c)
    tail = periodic_tail(written) if written else None
    return tail[0] if tail else 0


def pattern_period(c: dict) -> int:
    """The period of the layer pattern, from the fields transformers reads, first match wins:

    1. a written pattern (:func:`pattern`: ``layer_types``, ``no_rope_layers``,
       ``hybrid_override_pattern``, ...): the period of its tail after a short prefix
       (:func:`periodic_tail`: gpt-oss 2, MiMo-V2-Flash 6 after 1 layer), else its smallest
       period (Nemotron-H 56B: 112);
    2. ``sliding_window_pattern`` / ``_sliding_window_pattern``, else 6 for Gemma 3;
    3. Llama 4 without ``no_rope_layers``: ``no_rope_layer_interval`` (default 4);
    4. Qwen3-Next: ``full_attention_interval``; Jamba: ``attn_layer_period``;
    5. Gemma 2 alternates by architecture: 2;
    6. otherwise every layer alike: 1.
    """
    family = str(c.get("model_type", "")).removesuffix("_text")
    written = pattern(c)
    if written:
        tail = periodic_tail(written)
        return tail[1] if tail else smallest_period(written)
    for key in ("sliding_window_pattern", "_sliding_window_pattern"):
        if c.get(key):
            return c[key]
    if family == "gemma3":
        return GEMMA3_PATTERN
    if family == "llama4":
        return c.get("no_rope_layer_interval") or LLAMA4_INTERVAL
    for key in ("full_attention_interval", "attn_layer_period"):
        if c.get(key):
            return c[key]
    if family == "gemma2":
        return 2
    return 1


def tiny_layers(real_layers: int, period: int, offset: int = 0) -> int:
    """n = k + 2P when that is <= 8, else k + P (k the prefix before the period, usually 0);
    at least 2, at most the real count."""
    n = offset + 2 * period if offset + 2 * period <= MAX_LAYERS else offset + period
    return min(real_layers, max(2, n))


def tiny_layer_count(c: dict, real_layers: int) -> int:
    """Layers the tiny model keeps before any shared ones (module docstring)."""
    period = pattern_period(c)
    written = pattern(c)
    unshared = real_layers - shared_layers(c)
    if period > MAX_LAYERS and written:  # no short period: the shortest prefix with every kind
        kinds = set(written)
        return max(2, next(i + 1 for i in range(len(written)) if set(written[:i + 1]) == kinds))
    return tiny_layers(unshared, period, pattern_offset(c))


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


def _layers(c: dict) -> None:
    layers_key = "n_layer" if "n_layer" in c else "num_hidden_layers"
    real_n = c[layers_key] if layers_key in c else len(c["layers_block_type"])
    s = shared_layers(c)
    unshared = tiny_layer_count(c, real_n)
    s_tiny = min(s, pattern_period(c)) if s else 0
    n = unshared + s_tiny
    if layers_key in c:  # a file without it (layers_block_type alone) stays without it
        c[layers_key] = n
    if s:
        c["num_kv_shared_layers"] = s_tiny
    for key in _PER_LAYER:
        if isinstance(c.get(key), list) and c[key]:
            c[key] = c[key][:n]
    for key in _LAYER_NUMBERS:
        if isinstance(c.get(key), list):
            c[key] = [i for i in c[key] if i < n]
    if isinstance(c.get("hybrid_override_pattern"), str):
        c["hybrid_override_pattern"] = c["hybrid_override_pattern"][:n]
    if isinstance(c.get("full_attn_idxs"), list):  # LFM2's older spelling of its layer list
        c["full_attn_idxs"] = [i for i in c["full_attn_idxs"] if i < n]
    if _kda_pattern(c):  # Kimi Linear: 1-based layer numbers
        la = c["linear_attn_config"] = dict(c["linear_attn_config"])
        for key in ("kda_layers", "full_attn_layers"):
            la[key] = [i for i in la[key] if i <= n]
    _loop(c, n)
    if c.get("max_window_layers") is not None:
        m = c["max_window_layers"]
        c["max_window_layers"] = n if m >= real_n else max(1, min(m, n - 1))
    if c.get("first_k_dense_replace"):
        mlp = c.get("mlp_layer_types")  # GLM-5.2 writes both: keep them agreeing
        c["first_k_dense_replace"] = next(
            (i for i, t in enumerate(mlp) if t != "dense"), len(mlp)) if mlp else 1


def _loop(c: dict, n: int) -> None:
    """Inkling 2 Loop: layers ``loop_layer_index_start`` to ``loop_layer_index_end`` - 1 run
    ``loop_num_passes`` times, each pass with its own caches; transformers 5.25.0 wants both
    ends multiples of ``n_layers_per_attn_res_block`` B, the start above 0
    (configuration_inkling2_loop.py:151-165). B (how many layers' outputs the block attention
    residuals mix, at one position: nothing kept across tokens) becomes LOOP_BLOCK = 2; each end
    keeps its number of blocks, the end at most n; the passes are kept. The class's 6, 18 of 24
    layers, B = 6: 2, 6 of the tiny 6 (layers 2-5, three sliding and the full one, loop)."""
    if "loop_layer_index_start" not in c:
        return
    block = c["n_layers_per_attn_res_block"]
    start, end = c["loop_layer_index_start"], c["loop_layer_index_end"]
    assert start % block == 0 and end % block == 0, (start, end, block)
    c["n_layers_per_attn_res_block"] = LOOP_BLOCK
    c["loop_layer_index_start"] = start // block * LOOP_BLOCK
    c["loop_layer_index_end"] = min(end // block * LOOP_BLOCK, n // LOOP_BLOCK * LOOP_BLOCK)


def _attention_heads(c: dict) -> int:
    """Rewrites the head counts and dims; returns the tiny N_h."""
    heads_key = "n_head" if "n_head" in c else "num_attention_heads"
    kv_key = next((k for k in ("num_key_value_heads", "num_kv_heads") if c.get(k)), None)
    n_h = c[heads_key]
    n_g = c[kv_key] if kv_key else n_h
    if c.get("swa_num_key_value_heads"):  # MiMo-V2: the sliding layers' own heads
        f = n_g // 2  # the full layers keep N_g = 2, the four counts their proportion
        swa = ("swa_num_attention_heads", "swa_num_key_value_heads")
        assert all(x % f == 0 for x in (n_h, n_g, *(c[k] for k in swa))), (n_h, n_g)
        t_h, t_g = n_h // f, n_g // f
        for k in swa:
            c[k] //= f
    elif c.get("num_global_key_value_heads"):
        g = math.gcd(n_h, n_g, c["num_global_key_value_heads"])
        t_h, t_g = n_h // g, n_g // g
        c["num_global_key_value_heads"] //= g
    else:
        t_h, t_g = _heads(n_h, n_g)
    c[heads_key] = t_h
    if kv_key:
        c[kv_key] = t_g

    hidden_key = "n_embd" if "n_embd" in c else "hidden_size"
    dim_key = next((k for k in ("head_dim", "attention_head_dim") if c.get(k) is not None), None)
    if c.get("model_type") == "deepseek_v4":
        # head_dim and qk_rope_head_dim kept: vLLM 0.34.0's fp8_ds_mla entry is written for 512
        # + 64 only, and kvlib refuses any other (readers/deepseek_v4.py _entry_widths);
        # index_head_dim 128 (one fp32 scale per 128 fp8 values)
        c["index_head_dim"] = INDEX_HEAD_DIM
        if c.get("q_lora_rank") is not None:
            c["q_lora_rank"] = 48
        c[hidden_key] = t_h * HEAD_DIM
    elif "kv_lora_rank" in c:
        real_rope = c.get("qk_rope_head_dim")
        real_mla = {k: c.get(k) for k in (*_SWA_MLA, *_SWA_MLA.values())}
        c.update({k: v for k, v in _MLA.items() if k in c})
        if c.get("q_lora_rank") is not None:
            c["q_lora_rank"] = 48
        if c.get("index_head_dim"):
            c["index_head_dim"] = INDEX_HEAD_DIM
        if c.get("qk_head_dim") is not None:  # GLM-5: nope + rope
            c["qk_head_dim"] = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
        if c.get("head_dim") is not None and real_rope:
            # its real ratio to the RoPE width: GLM-5, Mistral Large 4 1 (head_dim is the RoPE
            # width), dots3 Note 4 (its RoPE turns head_dim x partial_rotary_factor 0.25 dims)
            c["head_dim"] = c["head_dim"] * c["qk_rope_head_dim"] // real_rope
        for swa, key in _SWA_MLA.items():  # dots3 Note's sliding layers: their real ratio
            if c.get(swa) is not None and c.get(key):
                c[swa] = c[key] * real_mla[swa] // real_mla[key]
        c[hidden_key] = t_h * HEAD_DIM
    elif dim_key:
        c_hidden_real = c[hidden_key]
        real_ratio = c_hidden_real / n_h
        step = 8 if real_ratio > c[dim_key] else -8 if real_ratio < c[dim_key] else 0
        # keys and values of different widths (MiMo-V2: 192 and 128): values HEAD_DIM wide,
        # keys in the real ratio (24), so the difference stays and the RoPE part stays even
        real_d = c[dim_key]
        real_v = c.get("v_head_dim") or real_d
        tiny_d = HEAD_DIM * real_d // real_v
        assert tiny_d * real_v == HEAD_DIM * real_d, (real_d, real_v)
        for key in ("global_head_dim", "rotary_dim", "v_head_dim", "swa_head_dim",
                    "swa_v_head_dim"):
            if c.get(key):
                c[key] = tiny_d * c[key] // real_d
        c[dim_key] = tiny_d
        c[hidden_key] = t_h * (tiny_d + step)
        if c_hidden_real % n_h:  # not a whole number of heads in the file: nor in the tiny one
            c[hidden_key] += 2 if t_h > 2 else 1
    else:
        c[hidden_key] = t_h * HEAD_DIM
    return t_h


def _states(c: dict, real_hidden: int | None) -> None:
    """Linear-attention, Mamba2 and short-convolution sizes (kernels kept)."""
    if c.get("linear_num_key_heads"):
        ratio = c["linear_num_value_heads"] // c["linear_num_key_heads"]
        assert ratio * c["linear_num_key_heads"] == c["linear_num_value_heads"]
        c["linear_num_key_heads"], c["linear_num_value_heads"] = 2, 2 * ratio
    if c.get("mamba_num_heads"):
        groups = c.get("n_groups") or 1
        assert c["mamba_num_heads"] % groups == 0
        t_groups = 1 if groups == 1 else 2
        c["mamba_num_heads"] = t_groups * (c["mamba_num_heads"] // groups)
        c["n_groups"] = t_groups
    if c.get("conv_dim") is not None and c["conv_dim"] == real_hidden:
        c["conv_dim"] = c["hidden_size"]
    if _kda_pattern(c):
        c["linear_attn_config"] = {**c["linear_attn_config"], "num_heads": KDA_HEADS,
                                   "head_dim": HEAD_DIM}


def shrink(config: dict) -> dict:
    """A tiny config with the cache structure of ``config`` (a config.json as a dict)."""
    c = loadable(config)
    real_hidden = c.get("hidden_size")
    _layers(c)
    _attention_heads(c)
    _states(c, real_hidden)
    if c.get("sliding_window") is not None:
        c["sliding_window"] = WINDOW
    if c.get("sliding_window_size") is not None:  # Gemma 2's alias, equal in the file; dots3
        c["sliding_window_size"] = WINDOW  # Note's only window key (vLLM 0.34.0 reads it)
    if c.get("attention_chunk_size") is not None:
        c["attention_chunk_size"] = CHUNK
    for key, value in _SIZES.items():
        if c.get(key) is not None:
            c[key] = value
    if c.get("hidden_size_per_layer_input"):
        c["hidden_size_per_layer_input"] = 8
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        if c.get(key):
            c[key] = 4
    for key in ("num_experts_per_tok", "experts_per_token", "top_k_experts",
                "num_experts_per_token"):
        if c.get(key):
            c[key] = min(c[key], 2)
    if c.get("n_shared_experts"):
        c["n_shared_experts"] = 1
    if (c.get("n_group") or 0) > 1:
        c["n_group"], c["topk_group"] = 2, 1
    if c.get("hidden_act") == "situ":  # Kimi-K3; transformers 5.24 has no SiTU (docstring)
        c["hidden_act"] = "silu"
    if c.get("model_type") == "nemotron_h" and "attention_head_dim" in c \
            and c.get("head_dim") is None:
        # the name NemotronHConfig (and so vLLM) reads; the real file's attention_head_dim is
        # ignored by both and equals their default 128, so the tiny one must say head_dim
        c["head_dim"] = c.pop("attention_head_dim")
    return c
