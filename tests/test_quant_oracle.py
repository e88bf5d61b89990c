"""vLLM 0.34.0's own quantization configs choosing each layer's parameters, on the CPU (issue 42,
"read what vLLM reads"): the totals tests/test_quant_formats.py quotes for vLLM, measured.

For each published config, :data:`SCRIPT` runs in .venv-oracle: ``EngineArgs(...)
.create_engine_config`` resolves the quantization method as ``vllm serve`` does, and the model's
own classes are built on the meta device (the oracle's boot.py and drive.py: vLLM's CUDA
platform for an H200, ``initialize_model``), so every layer's quantize method creates its
parameters; the script sums the bytes of every parameter and buffer. For Qwen3-32B-FP8-Static-
PerTensor (one layer, to keep it small) it also feeds the loader the tensors such an FP8
checkpoint holds (weight, weight_scale, input_scale per linear) and reports what it raises.
Runs under ``make oracle`` (``KVLIB_REQUIRE_ORACLE=1``); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_quant_formats import MINIMAX, MINIMAX_M3_VLLM_META, PREFIXED, QWEN36, corpus

from kvlib.models.catalog import bundled_config
from kvlib.models.params import count_params
from kvlib.serving.weights import checkpoint_weights

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv-oracle" / "bin" / "python"
ENGINE = ROOT / "tests" / "oracle" / "engine"

# the quantization method vLLM picks, and its parameters' and buffers' bytes (tp 1)
EXPECTED = {
    "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8": ("compressed-tensors", 562_951_680_612),
    "nvidia--DeepSeek-V4-Flash-NVFP4": ("deepseek_v4_fp8", 165_200_568_540),
    "nvidia--DeepSeek-V4-Pro-NVFP4": ("deepseek_v4_fp8", 899_364_025_292),
    "nvidia--Qwen3.6-27B-NVFP4": ("modelopt_mixed",
                                  QWEN36["nvidia--Qwen3.6-27B-NVFP4"]["vllm_meta"]),
    "nvidia--Qwen3.6-35B-A3B-NVFP4": ("modelopt_mixed",
                                      QWEN36["nvidia--Qwen3.6-35B-A3B-NVFP4"]["vllm_meta"]),
    **{name: ("modelopt_fp4", total) for name, (total, _) in PREFIXED.items()},
}

SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[3])
if sys.argv[4:] == ["minimax_m3"]:
    import minimax_m3  # noqa: F401  (its CuTe DSL stand-ins, then boot)
import boot  # noqa: F401  (first: vLLM's CUDA platform, kernel stand-ins, meta tensors)
import torch
from meta_build import build



def fp8_checkpoint(config):
    """The tensors of a per-tensor FP8 checkpoint of a one-layer Qwen3 config."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    nh, nkv, hd = (config["num_attention_heads"], config["num_key_value_heads"],
                   config["head_dim"])
    meta = lambda *shape, dt=torch.float8_e4m3fn: torch.empty(shape, dtype=dt, device="meta")
    out = [("model.embed_tokens.weight", meta(v, h, dt=torch.bfloat16)),
           ("lm_head.weight", meta(v, h, dt=torch.bfloat16))]
    for name, o, n in (("self_attn.q_proj", nh * hd, h), ("self_attn.k_proj", nkv * hd, h),
                       ("self_attn.v_proj", nkv * hd, h), ("self_attn.o_proj", h, nh * hd),
                       ("mlp.gate_proj", i, h), ("mlp.up_proj", i, h), ("mlp.down_proj", h, i)):
        out += [(f"model.layers.0.{name}.weight", meta(o, n)),
                (f"model.layers.0.{name}.weight_scale", meta(dt=torch.float32)),
                (f"model.layers.0.{name}.input_scale", meta(dt=torch.float32))]
    return out


results = []
for case in json.load(open(sys.argv[1])):
    cfg, model = build(case["config"])
    total = sum(t.numel() * t.element_size()
                for _, t in list(model.named_parameters()) + list(model.named_buffers()))
    r = {"id": case["id"], "quantization": cfg.model_config.quantization, "bytes": total}
    if case.get("load_fp8"):
        try:
            with torch.device("meta"):
                model.load_weights(iter(fp8_checkpoint(case["config"])))
            r["load"] = "loaded"
        except Exception as e:  # noqa: BLE001 - what vLLM's loader raises, reported
            r["load"] = f"{type(e).__name__}: {e}"[:300]
    results.append(r)
