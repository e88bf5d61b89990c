"""The answer every engine gives for one deployment and context: :class:`EnginePlan`, its
pools per GPU (bytes exact), so the engines' plans read side by side (``kvlib plan --engine``,
``kvlib plan --engine all``).

Every engine's plan opens with the same line (:func:`first_line`: model, GPUs, TP, replicas,
context, KV dtype, weights, release), ends with the same totals (sequences per replica, and
in all = replicas x per replica, replicas = GPUs / TP) and gives the same JSON keys
(:data:`COMMON_KEYS`); what only one engine has sits under a key named for it
(``"sglang"``, ``"trtllm"``; vLLM's own keys stay where ``kvlib plan --json`` has always
printed them, beside the common ones).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["DoesNotFit", "EnginePlan", "COMMON_KEYS", "ENGINE_NAMES", "engine_title", "first_line",
           "fmt_fraction", "plural"]

# the engines' names as people write them
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}

# the keys every engine's --json has, at its top level (docs/cli.md)
COMMON_KEYS = (
    "engine", "release", "model", "gpu", "gpus", "tp", "replicas", "context", "kv_dtype",
    "weight_dtype", "total_memory_bytes_per_gpu", "weights_bytes_per_gpu",
    "kv_budget_bytes_per_gpu", "budget_rule", "budget_base", "kv_bytes_per_token_per_gpu",
    "page_tokens",
    "pools", "window_pool", "state_pool", "kv_tokens_per_gpu", "max_sequences_per_replica",
    "max_sequences",
    "differs_from_vllm", "fits", "assumptions", "notes",
)


def plural(n: int, word: str) -> str:
    """'1 replica', '2 replicas'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def fmt_fraction(x) -> str:
    """A fraction as people read it: ``0.9``; where the engine holds it as a float32 whose
    value differs from the decimal (TensorRT-LLM's 0.9 is 0.89999997615...), both:
    ``0.9 (float32 0.8999999761581421)``."""
    value = float(x)
    short = f"{value:.9g}"
    for digits in range(1, 10):  # the fewest digits that give the same float32 back
        text = f"{value:.{digits}g}"
        if struct.pack("f", float(text)) == struct.pack("f", value):
            short = text
            break
    if float(short) == value:
        return short
    return f"{short} (float32 {value:.16g})"


def engine_title(engine: str, release: str) -> str:
    """'vLLM 0.34.0', 'SGLang 0.5.23', 'TensorRT-LLM at 000439672005' (a commit)."""
    return f"{ENGINE_NAMES[engine]} {release}"


def first_line(d: dict, rule: str) -> str:
    """The line every engine's plan opens with, from its common keys (``d``: a plan's JSON):
    model, GPUs, TP, replicas, context, KV dtype, weights, engine and release, and ``rule``
    (the budget rule in words) in brackets."""
    return (f"{d['model']} on {d['gpus']} x {d['gpu']}, TP={d['tp']} "
            f"({plural(d['replicas'], 'replica')}), context {d['context']:,}, "
            f"kv {d['kv_dtype']}, weights {d['weight_dtype']}, "
            f"{engine_title(d['engine'], d['release'])} ({rule})")


class DoesNotFit(ValueError):
    """An engine's planner found no memory left for the KV cache (the weights and what the
    engine takes besides exceed its budget): an answer about the deployment, not an input
    error. ``kvlib plan`` exits 1 on it with the sizes, as for vLLM's plan."""


