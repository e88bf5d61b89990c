"""DeepSeek V4 (V4-Flash, V4-Pro): compressed attention (notebook 08), as vLLM 0.34.0 stores it.

Every layer keeps a sliding window of uncompressed entries; a layer whose compression ratio m is
above 1 also keeps one compressed entry per m tokens and its compressor's running state, and a
layer with m = 4 ("compressed sparse attention") also an indexer key per 4 tokens and the
indexer's compressor state. Which layer does what is read from the config by one rule
(:func:`compress_ratios`), so a later family that writes ``compress_ratios`` (or transformers'
``layer_types`` + ``compress_rates``) is read or refused by the same rule.

What vLLM 0.34.0 keeps per layer (paths under vllm/, the 0.34.0 wheel), each one KV-cache spec:

* window: ``DeepseekV4SWACache`` -> ``SlidingWindowMLASpec``, ``sliding_window`` tokens of
  584-byte fp8_ds_mla entries, 64-token blocks (v1/attention/backends/mla/sparse_swa.py:76-147,
  built in every layer: models/deepseek_v4/attention.py:344-351);
* compressed entries (m > 1): the attention layer's own ``MLAAttentionSpec`` with
  ``tokens_per_state=m``, 584-byte entries, ``cache_config.block_size`` tokens per block (256 on
  the default backend), so a block holds 256 / m entries (attention.py:817-840; the m = 0 layers
  return None there);
* indexer keys (m = 4 only, attention.py:303-322): ``DeepseekV4IndexerCache`` ->
  ``MLAAttentionSpec``, ``tokens_per_state=4``, index_head_dim fp8 bytes + one fp32 scale per 128
  (132 bytes), the same layout as V3.2 (attention.py:843-881, 979-993);
* compressor state (m > 1, and the indexer's own compressor): ``CompressorStateCache`` ->
  ``SlidingWindowMLASpec`` of window coff x m tokens (coff = 2 for m = 4, else 1), each slot
  2 x coff x width fp32 values, blocks of 4 (m = 4) or 8 (m = 128) tokens
  (models/deepseek_v4/compressor.py:139-192, 297-302).

vLLM pads every page to a multiple of 576 bytes (``alignment``, kv_cache_interface.py:731-738);
kvlib's bytes here are the entries alone, without that padding or the block rounding; the plan's
layout, :mod:`kvlib.serving.engines.vllm.v4`, builds vLLM's groups, pages and blocks from them.
"""

from __future__ import annotations

from kvlib.core.compression import overlap
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

__all__ = ["compress_ratios", "read"]

# transformers 5.25.0 names the ratios by layer type (configuration_deepseek_v4.py:21-32, 144)
_TYPES = {"sliding_attention": 0}
_DEFAULT_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
# vLLM 0.34.0's compressor asserts compress_ratio in [4, 128] (compressor.py:157), and
# transformers maps only 0, 4 and 128 to a layer type (configuration_deepseek_v4.py:28-32)
RATIOS = (0, 4, 128)
_ENTRY = (512, 64)  # (head_dim, qk_rope_head_dim) vLLM's 584-byte entry is written for
_V4_IGNORES = (
    # weights and compute, not the cache: query/output low-rank projections, hyper-connections,
    # MoE hash routing, the compressor's RoPE (positions, not sizes), the indexer's query heads
    "q_lora_rank", "o_lora_rank", "o_groups", "qk_nope_head_dim", "v_head_dim", "kv_lora_rank",
    "hc_mult", "hc_eps", "hc_sinkhorn_iters", "num_hash_layers", "expert_dtype",
    "compress_rope_theta", "compress_rope_parameters", "rope_interleave", "index_n_heads",
    "partial_rotary_factor", "mlp_layer_types", "num_key_value_heads",
)


def compress_ratios(c: Fields, n: int, notes: list[str]) -> list[int]:
    """m of each of the ``n`` decoder layers (0: the window only), as vLLM 0.34.0 reads it.

    * ``compress_ratios`` (one int per layer, multi-token-prediction layers after them: vLLM's
      ``get_compress_ratios``, transformers_utils/deepseek_v4_utils.py:6-18; transformers keeps
      the first num_hidden_layers, configuration_deepseek_v4.py:263-271), else
    * ``layer_types`` with ``compress_rates`` (transformers' names; its defaults 4 and 128).

    ValueError naming the key and value for a ratio vLLM cannot build (not 0, 4 or 128) or a
    list shorter than the layers.
    """
    ratios = c.data.get("compress_ratios")
    where = "compress_ratios"
    if ratios is None and c.data.get("layer_types") is not None:
        types, rates = c.data["layer_types"], c.data.get("compress_rates")
        rates = {**_DEFAULT_RATES, **(rates if isinstance(rates, dict) else {})}
        if not isinstance(types, list) or any(t not in {*_TYPES, *rates} for t in types):
            raise ValueError(f"{c.path('layer_types')}={describe(types)[:60]}: DeepSeek V4 knows "
                             f"{', '.join([*_TYPES, *rates])} (transformers 5.25.0 "
                             "configuration_deepseek_v4.py:21-25); kvlib refuses rather than guess")
        ratios, where = [rates.get(t, 0) for t in types], "layer_types + compress_rates"
        c.touch("compress_rates")
    if ratios is None:
        raise ValueError(f"{c.path('compress_ratios')} is missing: DeepSeek V4 says which layers "
                         "compress by it (or by layer_types); kvlib refuses rather than guess")
    if (not isinstance(ratios, list) or len(ratios) < n
            or any(isinstance(r, bool) or not isinstance(r, int) for r in ratios)):
        raise ValueError(f"{c.path('compress_ratios')}={describe(ratios)[:60]}: one integer per "
                         f"layer needed for {n} layers (num_hidden_layers)")
    bad = [r for r in ratios[:n] if r not in RATIOS]
    if bad:
        raise ValueError(f"{c.path('compress_ratios')} holds {bad[0]!r}: vLLM 0.34.0 builds a "
                         f"compressor for m = 4 or 128 only (models/deepseek_v4/compressor.py:157) "
                         "and 0 means the window alone; kvlib refuses rather than guess")
    extra = len(ratios) - n
    if extra:
        notes.append(f"{where} has {len(ratios)} entries for {n} layers: the last {extra} "
                     "(multi-token-prediction layers) not counted, as vLLM builds them only as a "
                     "speculative-decoding draft")
    return list(ratios[:n])


