"""The closed world grounded in the engines' code (issue 31): engine_keys.json, made by
scripts/engine_keys.py from the vLLM 0.34.0 / 0.33.0 and transformers 5.25.0 wheels, decides
which unknown keys of a known family are refused (the engine reads them where it builds a layer)
and which are listed as ignored (it does not). Expected figures are worked by hand from each
config's numbers; bytes are bf16 (2 B) unless said.
"""

import json
import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlib import parse_config, read_config
from kvlib.cli import main
from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.models.readers import FAMILIES, closed
from kvlib.models.readers.closed import HARMLESS
from kvlib.models.readers.engine import data, engine_for, read_by_any
from kvlib.models.readers.refuse import MARKERS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "configs"
BF16 = 2


# --- the data -------------------------------------------------------------------------------

def test_the_data_names_both_releases_and_ships_as_package_data():
    assert data()["releases"] == {"vllm": "0.34.0", "vllm_previous": "0.33.0",
                                  "transformers": "5.25.0"}
    assert '"engine_keys.json"' in (ROOT / "pyproject.toml").read_text()


def test_every_read_names_a_file_and_line():
    for mt, entry in data()["families"].items():
        for where in entry.get("vllm", {}).get("keys", {}).values():
            assert re.fullmatch(r"(vllm|transformers)/[\w/.]+\.py:\d+", where), (mt, where)


@pytest.mark.parametrize("model_type, key, where", [
    ("qwen2", "max_window_layers", "vllm/model_executor/models/qwen2.py:249"),
    ("mimo_v2_flash", "swa_num_key_value_heads", "vllm/model_executor/models/mimo_v2.py:424"),
    ("glm_moe_dsa", "indexer_types", "vllm/model_executor/models/utils.py:1026"),
    ("llama", "attn_type_list", "vllm/config/model.py:1791"),  # layer counting, every family
])
def test_spot_checks_against_the_source(model_type, key, where):
    """Lines read by eye in the unzipped vLLM 0.34.0 wheel."""
    assert engine_for(model_type).keys[key] == where


def test_every_family_kvlib_reads_is_known_to_an_engine():
    unknown = sorted(t for t in FAMILIES if engine_for(t) is None)
    # Falcon's old RefinedWeb names and DeciLM's are registered by no engine any more; the
    # text-only MiniMax M3 files' "minimax_m3" never was (engines know minimax_m3_vl)
    assert set(unknown) <= {"RefinedWeb", "RefinedWebModel", "deci", "decilm", "nemotron-nas",
                            "minimax_m3"}


def test_keys_the_issue_found_refused_are_read_nowhere_on_a_cache_path():
    for key in ("use_unified_vision_chunk", "full_attn_mod", "block_use_xavier_init",
                "index_share_for_mtp_iteration", "attention_output_gate"):
        assert key not in read_by_any(), key


# --- harmless keys of known families: read exactly ------------------------------------------

def test_qwen2_max_window_layers_without_the_switch():
    """Qwen2.5-7B's numbers under a Qwen2 model_type whose reader is the generic one, without
    use_sliding_window (false by default): 28 layers x 2 (K, V) x 4 KV heads x 128 x 2 B."""
    cfg = {k: v for k, v in bundled_config("qwen2.5-7b").items() if k != "use_sliding_window"}
    r = read_config({**cfg, "model_type": "qwen2_5_vl"})
    assert r.kv_bytes_per_token(BF16) == 28 * 2 * 4 * 128 * 2 == 57_344
    assert any(a.startswith("max_window_layers=28 is read as inert") for a in r.assumptions)


def test_phi_4_mini_full_attn_mod():
    """Phi-4-mini (phi3): 32 layers, 24 query heads, 8 KV heads, hidden 3072 (head dim 128);
    vLLM's phi3 is its llama path, which never reads full_attn_mod."""
    cfg = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "num_hidden_layers": 32,
           "num_attention_heads": 24, "num_key_value_heads": 8, "hidden_size": 3072,
           "intermediate_size": 8192, "vocab_size": 200064, "max_position_embeddings": 131072,
           "partial_rotary_factor": 0.75, "full_attn_mod": 1, "lm_head_bias": False}
    r = read_config(cfg)
    assert r.kv_bytes_per_token(BF16) == 32 * 2 * 8 * 128 * 2 == 131_072
    assert "full_attn_mod" in r.ignored_keys


def test_lfm2_initializer_flag():
    """LFM2: 5 attention layers of 8 KV heads x 64 (1024 / 16), 11 short-convolution layers."""
    types = ["conv", "conv", "full_attention"] * 5 + ["conv"]
    cfg = {"model_type": "lfm2", "num_hidden_layers": 16, "hidden_size": 1024,
           "num_attention_heads": 16, "num_key_value_heads": 8, "conv_L_cache": 3,
           "conv_dim": 1024, "layer_types": types, "block_use_xavier_init": True}
    r = read_config(cfg)
    assert r.kv_bytes_per_token(BF16) == 5 * 2 * 8 * 64 * 2 == 10_240
    assert "block_use_xavier_init" in r.ignored_keys


