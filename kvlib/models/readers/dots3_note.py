"""dots3 Note (rednote): DSA layers (MLA with a sparse-attention indexer) and sliding-window MLA
layers of their own, wider latent.

As vLLM 0.34.0 builds it (vllm/models/dots3_note/nvidia/model.py; its config class,
transformers_utils/configs/dots3_note.py, is DeepSeek V3's and derives nothing, so
``layer_types`` and the ``swa_*`` keys come from the file as written):

* layer i is ``Dots3NoteSlidingAttention`` iff ``layer_types[i] == "sliding_attention"``,
  else ``Dots3NoteFullAttention`` (model.py:524-528);
* a sliding layer is MLA over the last ``sliding_window_size`` tokens (:481) caching
  ``swa_kv_lora_rank`` + ``swa_qk_rope_head_dim`` per token (:367-370, ``SlidingWindowMLASpec``,
  model_executor/layers/attention/mla_attention.py:1587-1592);
* a DSA layer is sparse MLA (:303) whose cache entry is padded to the sliding layers' width,
  ``swa_kv_lora_rank + swa_qk_rope_head_dim`` (:228-240, :307), not its own
  ``kv_lora_rank + qk_rope_head_dim``; it also caches the indexer key of DeepSeek V3.2 (fp8
  ``index_head_dim`` values plus one fp32 scale per 128, as bytes) unless it shares an earlier
  layer's indexer (``compute_skip_topk_layers``, model_executor/models/utils.py:1019-1055).

transformers 5.25.0 (models/dots3_note/configuration_dots3_note.py) derives ``layer_types``
when the file has none (:300-305) and turns DSA off with ``use_dsa`` false (:281, :306-310);
vLLM 0.34.0 does neither, so both are refused rather than guessed.
"""

from __future__ import annotations

from kvlib.models.readers.deepseek import shared_indexer_layers
from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

DOTS3_MAX_POSITIONS = 524288
_V = "vllm/models/dots3_note/nvidia/model.py"
_DSA = {"indexed_attention", "full_attention"}
# query side, value widths, the DSA layers' own (unpadded) latent, gates, indexer query heads
_IGNORES = ("q_lora_rank", "qk_nope_head_dim", "v_head_dim", "qk_head_dim", "head_dim",
            "kv_lora_rank", "qk_rope_head_dim", "num_key_value_heads", "num_attention_heads",
            "index_n_heads",
            "indexer_rope_interleave", "swa_num_attention_heads", "swa_num_key_value_heads",
            "swa_q_lora_rank", "swa_qk_nope_head_dim", "swa_v_head_dim", "swa_head_dim",
            "swa_rope_theta", "attention_gate_type", "swa_attention_gate_type",
            "apply_mla_qkv_lora_rescale", "use_sliding_window", "mlp_layer_types",
            "moe_layer_freq", "moe_shared_expert_intermediate_size",
            "shared_experts_intermediate_size", "n_group", "topk_group",
            "num_nextn_predict_layers")


@register("dots3_note", max_positions=DOTS3_MAX_POSITIONS,
          handles=("kv_lora_rank", "index_head_dim", "index_n_heads", "index_topk"),
          ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    types = c.data.get("layer_types")
    if types is None:
        raise ValueError(f"config has no {c.path('layer_types')}: vLLM 0.34.0 reads it to choose "
                         f"each layer ({_V}:527) and derives none, while transformers 5.25.0 "
                         "would derive one; kvlib refuses rather than guess")
    if not isinstance(types, list) or len(types) != n or set(types) - _DSA - {"sliding_attention"}:
        raise ValueError(f"{c.path('layer_types')} must hold sliding_attention or "
                         f"indexed_attention / full_attention (DSA) for each of the {n} layers, "
                         f"got {describe(types)[:80]}")
    if c.data.get("use_dsa") is False:
        raise ValueError(f"{c.path('use_dsa')}=False: transformers 5.25.0 then builds dense "
                         "full-attention layers (configuration_dots3_note.py:306-310) while vLLM "
                         f"0.34.0 builds every non-sliding layer sparse ({_V}:303); kvlib refuses "
                         "rather than guess")
    c.touch("use_dsa")
    d_L = c.int("swa_kv_lora_rank", why="vLLM 0.34.0 sizes every layer's latent by it "
                f"({_V}:307, :370)")
    d_R = c.int("swa_qk_rope_head_dim", why=f"vLLM 0.34.0 reads it ({_V}:307, :367)")
    sliding = types.count("sliding_attention")
    sizes = {"d_L": d_L, "d_R": d_R}
    counts: dict = {}
    dsa = n - sliding
    kinds: dict = {}
    if sliding:
        w = c.int("sliding_window_size", why=f"vLLM 0.34.0's window ({_V}:481)")
        if c.has("sliding_window") and c.data["sliding_window"] != w:
            raise ValueError(f"{c.path('sliding_window')}={c.data['sliding_window']!r} and "
                             f"{c.path('sliding_window_size')}={w} disagree; vLLM 0.34.0 slides "
                             f"over sliding_window_size ({_V}:481)")
        c.touch("sliding_window")
        kinds["sliding_attention"] = layer(CacheKind.SLIDING, "MLA+RoPE", w, **sizes)
        counts[kinds["sliding_attention"]] = sliding
        notes.append(f"{sliding} sliding layers: MLA over the last {w} tokens, caching "
                     f"swa_kv_lora_rank + swa_qk_rope_head_dim = {d_L} + {d_R} per token")
    if dsa:
        own = (c.int("kv_lora_rank"), c.int("qk_rope_head_dim"))
        kinds["indexed_attention"] = kinds["full_attention"] = layer(CacheKind.LATENT,
                                                                     "MLA+RoPE", **sizes)
        counts[kinds["full_attention"]] = dsa
        d_I = c.int("index_head_dim", why="a DSA layer's indexer caches a key per token")
        shared, where = shared_indexer_layers(c, n)
        keys = sum(1 for i, t in enumerate(types) if t in _DSA and i not in shared)
        if keys:
            counts[layer(CacheKind.INDEXER, "Indexer", d_I=d_I, b=1)] = keys
        notes.append(f"{dsa} DSA layers: sparse MLA whose entry vLLM 0.34.0 pads from "
                     f"kv_lora_rank + qk_rope_head_dim = {own[0]} + {own[1]} to the sliding "
                     f"layers' {d_L} + {d_R} ({_V}:228-240, :307); {keys} of them cache an "
                     f"indexer key ({d_I} fp8 values + one fp32 scale per 128 = "
                     f"{d_I + d_I // 128 * 4} bytes per token; {where})")
    return Attention("MLA+RoPE", "MLA", sizes, Layers(lambda i: kinds[types[i]], counts))
