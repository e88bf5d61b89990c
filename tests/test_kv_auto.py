"""Issue 42 item 2: vLLM 0.34.0's kv_cache_dtype "auto" as it resolves it, checkpoint first.

vLLM takes ``hf_quant_config.json`` beside config.json as the quantization_config when
config.json has none (transformers_utils/config.py:996-1009), names a ModelOpt file's method
from its producer and quant_algo (model_arch_config_convertor.py:241-283), and turns "auto" into
the KV-cache algorithm the checkpoint names (utils/torch_utils.py:463-536, called by
engine/arg_utils.py:2329): "FP8" -> fp8_e4m3, "NVFP4" -> nvfp4.

Hand-worked bytes, Llama 3.1 70B (meta-llama/Llama-3.1-70B-Instruct config.json: 80 layers,
8 KV heads, head_dim 128 = 8192 / 64): per token 80 x 8 x (K + V) x 128 = 163,840 elements,
327,680 B in bf16, 163,840 B in fp8. At 8,192 tokens (512 whole 16-token blocks) a sequence is
1.25 GiB in fp8 and 2.5 GiB in bf16, so a 100 GiB pool holds 80 sequences, not 40: the 80.00
vLLM logs for nvidia/Llama-3.1-70B-Instruct-FP8 (issue 42, item 2).
"""

import json
from fractions import Fraction

import pytest

from kvlib import Deployment
from kvlib.models.catalog import load_model
from kvlib.models.quantization import kv_cache_request, modelopt_method, read_quantization
from kvlib.models.readers import read_config
from kvlib.models.readers.fields import load_config
from kvlib.serving.engines.vllm.dtypes import resolve_auto

GiB = 1024**3
LLAMA_70B = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
             "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
             "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256,
             "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
             "torch_dtype": "bfloat16", "tie_word_embeddings": False}
# ModelOpt 0.29 and before write this file beside config.json (the layout of
# nvidia/Llama-3.1-70B-Instruct-FP8's hf_quant_config.json: producer, quantization)
HF_QUANT = {"producer": {"name": "modelopt", "version": "0.15.0"},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                             "exclude_modules": ["lm_head"]}}
# ModelOpt 0.31 and after write it into config.json's quantization_config
IN_CONFIG = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
             "exclude_modules": ["lm_head"]}

PER_TOKEN_BF16 = 80 * 8 * 2 * 128 * 2  # 327,680 B
PER_TOKEN_FP8 = 80 * 8 * 2 * 128  # 163,840 B


def test_hand_worked_numbers():
    assert (PER_TOKEN_BF16, PER_TOKEN_FP8) == (327_680, 163_840)
    assert PER_TOKEN_FP8 * 8192 == 1.25 * GiB and PER_TOKEN_BF16 * 8192 == 2.5 * GiB
    assert Fraction(100 * GiB, PER_TOKEN_FP8 * 8192) == 80


def _folder(tmp_path, config: dict, hf_quant: dict | None = None):
    (tmp_path / "config.json").write_text(json.dumps(config))
    if hf_quant is not None:
        (tmp_path / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    return tmp_path


def _deployment(config: dict, kv_dtype="auto") -> Deployment:
    return Deployment(read_config(config, params=70_553_706_496), "H200", kv_dtype=kv_dtype,
                      weight_dtype="bf16", config=config, kv_cache_memory=100 * GiB)


@pytest.mark.parametrize("where", ["hf_quant_config.json", "config.json"])
def test_auto_is_fp8_where_the_checkpoint_asks(tmp_path, where):
    if where == "hf_quant_config.json":
        folder = _folder(tmp_path, LLAMA_70B, HF_QUANT)
        key = "quantization_config.quantization.kv_cache_quant_algo"
    else:
        folder = _folder(tmp_path, {**LLAMA_70B, "quantization_config": IN_CONFIG})
        key = "quantization_config.kv_cache_quant_algo"
    config = load_config(folder)  # the folder, as vLLM reads it
    assert config["quantization_config"]["quant_method" if where == "config.json" else
                                         "producer"]
    dep = _deployment(config)
    assert (dep.kv_dtype, dep.kv_cache_dtype) == ("fp8", "fp8_e4m3")
    assert dep.kv_dtype_why.startswith(f"kv_cache_dtype auto is fp8_e4m3: the checkpoint asks "
                                       f"for it ({key}='FP8')")
    assert "engine/arg_utils.py:2329" in dep.kv_dtype_why
    assert dep.kv_bytes_per_sequence_per_gpu(8192) == PER_TOKEN_FP8 * 8192
    assert dep.sessions(8192) == 80  # 100 GiB / 1.25 GiB
    # the reader's note says the same, for kvlib estimate and the plan's notes
    note = [a for a in load_model(str(folder / "config.json")).assumptions if "asks" in a]
    assert note and "a KV cache in fp8_e4m3, which vLLM's kv_cache_dtype 'auto' becomes" in note[0]


def test_auto_without_a_request_is_the_model_dtype_and_says_so(tmp_path):
    dep = _deployment(load_config(_folder(tmp_path, LLAMA_70B)))
    assert (dep.kv_dtype, dep.kv_cache_dtype) == ("bf16", "auto")
    assert dep.kv_dtype_why.startswith("kv_cache_dtype auto is the model's dtype, bf16")
    assert dep.sessions(8192) == 40  # 100 GiB / 2.5 GiB


def test_an_explicit_dtype_wins_and_has_no_why(tmp_path):
    dep = _deployment(load_config(_folder(tmp_path, LLAMA_70B, HF_QUANT)), kv_dtype="bf16")
    assert dep.kv_dtype == "bf16" and dep.kv_dtype_why is None
    assert dep.sessions(8192) == 40


def test_config_json_quantization_config_wins_over_the_file_beside_it(tmp_path):
    """vLLM reads hf_quant_config.json only when config.json has no quantization_config."""
    cfg = {**LLAMA_70B, "quantization_config": {**IN_CONFIG, "kv_cache_quant_algo": None}}
    config = load_config(_folder(tmp_path, cfg, HF_QUANT))
    assert resolve_auto(config).kv_dtype == "bf16"


def test_nvfp4_weights_from_the_file_beside_and_an_nvfp4_cache():
    """A ModelOpt NVFP4 file without quant_method: vLLM names it modelopt_fp4; its
    kv_cache_quant_algo "NVFP4" becomes nvfp4 (4-bit values, one fp8 scale per 16)."""
    raw = {"producer": {"name": "modelopt"},
           "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4",
                            "group_size": 16, "exclude_modules": ["lm_head"]}}
    assert modelopt_method(raw) == "modelopt_fp4"
    cfg = {**LLAMA_70B, "quantization_config": raw}
    assert read_quantization(cfg).scheme.name == "nvfp4"
    auto = resolve_auto(cfg)
    assert (auto.kv_cache_dtype, auto.from_checkpoint) == ("nvfp4", True)
    # per token: 80 x 8 x (K + V) x (128 / 2 + 128 / 16) bytes = 92,160
    dep = _deployment(cfg)
    assert dep.kv_bytes_per_sequence_per_gpu(1, block_size=1) == 80 * 8 * 2 * (64 + 8) == 92_160


