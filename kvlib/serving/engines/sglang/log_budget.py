"""SGLang's KV budget worked out again from its own start-up log (``kvlib explain-log``, issue
43): the pool's token count from the free memory the log prints before and after the weights
load, and the static fraction f (server_args' mem_fraction_static, or --mem-fraction-static in a
pasted command).

Every release from 0.3 to 0.5.23 sizes the pool the same way (0.5.23
mem_cache/kv_cache_configurator.py:2990-3060; model_runner.py's profile_max_num_token before
it): rest = B - A (1 - f) GB, with A the free memory before the weights ("Load weight begin.
avail mem=A GB") and B after them ("Load weight end. ..., avail mem=B GB"), each the least over
the ranks; tokens = int(rest x 2^30 // cell), cell the bytes one token takes on one rank (MHA:
layers x max(1, KV heads // TP) x (head_dim + v_head_dim) x b; MLA: layers x (kv_lora_rank +
qk_rope_head_dim) x b); then floored to whole pages and capped by max_total_tokens
(kv_cache_configurator.py:3096-3107). A and B print two decimals, so the count is known to a
range: the check agrees when the log's count lies in it.

Only where that is the whole story: one pool of full-attention (MHA/GQA) or latent (MLA) layers,
no draft model, no model override, no pipeline stages, no multimodal reservation. Elsewhere, or
where a count falls outside the range (a release that resizes the pool after capturing its CUDA
graphs, 0.5.23's post_capture_kv_active), the count is shown with the range and said not
explained, never a disagreement.
"""

from __future__ import annotations

import json
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import cell_bytes
from kvlib.serving.engines.log import HALF, EngineCheck, GiB
from kvlib.serving.engines.sglang import kept, pools
from kvlib.serving.engines.sglang import log_lines as ll

__all__ = ["cell_bytes_per_token", "token_range", "budget_checks", "overridden"]


def cell_bytes_per_token(groups, tp: int, b: int) -> int | None:
    """Bytes one token takes on one rank over ``groups`` (all full attention, or all latent), by
    SGLang's cell expressions (:func:`kvlib.serving.engines.sglang.pools.cell_of`); None for any
    other mix (sliding, state or indexer layers: pools this check does not size)."""
    if {g.kind for g in groups} not in ({CacheKind.LATENT}, {CacheKind.FULL}):
        return None
    return sum(cell_bytes(pools, *pools.cell_of(g), tp, b) for g in groups)


def token_range(before: str, after: str, fraction: str, cell: int, page: int = 1,
                cap: int | None = None) -> tuple[int, int]:
    """The least and greatest pool token counts the printed free memories ``before`` and
    ``after`` the weights (GB strings, two decimals) allow: SGLang's rest F_1 - F_0 (1 - f)
    (:data:`kvlib.serving.engines.sglang.budget.REST_MEASURED`) over the cell, in whole pages
    (:data:`kvlib.serving.engines.sglang.pools.TOKENS`), capped by ``cap`` (max_total_tokens)."""
    a, b_, f = Fraction(before), Fraction(after), Fraction(fraction)

    def count(a_, b2):  # SGLang's budget and pool expressions, by their kept code
        rest = kept.evaluate("budget.REST_MEASURED", F_0=a_ * GiB, F_1=b2 * GiB, f=f)
        n = kept.evaluate("pools.TOKENS", B_KV=max(0, rest), c=cell, p=page)
        return min(n, cap) if cap is not None else n

    return count(a + HALF, b_ - HALF), count(a - HALF, b_ + HALF)


def _first_per_rank(lines, rx) -> dict:
    """Each rank's first line that ``rx`` matches, as (number, text, GB string): the target
    model's; a draft model loads after it and prints the same words again."""
    out: dict = {}
    for i, t in lines:
        if (m := rx.search(t)):
            out.setdefault(ll.rank_of(t), (i, t, m["gb"]))
    return out


def overridden(value: str | None) -> dict:
    """The keys of a json_model_override_args value ('{}' or absent: none)."""
    if not value or value in ("{}", "None"):
        return {}
    try:
        out = json.loads(value)
    except ValueError:
        return {"(unreadable)": value}
    return out if isinstance(out, dict) else {}


