"""vLLM's sessions for one plan: its block layout for the plan's KV budget, model and
max_model_len, what that layout logs and holds, and the longest context its start-up check
passes (:func:`vllm_sessions`; the plan's headline, notebook 06). Bytes per GPU.
"""

from __future__ import annotations

from kvlib.core.dtypes import bytes_per_element, kv_format
from kvlib.core.units import fmt_bytes
from kvlib.serving.engines.vllm.defaults import VLLM_DEFAULTS
from kvlib.serving.engines.vllm.dtypes import stored_kv_dtype, vllm_kv_cache_dtype
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.engines.vllm.pages import largest_fitting_len

__all__ = ["VLLM_KEYS", "vllm_sessions"]


def _gib(n: int) -> str:
    return fmt_bytes(n, "GiB")


VLLM_KEYS = ("vllm_max_concurrency", "vllm_block_size", "vllm_kv_cache_groups",
              "vllm_padding_layers", "vllm_blocks_per_request", "vllm_block_sizes",
              "vllm_num_blocks", "vllm_bytes_per_block", "vllm_blocks_per_sequence",
              "vllm_prefill_blocks", "vllm_max_num_seqs", "vllm_needed_bytes",
              "vllm_max_model_len")


def vllm_sessions(dep, context: int, budget: int, notes: list[str]):
    """vLLM ``dep.vllm``'s layout for the same KV budget, model and max_model_len, and what
    it logs and holds (the plan's ``vllm_*`` fields by name); (None, all None) where kvlib
    cannot build it. ``dep``: a Deployment; ``notes`` gets the plan's notes appended."""
    if dep.draft is not None or dep.dcp > 1:
        notes.append("vllm_max_concurrency: not computed with a draft model or DCP")
        return None, dict.fromkeys(VLLM_KEYS)
    if dep.scales is not None:  # kvlib's layout of vLLM's pages holds no inline scales
        name = (dep.kv_cache_dtype if kv_format(dep.kv_cache_dtype).scales is not None else
                vllm_kv_cache_dtype(dep.kv_dtype, dep.scales) or f"{dep.kv_dtype} with scales")
        notes.append(f"vllm_max_concurrency: not computed for {name} (vLLM stores its "
                     f"{dep.scales.name} scales inside the pages, which kvlib's layout of "
                     "vLLM does not hold); sessions by bytes, scales included")
        return None, dict.fromkeys(VLLM_KEYS)
    kv_dtype, why = stored_kv_dtype(dep.config, dep.kv_dtype)
    if why:
        notes.append(f"vLLM {dep.vllm}: {why}")
    try:
        default = VLLM_DEFAULTS[dep.vllm]["block_size"]
        layout = vllm_layout(dep.model, context, kv_dtype, dep.tp, dep.gpu,
                             block_size=dep.block_size if dep.block_size != default else None,
                             release=dep.vllm)
    except ValueError as e:
        notes.append(f"vllm_max_concurrency: not computed ({e})")
        return None, dict.fromkeys(VLLM_KEYS)
    notes += [f"vLLM {dep.vllm}: {n}" for n in layout.notes]
    if dep.kv_dtype in ("int8", "int4") and vllm_kv_cache_dtype(dep.kv_dtype,
                                                                 dep.scales) is None:
        notes.append(f"vLLM {dep.vllm} has no plain {dep.kv_dtype} kv_cache_dtype (its "
                     f"{dep.kv_dtype}_per_token_head adds two fp32 scales per token and head, "
                     "vllm/config/cache.py:44-67): the figure is the cache at "
                     f"{bytes_per_element(dep.kv_dtype)} B per element alone")
    # Gemma 4: full 128, sliding 64; DeepSeek V4's two compressor states by their window
    sizes = {g.kind if g.kind != "compressor" else f"compressor {g.window}": g.block_size
             for g in layout.groups}
    hold = layout.holding(context)
    needed = layout.needed_bytes()
    available = max(0, budget) - layout.bytes_per_block  # less the null block

    def needed_at(length):
        return vllm_layout(dep.model, length, kv_dtype, dep.tp, dep.gpu,
                           block_size=dep.block_size if dep.block_size != default else None,
                           release=dep.vllm).needed_bytes()

    longest = (context if needed <= available
               else largest_fitting_len(needed_at, available, context))
    notes.append(_sessions_note(layout, hold, budget))
    return layout, dict(zip(VLLM_KEYS, (
        round(float(layout.max_concurrency(budget)), 2), layout.block_size, len(layout.groups),
        layout.padding_layers, layout.blocks_per_request,
        sizes if len(set(sizes.values())) > 1 else None, layout.num_blocks(budget),
        layout.bytes_per_block, hold.decode, hold.prefill, layout.max_num_seqs, needed,
        longest), strict=True))


def _sessions_note(layout, hold, budget: int) -> str:
    """How the sessions follow from vLLM's blocks (the plan's headline)."""
    n = layout.sessions(budget, hold.length)
    capped = " (its max_num_seqs)" if n == layout.max_num_seqs else ""
    return (f"sessions: vLLM's allocator, {layout.num_blocks(budget):,} blocks of "
            f"{layout.bytes_per_block:,} B less the null block; a sequence of "
            f"{hold.length:,} tokens holds {hold.decode:,} blocks at full length and "
            f"{hold.prefill:,} at the peak of its prefill ({hold.chunk:,} tokens a step): "
            f"{n:,} at once{capped}, the last admitted while the others decode "
            "(make oracle checks it with vLLM's scheduler)")
