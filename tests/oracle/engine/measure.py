"""Measure, with vLLM's own code, what kvlib predicts (``make oracle``; docs/crosscheck.md).

    python tests/oracle/engine/measure.py CASES.json OUT.json

CASES.json (written by ``tests/oracle/cases.py`` in kvlib's environment) lists cases: a model's
config, a context, a KV dtype, a TP size, a GPU and a pool of KV bytes, with kvlib's
prediction as the first guess. For each, OUT.json gets vLLM's KV-cache specs, its block
count and logged concurrency for that pool, and the most requests its scheduler carries to
full length (:func:`drive.carried`), or the error vLLM raised.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import boot  # noqa: F401  (first: the platform and the shims)
import drive
import vllm


def fixed(config: dict) -> tuple[dict, list[str]]:
    """The config as transformers 5.25.0 accepts it, and what was changed (none of it shapes
    the cache): Llama 4's published ``attn_temperature_tuning`` is the int 4 where
    Llama4TextConfig now declares a bool (a strict dataclass field), read as true; a Gemma 3n
    config without ``architectures`` names the Hub checkpoint's generating class."""
    changes = []
    text = config.get("text_config", config)
    if isinstance(text.get("attn_temperature_tuning"), int) and \
            not isinstance(text.get("attn_temperature_tuning"), bool):
        text = {**text, "attn_temperature_tuning": bool(text["attn_temperature_tuning"])}
        config = {**config, "text_config": text} if "text_config" in config else text
        changes.append("attn_temperature_tuning read as a bool (transformers 5.25.0)")
    if config.get("model_type") == "gemma3n" and not config.get("architectures"):
        # kvlib's Gemma 3n file is transformers' Gemma3nConfig() defaults, with no
        # architectures; vLLM would then take MODEL_MAPPING_NAMES' Gemma3nModel
        # (vllm/transformers_utils/config.py:985-994 in 0.34.0), a pooling model. The Hub
        # checkpoint names the generating class, as here
        config = {**config, "architectures": ["Gemma3nForConditionalGeneration"]}
        changes.append("architectures: Gemma3nForConditionalGeneration, as google/gemma-3n-E4B")
    return config, changes


def measure(case: dict) -> dict:
    start = time.monotonic()
    out = {"id": case["id"], "vllm": vllm.__version__}
    try:
        config, out["config_fixes"] = fixed(case["config"])
        cfg, specs = drive.build(config, case["context"], case["kv_cache_dtype"],
                                 case["tp"], tuple(case["gpu"]))
        out["specs"] = drive.spec_summary(specs)
        out["max_num_seqs"] = cfg.scheduler_config.max_num_seqs
        out["max_num_batched_tokens"] = cfg.scheduler_config.max_num_batched_tokens
        pool = drive.plan_pool(cfg, specs, case["pool_bytes"])
        out.update(num_blocks=pool.num_blocks, max_concurrency=pool.max_concurrency,
                   groups=pool.groups, block_size=cfg.cache_config.block_size)
        n, runs = drive.carried(cfg, pool, case["context"], case["guess"])
        out["carried"] = n
        out["runs"] = [vars(r) for r in runs]
    except Exception as e:  # reported per case: one family that cannot be built is data
        out["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:500]
        out["traceback"] = traceback.format_exc()[-2000:]
    out["seconds"] = round(time.monotonic() - start, 1)
    return out


def main(argv):
    cases_path, out_path = argv[1], argv[2]
    with open(cases_path) as f:
        cases = json.load(f)
    only = set(argv[3:])
    results = []
    for case in cases:
        if only and case["id"] not in only:
            continue
        r = measure(case)
        results.append(r)
        print(f"{r['id']}: carried {r.get('carried')}, guess {case['guess']}, "
              f"logged {r.get('max_concurrency')}, {r.get('error', '')[:120]} "
              f"({r['seconds']} s)", flush=True)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
