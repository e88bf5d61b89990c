"""A model as a list of layer groups, each one kind of cache (notebooks 05-06).

Shaped after vLLM's ``kv_cache_interface``: every group answers two questions,
the bytes one token adds, and the bytes one sequence of T tokens holds.
All numbers come from the generated formulas of :mod:`kvlib.core.formulas`
(looked up by attention name in ``KINDS``), never from a second formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kvlib.core import validate

__all__ = ["CacheKind", "LayerGroup", "ModelSpec"]


class CacheKind(StrEnum):
    FULL = "full"  # every token stays: N_KV = T
    SLIDING = "sliding"  # the last W tokens: N_KV = min(T, W)
    CHUNKED = "chunked"  # local attention within chunks of C tokens: N_KV = min(T, C)
    LATENT = "latent"  # MLA: one latent (+ RoPE key) per token, N_KV = T

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LayerGroup:
    """``layers`` layers that share one cache kind and one set of sizes.

    attention: a key of ``kvlib.core.formulas.KINDS`` ("MHA", "GQA", "MQA", "MLA", ...).
    sizes: the paper's symbols for that kind, e.g. ``{"N_h": 64, "N_g": 8,
    "d_QK": 128, "d_V": 128}`` or ``{"d_L": 512, "d_R": 64}``.
    window: W (sliding) or C (chunked) in tokens; None for full and latent.
    """

    kind: CacheKind
    layers: int
    attention: str
    sizes: dict = field(default_factory=dict)
    window: int | None = None

    def __post_init__(self):
        validate.positive_int("layers", self.layers)
        if self.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
            validate.positive_int(f"window of a {self.kind} group", self.window)
        elif self.window is not None:
            raise ValueError(f"a {self.kind} group has no window, got window={self.window!r}")

    @property
    def formulas(self):
        from kvlib.core.formulas import KINDS

        try:
            return KINDS[self.attention]
        except KeyError:
            raise ValueError(
                f"attention must be one of {', '.join(KINDS)}, got {self.attention!r}"
            ) from None

    def cached_tokens(self, T: int) -> int:
        """Tokens this group keeps for a sequence of T tokens."""
        T = validate.positive_int("context", T)
        return min(T, self.window) if self.window is not None else T

    def _sizes(self, f, **extra) -> dict:
        wanted = set(f.args) | ({"N_h"} if "N_g" in f.args else set())
        return {k: v for k, v in {**self.sizes, **extra}.items() if k in wanted}

    def elements_per_token_layer(self) -> int:
        f = self.formulas.elements_per_token_layer
        return f(**self._sizes(f))

    def bytes_per_token(self, b) -> int:
        """Bytes one token adds to this group (all its layers), at ``b`` bytes per element."""
        f = self.formulas.bytes_per_token
        return f(**self._sizes(f, N_L=self.layers, b=b))

    def bytes_per_sequence(self, T: int, b) -> int:
        """Bytes this group holds for one sequence of T tokens."""
        f = self.formulas.bytes_per_sequence
        return f(**self._sizes(f, N_L=self.layers, b=b, N_KV=self.cached_tokens(T)))

    def bytes_per_batch(self, T: int, B: int, b) -> int:
        """Bytes this group holds for B sequences of T tokens each."""
        f = self.formulas.bytes_per_batch
        return f(**self._sizes(f, N_L=self.layers, b=b, N_KV=self.cached_tokens(T), B=B))


@dataclass(frozen=True)
class ModelSpec:
    """A model's cache, as layer groups, plus what capacity planning needs.

    params: parameter count (None if unknown). assumptions: every default or
    inference the reader applied, in words, to be shown to the user.
    """

    name: str
    groups: tuple[LayerGroup, ...]
    params: int | None = None
    max_position_embeddings: int | None = None
    source: str = ""
    assumptions: tuple[str, ...] = ()

    @property
    def num_layers(self) -> int:
        return sum(g.layers for g in self.groups)

    def kv_bytes_per_token(self, b) -> int:
        """Bytes one token adds when every layer keeps it (sum over groups)."""
        return sum(g.bytes_per_token(b) for g in self.groups)

    def kv_bytes_per_sequence(self, T: int, b) -> int:
        """Bytes one sequence of T tokens holds: sliding/chunked groups clamp to their window."""
        return sum(g.bytes_per_sequence(T, b) for g in self.groups)

    def kv_bytes_per_batch(self, T: int, B: int, b) -> int:
        """Bytes B sequences of T tokens hold."""
        return sum(g.bytes_per_batch(T, B, b) for g in self.groups)
