"""What the engines' folders share: a config's architecture and text part, a layer group's KV
heads, one group's bytes per token from an engine's cell expression, and the refusals every
engine but vLLM makes for what kvlib has not traced in it.
"""

from __future__ import annotations

from kvlib.core.units import fmt_bytes
from kvlib.models.spec import STATEFUL, CacheKind

__all__ = ["arch", "text_config", "kv_heads", "cell_bytes", "gib", "refuse_options",
           "refuse_layers"]


def arch(config: dict | None) -> str:
    """The config's first ``architectures`` entry ("" when it has none)."""
    arch = (config or {}).get("architectures") or [""]
    return arch[0] or ""


def text_config(config: dict | None) -> dict:
    """A multimodal config's ``text_config``, else the config itself."""
    config = config or {}
    return config.get("text_config") or config


def kv_heads(group) -> int:
    """The KV heads of one layer group (a :class:`~kvlib.models.spec.LayerGroup`)."""
    s = group.sizes
    if "N_g" in s:
        return s["N_g"]
    if group.attention == "MHA":
        return s["N_h"]
    if group.attention == "MQA":
        return 1
    raise ValueError(f"attention {group.attention!r}: no KV-head count")


def cell_bytes(engine, key: str, values: dict, tp: int, b: int) -> int:
    """One layer group's bytes per token: ``engine``'s cell expression ``key`` at the group's
    values, TP (the MHA cell's heads per rank) and b, by the engine's kept code
    (``engine.evaluate_cell``: an engine's pools module or its package; no SymPy)."""
    extra = {"TP": tp} if key == "CELL_MHA" else {}
    return engine.evaluate_cell(key, **values, **extra, b=b)


def gib(n) -> str:
    return fmt_bytes(n, "GiB")


def refuse_options(dep, name: str) -> None:
    """Raise (ValueError) for the options of ``dep`` (a Deployment) whose pools are not traced
    for the engine ``name``: a draft model, context parallelism, scaled KV formats."""
    if dep.draft is not None:
        raise ValueError(f"--draft: {name}'s draft pools are not traced by kvlib")
    if dep.dcp > 1:
        raise ValueError(f"--dcp {dep.dcp}: {name}'s context-parallel pools are not traced")
    if dep.scales is not None:
        raise ValueError(f"--kv-scales/--kv-dtype {dep.kv_dtype} with scales: {name}'s "
                         "scaled KV formats are not traced by kvlib")


def refuse_layers(model, name: str) -> None:
    """Raise (ValueError, by name) for the layer kinds of ``model`` whose pools are not traced
    for the engine ``name``: state layers, layers without a cache, indexers, compressed layers
    and anything but MHA, GQA, MQA, MLA."""
    for g in model.groups:
        if g.kind in STATEFUL:
            raise ValueError(f"{model.name}: {name}'s pool for {g.attention} state layers "
                             "is not traced by kvlib (the per-request state size it budgets)")
        if g.kind in (CacheKind.NONE, CacheKind.SHARED):
            raise ValueError(f"{model.name}: {name}'s handling of {g.layers} layers that "
                             f"keep no cache ({g.kind}) is not traced by kvlib")
        if g.kind == CacheKind.INDEXER:
            raise ValueError(f"{model.name}: {name}'s sparse-attention indexer pool is "
                             "not traced by kvlib")
        if g.kind == CacheKind.COMPRESSED or g.ratio is not None or g.attention not in (
                "MHA", "GQA", "MQA", "MLA", "MLA+RoPE"):
            raise ValueError(f"{model.name}: {name}'s pool for {g.attention or g.kind} "
                             f"layers ({g.kind}) is not traced by kvlib")
