"""Issue 42 item 5: ``kvlib plan --shared-prefix TOKENS`` counts a system prompt every request
shares as vLLM's prefix caching (on by default) shares it: whole blocks only ("We only hash
full blocks", v1/core/kv_cache_utils.py:953-995 in 0.34.0), stored once.

Hand-worked, Llama 3.1 8B (32 layers, 8 KV heads, head_dim 128), bf16, one H200, a 100 GiB pool
(--kv-cache-memory), 8,192-token requests:
  a 64-token block is 32 x 8 x 128 x (K + V) x 2 B x 64 = 8,388,608 B; 100 GiB is 12,800
  blocks, 12,799 past the null block; a request keeps its 8,191 cached tokens in 128 blocks
  (and 128 at its prefill's peak). Without sharing: 1 + (12,799 - 128) // 128 = 1 + 98 = 99.
  A 2,000-token prefix: floor(2,000 / 64) = 31 whole blocks (1,984 tokens) stored once, 16 tokens
  in each request's own blocks; the first request holds all 128, each other 128 - 31 = 97:
  1 + (12,799 - 128) // 97 = 1 + 12,671 // 97 = 1 + 130 = 131.
"""

import json

import pytest

from kvlib import Deployment, load_model
from kvlib.cli import main
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.prefix_sharing import scheduler_sessions_sharing_prefix

GiB = 2**30
BASE = ["llama-3.1-8b", "--gpu", "H200", "--context", "8K", "--kv-cache-memory", "100GiB"]


def _run(capsys, *argv):
    rc = main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_hand_worked_numbers():
    block = 32 * 8 * 128 * 2 * 2 * 64
    assert block == 8_388_608 and 100 * GiB // block == 12_800
    assert -(-8191 // 64) == 128 and 2000 // 64 == 31 and 2000 - 31 * 64 == 16
    assert 1 + (12_799 - 128) // 128 == 99 and 1 + (12_799 - 128) // 97 == 131
    assert 128 + 130 * 97 <= 12_799 < 128 + 131 * 97


def test_the_plan_counts_the_prefix_once(capsys):
    rc, out, err = _run(capsys, *BASE, "--shared-prefix", "2000", "--json")
    d = json.loads(out)
    assert rc == 0 and err == ""
    assert (d["shared_prefix_tokens"], d["shared_prefix_blocks"]) == (2000, 31)
    assert d["max_sequences_per_replica"] == 131
    assert d["max_sequences_per_replica_without_prefix"] == 99
    assert d["kv_used_bytes_per_gpu"] == (31 + 131 * 97) * 8_388_608
    assert d["kv_used_bytes_per_gpu"] <= 12_799 * 8_388_608
    rc, text, _ = _run(capsys, *BASE, "--shared-prefix", "2K")  # 2,048 = 32 whole blocks
    assert "shared prefix, once (32 blocks)" in text
    assert "    without the shared prefix              99 per replica" in text
    rc, plain, _ = _run(capsys, *BASE, "--json")
    p = json.loads(plain)
    assert p["max_sequences_per_replica"] == 99 and p["shared_prefix_tokens"] == 0
    assert p["max_sequences_per_replica_without_prefix"] is None


@pytest.mark.parametrize("argv, named", [
    (["gemma-3-27b", "--gpu", "H200", "--context", "8K", "--shared-prefix", "2000"], "sliding"),
    (["llama-3.1-8b", "--gpu", "H200", "--context", "2000", "--shared-prefix", "2000"],
     "shorter than the context"),
    (["llama-3.1-8b", "--gpu", "H200", "--context", "8K", "--shared-prefix", "2000", "--engine",
      "sglang"], "a vLLM option"),
    (["llama-3.1-8b", "--gpu", "H200", "--context", "8K", "--shared-prefix", "0"],
     "argument --shared-prefix"),
])
def test_refused_in_one_line_naming_the_option(capsys, argv, named):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "--shared-prefix" in line and named in line


def test_engine_all_says_the_prefix_is_vllms_alone(capsys):
    rc, out, _ = _run(capsys, "llama-3.1-8b", "--gpu", "H200", "--context", "8K",
                      "--shared-prefix", "2000", "--engine", "all")
    assert rc == 0 and "--shared-prefix 2,000: vLLM's column only" in out


@pytest.mark.parametrize("model, context", [("llama-3.1-8b", 8192), ("deepseek-v2", 32768),
                                            ("qwen3-32b", 4096)])
def test_properties_of_the_count(model, context):
    """No prefix is vLLM's own count (VllmLayout.sessions); a longer prefix never holds fewer;
    the blocks the sessions hold fit in the pool less the null block."""
    layout = vllm_layout(load_model(model), context, "bf16", 1, "H200")
    budget = 60 * GiB
    free = layout.num_blocks(budget) - 1
    hold = layout.holding(context)
    assert scheduler_sessions_sharing_prefix(layout, budget, context, 0) == (
        layout.sessions(budget, context), 0)
    last = 0
    for prefix in range(0, context, max(1, context // 37)):
        n, shared = scheduler_sessions_sharing_prefix(layout, budget, context, prefix)
        assert n >= last
        last = n
        if n and n < layout.max_num_seqs:
            assert hold.prefill + (n - 1) * (hold.decode - shared) <= free
            assert hold.prefill + n * (hold.decode - shared) > free


def test_the_library_call_is_the_commands():
    dep = Deployment(load_model("llama-3.1-8b"), "H200", kv_cache_memory=100 * GiB)
    p = dep.plan(8192, shared_prefix=2000)
    assert (p.max_sequences_per_replica, p.shared_prefix_blocks) == (131, 31)
    assert any(n.startswith("shared prefix: every request begins with the same 2,000 tokens")
               for n in p.notes)
