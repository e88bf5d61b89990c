"""One estimate: the cache of a batch of sequences of a model (``kvlib estimate``, notebook 05)."""

from __future__ import annotations

from dataclasses import dataclass

from kvlib.core import validate
from kvlib.core.dtypes import bytes_per_element
from kvlib.models.catalog import load_model
from kvlib.models.spec import LayerGroup, ModelSpec

__all__ = ["GroupEstimate", "Estimate", "estimate"]


@dataclass(frozen=True)
class GroupEstimate:
    """One layer group's share: bytes per token (all its layers), per sequence and per batch
    of its growing cache, and its constant-size state per sequence."""

    group: LayerGroup
    bytes_per_token: int
    cached_tokens: int
    bytes_per_sequence: int
    bytes_per_batch: int
    state_bytes_per_sequence: int = 0


@dataclass(frozen=True)
class Estimate:
    """The cache of ``batch`` sequences of ``context`` tokens at ``kv_dtype``.

    kv_*: the growing caches only (attention K/V, MLA latent + RoPE key); state_*: the
    constant-size state of Mamba, linear-attention and convolution layers, in vLLM's
    state dtypes; total_bytes_per_sequence = kv + state.
    """

    spec: ModelSpec
    kv_dtype: str
    b: object  # bytes per element (Fraction)
    context: int
    batch: int
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int
    kv_bytes_total: int
    groups: tuple[GroupEstimate, ...]
    assumptions: tuple[str, ...] = ()  # the config reader's, plus any about the context
    state_bytes_per_sequence: int = 0

    @property
    def total_bytes_per_sequence(self) -> int:
        return self.kv_bytes_per_sequence + self.state_bytes_per_sequence

    @property
    def total_bytes(self) -> int:
        """Cache and state of all ``batch`` sequences."""
        return self.kv_bytes_total + self.batch * self.state_bytes_per_sequence


def estimate(model, context: int | None = None, batch: int = 1,
             kv_dtype: str = "bf16") -> Estimate:
    """Cache bytes of ``model`` (a ModelSpec, bundled name or config path).

    context: tokens per sequence (default: the config's max_position_embeddings);
    batch: sequences; kv_dtype: a key of :data:`kvlib.core.dtypes.DTYPE_BYTES`.
    """
    spec = model if isinstance(model, ModelSpec) else load_model(model)
    b = bytes_per_element(kv_dtype)
    notes = list(spec.assumptions)
    longest = spec.max_position_embeddings
    if context is None:
        if longest is None:
            raise ValueError(f"{spec.name}: the config gives no max_position_embeddings; "
                             "pass a context length")
        context = longest
        notes.append(f"context: the config's max_position_embeddings, {longest:,} tokens")
    context = validate.positive_int("context", context)
    if longest is not None and context > longest:
        notes.append(f"context {context:,} exceeds the config's max_position_embeddings "
                     f"{longest:,}: this is what the cache would take, not a length the model "
                     "was configured for")
    batch = validate.positive_int("batch", batch)
    groups = tuple(GroupEstimate(g, g.bytes_per_token(b), g.cached_tokens(context),
                                 g.bytes_per_sequence(context, b),
                                 g.bytes_per_batch(context, batch, b),
                                 g.state_bytes_per_sequence()) for g in spec.groups)
    return Estimate(spec, kv_dtype, b, context, batch, spec.kv_bytes_per_token(b),
                    spec.kv_bytes_per_sequence(context, b),
                    spec.kv_bytes_per_batch(context, batch, b), groups, tuple(notes),
                    spec.state_bytes_per_sequence())
