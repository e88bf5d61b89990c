"""vLLM 0.34.0's own head size and KV head count for configs without ``head_dim`` /
``num_key_value_heads`` (issue 42, "Read what vLLM reads").

    .venv-oracle/bin/python class_defaults.py CASES.json OUT.json

CASES: [{"id", "config"}]. For each: config.json is written to a folder and read by vLLM's
``get_config`` (transformers_utils/config.py: transformers' AutoConfig, vLLM's own patches),
``get_hf_text_config`` picks the language model, and the model type's convertor
(``MODEL_ARCH_CONFIG_CONVERTORS``, else the base, model_arch_config_convertor.py:91-157,837)
answers ``get_head_size`` and ``get_total_num_kv_heads``. OUT: [{"id", "status": "ok" |
"cannot_build", "head_size", "kv_heads", "mla" (vLLM reads it as latent attention, its head
size kv_lora_rank + qk_rope_head_dim) or "error"}].
"""

import json
import os
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"

import vllm.config  # noqa: E402,F401 - vllm.config imports the convertor module first
from vllm.transformers_utils.config import get_config, get_hf_text_config  # noqa: E402
from vllm.transformers_utils.model_arch_config_convertor import (  # noqa: E402
    MODEL_ARCH_CONFIG_CONVERTORS,
    ModelArchConfigConvertorBase,
)


def check(config: dict) -> dict:
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    try:
        hf = get_config(folder, trust_remote_code=False)
        text = get_hf_text_config(hf)
        convertor = MODEL_ARCH_CONFIG_CONVERTORS.get(hf.model_type, ModelArchConfigConvertorBase)
        c = convertor(hf, text)
        return {"status": "ok", "head_size": c.get_head_size(),
                "kv_heads": c.get_total_num_kv_heads(), "mla": bool(c.is_deepseek_mla())}
    except Exception as e:  # noqa: BLE001 - a config this transformers / vLLM cannot build
        return {"status": "cannot_build", "error": f"{type(e).__name__}: {e}"[:300]}


def main() -> None:
    cases = json.load(open(sys.argv[1]))
    out = [{"id": c["id"], **check(c["config"])} for c in cases]
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
