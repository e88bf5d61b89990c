"""Which block size vLLM gives a model: the attention backends it picks per GPU and cache
dtype, and the token counts their kernels take (the ``Block size`` paragraph of
:mod:`kvlib.serving.engines.vllm.layout`; paths under vllm/ in 0.33.0 unless a line says 0.34.0).
"""

from __future__ import annotations

from kvlib.core.dtypes import bytes_per_element
from kvlib.models.spec import EMPTY, CacheKind, ModelSpec
from kvlib.serving.engines.vllm.defaults import DEFAULT_BLOCK
from kvlib.serving.gpus import GPU

# the helpers are private to the vLLM folder (layout.py calls them)
__all__ = ["MINIMAX_M3_BLOCK"]


def _cuda_major(gpu: GPU) -> int | None:
    """What vLLM's backend choice reads (platforms/cuda.py, _get_backend_priorities: the
    compute capability's major version); None off CUDA."""
    return gpu.cuda_capability[0] if gpu.cuda_capability else None


def _sparse(model: ModelSpec) -> bool:
    """Sparse MLA: an indexer beside the latent (vLLM's *_SPARSE backends only)."""
    return any(g.kind is CacheKind.INDEXER for g in model.groups)


# The sparse-MLA backend vLLM picks for the latent, by compute capability major and cache
# dtype (each backend's supported_kv_cache_dtypes and supports_compute_capability,
# v1/attention/backends/mla/; other pairs are not traced), and whether it stores the latent as
# fp8_ds_mla rows: FLASHMLA_SPARSE with fp8 and FLASHINFER_MLA_SPARSE_SM120 with any dtype turn
# the cache dtype into fp8_ds_mla (mla_attention.py, _canonicalize_sparse_mla_kv_cache_dtype);
# FLASHINFER_MLA_SPARSE keeps plain fp8 rows ("Using standard fp8 KV cache format").
_SM120_SPARSE = ("FLASHINFER_MLA_SPARSE_SM120 (multiples of 64); it needs index_topk 2048 "
                 "(DeepSeek V3.2's)", True)
_SPARSE_MLA: dict[tuple[int, str], tuple[str, bool]] = {
    (9, "bf16"): ("FLASH_ATTN_MLA_SPARSE (multiples of 64)", False),
    (9, "fp16"): ("FLASH_ATTN_MLA_SPARSE (multiples of 64)", False),
    (9, "fp8"): ("FLASHMLA_SPARSE (multiples of 64)", True),
    (10, "bf16"): ("FLASH_ATTN_MLA_SPARSE_FA4 at 8 or 16 heads per rank, FLASHMLA_SPARSE above "
                   "(multiples of 64)", False),
    (10, "fp8"): ("FLASHINFER_MLA_SPARSE (multiples of 32) with plain fp8 rows; it needs "
                  "qk_nope_head_dim 128 or 192 (DeepSeek's 128 assumed)", False),
    (12, "bf16"): _SM120_SPARSE,
    (12, "fp8"): _SM120_SPARSE,
}
_ARCH = {9: "Hopper", 10: "Blackwell (SM100)", 12: "SM120"}


def _fp8_ds_mla(model: ModelSpec, kv_dtype: str, gpu: GPU) -> bool:
    """Whether vLLM stores a sparse-MLA latent as fp8_ds_mla rows (:data:`_SPARSE_MLA`)."""
    backend = _SPARSE_MLA.get((_cuda_major(gpu), kv_dtype))
    return _sparse(model) and not _gqa_indexer(model) and backend is not None and backend[1]


def _gqa_indexer(model: ModelSpec) -> bool:
    """MiniMax M3's shape: an indexer key beside attention layers with no latent (the one
    reader that makes it is kvlib/models/readers/minimax_m3.py)."""
    return _sparse(model) and not any(g.kind is CacheKind.LATENT for g in model.groups)


MINIMAX_M3_BLOCK = 128  # the only kernel block of MiniMax M3's backends in vLLM 0.34.0


