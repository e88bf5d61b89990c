"""Published configs a tester ran ``kvlib plan`` on, unseen before (issue 42, "Read what vLLM
reads"): each read as vLLM 0.34.0 builds it, or refused naming the field and why.

The files are byte-for-byte copies in tests/fixtures/configs/unseen-2026/ (SOURCES.md there says
where each came from). Every expected figure is worked by hand below from the config's numbers
and the family's vLLM 0.34.0 code (file and line cited), not from kvlib. Bytes are bf16 (2 B):
a layer keeps K and V, 2 x N_KV x head_dim x 2 B per token.
"""

import json
from pathlib import Path

import pytest
from test_cli_plan import run, run_json

from kvlib import parse_config, read_config

UNSEEN = Path(__file__).resolve().parent / "fixtures" / "configs" / "unseen-2026"
BF16 = 2


def path(name: str) -> Path:
    return UNSEEN / f"{name}.json"


def load(name: str) -> dict:
    return json.loads(path(name).read_text(encoding="utf-8"))


def kinds(s):
    return {(str(g.kind), g.window): g.layers for g in s.groups}


def said(reading, *words):
    return [a for a in reading.assumptions if all(w in a for w in words)]


# --- EXAONE 4.0 and 4.5: layer_types decides, sliding_window_pattern beside it is read by no one

# vLLM 0.34.0 model_executor/models/exaone4.py:172-173: layer i slides over config.sliding_window
# iff config.layer_types[i] == "sliding_attention"; :140-142 head_dim from the config, else
# hidden_size / num_attention_heads. EXAONE-4.0-32B: 64 layers, "LLLG" repeated (48 sliding, 16
# full), window 4096, 8 KV heads of head_dim 128.
EXAONE_LAYER = 2 * 8 * 128 * BF16  # 4,096 B per token per layer
EXAONE_PER_TOKEN = 64 * EXAONE_LAYER  # 262,144 B = 256 KiB
# at 8,192 tokens: 16 full layers keep 8,192 tokens, 48 sliding layers keep 4,096
EXAONE_PER_SEQUENCE_8K = 16 * EXAONE_LAYER * 8192 + 48 * EXAONE_LAYER * 4096  # 1,342,177,280 B


def test_exaone_4_0_reads_layer_types_not_the_pattern_beside_it():
    cfg = load("exaone-4.0-32b")
    assert cfg["sliding_window_pattern"] == "LLLG" and len(cfg["layer_types"]) == 64
    s = read_config(path("exaone-4.0-32b"))
    assert kinds(s) == {("full", None): 16, ("sliding", 4096): 48}
    assert s.kv_bytes_per_token(BF16) == EXAONE_PER_TOKEN == 262_144
    assert s.kv_bytes_per_sequence(8192, BF16) == EXAONE_PER_SEQUENCE_8K == 1_342_177_280
    r = parse_config(path("exaone-4.0-32b"))
    assert (r.family, r.reader, r.ignored) == ("exaone4", "exaone4", ())
    # every 4th layer full, as "LLLG" says, is what the list says too
    assert [r.layer(i)[0].value for i in range(8)] == ["sliding"] * 3 + ["full"] + \
        ["sliding"] * 3 + ["full"]
    assert said(r, "sliding_window_pattern='LLLG' is not read",
                "configuration_exaone4.py:102", "exaone4.py:172")


