"""MiniMax M3: GQA in every layer, and in its sparse layers a lightning indexer that caches one
more key per token.

As vLLM 0.34.0 builds it (vllm/models/minimax_m3/nvidia/model.py; the ROCm model, amd/model.py,
allocates the same), from the config transformers 5.25.0's ``MiniMaxM3VLTextConfig`` makes of
the file (models/minimax_m3_vl/configuration_minimax_m3_vl.py):

* the nested ``sparse_attention_config`` is flattened (:116-142): ``sparse_index_dim`` ->
  ``index_head_dim``, ``sparse_num_index_heads`` -> ``index_n_heads``, ``sparse_block_size``,
  ``sparse_topk_blocks``, ``sparse_local_block`` -> ``index_block_size``,
  ``index_topk_blocks``, ``index_local_blocks`` (a nested value wins over a flat one, :131-132);
  ``layer_types``, when the file has none, is "minimax_m3_sparse" where
  ``sparse_attention_freq[i]`` is set, else "full_attention" (:137-140), and without either
  every layer is full attention (:141-142). ``use_sparse_attention``,
  ``sparse_disable_index_value``, ``sparse_score_type`` and ``sparse_init_block`` are read by
  neither engine;
* a layer is sparse iff ``layer_types[i] == "minimax_m3_sparse"`` (model.py:191-193,
  :1257-1262); every other layer is ``MiniMaxM3Attention`` (:1272), full attention;
* every layer caches ``num_key_value_heads`` x ``head_dim`` for K and for V (dense
  :761-767, 810-818; sparse :882-888, and its own ``FullAttentionSpec``, :1040-1048), in the
  KV dtype;
* a sparse layer's indexer also caches one key of ``index_head_dim`` per token, one head
  (``MiniMaxM3IndexerCache.get_kv_cache_spec``: ``MLAAttentionSpec`` with num_kv_heads=1,
  head_size=index_head_dim, common/indexer.py:155-163), in ``indexer_kv_dtype``, bf16 unless
  ``--attention-config`` says otherwise, whatever the KV dtype (model.py:967-969). transformers
  keeps the same ``[batch, 1, T, index_head_dim]`` (modeling_minimax_m3_vl.py:57-66, :564-570).
  Its query heads (``index_n_heads``) are computed per step, never cached;
* ``use_index_cache`` / ``index_topk_freq`` / ``index_skip_topk_offset`` (ROCm only) let
  sparse layers reuse an earlier layer's top-k choice (amd/model.py:196-217), but every sparse
  layer still builds its indexer and its key cache (:898-924): read, nothing changes.

vLLM implements one branch only (model.py:3-12): ``attention_output_gate`` False, which is read;
True is refused. The model_type ``minimax_m3`` (``MiniMaxM3ForCausalLM``), which some published
text-only files write, is registered by neither engine; its keys are MiniMax M3's text
config's, read by the same rules, and the notes say so.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvlib.models.readers.fields import Fields, describe
from kvlib.models.readers.reading import Attention, Layers, layer
from kvlib.models.readers.registry import register
from kvlib.models.spec import CacheKind

MINIMAX_M3_MAX_POSITIONS = 524288  # MiniMaxM3VLTextConfig.max_position_embeddings
MINIMAX_M3_HEAD_DIM = 128  # MiniMaxM3VLTextConfig.head_dim (not hidden_size / heads)
MINIMAX_M3_KV_HEADS = 4  # MiniMaxM3VLTextConfig.num_key_value_heads
MINIMAX_M3_INDEX_DIM = 128  # MiniMaxM3VLTextConfig.index_head_dim
INDEX_BYTES = 2  # the index-key cache's bf16 (model.py:967-969), whatever the KV dtype
SPARSE = "minimax_m3_sparse"

_TF = "transformers 5.25.0 models/minimax_m3_vl/configuration_minimax_m3_vl.py"
# the nested keys MiniMaxM3VLTextConfig flattens (:124-140), and those no engine reads
_NESTED_READ = {"sparse_index_dim": "index_head_dim", "sparse_num_index_heads": "index_n_heads",
                "sparse_block_size": "index_block_size", "sparse_topk_blocks": "index_topk_blocks",
                "sparse_local_block": "index_local_blocks"}
_NESTED_UNREAD = ("use_sparse_attention", "sparse_disable_index_value", "sparse_score_type",
                  "sparse_init_block")
# the indexer's query side and its block selection: compute, not what is cached
_IGNORES = ("index_n_heads", "index_block_size", "index_topk_blocks", "index_local_blocks",
            "use_index_cache", "index_topk_freq", "index_skip_topk_offset", "qk_norm_type",
            "mlp_layer_types", "moe_layer_freq", "use_gemma_norm", "use_routing_bias",
            "swiglu_alpha", "shared_intermediate_size", "n_shared_experts", "num_mtp_modules",
            "num_nextn_predict_layers")


def _sparse_config(c: Fields, notes: list[str]) -> dict:
    """The nested ``sparse_attention_config`` (an object, or absent), its unread keys said."""
    nested = c.data.get("sparse_attention_config")
    if nested is None:
        return {}
    if not isinstance(nested, Mapping):
        raise ValueError(f"{c.path('sparse_attention_config')} must be a JSON object, got "
                         f"{describe(nested)}")
    unread = [k for k in nested if k not in _NESTED_READ and k != "sparse_attention_freq"]
    if unread:
        notes.append(f"sparse_attention_config.{', .'.join(unread)}: read by neither vLLM 0.34.0 "
                     f"nor transformers 5.25.0 ({_TF}:116-142 flattens only the index sizes and "
                     "sparse_attention_freq), so not by kvlib")
    return dict(nested)


def _index_dim(c: Fields, nested: dict, notes: list[str]) -> int:
    path = c.path("sparse_attention_config.sparse_index_dim")
    if "sparse_index_dim" in nested:  # the nested value wins (:131-132)
        value = nested["sparse_index_dim"]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{path} must be a positive integer, got {describe(value)}")
        if c.has("index_head_dim") and c.data["index_head_dim"] != value:
            notes.append(f"index_head_dim={c.data['index_head_dim']!r} is overridden by "
                         f"sparse_attention_config.sparse_index_dim={value} ({_TF}:131-132)")
        return value
    d_i = c.int("index_head_dim", required=False)
    if d_i is None:
        notes.append(f"no index_head_dim: MiniMax M3's default of {MINIMAX_M3_INDEX_DIM} applies")
        return MINIMAX_M3_INDEX_DIM
    return d_i


def _types(c: Fields, nested: dict, n: int, notes: list[str]) -> list[str]:
    types = c.data.get("layer_types")
    where = "layer_types"
    if types is None and "sparse_attention_freq" in nested:
        freq = nested["sparse_attention_freq"]
        where = "sparse_attention_config.sparse_attention_freq"
        if not isinstance(freq, list) or not all(isinstance(f, int) for f in freq):
            raise ValueError(f"{c.path(where)} must hold one 0 or 1 per layer, got "
                             f"{describe(freq)}")
        types = [SPARSE if f else "full_attention" for f in freq]
    elif types is None:
        notes.append(f"no layer_types and no sparse_attention_freq: every layer is full "
                     f"attention ({_TF}:141-142)")
        return ["full_attention"] * n
    if not isinstance(types, list) or len(types) != n:
        raise ValueError(f"{c.path(where)} must describe each of the {n} layers, got "
                         f"{describe(types)[:80]}")
    unknown = sorted({t for t in types if t not in (SPARSE, "full_attention")}, key=str)
    if unknown:
        raise ValueError(f"{c.path(where)} holds {unknown[0]!r}: vLLM 0.34.0 builds any layer "
                         f"that is not {SPARSE!r} as full attention (vllm/models/minimax_m3/"
                         "nvidia/model.py:191-193) while transformers' cache follows the name; "
                         "kvlib refuses rather than guess")
    return list(types)


@register("minimax_m3_vl", "minimax_m3", max_positions=MINIMAX_M3_MAX_POSITIONS,
          handles=("index_head_dim", "index_n_heads"), ignores=_IGNORES)
def read(c: Fields, family: str, n: int, notes: list[str]) -> Attention:
    if family == "minimax_m3":
        notes.append("model_type 'minimax_m3' is registered by neither vLLM 0.34.0 nor "
                     "transformers 5.25.0 (they serve MiniMax M3 as minimax_m3_vl / "
                     "MiniMaxM3SparseForCausalLM); its keys are that text config's, read by "
                     "the same rules")
    gate = c.flag("attention_output_gate")
    if gate:
        raise ValueError(f"{c.path('attention_output_gate')}=True: vLLM 0.34.0 builds MiniMax M3 "
                         "with attention_output_gate == False only (vllm/models/minimax_m3/"
                         "nvidia/model.py:9); kvlib refuses rather than guess")
    if gate is False:
        notes.append("attention_output_gate=false is read: no output gate, the only branch "
                     "vLLM 0.34.0 builds (vllm/models/minimax_m3/nvidia/model.py:9)")
    n_h = c.int("num_attention_heads")
    n_g = c.int("num_key_value_heads", required=False)
    if n_g is None:
        n_g = MINIMAX_M3_KV_HEADS
        notes.append(f"no num_key_value_heads: MiniMax M3's default of {n_g} applies")
    d = c.int("head_dim", required=False)
    if d is None:
        d = MINIMAX_M3_HEAD_DIM
        notes.append(f"no head_dim: MiniMax M3's default of {d} applies (not hidden_size / "
                     "num_attention_heads)")
    if n_h % n_g:
        raise ValueError(f"{c.path('num_key_value_heads')}={n_g} does not divide "
                         f"{c.path('num_attention_heads')}={n_h}")
    nested = _sparse_config(c, notes)
    types = _types(c, nested, n, notes)
    sizes = {"N_h": n_h, "N_g": n_g, "d_QK": d, "d_V": d}
    label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
    sparse = types.count(SPARSE)
    counts: dict = {(CacheKind.FULL, None): n}
    if sparse:
        d_i = _index_dim(c, nested, notes)
        # one key-only vector per token: vLLM's MLAAttentionSpec (the latent's formula, d_L)
        keys = layer(CacheKind.INDEXER, "MLA", d_L=d_i, b=INDEX_BYTES)
        counts[keys] = sparse
        notes.append(f"{sparse} of {n} layers are sparse (minimax_m3_sparse): each also caches "
                     f"one indexer key of index_head_dim={d_i} per token in bf16 "
                     f"({d_i * INDEX_BYTES} bytes, whatever the KV dtype; vLLM 0.34.0 "
                     "common/indexer.py:155-163, nvidia/model.py:967-969); the other "
                     f"{n - sparse} are plain full attention")
    else:
        c.touch("index_head_dim")
        notes.append(f"no sparse layer: all {n} layers are full attention")
    if "use_sparse_attention" in nested and nested["use_sparse_attention"] is False and sparse:
        notes.append("sparse_attention_config.use_sparse_attention=false is not read by either "
                     "engine: the layers listed as sparse still build their indexer")
    c.touch("index_n_heads")
    return Attention("GQA", label, sizes, Layers(lambda i: (CacheKind.FULL, None), counts))