def _minimax_m3_block(model: ModelSpec, kv_dtype: str, gpu: GPU, block_size: int | None,
                      notes: list[str], release: str) -> int:
    """MiniMax M3's block size in vLLM 0.34.0 (vllm/ paths; measured by its own code on the
    CPU, tests/test_minimax_m3.py). The sparse layers' backend, MINIMAX_M3_SPARSE (Triton, or
    the MSA subclasses on SM100, nvidia/sparse_attention_msa.py:98, :106, :131, :139, none
    overriding it), and the indexer's, MINIMAX_M3_SPARSE_INDEXER (its NVFP4 and MSA
    subclasses, nvidia/indexer_nvfp4.py:93, indexer_msa.py:65, neither overriding it), take
    128-token kernel blocks only
    (models/minimax_m3/common/sparse_attention.py:174-176, common/indexer.py:94-95); the dense
    layers' FLASH_ATTN (multiples of 16) or FLASHINFER (16, 32, 64 and up, v1/attention/
    backends/flashinfer.py:587-606) take sizes dividing 128. vLLM takes the smallest least
    common multiple all accept, 128 (``_preferred_block_size_for_backends``,
    platforms/interface.py:710-757); a backend accepts any multiple of its size
    (``supports_block_size``, v1/attention/backend.py:125-141). The layers' FullAttentionSpec
    (nvidia/model.py:1040-1048) and the indexer's MLAAttentionSpec (common/indexer.py:155-163)
    then form one group (MLAAttentionSpec groups as full attention,
    v1/core/single_type_kv_cache_manager.py:2733-2736; v1/core/kv_cache_planning.py:1187-1191)
    whose page is the sum of theirs (v1/kv_cache_interface.py:1354-1365)."""
    kinds = {g.kind for g in model.groups if g.kind not in EMPTY}
    if release != "0.34.0" or kinds != {CacheKind.FULL, CacheKind.INDEXER} \
            or _cuda_major(gpu) is None or kv_dtype not in ("bf16", "fp8"):
        raise ValueError(f"{model.name}: GQA layers with an indexer key (MiniMax M3) are traced "
                         "in vLLM 0.34.0 on CUDA GPUs with a bf16 or fp8 cache only, not in vLLM "
                         f"{release} on {gpu.name} with {kv_dtype} (the ROCm model, "
                         "models/minimax_m3/amd/, and other dtypes are not traced)")
    if block_size is not None and block_size % MINIMAX_M3_BLOCK:
        raise ValueError(f"--block-size {block_size}: vLLM 0.34.0's MiniMax M3 backends take "
                         "multiples of 128 only (common/sparse_attention.py:174-176, "
                         "common/indexer.py:94-95)")
    notes.append("MiniMax M3: its sparse and indexer backends take 128-token blocks only "
                 "(common/sparse_attention.py:174-176, common/indexer.py:94-95), so "
                 f"{block_size or MINIMAX_M3_BLOCK}-token blocks; K, V and indexer keys in one "
                 "group, a block holding every layer's page")
    return block_size or MINIMAX_M3_BLOCK



# vLLM 0.33.0 stores an fp8 sparse-MLA latent as fp8_ds_mla: 512 fp8 values, 4 fp32 scales
# (one per 128) and the 64 RoPE values in bf16, 656 B a token (model_executor/layers/
# attention/mla_attention.py, state_content_bytes; v1/attention/backends/mla/flashmla_sparse.py).
_FP8_DS_MLA = ((512, 64), 512 + 4 * 4 + 64 * 2)  # (d_L, d_R), bytes


def _preferred(sizes: tuple[int, ...] | int, release: str) -> int:
    """The block vLLM picks for a backend whose kernels take ``sizes`` (a tuple of exact
    sizes) or multiples of an int."""
    default = DEFAULT_BLOCK[release]
    if isinstance(sizes, int):
        return default if default % sizes == 0 else sizes
    return default if default in sizes else min(sizes)


def _base_block(model: ModelSpec, kv_dtype: str, gpu: GPU, notes: list[str],
                release: str) -> int:
    """The block size vLLM picks when ``--block-size`` is not given: the first valid MLA
    backend in platforms/cuda.py's priority list, then its preferred size (:func:`_preferred`)."""
    if not any(g.kind is CacheKind.LATENT for g in model.groups):
        return _preferred(16, release)  # FLASH_ATTN and the others take multiples of 16
    major = _cuda_major(gpu)
    if _sparse(model):
        # The latent's backend: _SPARSE_MLA. The indexer has a backend of its own,
        # DEEPSEEK_V32_INDEXER, which takes 64-token blocks only on CUDA (indexer.py), and
        # vLLM gives a model with two backends the least common multiple of their sizes
        # (platforms/interface.py, _preferred_block_size_for_backends): 64, whatever the
        # latent's backend takes
        backend = _SPARSE_MLA.get((major, kv_dtype))
        if backend is not None:
            notes.append(f"sparse MLA on {_ARCH[major]}, {kv_dtype} cache: {backend[0]}; "
                         "64-token blocks, the indexer backend's only size")
            return 64
        if major == 8:
            raise ValueError(
                f"vLLM {release} has no sparse MLA backend for {gpu.name} (compute "
                f"capability {gpu.cuda_capability[0]}.{gpu.cuda_capability[1]}): its sparse "
                "backends run on Hopper, Blackwell and SM120 (supports_compute_capability)")
        if major is not None:
            notes.append(f"sparse MLA on {gpu.name} with a {kv_dtype} cache: the latent's backend "
                         f"is not traced in vLLM {release}; 64-token blocks, the indexer "
                         "backend's only size on CUDA")
            return 64
        notes.append(f"sparse MLA block size on {gpu.name}, {kv_dtype} cache, not traced in "
                     f"vLLM {release}: {DEFAULT_BLOCK[release]} assumed")
        return DEFAULT_BLOCK[release]
    if major == 9 and bytes_per_element(kv_dtype) < 2:
        backend, sizes = "MLA with an fp8 cache on Hopper: FLASHMLA (64)", (64,)
    elif major == 9:
        backend, sizes = "MLA on Hopper: FLASH_ATTN_MLA (multiples of 16)", 16
    elif major == 10:
        backend, sizes = ("MLA on Blackwell (SM100): FLASHINFER_MLA (32 or 64); it needs "
                          "qk_nope_head_dim 64, 128 or 192 (DeepSeek's 128 assumed)"), (32, 64)
    elif major in (8, 12):  # Ampere, Ada, SM120: only TRITON_MLA is valid
        backend, sizes = f"MLA on {gpu.name}: TRITON_MLA (multiples of 16)", 16
    else:
        notes.append(f"MLA block size on {gpu.name} not traced in vLLM {release}: "
                     f"{DEFAULT_BLOCK[release]} assumed")
        return DEFAULT_BLOCK[release]
    block = _preferred(sizes, release)
    notes.append(f"{backend}, {block}-token blocks")
    return block