# vLLM names a dict by its algorithm, then maps the name as it maps a string (utils/
# torch_utils.py:480-508): "fp8" -> fp8_e4m3 (what vLLM 0.34.0 itself returns for the NVFP4
# corpus files with such a dict: tests/oracle/test_kv_auto_oracle.py)
@pytest.mark.parametrize("scheme, expected", [
    ({"dynamic": False, "num_bits": 8, "type": "float"}, "fp8_e4m3"),
    ({"num_bits": 4, "type": "float"}, "nvfp4"),
    ({"dynamic": True, "num_bits": 8, "type": "float"}, None),  # unknown: vLLM stays "auto"
])
def test_modelopt_kv_cache_scheme_dicts(scheme, expected):
    cfg = {**LLAMA_70B, "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8",
                                                "kv_cache_scheme": scheme}}
    request = kv_cache_request(cfg)
    assert (request and request.kv_cache_dtype) == expected


def test_an_unknown_algorithm_stays_auto():
    cfg = {**LLAMA_70B, "quantization_config": {**IN_CONFIG, "kv_cache_quant_algo": "INT8"}}
    assert kv_cache_request(cfg) is None and resolve_auto(cfg).kv_dtype == "bf16"


def test_compressed_tensors_kv_cache_scheme_becomes_fp8():
    """llm-compressor's kv_cache_scheme: the attention layer takes fp8 while the dtype is auto
    (model_executor/layers/attention/attention.py:302-312)."""
    q = {"quant_method": "compressed-tensors", "format": "float-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
             "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}}},
         "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor",
                             "dynamic": False, "symmetric": True}, "ignore": ["lm_head"]}
    auto = resolve_auto({**LLAMA_70B, "quantization_config": q})
    assert (auto.kv_cache_dtype, auto.kv_dtype) == ("fp8", "fp8")
    assert "quantization_config.kv_cache_scheme" in auto.why
    no_kv = {**q, "kv_cache_scheme": None}
    assert resolve_auto({**LLAMA_70B, "quantization_config": no_kv}).from_checkpoint is False


def test_the_file_beside_is_merged_only_into_a_model_config(tmp_path):
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(HF_QUANT))
    (tmp_path / "generation_config.json").write_text(json.dumps({"do_sample": True}))
    assert "quantization_config" not in load_config(tmp_path / "generation_config.json")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_70B))
    assert load_config(tmp_path)["quantization_config"] == HF_QUANT


def test_kvlib_estimate_resolves_auto_the_same_way(tmp_path):
    """kvlib estimate --kv-dtype auto on the model folder: 163,840 B a token, fp8; the nvfp4
    request counts its scales (80 x 8 x 2 x (64 + 8) = 92,160 B)."""
    from kvlib.models.estimate import estimate

    folder = _folder(tmp_path, LLAMA_70B, HF_QUANT)
    e = estimate(str(folder / "config.json"), context=8192, kv_dtype="auto")
    assert e.kv_bytes_per_token == PER_TOKEN_FP8 and e.kv_bytes_per_sequence == 1.25 * GiB
    assert any(a.startswith("kv dtype auto: fp8_e4m3, which the checkpoint asks for")
               for a in e.assumptions)
    nvfp4 = {**HF_QUANT, "quantization": {**HF_QUANT["quantization"],
                                          "kv_cache_quant_algo": "NVFP4"}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(nvfp4))
    e = estimate(str(folder / "config.json"), context=8192, kv_dtype="auto")
    assert e.kv_bytes_per_token == 80 * 8 * 2 * (64 + 8) == 92_160
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(LLAMA_70B))
    assert estimate(str(plain / "config.json"), 8192, kv_dtype="auto").kv_bytes_per_token \
        == PER_TOKEN_BF16
