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
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import bytes_per_element
from kvlib.models.spec import EMPTY, STATEFUL, CacheKind, LayerGroup, ModelSpec
from kvlib.serving.engines.vllm.blocks import (
    _FP8_DS_MLA,
    _base_block,
    _cuda_major,
    _fp8_ds_mla,
    _gemma4_backends,
    _gqa_indexer,
    _minimax_m3_block,
)
from kvlib.serving.engines.vllm.defaults import max_num_batched_tokens, max_num_seqs, vllm_release
from kvlib.serving.engines.vllm.pages import VllmGroup, VllmLayout, vllm_sliding_window_tokens
from kvlib.serving.engines.vllm.v4 import v4_layout
from kvlib.serving.gpus import GPU, get_gpu
from kvlib.serving.sharding import shard, shard_state

__all__ = ["vllm_layout", "state_page_bytes"]


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


def _need(kind: CacheKind, window: int | None, block: int, N: int, in_flight: int) -> int:
    """Blocks one request may need in an attention group of ``block``-token blocks:
    ``max_memory_usage_bytes // page_size_bytes`` (v1/kv_cache_interface.py)."""
    if kind is CacheKind.SLIDING:
        return vllm_sliding_window_tokens(window, block, in_flight, N) // block
    if kind is CacheKind.CHUNKED:
        return -(-min(window + in_flight, N) // block)
    return -(-N // block)


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
        # in one block (kvlib/serving/engines/vllm/v4.py, each rule with its vLLM 0.34.0 line)
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
