"""kvlib against the cache transformers really allocates, layer by layer (docs/crosscheck.md).

Each bundled model, shrunk (shrink.py), three families kvlib reads without bundling
them, and published configs of the families issue 23 added (cases.py) is built with
random weights; a prompt of T tokens is prefilled, then 3
tokens are decoded greedily, and after every forward step the returned ``DynamicCache`` is
compared with kvlib's reading of the same tiny config (allocation.compare). Prompts of 6,
11 and 20 tokens, each followed by 3 decode steps, put T below, at and above the 8-token
windows (T = 6..9) and the 12-token chunks (T = 11..14), and well past both (T = 20..23).
A bundled model whose family transformers cannot build is skipped with the reason
(cases.unsupported), never silently.
"""

from __future__ import annotations

import dataclasses
import functools
import socket
import tomllib
from pathlib import Path

import pytest
import torch
import transformers
from allocation import (
    build,
    cache_layer_sources,
    compare,
    conv_window_rule,
    expected,
    held,
    rule,
    run_dtype,
    steps,
    transformers_tokens,
    v4_held,
    v4_rule,
    vllm_conv_elements,
    vllm_indexer_bytes,
    vllm_inkling_row,
    vllm_state_dtypes,
    vllm_v4_entry_bytes,
    vllm_v4_state_bytes,
)
from cases import NAMES, tiny, unsupported
from shrink import CHUNK, WINDOW
from transformers import AutoConfig

from kvlib import parse_config, read_config
from kvlib.models.catalog import bundled_config
from kvlib.models.spec import CacheKind

PROMPTS = (6, 11, 20)
DECODE = 3
ROOT = Path(__file__).parents[2]


def _runnable(name: str) -> None:
    reason = unsupported(name)
    if reason:
        pytest.skip(reason)


@functools.cache
def model(name: str, dtype=None):
    t = tiny(name)
    return build(t, dtype=dtype or run_dtype(t))


def after(name: str, prompt: int, decode: int, dtype=None):
    """(T, q, cache) after the last of ``decode`` steps following a ``prompt``-token prefill."""
    *_, last = steps(model(name, dtype), prompt, decode)
    return last


