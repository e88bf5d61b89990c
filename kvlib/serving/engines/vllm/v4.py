"""DeepSeek V4's KV-cache groups as vLLM 0.34.0 builds them (notebook 08; issue 33).

A V4 layer stores up to five caches, each its own KV-cache spec (what each holds:
:mod:`kvlib.models.readers.deepseek_v4`). vLLM 0.34.0 lays them out as follows; paths are
under vllm/ in the 0.34.0 wheel, and ``make oracle`` checks the block count, the logged
concurrency and the sessions against vLLM's own code (tests/oracle).

* **Specs and pages.** Every layer: the window, ``SlidingWindowMLASpec`` of ``sliding_window``
  tokens in 64-token blocks of 584-byte entries (``DeepseekV4SWACache``,
  v1/attention/backends/mla/sparse_swa.py:76-147, block_size 64 at :85). A layer with m > 1:
  its compressed entries, ``MLAAttentionSpec`` with ``tokens_per_state=m`` in
  ``cache_config.block_size`` = 256-token blocks, 256 / m entries a page
  (models/deepseek_v4/attention.py:817-841; the sparse backend takes 256 only,
  models/deepseek_v4/sparse_mla.py:60-61), and its compressor's state, ``SlidingWindowMLASpec``
  of coff x m tokens in blocks of 4 (m = 4) or 8 (m = 128) (models/deepseek_v4/compressor.py:
  156-192). An m = 4 layer also: indexer keys (``MLAAttentionSpec``, 132 B per 4 tokens,
  attention.py:843-881) and the indexer's compressor state. With the fp8_ds_mla format every
  page is rounded up to a multiple of 576 bytes (``alignment``, ``_apply_alignment_padding``,
  v1/kv_cache_interface.py:731-738).
* **Buckets.** Layers go into buckets of one spec type, window and block size
  (``UniformTypeKVCacheSpecs.is_uniform_type``, kv_cache_interface.py:1383-1400): the windows
  (64-token blocks), every ``MLAAttentionSpec`` (compressed entries of both ratios and the
  indexer keys, 256-token blocks), the m = 4 and indexer compressor states (window 8, 4-token
  blocks) and the m = 128 compressor states (window 128, 8-token blocks).
* **Groups.** Pages differ in size, so vLLM packs them side by side in one block
  (block-outermost layout; ``_get_packed_kv_cache_groups``, v1/core/kv_cache_planning.py:
  958-1085, reached from ``get_kv_cache_groups`` at :1203). A bucket is *balanced* when each
  of its page sizes has the same number of layers; the largest balanced bucket with more than
  one page size sets a floor, and ``_approximate_gcd`` (:923-955) picks the repeats per group
  (from the floor to the largest count, the one with least padding, ties to the larger); a
  balanced bucket of n repeats splits into ceil(n / repeats) groups, every other bucket stays
  whole. V4-Flash: windows 43 layers with the m = 4 states' 21 repeats and the m = 128
  states' 20 give 22 repeats, so the windows split into 22 + 21 layers: 5 groups.
* **Block bytes.** One block id names a block in every group; its stride is the widest
  group's pages summed (``_get_kv_cache_bytes_per_block``, kv_cache_planning.py:620-648; the
  block-stride alignment is 1, as ``DeepseekV4SWACache`` is built without one,
  attention.py:344-351). Blocks = budget // that (:724).
* **Blocks per request.** Per group, the most any of its layers needs
  (``UniformTypeKVCacheSpecs.max_memory_usage_pages``, kv_cache_interface.py:1416-1420):
  ceil(N / 256) for the compressed group, ceil(min(W - 1 + in flight, N) / block) + 1 for a
  window (``max_admission_blocks_per_request``, :932-958); the logged concurrency is blocks /
  their sum (``get_max_concurrency_for_kv_cache_config``, v1/core/kv_cache_utils.py:1082-1114).
  The in-flight tokens (2 x 8,192 with async scheduling on an H200,
  config/vllm.py:560-577) make the small-block state groups dominate that sum: at 128K,
  V4-Flash's 4-token state group alone counts 4,099 of 7,194 blocks a request.
* **What a request holds.** The compressed group keeps every block; each windowed group only
  the blocks its window reaches (freed up to the committed tokens,
  v1/core/single_type_kv_cache_manager.py), so in decode a request holds a few blocks of each
  windowed group and the scheduler carries about ten times the logged concurrency at 128K
  (:meth:`kvlib.serving.engines.vllm.pages.VllmLayout.sessions`).
* **Block size.** After planning vLLM sets ``cache_config.block_size`` to the smallest
  prefix-cacheable group's (v1/engine/core.py:367-378): 4 tokens for V4.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kvlib.core import validate
from kvlib.models.spec import CacheKind, LayerGroup, ModelSpec
from kvlib.serving.engines.vllm.pages import VllmGroup, VllmLayout

__all__ = ["V4Spec", "V4Term", "v4_specs", "v4_packed_groups", "v4_terms", "is_v4",
           "ALIGNMENT", "COMPRESSED_BLOCK", "WINDOW_BLOCK", "STATE_BLOCK"]

# fp8_ds_mla pages: a multiple of 576 bytes (vLLM 0.34.0 models/deepseek_v4/attention.py:834)
ALIGNMENT = 576
COMPRESSED_BLOCK = 256  # cache_config.block_size: the sparse backend's only size (sparse_mla.py:60)
WINDOW_BLOCK = 64  # DeepseekV4SWACache's block_size (sparse_swa.py:85)
STATE_BLOCK = {4: 4, 128: 8}  # compressor state blocks by m (compressor.py:167-171)
_STATE_RATIO = {8: 4, 128: 128}  # the state's window coff x m -> m (coff = 2 for m = 4)

_NAMES = {"window": "window rows", "compressed": "compressed entries",
          "indexer": "indexer keys", "state": "compressor state",
          "indexer state": "indexer compressor state"}


def is_v4(model: ModelSpec) -> bool:
    """Whether ``model`` has compressed layers (DeepSeek V4's kind)."""
    return any(g.kind is CacheKind.COMPRESSED for g in model.groups)


@dataclass(frozen=True)
class V4Spec:
    """One of vLLM 0.34.0's per-layer KV-cache specs for a V4 model, for ``layers`` layers.

    role: "window", "compressed", "indexer", "state" or "indexer state".
    spec: vLLM's class ("SlidingWindowMLASpec" or "MLAAttentionSpec").
    window: tokens a sliding spec keeps (None for the compressed ones).
    ratio: m, tokens per stored entry (1 for windows and states: one slot per token).
    block_size: tokens per block; entry_bytes: bytes per stored entry or slot;
    page_bytes: one layer's page, block_size / ratio entries rounded up to 576 bytes."""

    role: str
    spec: str
    layers: int
    window: int | None
    ratio: int
    block_size: int
    entry_bytes: int
    page_bytes: int

    @property
    def name(self) -> str:
        m = f" (m = {self.ratio})" if self.role == "compressed" else ""
        if self.role == "state":
            m = f" (m = {_STATE_RATIO[self.window]})"
        return _NAMES[self.role] + m

    @property
    def bucket(self) -> tuple:
        """What ``UniformTypeKVCacheSpecs.is_uniform_type`` compares: type, window, block."""
        return (self.spec, self.window, self.block_size)

    def max_pages(self, max_model_len: int, in_flight: int) -> int:
        """Pages one request may need: ``max_memory_usage_bytes // page_size_bytes``
        (kv_cache_interface.py:654-659 for the compressed, :932-958 for the windows)."""
        if self.window is None:
            return -(-max_model_len // self.block_size)
        return -(-min(self.window - 1 + in_flight, max_model_len) // self.block_size) + 1


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def _entry_bytes(g: LayerGroup) -> int:
    """Bytes of one entry (or one state slot) of a V4 group, from kvlib's tables."""
    per = LayerGroup(CacheKind.FULL, 1, g.attention, g.sizes).bytes_per_token(1)
    if int(per) != per:
        raise ValueError(f"{g.attention} entry of {per} bytes is not whole bytes")
    return int(per)


def v4_specs(model: ModelSpec) -> list[V4Spec]:
    """vLLM 0.34.0's specs of a V4 ``model`` (one :class:`V4Spec` per kind of layer cache), in
    the order kvlib's reader lists its groups; ValueError naming what is not traced."""
    out = []
    for g in model.groups:
        entry = _entry_bytes(g)
        if g.kind is CacheKind.COMPRESSED:
            role = "indexer" if g.attention == "Indexer" else "compressed"
            if COMPRESSED_BLOCK % g.ratio:
                raise ValueError(f"{model.name}: m = {g.ratio} does not divide vLLM's "
                                 f"{COMPRESSED_BLOCK}-token blocks")
            out.append(V4Spec(role, "MLAAttentionSpec", g.layers, None, g.ratio,
                              COMPRESSED_BLOCK, entry,
                              _round_up(COMPRESSED_BLOCK // g.ratio * entry, ALIGNMENT)))
        elif g.kind is CacheKind.SLIDING and g.attention == "V4 entry":
            out.append(V4Spec("window", "SlidingWindowMLASpec", g.layers, g.window, 1,
                              WINDOW_BLOCK, entry, _round_up(WINDOW_BLOCK * entry, ALIGNMENT)))
        elif g.kind is CacheKind.SLIDING and g.attention == "Compressor state":
            if g.window not in _STATE_RATIO:
                raise ValueError(f"{model.name}: a compressor state over {g.window} tokens; "
                                 "vLLM 0.34.0 builds them for m = 4 (8 tokens) and m = 128 only "
                                 "(compressor.py:156-171)")
            m = _STATE_RATIO[g.window]
            # the m = 4 layers' two states differ by width: the attention compressor's is
            # coff x head_dim wide, the indexer's coff x index_head_dim
            role = "indexer state" if m == 4 and g.sizes.get("d_c") != 2 * _head_dim(model) \
                else "state"
            block = STATE_BLOCK[m]
            out.append(V4Spec(role, "SlidingWindowMLASpec", g.layers, g.window, 1, block, entry,
                              _round_up(block * entry, ALIGNMENT)))
        else:
            raise ValueError(f"{model.name}: a {g.kind} layer ({g.attention}) beside compressed "
                             "layers is not traced in vLLM 0.34.0's DeepSeek V4 layout")
    if not any(s.role == "window" for s in out):
        raise ValueError(f"{model.name}: compressed layers without DeepSeek V4's window of "
                         "uncompressed entries are not traced in vLLM 0.34.0's layout")
    return out


def _head_dim(model: ModelSpec) -> int:
    return next(g.sizes["d_c"] for g in model.groups if g.attention == "V4 entry")


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """vLLM's ``_approximate_gcd`` (kv_cache_planning.py:923-955): the d in [lower_bound,
    max(values)] that leaves the least total padding sum((d - x % d) % d), ties to the larger."""
    best, best_pad = lower_bound, None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


@dataclass(frozen=True)
class PackedGroup:
    """One KV-cache group of the packed layout: its layers per spec, and its block bytes."""

    bucket: tuple
    layers: tuple[tuple[V4Spec, int], ...]  # (spec, layers of it in this group)

    @property
    def bytes(self) -> int:
        return sum(s.page_bytes * n for s, n in self.layers)

    @property
    def count(self) -> int:
        return sum(n for _, n in self.layers)

    @property
    def first_block(self) -> int:
        return self.layers[0][0].block_size


def v4_packed_groups(specs: list[V4Spec]) -> list[PackedGroup]:
    """vLLM's ``_get_packed_kv_cache_groups`` (kv_cache_planning.py:958-1085) on V4's specs."""
    buckets: dict[tuple, list[V4Spec]] = {}
    for s in specs:
        buckets.setdefault(s.bucket, []).append(s)
    info = []
    for key, members in buckets.items():
        pages = Counter()
        for s in members:
            pages[s.page_bytes] += s.layers
        balanced = len(set(pages.values())) == 1
        info.append((key, members, pages, balanced))
    floor = max((max(p.values()) for _, _, p, bal in info if bal and len(p) > 1), default=0)
    repeats = (approximate_gcd([max(p.values()) for _, _, p, bal in info if bal], floor)
               if floor else None)

    def num_groups(pages, balanced):
        if balanced and repeats is not None:
            return -(-max(pages.values()) // repeats)
        return 1

    def is_state(key):  # MambaSpec / CircularBufferSpec never occur here (:1039-1044)
        return repeats is None and key[0] == "SlidingWindowMLASpec"

    def widest(pages, n):
        return sum(-(-c // n) * p for p, c in pages.items())

    anchor = max(widest(p, sum(s.layers for s in ms) if is_state(k) else num_groups(p, bal))
                 for k, ms, p, bal in info)
    groups = []
    for key, members, pages, balanced in info:
        n = num_groups(pages, balanced)
        if anchor and is_state(key):
            per_block = max(anchor // members[0].page_bytes, 1)
            n = max(n, -(-sum(s.layers for s in members) // per_block))
        if n > 1 and not balanced:
            raise ValueError("an unbalanced bucket split into groups is not traced in vLLM 0.34.0")
        # pattern repeats dealt out as repeats[i::n]: group i has len(range(i, R, n)) of them
        repeat_count = max(pages.values())
        for i in range(n):
            share = len(range(i, repeat_count, n))
            layers = tuple((s, share * s.layers // repeat_count) for s in members)
            groups.append(PackedGroup(key, layers))
    return groups


@dataclass(frozen=True)
class V4Term:
    """One kind of V4 cache for one request of ``context`` tokens, over ``layers`` layers.

    name: "window rows", "compressed entries (m = 4)", "compressed entries (m = 128)",
    "indexer keys", "compressor state (m = 4)", "indexer compressor state",
    "compressor state (m = 128)".
    entries: entries (or state slots) one layer keeps at ``context`` tokens: min(T, W) window
    rows, floor(T / m) compressed entries or indexer keys, min(T, coff x m) state slots.
    entry_bytes: bytes of one (584 fp8_ds_mla entry, 132 indexer key, 2 x coff x width x 4 fp32
    state slot). entry_total: layers x entries x entry_bytes, the entries alone (B).
    block_size: tokens per block; page_bytes: one layer's page, padded to 576 B.
    blocks: blocks one layer holds at full length in decode (``context - 1`` tokens cached;
    a sliding spec only the blocks its window reaches, as vLLM's manager frees them).
    stored: layers x blocks x page_bytes, what the pages hold (B): whole blocks, padding in.
    """

    name: str
    layers: int
    entries: int
    entry_bytes: int
    entry_total: int
    block_size: int
    page_bytes: int
    blocks: int
    stored: int


def v4_terms(model: ModelSpec, context: int, *, lag: int = 2) -> list[V4Term]:
    """The caches of one DeepSeek V4 request of ``context`` tokens, kind by kind, as vLLM
    0.34.0 stores them on Hopper (fp8_ds_mla entries; :class:`V4Term` gives each field and
    its unit), in the order of kvlib's reader.

    lag: steps the committed tokens trail the cached ones (2 with async scheduling, vLLM
    0.34.0's default; 1 without): a window frees its blocks only up to the committed tokens,
    so in decode it holds ceil(cached / block) - floor((committed - W + 1) / block) blocks
    (:meth:`kvlib.serving.engines.vllm.pages.VllmGroup.held`).

    Exact ints; ValueError for a model without compressed layers or a bad context.
    What the pool gives a request is more: each block of a group is as wide as the widest
    group (:func:`v4_layout`), so ``VllmLayout.holding(context).decode x bytes_per_block``."""
    context = validate.positive_int("context", context)
    lag = validate.positive_int("lag", lag)
    if not is_v4(model):
        raise ValueError(f"{model.name} has no compressed layers: v4_terms is for DeepSeek V4")
    cached = max(1, context - 1)  # the last sampled token is never fed back
    out = []
    for s in v4_specs(model):
        kind = "compressed" if s.window is None else "sliding"
        blocks = VllmGroup(kind, 1, 1, 0, s.block_size, s.window).held(
            cached, cached - (lag - 1), None, None, lag)
        entries = context // s.ratio if s.window is None else min(context, s.window)
        out.append(V4Term(s.name, s.layers, entries, s.entry_bytes,
                          s.layers * entries * s.entry_bytes, s.block_size, s.page_bytes,
                          blocks, s.layers * blocks * s.page_bytes))
    return out


def v4_layout(model: ModelSpec, max_model_len: int, kv_dtype: str, gpu, *, in_flight: int,
              release: str, block_size: int | None, limits: dict):
    """:class:`kvlib.serving.engines.vllm.pages.VllmLayout` of a V4 ``model`` (the module
    docstring), whatever ``tp``: every V4 spec has one KV head and ``max_tp_shards=1``, so each
    rank holds the whole cache (``num_kv_heads=1, max_tp_shards=1``,
    models/deepseek_v4/attention.py:828-829); ValueError naming what is not traced."""
    if release != "0.34.0":
        raise ValueError(f"{model.name}: DeepSeek V4 is traced in vLLM 0.34.0 only (not "
                         f"{release})")
    if gpu.cuda_capability is None or gpu.cuda_capability[0] != 9:
        raise ValueError(f"{model.name}: vLLM 0.34.0's DeepSeek V4 layout is traced on Hopper "
                         f"(fp8_ds_mla pages) only; on {gpu.name} its backend (FlashInfer's "
                         "plain rows, 512-byte alignment) is not traced")
    if kv_dtype not in ("bf16", "fp16", "fp8"):
        raise ValueError(f"{model.name}: vLLM 0.34.0 stores DeepSeek V4 as fp8_ds_mla on "
                         f"Hopper and refuses a {kv_dtype} cache (models/deepseek_v4/"
                         "attention.py:95-130)")
    if block_size not in (None, COMPRESSED_BLOCK):
        raise ValueError(f"--block-size {block_size}: DeepSeek V4's sparse backend takes "
                         f"{COMPRESSED_BLOCK}-token blocks only (models/deepseek_v4/"
                         "sparse_mla.py:60-61)")
    N = max_model_len
    specs = v4_specs(model)
    packed = v4_packed_groups(specs)
    kinds = {"window": "sliding", "compressed": "compressed", "indexer": "compressed",
             "state": "compressor", "indexer state": "compressor"}
    groups = []
    for g in packed:
        first = g.layers[0][0]
        need = max(s.max_pages(N, in_flight) for s, n in g.layers if n)
        groups.append(VllmGroup(kinds[first.role], g.count, g.count, need, first.block_size,
                                first.window))
    per_block = max(g.bytes for g in packed)
    notes = [
        "DeepSeek V4: fp8_ds_mla entries whatever --kv-dtype (auto and fp8 become fp8_ds_mla; "
        "an explicit bfloat16 is refused on Hopper, models/deepseek_v4/attention.py:95-130); "
        "pages rounded up to 576 B (v1/kv_cache_interface.py:731-738)",
        "DeepSeek V4 pages packed side by side in one block of "
        f"{per_block:,} B (the widest of {len(packed)} groups: "
        + ", ".join(_page_list(g) for g in packed)
        + "; _get_packed_kv_cache_groups, v1/core/kv_cache_planning.py:958-1085)",
        "DeepSeek V4 blocks a request may need, by group: "
        + " + ".join(f"{g.blocks_per_request:,}" for g in groups)
        + f" (windows count {in_flight:,} tokens in flight; "
        "v1/kv_cache_interface.py:932-958)"]
    return VllmLayout(min(g.block_size for g in groups), 0, per_block, tuple(groups),
                      max(g.count for g in packed), 0, sum(g.blocks_per_request for g in groups),
                      in_flight, None, tuple(notes), **limits)


def _page_list(g: PackedGroup) -> str:
    """A group's layers by kind and its block size, for the plan's note."""
    return "+".join(f"{n} {s.name}" for s, n in g.layers if n) + \
        f" ({g.first_block} tokens)"
