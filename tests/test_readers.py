"""One reader per config family: each bundled model is read by its family's module (issue 9)."""

from pathlib import Path

from kvlib.models.catalog import BUNDLED, reading
from kvlib.models.readers import FAMILIES

READERS = Path(__file__).resolve().parent.parent / "kvlib" / "models" / "readers"
# Infrastructure beside the family modules: dispatcher, fields, results, registry, refusals.
NOT_FAMILIES = {"__init__", "fields", "reading", "registry", "refuse", "attention", "state",
                "closed", "engine", "class_defaults"}

# Which module reads each bundled model, written out from the configs' model_type fields.
EXPECTED = {
    "llama-3-70b": "llama", "llama-3.1-70b": "llama", "llama-3.1-8b": "llama",
    "gemma-3-27b": "gemma3", "deepseek-v2": "deepseek", "deepseek-v3": "deepseek",
    "gemma-2-9b": "gemma2", "qwen3-32b": "qwen2", "qwen2.5-7b": "qwen2",
    "mistral-7b-v0.1": "mistral", "falcon-7b": "falcon", "gpt2": "llama",
    "llama-4-scout": "llama4", "gpt-oss-20b": "gpt_oss",
    "qwen3-next-80b-a3b": "qwen3_next", "nemotron-h-56b": "nemotron_h",
    "nemotron-3-nano-30b-a3b": "nemotron_h", "llama-3.3-nemotron-super-49b": "nemotron_nas",
    "deepseek-v3.2": "deepseek", "gemma-4-26b-a4b": "gemma4",
    "qwen3.5-27b": "qwen3_next", "qwen3.6-35b-a3b": "qwen3_next", "glm-5": "deepseek",
    "nemotron-3-ultra-550b-a55b": "nemotron_h", "gpt-oss-120b": "gpt_oss",
    "minimax-m2.5": "llama",
    "minimax-m2.7": "llama",
    "mimo-v2-flash": "mimo_v2",
    "glm-5.2": "deepseek",
    "kimi-k2.5": "deepseek",
    "deepseek-v4-flash": "deepseek_v4", "deepseek-v4-pro": "deepseek_v4",
    "llama-2-7b": "llama", "gemma-3n-e4b": "gemma4",
}
# Readers of families no bundled model belongs to (tests/test_hybrid_models.py reads them).
UNBUNDLED = {"jamba", "lfm2", "kimi_linear", "falcon_h1", "granite_hybrid", "laguna",
             "kolibri", "ergo", "mistral_large4", "dots3_note",  # test_kv_reuse_families.py
             "minimax_m3",  # tests/test_minimax_m3.py, tests/test_config_corpus_2026.py
             "inkling", "inkling2", "inkling2_loop",  # tests/test_inkling.py
             "exaone4"}  # tests/test_config_unseen_2026.py


def test_each_bundled_model_is_read_by_its_family_module():
    assert set(EXPECTED) == set(BUNDLED)
    assert {name: reading(name).reader for name in BUNDLED} == EXPECTED


def test_every_family_module_registers_and_is_exercised():
    modules = {p.stem for p in READERS.glob("*.py")} - NOT_FAMILIES
    assert modules == {f.module for f in FAMILIES.values()}
    assert modules == set(EXPECTED.values()) | UNBUNDLED


def test_no_model_type_has_two_readers():
    from kvlib.models.readers.registry import register

    try:
        register("llama")(lambda c, family, n, notes: None)
    except RuntimeError as e:
        assert "model_type 'llama' has two readers" in str(e)
    else:  # pragma: no cover - the registry would have accepted a second reader
        raise AssertionError("a second reader for llama was accepted")
