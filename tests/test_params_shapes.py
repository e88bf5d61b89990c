"""kvlib.models.params_shapes: hand counts of five published shapes, the table's rules, and
the errors (issue 42). The comparison with transformers' own model of every family in the
table is tests/crosscheck/test_params_shapes_meta.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.models.params import ParamCount, count_params
from kvlib.models.params_shapes import SHAPES, count_by_shape

# OLMo-2-1124-7B's config.json (allenai/OLMo-2-1124-7B): no head_dim, no bias, head untied
OLMO2_7B = {"model_type": "olmo2", "vocab_size": 100352, "hidden_size": 4096,
            "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "attention_bias": False, "tie_word_embeddings": False}
# Qwen1.5-MoE-A2.7B's config.json (Qwen/Qwen1.5-MoE-A2.7B)
QWEN15_MOE = {"model_type": "qwen2_moe", "vocab_size": 151936, "hidden_size": 2048,
              "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
              "num_key_value_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
              "decoder_sparse_step": 1, "tie_word_embeddings": False}
# StarCoder2-3B's config.json (bigcode/starcoder2-3b): use_bias true, head tied
STARCODER2_3B = {"model_type": "starcoder2", "vocab_size": 49152, "hidden_size": 3072,
                 "intermediate_size": 12288, "num_hidden_layers": 30,
                 "num_attention_heads": 24, "num_key_value_heads": 2, "use_bias": True}


def test_olmo2_7b_by_hand():
    d, v, i, n = 4096, 100352, 11008, 32
    attention = 4 * d * d + 2 * d           # q, k, v, o (MHA, 32 x 128); q/k norms 32 x 128
    mlp = 3 * d * i                         # gate, up, down
    norms = 2 * d                           # post-attention, post-feedforward
    total = v * d + v * d + n * (attention + mlp + norms) + d
    assert total == 7_298_617_344
    count = count_by_shape(OLMO2_7B)
    assert count.total == total == count.active
    assert count.parts["lm_head"] == v * d
    assert count.parts["norms"] == n * 2 * d + d


def test_qwen15_moe_by_hand():
    d, v, n, e, k, w, s = 2048, 151936, 24, 60, 4, 1408, 5632
    attention = 4 * d * d + 3 * d           # q, k, v with biases (qkv_bias default true), o
    experts = e * 3 * d * w                 # 60 experts: gate, up (d -> 1408), down
    router = e * d + d                      # gate d -> 60, shared_expert_gate d -> 1
    shared = 3 * d * s                      # the shared expert, gated, 5632 wide
    per_layer = attention + experts + router + shared + 2 * d
    total = 2 * v * d + n * per_layer + d
    assert total == 14_315_784_192          # "14.3B" on the model card
    count = count_by_shape(QWEN15_MOE)
    assert count.total == total
    assert count.parts["experts"] == n * experts
    assert count.parts["shared_experts"] == n * shared
    # per token: all but 56 of the 60 routed experts
    assert count.active == total - n * (e - k) * 3 * d * w == 2_689_173_504  # "A2.7B"


def test_starcoder2_3b_by_hand():
    d, v, i, n, h, kv = 3072, 49152, 12288, 30, 24, 2
    hd = d // h                             # 128
    attention = (d * d + d) + 2 * (d * kv * hd + kv * hd) + (d * d + d)  # biased q, k, v, o
    mlp = (d * i + i) + (i * d + d)         # c_fc and c_proj with biases
    norms = 2 * 2 * d                       # two LayerNorms, weight and bias
    total = v * d + n * (attention + mlp + norms) + 2 * d  # head tied; final LayerNorm
    assert total == 3_030_371_328
    count = count_by_shape(STARCODER2_3B)
    assert count.total == total
    assert count.parts["lm_head"] == 0
    assert {x.name for x in count.linears if "layers.0." in x.name} == {
        f"model.layers.0.{m}" for m in ("self_attn.q_proj", "self_attn.k_proj",
                                        "self_attn.v_proj", "self_attn.o_proj",
                                        "mlp.c_fc", "mlp.c_proj")}


def test_not_in_table_is_none():
    assert count_by_shape({"model_type": "llama", "hidden_size": 8}) is None
    assert count_by_shape({"hidden_size": 8}) is None


def test_command_r_head_never_loaded():
    """vLLM 0.34.0's CohereForCausalLM reads the embedding as the head (commandr.py:417):
    an untied Command R file still counts one (V, d) matrix, and says why."""
    cfg = {"model_type": "cohere", "vocab_size": 1000, "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}
    tied = count_by_shape(cfg)
    untied = count_by_shape({**cfg, "tie_word_embeddings": False})
    assert tied.total == untied.total and untied.parts["lm_head"] == 0
    assert any("loads no lm_head" in note and "commandr.py" in note for note in untied.notes)


def test_head_dim_default_is_the_config_class_default():
    """CwmConfig's head_dim defaults to 128 (configuration_cwm.py:81), not hidden / heads."""
    cfg = {"model_type": "cwm", "vocab_size": 10, "hidden_size": 64, "intermediate_size": 8,
           "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1}
    q = next(x for x in count_by_shape(cfg).linears if x.name.endswith("q_proj"))
    assert (q.in_features, q.out_features) == (64, 2 * 128)


@pytest.mark.parametrize("patch, message", [
    ({"vocab_size": None}, "config has no vocab_size"),
    ({"hidden_size": "4k"}, "hidden_size"),
    ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ({"num_experts_per_tok": 61}, "num_experts_per_tok=61 exceeds the 60 experts"),
    ({"mlp_only_layers": [24]}, "mlp_only_layers must list layer indices below 24"),
    ({"num_key_value_heads": 5}, "not a multiple of num_key_value_heads=5"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings must be true or false"),
])
def test_bad_fields_named(patch, message):
    cfg = {k: v for k, v in {**QWEN15_MOE, **patch}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        count_by_shape(cfg)


def test_internlm3_bias_mismatch_refused():
    cfg = {"model_type": "internlm3", "vocab_size": 10, "hidden_size": 64,
           "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
           "qkv_bias": True, "bias": False}
    with pytest.raises(ValueError, match="qkv_bias=True differs from bias=False"):
        count_by_shape(cfg)


def _config(family: str, n: int, d: int, heads: int, kv_div: int) -> dict:
    keys = (("n_embd", "n_layer", "n_head") if family == "gptj" else
            ("hidden_size", "n_layer", "n_head") if family == "bloom" else
            ("hidden_size", "num_hidden_layers", "num_attention_heads"))
    cfg = {"model_type": family, "vocab_size": 96, keys[0]: d, keys[1]: n, keys[2]: heads,
           "num_key_value_heads": heads // kv_div, "intermediate_size": 48,
           "num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 24, "shared_expert_intermediate_size": 40,
           "shared_intermediate_size": 40, "head_dim": 8}
    return cfg


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(SHAPES)), n=st.integers(1, 6),
       heads=st.sampled_from([2, 4, 8]), kv_div=st.sampled_from([1, 2]))
def test_layers_add_the_same_each(family, n, heads, kv_div):
    """Every layer of these families is alike (all MoE or all dense with the defaults
    above): n + 1 layers cost exactly one layer more than n, parts sum to total, linears
    fit in their parts, and active never exceeds total."""
    d = 8 * heads
    one, two = (count_by_shape(_config(family, m, d, heads, kv_div)) for m in (n, n + 1))
    three = count_by_shape(_config(family, n + 2, d, heads, kv_div))
    assert isinstance(one, ParamCount)
    assert three.total - two.total == two.total - one.total > 0
    for c in (one, two, three):
        assert c.total == sum(c.parts.values()) and 0 < c.active <= c.total
        for part in ("attention", "mlp", "experts", "shared_experts", "router", "lm_head"):
            assert sum(x.params for x in c.linears if x.part == part) <= c.parts[part]
        assert (c.active < c.total) == (SHAPES[family].moe is not None)


_TINY = {"vocab_size": 10, "hidden_size": 64, "intermediate_size": 8, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2}


@pytest.mark.parametrize("family, patch, message", [
    ("ernie4_5", {"use_bias": True}, r"use_bias=True \(bool\): transformers gives ERNIE"),
    ("hunyuan_v1_dense", {}, "config has no head_dim"),
    ("ministral", {}, "config has no head_dim"),
    ("nemotron", {"num_key_value_heads": None}, "config has no num_key_value_heads"),
])
def test_refused_where_the_engines_differ_or_cannot_build(family, patch, message):
    cfg = {k: v for k, v in {"model_type": family, **_TINY, **patch}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        count_by_shape(cfg)


def test_exaone_num_layers_and_helium_o_proj():
    """ExaoneConfig reads num_layers as num_hidden_layers (configuration_exaone.py:83-87);
    Helium's o_proj is hidden -> hidden whatever the heads (modeling_helium.py:223)."""
    exaone = {k: v for k, v in _TINY.items() if k != "num_hidden_layers"}
    two = count_by_shape({"model_type": "exaone", **exaone, "num_layers": 2})
    one = count_by_shape({"model_type": "exaone", **exaone, "num_layers": 1})
    per_layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 8 + 2 * 64  # q k v o, MLP, norms
    assert two.total - one.total == per_layer
    helium = count_by_shape({"model_type": "helium", **_TINY, "head_dim": 32})
    o = next(x for x in helium.linears if x.name.endswith("o_proj"))
    q = next(x for x in helium.linears if x.name.endswith("q_proj"))
    assert (o.in_features, o.out_features, q.out_features) == (64, 64, 4 * 32)


def test_solar_open_router_kept_in_fp32_and_shared_experts():
    """Solar Open (modeling_solar_open.py:100-114, 185-196, 383): the router's weight (E, d)
    and its e_score_correction_bias (E,) stay fp32 (Fixed tensors of 4 bytes); one shared
    expert of n_shared_experts x moe_intermediate_size when the file leaves the key out."""
    d, e, w, n = 64, 6, 24, 2
    cfg = {"model_type": "solar_open", "vocab_size": 10, "hidden_size": d,
           "num_hidden_layers": n, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 16, "n_routed_experts": e, "num_experts_per_tok": 2,
           "moe_intermediate_size": w}
    count = count_by_shape(cfg)
    assert [(f.name, f.elements, f.bytes_per) for f in count.fixed[:2]] == [
        ("model.layers.0.mlp.gate.weight", e * d, 4),
        ("model.layers.0.mlp.gate.e_score_correction_bias", e, 4)]
    assert count.parts["router"] == n * (e * d + e)
    assert count.parts["shared_experts"] == n * 3 * d * w      # n_shared_experts: 1
    assert count.parts["experts"] == n * e * 3 * d * w
    assert count.active == count.total - n * (e - 2) * 3 * d * w
    two = count_by_shape({**cfg, "n_shared_experts": 2})
    assert two.parts["shared_experts"] == 2 * count.parts["shared_experts"]


_UNSEEN = Path(__file__).parent / "fixtures" / "configs" / "unseen-2026"


def _unseen(name: str) -> dict:
    return json.loads((_UNSEEN / name).read_text(encoding="utf-8"))


def test_exaone_4_0_32b_by_hand():
    """EXAONE-4.0-32B's config.json (LGAI-EXAONE/EXAONE-4.0-32B): modeling_exaone4.py's
    layer, no biases, q/k norms of head_dim, post-attention and post-feedforward norms only."""
    cfg = _unseen("exaone-4.0-32b.json")
    d, v, i, n, h, kv, hd = 5120, 102400, 27392, 64, 40, 8, 128
    assert (cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"],
            cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["head_dim"], cfg["tie_word_embeddings"]) == (d, v, i, n, h, kv, hd, False)
    attention = d * h * hd + 2 * d * kv * hd + h * hd * d + 2 * hd  # q, k, v, o; q/k norms
    assert attention == 26_214_400 + 10_485_760 + 26_214_400 + 256
    mlp = 3 * d * i                         # gate, up (5120 -> 27392), down
    norms = 2 * d                           # post_attention, post_feedforward
    total = v * d + n * (attention + mlp + norms) + d + v * d  # embedding, layers, norm, head
    assert total == 32_003_216_384          # "32B"
    count = count_params(cfg)               # through kvlib.models.params, as kvlib plan
    assert (count.model_type, count.total, count.active) == ("exaone4", total, total)
    # the q/k norms (2 hd a layer) are norms: RMSNorm(head_dim), whole on every TP rank
    assert count.parts["attention"] == n * (attention - 2 * hd) == 4_026_531_840
    assert count.parts["mlp"] == n * mlp and count.parts["lm_head"] == v * d
    assert count.parts["norms"] == n * (norms + 2 * hd) + d and count.notes == ()


def test_exaone_4_5_33b_by_hand():
    """EXAONE-4.5-33B (LGAI-EXAONE/EXAONE-4.5-33B): the text model is EXAONE 4.0-32B's with
    a 153600 vocabulary; the vision tower as vLLM 0.34.0 loads it (exaone4_5.py)."""
    cfg = _unseen("exaone-4.5-33b.json")
    vc = cfg["vision_config"]
    d, i, h, kv, depth = 2048, 5120, 32, 8, 28
    p, tp, m, out = 14, 2, 2, 5120
    assert (vc["hidden_size"], vc["intermediate_size"], vc["num_heads"],
            vc["num_key_value_heads"], vc["depth"], vc["patch_size"],
            vc["temporal_patch_size"], vc["spatial_merge_size"], vc["out_hidden_size"],
            vc["in_channels"]) == (d, i, h, kv, depth, p, tp, m, out, 3)
    hd, w = d // h, d * m * m                                   # 64, 8192
    patch = 3 * tp * p * p * d                                  # Conv3d, no bias
    block = (2 * d                                              # norm1, norm2 (RMSNorm)
             + d * (h + 2 * kv) * hd + (h + 2 * kv) * hd        # qkv 2048 -> 3072, bias
             + d * d + d                                        # proj, bias
             + 2 * (d * i + i) + (i * d + d))                   # gate, up, down with biases
    merger = d + (w * w + w) + (w * out + out)                  # ln_q, mlp.0, mlp.2
    tower = patch + depth * block + merger
    assert (patch, block, merger, tower) == (2_408_448, 41_964_544, 109_067_264,
                                             1_286_482_944)
    v = cfg["text_config"]["vocab_size"]
    text = 32_003_216_384 + 2 * (v - 102400) * 5120             # EXAONE 4.0-32B's, V 153600
    count = count_params(cfg)
    assert (count.model_type, count.towers) == ("exaone4_5", "counted")
    assert (count.parts["vision"], count.text, count.total) == (tower, text, text + tower)
    assert count.total == 33_813_987_328 and count.active == text   # the tower not per token
    assert any("mtp.*" in note and "exaone4_5.py:327-329" in note for note in count.notes)
    assert count.linears[0].name == "model.language_model.layers.0.self_attn.q_proj"
    # held whole by every TP rank: the Conv3d, the RMSNorms, the row-parallel biases (proj,
    # down_proj, merger mlp.2); the rest split; both in the model dtype (bf16)
    whole = patch + depth * (2 * d + d + d) + d + out
    assert whole == 2_644_992
    assert [(f.part, f.elements, f.bytes_per, f.whole) for f in count.fixed] == [
        ("vision", whole, 2, True), ("vision", tower - whole, 2, False)]
    k = next(x for x in count.linears if x.name.endswith("layers.0.self_attn.k_proj"))
    assert (k.out_features, k.kv_heads) == (8 * 128, 8)


_EX4 = {"model_type": "exaone4", "vocab_size": 10, "hidden_size": 64, "intermediate_size": 8,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


@pytest.mark.parametrize("key", ["attention_bias", "bias", "mlp_bias"])
def test_exaone4_biases_refused(key):
    """vLLM 0.34.0 builds EXAONE 4.0's biases from these keys (exaone4.py:229-231, 252);
    transformers never builds any: refused, naming the key."""
    with pytest.raises(ValueError, match=rf"^{key}=True \(bool\): vLLM 0.34.0 gives"):
        count_by_shape({**_EX4, key: True})
    assert count_by_shape({**_EX4, key: False}).total == count_by_shape(_EX4).total


def test_exaone4_kv_heads_class_default():
    """Exaone4Config's num_key_value_heads defaults to 32 (configuration_exaone4.py:83)."""
    cfg = {k: v for k, v in _EX4.items() if k != "num_key_value_heads"}
    cfg.update(num_attention_heads=32, head_dim=4)
    k = next(x for x in count_by_shape(cfg).linears if x.name.endswith("k_proj"))
    assert k.out_features == 32 * 4


def _ex45(**vision) -> dict:
    text = {**_EX4, "model_type": "exaone4_5_text"}
    v = {"depth": 1, "hidden_size": 32, "intermediate_size": 16, "num_heads": 4,
         "num_key_value_heads": 2, "out_hidden_size": 64, **vision}
    return {"model_type": "exaone4_5", "text_config": text,
            "vision_config": {k: x for k, x in v.items() if x is not None}}


def test_exaone4_5_tied_by_the_wrapper():
    """Both engines tie EXAONE 4.5's head by the wrapper's flag: transformers' lm_head is the
    wrapper's (modeling_exaone4_5.py:808), vLLM copies the flag into the text config
    (config/vllm.py:973-977); the text config's own flag is said and not followed."""
    base = count_by_shape(_ex45())
    inner = _ex45()
    inner["text_config"]["tie_word_embeddings"] = True
    said = count_by_shape(inner)
    assert said.total == base.total and said.parts["lm_head"] == 10 * 64
    assert any("overridden by the wrapper's False" in note for note in said.notes)
    tied = count_by_shape({**_ex45(), "tie_word_embeddings": True})
    assert tied.parts["lm_head"] == 0 and tied.total == base.total - 10 * 64


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 5), heads=st.sampled_from([2, 4, 8]), kv_div=st.sampled_from([1, 2]),
       merge=st.integers(1, 3))
def test_exaone4_5_tower_adds_one_block_per_depth(depth, heads, kv_div, merge):
    """A tower block costs the same at every depth, the tower never enters ``active`` or
    the text model, and the text model is the exaone4 row's count of the text config."""
    one, two = (count_by_shape(_ex45(depth=x, num_heads=heads, num_key_value_heads=heads // kv_div,
                                     spatial_merge_size=merge)) for x in (depth, depth + 1))
    d, hd, i = 32, 32 // heads, 16
    block = 2 * d + (d + 1) * (heads + 2 * heads // kv_div) * hd + (d + 1) * d \
        + 2 * (d + 1) * i + (i + 1) * d
    assert two.parts["vision"] - one.parts["vision"] == block
    text = count_by_shape({**_EX4, "tie_word_embeddings": False})
    for c in (one, two):
        assert c.active == c.text == text.total == c.total - c.parts["vision"]


@pytest.mark.parametrize("config, message", [
    (_ex45(depth=None), "config has no vision_config.depth or vision_config.num_hidden_layers"),
    (_ex45(num_heads=3), r"vision_config.hidden_size=32 is not divisible by "
                         r"vision_config.num_heads=3"),
    (_ex45(num_key_value_heads=3), "vision_config.num_heads=4 is not a multiple of "
                                   "vision_config.num_key_value_heads=3"),
    ({**_ex45(), "text_config": {**_EX4, "model_type": "llama"}},
     r"text_config.model_type='llama' \(str\): exaone4_5's config class reads "
     "exaone4_5_text or exaone4"),
    ({**_ex45(), "text_config": {**_EX4, "model_type": "exaone4", "mlp_bias": True}},
     r"^text_config.mlp_bias=True"),
    ({**_ex45(), "vision_config": None}, "exaone4_5: vision_config must be a JSON object"),
    ({k: v for k, v in _ex45().items() if k != "text_config"},
     "exaone4_5: text_config must be a JSON object"),
])
def test_exaone4_5_bad_fields_named(config, message):
    with pytest.raises(ValueError, match=message):
        count_by_shape(config)
