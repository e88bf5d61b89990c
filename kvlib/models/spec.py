"""A model as a list of layer groups, each one kind of cache or state (notebooks 05-07).

Shaped after vLLM's ``kv_cache_interface``: every group answers the same questions,
the bytes one token adds, the bytes one sequence of T tokens holds in a growing
cache, and the bytes of its constant-size state. All numbers come from the
generated formulas of :mod:`kvlib.core.formulas` (``KINDS`` for attention,
``STATES`` for constant-size layers), never from a second formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from fractions import Fraction

from kvlib.core import validate

__all__ = ["CacheKind", "GROWING", "STATEFUL", "EMPTY", "LayerGroup", "ModelSpec", "scale_rows"]


class CacheKind(StrEnum):
    """What a group of layers keeps per sequence (the ``kind`` of ``kvlib estimate --json``)."""

    FULL = "full"  # every token stays: N_KV = T
    SLIDING = "sliding"  # the last W tokens: N_KV = min(T, W)
    CHUNKED = "chunked"  # local attention within chunks of C tokens: N_KV = min(T, C)
    LATENT = "latent"  # MLA: one latent (+ RoPE key) per token, N_KV = T
    INDEXER = "indexer"  # sparse-attention indexer keys beside MLA: N_KV = T, stored as bytes
    COMPRESSED = "compressed"  # one entry per m tokens (DeepSeek V4): N_KV = floor(T / m)
    MAMBA = "mamba"  # Mamba / Mamba2: a convolution state and an SSM state, constant size
    LINEAR = "linear"  # linear attention (Gated DeltaNet, lightning): a constant-size state
    CONV = "conv"  # short convolution: the last d_conv - 1 inputs, constant size
    NONE = "none"  # no attention in these layers (a no-op or a linear replacement): nothing
    SHARED = "shared"  # reuses an earlier layer's cache (KV sharing): adds nothing

    def __str__(self) -> str:
        return self.value


GROWING = frozenset({CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED, CacheKind.LATENT,
                     CacheKind.INDEXER, CacheKind.COMPRESSED})
STATEFUL = frozenset({CacheKind.MAMBA, CacheKind.LINEAR, CacheKind.CONV})
EMPTY = frozenset({CacheKind.NONE, CacheKind.SHARED})


@dataclass(frozen=True)
class LayerGroup:
    """``layers`` layers that share one cache kind and one set of sizes.

    attention: the formula: a key of ``kvlib.core.formulas.KINDS`` ("MHA", "GQA",
    "MQA", "MLA", ...) for a growing cache, of ``STATES`` ("Mamba2", "Gated DeltaNet",
    ...) for a constant-size state, "" for a group that keeps nothing.
    sizes: the symbols of that formula, e.g. ``{"N_h": 64, "N_g": 8, "d_QK": 128,
    "d_V": 128}``, ``{"d_L": 512, "d_R": 64}``; a state group also holds its element
    sizes ``b_c`` and ``b_s`` in bytes (vLLM's state dtypes, not the KV-cache dtype), and
    an indexer group ``b = 1`` (its keys are stored as bytes). A size given here wins over
    the same symbol passed by a caller (the KV dtype's ``b``).
    window: W (sliding) or C (chunked) in tokens; None for every other kind.
    ratio: m, the tokens merged into one entry of a compressed group (DeepSeek V4's
    ``compress_ratios[i]``), which keeps floor(T / m) entries (notebook 08); None for every
    other kind. A compressed layer's window of uncompressed tokens is a sliding group of its
    own (vLLM 0.34.0 allocates it apart, in every layer).
    """

    kind: CacheKind
    layers: int
    attention: str
    sizes: dict = field(default_factory=dict)
    window: int | None = None
    ratio: int | None = None

    def __post_init__(self):
        validate.positive_int("layers", self.layers)
        if self.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
            validate.positive_int(f"window of a {self.kind} group", self.window)
        elif self.window is not None:
            raise ValueError(f"a {self.kind} group has no window, got window={self.window!r}")
        if self.kind is CacheKind.COMPRESSED:
            if validate.positive_int("ratio of a compressed group", self.ratio) < 2:
                raise ValueError(f"a compressed group merges at least 2 tokens per entry, got "
                                 f"ratio={self.ratio!r}")
        elif self.ratio is not None:
            raise ValueError(f"a {self.kind} group has no ratio, got ratio={self.ratio!r}")

    @property
    def grows(self) -> bool:
        """True for a cache that grows with the context (attention, latent)."""
        return self.kind in GROWING

    @property
    def formulas(self):
        from kvlib.core.formulas import KINDS, STATES  # MLA kinds register themselves on import

        table = KINDS if self.grows else STATES
        if self.kind in EMPTY:
            raise ValueError(f"a {self.kind} group keeps nothing and has no formula")
        try:
            return table[self.attention]
        except KeyError:
            raise ValueError(
                f"attention must be one of {', '.join(table)}, got {self.attention!r}"
            ) from None

    def cached_tokens(self, T: int) -> int:
        """Tokens this group keeps for a sequence of T tokens."""
        T = validate.positive_int("context", T)
        if self.ratio is not None:
            return T // self.ratio  # an entry once all m of its tokens have arrived
        return min(T, self.window) if self.window is not None else T

    def _sizes(self, f, **extra) -> dict:
        # The group's own sizes win: a group that fixes its element size (indexer keys,
        # stored as bytes: b = 1) keeps it whatever KV dtype the caller passes.
        wanted = set(f.args) | ({"N_h"} if "N_g" in f.args else set())
        return {k: v for k, v in {**extra, **self.sizes}.items() if k in wanted}

    def elements_per_token_layer(self) -> int:
        """Cached elements one token adds to one layer (0 for a state or empty group)."""
        if not self.grows:
            return 0
        f = self.formulas.elements_per_token_layer
        return f(**self._sizes(f))

    def bytes_per_token(self, b):
        """Bytes one token adds to this group (all its layers), at ``b`` bytes per element;
        for a compressed group, per token on average: one entry per m tokens (a Fraction
        where m does not divide the entry's bytes)."""
        if not self.grows:
            return 0
        f = self.formulas.bytes_per_token
        per_entry = f(**self._sizes(f, N_L=self.layers, b=b))
        if self.ratio is None:
            return per_entry
        per_token = Fraction(per_entry) / self.ratio
        return int(per_token) if per_token.denominator == 1 else per_token

    def bytes_per_sequence(self, T: int, b) -> int:
        """Bytes of the growing cache this group holds for one sequence of T tokens."""
        if not self.grows or self.cached_tokens(T) == 0:  # fewer than m tokens: no entry yet
            return 0
        f = self.formulas.bytes_per_sequence
        return f(**self._sizes(f, N_L=self.layers, b=b, N_KV=self.cached_tokens(T)))

    def bytes_per_batch(self, T: int, B: int, b) -> int:
        """Bytes of the growing cache this group holds for B sequences of T tokens each."""
        if not self.grows or self.cached_tokens(T) == 0:
            return 0
        f = self.formulas.bytes_per_batch
        return f(**self._sizes(f, N_L=self.layers, b=b, N_KV=self.cached_tokens(T),
                               B=B))

    def state_bytes_per_sequence(self) -> int:
        """Bytes of the constant-size state this group keeps per sequence (0 if none)."""
        if self.kind not in STATEFUL:
            return 0
        f = self.formulas.bytes_per_sequence
        return f(**self._sizes(f, N_L=self.layers))


@dataclass(frozen=True)
class ModelSpec:
    """A model's cache, as layer groups, plus what capacity planning needs.

    params: parameter count (None if unknown). assumptions: every default or
    inference the reader applied, in words, to be shown to the user. ignored_keys: the
    config's unknown keys judged not to shape the cache, by path (shown to the user too).
    """

    name: str
    groups: tuple[LayerGroup, ...]
    params: int | None = None
    max_position_embeddings: int | None = None
    source: str = ""
    assumptions: tuple[str, ...] = ()
    ignored_keys: tuple[str, ...] = ()
    decoder_layers: int | None = None  # the config's layer count, where groups share layers

    @property
    def num_layers(self) -> int:
        """Decoder layers: the config's count where given (Falcon-H1's attention and Mamba2
        groups share every layer), else the groups' sum (an indexer group shares its layers
        with the MLA group)."""
        if self.decoder_layers is not None:
            return self.decoder_layers
        return sum(g.layers for g in self.groups if g.kind is not CacheKind.INDEXER)

    def kv_bytes_per_token(self, b) -> int:
        """Bytes one token adds when every layer keeps it (sum over groups)."""
        return sum(g.bytes_per_token(b) for g in self.groups)

    def kv_bytes_per_sequence(self, T: int, b) -> int:
        """Bytes one sequence of T tokens holds: sliding/chunked groups clamp to their window."""
        return sum(g.bytes_per_sequence(T, b) for g in self.groups)

    def kv_bytes_per_batch(self, T: int, B: int, b) -> int:
        """Bytes B sequences of T tokens hold."""
        return sum(g.bytes_per_batch(T, B, b) for g in self.groups)

    def state_bytes_per_sequence(self) -> int:
        """Bytes of the constant-size state of all non-attention layers, one sequence."""
        return sum(g.state_bytes_per_sequence() for g in self.groups)

    def total_bytes_per_sequence(self, T: int, b) -> int:
        """Growing cache plus constant state, one sequence of T tokens."""
        return self.kv_bytes_per_sequence(T, b) + self.state_bytes_per_sequence()


_WIDTHS = ("d_QK", "d_V", "d_L", "d_R")  # per-head / per-vector widths of the cache rows


def scale_rows(group: LayerGroup, scales) -> tuple[LayerGroup, Fraction]:
    """The group and the bytes per element whose cache formula counts the quantization
    scales of ``scales`` (a :class:`kvlib.core.dtypes.KVScales`), through the same formula.

    Per-vector scales (``elements`` None): the cache formula with every width set to 1
    counts the cached vectors (2 N_g per token per layer for GQA), each one scale of
    ``scale_bytes``. Per-group scales: every ``elements`` cached elements share one scale,
    ``scale_bytes / elements`` per element. Used by ``kvlib plan`` (per GPU, in pages) and
    ``kvlib estimate`` alike."""
    if scales.elements is None:
        ones = {k: 1 for k in _WIDTHS if k in group.sizes}
        return replace(group, sizes={**group.sizes, **ones}), Fraction(scales.scale_bytes)
    return group, Fraction(scales.scale_bytes) / scales.elements
