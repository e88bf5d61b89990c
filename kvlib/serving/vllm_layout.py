"""What vLLM allocates, and the concurrency it logs at start-up (notebook 06 and 07).

vLLM does not allocate "cache + state" per sequence: it cuts memory into blocks of
equal size, each holding one page for every layer of one *KV-cache group*, and logs
"Maximum concurrency for N tokens per request: X" = blocks / blocks one request may
need. This module follows vLLM **0.33.0** (paths below are in that release):

* **Pages.** An attention layer's page is ``block_size`` tokens of its per-rank cache
  (``FullAttentionSpec.page_size_bytes``, v1/kv_cache_interface.py); a Mamba /
  linear-attention / convolution layer's page is its whole state (``MambaSpec``).
* **Block size.** 16 by default (``CacheConfig.DEFAULT_BLOCK_SIZE``; FlashAttention
  takes multiples of 16). MLA takes the first valid backend of platforms/cuda.py's
  priority list: on Hopper FLASH_ATTN_MLA (multiples of 16) with a bf16 cache, FLASHMLA
  (64) with fp8; on Blackwell (SM100) FLASHINFER_MLA (32 or 64: 32); on Ampere, Ada and
  SM120 TRITON_MLA (multiples of 16). Sparse MLA (an indexer) rules the dense backends
  out: on Hopper FLASH_ATTN_MLA_SPARSE or FLASHMLA_SPARSE (multiples of 64), an fp8
  latent then being vLLM's 656-byte fp8_ds_mla row; on Blackwell FA4 or FLASHMLA_SPARSE
  with bf16, FLASHINFER_MLA_SPARSE (plain fp8 rows) with fp8; on SM120
  FLASHINFER_MLA_SPARSE_SM120 (fp8_ds_mla rows whatever the dtype); none on Ampere or
  Ada (refused). The indexer's own backend takes 64-token blocks only, so a sparse
  model's blocks are 64 tokens on every CUDA GPU. For a hybrid model
  the attention block grows until one attention page holds one state page, in
  multiples of K = 16, or lcm(16, 64) for Qwen GDN layers with FlashInfer prefill on
  Hopper (``_align_hybrid_block_size``, platforms/interface.py:940-1137); every state
  page is then padded to the attention page.
* **Groups.** Layers with equal specs form buckets; group size = the smallest bucket,
  unless the largest is under 1.5x the smallest (then the largest); a bucket of n
  layers makes ceil(n / group size) groups, and the missing slots are padding
  (``_get_kv_cache_groups_uniform_page_size``, v1/core/kv_cache_planning.py:481-556).
  One block = group size x page bytes. Layers of one type and one block size (all
  full attention, even with different head counts) form a single group whose page is
  the sum of theirs.
* **Blocks per request** (``max_memory_usage_bytes`` / page): full ceil(N / block);
  sliding ceil(min(W - 1 + in-flight, N) / block) + 1; chunked ceil(min(C + in-flight,
  N) / block); a state group 2 + checkpoint blocks with prefix caching on (vLLM's
  default for hybrid models, ``mamba_cache_mode="align"``: 1 checkpoint for Mamba2, 1
  for Qwen GDN with FlashInfer), 1 with it off. In-flight tokens =
  ``max_num_batched_tokens`` x concurrent batches (2 with async scheduling, on by
  default): 8192 x 2 for ``vllm serve`` on H100/H200, 16384 x 2 on GPUs with 160 GiB
  or more, 2048 x 2 on A100 and smaller GPUs (engine/arg_utils.py, config/vllm.py).

kvlib's own sequence count (:mod:`kvlib.serving.plan`) is steady-state decode: every
sequence at its full length. vLLM's figure reserves, per request, the worst case of a
chunked prefill in flight and pads groups, so the two differ; both are shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import bytes_per_element
from kvlib.models.spec import EMPTY, STATEFUL, CacheKind, LayerGroup, ModelSpec
from kvlib.serving.gpus import GPU, get_gpu
from kvlib.serving.kv import vllm_sliding_window_tokens
from kvlib.serving.sharding import shard, shard_state

__all__ = ["VLLM_RELEASE", "VllmGroup", "VllmLayout", "vllm_layout", "max_num_batched_tokens"]

VLLM_RELEASE = "0.33.0"
GiB = 1024**3


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
    return _sparse(model) and backend is not None and backend[1]


def max_num_batched_tokens(gpu: GPU) -> int:
    """``vllm serve``'s default for this GPU (engine/arg_utils.py, OPENAI_API_SERVER)."""
    memory = gpu.reported_bytes or gpu.hbm_bytes
    if memory >= 160 * GiB:
        return 16384
    if memory >= 70 * GiB and not gpu.name.startswith("A100"):
        return 8192
    return 2048


@dataclass(frozen=True)
class VllmGroup:
    """One KV-cache group: its kind, the real layers in it, its slots (group size) and the
    blocks one request may need."""

    kind: str
    layers: int
    slots: int
    blocks_per_request: int


