"""A config.json without ``head_dim`` / ``num_key_value_heads`` is read with the config class's
default, as vLLM 0.34.0 reads the object transformers 5.25.0 builds (issue 42). Each figure is
worked by hand from the default transformers' class declares (the file:line the note cites);
tests/crosscheck/test_class_defaults_fresh.py rebuilds the table from transformers itself."""

import pytest

from kvlib.models.params_shapes import count_by_shape
from kvlib.models.readers import read_config
from kvlib.models.readers.attention import heads
from kvlib.models.readers.class_defaults import default, table
from kvlib.models.readers.fields import Fields

BF16 = 2  # bytes per element


def _said(spec, *words) -> bool:
    return any(all(w in a for w in words) for a in spec.assumptions)


def test_glm4_without_head_dim_or_kv_heads_takes_128_and_2():
    """Glm4Config: ``num_key_value_heads: int = 2`` (configuration_glm4.py:60), ``head_dim:
    int = 128`` (:61). Per token: K and V, 40 layers, 2 KV heads of 128, bf16:
    2 x 40 x 2 x 128 x 2 = 40,960 B (hidden_size / heads = 4096 / 32 = 128 happens to agree on
    the head; one KV head per query head would be 2 x 40 x 32 x 128 x 2 = 655,360 B)."""
    spec = read_config({"model_type": "glm4", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_hidden_layers": 40})
    assert spec.kv_bytes_per_token(BF16) == 2 * 40 * 2 * 128 * 2 == 40_960
    assert _said(spec, "no num_key_value_heads", "glm4's config class default 2",
                 "configuration_glm4.py:60", "vLLM 0.34.0")
    assert _said(spec, "no head_dim", "default 128", "configuration_glm4.py:61")


def test_cwm_without_head_dim_or_kv_heads_takes_128_and_8():
    """CwmConfig: ``num_key_value_heads: int = 8`` (configuration_cwm.py:67), ``head_dim: int =
    128`` (:81). hidden_size 6144 / 48 heads = 128 too, but the KV heads are 8, not 48:
    2 x 64 layers x 8 x 128 x 2 B = 262,144 B per token (not 1,572,864)."""
    spec = read_config({"model_type": "cwm", "hidden_size": 6144, "num_attention_heads": 48,
                        "num_hidden_layers": 64})
    assert spec.kv_bytes_per_token(BF16) == 2 * 64 * 8 * 128 * 2 == 262_144
    assert _said(spec, "configuration_cwm.py:67") and _said(spec, "configuration_cwm.py:81")


def test_cwm_head_dim_default_wins_over_hidden_size_per_head():
    """hidden_size 4096 / 64 heads = 64, but CwmConfig's head_dim is 128 whatever the shape:
    2 x 2 layers x 8 x 128 x 2 B = 8,192 B per token (derived, it would be 4,096)."""
    spec = read_config({"model_type": "cwm", "hidden_size": 4096, "num_attention_heads": 64,
                        "num_hidden_layers": 2})
    assert spec.kv_bytes_per_token(BF16) == 2 * 2 * 8 * 128 * 2 == 8_192
    assert _said(spec, "no head_dim", "not hidden_size / num_attention_heads = 4096 / 64 = 64")


def test_qwen2_without_kv_heads_takes_32():
    """Qwen2Config: ``num_key_value_heads: int | None = 32`` (configuration_qwen2.py:65); its
    head_dim stays hidden_size / heads (the class has no head_dim: vLLM derives it).
    4096 / 64 = 64 wide: 2 x 2 layers x 32 x 64 x 2 B = 16,384 B per token (MHA: 32,768)."""
    spec = read_config({"model_type": "qwen2", "hidden_size": 4096, "num_attention_heads": 64,
                        "num_hidden_layers": 2})
    assert spec.kv_bytes_per_token(BF16) == 2 * 2 * 32 * 64 * 2 == 16_384
    assert _said(spec, "qwen2's config class default 32", "configuration_qwen2.py:65")
    assert _said(spec, "no head_dim: derived as hidden_size / num_attention_heads")


def test_qwen2_default_kv_heads_that_do_not_divide_the_heads_is_refused():
    """28 query heads and the class's 32 KV heads: no grouping vLLM can build; kvlib asks for
    the key rather than guess."""
    with pytest.raises(ValueError, match="num_attention_heads=28 is not a multiple of the class "
                                         "default 32.*give num_key_value_heads"):
        read_config({"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
                     "num_hidden_layers": 28})


def test_the_key_in_the_file_wins():
    """head_dim 64 and 4 KV heads given: 2 x 40 x 4 x 64 x 2 B = 40,960 B, no class default."""
    spec = read_config({"model_type": "glm4", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_hidden_layers": 40, "head_dim": 64, "num_key_value_heads": 4})
    assert spec.kv_bytes_per_token(BF16) == 2 * 40 * 4 * 64 * 2
    assert not _said(spec, "config class default")


def test_text_config_without_model_type_takes_the_wrappers_text_class():
    """Qwen2-VL's text sub-config Qwen2VLTextConfig: ``num_key_value_heads: int | None = 8``
    (configuration_qwen2_vl.py:90). 3584 / 32 = 112 wide: 2 x 28 x 8 x 112 x 2 B = 100,352 B."""
    spec = read_config({"model_type": "qwen2_vl", "text_config": {
        "hidden_size": 3584, "num_attention_heads": 32, "num_hidden_layers": 28}})
    assert spec.kv_bytes_per_token(BF16) == 2 * 28 * 8 * 112 * 2 == 100_352
    assert _said(spec, "no text_config.num_key_value_heads", "qwen2_vl's config class default 8",
                 "configuration_qwen2_vl.py:90")


def test_text_config_with_its_own_model_type_takes_that_class():
    """text_config.model_type gemma3_text: Gemma3TextConfig's 4 KV heads (configuration_gemma3
    .py:78) of 256 (:79), not 2560 / 8 = 320: 2 x 34 x 4 x 256 x 2 B = 139,264 B per token."""
    spec = read_config({"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8,
        "num_hidden_layers": 34}})
    assert spec.kv_bytes_per_token(BF16) == 2 * 34 * 4 * 256 * 2 == 139_264
    assert _said(spec, "gemma3_text's config class default 256", "configuration_gemma3.py:79")


def test_a_class_that_leaves_the_key_none_is_refused_naming_it():
    """NemotronConfig's num_key_value_heads stays None without one (vLLM reads the None)."""
    with pytest.raises(ValueError, match=r"config has no num_key_value_heads, and transformers "
                                         r"5\.25\.0's NemotronConfig .*leaves it None"):
        read_config({"model_type": "nemotron", "hidden_size": 2560, "num_attention_heads": 8,
                     "num_hidden_layers": 2})


def test_a_null_key_is_read_as_the_class_reads_a_none():
    """Glm4Config annotates ``head_dim: int`` and rejects a None (strict validation); Llama's
    class derives hidden_size / heads from it (configuration_llama.py:86-87)."""
    with pytest.raises(ValueError, match="head_dim is null, and transformers.*Glm4Config.*"
                                         "cannot be built so.*give head_dim"):
        read_config({"model_type": "glm4", "hidden_size": 4096, "num_attention_heads": 32,
                     "num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": None})
    spec = read_config({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_hidden_layers": 2, "num_key_value_heads": 8, "head_dim": None})
    assert spec.kv_bytes_per_token(BF16) == 2 * 2 * 8 * 128 * 2


def test_families_kvlib_derives_like_the_class_have_no_entry():
    """Llama's class derives both (configuration_llama.py:86-89): kvlib's rule, no entry."""
    assert default("head_dim", Fields({"model_type": "llama"})) is None
    assert default("num_key_value_heads", Fields({"model_type": "llama"})) is None
    assert "llama" in table()["checked"] and "llama" not in table()["families"]


def test_laguna_reader_takes_the_class_defaults():
    """Laguna's own reader derived hidden_size / heads; LagunaConfig says head_dim 128 and 8 KV
    heads (configuration_laguna.py:115, :93): 2 x 2 layers x 8 x 128 x 2 B = 8,192 B."""
    spec = read_config({"model_type": "laguna", "hidden_size": 2048, "num_attention_heads": 32,
                        "num_hidden_layers": 2})
    assert spec.kv_bytes_per_token(BF16) == 2 * 2 * 8 * 128 * 2 == 8_192
    assert _said(spec, "configuration_laguna.py:115") and _said(spec, "configuration_laguna.py:93")


def test_params_shapes_reads_the_same_defaults():
    """One source: count_by_shape's glm4 attention without the keys is q 4096 -> 32 x 128,
    k and v 4096 -> 2 x 128, o 32 x 128 -> 4096, per layer."""
    c = count_by_shape({"model_type": "glm4", "vocab_size": 10, "hidden_size": 4096,
                        "intermediate_size": 8, "num_hidden_layers": 1,
                        "num_attention_heads": 32})
    k = next(x for x in c.linears if x.name.endswith("k_proj"))
    q = next(x for x in c.linears if x.name.endswith("q_proj"))
    assert (q.out_features, k.out_features) == (32 * 128, 2 * 128)
    assert any("glm4's config class default 2" in n for n in c.notes)


def _constants(scope: str):
    for model_type, scopes in table()["families"].items():
        rules = scopes.get(scope, {})
        hd, kv = rules.get("head_dim"), rules.get("num_key_value_heads")
        if all(r is None or r["rule"] == "constant" for r in (hd, kv)) and (hd or kv):
            yield model_type, hd, kv


@pytest.mark.parametrize("model_type, hd, kv", list(_constants("config")))
def test_every_constant_reaches_the_generic_heads(model_type, hd, kv):
    """Property over the table: a config of the family without the keys gets, from
    attention.heads, the class's constants where the table has them and kvlib's derivation
    elsewhere (heads chosen as a multiple of the KV constant, 64 wide)."""
    n_h = 3 * (kv["value"] if kv else 4)
    cfg = {"model_type": model_type, "hidden_size": 64 * n_h, "num_attention_heads": n_h}
    notes: list[str] = []
    _, n_g, d, _ = heads(Fields(cfg), notes)
    assert n_g == (kv["value"] if kv else n_h)
    assert d == (hd["value"] if hd else 64)
    for rule in (hd, kv):
        if rule:
            assert any(rule["source"] in n for n in notes)