def test_exaone_4_5_reads_its_text_config_as_exaone4():
    """Exaone4_5_Config renames text_config.model_type exaone4_5_text to exaone4 (transformers
    5.25.0 models/exaone4_5/configuration_exaone4_5.py:79-80) and vLLM builds Exaone4ForCausalLM
    from it (model_executor/models/exaone4_5.py:359-364): the same 64 layers as 4.0, head_dim
    absent so 5120 / 40 = 128 (exaone4.py:140-142)."""
    cfg = load("exaone-4.5-33b")
    assert cfg["text_config"]["model_type"] == "exaone4_5_text"
    assert "head_dim" not in cfg["text_config"] and 5120 // 40 == 128
    s = read_config(path("exaone-4.5-33b"))
    assert kinds(s) == {("full", None): 16, ("sliding", 4096): 48}
    assert s.kv_bytes_per_token(BF16) == EXAONE_PER_TOKEN
    assert s.kv_bytes_per_sequence(8192, BF16) == EXAONE_PER_SEQUENCE_8K
    assert s.max_position_embeddings == 262_144
    r = parse_config(path("exaone-4.5-33b"))
    assert (r.family, r.reader, r.ignored) == ("exaone4", "exaone4", ())
    assert said(r, "text_config.model_type='exaone4_5_text' is read as 'exaone4'")
    assert not [a for a in r.assumptions if "cohere2" in a]


def _exaone(n: int, **kw) -> dict:
    return {"model_type": "exaone4", "num_hidden_layers": n, "hidden_size": 256,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, **kw}


def test_exaone_default_pattern_by_hand():
    """8 layers, no pattern, no window: layers 3 and 7 full ((i + 1) % 4 == 0), six slide over
    4096; per token 8 x 2 x 2 x 64 x 2 B = 4,096 B."""
    s = read_config(_exaone(8))
    assert kinds(s) == {("full", None): 2, ("sliding", 4096): 6}
    assert s.kv_bytes_per_token(BF16) == 8 * 2 * 2 * 64 * 2 == 4096


@pytest.mark.parametrize("extra, message", [
    ({"sliding_window_pattern": "LLLG"},
     "sliding_window_pattern='LLLG' without layer_types: Exaone4Config derives layer_types "
     "from it as (i + 1) % pattern"),
    ({"sliding_window": None},
     "sliding_window=null without layer_types: Exaone4Config then sets "
     "sliding_window_pattern to 0"),
])
def test_exaone_without_layer_types_refuses_what_exaone4config_cannot_build(extra, message):
    """A string pattern ((i + 1) % "LLLG": TypeError) or a null window (pattern 0: modulo by
    zero) fails in Exaone4Config itself (configuration_exaone4.py:100-105; run there by make
    crosscheck, tests/crosscheck/test_exaone4_config_class.py)."""
    with pytest.raises(ValueError) as e:
        parse_config(_exaone(8, **extra))
    assert message in str(e.value) and "give layer_types" in str(e.value)
    assert "\n" not in str(e.value)


# --- olmOCR 2 (Qwen2.5-VL): the top level repeats the text model's keys; vLLM reads text_config

# vLLM 0.34.0 reads heads and layers from hf_text_config (transformers_utils/
# model_arch_config_convertor.py:80, :83; transformers_utils/config.py:1303-1317) and builds
# Qwen2 from hf_config.get_text_config() (model_executor/models/qwen2.py:355): 28 layers, 4 KV
# heads, head_dim 3584 / 28 = 128, no window (use_sliding_window false).
OLMOCR_PER_TOKEN = 28 * 2 * 4 * 128 * BF16  # 57,344 B = 56 KiB


def test_olmocr_reads_the_text_config_not_the_copy_beside_it():
    cfg = load("olmocr-2-7b-1025")
    assert cfg["num_attention_heads"] == cfg["text_config"]["num_attention_heads"] == 28
    s = read_config(path("olmocr-2-7b-1025"))
    assert kinds(s) == {("full", None): 28}
    assert s.kv_bytes_per_token(BF16) == OLMOCR_PER_TOKEN == 57_344
    r = parse_config(path("olmocr-2-7b-1025"))
    assert r.ignored == ()
    assert said(r, "num_attention_heads=28 beside text_config is not read",
                "model_arch_config_convertor.py:83")
    assert said(r, "sliding_window=32768 beside text_config is not read",
                "text_config.sliding_window=None")