json.dump(results, open(sys.argv[2], "w"))
'''


def test_vllm_builds_what_kvlib_reads(tmp_path):
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own code: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: make oracle builds it")
    static = dict(corpus("Qwen--Qwen3-32B-FP8-Static-PerTensor"), num_hidden_layers=1)
    cases = [{"id": n, "config": corpus(n)} for n in EXPECTED]
    cases.append({"id": "static", "config": static, "load_fp8": True})
    fixed = json.loads(json.dumps(static))
    fixed["quantization_config"]["quant_method"] = "modelopt"
    cases.append({"id": "static+modelopt", "config": fixed, "load_fp8": True})
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    (tmp_path / "measure.py").write_text(SCRIPT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run([str(PYTHON), str(tmp_path / "measure.py"), str(tmp_path / "cases.json"),
                    str(tmp_path / "out.json"), str(ENGINE)], check=True, env=env,
                   timeout=1500, cwd=tmp_path)
    measured = {m["id"]: m for m in json.loads((tmp_path / "out.json").read_text())}
    # MiniMax M3's model modules import CuTe DSL kernels: built in a process of its own with
    # the stand-ins of the oracle's minimax_m3.py
    (tmp_path / "m3.json").write_text(json.dumps([{"id": MINIMAX, "config": corpus(MINIMAX)}]))
    subprocess.run([str(PYTHON), str(tmp_path / "measure.py"), str(tmp_path / "m3.json"),
                    str(tmp_path / "m3_out.json"), str(ENGINE), "minimax_m3"], check=True,
                   env=env, timeout=900, cwd=tmp_path)
    measured.update({m["id"]: m for m in json.loads((tmp_path / "m3_out.json").read_text())})
    assert (measured[MINIMAX]["quantization"], measured[MINIMAX]["bytes"]) == (
        "modelopt_mixed", MINIMAX_M3_VLLM_META)
    for name, (method, total) in EXPECTED.items():
        assert (measured[name]["quantization"], measured[name]["bytes"]) == (method, total), name
    # no method claims the config; the FP8 scales have nowhere to load
    assert measured["static"]["quantization"] is None
    assert measured["static"]["load"] == ("AttributeError: 'QKVParallelLinear' object has no "
                                          "attribute 'data'")
    # with quant_method "modelopt", as kvlib's refusal says: ModelOpt FP8, and the scales load
    assert (measured["static+modelopt"]["quantization"], measured["static+modelopt"]["load"]) \
        == ("modelopt", "loaded")


# --- weights as vLLM holds them, whole model and per GPU --------------------------------------

# what vLLM 0.34.0 builds on a rank that is not a weight: the RoPE cos/sin caches and the
# attention's q/k/v/prob scales and zero points (the KV cache's, not the checkpoint's)
WEIGHTS_SCRIPT = r"""
import json, re, sys, types
sys.path.insert(0, sys.argv[3])
STANDINS = sys.argv[4:] == ["standins"]
if STANDINS:  # CuTe DSL / cuda-python stand-ins (minimax_m3.py), then boot; FlashKDA's module
    import minimax_m3  # noqa: F401
    sys.modules["vllm._flashkda_C"] = types.ModuleType("vllm._flashkda_C")
import boot  # noqa: F401
from meta_build import build

SCALES = re.compile(r"\.(_?(k|v|q|prob)_scale|_one_scale|(k|v|q)_zero_point)$")
results = []
for case in json.load(open(sys.argv[1])):
    # Kimi K3's KDA picks FlashKDA on a GPU, a kernel library that sizes a workspace only;
    # Triton's prefill builds the same parameters
    extra = {"kda_prefill_backend": "triton"} if STANDINS else {}
    cfg, model = build(case["config"], case["tp"], case["text_only"], extra)
    size = lambda t: t.numel() * t.element_size()
    params = dict(model.named_parameters())
    scales = sum(size(t) for n, t in params.items() if SCALES.search(n))
    buffers = {n: size(t) for n, t in model.named_buffers()}
    results.append({"id": case["id"], "params": sum(map(size, params.values())) - scales,
                    "scales": scales, "buffers": sum(buffers.values()),
                    "buffer_names": sorted({re.sub(r"\.\d+\.", ".N.", n) for n in buffers})})
json.dump(results, open(sys.argv[2], "w"))
"""


def _vllm_weights(tmp_path, cases: list, standins: str = "") -> dict:
    """Build each case ({id, config, tp, text_only}) with vLLM 0.34.0's own classes on the
    meta device, as rank 0 of its TP group; {id: {params, scales, buffers, buffer_names}}:
    the bytes of its parameters less the attention's scales, the scales, its buffers.
    ``standins`` "standins": in a process with the oracle's minimax_m3.py stand-ins for the
    CuTe DSL and cuda-python modules (Kimi K3's and MiniMax M3's modules import them; MiniMax
    M2's RMSNorm under TP imports cuda-python's runtime) and an empty FlashKDA module."""
    out = tmp_path / f"weights{standins}.json"
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    (tmp_path / "weights.py").write_text(WEIGHTS_SCRIPT)
    subprocess.run([str(PYTHON), str(tmp_path / "weights.py"), str(tmp_path / "cases.json"),
                    str(out), str(ENGINE), *([standins] if standins else [])], check=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=1500, cwd=tmp_path)
    return {m["id"]: m for m in json.loads(out.read_text())}


# Published configs whose text model vLLM 0.34.0 builds (tp 1, language_model_only), each
# against kvlib's checkpoint bytes less a counted tower; the difference, where one is left,
# written out: vLLM's parameter bytes (less the attention's scales) - kvlib's.
TEXT = {
    # fp32 routers and e_score_correction_bias (GateLinear params_dtype float32)
    "MiniMaxAI--MiniMax-M2.5": 0, "nvidia--MiniMax-M2.5-NVFP4": 0,
    "XiaomiMiMo--MiMo-V2-Flash": 0, "zai-org--GLM-4.7-FP8": 0, "zai-org--GLM-4.7-Flash": 0,
    # fp32 e_score_correction_bias
    "deepseek-ai--DeepSeek-V3": 0, "moonshotai--Kimi-K2-Instruct": 0,
    "Qwen--Qwen3.8-2.4T-A95B-FP8": 0,
    # and the DSA indexer's wk unquantized (wk_weights_proj), its k_norm in fp32
    "deepseek-ai--DeepSeek-V3.2": 0, "zai-org--GLM-5-FP8": 0, "zai-org--GLM-5.2-FP8": 0,
    # A_log in fp32
    "Qwen--Qwen3-Next-80B-A3B-Thinking": 0,
    # the v shard of the 10 attention_k_eq_v layers; vLLM keeps the 60 layer_scalar values
    # as buffers (60 x 2 B), which kvlib counts with the norms
    "nvidia--Gemma-4-31B-IT-NVFP4": -60 * 2,
    # compressed-tensors FP8 128 x 128 block scales, which the checkpoint stores in bf16, in
    # fp32 as vLLM allocates them (kvlib's allocated bytes; tests/test_quant_formats.py
    # test_compressed_tensors_fp8_scales_in_fp32 by hand)
    "poolside--Laguna-XS.2-FP8": 0, "poolside--Laguna-S-2.1-FP8": 0,
}

# (config, tp, text only) built as rank 0 of its TP group: vLLM's bytes on that GPU against
# checkpoint_weights(config, tp).per_gpu; the difference written out
PER_GPU = {
    "DeepSeek-V3.2 TP 8": ("deepseek-ai--DeepSeek-V3.2", 8, True, 0),
    "GLM-4.7 TP 8": ("zai-org--GLM-4.7-FP8", 8, True, 0),
    # FP8 128 x 128 block scales of the fused qkv_proj: vLLM rounds each rank's 14.5 blocks
    # of rows (q 1536 + k 192 + v 128) up to 15 (48 layers x 32 column blocks x 4 B / 2)
    "MiMo-V2-Flash TP 8": ("XiaomiMiMo--MiMo-V2-Flash", 8, True, 48 * 32 * 4 // 2),
    # the tower's attention split by TP where 16 heads divide it, whole where they do not
    "Muse-Glimmer-30B TP 8": ("meta-models--Muse-Glimmer-30B", 8, False, 0),
    "Muse-Glimmer-30B TP 32": ("meta-models--Muse-Glimmer-30B", 32, False, 0),
    # the vision tower and its projection whole on every rank; vLLM keeps the 60 layer_scalar
    # values and the tower's std_bias and std_scale (2 x 1152) as buffers; the NVFP4 MLPs'
    # per-tensor input_scale and weight_scale_2 (fp32, 24 B a layer) are whole on every rank
    # where kvlib splits them: 60 x 24 x 7 / 8 more
    "Gemma-4-31B-IT-NVFP4 TP 8": ("nvidia--Gemma-4-31B-IT-NVFP4", 8, False,
                                  -60 * 2 - 2 * 1152 * 2 + 60 * 24 * 7 // 8),
    # its router (proj, scale, per_expert_scale) whole on every rank; buffers as above
    "gemma-4-26B-A4B TP 8": ("google--gemma-4-26B-A4B", 8, False, -30 * 2 - 2 * 1152 * 2),
    # the per-head q/k norms whole on every rank
    "Qwen3-32B-FP8 TP 8": ("Qwen--Qwen3-32B-FP8", 8, True, 0),
    "Llama 3.1 70B TP 8": ("llama-3.1-70b", 8, True, 0),
    "Qwen2.5-7B TP 4": ("qwen2.5-7b", 4, True, 0),
    # the FP8 MoE scale grid refined to 64 x 64 for 192 intermediate rows a rank
    # (fp8.py:553-565), as kvlib allocates it (test_quant_formats.py by hand)
    "Qwen3-30B-A3B-FP8 TP 4": ("Qwen--Qwen3-30B-A3B-FP8", 4, True, 0),
    # the fp32 block scales of the TEXT entry above, split by TP
    "Laguna-XS.2-FP8 TP 4": ("poolside--Laguna-XS.2-FP8", 4, True, 0),
    # o_proj's and the experts' w2 biases and the router's bias whole on every rank; the MXFP4
    # experts as gpt-oss's backend on an H200 (sm 90: OpenAI's Triton kernels) pads them:
    # each rank's 360 intermediate rows to 384, a multiple of 64 (fused_moe/oracle/mxfp4.py:
    # 900-901), kvlib's default sm 90 (test_quant_formats.py by hand)
    "gpt-oss-120b TP 8": ("openai--gpt-oss-120b", 8, True, 0),
    # at TP 2 the rows tell 64 from 128: 1440 a rank -> 1472 (a multiple of 128 would be 1536)
    "gpt-oss-20b TP 2": ("openai--gpt-oss-20b", 2, True, 0),
    # AltUp and per-layer-input projections whole; the timm vision tower (294,126,912
    # parameters) is not built here (timm is not installed in the oracle's environment:
    # boot.py's _GemmaTowers), as in make crosscheck; 11,008 B not traced
    "gemma-3n-e4b TP 2": ("gemma-3n-e4b", 2, False, -294_126_912 * 2 + 11_008),
}

# built in the stand-ins' process (tests/oracle/engine/minimax_m3.py)
PER_GPU_STANDINS = {
    # FP8 MoE block scales on the grid vLLM refines to 64 x 64 for 192 intermediate rows a
    # rank at TP 8 (layers/quantization/fp8.py:553-565), as kvlib allocates them
    "MiniMax-M2.5 TP 8": ("MiniMaxAI--MiniMax-M2.5", 8, True, 0),
    # routed_expert_down/up_proj, f_a_proj, res_proj and a 12-head tower whole on every rank
    # (tests/test_params_per_gpu.py); K3's mxfp4-pack-quantized rewritten to "mxfp4"
    # (model_executor/models/config.py:786-816), so routed_expert_down/up_proj in bf16
    # (mxfp4.py:92-108), the routed experts with no per-module extras, and in_proj_qkvgfab
    # padded to 16 rows a rank (nvidia/kda.py:640-669), as kvlib allocates them
    "Kimi-K3 TP 8": ("moonshotai--Kimi-K3", 8, False, 0),
}


def _config(name: str) -> dict:
    return bundled_config(name) if "--" not in name else corpus(name)


def _text_bytes(cfg: dict) -> int:
    """What vLLM allocates for the text model at TP 1 (checkpoint_weights(cfg, 1).per_gpu, the
    weights memory the plan subtracts) less a counted tower."""
    r = count_params(cfg)
    return (checkpoint_weights(cfg, 1).per_gpu
            - (r.parts["vision"] * 2 if r.towers == "counted" else 0))


def test_vllm_holds_the_weights_kvlib_counts(tmp_path):
    """vLLM 0.34.0's own classes on the meta device, whole text models (tp 1) and one rank of
    TP groups (towers included where marked), against kvlib: every parameter's bytes but the
    attention's q/k/v/prob scales (the KV cache's) equal kvlib's count, but for the
    differences written out above. vLLM's buffers (RoPE caches, masks, scalars) are not
    weights and are not compared."""
    if os.environ.get("KVLIB_REQUIRE_ORACLE") != "1":
        pytest.skip("runs vLLM's own code: make oracle (KVLIB_REQUIRE_ORACLE=1)")
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: make oracle builds it")
    cases = [{"id": n, "config": corpus(n), "tp": 1, "text_only": True} for n in TEXT]
    cases += [{"id": k, "config": _config(n), "tp": tp, "text_only": text}
              for k, (n, tp, text, _) in PER_GPU.items()]
    measured = _vllm_weights(tmp_path, cases)
    measured.update(_vllm_weights(tmp_path, [
        {"id": k, "config": _config(n), "tp": tp, "text_only": text}
        for k, (n, tp, text, _) in PER_GPU_STANDINS.items()], "standins"))
    for name, more in TEXT.items():
        assert measured[name]["params"] == _text_bytes(corpus(name)) + more, name
    for k, (name, tp, _, more) in {**PER_GPU, **PER_GPU_STANDINS}.items():
        assert measured[k]["params"] == checkpoint_weights(_config(name), tp).per_gpu + more, k
