"""What vLLM allocates, and the concurrency it logs at start-up (notebook 06 and 07).

vLLM does not allocate "cache + state" per sequence: it cuts memory into blocks of
equal size, each holding one page for every layer of one *KV-cache group*, and logs
"Maximum concurrency for N tokens per request: X" = blocks / blocks one request may
need. This module follows vLLM **0.34.0** and **0.33.0** (``release=``; paths below are in
0.33.0 unless a line says 0.34.0; ``make oracle`` checks 0.34.0's figures against vLLM's own
code):

* **Pages.** An attention layer's page is ``block_size`` tokens of its per-rank cache
  (``FullAttentionSpec.page_size_bytes``, v1/kv_cache_interface.py); a Mamba /
  linear-attention / convolution layer's page is its whole state (``MambaSpec``).
* **Block size.** ``CacheConfig.DEFAULT_BLOCK_SIZE``, 16 in 0.33.0 and 64 in 0.34.0
  (config/cache.py:185), which a backend takes when it supports it (FlashAttention takes
  multiples of 16), else its smallest size (:func:`_preferred`). MLA takes the first valid
  backend of platforms/cuda.py's priority list: on Hopper FLASH_ATTN_MLA (multiples of 16)
  with a bf16 cache, FLASHMLA (64) with fp8; on Blackwell (SM100) FLASHINFER_MLA (32 or 64:
  32); on Ampere, Ada and SM120 TRITON_MLA (multiples of 16). Sparse MLA (an indexer) rules
  the dense backends out: on Hopper FLASH_ATTN_MLA_SPARSE or FLASHMLA_SPARSE (multiples of
  64), an fp8 latent then being vLLM's 656-byte fp8_ds_mla row; on Blackwell FA4 or
  FLASHMLA_SPARSE with bf16, FLASHINFER_MLA_SPARSE (plain fp8 rows) with fp8; on SM120
  FLASHINFER_MLA_SPARSE_SM120 (fp8_ds_mla rows whatever the dtype); none on Ampere or Ada
  (refused). The indexer's own backend takes 64-token blocks only, so a sparse model's
  blocks are 64 tokens on every CUDA GPU. MiniMax M3 (GQA with an indexer key, no latent;
  0.34.0 only) takes 128-token blocks on every CUDA GPU (:func:`_minimax_m3_block`).
  For a hybrid model the attention block grows until one attention page holds one state
  page, in multiples of K = the block size (16 in 0.33.0, 64 in 0.34.0), or lcm(16, 64) for
  Qwen GDN layers with FlashInfer prefill on Hopper in 0.33.0 (``_align_hybrid_block_size``,
  platforms/interface.py:940-1137); every state page is then padded to the attention page.
  Attention layers of different head sizes (Gemma 4: 512-wide full layers, 256-wide sliding
  ones) get the backends of ``Gemma4Config`` (model_executor/models/config.py): FA4
  everywhere on Hopper (the TRITON_FLASH_ATTN composite, images on), TRITON_ATTN on Ampere,
  Ada and SM120; all take multiples of 16, so the default block (Blackwell and ROCm are
  refused; fp8 on Hopper too in 0.33.0, while 0.34.0's FA4 64-token blocks are measured).
* **Unified pages.** When attention pages still differ, a smaller page that divides the
  largest gets a block that many times longer, so every page is the largest
  (``unify_kv_cache_spec_page_size``, v1/core/kv_cache_planning.py): Gemma 4's full
  layers (2 KV heads x 1,024 B a token) take 32-token blocks beside 16-token sliding ones
  (8 x 512 B). Each group keeps its own block size (``VllmGroup.block_size``).
* **Groups.** Layers with equal specs form buckets; group size = the smallest bucket,
  unless the largest is under 1.5x the smallest (then the largest); a bucket of n
  layers makes ceil(n / group size) groups, and the missing slots are padding
  (``_get_kv_cache_groups_uniform_page_size``, v1/core/kv_cache_planning.py:481-556).
  One block = group size x page bytes. Layers of one type and one block size (all
  full attention, even with different head counts) form a single group whose page is
  the sum of theirs.
* **Blocks per request** (``max_memory_usage_bytes`` / page, at each group's own block
  size): full ceil(N / block); sliding ceil(min(W - 1 + in-flight, N) / block) + 1;
  chunked ceil(min(C + in-flight, N) / block); a state group 2 + checkpoint blocks with
  prefix caching on (vLLM's default for hybrid models, ``mamba_cache_mode="align"``: 1
  checkpoint for Mamba2, 1 for Qwen GDN with FlashInfer), 1 with it off. In-flight tokens =
  ``max_num_batched_tokens`` x concurrent batches (2 with async scheduling, on by
  default): 8192 x 2 for ``vllm serve`` on H100/H200, 16384 x 2 on GPUs with 160 GiB
  or more, 2048 x 2 on A100 and smaller GPUs (engine/arg_utils.py, config/vllm.py).

What a request then *holds* is less than that admission bound (:meth:`VllmLayout.holding`,
:meth:`VllmLayout.sessions`): at full length, every block of a full or latent group, the
window's blocks of a sliding group, one block of a state group; while its prompt is
prefilled, more (a sliding window frees only up to the committed tokens, which lag the
scheduled ones under async scheduling; a state group keeps the states saved at chunk ends).
The plan's sessions are n - 1 sequences at full length while the n-th is prefilled, in the
pool's blocks less the null block: what vLLM 0.34.0's own scheduler carries, within one
sequence, on every bundled model (``make oracle``, docs/crosscheck.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import bytes_per_element
from kvlib.models.spec import EMPTY, STATEFUL, CacheKind, LayerGroup, ModelSpec
from kvlib.serving.gpus import GPU, get_gpu
from kvlib.serving.kv import DEFAULT_BLOCK_SIZE, vllm_sliding_window_tokens
from kvlib.serving.sharding import shard, shard_state

__all__ = ["VLLM_RELEASE", "VLLM_RELEASES", "vllm_release", "VllmGroup", "VllmLayout",
           "Holding", "vllm_layout", "max_num_batched_tokens", "max_num_seqs",
           "state_page_bytes", "largest_fitting_len", "stored_kv_dtype"]

VLLM_RELEASES = ("0.34.0", "0.33.0")  # newest first; the first is the default
VLLM_RELEASE = "0.33.0"  # the release the rules below were traced in (0.34.0: see release=)


def vllm_release(release: str | None) -> str:
    """The vLLM release named by ``release`` ("0.34", "0.34.0", "v0.33.0"; None: the
    newest, the first of :data:`VLLM_RELEASES`); ValueError naming the value otherwise."""
    if release is None:
        return VLLM_RELEASES[0]
    text = str(release).strip().lstrip("v")
    for r in VLLM_RELEASES:
        if text in (r, r.rsplit(".", 1)[0]):
            return r
    raise ValueError(f"vLLM release must be one of {', '.join(VLLM_RELEASES)}, "
                     f"got {release!r}")
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


def _tier(gpu: GPU) -> int:
    """``EngineArgs.get_batch_defaults``'s tier for this GPU (engine/arg_utils.py:2995-3043 in
    0.34.0, the same in 0.33.0): 2 for 160 GiB or more, 1 for 70 GiB or more but an A100 or a
    GB10, 0 otherwise; by the device's total memory as CUDA reports it
    (``get_device_total_memory``: the catalog's CUDA total, else its datasheet)."""
    memory = gpu.total_memory_bytes
    if memory >= 160 * GiB:
        return 2
    if memory >= 70 * GiB and not gpu.name.startswith("A100") and gpu.name != "GB10":
        return 1
    return 0


def max_num_batched_tokens(gpu: GPU) -> int:
    """``vllm serve``'s default (OPENAI_API_SERVER): prompt tokens one step may hold."""
    return (2048, 8192, 16384)[_tier(gpu)]


def max_num_seqs(gpu: GPU) -> int:
    """``vllm serve``'s default (OPENAI_API_SERVER): requests running at once."""
    return (256, 1024, 1024)[_tier(gpu)]


@dataclass(frozen=True)
class VllmGroup:
    """One KV-cache group: its kind, the real layers in it, its slots (group size), the
    blocks one request may need, and its block size in tokens (``kv_cache_spec.block_size``:
    groups differ when vLLM scales a smaller page up, and a state group's is
    ``mamba_block_size``)."""

    kind: str
    layers: int
    slots: int
    blocks_per_request: int
    block_size: int
    window: int | None = None

    def held(self, end: int, processed: int, chunk: tuple[int, int] | None, mode: str | None,
             lag: int) -> int:
        """Blocks one request holds in this group once ``end`` of its tokens are scheduled
        and ``processed`` of them committed (vLLM frees out-of-window blocks only up to the
        committed tokens: v1/core/single_type_kv_cache_manager.py:687-716, 1153-1189).

        chunk: while a prompt is prefilled, (the previous chunks of the last ``lag`` that
        ended on a block boundary, whether this chunk is the prompt's last); None in decode.
        Full attention, latents and indexers keep every block; a sliding window drops the
        blocks wholly before ``processed - W + 1``, chunked local attention those before the
        current chunk. A state layer in align mode keeps one
        block in decode; while a prompt is prefilled it keeps the state saved at each block
        boundary until the commit catches up and, on the last chunk, a checkpoint block
        (``MambaManager``, :1433-1800; measured by make oracle: 1, 2, 3, ..., 4 for a long
        prompt in 64-token-aligned chunks with async scheduling)."""
        if self.kind in STATE_KINDS:
            if chunk is None or mode != "align":
                return 1
            saved, last = chunk
            return 1 + saved + last
        blocks = -(-end // self.block_size)
        if self.kind in ("sliding", "compressor"):  # a V4 compressor state is a window too
            blocks -= max(0, processed - self.window + 1) // self.block_size
        elif self.kind == "chunked":  # the tokens left of the current chunk (:1386-1432)
            blocks -= processed // self.window * self.window // self.block_size
        return blocks


STATE_KINDS = {str(k) for k in STATEFUL}


@dataclass(frozen=True)
class Holding:
    """What one request of ``length`` tokens holds in vLLM's pool, in blocks summed over the
    KV-cache groups: ``decode`` at full length (its ``length - 1`` cached tokens; the last
    sampled token is never fed back), ``prefill`` at the peak of its prompt's chunked
    prefill (``length - 1`` prompt tokens, ``chunk`` a step, committed ``lag`` steps late).
    ``by_group``: the decode blocks of each group, in :attr:`VllmLayout.groups` order."""

    length: int
    decode: int
    prefill: int
    chunk: int
    lag: int
    by_group: tuple[int, ...] = ()


def largest_fitting_len(needed, budget: int, max_len: int) -> int:
    """vLLM's ``estimate_max_model_len`` (v1/core/kv_cache_planning.py:142-193 in 0.34.0): the
    largest length in 1..``max_len`` whose ``needed(length)`` bytes fit in ``budget``, by its
    binary search; 0 when 1 does not fit."""
    left, right = 1, max_len
    if needed(left) > budget:
        return 0
    result = 1
    while left <= right:
        mid = (left + right) // 2
        if needed(mid) <= budget:
            result = mid
            left = mid + 1
        else:
            right = mid - 1
    return result


@dataclass(frozen=True)
class VllmLayout:
    """Blocks, groups and the start-up concurrency vLLM would log; bytes per GPU.

    block_size: the smallest attention group's block size, the ``cache_config.block_size``
    vLLM sets after planning (v1/engine/core.py); each group's own is
    ``VllmGroup.block_size``.
    """

    block_size: int
    page_bytes: int  # one layer's page (after padding or scaling); 0 for a single summed group
    bytes_per_block: int
    groups: tuple[VllmGroup, ...]
    group_size: int
    padding_layers: int
    blocks_per_request: int
    in_flight_tokens: int
    mamba_cache_mode: str | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    chunk_tokens: int = 8192  # max_num_batched_tokens: prompt tokens one step may prefill
    max_num_seqs: int = 1024

    def num_blocks(self, kv_budget_bytes: int) -> int:
        return max(0, kv_budget_bytes) // self.bytes_per_block

    def max_concurrency(self, kv_budget_bytes: int) -> Fraction:
        """num_blocks / blocks_per_request, exactly (vLLM logs it to 2 decimals)."""
        return Fraction(self.num_blocks(kv_budget_bytes), self.blocks_per_request)

    def holding(self, length: int) -> Holding:
        """Blocks one request of ``length`` tokens holds (:class:`Holding`).

        The prefill is stepped as vLLM's scheduler steps it: ``chunk_tokens`` prompt tokens a
        step (in align mode a chunk ends on the last block boundary within reach, or at the
        budget when none is: ``Scheduler._mamba_block_aligned_split``,
        v1/core/sched/scheduler.py:563), and with async scheduling a step is scheduled before
        the previous one's output is applied, so what is committed lags two steps behind what
        is scheduled (one without). The peak is the largest sum over groups at any step."""
        length = validate.positive_int("length", length)
        cached = max(1, length - 1)
        lag = 2 if self.in_flight_tokens > self.chunk_tokens else 1
        chunk, ends, start, bs = self.chunk_tokens, [], 0, self.block_size
        mode = self.mamba_cache_mode
        align = mode == "align" and any(g.kind in STATE_KINDS for g in self.groups)
        while cached - start > chunk:  # a prompt longer than one step's budget
            # in align mode a chunk ends on the last block boundary within reach, if any
            last = (start + chunk) // bs * bs
            start = last if align and last > start else start + chunk
            ends.append(start)
        ends.append(cached)
        on_boundary = [align and end % bs == 0 for end in ends]
        peak = max(sum(g.held(end, ends[k - lag] if k >= lag else 0,
                              (sum(on_boundary[max(0, k - lag):k]), k == len(ends) - 1),
                              mode, lag)
                       for g in self.groups) for k, end in enumerate(ends))
        by_group = tuple(g.held(cached, cached - (lag - 1), None, mode, lag)
                         for g in self.groups)
        decode = sum(by_group)
        return Holding(length, decode, max(peak, decode), chunk, lag, by_group)

    def needed_bytes(self) -> int:
        """What vLLM checks at start-up against the KV memory it has: the blocks one request of
        ``max_model_len`` tokens may need, whole blocks of every group
        (``_max_memory_usage_bytes_from_groups``, v1/core/kv_cache_planning.py:1297-1330)."""
        return self.bytes_per_block * self.blocks_per_request

    def sessions(self, kv_budget_bytes: int, length: int) -> int:
        """Requests of ``length`` tokens vLLM's scheduler carries at once under its own
        allocator: n - 1 of them at full length while the n-th is prefilled, in the pool's
        blocks less the null block (block 0, never handed out: v1/core/block_pool.py), and at
        most ``max_num_seqs``. ``make oracle`` checks it against vLLM's scheduler."""
        h = self.holding(length)
        free = self.num_blocks(kv_budget_bytes) - 1
        n = 0 if free < h.prefill else 1 + (free - h.prefill) // h.decode
        return min(n, self.max_num_seqs)


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


def state_page_bytes(model: ModelSpec, tp: int) -> int:
    """The largest state page of ``model``'s state layers on one of ``tp`` ranks, before vLLM
    pads it to the attention page (0 for a model without states)."""
    return max((shard_state(g, tp).state_bytes_per_sequence() // g.layers
                for g in model.groups if g.kind in STATEFUL), default=0)


def _checkpoint(g: LayerGroup, hopper: bool) -> tuple[int, int | None]:
    """(prefill checkpoint blocks, checkpoint alignment) of a state layer in align mode."""
    if g.attention == "Mamba2":
        return 1, None  # layers/mamba/mamba_mixer2.py: one checkpoint block, no alignment
    if g.attention == "Gated DeltaNet" and hopper:
        return 1, 64  # FlashInfer GDN prefill on SM90: FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    return 0, None


# CacheConfig.DEFAULT_BLOCK_SIZE: 16 in 0.33.0, 64 in 0.34.0 (vllm/config/cache.py:185). A
# backend takes it when it supports it, else its smallest size
# (AttentionBackend.get_preferred_block_size, v1/attention/backend.py:158-166 in 0.34.0).
DEFAULT_BLOCK = {"0.34.0": 64, "0.33.0": DEFAULT_BLOCK_SIZE}


def stored_kv_dtype(config: dict | None, kv_dtype: str) -> tuple[str, str | None]:
    """The dtype vLLM really stores when asked for ``kv_dtype``, and why, where they differ.

    Falcon: vLLM (0.33.0 and 0.34.0) builds a rotary or ALiBi Falcon's ``Attention`` without
    ``cache_config`` (model_executor/models/falcon.py:173-195 in 0.34.0), so the layer's
    ``kv_cache_dtype`` is "auto" (model_executor/layers/attention/attention.py:291-295) and
    ``--kv-cache-dtype`` is ignored: the cache stays in the model dtype. FalconConfig makes
    ``rotary`` = not ``alibi``, so this is every Falcon. Found by ``make oracle``."""
    if (config or {}).get("model_type") in ("falcon", "RefinedWeb", "RefinedWebModel") \
            and kv_dtype not in ("bf16", "fp16"):
        return "bf16", (f"vLLM ignores kv_cache_dtype {kv_dtype} for Falcon: its attention is "
                        "built without cache_config (model_executor/models/falcon.py:173-195),"
                        " so the cache stays bf16")
    return kv_dtype, None


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


def _need(kind: CacheKind, window: int | None, block: int, N: int, in_flight: int) -> int:
    """Blocks one request may need in an attention group of ``block``-token blocks:
    ``max_memory_usage_bytes // page_size_bytes`` (v1/kv_cache_interface.py)."""
    if kind is CacheKind.SLIDING:
        return vllm_sliding_window_tokens(window, block, in_flight, N) // block
    if kind is CacheKind.CHUNKED:
        return -(-min(window + in_flight, N) // block)
    return -(-N // block)


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


def _unify_page_size(model: ModelSpec, buckets: dict, per_token: dict, bs: int, blocks: dict,
                     kv_dtype: str, gpu: GPU, notes: list[str], release: str) -> int:
    """vLLM's ``unify_kv_cache_spec_page_size`` (v1/core/kv_cache_planning.py): every
    attention bucket starts at ``bs`` tokens a block; a smaller page that divides the
    largest gets a block ``largest / page`` times longer, one that does not is padded to
    the largest. Fills ``blocks`` (bucket -> tokens a block) and returns the page bytes."""
    pages = {k: per_token[k] * bs for k in buckets}
    largest = max(pages.values())
    widths = {g.sizes.get("d_QK") for g in model.groups if g.grows}
    if len(widths) > 1:
        # Gemma4Config chooses the backends (pages are equal at TP 4, the backends are not)
        _gemma4_backends(model, kv_dtype, gpu, bs, notes, release)
    elif len(set(pages.values())) > 1 and not (
            release == "0.34.0" and all(largest % p == 0 for p in pages.values())):
        # 0.34.0 with pages that divide the largest: one backend for every layer, the pages
        # unified by scaling the smaller one's block (MiMo-V2-Flash's 4-head full layers beside
        # 8-head sliding ones, measured by make oracle); anything else is not traced
        raise ValueError(f"{model.name}: attention layers of one head size with different page "
                         f"sizes; their backends in vLLM {release} are not traced")
    for k, p in pages.items():
        label = f"{k[1]} layers' {int(p):,} B pages"
        if p == largest:
            blocks[k] = bs
        elif largest % p == 0:
            blocks[k] = bs * int(largest // p)
            notes.append(f"{label} at {bs} tokens: vLLM scales their block to {blocks[k]} "
                         f"tokens, {int(largest):,} B like the largest "
                         "(unify_kv_cache_spec_page_size)")
        else:
            blocks[k] = bs
            notes.append(f"{label} do not divide the largest, {int(largest):,} B: vLLM pads "
                         "them to it (page_size_padded)")
    if largest.denominator != 1:
        raise ValueError(f"{model.name}: a page of {largest} B at {bs} tokens is not whole bytes")
    return int(largest)


def vllm_layout(model: ModelSpec, max_model_len: int, kv_dtype: str = "bf16", tp: int = 1,
                gpu: GPU | str = "H200", *, batched_tokens: int | None = None,
                async_scheduling: bool = True, prefix_caching: bool = True,
                block_size: int | None = None, release: str | None = None,
                max_seqs: int | None = None) -> VllmLayout:
    """vLLM's block layout for ``model`` on one TP rank (see the module docstring).

    release: the vLLM release whose rules apply (:func:`vllm_release`; default the newest).
    block_size: ``--block-size`` (vLLM still raises it for a hybrid model).
    batched_tokens: ``max_num_batched_tokens`` (default: ``vllm serve``'s for the GPU).
    max_seqs: ``max_num_seqs`` (default: ``vllm serve``'s for the GPU).
    """
    gpu = gpu if isinstance(gpu, GPU) else get_gpu(gpu)
    release = vllm_release(release)
    N = validate.positive_int("max_model_len", max_model_len)
    tp = validate.positive_int("tensor_parallel_size", tp)
    b = bytes_per_element(kv_dtype)
    notes: list[str] = []
    batched = batched_tokens or max_num_batched_tokens(gpu)
    in_flight = validate.positive_int("max_num_batched_tokens", batched) * (
        2 if async_scheduling else 1)
    seqs = validate.positive_int("max_num_seqs", max_seqs or max_num_seqs(gpu))
    limits = {"chunk_tokens": batched, "max_num_seqs": seqs}
    hopper = _cuda_major(gpu) == 9
    attn = [g for g in model.groups if g.grows]
    states = [g for g in model.groups if g.kind in STATEFUL]
    if any(g.kind is CacheKind.COMPRESSED for g in model.groups):
        # DeepSeek V4: windowed, compressed and compressor-state groups packed side by side
        # in one block (kvlib/serving/vllm_v4.py, each rule with its vLLM 0.34.0 line)
        from kvlib.serving.vllm_v4 import v4_layout
        return v4_layout(model, N, kv_dtype, gpu, in_flight=in_flight, release=release,
                         block_size=block_size, limits=limits)
    if not attn:
        raise ValueError(f"{model.name} has no attention layers: vLLM's layout needs one")
    conv = [g for g in model.groups if g.attention == "Short-conv window"]
    if conv:
        # Inkling's short-convolution streams: vLLM 0.34.0 keeps them in blocks of
        # sconv_kernel_size tokens and unifies that page with the attention pages
        # (models/inkling/.../sconv_swa_attn.py:12-14, 152-155); not traced here
        raise ValueError(f"{model.name}: {conv[0].layers} layer(s) keep short-convolution "
                         f"streams in a {conv[0].window}-token window, which vLLM {release} "
                         "stores in blocks of that many tokens unified with the attention "
                         "pages (sconv_swa_attn.py:12-14, 152-155); kvlib has not traced that "
                         "layout (kvlib estimate counts the bytes)")
    diff_kv = [g for g in attn if g.sizes.get("d_V") not in (None, g.sizes.get("d_QK"))
               and g.kind is not CacheKind.LATENT]
    if diff_kv and bytes_per_element(kv_dtype) < 2:
        # keys and values of different widths take FLASH_ATTN_DIFFKV, which refuses a
        # quantized cache FlashAttention cannot run for those widths
        # (v1/attention/backends/flash_attn_diffkv.py:95-106 in 0.34.0; measured for
        # MiMo-V2-Flash's 192/128 heads by make oracle)
        raise ValueError(f"vLLM {release} refuses a {kv_dtype} cache for {model.name}'s layers "
                         f"with keys of {diff_kv[0].sizes['d_QK']} and values of "
                         f"{diff_kv[0].sizes['d_V']}: \"Unsupported FP8 Diff-KV configuration; "
                         "use an unquantized KV cache\" (flash_attn_diffkv.py:95-106)")
    if _gqa_indexer(model):  # MiniMax M3
        bs = _minimax_m3_block(model, kv_dtype, gpu, block_size, notes, release)
    else:
        bs = block_size or _base_block(model, kv_dtype, gpu, notes, release)
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
        page = state_page_bytes(model, tp)
        K = bs
        if mode == "align":
            aligns = [_checkpoint(g, hopper)[1] for g in states]
            if all(a is not None for a in aligns):
                K = math.lcm(K, *aligns)
        bs = max(bs, K * -(-page // int(K * one_token)))
        notes.append(f"hybrid: attention blocks of {bs:,} tokens so that one page "
                     f"({bs:,} x {one_token} B) holds one state page ({page:,} B, padded)")
    # buckets of equal specs -> layers: attention by (kind, window, bytes per token of one
    # layer), states by (kind, formula, blocks per request)
    buckets: dict[tuple, int] = {}
    per_token: dict[tuple, Fraction | None] = {}
    for g in model.groups:
        if g.kind in EMPTY:
            continue
        if g.kind in STATEFUL:
            ckpt = _checkpoint(g, hopper)[0] if mode == "align" else 0
            key = ("state", g.kind, g.attention, 2 + ckpt if mode == "align" else 1)
            per_token[key] = None
        else:
            one = _per_token_bytes(g, tp, b, ds_mla)
            key = ("attention", g.kind, g.window, one)
            per_token[key] = one
        buckets[key] = buckets.get(key, 0) + g.layers
    kinds = {str(k[1]) for k in buckets}
    if not states and all(k in ("full", "latent", "indexer") for k in kinds):
        # one type: a single group whose page is the sum of every layer's
        pages = sum(per_token[k] * bs * n for k, n in buckets.items())
        need = -(-N // bs)
        layers = sum(buckets.values())
        return VllmLayout(bs, 0, math.ceil(pages),
                          (VllmGroup("full", layers, layers, need, bs),),
                          layers, 0, need, in_flight, mode, tuple(notes), **limits)
    # each bucket's block size (tokens) and blocks one request may need
    blocks: dict[tuple, int] = {}
    if states:
        page = int(bs * _per_token_bytes(attn[0], tp, b, ds_mla))
        for k in buckets:
            # a state layer's block: mamba_block_size, the attention block in align mode,
            # max_model_len in none mode (model_executor/models/config.py)
            blocks[k] = bs if k[0] == "attention" or mode == "align" else N
    else:
        page = _unify_page_size(model, buckets, per_token, bs, blocks, kv_dtype, gpu, notes,
                                release)
    sizes = list(buckets.values())
    lo, hi = min(sizes), max(sizes)
    group_size = hi if hi < 1.5 * lo else lo
    groups, padding, per_request = [], 0, 0
    for key, n in buckets.items():
        kind, block = key[1], blocks[key]
        need = key[3] if key[0] == "state" else _need(kind, key[2], block, N, in_flight)
        count = -(-n // group_size)
        padding += count * group_size - n
        for i in range(count):  # vLLM deals the bucket's layers out as layers[i::count]
            groups.append(VllmGroup(str(kind), len(range(i, n, count)), group_size, need, block,
                                    key[2] if key[0] == "attention" else None))
        per_request += count * need
    if padding:
        notes.append(f"{padding} padding layer slots: groups of {group_size} layers "
                     f"(vLLM warns the layout may waste memory)")
    smallest = min(blocks[k] for k in buckets if k[0] == "attention")
    return VllmLayout(smallest, page, group_size * page, tuple(groups), group_size, padding,
                      per_request, in_flight, mode, tuple(notes), **limits)