def test_olmocr_top_level_copies_change_nothing():
    """What vLLM does not read cannot change the reading: other numbers at the top level leave
    the bytes as the text_config says."""
    cfg = load("olmocr-2-7b-1025")
    cfg.update(num_attention_heads=7, num_key_value_heads=1, num_hidden_layers=3,
               sliding_window=64)
    assert read_config(cfg).kv_bytes_per_token(BF16) == OLMOCR_PER_TOKEN


def test_olmocr_plans_at_tp_4_and_tp_8_is_refused_for_its_heads(capsys):
    """TP 4: 4 KV heads, one per GPU: 28 x 2 x 1 x 128 x 2 B = 14,336 B per token per GPU.
    TP 8 does not divide the 28 query heads (vLLM splits them evenly)."""
    rc, d, err = run_json(capsys, str(path("olmocr-2-7b-1025")), "--gpu", "H200", "--gpus",
                          "8", "--tp", "4", "--context", "8K")
    assert rc == 0
    assert d["kv_bytes_per_token_per_gpu"] == 28 * 2 * 1 * 128 * 2 == 14_336
    rc, out, err = run(capsys, str(path("olmocr-2-7b-1025")), "--gpu", "H200", "--gpus", "8",
                       "--tp", "8", "--context", "8K")
    assert rc == 2 and "must divide the query heads N_h=28" in err


# --- Ministral 3 3B (a Mistral3ForConditionalGeneration): the KV cache of its text_config

# The text model is built by vLLM's mistral.py / llama.py (registry: Ministral3ForCausalLM):
# 26 layers, 8 KV heads, head_dim 128 given (llama.py:158), sliding_window null.
MINISTRAL3_PER_TOKEN = 26 * 2 * 8 * 128 * BF16  # 106,496 B = 104 KiB


def test_ministral3_reads_the_wrappers_text_config():
    cfg = load("ministral3-3b-2512")
    assert "hidden_size" not in cfg and cfg["text_config"]["hidden_size"] == 3072
    s = read_config(path("ministral3-3b-2512"))
    assert kinds(s) == {("full", None): 26}
    assert s.kv_bytes_per_token(BF16) == MINISTRAL3_PER_TOKEN == 106_496
    r = parse_config(path("ministral3-3b-2512"))
    assert r.ignored == ()
    # the file's model_type is the text model's: vLLM 0.34.0 would load it as Ministral3Config
    # and stop at get_hf_text_config (transformers_utils/config.py:1309-1315); said aloud
    assert said(r, "model_type='ministral3' names transformers' Ministral3Config",
                "config.py:1309-1315")


def test_ministral3_plans_its_kv_cache_with_a_kv_budget(capsys):
    """TP 8 over 8 KV heads: one per GPU, 26 x 2 x 1 x 128 x 2 B = 13,312 B per token per GPU;
    --kv-cache-memory gives the budget, so no weights are needed."""
    rc, d, err = run_json(capsys, str(path("ministral3-3b-2512")), "--gpu", "H200", "--gpus",
                          "8", "--tp", "8", "--context", "8K", "--kv-cache-memory", "20GiB")
    assert rc == 0
    assert d["kv_bytes_per_token_per_gpu"] == 26 * 2 * 1 * 128 * 2 == 13_312


# --- Llama 3.2 90B Vision (mllama): vLLM 0.34.0 no longer serves it

MLLAMA = ("model_type='mllama': vLLM 0.34.0 no longer serves MllamaForConditionalGeneration "
          "(supported until v0.10.2: vllm/model_executor/models/registry.py:899), so kvlib has "
          "no plan to make for it")


def test_mllama_is_refused_naming_vllms_removal():
    with pytest.raises(ValueError) as e:
        parse_config(path("llama-3.2-90b-vision-instruct"))
    assert str(e.value) == MLLAMA


def test_mllama_plan_says_it_in_one_line(capsys):
    rc, out, err = run(capsys, str(path("llama-3.2-90b-vision-instruct")), "--gpu", "H200",
                       "--gpus", "8", "--tp", "8", "--context", "8K")
    assert rc == 2 and out == ""
    assert err == f"kvlib plan: error: {MLLAMA}\n"
