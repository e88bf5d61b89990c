"""vLLM 0.34.0's own reading of kv_cache_dtype "auto" from a checkpoint's quantization_config
(issue 42 item 2), run on configs.

    .venv-oracle/bin/python kv_auto.py CASES.json OUT.json

CASES: [{"id", "config"}], each a config.json as a dict (any hf_quant_config.json beside it
already merged in as quantization_config, as transformers_utils/config.py:996-1009 does when
config.json has none). For each, vLLM's steps in its order, with its own functions:

1. ``ModelArchConfigConvertorBase.get_quantization_config``
   (transformers_utils/model_arch_config_convertor.py:241-292): the config's (or its
   text_config's) quantization_config, ModelOpt's quant_method named from its producer and
   quant_algo, the method's name normalized;
2. ``resolve_kv_cache_dtype_string("auto", model_config)`` (utils/torch_utils.py:517-536,
   called by engine/arg_utils.py:2329): a ModelOpt checkpoint's KV algorithm;
3. ``ModelConfig._verify_quantization`` (config/model.py:1403-1505), run as it is on an object
   holding what it reads: which quantization method claims the checkpoint (the overrides in
   vLLM's order of preference); the platform's own check is left out (a GPU is planned, this
   is a CPU);
4. where step 2 left "auto": that method's config class built by vLLM from the dict
   (``get_quantization_config(method).from_config``) and its ``kv_cache_scheme``, which the
   attention layer turns into "fp8" (model_executor/layers/attention/attention.py:308-312).

OUT: [{"id", "kv_cache_dtype" (vLLM's final string), "method" (the one that claims it),
"error" where vLLM's own reading of the quantization_config raised}].
"""

import copy
import json
import sys
import types

from vllm.config import model as vllm_model  # first: vLLM's own import order
from vllm.model_executor.layers.quantization import get_quantization_config
from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase
from vllm.utils.torch_utils import resolve_kv_cache_dtype_string


def _namespace(d: dict) -> types.SimpleNamespace:
    """A config object for the attributes these steps read (quantization_config, text_config)."""
    ns = types.SimpleNamespace(**{k: v for k, v in d.items() if k != "text_config"})
    if isinstance(d.get("text_config"), dict):
        ns.text_config = _namespace(d["text_config"])
    return ns


def resolve(config: dict) -> dict:
    hf = _namespace(copy.deepcopy(config))
    convertor = ModelArchConfigConvertorBase.__new__(ModelArchConfigConvertorBase)
    convertor.hf_config = hf
    try:
        quant_cfg = convertor.get_quantization_config()
    except ValueError as e:  # e.g. "Unknown ModelOpt quant algo"
        return {"kv_cache_dtype": None, "method": None, "error": f"{e}"[:300]}
    if quant_cfg is not None and getattr(hf, "quantization_config", None) is None:
        hf.quantization_config = quant_cfg  # the text_config's, as the model config holds it
    model_config = types.SimpleNamespace(hf_config=hf)
    dtype = resolve_kv_cache_dtype_string("auto", model_config)
    method = None
    if quant_cfg is not None:
        me = types.SimpleNamespace(quantization=None, hf_config=hf,
                                   allow_deprecated_quantization=True,
                                   model_arch_config=types.SimpleNamespace(
                                       quantization_config=quant_cfg))
        try:
            vllm_model.ModelConfig._verify_quantization(me)
        except Exception as e:  # noqa: BLE001 - vLLM refuses the checkpoint's format
            return {"kv_cache_dtype": dtype, "method": None,
                    "error": f"{type(e).__name__}: {e}"[:300]}
        method = me.quantization
    out = {"kv_cache_dtype": dtype, "method": method}
    if dtype == "auto" and method:
        try:
            qc = get_quantization_config(method).from_config(quant_cfg)
        except Exception as e:  # noqa: BLE001 - vLLM's own parser refuses this config
            out["error"] = f"{type(e).__name__}: {e}"[:300]
            return out
        if getattr(qc, "kv_cache_scheme", None) is not None:
            out["kv_cache_dtype"] = "fp8"
    return out


class _Planned:
    """The platform as planned: a GPU, whose check of the method is not run here."""

    @staticmethod
    def verify_quantization(quantization: str) -> None:
        return None


if __name__ == "__main__":
    vllm_model.current_platform = _Planned()
    cases = json.load(open(sys.argv[1]))
    json.dump([{"id": c["id"], **resolve(c["config"])} for c in cases], open(sys.argv[2], "w"))
