"""Issue 31, section 3: every published 2025-2026 config we collected, read exactly or refused
by a key the engine data says shapes the cache.

tests/fixtures/configs/corpus-2026.json.gz holds 136 config.json files, each with its source:
every distinct ``model_configs/*_config.json`` ever committed to ai-dynamo/aiconfigurator (repo,
path, commit, git blob id; the newest version of each name), NVFP4 and FP8 re-packagings
included. The expected bytes per token are worked below by a hand formula per family, written
from the config's own numbers and the family's modeling code in vLLM 0.34.0 (cited), not from
kvlib's readers; bf16 (2 B) per element.
"""

import gzip
import json
from fractions import Fraction
from pathlib import Path

import pytest

from kvlib import parse_config, read_config

CORPUS = json.loads(gzip.decompress(
    (Path(__file__).resolve().parent / "fixtures" / "configs" / "corpus-2026.json.gz")
    .read_bytes()))
B = 2


def _text(cfg):
    return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg


def _kv_plain(t, layers, kv=None, d=None, d_v=None):
    """layers x 2 (K and V) x KV heads x head dim x 2 B, K and V widths apart."""
    kv = kv or t.get("num_key_value_heads") or t["num_attention_heads"]
    d = d or t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"]
    return layers * kv * (d + (d_v or d)) * B


def _counts(t):
    """(full, sliding, chunked) layer counts from layer_types."""
    types = t["layer_types"]
    return (sum(x == "full_attention" for x in types), sum(x == "sliding_attention" for x in types),
            sum(x == "chunked_attention" for x in types))


