"""vLLM 0.34.0's own start-up check of max_model_len, run on configs (issue 42 item 4).

    .venv-oracle/bin/python max_model_len.py CASES.json OUT.json

CASES: [{"id", "config", "max_model_len"}]. For each: transformers builds the config
(``AutoConfig.for_model``, no download), vLLM patches its RoPE parameters
(``patch_rope_parameters``) and derives the maximum (``derive_max_model_len_and_key``), then
``_get_and_verify_max_len`` (vllm/config/model.py:2589-2727) accepts or raises. OUT:
[{"id", "status": "ok" | "refused" | "cannot_build", "value" or "error"}]. The environment
variable VLLM_ALLOW_LONG_MAX_MODEL_LEN is cleared first: the default is what is checked.
"""

import json
import os
import sys
import types

os.environ.pop("VLLM_ALLOW_LONG_MAX_MODEL_LEN", None)

from transformers import AutoConfig  # noqa: E402
from vllm.config import model as vllm_model  # noqa: E402
from vllm.transformers_utils.config import patch_rope_parameters  # noqa: E402
from vllm.transformers_utils.model_arch_config_convertor import (  # noqa: E402
    ModelArchConfigConvertorBase,
)


def check(config: dict, max_model_len: int) -> dict:
    d = dict(config)
    try:
        hf = AutoConfig.for_model(d.pop("model_type"), **d)
        text = hf.get_text_config()
        patch_rope_parameters(text)
        derived = ModelArchConfigConvertorBase(hf, text).derive_max_model_len_and_key()
    except Exception as e:  # noqa: BLE001 - a config this transformers cannot build
        return {"status": "cannot_build", "error": f"{type(e).__name__}: {e}"[:300]}
    arch = types.SimpleNamespace(derived_max_model_len_and_key=derived)
    try:
        value = vllm_model._get_and_verify_max_len(text, arch, None, max_model_len, False, None)
    except ValueError as e:
        return {"status": "refused", "error": str(e)[:300]}
    return {"status": "ok", "value": value}


def main() -> None:
    cases = json.load(open(sys.argv[1]))
    out = [{"id": c["id"], **check(c["config"], c["max_model_len"])} for c in cases]
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
