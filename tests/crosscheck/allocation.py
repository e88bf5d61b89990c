"""What transformers' cache holds per layer, what kvlib says, and the stated rules between them.

Checked against transformers 5.25.0 (pinned in the ``crosscheck`` extra), reading
``transformers/cache_utils.py`` in the installed package:

* ``DynamicCache(config=...)`` (built by every model's forward when ``use_cache`` is on)
  makes one cache layer per decoder layer from ``get_layer_types_and_kwargs`` and
  ``DYNAMIC_LAYER_TYPE_MAPPING``: ``DynamicLayer`` for full attention (and for MLA),
  ``DynamicSlidingWindowLayer`` for ``sliding_attention`` with ``sliding_window``, and also
  for ``chunked_attention`` with ``sliding_window = attention_chunk_size``;
  ``DynamicIndexedLayer`` for ``indexed_attention`` (DeepSeek V3.2: MLA plus indexer keys);
  ``LinearAttentionLayer`` for ``linear_attention`` (Gated DeltaNet, Mamba, Mamba2) and
  ``conv`` (LFM2); ``DummyLayer`` (no tensor) for ``moe`` / ``mlp`` layers and for layers
  that reuse another layer's cache (``kv_sharing_modes`` "reuse").
* ``DynamicLayer.update`` concatenates: it holds every token, T of them.
* ``DynamicSlidingWindowLayer.update`` concatenates the new tokens to what it held, then
  keeps ``full[:, :, -sliding_window + 1:, :]``: **W - 1 tokens**, a view into the
  concatenated tensor. So after a forward step that added q tokens to a sequence now T long:
  - visible in ``keys`` / ``values``: min(T, W - 1) tokens;
  - storage those views keep alive: min(T - q, W - 1) + q tokens (the whole prompt right
    after a prefill; after a decode step, q = 1, that is min(T, W)).
  The token being computed is attended together with those W - 1, so attention sees W.
* DeepSeek V2/V3/V3.2 (``DeepseekV3Attention.forward``: "Cache read / write is performed
  while latent KV is still compressed") call ``cache.update(kv_nope, k_rot)``: keys are the
  latent [batch, 1, T, kv_lora_rank], values the RoPE key [batch, 1, T, qk_rope_head_dim].
  GLM-5 (``GlmMoeDsaAttention.forward``) and Kimi Linear's MLA layers
  (``KimiLinearAttention.forward``) do the same in 5.24.0; both expand K and V per head only
  after the cache, for the attention call.
  ``DynamicIndexedLayer.update_indexer`` also concatenates the indexer keys,
  [batch, T, index_head_dim], in the model dtype.
* ``LinearAttentionLayer.lazy_initialization`` allocates the convolution state as
  [batch, channels, conv_kernel_size]: **d_conv** past inputs (the models pass their kernel
  size), and copies into it in place; the recurrent state is ``zeros_like`` the state the
  layer returned: in the reference PyTorch kernels that run on the CPU, float32 whatever
  the model dtype (below); Kimi Linear's KDA layers cast theirs to float32 explicitly
  (``cache.update_recurrent_state(last_recurrent_state.to(torch.float32), ...)``).

kvlib's figure is the serving engine's (vLLM 0.33.0). Where the two differ, the rule that
turns transformers' tensors into vLLM's count is written here from transformers' and
vLLM's code, never from kvlib's count: :func:`rule` (sliding and chunked tokens),
:func:`vllm_conv_elements` (d_conv - 1 rows), :func:`vllm_indexer_bytes` (fp8 keys plus
scales) and :func:`vllm_state_dtypes` (state element sizes); for transformers 5.25.0's
families :func:`transformers_class` (Kolibri 1.1's and MiniMax M3's layer classes),
:func:`transformers_sizes` with :func:`vllm_dots3_padding` (dots3 Note's DSA entries, padded
in vLLM only) and :func:`stored_indexer_bytes` (MiniMax M3's bf16 and Mistral Large 4's own
indexer keys); for the Inkling families :func:`conv_window_rule` (four float32 conv states
against kvlib's short-conv window: vLLM's padded bf16 row for Inkling, transformers' own for
Inkling 2) and :func:`cache_layer_sources` (Inkling 2 Loop's passes). :func:`compare` applies them
layer by layer and reports every disagreement. Nothing is loosened: every count is exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from kvlib import parse_config, read_config
from kvlib.models.spec import EMPTY, STATEFUL, CacheKind

__all__ = ["Part", "Held", "Expected", "build", "steps", "held", "expected",
           "transformers_tokens", "rule", "vllm_conv_elements", "vllm_indexer_bytes",
           "transformers_class", "transformers_sizes", "vllm_dots3_padding",
           "stored_indexer_bytes",
           "vllm_state_dtypes", "run_dtype", "transformers_fields", "transformers_window",
           "indexer_layers", "compare", "STATE_FAMILIES", "TRANSFORMERS_RECURRENT_BYTES",
           "TEXT_MODEL_TYPES", "V4Held", "v4_held", "v4_rule", "vllm_v4_entry_bytes",
           "vllm_v4_state_bytes", "compare_v4", "CONV_WINDOW_CLASS", "cache_layer_sources",
           "conv_window_rule", "vllm_inkling_row"]

WINDOWED = (CacheKind.SLIDING, CacheKind.CHUNKED)
LAYER_CLASS = {CacheKind.FULL: "DynamicLayer", CacheKind.LATENT: "DynamicLayer",
               CacheKind.SLIDING: "DynamicSlidingWindowLayer",
               CacheKind.CHUNKED: "DynamicSlidingWindowLayer",
               CacheKind.MAMBA: "LinearAttentionLayer", CacheKind.LINEAR: "LinearAttentionLayer",
               CacheKind.CONV: "LinearAttentionLayer",
               CacheKind.NONE: "DummyLayer", CacheKind.SHARED: "DummyLayer"}
INDEXED_CLASS = "DynamicIndexedLayer"  # a latent layer that also holds indexer keys
# an attention layer that also holds a Mamba2 state (Falcon-H1: both in every layer)
PARALLEL_CLASS = "LinearAttentionAndFullAttentionLayer"
# Inkling's layers: attention beside four convolution states, "hybrid" and "hybrid_sliding" in
# transformers 5.25.0 (cache_utils.py:1344, :1386, :1535-1536; four states each, :2052-2061)
CONV_WINDOW_CLASS = {CacheKind.FULL: PARALLEL_CLASS,
                     CacheKind.SLIDING: "LinearAttentionAndSlidingWindowAttentionLayer"}

# Families whose layers keep a constant-size state. They run in bfloat16, their configs'
# dtype, so that the state element sizes can be compared with vLLM's (which follow it).
STATE_FAMILIES = frozenset({"qwen3_next", "nemotron_h", "jamba", "lfm2", "qwen3_5_text",
                            "qwen3_5_moe_text", "kimi_linear", "falcon_h1"})

# transformers 5.24's reference kernels return the recurrent / SSM state in float32 whatever
# the model dtype (models/qwen3_next/modeling_qwen3_next.py torch_chunk_gated_delta_rule:
# ".to(torch.float32)" on q, k, v, beta, g; models/jamba/modeling_jamba.py
# mamba_selective_scan: "deltaB_u = ... .float()"; models/nemotron_h/modeling_nemotron_h.py
# mamba2_chunk_scan: "hidden_states = hidden_states.float()"; the same in
# models/qwen3_5/modeling_qwen3_5.py and models/qwen3_5_moe/, and models/kimi_linear/
# modeling_kimi_linear.py KimiLinearDeltaAttention.forward, ".to(torch.float32)" on the state
# it hands the cache), and the cache keeps it as is.
TRANSFORMERS_RECURRENT_BYTES = 4

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

EAGER_EXPERTS = frozenset({"kolibri1_1"})
# text model_types transformers 5.25.0 builds only as a base model (no ForCausalLM:
# models/mistral_large4/modeling_mistral_large4.py has MistralLarge4TextModel and the
# multimodal ForConditionalGeneration); :func:`steps` then decodes tokens of its own choosing
NO_CAUSAL_LM = frozenset({"mistral_large4_text"})


@dataclass(frozen=True)
class Part:
    """One tensor a cache layer holds: shape, elements, bytes per element, storage bytes."""

    shape: tuple
    elements: int
    element_size: int
    storage_bytes: int

    @classmethod
    def of(cls, t: torch.Tensor | None) -> Part | None:
        if t is None:
            return None
        return cls(tuple(t.shape), t.numel(), t.element_size(), t.untyped_storage().nbytes())


@dataclass(frozen=True)
class Held:
    """One transformers cache layer after a forward step.

    K/V (0 and () for a layer without them): tokens: keys.shape[-2]; elements:
    keys.numel() + values.numel(); storage_bytes: bytes of the K and V storages those
    tensors keep alive; shapes: (keys.shape, values.shape), each [batch, heads, tokens, dim].
    indexer: DeepSeek V3.2's indexer keys; conv, recurrent: a linear-attention layer's states;
    convs: every convolution state, ``conv_states[0..]`` in order (Inkling's layers keep four;
    conv is the first).
    """

    layer: int
    cls: str
    window: int | None
    tokens: int
    elements: int
    storage_bytes: int
    element_size: int
    shapes: tuple
    indexer: Part | None = None
    conv: Part | None = None
    recurrent: Part | None = None
    convs: tuple = ()


@dataclass(frozen=True)
class Expected:
    """kvlib's reading of one layer at T tokens, b bytes per element.

    tokens: ``LayerGroup.cached_tokens(T)``; bytes: ``bytes_per_sequence(T, b) / layers``;
    per_token: elements one token adds to this layer (``bytes_per_token(b) / layers / b``).
    indexer_bytes: the indexer group's ``bytes_per_sequence(T, b) / layers`` on a layer with an
    indexer of its own (:func:`indexer_layers`), else 0; d_I: its key width;
    indexed: a latent layer of a model with an indexer group (a ``DynamicIndexedLayer`` in
    transformers, one that shares an earlier layer's indexer holding no indexer keys).
    conv_elements, ssm_elements: the state formula's two parts; b_c, b_s: their element
    sizes; state_bytes: ``state_bytes_per_sequence() / layers``.
    """

    layer: int
    kind: CacheKind
    window: int | None
    tokens: int
    per_token: int
    elements: int
    bytes: int
    sizes: dict
    formula: str = ""
    indexer_bytes: int = 0
    d_I: int = 0
    indexed: bool = False
    conv_elements: int = 0
    ssm_elements: int = 0
    b_c: int = 0
    b_s: int = 0
    parallel_state: bool = False  # a state group that shares this attention layer (Falcon-H1)
    state_bytes: int = 0


def run_dtype(tiny: dict):
    """bfloat16 for a family with constant-size states (STATE_FAMILIES), else float32."""
    return torch.bfloat16 if tiny["model_type"] in STATE_FAMILIES else torch.float32


# A text model_type transformers has no class for, and the one its wrapper's config class
# builds instead: Kimi K2 / K2.5's ``kimi_k2`` (a DeepSeek V3 text model, its file's own
# ``architectures``: DeepseekV3ForCausalLM) becomes ``deepseek_v3`` in transformers 5.24.0's
# Kimi_K25Config.__post_init__ (models/kimi_k25/configuration_kimi_k25.py:85-88, "BC: load from
# remote config on the hub"). vLLM serves it as DeepseekV2ForCausalLM (kimi_k25.py:376-380).
# cases.unsupported and a test ask the wrapper class itself, so this map cannot drift from it.
TEXT_MODEL_TYPES = {"kimi_k2": "deepseek_v3"}


def transformers_fields(tiny: dict) -> dict:
    """The config fields transformers gets: ``tiny`` as it is (the shrinking rule already
    writes the names transformers reads, e.g. Nemotron-H's ``head_dim``), with a text
    model_type its wrapper renames (``TEXT_MODEL_TYPES``) renamed as the wrapper does."""
    fields = dict(tiny)
    fields["model_type"] = TEXT_MODEL_TYPES.get(fields["model_type"], fields["model_type"])
    return fields


def transformers_window(tiny: dict, window: int | None) -> int | None:
    """The ``sliding_window`` transformers 5.24.0 gives a layer kvlib (vLLM) reads as sliding
    over ``window`` tokens.

    MiMo-V2-Flash: ``sliding_window_size + 1`` (MiMoV2FlashConfig.__post_init__,
    models/mimo_v2_flash/configuration_mimo_v2_flash.py: "The reference SGLang implementation
    attends to `sliding_window_size` previous tokens plus the query"); vLLM 0.34.0 slides
    over ``sliding_window_size`` (model_executor/models/mimo_v2.py:428). Every other family:
    the same window.
    """
    if window is not None and tiny["model_type"] == "mimo_v2_flash":
        return window + 1
    return window


def indexer_layers(tiny: dict) -> set[int]:
    """The layers that cache indexer keys, from the keys transformers 5.25.0 builds them by.

    * MiniMax M3: ``layer_types[i] == "minimax_m3_sparse"`` (its text config writes the list
      from ``sparse_attention_freq``, configuration_minimax_m3_vl.py:137-140);
    * Mistral Large 4: ``indexer_types[i] == "full"`` (configuration_mistral_large4.py:158-171;
      a "shared" indexer caches nothing, modeling_mistral_large4.py:362-363);
    * dots3 Note: the DSA layers (``layer_types`` "indexed_attention" / "full_attention")
      less those that share an earlier layer's indexer;
    * DeepSeek V3.2, GLM-5: every layer, less those that share an earlier layer's indexer
      (GLM-5.2's ``indexer_types`` "shared").
    The sharing is read by kvlib's own ``shared_indexer_layers`` (vLLM 0.34.0's
    ``compute_skip_topk_layers``).
    """
    from kvlib.models.readers.deepseek import shared_indexer_layers
    from kvlib.models.readers.fields import Fields

    n = parse_config(tiny).num_layers
    family = tiny["model_type"].removesuffix("_text")
    types = tiny.get("layer_types") or [None] * n
    if family == "minimax_m3_vl":
        return {i for i in range(n) if types[i] == "minimax_m3_sparse"}
    if family == "mistral_large4":
        return {i for i in range(n) if tiny["indexer_types"][i] == "full"}
    shared, _ = shared_indexer_layers(Fields(tiny), n)
    if family == "dots3_note":
        return {i for i in range(n) if types[i] != "sliding_attention"} - shared
    return set(range(n)) - shared


def build(tiny: dict, dtype=torch.float32, seed: int = 0):
    """A tiny random-weight model from a (shrunk) config dict; nothing is downloaded."""
    fields = transformers_fields(tiny)
    model_type = fields.pop("model_type")
    if model_type == "nemotron_h" and dtype == torch.bfloat16:
        # transformers 5.25.0's CPU mamba2_chunk_scan clamps a bfloat16 dt to time_step_limit,
        # whose default upper end, inf, torch refuses ("cannot be converted to type
        # c10::BFloat16 without overflow", models/nemotron_h/modeling_nemotron_h.py:322): a
        # finite bound, far above any dt, changes no value and no cache shape
        low, high = fields.get("time_step_limit") or (0.0, float("inf"))
        fields["time_step_limit"] = (low, min(high, 1e4))
    torch.manual_seed(seed)
    config = AutoConfig.for_model(model_type, **fields)
    kwargs = {}
    if model_type in EAGER_EXPERTS:
        # torch's CPU grouped_mm wants 16-byte strides, which a tiny hidden size that is no
        # whole number of heads (Kolibri 1.1: 2560 / 48, tiny 194) lacks: the eager loop over
        # experts computes the same MLP and touches no cache
        kwargs["experts_implementation"] = "eager"
    auto = AutoModel if model_type in NO_CAUSAL_LM else AutoModelForCausalLM
    return auto.from_config(config, dtype=dtype, **kwargs).eval()


def steps(model, prompt: int, decode: int, seed: int = 0):
    """Prefill ``prompt`` random tokens, then ``decode`` greedy steps.

    Yields (T, q, cache) after every forward: T tokens so far, q added by that step.
    A base model (``NO_CAUSAL_LM``) has no logits: its decode tokens are drawn at random
    from the same generator, which changes no cache shape.
    """
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, prompt), generator=gen)
    with torch.no_grad():
        out = model(ids, use_cache=True)
        yield prompt, prompt, out.cache
        for k in range(1, decode + 1):
            logits = getattr(out, "logits", None)
            token = logits[:, -1:].argmax(-1) if logits is not None else torch.randint(
                0, model.config.vocab_size, (1, 1), generator=gen)
            out = model(token, cache=out.cache, use_cache=True)
            yield prompt + k, 1, out.cache


# Tensors a cache layer may hold, by attribute (states: dict entry 0). ``idx_keys``: MiniMax
# M3's indexer keys, [batch, 1, T, index_head_dim], on its own cache layer
# (MiniMaxM3VLSparseCacheLayer, models/minimax_m3_vl/modeling_minimax_m3_vl.py:57-94).
# ``conv_states[k]``: a layer's k-th convolution state (Inkling's four, conv_idx 0-3: keys,
# values, attention and MLP outputs, modeling_inkling.py:198-203, :555-557, :592-597;
# cache_utils.py:1242-1301), any k; compare holds every family but Inkling's to one.
_ALLOWED = {"keys", "values", "indexer_keys", "idx_keys", "recurrent_states[0]"}
_CONV_STATE = re.compile(r"conv_states\[(\d+)\]")


def _tensors(layer) -> dict:
    out = {}
    for name, value in vars(layer).items():
        if isinstance(value, torch.Tensor):
            out[name] = value
        elif isinstance(value, dict):
            out.update({f"{name}[{k}]": v for k, v in value.items()
                        if isinstance(v, torch.Tensor)})
    return out


def held(cache) -> list[Held]:
    """What every layer of a transformers ``DynamicCache`` holds.

    Fails if a layer holds a tensor other than keys, values, indexer keys (``indexer_keys``,
    or MiniMax M3's ``idx_keys``), convolution states ``conv_states[0..k]``
    and one recurrent state, and the 0-d window scalar of ``DynamicSlidingWindowLayer``
    (so nothing it allocates goes uncounted).
    """
    out = []
    for i, layer in enumerate(cache.layers):
        tensors = _tensors(layer)
        extra = {k: tuple(v.shape) for k, v in tensors.items()
                 if k not in _ALLOWED and not _CONV_STATE.fullmatch(k) and v.numel() > 1}
        convs = sorted((int(_CONV_STATE.fullmatch(k).group(1)), v) for k, v in tensors.items()
                       if _CONV_STATE.fullmatch(k))
        assert [k for k, _ in convs] == list(range(len(convs))), (i, [k for k, _ in convs])
        assert not extra, f"layer {i} ({type(layer).__name__}) also holds {extra}"
        k, v = tensors.get("keys"), tensors.get("values")
        kv = dict(tokens=0, elements=0, storage_bytes=0, element_size=0, shapes=())
        if k is not None and k.numel():
            assert v is not None and k.element_size() == v.element_size()
            kv = dict(tokens=k.shape[-2], elements=k.numel() + v.numel(),
                      storage_bytes=k.untyped_storage().nbytes() + v.untyped_storage().nbytes(),
                      element_size=k.element_size(), shapes=(tuple(k.shape), tuple(v.shape)))
        out.append(Held(
            layer=i, cls=type(layer).__name__, window=getattr(layer, "sliding_window", None),
            **kv, indexer=Part.of(tensors.get("indexer_keys", tensors.get("idx_keys"))),
            conv=Part.of(tensors.get("conv_states[0]")),
            recurrent=Part.of(tensors.get("recurrent_states[0]")),
            convs=tuple(Part.of(v) for _, v in convs)))
    return out


def _key(kind, window, formula, sizes) -> tuple:
    return (kind, window, formula, tuple(sorted(sizes.items())))


def _call(f, sizes: dict) -> int:
    return f(**{k: v for k, v in sizes.items() if k in f.args})


def expected(tiny: dict, T: int, b: int) -> list[Expected]:
    """kvlib's per-layer reading of ``tiny`` at T tokens, from its own group functions.

    ``ConfigReading.layer(i)`` says what layer i is; its group (same kind, window, formula
    and sizes) gives the numbers, divided by the group's layer count. An indexer group
    (DeepSeek V3.2) spans every layer and is added to each.
    """
    reading = parse_config(tiny)
    groups = {_key(g.kind, g.window, g.attention, g.sizes): g for g in reading.groups()}
    indexers = [g for g in reading.groups() if g.kind is CacheKind.INDEXER]
    indexed = indexer_layers(tiny) if indexers else set()
    assert all(g.layers == len(indexed) for g in indexers), (indexers, indexed)
    def full_key(key):
        if len(key) == 2:
            key = (*key, reading.attention, tuple(sorted(reading.sizes.items())))
        return _key(key[0], key[1], key[2], dict(key[3]))

    # a state group no layer(i) names spans every layer beside the attention (Falcon-H1)
    named = {full_key(reading.layer(i)) for i in range(reading.num_layers)}
    parallel = [g for key, g in groups.items() if g.kind in STATEFUL and key not in named]
    assert all(g.layers == reading.num_layers for g in parallel)
    out = []
    for i in range(reading.num_layers):
        g = groups[full_key(reading.layer(i))]
        n = g.layers
        fields = dict(layer=i, kind=g.kind, window=g.window, tokens=0, per_token=0, elements=0,
                      bytes=0, sizes=dict(g.sizes), formula=g.attention)
        if g.grows:
            total, per_token = g.bytes_per_sequence(T, b), g.bytes_per_token(b)
            assert total % n == 0 and per_token % (n * b) == 0
            fields.update(tokens=g.cached_tokens(T), per_token=per_token // (n * b),
                          elements=total // n // b, bytes=total // n)
        elif g.kind in STATEFUL:
            f = g.formulas
            state = g.state_bytes_per_sequence()
            assert state % n == 0
            fields.update(conv_elements=_call(f.conv_elements_per_layer, g.sizes),
                          ssm_elements=_call(f.ssm_elements_per_layer, g.sizes),
                          b_c=g.sizes["b_c"], b_s=g.sizes["b_s"], state_bytes=state // n)
        if indexers and g.kind is CacheKind.LATENT:
            fields["indexed"] = True
        if indexers:
            x = indexers[0].sizes
            fields["d_I"] = x["d_I"] if "d_I" in x else x["d_L"]  # MiniMax M3, Mistral Large 4:
            # the one-vector formula (MLA), its width d_L
        if i in indexed:
            fields["indexer_bytes"] = sum(x.bytes_per_sequence(T, b) // x.layers for x in indexers)
        for p in parallel:
            f = p.formulas
            fields.update(conv_elements=_call(f.conv_elements_per_layer, p.sizes),
                          ssm_elements=_call(f.ssm_elements_per_layer, p.sizes),
                          b_c=p.sizes["b_c"], b_s=p.sizes["b_s"],
                          state_bytes=p.state_bytes_per_sequence() // p.layers,
                          parallel_state=True)
        out.append(Expected(**fields))
    return out


def transformers_tokens(kind: CacheKind, window: int | None, T: int, q: int) -> tuple[int, int]:
    """(visible, storage) tokens a transformers 5.24 cache layer holds after a step adding q.

    Full and latent: (T, T). Sliding over W, or chunked with chunk W (held as a sliding
    window of W by ``DynamicCache``): visible min(T, W - 1), storage min(T - q, W - 1) + q.
    """
    if kind in WINDOWED:
        return min(T, window - 1), min(T - q, window - 1) + q
    return T, T


def rule(kind: CacheKind, window: int | None, T: int, q: int,
         held_window: int | None = None) -> tuple[int, int]:
    """The stated difference, in tokens, from kvlib's count to transformers': (fewer, more).

    fewer: tokens ``keys`` / ``values`` show fewer than kvlib's count: 1 on a sliding or
    chunked layer once T >= W (W - 1 against W), else 0.
    more: tokens the storage keeps beyond kvlib's count: min(T - q, W - 1) + q - min(T, W);
    0 after a decode step, T - min(T, W) right after a prefill of T tokens.
    A function of the layer kind, W, T and q only, never of kvlib's own count, so a
    wrong kvlib count cannot cancel out.

    ``held_window`` W' is transformers' window where it is not vLLM's W
    (:func:`transformers_window`, MiMo-V2-Flash: W + 1, checked against the layer before the
    rule is applied): fewer = min(T, W) - min(T, W' - 1), more = min(T - q, W' - 1) + q -
    min(T, W); with W' = W + 1 nothing is fewer, and a decode step past W stores one more.
    """
    if kind not in WINDOWED:
        return 0, 0
    w_t = window if held_window is None else held_window
    return min(T, window) - min(T, w_t - 1), min(T - q, w_t - 1) + q - min(T, window)


def vllm_conv_elements(conv_shape: tuple) -> int:
    """vLLM's convolution-state elements for transformers' conv state [batch 1, C, K].

    transformers keeps K = d_conv past inputs (``LinearAttentionLayer.lazy_initialization``,
    ``conv_kernel_size``); vLLM keeps d_conv - 1 (``MambaStateShapeCalculator``
    ``mamba1_state_shape`` / ``mamba2_state_shape`` / ``gated_delta_net_state_shape`` /
    ``short_conv_state_shape``: ``conv_kernel - 1``): C x (K - 1).
    """
    batch, channels, kernel = conv_shape
    assert batch == 1
    return channels * (kernel - 1)


def vllm_indexer_bytes(indexer_shape: tuple) -> int:
    """vLLM's indexer-key bytes for transformers' indexer keys [batch 1, T, d_I].

    transformers keeps d_I values per token in the model dtype; vLLM keeps them as fp8 plus
    one float32 scale per 128 (``quant_block_size``), as uint8: ``head_dim = index_head_dim
    + index_head_dim // quant_block_size * 4`` (vllm 0.33.0 models/deepseek_v2.py,
    ``DeepseekV32IndexerCache``): T x (d_I + d_I // 128 x 4) bytes.
    """
    batch, tokens, d_i = indexer_shape
    assert batch == 1
    return tokens * (d_i + d_i // 128 * 4)


def vllm_state_dtypes(config: dict, dtype) -> tuple[int, int]:
    """(b_c, b_s): bytes per element of vLLM 0.33.0's convolution and SSM / recurrent states.

    ``MambaStateDtypeCalculator._mamba_state_dtype`` (model_executor/layers/mamba/
    mamba_utils.py): the conv state in ``mamba_cache_dtype`` ("auto": the model dtype), the
    SSM state in ``mamba_ssm_cache_dtype``, "auto" following the conv state; NemotronH alone
    sets it from the config's ``mamba_ssm_cache_dtype``, else "float32"
    (models/config.py ``NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE``).
    Qwen3.5 (``qwen3_5_text``, ``qwen3_5_moe_text``): the config's ``mamba_ssm_dtype`` when it
    has one (models/config.py ``Qwen3_5ForConditionalGenerationConfig``, mapped for
    Qwen3_5[Moe]ForCausalLM / ForConditionalGeneration), else "auto".
    Kimi Linear's KDA (``kimi_linear``): ``kda_state_dtype`` (mamba_utils.py), whose "auto"
    SSM state is float32 (models/kimi_k3/nvidia/model.py ``get_mamba_state_dtype_from_config``).
    The model dtype is the config's, else ``dtype`` (the one the model runs in).
    """
    name = config.get("torch_dtype") or config.get("dtype")
    b_c = _DTYPE_BYTES[name] if name else torch.empty((), dtype=dtype).element_size()
    model_type = config["model_type"]
    if model_type == "nemotron_h":
        return b_c, _DTYPE_BYTES[config.get("mamba_ssm_cache_dtype") or "float32"]
    if model_type in ("qwen3_5_text", "qwen3_5_moe_text") and config.get("mamba_ssm_dtype"):
        return b_c, _DTYPE_BYTES[config["mamba_ssm_dtype"]]
    if model_type == "kimi_linear":
        return b_c, 4
    return b_c, b_c


def _family(tiny: dict) -> str:
    return tiny["model_type"].removesuffix("_text")


def transformers_class(tiny: dict, e: Expected) -> str:
    """The cache layer class transformers 5.25.0 builds for a layer kvlib reads as ``e``.

    ``LAYER_CLASS`` by kvlib's kind, but: a latent layer of a model with an indexer is a
    ``DynamicIndexedLayer``; Kolibri 1.1's full layers are its "indexed_attention" layers, a
    ``DynamicIndexedLayer`` too (cache_utils.py:1529), whose indexer-key slot Kolibri never
    fills (its indexer scores the layer's own keys, modeling_kolibri1_1.py:324); MiniMax M3's
    sparse layers are its own ``MiniMaxM3VLSparseCacheLayer`` (modeling_minimax_m3_vl.py:57);
    Inkling's full and sliding layers (all three families) hold their convolution states beside
    K and V (``CONV_WINDOW_CLASS``).
    """
    if e.indexed or (_family(tiny) == "kolibri1_1" and e.kind is CacheKind.FULL):
        return INDEXED_CLASS
    if _family(tiny) in CONV_WINDOW_FAMILIES:
        return CONV_WINDOW_CLASS.get(e.kind, "")
    if _family(tiny) == "minimax_m3_vl" and e.indexer_bytes:
        return "MiniMaxM3VLSparseCacheLayer"
    return PARALLEL_CLASS if e.parallel_state else LAYER_CLASS[e.kind]


def transformers_sizes(tiny: dict, e: Expected) -> dict:
    """The widths transformers' layer holds, where they differ from kvlib's (vLLM's) by design.

    dots3 Note's DSA layers: vLLM 0.34.0 pads each entry to the sliding layers' latent,
    ``swa_kv_lora_rank + swa_qk_rope_head_dim`` (vllm/models/dots3_note/nvidia/model.py:228-240,
    :307), and kvlib counts that; transformers 5.25.0 caches the layer's own
    ``kv_lora_rank`` and ``qk_rope_head_dim`` (modeling_dots3_note.py:484-487, :531), unpadded.
    Checked from the file: :func:`vllm_dots3_padding`. Every other layer: kvlib's sizes.
    """
    if _family(tiny) == "dots3_note" and e.kind is CacheKind.LATENT:
        return {"d_L": tiny["kv_lora_rank"], "d_R": tiny["qk_rope_head_dim"]}
    return e.sizes


def vllm_dots3_padding(tiny: dict) -> dict:
    """The latent and RoPE widths of every dots3 Note entry in vLLM 0.34.0: the sliding
    layers' ``swa_kv_lora_rank`` and ``swa_qk_rope_head_dim``, on DSA layers too (model.py:307)."""
    return {"d_L": tiny["swa_kv_lora_rank"], "d_R": tiny["swa_qk_rope_head_dim"]}


def _width(sizes: dict) -> int:
    """Elements per token of one layer's K and V (latent and RoPE key for MLA)."""
    if "d_L" in sizes:
        return sizes["d_L"] + sizes.get("d_R", 0)
    return sizes["N_g"] * (sizes["d_QK"] + sizes["d_V"])


def _shapes(sizes: dict, tokens: int) -> tuple:
    s = sizes
    if "d_L" in s:  # latent as keys, RoPE key as values (0 wide on a NoPE layer), one "head"
        return (1, 1, tokens, s["d_L"]), (1, 1, tokens, s.get("d_R", 0))
    return (1, s["N_g"], tokens, s["d_QK"]), (1, s["N_g"], tokens, s["d_V"])


def _growing(h: Held, e: Expected, tiny: dict, T: int, q: int, b: int,
             where: str) -> tuple[list, int]:
    """Problems, and the elements transformers holds by the rule (its widths, kvlib's tokens)."""
    problems = []
    fewer, more = rule(e.kind, e.window, T, q, h.window)
    sizes = transformers_sizes(tiny, e)
    width = _width(sizes)
    # kvlib's count, transformed by the stated rule.
    want_elements = e.elements - fewer * e.per_token
    want_storage = e.bytes + more * e.per_token * b
    if sizes is not e.sizes:  # widths differ by design: kvlib's tokens at transformers' width
        if e.per_token != _width(e.sizes) or e.elements != e.tokens * e.per_token:
            problems.append(f"{where}: kvlib's {e.elements} elements are not its {e.tokens} "
                            f"tokens x {_width(e.sizes)} ({e.sizes})")
        if e.sizes != vllm_dots3_padding(tiny):
            problems.append(f"{where}: kvlib's sizes {e.sizes} are not vLLM's padded entry "
                            f"{vllm_dots3_padding(tiny)}")
        want_elements = (e.tokens - fewer) * width
        want_storage = (e.tokens + more) * width * b
    if h.shapes != _shapes(sizes, e.tokens - fewer):
        problems.append(f"{where}: {e.kind} layer, transformers' K, V shapes {h.shapes}; "
                        f"kvlib's {e.tokens} tokens less {fewer} and sizes {sizes} give "
                        f"{_shapes(sizes, e.tokens - fewer)}")
    if h.elements != want_elements:
        problems.append(f"{where}: {e.kind} layer, transformers holds {h.elements} elements; "
                        f"kvlib's {e.elements} ({e.tokens} tokens x {e.per_token}) less "
                        f"{fewer} token(s) by the rule, at width {width} = {want_elements}")
    if h.storage_bytes != want_storage:
        problems.append(f"{where}: {e.kind} layer, transformers' storage is "
                        f"{h.storage_bytes} B; kvlib's {e.bytes} B plus {more} token(s) "
                        f"by the rule, at width {width} = {want_storage} B")
    return problems, want_elements


def stored_indexer_bytes(tiny: dict, indexer: Part) -> int:
    """The bytes kvlib must count for the indexer keys transformers holds as ``indexer``.

    * MiniMax M3: [1, 1, T, d_I] in the model dtype; vLLM 0.34.0 keeps the same elements in
      bf16 whatever the KV dtype (``indexer_kv_dtype``, vllm/models/minimax_m3/nvidia/
      model.py:967-969): T x d_I x 2 B;
    * Mistral Large 4: vLLM 0.34.0 has no model, so kvlib counts transformers' own keys,
      [1, T, d_I] in the model dtype: T x d_I x b;
    * DeepSeek V3.2, GLM-5, dots3 Note: :func:`vllm_indexer_bytes` (fp8 plus scales).
    """
    family = _family(tiny)
    if family == "minimax_m3_vl":
        batch, heads, tokens, d_i = indexer.shape
        assert (batch, heads) == (1, 1)
        return tokens * d_i * 2
    if family == "mistral_large4":
        return indexer.elements * indexer.element_size
    return vllm_indexer_bytes(indexer.shape)


def _indexer(h: Held, e: Expected, tiny: dict, T: int, where: str) -> list[str]:
    x = h.indexer
    if x is None:
        return [f"{where}: kvlib counts {e.indexer_bytes} B of indexer keys, transformers "
                "holds none"]
    problems = []
    want = (1, 1, T, e.d_I) if _family(tiny) == "minimax_m3_vl" else (1, T, e.d_I)
    if x.shape != want:
        problems.append(f"{where}: transformers' indexer keys {x.shape}; kvlib's T={T} tokens "
                        f"of d_I={e.d_I} give {want}")
    if x.storage_bytes != x.elements * x.element_size:
        problems.append(f"{where}: indexer storage {x.storage_bytes} B for {x.elements} "
                        "elements")
    if e.indexer_bytes != stored_indexer_bytes(tiny, x):
        problems.append(f"{where}: transformers' indexer keys {x.shape} are "
                        f"{stored_indexer_bytes(tiny, x)} B as kvlib's engine stores them; "
                        f"kvlib counts {e.indexer_bytes} B")
    return problems


# --- Inkling (transformers 5.25.0 ``inkling_text``, ``inkling2_text``, ``inkling2_loop_text``) ----
# Every layer holds K/V (full, or sliding over sliding_window_size with the swa_* heads: compared
# as every other attention layer, the sliding rule included) and four convolution states; kvlib
# keeps the four as a "Short-conv window" group that no ``layer(i)`` names. :func:`compare` finds
# it by the key :func:`conv_window_rule` computes from transformers' tensors.
CONV_WINDOW_FAMILIES = frozenset({"inkling", "inkling2", "inkling2_loop"})
CONV_STREAMS = 4  # number_of_conv_states (configuration_inkling.py:171-172)


def cache_layer_sources(tiny: dict, n: int) -> list[int]:
    """The model layer each transformers cache layer belongs to: 0..n-1, then, for Inkling 2
    Loop, a copy of the looped layers start..end-1 for each pass after the first.

    transformers 5.25.0 appends ``cache.layers[start:end] * (loop_num_passes - 1)`` (deep
    copies) to the n layers the ``DynamicCache`` built (modeling_inkling2_loop.py:1398-1401);
    pass p >= 1 of looped layer i uses cache layer n + (p - 1)(end - start) + i - start
    (``cache_offset``, :1449). The loop settings as transformers reads them (its config
    class, ``loop_config`` winning over the flat keys, configuration_inkling2_loop.py:134-145).
    """
    if _family(tiny) != "inkling2_loop":
        return list(range(n))
    config = AutoConfig.for_model(**transformers_fields(tiny))
    start, end = config.loop_layer_index_start, config.loop_layer_index_end
    return list(range(n)) + list(range(start, end)) * (config.loop_num_passes - 1)


def vllm_inkling_row(width: int, kv_heads: int) -> int:
    """vLLM 0.34.0's elements per token of one Inkling layer's conv window for ``width`` values
    per token over ``kv_heads`` KV heads: each head's share, 2 head_dim + 2 hidden / kv_heads,
    rounded up to a power of two (``raw_head_size``, ``head_size = 1 << (raw_head_size - 1)
    .bit_length()``, vllm/models/inkling/nvidia/sconv_swa_attn.py:150-157), kv_heads of them
    (``SlidingWindowSpec(num_kv_heads, head_size, head_size_v=0)``, :185-193)."""
    assert width % kv_heads == 0, (width, kv_heads)
    return kv_heads * (1 << (width // kv_heads - 1).bit_length())


def conv_window_rule(family: str, channels: tuple, K: int, kv_heads: int, T: int) -> dict:
    """From one layer's transformers 5.25.0 convolution states, [1, C_k, K] float32 for k = 0..3
    (keys, values, attention output, MLP output), to what kvlib's "Short-conv window" group
    must count for that layer:

    * rows: transformers keeps K = conv_kernel_size inputs per state from the first step (a
      static buffer, a shorter prefill zero-padded: cache_utils.py:1245-1249, :1289-1293);
      vLLM (and kvlib) the last min(T, K) tokens of a sliding window of K
      (sconv_swa_attn.py:158-159): ``rows`` min(T, K) against K;
    * width: ``width`` = C_0 + C_1 + C_2 + C_3 values per token (2 N_g d + 2 hidden), the
      elements before padding. ``inkling``: vLLM 0.34.0 packs them per KV head, each head's
      row padded to a power of two (``d_w`` = :func:`vllm_inkling_row`), in bf16 whatever the
      model or KV dtype (b = 2, sconv_swa_attn.py:168-172); ``inkling2`` and ``inkling2_loop``
      (no vLLM model): transformers' own, d_w = width, b = 4 (float32, modeling_inkling2.py:
      607-614, :915-922);
    * ``bytes``: rows x d_w x b, kvlib's group per layer.
    """
    width = sum(channels)
    if family == "inkling":
        d_w, b = vllm_inkling_row(width, kv_heads), 2
    else:
        d_w, b = width, 4
    rows = min(T, K)
    return {"K": K, "width": width, "d_w": d_w, "b": b, "rows": rows, "bytes": rows * d_w * b,
            "key": _key(CacheKind.SLIDING, K, "Short-conv window", {"b": b, "d_w": d_w})}


def _conv_window(h: Held, tiny: dict, T: int, groups: dict, where: str):
    """Problems, kvlib's group key and its bytes per layer by :func:`conv_window_rule`."""
    problems = []
    convs = h.convs
    if len(convs) != CONV_STREAMS or h.recurrent is not None:
        return [f"{where}: transformers holds {len(convs)} conv states (recurrent: "
                f"{h.recurrent}), Inkling's layers {CONV_STREAMS} and none"], None, 0
    kv_heads, d = h.shapes[0][1], h.shapes[0][3]
    want = (kv_heads * d, kv_heads * d, tiny["hidden_size"], tiny["hidden_size"])
    K = convs[0].shape[-1]
    for k, (p, c) in enumerate(zip(convs, want, strict=True)):
        if p.shape != (1, c, K) or p.element_size != 4 or p.storage_bytes != p.elements * 4:
            problems.append(f"{where}: conv_states[{k}] {p.shape}, {p.element_size} B per "
                            f"element, {p.storage_bytes} B stored; the layer's heads and "
                            f"hidden_size give float32 (1, {c}, {K})")
    r = conv_window_rule(_family(tiny), want, K, kv_heads, T)
    g = groups.get(r["key"])
    if g is None:
        have = sorted((x.window, tuple(sorted(x.sizes.items()))) for x in groups.values()
                      if x.attention == "Short-conv window")
        problems.append(f"{where}: transformers' conv states ({r['width']} values per token "
                        f"over {kv_heads} KV heads, K = {K}) make d_w = {r['d_w']} at b = "
                        f"{r['b']}; kvlib has no such short-conv window, only {have}")
        return problems, None, 0
    have = g.bytes_per_sequence(T, 1) / g.layers
    if have != r["bytes"]:
        problems.append(f"{where}: short-conv window: {r['rows']} rows of {r['d_w']} at "
                        f"{r['b']} B by the rule = {r['bytes']} B, kvlib's group {have} B")
    return problems, r["key"], r["bytes"]


def _state(h: Held, e: Expected, tiny: dict, b: int, where: str) -> list[str]:
    problems = []
    if h.conv is None:
        return [f"{where}: {e.kind} layer, transformers holds no convolution state"]
    want_conv = vllm_conv_elements(h.conv.shape)
    if e.conv_elements != want_conv:
        problems.append(f"{where}: {e.kind} layer, transformers' conv state {h.conv.shape} "
                        f"is {want_conv} elements at d_conv - 1 rows (vLLM); kvlib counts "
                        f"{e.conv_elements}")
    got_ssm = h.recurrent.elements if h.recurrent else 0
    if e.ssm_elements != got_ssm:
        problems.append(f"{where}: {e.kind} layer, transformers' recurrent state "
                        f"{h.recurrent.shape if h.recurrent else None} is {got_ssm} elements; "
                        f"kvlib counts {e.ssm_elements}")
    b_c, b_s = vllm_state_dtypes(tiny, {2: torch.bfloat16, 4: torch.float32}[b])
    if (e.b_c, e.b_s) != (b_c, b_s):
        problems.append(f"{where}: kvlib keeps the states at (b_c, b_s) = ({e.b_c}, {e.b_s}) "
                        f"B, vLLM at ({b_c}, {b_s})")
    if e.state_bytes != e.conv_elements * e.b_c + e.ssm_elements * e.b_s:
        problems.append(f"{where}: kvlib's state is {e.state_bytes} B, not conv "
                        f"{e.conv_elements} x {e.b_c} + SSM {e.ssm_elements} x {e.b_s}")
    if h.conv.element_size != b:
        problems.append(f"{where}: transformers' conv state is {h.conv.element_size} B per "
                        f"element, the model's dtype is {b}")
    if h.recurrent and h.recurrent.element_size != TRANSFORMERS_RECURRENT_BYTES:
        problems.append(f"{where}: transformers' recurrent state is "
                        f"{h.recurrent.element_size} B per element, not float32")
    for part in (h.conv, h.recurrent):
        if part and part.storage_bytes != part.elements * part.element_size:
            problems.append(f"{where}: a state's storage {part.storage_bytes} B is not its "
                            f"{part.elements} elements")
    return problems


def compare(tiny: dict, cache, T: int, q: int) -> list[str]:
    """Every disagreement between transformers' cache and kvlib's reading; [] when they agree.

    Per layer: the cache layer class and window (kvlib's kind and W); for attention the
    tensor shapes (kvlib's N_g, d_QK, d_V or d_L, d_R), the visible elements and the storage
    bytes (kvlib's count through :func:`rule`); indexer keys through
    :func:`vllm_indexer_bytes`; states through :func:`vllm_conv_elements` (conv) and exactly
    (recurrent), their element sizes through :func:`vllm_state_dtypes`; no tensor at all in a
    layer kvlib says keeps nothing. Inkling's four conv states per layer through
    :func:`conv_window_rule` against kvlib's short-conv window groups (each spanning exactly
    the layers the rule sends to it); Inkling 2 Loop's extra cache layers are its looped
    layers' later passes (:func:`cache_layer_sources`). Then the totals, against ``ModelSpec``.
    """
    if tiny["model_type"] == "deepseek_v4":
        return compare_v4(tiny, cache, T, q)
    got = held(cache)
    b = next((h.element_size for h in got if h.element_size), None) or next(
        (h.conv.element_size for h in got if h.conv), 4)
    by_layer = expected(tiny, T, b)
    sources = cache_layer_sources(tiny, len(by_layer))
    want = [by_layer[i] for i in sources]
    conv_window = _family(tiny) in CONV_WINDOW_FAMILIES
    groups = {_key(g.kind, g.window, g.attention, g.sizes): g
              for g in parse_config(tiny).groups()} if conv_window else {}
    conv_layers, conv_total = {}, 0
    problems = []
    if len(got) != len(want):
        problems.append(f"transformers has {len(got)} cache layers, kvlib reads {len(want)}")
    want_elements = 0
    for j, (h, e) in enumerate(zip(got, want, strict=False)):
        where = f"layer {j} at T={T}" + (f" (layer {e.layer}'s next pass)" if j != e.layer
                                         else "")
        cls = transformers_class(tiny, e)
        window = transformers_window(tiny, e.window)
        if h.cls != cls or (e.kind in WINDOWED) != (h.window is not None) \
                or (e.kind in WINDOWED and h.window != window):
            problems.append(f"{where}: kvlib reads {e.kind} (window {e.window}, in "
                            f"transformers {window}), transformers holds {h.cls} (window "
                            f"{h.window})")
            continue
        if e.kind in EMPTY or e.kind in STATEFUL:
            if h.elements or h.indexer:
                problems.append(f"{where}: kvlib reads {e.kind}, transformers holds K/V "
                                f"{h.shapes}")
        if e.kind in EMPTY:
            if h.conv or h.recurrent:
                problems.append(f"{where}: kvlib reads {e.kind}, transformers holds a state")
            continue
        if e.kind in STATEFUL:
            problems += _state(h, e, tiny, b, where)
            continue
        found, elements = _growing(h, e, tiny, T, q, b, where)
        problems += found
        want_elements += elements
        if e.parallel_state:
            problems += _state(h, e, tiny, b, where)
        if conv_window:
            found, key, conv_bytes = _conv_window(h, tiny, T, groups, where)
            problems += found
            conv_layers[key] = conv_layers.get(key, 0) + 1
            conv_total += conv_bytes
        elif len(h.convs) > 1:
            problems.append(f"{where}: transformers holds {len(h.convs)} conv states, kvlib "
                            "reads no short-conv window")
        if e.indexer_bytes:
            problems += _indexer(h, e, tiny, T, where)
        elif h.indexer is not None:
            problems.append(f"{where}: kvlib reads a layer sharing an earlier layer's indexer "
                            f"(no indexer keys), transformers holds {h.indexer.shape}")
    for key, g in groups.items():
        if g.attention == "Short-conv window" and conv_layers.get(key, 0) != g.layers:
            problems.append(f"kvlib's short-conv window {dict(g.sizes)} spans {g.layers} layers, "
                            f"transformers' conv states give it {conv_layers.get(key, 0)}")
    spec = read_config(tiny)
    spec_total = spec.kv_bytes_per_sequence(T, b)
    layers_total = sum(e.bytes + e.indexer_bytes for e in want) + conv_total
    if spec_total != layers_total:
        problems.append(f"ModelSpec.kv_bytes_per_sequence({T}) = {spec_total} B is not the sum "
                        f"of kvlib's layers over transformers' {len(got)} cache layers, "
                        f"{layers_total} B")
    if spec.state_bytes_per_sequence() != sum(e.state_bytes for e in want):
        problems.append(f"ModelSpec.state_bytes_per_sequence() = "
                        f"{spec.state_bytes_per_sequence()} B is not the sum of kvlib's layers")
    held_total = sum(h.elements for h in got) * b
    if not problems and held_total != want_elements * b:
        problems.append(f"total at T={T}: transformers {held_total} B, kvlib's layers by the "
                        f"rule {want_elements * b} B")
    return problems


# --- DeepSeek V4 (transformers 5.25.0 ``deepseek_v4``; vLLM 0.34.0 models/deepseek_v4/) ---------
# transformers keeps each layer's caches in one object: a sliding_attention layer (m = 0) is a
# plain DynamicSlidingWindowLayer; a compressed one its model's own class
# (models/deepseek_v4/modeling_deepseek_v4.py, "modeling" below), m from the config's
# compress_rates (configuration_deepseek_v4.py:253-271 turns the file's compress_ratios into
# layer_types). kvlib, like vLLM, keeps a group per kind of cache. :func:`compare_v4` maps one
# onto the other by the rule in :func:`v4_rule`; every count is exact.
V4_CLASSES = {"DynamicSlidingWindowLayer": None,
              "DeepseekV4CSACache": "compressed_sparse_attention",
              "DeepseekV4HCACache": "heavily_compressed_attention"}
_V4_STATES = ("buffer_kv", "buffer_gate", "compressed_kv", "overlap_kv", "overlap_gate")


@dataclass(frozen=True)
class V4Held:
    """One transformers 5.25.0 DeepSeek V4 cache layer after a step.

    m: the layer's compression rate (0: the window only); keys: [1, 1, rows, head_dim];
    shared: values is keys (one storage: modeling:195, :199), else two tensors (a plain
    ``DynamicSlidingWindowLayer``, cache_utils.py:246-247, fed ``kv`` as both, modeling:835);
    window_storage_bytes: what keys (and values) keep alive; parts: ``"buffer_kv[compressor]"``
    etc., each a :class:`Part`.
    """

    layer: int
    cls: str
    window: int | None
    m: int
    keys: tuple
    shared: bool
    window_elements: int
    window_storage_bytes: int
    element_size: int
    parts: dict


def v4_held(cache, config) -> list[V4Held]:
    """Every layer of a DeepSeek V4 ``DynamicCache``; fails on a tensor it does not name."""
    out = []
    for i, layer in enumerate(cache.layers):
        cls = type(layer).__name__
        assert cls in V4_CLASSES, f"layer {i}: {cls}"
        k, v = layer.keys, layer.values
        parts, extra = {}, {}
        for name, value in vars(layer).items():
            if isinstance(value, dict) and name in _V4_STATES:
                parts.update({f"{name}[{key}]": Part.of(t) for key, t in value.items()
                              if isinstance(t, torch.Tensor)})
            elif isinstance(value, torch.Tensor) and name not in ("keys", "values") \
                    and value.numel() > 1:
                extra[name] = tuple(value.shape)
        assert not extra, f"layer {i} ({cls}) also holds {extra}"
        shared = v.untyped_storage().data_ptr() == k.untyped_storage().data_ptr()
        storage = k.untyped_storage().nbytes() + (0 if shared else v.untyped_storage().nbytes())
        rate = V4_CLASSES[cls]
        out.append(V4Held(i, cls, layer.sliding_window,
                          config.compress_rates[rate] if rate else 0, tuple(k.shape), shared,
                          k.numel() + (0 if shared else v.numel()), storage, k.element_size(),
                          parts))
    return out


def vllm_v4_entry_bytes(d_c: int, d_R: int) -> int:
    """Bytes of one vLLM 0.34.0 fp8_ds_mla entry for a head_dim-wide (d_c) vector with a d_R
    RoPE part: (d_c - d_R) fp8 NoPE values, d_R bf16 RoPE values, one UE8M0 scale byte per 64
    NoPE values plus one byte of padding ("448B NoPE + 128B RoPE + 8B fp8 scale = 584B per
    token", vllm/models/deepseek_v4/attention.py:837-839). 512, 64: 584."""
    return (d_c - d_R) + 2 * d_R + (d_c - d_R) // 64 + 1


def vllm_v4_state_bytes(m: int, width: int, T: int) -> int:
    """vLLM 0.34.0's compressor state for one compressor of rate m over ``width`` values:
    coff = 2 for m = 4 (overlapping windows), else 1; a ring of coff x m slots
    (``sliding_window = coff * compress_ratio``, compressor.py:159-160), each slot
    ``state_dim = 2 * coff * head_dim`` float32 values (kv_state + score_state,
    compressor.py:248, :269, :298-299); min(T, coff x m) slots are in use."""
    coff = 1 + (m == 4)
    return min(T, coff * m) * 2 * coff * width * 4


def v4_rule(m: int, W: int, T: int, q: int) -> dict:
    """What transformers 5.25.0 holds in a DeepSeek V4 layer of rate m after a step that added q
    tokens to a sequence now T long (window W), in rows / entries / tokens, from its code:

    * ``window``: visible min(T, W - 1) rows, storage min(T - q, W - 1) + q rows (:func:`rule`,
      which turns kvlib's min(T, W) into these): ``update`` keeps ``full[:, :, -W + 1:, :]``,
      a view of the step's concatenation (modeling:198; the plain layer of an m = 0 layer,
      cache_utils.py:246-247), since the next token is attended beside those W - 1;
    * ``entries`` (m > 0): floor(T / m) compressed entries, and as many indexer keys on a
      layer with m = 4: a window is compressed once all its m tokens have arrived
      (``usable``, modeling:221), entries are concatenated (:234);
    * ``buffered`` (m > 0): T mod m tokens not yet compressed, visible in ``buffer_kv`` /
      ``buffer_gate`` (modeling:222), whose storage is the step's concatenation,
      (T - q) mod m + q tokens;
    * ``overlap`` (m = 4): the last closed window's first half (Ca), m tokens, once T >= m
      (``update_overlap_state``, modeling:296-297), else none.
    """
    visible, storage = transformers_tokens(CacheKind.SLIDING, W, T, q)
    out = {"window": visible, "window_storage": storage}
    if m:
        out.update(entries=T // m, buffered=T % m, buffered_storage=(T - q) % m + q,
                   overlap=m if m == 4 and T >= m else 0)
    return out


def _v4_groups(reading) -> dict:
    """kvlib's V4 groups by what they hold: ("window",), ("entries", m), ("indexer", m),
    ("state", window, d_c)."""
    out = {}
    for g in reading.groups():
        if g.attention == "V4 entry":
            key = ("window",) if g.kind is CacheKind.SLIDING else ("entries", g.ratio)
        elif g.attention == "Indexer":
            key = ("indexer", g.ratio)
        else:
            assert g.attention == "Compressor state", g
            key = ("state", g.window, g.sizes["d_c"])
        assert key not in out, key
        out[key] = g
    return out


def compare_v4(tiny: dict, cache, T: int, q: int) -> list[str]:
    """Every disagreement between transformers' DeepSeek V4 cache and kvlib's groups.

    Per layer, by :func:`v4_rule`: the class and m (kvlib's ``layer(i)``: the window group or the
    compressed group of ratio m); the window rows, K = V sharing, width head_dim and storage;
    kvlib's window group at min(T, W) entries of :func:`vllm_v4_entry_bytes`; on m > 0 layers
    the compressed entries and (m = 4) indexer keys, floor(T / m) each, against kvlib's
    compressed and indexer groups (:func:`vllm_indexer_bytes`), and the compressor buffers
    (T mod m tokens, coff x width wide, coff = buffer width / entry width; the overlap slice)
    against kvlib's compressor-state groups (:func:`vllm_v4_state_bytes`). Every tensor in the
    model dtype but the overlap gates, float32 (gate + the float32 ``position_bias``,
    modeling:512, :542, :628, :657). Then each group's layer count and the totals.
    """
    config = AutoConfig.for_model(**transformers_fields(tiny))
    reading = parse_config(tiny)
    groups = _v4_groups(reading)
    got = v4_held(cache, config)
    d_c, d_R = reading.sizes["d_c"], reading.sizes["d_R"]
    entry = vllm_v4_entry_bytes(d_c, d_R)
    b = got[0].element_size
    problems, layers_of, want_total = [], {}, 0
    if len(got) != reading.num_layers:
        problems.append(f"transformers has {len(got)} cache layers, kvlib reads "
                        f"{reading.num_layers}")

    def check(key, want_bytes, where, what):
        g = groups.get(key)
        if g is None:
            problems.append(f"{where}: kvlib has no group for {what} {key}")
            return 0
        layers_of.setdefault(key, []).append(where)
        have = g.bytes_per_sequence(T, 1) / g.layers
        if have != want_bytes:
            problems.append(f"{where}: {what}: vLLM keeps {want_bytes} B by the rule from "
                            f"transformers' tensors, kvlib's group {key} {have} B")
        return want_bytes

    for h in got:
        where = f"layer {h.layer} at T={T}"
        kind, window, _, sizes = reading.layer(h.layer)
        m = dict(sizes).get("m", 0)
        if h.m != m or h.window != config.sliding_window \
                or (kind is CacheKind.COMPRESSED) != bool(h.m):
            problems.append(f"{where}: kvlib reads {kind} m={m}, transformers holds {h.cls} "
                            f"(m={h.m}, window {h.window})")
            continue
        r = v4_rule(h.m, h.window, T, q)
        if h.keys != (1, 1, r["window"], d_c) or h.shared != bool(h.m) \
                or h.window_elements != r["window"] * d_c * (1 if h.shared else 2) \
                or h.window_storage_bytes != r["window_storage"] * d_c * b * (1 + (not h.shared)):
            problems.append(f"{where}: window keys {h.keys} (shared with values: {h.shared}), "
                            f"{h.window_storage_bytes} B stored; the rule: {r['window']} rows of "
                            f"{d_c} visible, {r['window_storage']} stored")
        fewer, _ = rule(CacheKind.SLIDING, h.window, T, q)
        want_total += check(("window",), (r["window"] + fewer) * entry, where, "window rows")
        parts = dict(h.parts)
        for pname, p in parts.items():
            if p.element_size != (4 if pname.startswith("overlap_gate") else b):
                problems.append(f"{where}: {pname} has {p.element_size} B per element")
        if not h.m:
            if parts:
                problems.append(f"{where}: an m = 0 layer holds {sorted(parts)}")
            continue
        names = ["compressor"] + (["indexer"] if h.m == 4 else [])
        expected_parts = {f"{s}[{n}]" for n in names for s in ("buffer_kv", "buffer_gate",
                                                                  "compressed_kv")}
        if r["overlap"]:
            expected_parts |= {f"{s}[{n}]" for n in names for s in ("overlap_kv", "overlap_gate")}
        if set(parts) != expected_parts:
            problems.append(f"{where}: transformers holds {sorted(parts)}, the rule "
                            f"{sorted(expected_parts)}")
            continue
        for name in names:
            width = parts[f"compressed_kv[{name}]"].shape[-1]
            if width != (d_c if name == "compressor" else tiny["index_head_dim"]):
                problems.append(f"{where}: {name} entries {width} wide")
            if parts[f"compressed_kv[{name}]"].shape != (1, r["entries"], width):
                problems.append(f"{where}: {name} entries "
                                f"{parts[f'compressed_kv[{name}]'].shape}; the rule: "
                                f"floor(T / m) = {r['entries']}")
            buffers = [parts[f"buffer_{s}[{name}]"] for s in ("kv", "gate")]
            coff = buffers[0].shape[-1] // width
            if coff != 1 + (h.m == 4) or any(
                    p.shape != (1, r["buffered"], coff * width)
                    or p.storage_bytes != r["buffered_storage"] * coff * width * b
                    for p in buffers):
                problems.append(f"{where}: {name} buffers {[p.shape for p in buffers]}, "
                                f"{[p.storage_bytes for p in buffers]} B; the rule: "
                                f"T mod m = {r['buffered']} tokens of coff x {width}")
            for s in ("kv", "gate") if r["overlap"] else ():
                if parts[f"overlap_{s}[{name}]"].shape != (1, r["overlap"], width):
                    problems.append(f"{where}: {name} overlap {s} "
                                    f"{parts[f'overlap_{s}[{name}]'].shape}")
            if name == "compressor":
                want_total += check(("entries", h.m), r["entries"] * entry, where,
                                    "compressed entries")
            else:
                want_total += check(("indexer", h.m), vllm_indexer_bytes(
                    parts["compressed_kv[indexer]"].shape), where, "indexer keys")
            want_total += check(("state", coff * h.m, coff * width),
                                vllm_v4_state_bytes(h.m, width, T), where,
                                f"the {name}'s state")
    for key, g in groups.items():
        if len(layers_of.get(key, ())) != g.layers:
            problems.append(f"kvlib's group {key} spans {g.layers} layers, transformers' layers "
                            f"give it {len(layers_of.get(key, ()))}")
    spec_total = read_config(tiny).kv_bytes_per_sequence(T, 1)
    if not problems and spec_total != want_total:
        problems.append(f"total at T={T}: kvlib {spec_total} B, vLLM by the rule {want_total} B")
    return problems
