"""The answer every engine gives for one deployment and context: :class:`EnginePlan`, its
pools per GPU (bytes exact), so the engines' plans read side by side (``kvlib plan --engine``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["EnginePlan"]


@dataclass(frozen=True)
class EnginePlan:
    """One engine's pools for one deployment and context, per GPU; bytes exact."""

    engine: str
    release: str
    model: str
    gpu: str
    tp: int
    context: int
    kv_dtype: str
    total_memory: int
    weights: int
    kv_budget: int
    cell: int  # bytes per token of the (full-attention) pool, every layer it holds
    page: int  # tokens per page (SGLang) or block (TensorRT-LLM, vLLM)
    tokens: int  # the token count the engine logs (SGLang #tokens, TensorRT-LLM's (N))
    sessions: int  # requests of `context` tokens at once
    swa_tokens: int | None = None
    swa_cell: int | None = None
    max_running_requests: int | None = None
    fraction: Fraction | None = None  # mem_fraction_static / free_gpu_memory_fraction
    terms: tuple = ()  # (label, bytes or value, source)
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["fraction"] = None if self.fraction is None else float(self.fraction)
        d["terms"] = [{"label": t[0], "value": t[1], "source": t[2]} for t in self.terms]
        d["assumptions"], d["notes"] = list(self.assumptions), list(self.notes)
        return d