def test_kimi_k2_5_unified_vision_chunk():
    """Kimi K2.5: the text model is DeepSeek V3's MLA, 61 layers of one latent of
    kv_lora_rank + qk_rope_head_dim = 512 + 64 values; the vision flag is the renderer's."""
    text = {**bundled_config("deepseek-v3"), "model_type": "kimi_k2"}
    cfg = {"model_type": "kimi_k25", "architectures": ["KimiK25ForConditionalGeneration"],
           "use_unified_vision_chunk": True, "media_placeholder_token_id": 163605,
           "vision_config": {"model_type": "kimi_k25_vision"}, "text_config": text}
    r = read_config(cfg)
    assert r.kv_bytes_per_token(BF16) == 61 * (512 + 64) * 2 == 70_272
    assert "use_unified_vision_chunk" in r.ignored_keys


def test_minimax_m2_5_attn_type_list_of_ones():
    """MiniMax M2.5: 62 layers, 8 KV heads of 128; attn_type_list of 1s is every layer attention."""
    cfg = bundled_config("minimax-m2.5")
    r = read_config({**cfg, "attn_type_list": [1] * 62})
    assert r.kv_bytes_per_token(BF16) == 62 * 2 * 8 * 128 * 2 == 253_952
    assert any(a.startswith("attn_type_list is read: all 62 entries are 1") for a in r.assumptions)
    with pytest.raises(ValueError, match=r"^attn_type_list="):
        parse_config({**cfg, "attn_type_list": [0] * 61 + [1]})  # lightning layers: refused


def test_glm_5_indexer_types_full_and_mtp_index_sharing():
    """GLM-5.1 (78 layers): a 512 + 64 latent per layer in the KV dtype, plus an indexer key of
    128 fp8 bytes and one 4-byte scale in each layer with its own indexer; indexer_types all
    "full" is each layer its own indexer, "shared" layers build none (vLLM 0.34.0
    model_executor/models/utils.py:1019-1055, models/deepseek_v32/attention.py:171-193);
    index_share_for_mtp_iteration is read only by vLLM's MTP speculator."""
    cfg = json.loads((FIXTURES / "glm-5.1.json").read_text())
    cfg = {**cfg, "indexer_types": ["full"] * 78, "index_share_for_mtp_iteration": True}
    r = read_config(cfg)
    assert r.kv_bytes_per_token(BF16) == 78 * (512 + 64) * 2 + 78 * (128 + 4) == 100_152
    assert "index_share_for_mtp_iteration" in r.ignored_keys
    half = read_config({**cfg, "indexer_types": ["full", "shared"] * 39})
    assert half.kv_bytes_per_token(BF16) == 78 * (512 + 64) * 2 + 39 * (128 + 4)
    assert any("39 of 78 layers share an earlier layer's indexer" in a for a in half.assumptions)
    with pytest.raises(ValueError, match=r"^indexer_types must hold 'full' or 'shared'"):
        parse_config({**cfg, "indexer_types": ["full", "dense"] * 39})


def test_a_gate_set_to_false_is_read():
    """A false gate or switch is read as off (MiniMax M3's attention_output_gate=False)."""
    assert closed.neutral("attention_output_gate", False).startswith(
        "attention_output_gate=false is read")
    cfg = {**bundled_config("qwen2.5-7b"), "dual_chunk_attention_config": False}
    r = read_config(cfg)
    assert r.kv_bytes_per_token(BF16) == 28 * 2 * 4 * 128 * 2
    assert any("dual_chunk_attention_config=false is read" in a for a in r.assumptions)


# --- keys the engine reads: refused with the line -------------------------------------------

def test_a_key_the_family_engine_reads_is_refused_with_its_line():
    cfg = {**bundled_config("qwen2.5-7b"),
           "dual_chunk_attention_config": {"chunk_size": 262144, "local_size": 8192}}
    with pytest.raises(ValueError) as e:
        parse_config(cfg)
    msg = str(e.value)
    assert msg.startswith("dual_chunk_attention_config=") and "\n" not in msg
    assert "vLLM 0.34.0 reads this key" in msg and "models/qwen2.py:258" in msg


def test_mimo_v2_flash_pattern_entry_names_the_engine_line():
    """MiMo-V2-Flash is read (issue 31, section 2); a hybrid_layer_pattern entry vLLM 0.34.0's
    model does not know is refused naming the line that reads it."""
    cfg = json.loads((FIXTURES / "mimo-v2-flash.json").read_text())
    assert parse_config(cfg).ignored == ()
    with pytest.raises(ValueError) as e:
        parse_config({**cfg, "hybrid_layer_pattern": [2] * 48})
    assert engine_for("mimo_v2_flash").keys["hybrid_layer_pattern"] in str(e.value)


# --- files that are not a model config --------------------------------------------------------

