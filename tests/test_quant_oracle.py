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
import json, os, sys, tempfile
sys.path.insert(0, sys.argv[3])
if sys.argv[4:] == ["minimax_m3"]:
    import minimax_m3  # noqa: F401  (its CuTe DSL stand-ins, then boot)
import boot  # noqa: F401  (first: vLLM's CUDA platform, kernel stand-ins, meta tensors)
import drive
import torch
from vllm.config import set_current_vllm_config
from vllm.engine.arg_utils import EngineArgs
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.usage.usage_lib import UsageContext
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.worker import workspace


def build(config):
    boot.set_gpu((9, 0), 150_109_880_320, "NVIDIA H200")
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    args = EngineArgs(model=folder, max_model_len=4096, skip_tokenizer_init=True,
                      load_format="dummy", dtype="bfloat16", tensor_parallel_size=1,
                      language_model_only=True, distributed_executor_backend="uni")
    cfg = args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    if config.get("model_type") == "deepseek_v4":
        cfg.kernel_config.enable_jit_warmup = False
    drive._distributed(cfg, 1)
    if not workspace.is_workspace_manager_initialized():
        workspace.init_workspace_manager(torch.device("meta"))
    with set_current_vllm_config(cfg), set_default_torch_dtype(cfg.model_config.dtype), \
            boot.MetaTensors():
        model = initialize_model(vllm_config=cfg)
    return cfg, model


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
