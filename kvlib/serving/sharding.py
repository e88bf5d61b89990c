"""Tensor parallelism as vLLM shards attention (notebook 06, "Tensor parallelism").

``QKVParallelLinear`` and ``ModelConfig.get_num_kv_heads``: each rank holds KV
heads / TP heads; when TP exceeds the KV-head count each rank holds one whole
head, replicated TP / heads times; TP must divide the head count or be a
multiple of it, and must divide the query heads. A latent (MLA) or a single KV
head (MQA) is not split: every rank holds all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvlib.core import validate
from kvlib.models.spec import LayerGroup, ModelSpec

__all__ = ["Sharding", "shard", "shard_state", "as_mha"]

# Which state sizes vLLM divides by the TP size (``MambaStateShapeCalculator``,
# vllm 0.33.0 model_executor/layers/mamba/mamba_utils.py): every head count and channel width.
_STATE_SPLIT = {
    "Mamba": ("d_inner",),
    "Mamba2": ("d_inner", "N_sg", "N_sh"),
    "Gated DeltaNet": ("N_lk", "N_lv"),
    "Short convolution": ("d_in",),
    "Lightning attention": ("N_h",),
}


@dataclass(frozen=True)
class Sharding:
    """How one layer group's cache is spread over ``tp`` ranks.

    kv_heads: heads in the cache (1 for MQA and for an MLA latent); per_rank:
    heads each rank holds; replicas: how many ranks hold each head.
    """

    tp: int
    kv_heads: int
    per_rank: int
    replicas: int


def _kv_symbol(group: LayerGroup) -> str | None:
    """The symbol that counts cached heads in this group's formula, if any."""
    args = group.formulas.elements_per_token_layer.args
    if "N_g" in args:
        return "N_g"
    if "N_h" in args:
        return "N_h"  # MHA: every query head has its own key/value head
    return None  # MQA or a latent: one cached vector per token, not split


def shard(group: LayerGroup, tp: int) -> tuple[LayerGroup, Sharding]:
    """The group as one TP rank holds it, and its :class:`Sharding`.

    The returned group has the same kind and formula; only N_h (query heads,
    N_h / tp) and the cached head count (heads / tp, at least 1) change.
    """
    tp = validate.positive_int("tensor_parallel_size", tp)
    sizes = dict(group.sizes)
    q_heads = sizes.get("N_h")
    if q_heads is not None and q_heads % tp:
        raise ValueError(
            f"tensor_parallel_size={tp} must divide the query heads N_h={q_heads} "
            f"(vLLM splits query heads evenly)"
        )
    symbol = _kv_symbol(group)
    heads = sizes[symbol] if symbol else 1
    if tp <= heads:
        if heads % tp:
            raise ValueError(
                f"tensor_parallel_size={tp} must divide the KV-head count {heads} "
                f"or be a multiple of it"
            )
        per_rank, replicas = heads // tp, 1
    else:
        if tp % heads:
            raise ValueError(
                f"tensor_parallel_size={tp} must divide the KV-head count {heads} "
                f"or be a multiple of it"
            )
        per_rank, replicas = 1, tp // heads
    if q_heads is not None:
        sizes["N_h"] = q_heads // tp
    if symbol:
        sizes[symbol] = per_rank
    return replace(group, sizes=sizes), Sharding(tp, heads, per_rank, replicas)



def as_mha(model: ModelSpec) -> ModelSpec:
    """The same model with one key/value head per query head (GQA/MQA groups -> MHA)."""
    groups = []
    for g in model.groups:
        if g.attention in ("GQA", "MQA"):
            sizes = {k: v for k, v in g.sizes.items() if k != "N_g"}
            g = replace(g, attention="MHA", sizes=sizes)
        groups.append(g)
    return replace(model, name=f"{model.name} as MHA", groups=tuple(groups))



def shard_state(group: LayerGroup, tp: int) -> LayerGroup:
    """A constant-size-state group as one TP rank holds it: heads and channels / tp.

    vLLM asserts that each split is exact; for Mamba2, B/C groups that TP does not
    divide are first extended to ``tp`` (``extra_groups_for_head_shards``).
    """
    tp = validate.positive_int("tensor_parallel_size", tp)
    sizes = dict(group.sizes)
    if group.attention == "Mamba2" and sizes["N_sg"] % tp:
        sizes["N_sg"] += tp - sizes["N_sg"]
    for name in _STATE_SPLIT[group.attention]:
        if sizes[name] % tp:
            raise ValueError(f"tensor_parallel_size={tp} must divide {name}={sizes[name]} of the "
                             f"{group.attention} layers (vLLM splits it evenly)")
        sizes[name] //= tp
    return replace(group, sizes=sizes)