def budget_checks(lines, groups, tp: int | None, page: int, b: int, settings: dict,
                  kv_lines: dict[int, int]) -> list[EngineCheck]:
    """The budget check of a log (``lines``: (number, text)), on its first KV line (``kv_lines``:
    line number -> token count, the target's pools) or else its max_total_num_tokens line;
    ``settings``: server_args' and a pasted command's values by server_args name. Empty where
    the log prints no free memory before and after the weights."""
    before = list(_first_per_rank(lines, ll.LOAD_BEGIN).values())
    after_ = _first_per_rank(lines, ll.LOAD_END)
    if not before or not after_:
        return []
    after = list(after_.values())
    if kv_lines:
        at = min(kv_lines)
        printed = kv_lines[at]
    else:
        found = next(((i, int(m["n"])) for i, t in lines if (m := ll.MAX_TOTAL.search(t))), None)
        if found is None:
            return []
        at, printed = found
    text = dict(lines)[at]
    a, b_after = min((x[2] for x in before), key=Fraction), min((x[2] for x in after),
                                                                 key=Fraction)
    reduced = next((m["f"] for _, t in lines if (m := ll.REDUCED_FRACTION.search(t))), None)
    fraction = reduced or settings.get("mem_fraction_static")
    cap_raw = settings.get("max_total_tokens")
    cap = int(cap_raw) if cap_raw and cap_raw.isdigit() else None
    kind_of = after[0][1]

    def info(why: str) -> list[EngineCheck]:
        return [EngineCheck(at, text, "pool tokens (the budget)", f"{printed:,}", "not explained",
                            "info", why)]

    if fraction in (None, "None", ""):
        return info("the log prints the free memory before and after the weights but not "
                    "mem_fraction_static (no server_args line, no --mem-fraction-static): the "
                    "budget is not worked out")
    if tp is None:
        return info("TP unknown (pass --tp): the bytes a token takes on one rank are not known")
    reasons = []
    if settings.get("speculative_algorithm") not in (None, "None", ""):
        reasons.append("a draft model shares the budget (speculative decoding)")
    if overridden(settings.get("json_model_override_args")):
        reasons.append("json_model_override_args changes the model")
    if (settings.get("pp_size") or "1") not in ("1", "None"):
        reasons.append("pipeline stages split the layers")
    if "ForConditionalGeneration" in kind_of and not reduced:
        reasons.append("a multimodal model's runtime reservation is taken first")
    cell = cell_bytes_per_token(groups, tp, b)
    if cell is None:
        reasons.append("the model's pools are not one pool of full-attention or latent layers")
    if reasons:
        return info("not worked out: " + "; ".join(reasons))
    lo, hi = token_range(a, b_after, fraction, cell, page, cap)
    ok = lo <= printed <= hi
    how = (f"int((after {b_after} - before {a} x (1 - f {fraction})) GB x 2^30 // {cell:,} B a "
           f"token on one rank)" + (f", floored to page {page}" if page > 1 else "")
           + (f", capped by max_total_tokens {cap:,}" if cap is not None else "")
           + "; the free memories are the least over the ranks, printed to 0.01 GB, hence a "
           "range (kv_cache_configurator.py:2990-3060, 3096-3107, SGLang 0.5.23; "
           "profile_max_num_token in 0.3-0.5.9)")
    span = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
    if (hi - lo) * 20 > max(printed, 1):
        return [EngineCheck(at, text, "pool tokens (the budget)", f"{printed:,}",
                            f"{span}: not explained", "info",
                            how + "; the range is wider than 5% of the count (a small pool: the "
                            "two-decimal figures say too little), so it is not taken as a check")]
    if ok:
        return [EngineCheck(at, text, "pool tokens (the budget)", f"{printed:,}", span, "ok", how)]
    return [EngineCheck(at, text, "pool tokens (the budget)", f"{printed:,}",
                        f"{span}: not explained", "info",
                        how + "; the log's count lies outside it (a release that sizes the pool "
                        "otherwise, e.g. 0.5.23's resizing after the CUDA graphs are captured, "
                        "or memory taken between the two lines): shown, not a disagreement")]
