"""One estimate: the cache of a batch of sequences of a model (``kvlib estimate``, notebook 05)."""

from __future__ import annotations

from dataclasses import dataclass

from kvlib.core import validate
from kvlib.core.dtypes import KV_SCALES, auto_kv_dtype, bytes_per_element, kv_format
from kvlib.models.catalog import BUNDLED, bundled_config, bundled_name, load_model
from kvlib.models.quantization import kv_cache_request
from kvlib.models.readers import load_config
from kvlib.models.spec import LayerGroup, ModelSpec, scale_rows

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

    kv_*: the growing caches only (attention K/V, MLA latent + RoPE key), with the scales a
    quantized format stores (vLLM's nvfp4, int4_per_token_head); state_*: the
    constant-size state of Mamba, linear-attention and convolution layers, in vLLM's
    state dtypes; total_bytes_per_sequence = kv + state. kv_dtype: as given (vLLM's name
    or kvlib's); b: bytes per element of its values, scales not included.
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
    batch: sequences; kv_dtype: kvlib's name (a key of :data:`kvlib.core.dtypes.DTYPE_BYTES`)
    or vLLM's ``kv_cache_dtype`` (:func:`kvlib.core.dtypes.kv_format`): a format with scales
    counts them as ``kvlib plan`` does (nvfp4: 9/16 byte per element), and "auto" takes the
    KV dtype the checkpoint asks for (:func:`kvlib.models.quantization.kv_cache_request`), else
    the config's dtype, as vLLM 0.34.0 resolves it.
    """
    spec = model if isinstance(model, ModelSpec) else load_model(model)
    fmt = kv_format(kv_dtype)
    kv_dtype = fmt.name
    notes = list(spec.assumptions)
    element = fmt.dtype
    if kv_dtype == "auto":  # the checkpoint's KV dtype, else the model's, as vLLM resolves it
        config = _config(model, spec)
        request = kv_cache_request(config) if config else None
        if request is not None:
            fmt = kv_format(request.kv_cache_dtype)
            element = fmt.dtype
            notes.append(f"kv dtype auto: {request.kv_cache_dtype}, which the checkpoint asks "
                         f"for ({request.key}={request.value!r}), as vLLM caches it")
        else:
            element = auto_kv_dtype(config)
            notes.append(f"kv dtype auto: the config's {element}, as vLLM caches it")
    b = bytes_per_element(element)
    scales = KV_SCALES[fmt.scales] if fmt.scales is not None else None
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
    groups = tuple(_group(g, b, scales, context, batch) for g in spec.groups)
    return Estimate(spec, kv_dtype, b, context, batch,
                    sum(g.bytes_per_token for g in groups),
                    sum(g.bytes_per_sequence for g in groups),
                    sum(g.bytes_per_batch for g in groups), groups, tuple(notes),
                    spec.state_bytes_per_sequence())


def _group(g: LayerGroup, b, scales, context: int, batch: int) -> GroupEstimate:
    """One group's share at ``b`` bytes per element, plus the scales of a quantized format
    through the same formula (:func:`kvlib.models.spec.scale_rows`)."""
    per_token, per_sequence = g.bytes_per_token(b), g.bytes_per_sequence(context, b)
    per_batch = g.bytes_per_batch(context, batch, b)
    if scales is not None and g.grows:
        rows, s = scale_rows(g, scales)
        per_token += rows.bytes_per_token(s)
        per_sequence += rows.bytes_per_sequence(context, s)
        per_batch += rows.bytes_per_batch(context, batch, s)
    return GroupEstimate(g, per_token, g.cached_tokens(context), per_sequence, per_batch,
                         g.state_bytes_per_sequence())


def _config(model, spec: ModelSpec) -> dict | None:
    """The config.json behind ``model`` (bundled or a path), for kv_cache_dtype "auto"."""
    if spec.name in BUNDLED:
        return bundled_config(spec.name)
    if isinstance(model, str) and not bundled_name(model):
        try:
            return load_config(model)
        except (OSError, ValueError):
            return None
    return None