@dataclass(frozen=True)
class VllmLayout:
    """Blocks, groups and the start-up concurrency vLLM would log; bytes per GPU."""

    block_size: int
    page_bytes: int  # one layer's page (after padding states); 0 for a single summed group
    bytes_per_block: int
    groups: tuple[VllmGroup, ...]
    group_size: int
    padding_layers: int
    blocks_per_request: int
    in_flight_tokens: int
    mamba_cache_mode: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def num_blocks(self, kv_budget_bytes: int) -> int:
        return max(0, kv_budget_bytes) // self.bytes_per_block

    def max_concurrency(self, kv_budget_bytes: int) -> Fraction:
        """num_blocks / blocks_per_request, exactly (vLLM logs it to 2 decimals)."""
        return Fraction(self.num_blocks(kv_budget_bytes), self.blocks_per_request)


# vLLM 0.33.0 stores an fp8 sparse-MLA latent as fp8_ds_mla: 512 fp8 values, 4 fp32 scales
# (one per 128) and the 64 RoPE values in bf16, 656 B a token (model_executor/layers/
# attention/mla_attention.py, state_content_bytes; v1/attention/backends/mla/flashmla_sparse.py).
_FP8_DS_MLA = ((512, 64), 512 + 4 * 4 + 64 * 2)  # (d_L, d_R), bytes


def _per_token_bytes(g: LayerGroup, tp: int, b, ds_mla: bool = False) -> Fraction:
    """One layer's cache per token on one rank (``shard`` keeps latents and indexer keys
    whole); with ``ds_mla``, a latent layer's row is vLLM's fp8_ds_mla row."""
    if ds_mla and g.kind is CacheKind.LATENT:
        widths, row = _FP8_DS_MLA
        if (g.sizes.get("d_L"), g.sizes.get("d_R")) != widths:
            raise ValueError(f"vLLM's fp8_ds_mla row is traced for d_L=512, d_R=64 only, got "
                             f"d_L={g.sizes.get('d_L')}, d_R={g.sizes.get('d_R')}")
        return Fraction(row)
    rank, _ = shard(g, tp)
    return Fraction(rank.bytes_per_token(b), g.layers)


def _state_page(g: LayerGroup, tp: int) -> int:
    return shard_state(g, tp).state_bytes_per_sequence() // g.layers


def _checkpoint(g: LayerGroup, hopper: bool) -> tuple[int, int | None]:
    """(prefill checkpoint blocks, checkpoint alignment) of a state layer in align mode."""
    if g.attention == "Mamba2":
        return 1, None  # layers/mamba/mamba_mixer2.py: one checkpoint block, no alignment
    if g.attention == "Gated DeltaNet" and hopper:
        return 1, 64  # FlashInfer GDN prefill on SM90: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    return 0, None


def _base_block(model: ModelSpec, kv_dtype: str, gpu: GPU, notes: list[str]) -> int:
    """The block size vLLM picks when ``--block-size`` is not given: the first valid MLA
    backend in platforms/cuda.py's priority list, then its preferred size (16 if it takes
    16, else its smallest: AttentionBackend.get_preferred_block_size, v1/attention/backend.py)."""
    if not any(g.kind is CacheKind.LATENT for g in model.groups):
        return 16
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
                f"vLLM {VLLM_RELEASE} has no sparse MLA backend for {gpu.name} (compute "
                f"capability {gpu.cuda_capability[0]}.{gpu.cuda_capability[1]}): its sparse "
                "backends run on Hopper, Blackwell and SM120 (supports_compute_capability)")
        if major is not None:
            notes.append(f"sparse MLA on {gpu.name} with a {kv_dtype} cache: the latent's backend "
                         f"is not traced in vLLM {VLLM_RELEASE}; 64-token blocks, the indexer "
                         "backend's only size on CUDA")
            return 64
        notes.append(f"sparse MLA block size on {gpu.name}, {kv_dtype} cache, not traced in "
                     f"vLLM {VLLM_RELEASE}: 16 assumed")
        return 16
    if major == 9:
        if bytes_per_element(kv_dtype) < 2:
            notes.append("MLA with an fp8 cache on Hopper: FLASHMLA, 64-token blocks")
            return 64
        notes.append("MLA on Hopper: FLASH_ATTN_MLA (multiples of 16), 16-token blocks")
        return 16
    if major == 10:
        notes.append("MLA on Blackwell (SM100): FLASHINFER_MLA (32 or 64), 32-token blocks; "
                     "it needs qk_nope_head_dim 64, 128 or 192 (DeepSeek's 128 assumed)")
        return 32
    if major in (8, 12):  # Ampere, Ada, SM120: only TRITON_MLA is valid
        notes.append(f"MLA on {gpu.name}: TRITON_MLA (multiples of 16), 16-token blocks")
        return 16
    notes.append(f"MLA block size on {gpu.name} not traced in vLLM {VLLM_RELEASE}: 16 assumed")
    return 16