@dataclass(frozen=True)
class EnginePlan:
    """One engine's pools for one deployment and context, per GPU; bytes exact.

    sessions: requests of ``context`` tokens one replica (one TP group) holds at once;
    :attr:`sessions_in_all` multiplies by the replicas (``gpus // tp``)."""

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
    sessions: int  # requests of `context` tokens at once, per replica
    swa_tokens: int | None = None
    swa_cell: int | None = None
    max_running_requests: int | None = None
    fraction: Fraction | None = None  # mem_fraction_static / free_gpu_memory_fraction
    terms: tuple = ()  # (label, bytes or value, source)
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)
    gpus: int | None = None  # GPUs in all (None: one replica, gpus = tp)
    weight_dtype: str = ""  # the weights as the first line names them: "checkpoint (bf16)"
    budget_rule: str = ""  # the rule's name: vLLM's "extensible", SGLang's "mem_fraction_static"
    rule_text: str = ""  # the rule in words, in the first line's brackets
    budget_base: str = ""  # what the budget is a fraction of, in words
    pools: tuple = ()  # (name, tokens, bytes per token), one per pool the engine allocates
    window_pool: str = ""  # how sliding-window layers are held, in words
    state_pool: str = ""  # how constant-size state (Mamba, linear attention) is held
    extras: tuple = ()  # (key, value): the engine's own JSON keys, beside the common ones

    @property
    def all_gpus(self) -> int:
        return self.tp if self.gpus is None else self.gpus

    @property
    def replicas(self) -> int:
        """Data-parallel copies of the TP group: GPUs / TP."""
        return self.all_gpus // self.tp

    @property
    def sessions_in_all(self) -> int:
        """Requests of the context at once on every GPU: replicas x :attr:`sessions`."""
        return self.replicas * self.sessions

    def differs(self, vllm: dict | None = None) -> str:
        """One line: what makes this engine's answer differ from vLLM's (the budget's base, the
        page, the window pool, the state pool); ``vllm``: vLLM's plan of the same deployment
        (its JSON's common keys), to name its page and pools beside this engine's."""
        if self.engine == "vllm":
            return "the reference"
        v = vllm or {}
        parts = [f"budget: {self.budget_base}",
                 f"page: {plural(self.page, 'token')}"
                 + (f" (vLLM: {v['page_tokens']:,})" if v else "")]
        for what, mine in (("window", self.window_pool), ("state", self.state_pool)):
            theirs = v.get(f"{what}_pool")
            if mine or theirs:
                parts.append(f"{what}: {mine or 'no pool'}"
                             + (f" (vLLM: {theirs})" if theirs else ""))
        if len(parts) == 2:
            parts.append("no window or state pool in this model")
        return "; ".join(parts)

    def common(self, vllm: dict | None = None) -> dict:
        """The keys every engine's JSON has (:data:`COMMON_KEYS`), in that order."""
        d = {
            "engine": self.engine, "release": self.release, "model": self.model,
            "gpu": self.gpu, "gpus": self.all_gpus, "tp": self.tp, "replicas": self.replicas,
            "context": self.context, "kv_dtype": self.kv_dtype,
            "weight_dtype": self.weight_dtype, "total_memory_bytes_per_gpu": self.total_memory,
            "weights_bytes_per_gpu": self.weights, "kv_budget_bytes_per_gpu": self.kv_budget,
            "budget_rule": self.budget_rule, "budget_base": self.budget_base,
            "kv_bytes_per_token_per_gpu": self.cell,
            "page_tokens": self.page,
            "pools": [{"pool": n, "tokens": t, "bytes_per_token": c} for n, t, c in self.pools],
            "window_pool": self.window_pool, "state_pool": self.state_pool,
            "kv_tokens_per_gpu": self.tokens, "max_sequences_per_replica": self.sessions,
            "max_sequences": self.sessions_in_all,
            "differs_from_vllm": self.differs(vllm), "fits": self.sessions > 0,
            "assumptions": list(self.assumptions), "notes": list(self.notes),
        }
        assert tuple(d) == COMMON_KEYS
        return d

    def to_dict(self, vllm: dict | None = None) -> dict:
        """The JSON of ``kvlib plan --engine ENGINE --json``: :data:`COMMON_KEYS`, then the
        engine's own keys under its name (``"sglang": {...}``)."""
        d = self.common(vllm)
        own = {"fraction": None if self.fraction is None else float(self.fraction),
               "terms": [{"label": t[0], "value": t[1], "source": t[2]} for t in self.terms],
               **dict(self.extras)}
        d[self.engine] = own
        return d

    def text_head(self) -> str:
        """The plan's first line (:func:`first_line`)."""
        return first_line(self.common(), self.rule_text)