def expected_bytes_per_token(cfg):
    """The hand formula for each family (bytes one token adds, every layer, bf16)."""
    t = _text(cfg)
    mt = t.get("model_type") or cfg["model_type"]
    n = t.get("num_hidden_layers") or len(t.get("layers_block_type", []))
    if mt in ("deepseek_v4", "deepseek_ref"):  # tests/test_deepseek_v4.py: whatever the dtype
        r = t["compress_ratios"][:n]
        n4, n128, d, d_I = r.count(4), r.count(128), t["head_dim"], t["index_head_dim"]
        entry = 448 + 64 * 2 + 8  # fp8_ds_mla: models/deepseek_v4/attention.py:837-839
        # window (every layer, one entry per token), compressor states (per slot), indexer
        # compressor; compressed entries and indexer keys (132 B) once per m tokens
        return (n * entry + n4 * 2 * 2 * d * 4 + n4 * 2 * 2 * d_I * 4 + n128 * 2 * d * 4
                + Fraction(n4 * entry, 4) + Fraction(n128 * entry, 128)
                + Fraction(n4 * (d_I + d_I // 128 * 4), 4))
    if "kv_lora_rank" in t and mt != "kimi_linear":  # MLA: latent + RoPE key per layer
        total = n * (t["kv_lora_rank"] + t["qk_rope_head_dim"]) * B
        if "index_head_dim" in t:  # one fp8 key + one fp32 scale per 128 in each indexer layer
            types = t.get("indexer_types")
            own = types.count("full") if types else n  # utils.py:1019-1055
            total += own * (t["index_head_dim"] + t["index_head_dim"] // 128 * 4)
        return total
    if mt == "mimo_v2_flash":  # mimo_v2.py:419-451: 1 = sliding with swa_* shapes
        p = t["hybrid_layer_pattern"]
        return (_kv_plain(t, p.count(0), t["num_key_value_heads"], t["head_dim"], t["v_head_dim"])
                + _kv_plain(t, p.count(1), t["swa_num_key_value_heads"], t["swa_head_dim"],
                            t.get("swa_v_head_dim")))
    if mt == "gemma4_text":  # full layers: global KV heads of global_head_dim; shared add none
        full, sliding, _ = _counts(t)
        shared = t.get("num_kv_shared_layers") or 0
        types = t["layer_types"][: n - shared]
        full = types.count("full_attention")
        sliding = types.count("sliding_attention")
        g = t.get("num_global_key_value_heads") if t.get("attention_k_eq_v", True) else None
        return (_kv_plain(t, full, g or t["num_key_value_heads"], t.get("global_head_dim", 512))
                + _kv_plain(t, sliding))
    if mt in ("minimax_m3", "minimax_m3_vl"):  # vllm/models/minimax_m3/nvidia/model.py
        # every layer K and V (num_key_value_heads x head_dim); a sparse layer
        # (sparse_attention_freq[i] = 1) adds one bf16 index key of sparse_index_dim per token
        # (common/indexer.py:155-163: MLAAttentionSpec, one head)
        s = t["sparse_attention_config"]
        return _kv_plain(t, n) + sum(s["sparse_attention_freq"]) * s["sparse_index_dim"] * 2
    if mt == "nemotron_h":  # attention layers only ("*" / "attention"); head_dim default 128
        pattern = t.get("layers_block_type") or list(t["hybrid_override_pattern"])
        attn = sum(x in ("*", "attention") for x in pattern)
        return _kv_plain(t, attn, d=t.get("head_dim") or 128)
    if mt == "nemotron-nas":  # block_configs: no-op attention keeps nothing; n_heads_in_group
        total = 0
        for bc in t["block_configs"]:
            a = bc["attention"]
            if not (a.get("no_op") or a.get("replace_with_linear")):
                total += _kv_plain(t, 1, t["num_attention_heads"] // a["n_heads_in_group"])
        return total
    if mt == "kimi_linear":  # MLA only in linear_attn_config.full_attn_layers (1-based)
        return len(t["linear_attn_config"]["full_attn_layers"]) * (
            t["kv_lora_rank"] + t["qk_rope_head_dim"]) * B
    if "full_attention_interval" in t:  # Qwen3-Next: every interval-th layer full attention
        return _kv_plain(t, n // t["full_attention_interval"])
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "qwen3_5_moe"):
        return _kv_plain(t, t["layer_types"].count("full_attention"))  # the rest linear
    if "layer_types" in t:  # full + sliding + chunked: the same shape in each (per token)
        return _kv_plain(t, sum(_counts(t)))
    return _kv_plain(t, n)  # plain GQA / MHA on every layer


# Every file is read now: sgl-project's DeepSeek V4 copies (model_type "deepseek_ref", which
# transformers 5.25.0 does not know) by architectures (DeepseekV4ForCausalLM), as SGLang builds
# them (issue 42 item 3); Muse Glimmer since its qk_scale_factor, which vLLM 0.34.0 reads
# (muse_glimmer.py:889), is known to scale the query only (muse_glimmer.py:15).
READ = sorted(CORPUS)


def test_the_corpus_is_large_and_sourced():
    assert len(CORPUS) >= 100
    for name, entry in CORPUS.items():
        src = entry["source"]
        assert src["repo"] == "ai-dynamo/aiconfigurator" and len(src["commit"]) == 40
        assert len(src["blob"]) == 40 and src["path"].endswith(f"{name}_config.json")


def test_minimax_m3_by_hand():
    """MiniMax M3 (both published files: the text-only one and NVIDIA's NVFP4 wrapper): 60
    layers of 4 KV heads x 128 for K and V, and 57 sparse layers (sparse_attention_freq: three
    0s, then 1s) each with one 128-wide index key in bf16, whatever the KV dtype."""
    kv = 60 * 2 * 4 * 128  # elements per token: 61,440
    index = 57 * 128 * 2  # bytes per token: 14,592
    for name in ("MiniMaxAI--MiniMax-M3", "nvidia--MiniMax-M3-NVFP4"):
        s = read_config(CORPUS[name]["config"])
        assert s.kv_bytes_per_token(2) == kv * 2 + index == 137_472
        assert s.kv_bytes_per_token(1) == kv + index == 76_032  # an fp8 KV cache
        assert s.num_layers == 60


@pytest.mark.parametrize("name", READ)
def test_read_exactly(name):
    cfg = CORPUS[name]["config"]
    s = read_config(cfg)
    assert s.kv_bytes_per_token(B) == expected_bytes_per_token(cfg), s.groups


def test_sglang_s_deepseek_v4_copies_are_read_by_architectures():
    """model_type deepseek_ref, architectures DeepseekV4ForCausalLM: read as deepseek_v4, and
    said."""
    for name in ("sgl-project--DeepSeek-V4-Flash-FP8", "sgl-project--DeepSeek-V4-Pro-FP8"):
        r = parse_config(CORPUS[name]["config"])
        assert r.family == "deepseek_v4" and r.reader == "deepseek_v4"
        assert any(a.startswith("model_type 'deepseek_ref' has no reader; architectures names "
                                "DeepseekV4ForCausalLM") for a in r.assumptions)


def test_muse_glimmer_by_hand():
    """Muse Glimmer 30B: 52 layers, layer_types 13 full and 39 sliding (window 2048), each 2 KV
    heads x 128 for K and V; qk_scale_factor (3.87) scales the query and is no cache key."""
    cfg = CORPUS["meta-models--Muse-Glimmer-30B"]["config"]
    s = read_config(cfg)
    assert s.kv_bytes_per_token(B) == 52 * 2 * 2 * 128 * B == 53_248
    assert [(g.kind.value, g.layers, g.window) for g in s.groups] == [
        ("full", 13, None), ("sliding", 39, 2048)]
