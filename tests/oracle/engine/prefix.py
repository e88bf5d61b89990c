"""vLLM 0.34.0's scheduler with prefix caching on, every prompt beginning with the same tokens
(``kvlib plan --shared-prefix``; issue 42 item 5).

    python prefix.py CASES.json OUT.json

CASES: [{"id", "config", "context", "pool_bytes", "prefix_tokens", "guess"}]. Each case is
built as ``measure.py`` builds one (:func:`drive.build`, :func:`drive.plan_pool`) and driven by
:func:`drive.carried`, with :func:`drive._request` replaced by one whose prompt starts with the
same ``prefix_tokens`` token ids for every request (then tokens of its own), so vLLM's block
hasher finds the prefix's full blocks already computed. OUT: [{"id", "carried",
"enable_prefix_caching", "num_blocks", "runs"} or {"id", "error"}].
"""

from __future__ import annotations

import json
import sys

import boot  # noqa: F401  (first: the platform and the shims)
import drive
from vllm.sampling_params import SamplingParams
from vllm.v1.request import Request

_plain = drive._request


def sharing(prefix_tokens: int):
    """drive._request with the same first ``prefix_tokens`` token ids in every prompt."""
    shared = [(k * 13) % 60000 + 1 for k in range(prefix_tokens)]

    def request(prompt_len: int, max_tokens: int, hasher):
        drive._serial[0] += 1
        i = drive._serial[0]
        own = [(i * 7 + k) % 60000 + 1 for k in range(max(0, prompt_len - prefix_tokens))]
        own[:1] = [60001 + i] if own else []  # its own tokens differ from the first one on
        prompt = (shared + own)[:prompt_len]
        return Request(request_id=f"r{i}", prompt_token_ids=prompt,
                       sampling_params=SamplingParams(max_tokens=max_tokens, ignore_eos=True),
                       pooling_params=None, block_hasher=hasher)

    return request


def main(argv) -> None:
    cases = json.load(open(argv[1]))
    out = []
    for case in cases:
        try:
            cfg, specs = drive.build(case["config"], case["context"])
            pool = drive.plan_pool(cfg, specs, case["pool_bytes"])
            drive._request = sharing(case["prefix_tokens"]) if case["prefix_tokens"] else _plain
            n, runs = drive.carried(cfg, pool, case["context"], case["guess"])
            out.append({"id": case["id"], "carried": n, "num_blocks": pool.num_blocks,
                        "enable_prefix_caching": cfg.cache_config.enable_prefix_caching,
                        "runs": [vars(r) for r in runs]})
        except Exception as e:  # noqa: BLE001 - reported per case
            out.append({"id": case["id"], "error": f"{type(e).__name__}: {e}"[:500]})
        print(out[-1]["id"], out[-1].get("carried"), out[-1].get("error", ""), flush=True)
        with open(argv[2], "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)