def test_the_installed_transformers_is_the_pinned_one():
    """The rule in allocation.py was read from this release's cache_utils.py."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["crosscheck"]
    assert f"transformers=={transformers.__version__}" in extra
    assert f"torch=={torch.__version__.split('+')[0]}" in extra


def test_contexts_lie_below_at_and_above_every_window_and_chunk():
    seen = {T for p in PROMPTS for T in range(p, p + DECODE + 1)}
    for w in (WINDOW, CHUNK):
        assert min(seen) < w - 1 and {w - 1, w, w + 1} <= seen and max(seen) > w + 1


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("name", NAMES)
def test_transformers_cache_equals_kvlib_by_the_stated_rule(name, prompt):
    _runnable(name)
    checked = 0
    for T, q, cache in steps(model(name), prompt, DECODE):
        assert cache.get_seq_length() == T  # every tiny model has an attention layer
        assert compare(tiny(name), cache, T, q) == []
        checked += 1
    assert checked == DECODE + 1


# Hand arithmetic at T = 21 (prompt 20, one decode step), float32 (b = 4). Tiny sizes:
# GQA 2 KV heads x head_dim 16 -> 2 x 2 x 16 = 64 elements per token per layer;
# Falcon MQA 1 x 16 -> 32; GPT-2 MHA 4 x 16 -> 128; MLA d_L + d_R = 64 + 8 = 72.
# (layer, class, transformers elements, kvlib elements, storage bytes, kvlib bytes)
BY_HAND = {
    "llama-3.1-8b": [(0, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    "gemma-3-27b": [(0, "DynamicSlidingWindowLayer", 7 * 64, 8 * 64, 8 * 64 * 4, 8 * 64 * 4),
                    (5, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    "llama-4-scout": [(2, "DynamicSlidingWindowLayer", 11 * 64, 12 * 64, 12 * 64 * 4,
                       12 * 64 * 4),
                      (3, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    "mistral-7b-v0.1": [(1, "DynamicSlidingWindowLayer", 7 * 64, 8 * 64, 8 * 64 * 4,
                         8 * 64 * 4)],
    "qwen2.5-7b": [(1, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],  # inert
    "falcon-7b": [(1, "DynamicLayer", 21 * 32, 21 * 32, 21 * 32 * 4, 21 * 32 * 4)],
    "gpt2": [(0, "DynamicLayer", 21 * 128, 21 * 128, 21 * 128 * 4, 21 * 128 * 4)],
    "deepseek-v2": [(1, "DynamicLayer", 21 * 72, 21 * 72, 21 * 72 * 4, 21 * 72 * 4)],
    "gemma-4-26b-a4b": [(0, "DynamicSlidingWindowLayer", 7 * 128, 8 * 128, 8 * 128 * 4,
                         8 * 128 * 4),  # sliding: 4 KV heads x 16, both K and V
                        (5, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    # Gemma 4's full layer: num_global_key_value_heads 1 x global_head_dim 32, K and V.
    "gemma3n": [(4, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4),
                (5, "DummyLayer", 0, 0, 0, 0)],  # layers 5-9 share: nothing of their own
    # MiniMax-M2.5: 48 : 8 -> 12 : 2, head_dim 16, every layer full (rotary_dim 64 -> 8 is
    # partial RoPE: it rotates part of each key and changes no width).
    "minimax-m2.5": [(1, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    # Kimi-K3 (kimi_linear), "KKKF": layer 3 is MLA, d_L + d_R = 64 + 8 (mla_use_nope does not
    # narrow transformers' cache either); KDA layers hold no K/V.
    "kimi-k3": [(3, "DynamicLayer", 21 * 72, 21 * 72, 21 * 72 * 2, 21 * 72 * 2),
                (0, "LinearAttentionLayer", 0, 0, 0, 0)],
    # Nemotron 3 Ultra ("MEMEMEM*" from layers_block_type): 64 : 2 heads of 16; MoE keeps nothing.
    "nemotron-3-ultra-550b-a55b": [(7, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 2,
                                    21 * 64 * 2), (1, "DummyLayer", 0, 0, 0, 0)],
    # transformers 5.25.0's families. Kolibri 1.1: 2 KV heads x 16; layer 4 indexed (every
    # token, a DynamicIndexedLayer with no indexer keys), layer 0 sliding, layer 9 reads layer
    # 4's K/V (kv_source_layers) and keeps nothing.
    "kolibri1_1": [(4, "DynamicIndexedLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4),
                   (0, "DynamicSlidingWindowLayer", 7 * 64, 8 * 64, 8 * 64 * 4, 8 * 64 * 4),
                   (9, "DummyLayer", 0, 0, 0, 0)],
    # Mistral Large 4: latent 64 + RoPE key 8; layer 3 is NoPE: the latent alone (its RoPE
    # key tensor is 0 wide).
    "mistral_large4": [(0, "DynamicIndexedLayer", 21 * 72, 21 * 72, 21 * 72 * 4, 21 * 72 * 4),
                       (3, "DynamicIndexedLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4)],
    # MiniMax M3: 2 KV heads x 16 on every layer; layers 3-4 are sparse (their own class).
    "minimax_m3_vl": [(0, "DynamicLayer", 21 * 64, 21 * 64, 21 * 64 * 4, 21 * 64 * 4),
                      (3, "MiniMaxM3VLSparseCacheLayer", 21 * 64, 21 * 64, 21 * 64 * 4,
                       21 * 64 * 4)],
    # dots3 Note: a DSA layer holds its own latent 64 + RoPE 8 = 72 per token; vLLM (kvlib)
    # pads it to the sliding layers' 128 + 8 = 136. A sliding layer holds 136 in both.
    "dots3_note": [(0, "DynamicIndexedLayer", 21 * 72, 21 * 136, 21 * 72 * 4, 21 * 136 * 4),
                   (2, "DynamicSlidingWindowLayer", 7 * 136, 8 * 136, 8 * 136 * 4,
                    8 * 136 * 4)],
}
# The state families run in bfloat16 (allocation.run_dtype): their K/V bytes are 2 per element.
BY_HAND_BYTES = {"kimi-k3": 2, "nemotron-3-ultra-550b-a55b": 2}


@pytest.mark.parametrize("name", list(BY_HAND))
def test_by_hand_at_21_tokens(name):
    T, q, cache = after(name, 20, 1)
    assert (T, q) == (21, 1)
    got, want = held(cache), expected(tiny(name), T, BY_HAND_BYTES.get(name, 4))
    for layer, cls, tf_elements, kv_elements, storage, kv_bytes in BY_HAND[name]:
        assert got[layer].cls == cls
        assert got[layer].elements == tf_elements
        assert got[layer].storage_bytes == storage
        assert want[layer].elements == kv_elements
        assert want[layer].bytes == kv_bytes


# States at T = 21, bfloat16 model (b_c = 2), per layer (shapes [batch, channels, kernel] and
# the recurrent state's own). transformers keeps d_conv inputs and a float32 recurrent state;
# vLLM (kvlib) keeps d_conv - 1 inputs, the recurrent state in b_s.
# (layer, transformers conv shape, recurrent shape, transformers bytes,
#  kvlib conv elements, kvlib SSM elements, b_s, kvlib bytes)
BY_HAND_STATES = {
    # Gated DeltaNet: 2 key heads x 16 twice + 4 value heads x 8 = 96 channels, kernel 4;
    # one 16 x 8 matrix per value head. transformers 96*4*2 + 512*4; kvlib 96*3*2 + 512*2.
    "qwen3-next-80b-a3b": [(0, (1, 96, 4), (1, 4, 16, 8), 768 + 2048, 288, 512, 2, 576 + 1024)],
    # Mamba2: 64 heads x 8 = 512 + 2 groups x 2 x 16 = 576 channels, kernel 4; 64 heads of
    # 8 x 16; SSM state float32 in vLLM too (NemotronH). 576*4*2 + 8192*4; 576*3*2 + 8192*4.
    "nemotron-h-56b": [(0, (1, 576, 4), (1, 64, 8, 16), 4608 + 32768, 1728, 8192, 4,
                        3456 + 32768)],
    # Mamba (Jamba): mamba_expand 2 x hidden 128 = 256 channels, kernel 4, d_state 16.
    "jamba": [(0, (1, 256, 4), (1, 256, 16), 2048 + 16384, 768, 4096, 2, 1536 + 8192)],
    # Short convolution (LFM2): hidden 128 channels, conv_L_cache 3; no recurrent state.
    "lfm2": [(0, (1, 128, 3), None, 768, 256, 0, 2, 512)],
    # Qwen3.5-27B: 2 key heads x 16 twice + 6 value heads x 8 = 112 channels, kernel 4; one
    # 16 x 8 matrix per value head = 768. mamba_ssm_dtype float32: vLLM keeps the recurrent
    # state in 4 B too, so only the convolution row differs. 112*4*2 + 768*4; 112*3*2 + 768*4.
    "qwen3.5-27b": [(0, (1, 112, 4), (1, 6, 16, 8), 896 + 3072, 336, 768, 4, 672 + 3072)],
    # Qwen3.5-35B-A3B: 2 x 16 x 2 + 4 x 8 = 96 channels; 4 x 16 x 8 = 512.
    "qwen3.5-35b-a3b": [(2, (1, 96, 4), (1, 4, 16, 8), 768 + 2048, 288, 512, 4, 576 + 2048)],
    # Kimi-K3's KDA: q, k and v of 2 heads x 16 = 96 channels, short_conv_kernel_size 4; one
    # 16 x 16 matrix per head = 512, float32 in both (vLLM's kda_state_dtype "auto").
    "kimi-k3": [(1, (1, 96, 4), (1, 2, 16, 16), 768 + 2048, 288, 512, 4, 576 + 2048)],
    # Nemotron 3 Ultra (layers_block_type, no num_hidden_layers): Mamba2 256 heads / 8 groups
    # -> 64 / 2, head 8, state 16: 512 + 2 x 2 x 16 = 576 channels; float32 SSM (the file's
    # mamba_ssm_cache_dtype).
    "nemotron-3-ultra-550b-a55b": [(6, (1, 576, 4), (1, 64, 8, 16), 4608 + 32768, 1728, 8192,
                                    4, 3456 + 32768)],
}


@pytest.mark.parametrize("name", list(BY_HAND_STATES))
def test_states_by_hand_at_21_tokens(name):
    T, q, cache = after(name, 20, 1)
    assert (T, q) == (21, 1)
    got, want = held(cache), expected(tiny(name), T, 2)
    for layer, conv, rec, tf_bytes, kv_conv, kv_ssm, b_s, kv_bytes in BY_HAND_STATES[name]:
        h, e = got[layer], want[layer]
        assert h.cls == "LinearAttentionLayer" and h.elements == 0
        assert h.conv.shape == conv and h.conv.element_size == 2
        assert (h.recurrent.shape if h.recurrent else None) == rec
        assert h.recurrent is None or h.recurrent.element_size == 4
        assert h.conv.storage_bytes + (h.recurrent.storage_bytes if rec else 0) == tf_bytes
        assert (e.conv_elements, e.ssm_elements, e.b_c, e.b_s, e.state_bytes) \
            == (kv_conv, kv_ssm, 2, b_s, kv_bytes)
        assert vllm_conv_elements(conv) == kv_conv
        # The difference, in bytes: one convolution row, and the float32 recurrent state.
        assert tf_bytes - kv_bytes == conv[1] * 2 + kv_ssm * (4 - b_s)


@pytest.mark.parametrize("name", ["deepseek-v3.2", "glm-5.1"])
def test_indexer_keys_by_hand(name):
    """DeepSeek V3.2 and GLM-5.1 at T = 21: transformers holds 21 x 128 float32 indexer keys
    per layer (10,752 B); vLLM (kvlib) 21 x (128 fp8 + one 4-byte scale) = 2,772 B. The MLA
    cache is the latent (64) and the RoPE key (8): GLM-5 too, in transformers 5.24.0."""
    T, q, cache = after(name, 20, 1)
    for h, e in zip(held(cache), expected(tiny(name), T, 4), strict=True):
        assert h.cls == "DynamicIndexedLayer"
        assert h.shapes == ((1, 1, 21, 64), (1, 1, 21, 8))
        assert h.indexer.shape == (1, 21, 128) and h.indexer.storage_bytes == 21 * 128 * 4
        assert e.indexer_bytes == vllm_indexer_bytes(h.indexer.shape) == 21 * 132 == 2772
    assert vllm_indexer_bytes((1, 5, 64)) == 5 * 64  # under 128 values: no scale


# Indexer keys at T = 21, float32: (layers, transformers' shape, kvlib's bytes per layer).
INDEXER_BY_HAND = {
    # MiniMax M3's idx_keys: 21 x 128 float32 = 10,752 B; vLLM keeps them in bf16 whatever
    # the KV dtype: 21 x 128 x 2 = 5,376 B
    "minimax_m3_vl": ((3, 4), (1, 1, 21, 128), 21 * 128 * 2),
    # Mistral Large 4 (no vLLM model): transformers' own keys, 21 x 128 x 4 = 10,752 B
    "mistral_large4": (tuple(range(8)), (1, 21, 128), 21 * 128 * 4),
    # dots3 Note's two DSA layers: vLLM's fp8 keys + a scale per 128: 21 x 132 = 2,772 B
    "dots3_note": ((0, 1), (1, 21, 128), 21 * 132),
}


@pytest.mark.parametrize("name", list(INDEXER_BY_HAND))
def test_indexer_keys_of_the_transformers_5_25_families_by_hand(name):
    layers, shape, kv_bytes = INDEXER_BY_HAND[name]
    T, q, cache = after(name, 20, 1)
    for h, e in zip(held(cache), expected(tiny(name), T, 4), strict=True):
        if e.layer in layers:
            assert h.indexer.shape == shape and h.indexer.storage_bytes == 21 * 128 * 4
            assert e.indexer_bytes == kv_bytes
        else:
            assert h.indexer is None and e.indexer_bytes == 0
    # Kolibri 1.1's indexer scores the layer's own keys: no indexer keys anywhere
    assert all(h.indexer is None for h in held(after("kolibri1_1", 20, 1)[2]))


# DeepSeek V4 (allocation.compare_v4, v4_rule). Its m = 128 layers write their first entry at
# T = 128: prompts of 126 (the entry written by a decode step, T = 126..129) and 130 (by the
# prefill, T = 130..133), besides PROMPTS.
@pytest.mark.parametrize("prompt", (126, 130))
@pytest.mark.parametrize("name", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_deepseek_v4_past_its_128_token_windows(name, prompt):
    checked = 0
    for T, q, cache in steps(model(name), prompt, DECODE):
        assert cache.get_seq_length() == T
        assert compare(tiny(name), cache, T, q) == []
        checked += 1
    assert checked == DECODE + 1


def test_deepseek_v4_by_hand_at_21_tokens():
    """Tiny V4-Flash, compress_ratios 0 0 4 128 4 128, W = 8, float32 (b = 4), at T = 21 after a
    decode step (q = 1). Per layer, transformers 5.25.0 against vLLM 0.34.0 (kvlib):

    * window: transformers 21 -> min(21, W - 1) = 7 rows of 512 visible, min(20, 7) + 1 = 8 in
      storage, 8 x 512 x 4 = 16,384 B; on the m = 0 layers keys and values apart (twice),
      on compressed layers one tensor (K = V). vLLM min(21, 8) = 8 entries of 584 B = 4,672 B.
    * m = 4: entries floor(21 / 4) = 5 x 512 x 4 = 10,240 B against 5 x 584 = 2,920 B; indexer
      keys 5 x 128 x 4 = 2,560 B against 5 x 132 = 660 B; the compressor: buffers 21 mod 4 = 1
      token of kv and gate, 2 x 1 x 1,024 x 4 = 8,192 B, and the overlap, kv and gate of the
      last window's 4 tokens x 512, 16,384 B (24,576 B), against vLLM's 2 x 4 = 8 slots of
      2 x 2 x 512 fp32, 65,536 B; the indexer's compressor 2,048 + 4,096 = 6,144 B against
      8 x 2 x 2 x 128 x 4 = 16,384 B.
    * m = 128: no entry yet (21 < 128); buffers 21 mod 128 = 21 tokens of kv and gate,
      2 x 21 x 512 x 4 = 86,016 B, and vLLM's min(21, 128) = 21 slots of 2 x 512 fp32: the same
      86,016 B, until T passes 128 (then T mod 128 against 128 slots).

    The dtype: transformers keeps every tensor in the model dtype (here float32; the overlap
    gates in float32 whatever it is, gate + the float32 position_bias, modeling_deepseek_v4.py
    :628, :657), vLLM its 584-byte fp8_ds_mla entries (attention.py:837-839), 132-byte indexer
    keys (:983-986) and float32 states (compressor.py:269, :298-299). The buffers: transformers
    keeps the T mod m tokens not yet compressed (modeling_deepseek_v4.py:221-222) and on m = 4
    the last window's first half (:296-297); vLLM a ring of coff x m slots (compressor.py:159-160).
    """
    T, q, cache = after("deepseek-v4-flash", 20, 1)
    assert (T, q) == (21, 1)
    t = tiny("deepseek-v4-flash")
    got = v4_held(cache, model("deepseek-v4-flash").config)
    assert [h.cls for h in got] == ["DynamicSlidingWindowLayer"] * 2 + [
        "DeepseekV4CSACache", "DeepseekV4HCACache"] * 2
    assert [h.m for h in got] == t["compress_ratios"] == [0, 0, 4, 128, 4, 128]
    for h in got:
        assert h.keys == (1, 1, 7, 512) and h.shared == bool(h.m)
        assert h.window_storage_bytes == (1 if h.m else 2) * 16384
    p2, p3 = got[2].parts, got[3].parts
    assert {k: (v.shape, v.storage_bytes) for k, v in p2.items()} == {
        "compressed_kv[compressor]": ((1, 5, 512), 10240),
        "compressed_kv[indexer]": ((1, 5, 128), 2560),
        "buffer_kv[compressor]": ((1, 1, 1024), 4096),
        "buffer_gate[compressor]": ((1, 1, 1024), 4096),
        "buffer_kv[indexer]": ((1, 1, 256), 1024), "buffer_gate[indexer]": ((1, 1, 256), 1024),
        "overlap_kv[compressor]": ((1, 4, 512), 8192),
        "overlap_gate[compressor]": ((1, 4, 512), 8192),
        "overlap_kv[indexer]": ((1, 4, 128), 2048), "overlap_gate[indexer]": ((1, 4, 128), 2048)}
    assert {k: (v.shape, v.storage_bytes) for k, v in p3.items()} == {
        "compressed_kv[compressor]": ((1, 0, 512), 0),
        "buffer_kv[compressor]": ((1, 21, 512), 43008),
        "buffer_gate[compressor]": ((1, 21, 512), 43008)}
    # vLLM's bytes, from its code, and kvlib's groups per layer
    assert vllm_v4_entry_bytes(512, 64) == 448 + 2 * 64 + 8 == 584
    assert (vllm_v4_state_bytes(4, 512, 21), vllm_v4_state_bytes(4, 128, 21),
            vllm_v4_state_bytes(128, 512, 21)) == (65536, 16384, 86016)
    assert v4_rule(4, 8, 21, 1) == {"window": 7, "window_storage": 8, "entries": 5,
                                    "buffered": 1, "buffered_storage": 1, "overlap": 4}
    assert v4_rule(128, 8, 21, 1)["buffered"] == 21 and v4_rule(128, 8, 129, 1) == {
        "window": 7, "window_storage": 8, "entries": 1, "buffered": 1, "buffered_storage": 1,
        "overlap": 0}
    assert v4_rule(4, 8, 20, 20)["buffered_storage"] == 20  # after a prefill: the whole step
    groups = {(g.kind.value, g.attention, g.window, g.ratio, g.sizes.get("d_c")):
              g.bytes_per_sequence(T, 1) // g.layers for g in parse_config(t).groups()}
    assert groups == {("sliding", "V4 entry", 8, None, 512): 4672,
                      ("compressed", "V4 entry", None, 4, 512): 2920,
                      ("compressed", "Indexer", None, 4, None): 660,
                      ("sliding", "Compressor state", 8, None, 1024): 65536,
                      ("sliding", "Compressor state", 8, None, 256): 16384,
                      ("compressed", "V4 entry", None, 128, 512): 0,
                      ("sliding", "Compressor state", 128, None, 512): 86016}
    assert compare(t, cache, T, q) == []


def test_control_deepseek_v4_partial_window_counted_as_an_entry_is_caught(monkeypatch):
    """ceil(T / m) compressed entries instead of floor(T / m): at T = 21 the m = 4 layers'
    entries and indexer keys (6 against 5) and the m = 128 layers' entry (1 against 0)."""
    from kvlib.models.spec import LayerGroup

    plain = LayerGroup.cached_tokens
    monkeypatch.setattr(LayerGroup, "cached_tokens", lambda self, T: -(-T // self.ratio)
                        if self.ratio else plain(self, T))
    T, q, cache = after("deepseek-v4-flash", 20, 1)
    problems = compare(tiny("deepseek-v4-flash"), cache, T, q)
    assert [p.split(":")[0] for p in problems] == ["layer 2 at T=21"] * 2 + ["layer 3 at T=21"] \
        + ["layer 4 at T=21"] * 2 + ["layer 5 at T=21"]
    assert "compressed entries: vLLM keeps 2920 B" in problems[0] and "3504.0 B" in problems[0]


def test_control_deepseek_v4_state_ring_without_overlap_is_caught(monkeypatch):
    """The m = 4 compressors' state over m slots instead of vLLM's coff x m = 8: reported on
    both m = 4 layers, for the main and the indexer's compressor."""
    import kvlib.models.readers.deepseek_v4 as v4
    from kvlib.models.readers import reading

    real_layer = reading.layer

    def one_coff(kind, attention, window=None, **sizes):
        if attention == "Compressor state" and window == 8:
            window, sizes = 4, {**sizes, "d_c": sizes["d_c"] // 2}
        return real_layer(kind, attention, window, **sizes)

    monkeypatch.setattr(v4, "layer", one_coff)
    T, q, cache = after("deepseek-v4-flash", 20, 1)
    problems = compare(tiny("deepseek-v4-flash"), cache, T, q)
    assert [p.split(":")[0] for p in problems[:4]] == ["layer 2 at T=21"] * 2 \
        + ["layer 4 at T=21"] * 2
    assert all("kvlib has no group for the" in p for p in problems[:4])


# Inkling (allocation.conv_window_rule, cache_layer_sources) at T = 21 after a decode step,
# float32 (b = 4). Per layer: (class, K/V elements visible, K/V storage B, the four conv states'
# channels, their storage B, kvlib's K/V B, kvlib's conv window B).
INKLING_BY_HAND = {
    # Inkling: sliding layers 4 KV heads x 16 (swa_*), K and V: 128 per token, visible
    # min(21, W - 1) = 7 rows, stored 8, kvlib 8 x 128 x 4 = 4,096 B; the full layer 2 x 16 x 2
    # = 64 per token, 21 of them. Conv states [1, C, 4] float32: K and V N_g x 16 wide, the
    # attention and MLP outputs hidden_size 128 wide. vLLM (kvlib): per KV head
    # pow2(2 x 16 + 2 x 128 / N_g), sliding 4 x pow2(96) = 4 x 128, full 2 x pow2(160) =
    # 2 x 256: 512 both, 4 rows in bf16 = 4,096 B; transformers 384 x 4 x 4 = 6,144 B (sliding),
    # 320 x 4 x 4 = 5,120 B (full).
    "inkling": [
        (0, "LinearAttentionAndSlidingWindowAttentionLayer", 7 * 128, 8 * 128 * 4,
         (64, 64, 128, 128), 384 * 4 * 4, 8 * 128 * 4, 4 * 512 * 2),
        (5, "LinearAttentionAndFullAttentionLayer", 21 * 64, 21 * 64 * 4,
         (32, 32, 128, 128), 320 * 4 * 4, 21 * 64 * 4, 4 * 512 * 2)],
    # Inkling 2: 2 KV heads x 16 on both kinds; conv 32 + 32 + 96 + 96 = 256 per token, counted
    # as transformers keeps it: 4 x 256 x 4 = 4,096 B in both.
    "inkling2": [
        (0, "LinearAttentionAndSlidingWindowAttentionLayer", 7 * 64, 8 * 64 * 4,
         (32, 32, 96, 96), 256 * 4 * 4, 8 * 64 * 4, 4 * 256 * 4),
        (5, "LinearAttentionAndFullAttentionLayer", 21 * 64, 21 * 64 * 4,
         (32, 32, 96, 96), 256 * 4 * 4, 21 * 64 * 4, 4 * 256 * 4)],
    # Inkling 2 Loop: hidden 48, conv 32 + 32 + 48 + 48 = 160; layers 2-5 loop three times, so
    # cache layers 6-9 and 10-13 are their second and third passes: 9 and 13 the full layer's.
    "inkling2_loop": [
        (2, "LinearAttentionAndSlidingWindowAttentionLayer", 7 * 64, 8 * 64 * 4,
         (32, 32, 48, 48), 160 * 4 * 4, 8 * 64 * 4, 4 * 160 * 4),
        (9, "LinearAttentionAndFullAttentionLayer", 21 * 64, 21 * 64 * 4,
         (32, 32, 48, 48), 160 * 4 * 4, 21 * 64 * 4, 4 * 160 * 4),
        (13, "LinearAttentionAndFullAttentionLayer", 21 * 64, 21 * 64 * 4,
         (32, 32, 48, 48), 160 * 4 * 4, 21 * 64 * 4, 4 * 160 * 4)],
}
# kvlib's whole cache at T = 21, b = 4: attention + conv windows (ModelSpec), by hand.
INKLING_TOTALS = {
    "inkling": 21 * 64 * 4 + 5 * 8 * 128 * 4 + 6 * 4 * 512 * 2,  # 5,376 + 20,480 + 24,576
    "inkling2": 21 * 64 * 4 + 5 * 8 * 64 * 4 + 6 * 4 * 256 * 4,  # 5,376 + 10,240 + 24,576
    # 3 full and 11 sliding cache layers, 14 conv windows: 16,128 + 22,528 + 35,840
    "inkling2_loop": 3 * 21 * 64 * 4 + 11 * 8 * 64 * 4 + 14 * 4 * 160 * 4,
}


@pytest.mark.parametrize("name", list(INKLING_BY_HAND))
def test_inkling_by_hand_at_21_tokens(name):
    T, q, cache = after(name, 20, 1)
    assert (T, q) == (21, 1)
    t = tiny(name)
    got = held(cache)
    by_layer = expected(t, T, 4)
    sources = cache_layer_sources(t, len(by_layer))
    assert len(got) == len(sources) == {"inkling2_loop": 14}.get(name, 6)
    for layer, cls, kv_elements, kv_storage, channels, conv_storage, kv_bytes, conv_bytes \
            in INKLING_BY_HAND[name]:
        h, e = got[layer], by_layer[sources[layer]]
        assert h.cls == cls and h.elements == kv_elements and h.storage_bytes == kv_storage
        assert tuple(p.shape for p in h.convs) == tuple((1, c, 4) for c in channels)
        assert all(p.element_size == 4 for p in h.convs)
        assert sum(p.storage_bytes for p in h.convs) == conv_storage
        assert e.bytes == kv_bytes
        r = conv_window_rule(name, channels, 4, h.shapes[0][1], T)
        assert r["bytes"] == conv_bytes and r["width"] == sum(channels)
    assert read_config(t).kv_bytes_per_sequence(T, 4) == INKLING_TOTALS[name]
    assert compare(t, cache, T, q) == []


def test_inkling_loop_passes_by_hand():
    """Tiny Inkling 2 Loop: 6 layers, layers 2-5 looped 3 times; transformers appends a copy of
    the looped caches per pass after the first (modeling_inkling2_loop.py:1398-1401)."""
    t = tiny("inkling2_loop")
    assert cache_layer_sources(t, 6) == [0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 2, 3, 4, 5]
    assert cache_layer_sources(tiny("inkling2"), 6) == list(range(6))


def test_inkling_conv_rule_by_hand():
    """vLLM 0.34.0's padded row (sconv_swa_attn.py:150-157) at Inkling's real widths: full 8 KV
    heads x pow2(2 x 128 + 2 x 6144 / 8 = 1792) = 8 x 2048; sliding 16 x pow2(1024) = 16 x
    1024: 16,384 both; before padding 14,336 and 16,384. Inkling 2 is counted unpadded."""
    assert vllm_inkling_row(2 * 8 * 128 + 2 * 6144, 8) == 16384
    assert vllm_inkling_row(2 * 16 * 128 + 2 * 6144, 16) == 16384
    full = conv_window_rule("inkling", (1024, 1024, 6144, 6144), 4, 8, 100)
    assert (full["width"], full["d_w"], full["b"], full["bytes"]) == (14336, 16384, 2, 131072)
    two = conv_window_rule("inkling2", (1024, 1024, 4608, 4608), 4, 8, 100)
    assert (two["width"], two["d_w"], two["b"], two["bytes"]) == (11264, 11264, 4, 180224)
    # below the kernel vLLM holds T rows, transformers K (zero-padded)
    assert conv_window_rule("inkling2", (32, 32, 96, 96), 4, 2, 2)["rows"] == 2


def test_inkling_below_the_kernel_and_in_bfloat16():
    """T = 2 < K = 4: transformers' conv states are already K = 4 rows (the prefill
    zero-padded), kvlib's window 2 rows: 4 x 256 x 4 = 4,096 B against 2 x 256 x 4 = 2,048 B per
    layer. In bfloat16 K and V are 2 B per element, the conv states still float32 (4 B), and
    Inkling's vLLM row bf16 whatever the model dtype: the rule holds in both."""
    T, q, cache = after("inkling2", 2, 0)
    h = held(cache)[0]
    assert [p.shape for p in h.convs] == [(1, 32, 4), (1, 32, 4), (1, 96, 4), (1, 96, 4)]
    assert sum(p.storage_bytes for p in h.convs) == 4096
    conv = [g for g in parse_config(tiny("inkling2")).groups()
            if g.attention == "Short-conv window"]
    assert len(conv) == 1 and conv[0].bytes_per_sequence(2, 4) == 6 * 2048
    assert compare(tiny("inkling2"), cache, T, q) == []
    T, q, cache = after("inkling", 20, 1, dtype=torch.bfloat16)
    got = held(cache)
    assert {h.element_size for h in got} == {2}
    assert {p.element_size for h in got for p in h.convs} == {4}
    assert compare(tiny("inkling"), cache, T, q) == []


def test_control_inkling_conv_window_unpadded_is_caught(monkeypatch):
    """vLLM's power-of-two padding dropped (d_w = 2 N_g d + 2 hidden, 384 sliding and 320
    full): every layer's conv states find no kvlib window of vLLM's 512."""
    import kvlib.models.readers.inkling as inkling

    monkeypatch.setattr(inkling, "vllm_row_width", lambda n_g, d, hidden: 2 * n_g * d + 2 * hidden)
    T, q, cache = after("inkling", 11, 1)
    problems = compare(tiny("inkling"), cache, T, q)
    assert [p.split(":")[0] for p in problems[:6]] == [f"layer {i} at T=12" for i in range(6)]
    assert all("make d_w = 512 at b = 2; kvlib has no such" in p for p in problems[:6])


def test_control_inkling_loop_passes_ignored_is_caught(monkeypatch):
    """loop_num_passes read as 1: kvlib counts 6 cache layers where transformers keeps 14."""
    import kvlib.models.readers.inkling2_loop as inkling2_loop

    real_loop = inkling2_loop.loop
    monkeypatch.setattr(inkling2_loop, "loop",
                        lambda c, n, notes: (*real_loop(c, n, notes)[:2], 1))
    T, q, cache = after("inkling2_loop", 11, 1)
    problems = compare(tiny("inkling2_loop"), cache, T, q)
    assert any("spans 6 layers, transformers' conv states give it 14" in p for p in problems)
    assert any(p.startswith("ModelSpec.kv_bytes_per_sequence(12)") for p in problems)


def test_control_inkling_swa_heads_ignored_is_caught(monkeypatch):
    """The sliding layers read with the full layers' heads (2 KV heads, not swa's 4): the five
    sliding layers are reported on their K and V."""
    import kvlib.models.readers.inkling as inkling

    real_heads = inkling._heads
    monkeypatch.setattr(inkling, "_heads",
                        lambda c, local: (real_heads(c, local), real_heads(c, False))[1])
    T, q, cache = after("inkling", 11, 1)
    problems = compare(tiny("inkling"), cache, T, q)
    where = sorted({p.split(":")[0] for p in problems})
    assert where == [f"layer {i} at T=12" for i in range(5)]
    assert "transformers' K, V shapes ((1, 4, 7, 16)" in problems[0]


def test_control_dots3_dsa_latent_unpadded_is_caught(monkeypatch):
    """kvlib's DSA width and vLLM's padded entry disagreeing is reported: here the stated rule
    is made the layer's own width (64 + 8), against kvlib's padded 128 + 8."""
    import allocation

    T, q, cache = after("dots3_note", 11, 1)
    t = tiny("dots3_note")
    monkeypatch.setattr(allocation, "vllm_dots3_padding",
                        lambda tiny: {"d_L": tiny["kv_lora_rank"], "d_R": tiny["qk_rope_head_dim"]})
    problems = compare(t, cache, T, q)
    assert [p.split(":")[0] for p in problems] == ["layer 0 at T=12", "layer 1 at T=12"]
    assert all("not vLLM's padded entry" in p for p in problems)


def test_glm5_caches_no_expanded_keys_or_values():
    """transformers 5.24.0's GlmMoeDsaAttention caches the latent, not K and V per head.

    Expanded (what the project's notes describe for an earlier transformers GLM-5 file):
    4 heads x (qk_head_dim 24 + v_head_dim 16) = 160 elements per token per layer; cached:
    kv_lora_rank + qk_rope_head_dim = 72, what vLLM keeps (MLA, one latent "head").
    """
    t = tiny("glm-5.1")
    assert (t["num_attention_heads"], t["qk_head_dim"], t["v_head_dim"], t["head_dim"]) \
        == (4, 24, 16, 8)
    T, q, cache = after("glm-5.1", 11, 1)
    for h in held(cache):
        assert h.elements == 12 * (64 + 8) != 12 * 4 * (24 + 16)


def test_vllm_state_dtypes_by_hand():
    assert vllm_state_dtypes({"model_type": "qwen3_next", "torch_dtype": "bfloat16"},
                             torch.float32) == (2, 2)
    assert vllm_state_dtypes({"model_type": "nemotron_h", "torch_dtype": "bfloat16"},
                             torch.bfloat16) == (2, 4)  # NemotronH: float32 SSM by default
    assert vllm_state_dtypes({"model_type": "nemotron_h", "dtype": "bfloat16",
                              "mamba_ssm_cache_dtype": "bfloat16"}, torch.bfloat16) == (2, 2)
    assert vllm_state_dtypes({"model_type": "jamba", "dtype": None}, torch.bfloat16) == (2, 2)
    # Qwen3.5: the config's mamba_ssm_dtype (Qwen3_5ForConditionalGenerationConfig), else auto
    assert vllm_state_dtypes({"model_type": "qwen3_5_moe_text", "dtype": "bfloat16",
                              "mamba_ssm_dtype": "float32"}, torch.bfloat16) == (2, 4)
    assert vllm_state_dtypes({"model_type": "qwen3_5_text", "dtype": "bfloat16"},
                             torch.bfloat16) == (2, 2)
    # Kimi Linear's KDA: kda_state_dtype, "auto" = float32 for the recurrent state
    assert vllm_state_dtypes({"model_type": "kimi_linear", "dtype": "bfloat16"},
                             torch.bfloat16) == (2, 4)


def test_nemotron_h_attention_head_dim_is_not_read_by_transformers():
    """Why the shrinking rule writes head_dim: transformers 5.24 ignores attention_head_dim,
    and its default head_dim (128) is what the 56B's attention_head_dim says."""
    real = bundled_config("nemotron-h-56b")
    fields = {k: v for k, v in real.items() if k not in ("model_type", "time_step_limit")}
    fields["attention_head_dim"] = 64
    assert AutoConfig.for_model("nemotron_h", **fields).head_dim == 128
    t = tiny("nemotron-h-56b")
    assert t["head_dim"] == 16 and "attention_head_dim" not in t


def test_unsupported_families_are_named():
    reason = unsupported("llama-3.3-nemotron-super-49b")
    assert reason and "'nemotron-nas'" in reason and "trust_remote_code" in reason
    v4 = [n for n in NAMES if n.startswith("deepseek-v4")]
    assert v4 == ["deepseek-v4-flash", "deepseek-v4-pro"]  # compared (allocation.compare_v4)
    assert [n for n in NAMES if unsupported(n)] == ["llama-3.3-nemotron-super-49b"]


def test_right_after_a_prefill_a_sliding_layer_keeps_the_whole_prompt_alive():
    """Gemma 3 at T = 20 (prefill only): 7 tokens visible, 20 in storage, kvlib says 8."""
    T, q, cache = after("gemma-3-27b", 20, 0)
    assert (T, q) == (20, 20)
    layer0, want0 = held(cache)[0], expected(tiny("gemma-3-27b"), 20, 4)[0]
    assert layer0.shapes == ((1, 2, 7, 16), (1, 2, 7, 16))
    assert layer0.storage_bytes == 2 * 20 * 2 * 16 * 4
    assert (want0.tokens, want0.bytes) == (8, 8 * 64 * 4)
    assert transformers_tokens(CacheKind.SLIDING, WINDOW, 20, 20) == (7, 20)
    assert compare(tiny("gemma-3-27b"), cache, T, q) == []


def test_mla_caches_the_latent_and_the_rope_key():
    """DeepSeek V3 in transformers 5.24: keys = latent (d_L = 64), values = RoPE key (d_R = 8)."""
    T, q, cache = after("deepseek-v3", 11, 1)
    for h in held(cache):
        assert h.shapes == ((1, 1, 12, 64), (1, 1, 12, 8))
        assert h.elements == 12 * (64 + 8)


def test_bfloat16_is_counted_at_two_bytes():
    T, q, cache = after("llama-3.1-8b", 20, 1, dtype=torch.bfloat16)
    got = held(cache)
    assert got[0].element_size == 2 and got[0].storage_bytes == 21 * 64 * 2
    assert compare(tiny("llama-3.1-8b"), cache, T, q) == []


def test_transformers_rule_by_hand():
    assert rule(CacheKind.FULL, None, 21, 1) == (0, 0)
    assert rule(CacheKind.LATENT, None, 20, 20) == (0, 0)
    assert rule(CacheKind.SLIDING, 8, 7, 1) == (0, 0)  # below W: transformers = kvlib
    assert rule(CacheKind.SLIDING, 8, 8, 1) == (1, 0)  # at W: one token fewer visible
    assert rule(CacheKind.SLIDING, 8, 20, 20) == (1, 12)  # after a prefill: 20 - 8 more stored
    assert rule(CacheKind.CHUNKED, 12, 14, 1) == (1, 0)
    # The rule is transformers' absolute count minus kvlib's min(T, W):
    for T in range(1, 30):
        for q in (1, T):
            visible, storage = transformers_tokens(CacheKind.SLIDING, 8, T, q)
            fewer, more = rule(CacheKind.SLIDING, 8, T, q)
            assert (visible, storage) == (min(T, 8) - fewer, min(T, 8) + more)
    assert transformers_tokens(CacheKind.FULL, None, 21, 1) == (21, 21)
    assert transformers_tokens(CacheKind.LATENT, None, 21, 1) == (21, 21)
    assert transformers_tokens(CacheKind.SLIDING, 8, 5, 5) == (5, 5)  # below the window
    assert transformers_tokens(CacheKind.SLIDING, 8, 8, 1) == (7, 8)  # at it: one fewer
    assert transformers_tokens(CacheKind.CHUNKED, 12, 14, 1) == (11, 12)


# Positive controls: a deliberately wrong kvlib rule must be reported.

def test_control_wrong_gemma3_period_is_caught(monkeypatch):
    import kvlib.models.readers.gemma3 as gemma3

    monkeypatch.setattr(gemma3, "GEMMA3_PATTERN", 5)  # 4 local : 1 global instead of 5 : 1
    T, q, cache = after("gemma-3-27b", 11, 1)
    problems = compare(tiny("gemma-3-27b"), cache, T, q)
    assert [p.split(":")[0] for p in problems] == ["layer 4 at T=12", "layer 5 at T=12"]
    assert "kvlib reads full" in problems[0] and "DynamicSlidingWindowLayer" in problems[0]


def test_control_sliding_counted_as_full_is_caught(monkeypatch):
    from kvlib.models.spec import LayerGroup

    monkeypatch.setattr(LayerGroup, "cached_tokens", lambda self, T: T)
    T, q, cache = after("mistral-7b-v0.1", 20, 1)
    problems = compare(tiny("mistral-7b-v0.1"), cache, T, q)
    # Both sliding layers, on shapes, visible elements and storage: transformers holds
    # 7 x 64 = 448 elements, the wrong kvlib count less the rule's one token is 20 x 64.
    where = [p.split(":")[0] for p in problems]
    assert where == ["layer 0 at T=21"] * 3 + ["layer 1 at T=21"] * 3
    assert "transformers holds 448 elements" in problems[1] and "= 1280" in problems[1]


def test_control_mla_without_the_rope_key_is_caught(monkeypatch):
    from kvlib.core.formulas import KINDS

    monkeypatch.setitem(KINDS, "MLA+RoPE", KINDS["MLA"])  # the paper's Table 3 view: d_L only
    T, q, cache = after("deepseek-v2", 5, 1)
    assert T == 6
    problems = compare(tiny("deepseek-v2"), cache, T, q)
    assert len(problems) == 2 * 2  # both layers, elements and storage
    assert "transformers holds 432 elements" in problems[0]  # 6 x (64 + 8); kvlib 6 x 64


def test_control_gated_deltanet_counted_as_full_attention_is_caught(monkeypatch):
    import kvlib.models.readers.qwen3_next as qwen3_next

    def every_layer_full(c, n, notes):
        c.touch("full_attention_interval")  # read, as the real _types does (the closed world)
        return ["full_attention"] * n

    monkeypatch.setattr(qwen3_next, "_types", every_layer_full)
    T, q, cache = after("qwen3-next-80b-a3b", 11, 1)
    problems = compare(tiny("qwen3-next-80b-a3b"), cache, T, q)
    # The six Gated DeltaNet layers (0-2, 4-6), on the layer class; layers 3 and 7 agree.
    assert [p.split(":")[0] for p in problems] == [f"layer {i} at T=12" for i in
                                                   (0, 1, 2, 4, 5, 6)]
    assert all("kvlib reads full" in p and "LinearAttentionLayer" in p for p in problems)


def test_control_mamba2_conv_rows_as_d_conv_are_caught(monkeypatch):
    from kvlib.core import state_tables
    from kvlib.core.formulas import STATES, State

    t = state_tables.MAMBA2
    wrong = dataclasses.replace(t, tensors=tuple(
        dataclasses.replace(x, rows=state_tables.d_conv) if x.store == "conv" else x
        for x in t.tensors))  # d_conv rows instead of d_conv - 1
    monkeypatch.setitem(STATES, "Mamba2", State("Mamba2", wrong))
    T, q, cache = after("nemotron-h-56b", 5, 1)
    problems = compare(tiny("nemotron-h-56b"), cache, T, q)
    # The four Mamba2 layers of "M-M-M-M*", once each: 576 channels x 3 rows against 4.
    assert [p.split(":")[0] for p in problems] == [f"layer {i} at T=6" for i in (0, 2, 4, 6)]
    assert "is 1728 elements at d_conv - 1 rows (vLLM); kvlib counts 2304" in problems[0]


def test_control_state_dtype_not_vllms_is_caught(monkeypatch):
    """Qwen3-Next's recurrent state counted in float32 (transformers' dtype, not vLLM's)."""
    import kvlib.models.readers.qwen3_next as qwen3_next

    monkeypatch.setattr(qwen3_next, "model_dtype_bytes", lambda c, notes: 4)
    T, q, cache = after("qwen3-next-80b-a3b", 5, 1)
    problems = compare(tiny("qwen3-next-80b-a3b"), cache, T, q)
    assert len(problems) == 6 and all("(b_c, b_s) = (4, 4) B, vLLM at (2, 2)" in p
                                      for p in problems)


def test_control_qwen3_5_recurrent_state_in_the_model_dtype_is_caught(monkeypatch):
    """Qwen3.5's mamba_ssm_dtype (float32) ignored: the recurrent state counted in bf16."""
    import kvlib.models.readers.qwen3_next as qwen3_next

    monkeypatch.setattr(qwen3_next, "dtype_bytes", lambda c, key, value: 2)
    T, q, cache = after("qwen3.5-35b-a3b", 5, 1)
    problems = compare(tiny("qwen3.5-35b-a3b"), cache, T, q)
    assert [p.split(":")[0] for p in problems] == [f"layer {i} at T=6" for i in
                                                   (0, 1, 2, 4, 5, 6)]
    assert all("(b_c, b_s) = (2, 2) B, vLLM at (2, 4)" in p for p in problems)


def test_control_kimi_linear_layer_lists_read_0_based_are_caught(monkeypatch):
    """linear_attn_config's lists are 1-based: read 0-based, "KKKF" becomes "FKKK"."""
    import kvlib.models.readers.kimi_linear as kimi_linear

    one_based = kimi_linear._layers
    # the reader asks "is i + 1 listed?"; shifting every number up asks "is i listed?"
    monkeypatch.setattr(kimi_linear, "_layers",
                        lambda c, la, key, n: {i + 1 for i in one_based(c, la, key, n)})
    T, q, cache = after("kimi-k3", 5, 1)
    problems = compare(tiny("kimi-k3"), cache, T, q)
    assert [p.split(":")[0] for p in problems] == ["layer 0 at T=6", "layer 3 at T=6"]
    assert "kvlib reads latent" in problems[0] and "LinearAttentionLayer" in problems[0]
    assert "kvlib reads linear" in problems[1] and "DynamicLayer" in problems[1]


def test_control_all_full_is_invisible_while_t_is_below_the_window(monkeypatch):
    """A wrong rule is invisible while T < W: that is why the prompts go above the windows."""
    from kvlib.models.spec import LayerGroup

    monkeypatch.setattr(LayerGroup, "cached_tokens", lambda self, T: T)
    T, q, cache = after("mistral-7b-v0.1", 5, 1)
    assert T < WINDOW and compare(tiny("mistral-7b-v0.1"), cache, T, q) == []


def test_network_is_blocked():
    with pytest.raises(RuntimeError, match="must run offline"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1, never routed
