"""The closed world (issue 23, section 1): every config key is read, known harmless, refused
by name, or listed as ignored; never silently read as full attention.

The probe configs are a plain GQA model of a family kvlib has never seen plus one key from a
published 2025-2026 config (the family named beside it), the case the issue found read as
uniform full attention in 8 of 10 cases.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib import parse_config, read_config
from kvlib.cli import main
from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.readers.closed import shaping_reason, words
from kvlib.models.readers.engine import engine_for, read_by_any

# A plain GQA model: 4 layers, 8 query heads, 2 KV heads of 64 (512 / 8).
PLAIN = {"model_type": "brand_new_lm", "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 2, "hidden_size": 512, "vocab_size": 32000,
         "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 1e6}

# (key, value as a published config writes it, where such a key comes from)
SHAPING = [
    ("hybrid_layer_pattern", [0, 1, 0, 1], "MiMo-V2-Flash-style hybrid pattern"),
    ("swa_num_key_value_heads", 8, "sliding layers with their own KV-head count"),
    ("swa_head_dim", 128, "sliding layers with their own head dim"),
    ("v_head_dim", 128, "a value width other than the key width"),
    ("index_config", {"head_dim": 128, "n_heads": 64}, "a nested sparse-attention indexer"),
    ("dsa_config", {"topk": 2048, "dim": 128}, "DeepSeek-sparse-attention-like settings"),
    ("attention_chunk_size", 8192, "Llama 4 chunked attention"),
    ("linear_attn_config", {"kda_layers": [1, 2], "full_attn_layers": [4]}, "Kimi Linear"),
    ("compress_ratios", [1, 4, 4, 128], "per-layer KV compression ratios"),
    ("kv_sharing_layers", [0, 0, 1, 1], "a KV-sharing list"),
    ("layer_kinds", ["attention", "mamba", "attention", "mamba"], "per-layer kinds"),
    ("mixer_types", ["A", "M", "A", "M"], "a per-layer mixer list under another name"),
    ("blockwise", "AMAM", "a per-layer string pattern with no telling name"),
    ("gdn_num_value_heads", 32, "Gated DeltaNet settings"),
    ("ssm_state_size", 128, "a Mamba SSM state"),
]


def probe(**extra) -> dict:
    return {**PLAIN, **extra}


def test_the_plain_probe_is_read_exactly():
    spec = read_config(probe())
    # 4 layers x 2 (K, V) x 2 KV heads x 64 x 2 B (bf16) = 2,048 B per token
    assert spec.kv_bytes_per_token(2) == 4 * 2 * 2 * 64 * 2
    assert spec.ignored_keys == ()


@pytest.mark.parametrize("key, value, where", SHAPING, ids=[s[0] for s in SHAPING])
def test_a_cache_shaping_key_of_an_unknown_family_is_refused_by_name(key, value, where):
    with pytest.raises(ValueError) as e:
        parse_config(probe(**{key: value}))
    msg = str(e.value)
    assert msg.split("=", 1)[0].split(".")[0] == key and "\n" not in msg
    assert "refuses" in msg


@pytest.mark.parametrize("key, value, where", SHAPING[:10], ids=[s[0] for s in SHAPING[:10]])
def test_the_same_key_in_a_known_family_is_judged_by_the_engine(key, value, where):
    """Llama is a family vLLM knows (issue 31): a key some engine reads where it builds another
    family's layers is refused naming that line; one no engine reads is listed as ignored and
    changes nothing (it was refused by its words before: the bug issue 31 describes)."""
    cfg = {**bundled_config("llama-3.1-8b"), key: value}
    if key in read_by_any():
        other, where = read_by_any()[key]
        with pytest.raises(ValueError, match=rf"^{key}[=.]") as e:
            parse_config(cfg)
        assert where in str(e.value)
    else:
        r = parse_config(cfg)
        assert key in r.ignored
        assert r.groups() == parse_config(bundled_config("llama-3.1-8b")).groups()


def test_a_nested_key_is_named_by_its_path():
    cfg = probe(engine_settings={"threads": 4, "sparse_topk": 2048})
    with pytest.raises(ValueError, match=r"^engine_settings\.sparse_topk=2048: "):
        parse_config(cfg)
    cfg = {"model_type": "wrapper", "text_config": probe(swa_head_dim=64)}
    with pytest.raises(ValueError, match=r"^text_config\.swa_head_dim=64: "):
        parse_config(cfg)


def test_harmless_unknown_keys_are_listed_not_dropped():
    spec = read_config(probe(fancy_gate_temperature=0.7, training_recipe={"lr": 3e-4}))
    assert spec.ignored_keys == ("fancy_gate_temperature", "training_recipe")
    assert spec.kv_bytes_per_token(2) == 4 * 2 * 2 * 64 * 2  # unchanged


def test_known_harmless_keys_are_not_listed():
    """Token ids, dropout, norms, RoPE, MoE routing: known not to shape the cache."""
    spec = read_config(probe(pad_token_id=0, attention_dropout=0.0, layer_norm_epsilon=1e-5,
                             rope_scaling={"type": "yarn", "factor": 4.0},
                             num_experts_per_tok=8, moe_layer_freq=1, mlp_only_layers=[],
                             hidden_act="silu", quantization_config={"quant_method": "fp8"}))
    assert spec.ignored_keys == ()


@pytest.mark.parametrize("command", [["estimate"], ["plan", "--gpu", "H200", "--params", "1e9"]])
def test_estimate_and_plan_list_ignored_keys_in_text_and_json(tmp_path, capsys, command):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(probe(fancy_gate_temperature=0.7)))
    assert main([command[0], str(path), "--context", "4096", *command[1:]]) == 0
    text = capsys.readouterr().out
    assert "ignored keys" in text and "fancy_gate_temperature" in text
    assert main([command[0], str(path), "--context", "4096", *command[1:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ignored_keys"] == ["fancy_gate_temperature"]


def test_a_refusal_from_the_cli_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(probe(swa_num_key_value_heads=8)))
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "swa_num_key_value_heads=8" in err


def test_words_split_snake_and_camel_case():
    assert words("numKVHeads") == ["num", "kv", "heads"]
    assert words("swa_head_dim") == ["swa", "head", "dim"]


@pytest.mark.parametrize("key", ["global_kv_heads", "local_window", "nope_dim", "qk_dim",
                                 "mla_rank", "kv_lora", "latentDim", "sparseTopK", "n_groups",
                                 "cache_dtype", "attn_sink_tokens", "memory_slots"])
def test_unlisted_shaping_names_are_caught_by_their_words(key):
    assert shaping_reason(key, 1, 4) is not None


@pytest.mark.parametrize("key", ["fancy_gate_temperature", "training_recipe", "lr", "seed"])
def test_plain_names_with_scalar_values_are_not(key):
    assert shaping_reason(key, 0.5, 4) is None
    assert shaping_reason(key, "gelu", 4) is None  # a word as long as the model is deep


@pytest.mark.parametrize("value", ["AMAM", "M*M*", "-*-*", [0, 1, 0, 1]])
def test_one_value_per_layer_is_a_pattern(value):
    assert shaping_reason("fancy", value, 4) == "it holds one value for each of the 4 layers"


# Names that may shape the cache, drawn from the shaping words, and values of every JSON kind.
_SHAPING_NAMES = st.builds(
    lambda pre, word, post: "_".join(p for p in (pre, word, post) if p),
    st.sampled_from(["", "num", "swa", "extra", "my", "n"]),
    st.sampled_from(["window", "chunk", "sparse", "index", "linear", "state", "conv", "heads",
                     "kv", "layer_types", "pattern", "compress_ratio", "shared_layers", "dim",
                     "head_dim", "rank", "mamba", "ssm", "hybrid", "block", "types"]),
    st.sampled_from(["", "size", "dim", "heads", "list", "config", "pattern", "count"]),
)
_VALUES = st.one_of(st.integers(1, 4096), st.booleans(), st.text(min_size=1, max_size=6),
                    st.lists(st.integers(0, 3), min_size=1, max_size=6),
                    st.dictionaries(st.sampled_from(["a", "dim", "n"]), st.integers(1, 8),
                                    min_size=1, max_size=2))


def _meaning(cfg):
    r = parse_config(cfg)
    return r.groups()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(BUNDLED)), _SHAPING_NAMES, _VALUES)
def test_adding_a_cache_shaping_key_never_silently_changes_a_reading(name, key, value):
    """Either refused naming the key, or the reading is unchanged, or the reader read the key
    and said so in its notes (a key the family's own rules define): never a silent change."""
    cfg = bundled_config(name)
    before = _meaning(cfg)
    target = cfg["text_config"] if "text_config" in cfg else cfg
    if key in target:
        return  # not an addition
    changed = json.loads(json.dumps(cfg))
    (changed["text_config"] if "text_config" in changed else changed)[key] = value
    try:
        reading = parse_config(changed)
    except ValueError as e:
        assert key in str(e) and "\n" not in str(e)
        return
    if reading.groups() != before:
        assert any(key in note for note in reading.assumptions), (key, value)
    elif key in reading.ignored:  # issue 31: ignored only where no engine path reads it
        engine = engine_for(reading.family)
        if engine is None:
            assert shaping_reason(key, value, reading.num_layers) is None
        else:
            assert key not in engine.keys


# --- "an upper bound", said only where it is one ----------------------------------------------

@settings(max_examples=200, deadline=None)
@given(layers=st.integers(1, 12), kv=st.sampled_from([1, 2, 4]), window=st.integers(1, 4096),
       context=st.integers(1, 65536), slides=st.lists(st.booleans(), min_size=12, max_size=12))
def test_an_ignored_window_is_an_upper_bound_per_sequence_and_exact_per_token(
        layers, kv, window, context, slides):
    """An unknown family's sliding_window is ignored (every layer full): whichever layers the
    window really applies to, per token the reading is the same, per sequence at least as much."""
    cfg = {**PLAIN, "num_hidden_layers": layers, "num_key_value_heads": kv,
           "sliding_window": window}
    spec = read_config(cfg)
    assert any("upper bound" in a for a in spec.assumptions)
    real = {**cfg, "layer_types": ["sliding_attention" if s else "full_attention"
                                   for s in slides[:layers]]}
    truth = read_config(real)
    per_layer = 2 * kv * 64 * 2  # K and V, 64-wide heads, bf16
    assert spec.kv_bytes_per_token(2) == truth.kv_bytes_per_token(2) == layers * per_layer
    assert spec.kv_bytes_per_sequence(context, 2) >= truth.kv_bytes_per_sequence(context, 2)
    assert spec.kv_bytes_per_sequence(context, 2) == layers * per_layer * context


def test_upper_bound_is_said_nowhere_else():
    """Only the ignored-window note says 'upper bound': no other reading claims one."""
    from kvlib.models.catalog import BUNDLED, load_model

    for name in BUNDLED:
        assert not any("upper bound" in a for a in load_model(name).assumptions), name


# --- found by a fresh-eyes review: shaping words behind harmless-looking words -------------------

@pytest.mark.parametrize("key, value", [
    ("expert_kv_heads", 2), ("vision_kv_heads", 2), ("rope_kv_dim", 64), ("mtp_window", 64),
    ("rope_scaling", {"rope_type": "default", "sliding_window": 512}),
    ("ffn_config", {"kv_window": 512}), ("moe_config", {"window": 512}),
    ("is_encoder_decoder", True), ("add_cross_attention", True), ("pruned_heads", {"0": [1]}),
    ("mem_len", 512), ("n_mem", 64), ("num_sink_tokens", 4), ("sink_size", 4),
    ("segment_len", 2048), ("landmark_every", 64), ("full_every", 4), ("dense_every", 4),
    ("num_persistent_tokens", 8), ("gist_tokens", 4),
])
def test_a_strong_cache_word_beats_a_harmless_pattern(key, value):
    with pytest.raises(ValueError) as e:
        parse_config(probe(**{key: value}))
    assert str(e.value).startswith(key) and "\n" not in str(e.value)


@pytest.mark.parametrize("key, value", [
    ("_attn_implementation_autoset", True), ("do_layer_norm_before", True),
    ("word_embed_proj_dim", 512), ("layernorm_embedding", True), ("norm_head", True),
    ("dim_model_base", 256), ("norm_type", "rms"), ("layer_norm_type", "rms"), ("layerdrop", 0.1),
    ("max_seq_len", 4096), ("is_encoder_decoder", False), ("add_cross_attention", False),
    ("pruned_heads", {}), ("mamba_hidden_act", "silu"), ("boi_token_index", 7),
    ("rope_scaling", {"rope_type": "longrope", "long_factor": [1.0] * 4,
                      "short_factor": [1.0] * 4, "original_max_position_embeddings": 4096}),
    ("rope_parameters", {"sliding_attention": {"rope_theta": 1e4}}),
])
def test_real_harmless_keys_are_read_past(key, value):
    spec = read_config(probe(**{key: value}))
    assert spec.kv_bytes_per_token(2) == 4 * 2 * 2 * 64 * 2


def test_a_checkpoint_asking_for_a_quantized_kv_cache_is_said():
    """vLLM's kv_cache_dtype 'auto' takes the checkpoint's kv_cache_scheme (compressed-tensors,
    ModelOpt exports): kvlib says so instead of planning the model dtype silently."""
    q = {"quant_method": "compressed-tensors",
         "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False}}
    spec = read_config(probe(quantization_config=q))
    assert any(a.startswith("quantization_config.kv_cache_scheme=") and "--kv-dtype fp8" in a
               for a in spec.assumptions)
    assert not any("quantized KV" in a for a in read_config(probe()).assumptions)