NOT_MODELS = {
    "hf_quant_config.json": ({"producer": {"name": "modelopt", "version": "0.29.0"},
                              "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                                               "group_size": 16, "exclude_modules": ["lm_head"]}},
                             "ModelOpt quantization file"),
    "generation_config.json": ({"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2,
                                "do_sample": True, "temperature": 0.6, "top_p": 0.9,
                                "transformers_version": "4.45.0"}, "generation config"),
    "tokenizer_config.json": ({"add_bos_token": True, "bos_token": "<s>",
                               "added_tokens_decoder": {"0": {"content": "<unk>"}},
                               "model_max_length": 131072,
                               "tokenizer_class": "PreTrainedTokenizerFast"}, "tokenizer config"),
    "model.safetensors.index.json": ({"metadata": {"total_size": 16060522496},
                                      "weight_map": {"lm_head.weight": "model-00004.safetensors"}},
                                     "safetensors index"),
    "quantize_config.json": ({"bits": 4, "group_size": 128, "desc_act": False, "sym": True,
                              "quant_method": "gptq"}, "quantize config"),
    "preprocessor_config.json": ({"do_resize": True, "patch_size": 14,
                                  "image_processor_type": "Qwen2VLImageProcessor",
                                  "processor_class": "Qwen2_5_VLProcessor"},
                                 "preprocessor config"),
}


@pytest.mark.parametrize("name", NOT_MODELS)
def test_a_file_that_is_not_a_model_config_is_named(tmp_path, capsys, name):
    content, what = NOT_MODELS[name]
    with pytest.raises(ValueError) as e:
        parse_config(content)
    msg = str(e.value)
    assert what in msg and name in msg and "pass the model's config.json instead" in msg
    assert "num_hidden_layers" not in msg and "\n" not in msg
    path = tmp_path / name
    path.write_text(json.dumps(content))
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and what in err and str(path) in err


# --- the properties ---------------------------------------------------------------------------

_KNOWN_TO_A_CONFIG = {k for e in data()["families"].values()
                      for k in e.get("transformers", {}).get("keys", [])}
_WORDS = ["window", "head", "index", "chunk", "vision", "gate", "layer", "type", "use", "mod",
          "unified", "init", "xavier", "block", "attn", "share", "mtp", "iteration", "full",
          "sparse", "cache", "kv", "flag", "extra", "my", "num", "size", "list"]
_FREE_KEYS = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map("_".join).filter(
    lambda k: k not in read_by_any() and k not in _KNOWN_TO_A_CONFIG and k not in MARKERS
    and k not in HARMLESS and k not in closed._REFUSE_IF_SET)
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5000) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.sampled_from(["a", "dim", "n", "window"]), inner,
                                       max_size=3), max_leaves=8)


def _target(cfg: dict) -> dict:
    return cfg["text_config"] if "text_config" in cfg else cfg


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(BUNDLED)), _FREE_KEYS, _JSON)
def test_a_key_no_engine_reads_never_changes_a_reading_nor_refuses(name, key, value):
    cfg = bundled_config(name)
    assert engine_for(parse_config(cfg).family) is not None  # every bundled family is known
    if key in _target(cfg):
        return
    before = parse_config(cfg)
    changed = json.loads(json.dumps(cfg))
    _target(changed)[key] = value
    after = parse_config(changed)  # never raises
    assert after.groups() == before.groups()
    assert after.num_layers == before.num_layers
    assert after.max_position_embeddings == before.max_position_embeddings


def _run(cfg):
    """(keys kvlib's reader looked up and its family's ignores, the ValueError or None)."""
    box: dict = {}
    real = closed.account

    def spy(outer, c, n, ignores=frozenset(), family="", notes=None):
        box["seen"] = {k.rsplit(".", 1)[-1] for k in c.seen} | set(ignores)
        return real(outer, c, n, ignores, family, notes)

    with mock.patch.object(closed, "account", spy):
        try:
            parse_config(cfg)
            return box.get("seen"), None
        except ValueError as e:
            return box.get("seen"), e


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.sampled_from(sorted(BUNDLED)), st.data(),
       st.sampled_from([7, [3, 5], {"n": 2}, "sparse", True]))
def test_a_key_the_family_engine_reads_and_kvlib_does_not_always_refuses(name, draw, value):
    cfg = bundled_config(name)
    family = parse_config(cfg).family
    engine = engine_for(family)
    candidates = sorted(k for k in engine.keys if k not in _target(cfg)
                        and not closed._harmless(k) and k not in MARKERS
                        and k not in closed._REFUSE_IF_SET)
    if not candidates:
        return
    key = draw.draw(st.sampled_from(candidates))
    changed = json.loads(json.dumps(cfg))
    _target(changed)[key] = value
    seen, err = _run(changed)
    if seen is not None and key in seen:
        return  # kvlib's reader reads it (or knows it leaves this family's cache alone)
    if err is None:  # only a value that means nothing special, read and said in the notes
        reading = parse_config(changed)
        assert any(a.startswith(f"{key}=") and "inert" in a for a in reading.assumptions), (
            name, key, value)
        assert reading.groups() == parse_config(cfg).groups()
        return
    msg = str(err)
    assert key in msg and "\n" not in msg
    if seen is not None:  # refused by the closed world: it names the engine's line
        assert engine.keys[key] in msg