def _gemma4_backends(model: ModelSpec, kv_dtype: str, gpu: GPU, bs: int,
                     notes: list[str], release: str) -> None:
    """Say which backends vLLM 0.33.0 gives attention layers of different head sizes
    (Gemma 4: 512-wide full layers beside 256-wide sliding ones), and refuse by name what
    is not traced. models/config.py, Gemma4Config: with FA4 available (compute capability
    9.x, 10.x or 11.x, vllm_flash_attn/flash_attn_interface.py) and a 16-bit cache it sets
    flash_attn_version = 4 for every layer; without FA4, TRITON_ATTN. Gemma 4 is a
    multimodal prefix LM (use_bidirectional_attention "vision"), so on Hopper the
    TRITON_FLASH_ATTN composite comes first (platforms/cuda.py, _get_backend_priorities):
    Triton and FlashAttention both take MultipleOf(16) there, and neither declares a KV
    layout, so the layout is LBNHC (v1/attention/backends/utils.py), not block-outermost."""
    major = _cuda_major(gpu)
    if any(g.kind in (CacheKind.LATENT, CacheKind.INDEXER) for g in model.groups):
        raise ValueError(f"{model.name}: MLA layers beside layers of other page or head sizes "
                         f"are not traced in vLLM {release}")
    if major == 9 and kv_dtype in ("bf16", "fp16"):
        notes.append("head sizes differ (Gemma 4), on Hopper: FA4 for every layer "
                     "(Gemma4Config), through the TRITON_FLASH_ATTN composite with images on "
                     f"(FLASH_ATTN text-only); both take multiples of 16: {bs}-token blocks, "
                     "and the default LBNHC layout (not block-outermost: no packed groups)")
    elif major == 9 and kv_dtype == "fp8" and release == "0.34.0":
        # the 512-wide layers run FA4 on 64-token kernel blocks (flash_attn.py), which is
        # 0.34.0's default block anyway; make oracle measured this layout with vLLM's code
        notes.append("head sizes differ (Gemma 4), on Hopper with an fp8 cache: FA4's 64-token "
                     "kernel blocks, 0.34.0's default; plain fp8 rows (measured by make oracle)")
    elif major in (8, 12) and kv_dtype in ("bf16", "fp16", "fp8"):
        notes.append(f"head sizes differ (Gemma 4), on {gpu.name}: no FA4, so vLLM forces "
                     f"TRITON_ATTN (Gemma4Config); multiples of 16: {bs}-token blocks, the "
                     "default LBNHC layout")
    elif major == 9:
        raise ValueError(f"{model.name}: layers of different head sizes with a {kv_dtype} cache "
                         f"on Hopper are not traced in vLLM {release} (with fp8 the "
                         "512-wide layers run FA4 on 64-token kernel blocks, flash_attn.py)")
    elif major == 10:
        raise ValueError(f"{model.name}: layers of different head sizes on Blackwell (SM100) are "
                         f"not modelled: vLLM {release} gives them TRITON_FLASHINFER "
                         "(64-token blocks) with images on, FLASHINFER text-only")
    else:
        raise ValueError(f"{model.name}: layers of different head sizes on {gpu.name} with a "
                         f"{kv_dtype} cache are not traced in vLLM {release}")
    if bs % 16:
        raise ValueError(f"--block-size {bs}: vLLM's backends for these layers take multiples "
                         "of 16")