def _entry_widths(c: Fields) -> tuple[int, int]:
    d_c = c.int("head_dim", why="DeepSeek V4 caches one head_dim-wide entry per token or group")
    d_R = c.int("qk_rope_head_dim", why="DeepSeek V4's entry keeps its RoPE part in bf16")
    if (d_c, d_R) != _ENTRY:
        raise ValueError(f"{c.path('head_dim')}={d_c}, qk_rope_head_dim={d_R}: vLLM 0.34.0's "
                         f"fp8_ds_mla entry is written for head_dim={_ENTRY[0]}, qk_rope_head_dim="
                         f"{_ENTRY[1]} only (584 bytes, models/deepseek_v4/attention.py:837-839); "
                         "kvlib refuses rather than guess")
    return d_c, d_R


@register("deepseek_v4", handles=("index_head_dim", "index_n_heads", "index_topk"),
          ignores=_V4_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    """Each layer's caches by :func:`compress_ratios`: the window in every layer; for m > 1 the
    compressed entries and the compressor's state; for m = 4 the indexer's keys and its
    compressor's state too. Every entry in bytes (b = 1), whatever the KV dtype."""
    d_c, d_R = _entry_widths(c)
    W = c.int("sliding_window", why="every DeepSeek V4 layer keeps a window of uncompressed "
              "entries")
    c.int("num_attention_heads")  # validated; one key-value vector per entry whatever the heads
    c.int("hidden_size", required=False)
    ratios = compress_ratios(c, n, notes)
    entry = {"d_c": d_c, "d_R": d_R, "b": 1}
    window = layer(CacheKind.SLIDING, "V4 entry", W, **entry)
    counts: dict = {window: n}
    main = {}
    for r in sorted(set(ratios) - {0}):
        coff = overlap(r)  # overlapping windows for m = 4 (compressor.py:247-248)
        compressed = layer(CacheKind.COMPRESSED, "V4 entry", m=r, **entry)
        state = layer(CacheKind.SLIDING, "Compressor state", coff * r, d_c=coff * d_c, b=1)
        layers = ratios.count(r)
        counts[compressed] = layers
        counts[state] = counts.get(state, 0) + layers
        main[r] = compressed
        if r == 4:  # only m = 4 layers build an indexer (attention.py:303-322)
            d_I = c.int("index_head_dim", why="DeepSeek V4's m = 4 layers cache indexer keys")
            if d_I % 128:
                raise ValueError(f"{c.path('index_head_dim')}={d_I}: vLLM stores one fp32 scale "
                                 "per 128 key values (attention.py:983-986); kvlib counts only "
                                 "widths that are a multiple of 128")
            keys = layer(CacheKind.COMPRESSED, "Indexer", m=r, d_I=d_I, b=1)
            own = layer(CacheKind.SLIDING, "Compressor state", coff * r, d_c=coff * d_I, b=1)
            counts[keys] = layers
            counts[own] = counts.get(own, 0) + layers
    top_k = c.int("index_topk", required=False)
    kinds = ", ".join(f"{ratios.count(r)} with m = {r}" for r in sorted(set(ratios)))
    notes.append(
        f"DeepSeek V4 compressed attention, by compress_ratios ({kinds} of {n} layers): every "
        f"layer keeps the last {W} tokens uncompressed (sliding_window); a layer with m > 1 also "
        "one compressed entry per m tokens (floor(T/m), written once all m have arrived) and its "
        "compressor's fp32 state over coff x m tokens (coff = 2 for m = 4, else 1)"
        + ("; m = 4 layers also an indexer key per 4 tokens (index_head_dim fp8 + one fp32 scale "
           "per 128)" if 4 in ratios else "")
        + (f", of which each query reads the top {top_k:,} (saves reads, not memory)"
           if top_k and 4 in ratios else ""))
    from kvlib.core.formulas import V4  # SymPy's, so imported where a V4 config is read

    # vLLM 0.34.0 models/deepseek_v4/attention.py:95-124 (the note names no line: lessons
    # print it, and source lines belong to the engines track)
    notes.append(f"entries in vLLM 0.34.0's fp8_ds_mla layout whatever --kv-dtype (auto and fp8 "
                 f"become fp8_ds_mla; a bf16 cache is refused on its default V4 backend): "
                 f"{d_c - d_R} fp8 + {d_R} bf16 + "
                 f"{(d_c - d_R) // 64 + 1} scale bytes = "
                 f"{V4.elements_per_token_layer(d_c=d_c, d_R=d_R)} bytes per entry; compressor "
                 "state in fp32")
    return Attention("V4 entry", "V4", dict(entry),
                     Layers(lambda i: main.get(ratios[i], window), counts))
