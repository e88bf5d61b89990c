"""vLLM 0.34.0's model for a config.json, built with its own classes on the meta device as rank
0 of ``tp`` ranks on a planned H200, so that every layer's quantize method creates its
parameters and nothing is allocated; shared by the scripts of tests/test_quant_oracle.py and
tests/oracle/test_params_unseen_oracle.py, which run in .venv-oracle. Import ``boot`` (and any
stand-ins) first."""

import json
import os
import tempfile

import boot
import drive
import torch
from vllm.config import set_current_vllm_config
from vllm.engine.arg_utils import EngineArgs
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.usage.usage_lib import UsageContext
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.worker import workspace


def build(config: dict, tp: int = 1, text_only: bool = True, additional_config=None):
    """(vLLM's config, the model) for ``config`` at TP ``tp`` (``text_only``: vLLM's
    language_model_only; ``additional_config``: EngineArgs' own)."""
    boot.set_gpu((9, 0), 150_109_880_320, "NVIDIA H200")
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    args = EngineArgs(model=folder, max_model_len=4096, skip_tokenizer_init=True,
                      load_format="dummy", dtype="bfloat16", tensor_parallel_size=tp,
                      language_model_only=text_only, additional_config=additional_config or {},
                      distributed_executor_backend="uni" if tp == 1 else "mp")
    cfg = args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    cfg.parallel_config.tensor_parallel_size = tp
    if config.get("model_type") == "deepseek_v4":
        cfg.kernel_config.enable_jit_warmup = False
    drive._distributed(cfg, tp)  # rank 0 of tp
    if not workspace.is_workspace_manager_initialized():
        workspace.init_workspace_manager(torch.device("meta"))
    with set_current_vllm_config(cfg), set_default_torch_dtype(cfg.model_config.dtype), \
            boot.MetaTensors():
        model = initialize_model(vllm_config=cfg)
    return cfg, model
