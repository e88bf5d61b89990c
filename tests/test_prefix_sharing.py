"""kvlib.serving.prefix_sharing: sessions sharing a system prompt, in vLLM's whole blocks,
against hand arithmetic."""

import pytest

from kvlib.models.catalog import load_model
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.prefix_sharing import (
    prefix_sharing,
    sessions_sharing_prefix,
    shared_prefix_blocks,
)


def test_only_whole_blocks_of_the_prefix_are_shared():
    assert shared_prefix_blocks(1000, 16) == 62   # 62 x 16 = 992; 8 tokens left over
    assert shared_prefix_blocks(1000, 64) == 15   # 15 x 64 = 960
    assert shared_prefix_blocks(15, 16) == 0
    assert shared_prefix_blocks(0, 16) == 0


def test_sessions_by_hand():
    # 1,000 free blocks of 16 tokens; 2,048-token sessions keep 2,047 tokens: 128 blocks each.
    assert sessions_sharing_prefix(1000, 16, 2048, 0) == 7         # 7 x 128 = 896 <= 1,000
    # a 1,000-token prefix: 62 blocks stored once, 128 - 62 = 66 each; (1,000 - 62) // 66 = 14
    assert sessions_sharing_prefix(1000, 16, 2048, 1000) == 14
    assert 62 + 14 * 66 <= 1000 < 62 + 15 * 66
    assert sessions_sharing_prefix(100, 16, 2048, 1000) == 0       # 62 + 66 > 100
    with pytest.raises(ValueError):
        sessions_sharing_prefix(1000, 16, 2048, 2048)


@pytest.mark.parametrize("release, block, whole, shared, sessions", [
    # Llama 3.1 8B, bf16, one GPU: a block holds 32 layers x 8 KV heads x 128 x (K + V) x 2 B
    # = 131,072 B a token. 100 GiB = 107,374,182,400 B.
    # 0.34.0, 64-token blocks of 8 MiB: 12,800 blocks, 12,799 past the null block;
    # 8,192-token sessions keep 8,191 tokens = 128 blocks: 12,799 // 128 = 99 alone;
    # a 2,000-token prompt: 31 shared, 97 own: (12,799 - 31) // 97 = 12,768 // 97 = 131.
    ("0.34.0", 64, 128, 31, 131),
    # 0.33.0, 16-token blocks of 2 MiB: 51,200 blocks, 51,199 free; 512 blocks a session:
    # 51,199 // 512 = 99; 125 shared, 387 own: (51,199 - 125) // 387 = 51,074 // 387 = 131.
    ("0.33.0", 16, 512, 125, 131),
])
def test_a_layout_by_hand(release, block, whole, shared, sessions):
    layout = vllm_layout(load_model("llama-3.1-8b"), 8192, "bf16", 1, "H200", release=release)
    assert layout.block_size == block
    assert layout.bytes_per_block == 32 * 8 * 128 * 2 * 2 * block
    got = prefix_sharing(layout, 100 * 2**30, 8192, 2000)
    assert (got.blocks, got.shared, got.own) == (100 * 2**30 // (131_072 * block) - 1, shared,
                                                  whole - shared)
    assert got.alone == 99 and got.sharing == sessions
    assert shared + sessions * (whole - shared) <= got.blocks < shared + (sessions + 1) * (
        whole - shared)


def test_a_window_is_refused_not_guessed():
    layout = vllm_layout(load_model("gemma-3-27b"), 8192, "bf16", 1, "H200")
    with pytest.raises(ValueError, match="sliding"):
        prefix_sharing(layout, 100 * 2**30, 8192, 2000)
