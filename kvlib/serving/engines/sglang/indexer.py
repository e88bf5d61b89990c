"""SGLang 0.5.23's pool for the sparse-attention (DSA) models, DeepSeek V3.2 and GLM-5.x: the
latent row as its DSA backends store it (``CELL_DSA_MLA``), the indexer's key rows with their fp8
scales (``CELL_DSA_INDEXER``) and the page. Bytes per GPU (TP rank); paths under sglang/srt/ in
the 0.5.23 wheel.

* **Which**: ``is_deepseek_dsa`` (configs/model_config.py:191-212): a DeepSeek-family
  architecture whose config has index_topk.
* **KV dtype**: auto is bfloat16 below SM100 and fp8_e4m3 on SM100 and up
  (arg_groups/overrides.py:490-547); kvlib plans below SM100, with bf16 or fp8 as given.
* **Latent row** (``calculate_mla_kv_cache_dim``, mem_cache/kv_cache_configurator.py:
  3411-3474): bf16 keeps kv_lora_rank + qk_rope_head_dim elements of 2 B; fp8 on Hopper, where
  the DSA backends are flashmla_kv (overrides.py:712-720), keeps kv_lora_rank fp8 bytes, 4 B of
  scale per 128 of them (quant_block_size, mem_cache/memory_pool.py:5280) and the RoPE part in
  bf16 (rope_storage_dtype, :5282): d_L + d_L / 128 x 4 + 2 d_R bytes.
* **Indexer** (``_compute_dsa_indexer_cell_size``, model_executor/pool_configurator.py:
  560-634): per indexer layer ceil((index_head_dim + index_head_dim // 128 x 4) / index_kpool)
  bytes of uint8 (index_k_with_scale_buffer_dtype, memory_pool.py:5281): fp8 keys and their
  fp32 scales, whatever the KV dtype; layers that reuse the previous layer's top-k
  (indexer_types "shared") keep none (``dsa_layer_skips_topk``, configs/model_config.py:488-
  528; ``_should_elide_dsa_index_k``, kv_cache_configurator.py:131-145).
* **Page**: 64 x index_kpool tokens on CUDA (arg_groups/model_overrides/deepseek_v2.py:161-173).
"""

from __future__ import annotations

from functools import cache

from kvlib.core.lazy import lazy_attributes
from kvlib.serving.engines.sglang import kept

__all__ = ["DSA_ARCHS", "QUANT_BLOCK", "is_dsa", "dsa_page", "dsa_cells"]

# configs/model_config.py:191-212, the ones kvlib reads (their configs carry index_topk)
DSA_ARCHS = frozenset({"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"})
QUANT_BLOCK = 128  # DSATokenToKVPool.quant_block_size, memory_pool.py:5280

# kept as code in kvlib.serving.engines.sglang.kept (python -m kvlib.core.keep); the
# expressions themselves are built with SymPy on first use
KEPT = ("CELL_DSA_MLA_BF16", "CELL_DSA_MLA_FP8", "CELL_DSA_INDEXER")
_SYMBOLIC = KEPT
__all__ += [*_SYMBOLIC, "KEPT", "symbolic"]


@cache
def symbolic() -> dict:
    """The expressions by name (imports SymPy)."""
    import sympy as sp

    d_L, d_R, N_L, d_I, kp, N_I = sp.symbols("d_L d_R N_L d_I k_pool N_I", positive=True)
    return {
        "CELL_DSA_MLA_BF16": (d_L + d_R) * N_L * 2,
        "CELL_DSA_MLA_FP8": (d_L + sp.floor(d_L / QUANT_BLOCK) * 4 + 2 * d_R) * N_L,
        "CELL_DSA_INDEXER": sp.ceiling((d_I + sp.floor(d_I / QUANT_BLOCK) * 4) / kp) * N_I,
    }


# the expressions, built with SymPy on first use
__getattr__ = lazy_attributes(__name__, _SYMBOLIC, symbolic)


def is_dsa(config: dict | None) -> bool:
    """``is_deepseek_dsa`` for the architectures kvlib reads."""
    config = config or {}
    return ((config.get("architectures") or [""])[0] in DSA_ARCHS
            and config.get("index_topk") is not None)


def _kpool(config: dict) -> int:
    return config.get("index_kpool") or 1  # get_dsa_index_kpool, model_config.py:530-531


def dsa_page(config: dict) -> int:
    """The page SGLang sets for a DSA model on CUDA: 64 x index_kpool tokens."""
    return 64 * _kpool(config)


def dsa_cells(model, config: dict, kv_bytes: int) -> tuple[int, int]:
    """(latent bytes, indexer bytes) a token takes over every layer, at ``kv_bytes`` 2 (bf16)
    or 1 (fp8: the flashmla_kv scaled layout); ValueError for another KV dtype."""
    latent = [g for g in model.groups if g.attention in ("MLA", "MLA+RoPE")]
    indexer = [g for g in model.groups if g.attention == "Indexer"]
    if kv_bytes not in (1, 2) or len(latent) != 1 or len(indexer) != 1:
        raise ValueError(f"{model.name}: SGLang 0.5.23's DSA pool is traced for bf16 and fp8 "
                         "KV caches of one latent and one indexer group")
    lat, idx = latent[0], indexer[0]
    values = {"d_L": lat.sizes["d_L"], "d_R": lat.sizes.get("d_R", 0), "N_L": lat.layers}
    mla = kept.evaluate("indexer.CELL_DSA_MLA_BF16" if kv_bytes == 2 else
                        "indexer.CELL_DSA_MLA_FP8", **values)
    return mla, kept.evaluate("indexer.CELL_DSA_INDEXER", d_I=idx.sizes["d_I"],
                              k_pool=_kpool(config), N_I=idx.layers)
