"""The cases ``make oracle`` measures with vLLM's own code, and kvlib's prediction for each.

    python tests/oracle/cases.py OUT.json

Runs in kvlib's environment. Every bundled model, at three contexts and two KV dtypes (DeepSeek
V4 also at 1M tokens), on one H200 at TP 1, with a fixed pool of KV memory (vLLM's
``kv_cache_memory_bytes``): the pool is the smaller of 40 GiB and what about 64 of kvlib's
sequences hold at full length, so that each scheduler run stays short while the null block,
whole blocks and the prefill peak still count. kvlib's predicted sessions are the first guess
of the oracle's search (``tests/oracle/engine/drive.py``); the comparison itself is
``test_vllm_oracle.py``.
"""

from __future__ import annotations

import json
import sys

from kvlib.models.catalog import BUNDLED, bundled_config, load_model
from kvlib.serving.engines.vllm.dtypes import stored_kv_dtype
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.gpus import get_gpu

GiB = 1024**3
CONTEXTS = (8192, 32768, 131072)
# DeepSeek V4 is built for a million tokens: that context too, with "auto" (fp8 is the same
# fp8_ds_mla cache); about 35 s of scheduler steps each
LONG = {"deepseek-v4-flash": 1048576, "deepseek-v4-pro": 1048576}
KV_DTYPES = ("auto", "fp8")  # vLLM's names: auto is the model dtype (bf16 here)
GPU = "H200"
SESSIONS = 64  # about how many sequences each pool holds
MAX_POOL = 40 * GiB
MiB = 1024**2


def _kvlib_dtype(model: str, kv_cache_dtype: str) -> str:
    """What kvlib plans with: vLLM's "auto" is the model dtype (bf16 here), and where vLLM
    stores another dtype than asked, that one (the plan does the same)."""
    asked = "bf16" if kv_cache_dtype == "auto" else kv_cache_dtype
    return stored_kv_dtype(bundled_config(model), asked)[0]


def pool_for(model: str, context: int, kv_cache_dtype: str) -> int:
    """Bytes of KV memory for this case (whole MiB)."""
    layout = vllm_layout(load_model(model), context, _kvlib_dtype(model, kv_cache_dtype), 1, GPU)
    hold = layout.holding(context)
    want = (SESSIONS * hold.decode + hold.prefill + 1) * layout.bytes_per_block
    return min(MAX_POOL, -(-want // MiB) * MiB)


def predict(model: str, context: int, kv_cache_dtype: str, pool: int) -> dict:
    """kvlib's figures for one case: the layout's blocks, logged concurrency and sessions."""
    layout = vllm_layout(load_model(model), context, _kvlib_dtype(model, kv_cache_dtype), 1, GPU)
    return {"num_blocks": layout.num_blocks(pool),
            "max_concurrency": [layout.num_blocks(pool), layout.blocks_per_request],
            "sessions": layout.sessions(pool, context),
            "block_size": layout.block_size,
            # vLLM's start-up check: one request's blocks against the pool less the null block
            "refuses": layout.needed_bytes() > pool - layout.bytes_per_block}


def cases() -> list[dict]:
    gpu = get_gpu(GPU)
    out = []
    for model in sorted(BUNDLED):
        runs = [(n, d) for n in CONTEXTS for d in KV_DTYPES]
        runs += [(LONG[model], "auto")] if model in LONG else []
        for context, kv_cache_dtype in runs:
            case = {"id": f"{model}@{context}@{kv_cache_dtype}", "model": model,
                    "config": bundled_config(model), "context": context,
                    "kv_cache_dtype": kv_cache_dtype, "tp": 1,
                    "gpu": [list(gpu.cuda_capability), gpu.total_memory_bytes,
                            f"NVIDIA {gpu.name}"]}
            try:
                pool = pool_for(model, context, kv_cache_dtype)
                case.update(pool_bytes=pool, kvlib=predict(model, context, kv_cache_dtype,
                                                           pool))
                case["guess"] = case["kvlib"]["sessions"]
            except ValueError as e:  # kvlib refuses this layout: vLLM is still asked
                case.update(pool_bytes=MAX_POOL, kvlib={"error": str(e)}, guess=1)
            out.append(case)
    return out


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        json.dump(cases(), f)
