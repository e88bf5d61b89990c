"""Hybrid and heterogeneous configs kvlib cannot count yet are refused by name (issue 11).

Each marker below comes from a published config.json of a current open-weight model; read as
"every layer is standard attention" each would give a number 1.1x to 13x off. The tests add
one marker to a plain Llama config and require one ValueError line naming the field.
"""

import subprocess
import sys

import pytest

from kvlib import parse_config
from kvlib.cli import main
from kvlib.models.catalog import bundled_config
from kvlib.models.readers.refuse import FAMILIES_REFUSED, MARKERS

# (field, a value as the published configs write it, the family it comes from)
PUBLISHED = [
    ("full_attention_interval", 4, "Qwen3-Next-80B-A3B"),
    ("hybrid_override_pattern", "M-M-M-MM-M-M*-", "Nemotron-H"),
    ("attn_layer_period", 8, "Jamba"),
    ("attn_layer_offset", 4, "Jamba"),
    ("layers_block_type", ["mamba", "attention"], "Zamba / Granite 4 hybrids"),
    ("block_configs", [{"attention": {"no_op": True}}], "Llama-3.3-Nemotron-Super (NAS)"),
    ("attn_type_list", [0, 0, 0, 1], "MiniMax-Text-01"),
    ("full_attn_idxs", [2, 5, 8], "LFM2"),
    ("mamba_d_state", 128, "Mamba2 hybrids"),
    ("linear_num_key_heads", 16, "Qwen3-Next"),
    ("conv_L_cache", 3, "LFM2"),
    ("num_kv_shared_layers", 15, "Gemma 3n"),
    ("global_head_dim", 512, "global / local head shapes"),
    ("num_global_key_value_heads", 4, "global / local head shapes"),
    ("index_head_dim", 128, "DeepSeek-V3.2 (lightning indexer)"),
    ("index_topk", 2048, "DeepSeek-V3.2 (lightning indexer)"),
]


def llama(**extra) -> dict:
    return {**bundled_config("llama-3.1-8b"), **extra}


@pytest.mark.parametrize("field, value, family", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_a_hybrid_marker_is_refused_by_name(field, value, family):
    assert field in MARKERS
    with pytest.raises(ValueError) as e:
        parse_config(llama(**{field: value}))
    msg = str(e.value)
    assert msg.startswith(f"{field}=") and "refuses rather than read every layer as full" in msg
    assert "\n" not in msg


def test_a_marker_inside_text_config_is_named_by_its_path():
    cfg = {"model_type": "wrapper", "text_config": llama(linear_key_head_dim=128)}
    with pytest.raises(ValueError, match=r"^text_config\.linear_key_head_dim=128: "):
        parse_config(cfg)


@pytest.mark.parametrize("value", [None, 0, False, [], ""])
def test_an_empty_marker_changes_nothing(value):
    """`num_kv_shared_layers: 0` or `block_configs: null` describe no special layer."""
    plain = parse_config(llama())
    marked = parse_config(llama(num_kv_shared_layers=value, block_configs=value))
    assert marked.groups() == plain.groups()
    # Llama 3.1 8B: 32 layers x 2 (K, V) x 8 KV heads x 128 = 65,536 elements per token
    (g,) = marked.groups()
    assert g.layers * 2 * g.sizes["N_g"] * g.sizes["d_QK"] == 32 * 2 * 8 * 128


@pytest.mark.parametrize("family", ["mamba", "mamba2", "bamba", "zamba2", "minimax"])
def test_a_hybrid_family_without_a_reader_is_refused_even_with_plain_fields(family):
    assert family in FAMILIES_REFUSED
    with pytest.raises(ValueError, match=rf"^model_type '{family}' \("):
        parse_config(llama(model_type=family))


@pytest.mark.parametrize("family, field", [("qwen3_next", "linear_conv_kernel_dim"),
                                           ("nemotron_h", "hybrid_override_pattern"),
                                           ("jamba", "attn_layer_period"),
                                           ("lfm2", "conv_L_cache"),
                                           ("gemma3n", "layer_types"),
                                           ("deepseek_v32", "kv_lora_rank")])
def test_a_hybrid_family_with_a_reader_needs_its_fields(family, field):
    """Plain Llama fields under a hybrid model_type: the family's reader names what is missing."""
    with pytest.raises(ValueError) as e:
        parse_config(llama(model_type=family))
    assert field in str(e.value) and "\n" not in str(e.value)


def test_an_unknown_family_with_plain_fields_is_read_and_says_so():
    """No architectures an engine maps to a family kvlib reads: the generic reader, said."""
    r = parse_config(llama(model_type="somenewlm", architectures=["SomeNewLMForCausalLM"]))
    assert any("'somenewlm' has no reader of its own: every layer read as standard attention"
               in a for a in r.assumptions)
    (g,) = r.groups()
    assert (g.layers, g.sizes["N_g"], g.sizes["d_QK"]) == (32, 8, 128)


def test_an_unknown_family_is_read_by_its_architectures():
    """LlamaForCausalLM, which vLLM 0.34.0 builds with its llama module (issue 42 item 3)."""
    r = parse_config(llama(model_type="somenewlm"))
    assert (r.family, r.reader) == ("llama", "llama")
    assert any(a.startswith("model_type 'somenewlm' has no reader; architectures names "
                            "LlamaForCausalLM") for a in r.assumptions)
    assert r.groups() == parse_config(llama()).groups()


def test_the_commands_print_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    import json

    path.write_text(json.dumps(llama(hybrid_override_pattern="M*M*")))
    assert main(["estimate", str(path), "--context", "1024"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("kvlib estimate: error: hybrid_override_pattern='M*M*': ")
    r = subprocess.run([sys.executable, "-m", "kvlib", "plan", str(path), "--gpu", "H200",
                        "--context", "1024", "--params", "8B"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("kvlib plan: error: hybrid_override_pattern=")
    assert "Traceback" not in r.stderr