def vllm_layout(model: ModelSpec, max_model_len: int, kv_dtype: str = "bf16", tp: int = 1,
                gpu: GPU | str = "H200", *, batched_tokens: int | None = None,
                async_scheduling: bool = True, prefix_caching: bool = True,
                block_size: int | None = None) -> VllmLayout:
    """vLLM's block layout for ``model`` on one TP rank (see the module docstring).

    block_size: ``--block-size`` (vLLM still raises it for a hybrid model).
    batched_tokens: ``max_num_batched_tokens`` (default: ``vllm serve``'s for the GPU).
    """
    gpu = gpu if isinstance(gpu, GPU) else get_gpu(gpu)
    N = validate.positive_int("max_model_len", max_model_len)
    tp = validate.positive_int("tensor_parallel_size", tp)
    b = bytes_per_element(kv_dtype)
    notes: list[str] = []
    batched = batched_tokens or max_num_batched_tokens(gpu)
    in_flight = validate.positive_int("max_num_batched_tokens", batched) * (
        2 if async_scheduling else 1)
    hopper = _cuda_major(gpu) == 9
    attn = [g for g in model.groups if g.grows]
    states = [g for g in model.groups if g.kind in STATEFUL]
    if not attn:
        raise ValueError(f"{model.name} has no attention layers: vLLM's layout needs one")
    bs = block_size or _base_block(model, kv_dtype, gpu, notes)
    ds_mla = _fp8_ds_mla(model, kv_dtype, gpu)
    if ds_mla:
        (d_L, d_R), row = _FP8_DS_MLA
        notes.append(f"sparse MLA: vLLM's fp8_ds_mla row, {row} B per token per layer "
                     f"({d_L} fp8 + {d_L // 128} fp32 scales + {d_R} bf16 RoPE), not "
                     f"{int((d_L + d_R) * b)} B")
    mode = None
    if states:
        mode = "align" if prefix_caching else "none"
        first = attn[0]
        one_token = _per_token_bytes(first, tp, b, ds_mla)
        page = max(_state_page(g, tp) for g in states)
        K = bs
        if mode == "align":
            aligns = [_checkpoint(g, hopper)[1] for g in states]
            if all(a is not None for a in aligns):
                K = math.lcm(K, *aligns)
        bs = max(bs, K * -(-page // int(K * one_token)))
        notes.append(f"hybrid: attention blocks of {bs:,} tokens so that one page "
                     f"({bs:,} x {one_token} B) holds one state page ({page:,} B, padded)")
    # buckets of equal specs: (kind label, per-layer page, blocks per request) -> layers
    buckets: dict[tuple, int] = {}
    for g in model.groups:
        if g.kind in EMPTY:
            continue
        if g.kind in STATEFUL:
            ckpt = _checkpoint(g, hopper)[0] if mode == "align" else 0
            need = 2 + ckpt if mode == "align" else 1
            key = ("state", str(g.kind), g.attention, need)
            per_layer = None
        else:
            if g.kind is CacheKind.SLIDING:
                need = vllm_sliding_window_tokens(g.window, bs, in_flight, N) // bs
            elif g.kind is CacheKind.CHUNKED:
                need = -(-min(g.window + in_flight, N) // bs)
            else:
                need = -(-N // bs)
            per_layer = _per_token_bytes(g, tp, b, ds_mla) * bs
            key = ("attention", str(g.kind), g.window, need)
        buckets[key] = buckets.get(key, 0) + g.layers
        buckets[key + ("page",)] = per_layer
    layer_buckets = {k: n for k, n in buckets.items() if k[-1] != "page"}
    kinds = {k[1] for k in layer_buckets}
    if not states and all(k in ("full", "latent", "indexer") for k in kinds):
        # one type: a single group whose page is the sum of every layer's
        pages = sum(buckets[k + ("page",)] * n for k, n in layer_buckets.items())
        need = -(-N // bs)
        layers = sum(layer_buckets.values())
        return VllmLayout(bs, 0, math.ceil(pages), (VllmGroup("full", layers, layers, need),),
                          layers, 0, need, in_flight, mode, tuple(notes))
    if states:
        page = int(bs * _per_token_bytes(attn[0], tp, b, ds_mla))
    else:
        pages = {buckets[k + ("page",)] for k in layer_buckets}
        if len(pages) > 1:
            raise ValueError(f"{model.name}: attention layers with different page sizes; vLLM "
                             f"{VLLM_RELEASE} rescales their block sizes, which kvlib does not "
                             "model")
        page = int(pages.pop())
    sizes = list(layer_buckets.values())
    lo, hi = min(sizes), max(sizes)
    group_size = hi if hi < 1.5 * lo else lo
    groups, padding, per_request = [], 0, 0
    for (_, kind, _, need), n in layer_buckets.items():
        count = -(-n // group_size)
        padding += count * group_size - n
        for i in range(count):  # vLLM deals the bucket's layers out as layers[i::count]
            groups.append(VllmGroup(kind, len(range(i, n, count)), group_size, need))
        per_request += count * need
    if padding:
        notes.append(f"{padding} padding layer slots: groups of {group_size} layers "
                     f"(vLLM warns the layout may waste memory)")
    return VllmLayout(bs, page, group_size * page, tuple(groups), group_size, padding,
                      per_request, in_flight, mode, tuple(notes))
