"""kvlib against the cache transformers really allocates, layer by layer (docs/crosscheck.md).

Each bundled model, shrunk (shrink.py), is built with random weights; a prompt of T
tokens is prefilled, then 3 tokens are decoded greedily, and after every forward step the
returned ``DynamicCache`` is compared with kvlib's reading of the same tiny config
(allocation.compare). Prompts of 6, 11 and 20 tokens, each followed by 3 decode steps,
put T below, at and above the 8-token windows (T = 6..9) and the 12-token chunks
(T = 11..14), and well past both (T = 20..23).
"""

from __future__ import annotations

import functools
import socket
import tomllib
from pathlib import Path

import pytest
import torch
import transformers
from allocation import build, compare, expected, held, rule, steps, transformers_tokens
from shrink import CHUNK, WINDOW, shrink

from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.spec import CacheKind

NAMES = list(BUNDLED)
PROMPTS = (6, 11, 20)
DECODE = 3
ROOT = Path(__file__).parents[2]


@functools.cache
def tiny(name: str) -> dict:
    return shrink(bundled_config(name))


@functools.cache
def model(name: str, dtype=torch.float32):
    return build(tiny(name), dtype=dtype)


def after(name: str, prompt: int, decode: int, dtype=torch.float32):
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
    checked = 0
    for T, q, cache in steps(model(name), prompt, DECODE):
        assert cache.get_seq_length() == T
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
}


@pytest.mark.parametrize("name", list(BY_HAND))
def test_by_hand_at_21_tokens(name):
    T, q, cache = after(name, 20, 1)
    assert (T, q) == (21, 1)
    got, want = held(cache), expected(tiny(name), T, 4)
    for layer, cls, tf_elements, kv_elements, storage, kv_bytes in BY_HAND[name]:
        assert got[layer].cls == cls
        assert got[layer].elements == tf_elements
        assert got[layer].storage_bytes == storage
        assert want[layer].elements == kv_elements
        assert want[layer].bytes == kv_bytes


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


def test_control_all_full_is_invisible_while_t_is_below_the_window(monkeypatch):
    """A wrong rule is invisible while T < W: that is why the prompts go above the windows."""
    from kvlib.models.spec import LayerGroup

    monkeypatch.setattr(LayerGroup, "cached_tokens", lambda self, T: T)
    T, q, cache = after("mistral-7b-v0.1", 5, 1)
    assert T < WINDOW and compare(tiny("mistral-7b-v0.1"), cache, T, q) == []


def test_network_is_blocked():
    with pytest.raises(RuntimeError, match="must run offline"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1, never routed
