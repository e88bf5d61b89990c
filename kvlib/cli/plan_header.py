"""The lines that open every ``kvlib plan`` (vLLM's, SGLang's, TensorRT-LLM's, ``--engine
all``'s) beyond :func:`kvlib.serving.engines.answer.first_line`: the KV dtype ``auto`` became
and why (issue 42 item 2), and vLLM's refusal of a context past the model's limit (item 4).
Plan dicts in, lines out; shared by :mod:`kvlib.cli.plan` and :mod:`kvlib.cli.plan_engines`.
"""

from __future__ import annotations

__all__ = ["kv_label", "kv_why_lines", "context_lines"]


def kv_label(kv_dtype: str, element: str, why: str | None) -> str:
    """The KV dtype as the plan's first line names it: as given; under ``auto`` (``why`` set,
    :attr:`Deployment.kv_dtype_why`) the dtype it became and whence: ``bf16 (auto: the model's
    dtype)``, ``fp8_e4m3 (auto: the checkpoint asks for it)``. ``kv_dtype``: the plan's
    (vLLM's cache_dtype after auto resolves: "auto" or the checkpoint's), ``element``: kvlib's
    element dtype behind it."""
    if why is None:
        return kv_dtype
    if kv_dtype == "auto":
        return f"{element} (auto: the model's dtype)"
    return f"{kv_dtype} (auto: the checkpoint asks for it)"


def kv_why_lines(kv_dtype: str, why: str | None) -> list[str]:
    """The header's second line where ``auto`` became the checkpoint's KV dtype: the reason in
    full (the key and value the checkpoint sets, vLLM's rule); none otherwise (the model's
    dtype is said in a note)."""
    return [f"  kv dtype: {why}"] if why is not None and kv_dtype != "auto" else []


def context_lines(d: dict) -> list[str]:
    """The header's line where vLLM would refuse the context (max_model_len past the model's
    derived maximum, :mod:`kvlib.serving.engines.vllm.max_model_len`): before any memory, as
    vLLM checks it before it loads anything."""
    if not d.get("vllm_refuses_max_model_len"):
        return []
    return [f"  context refused: {d['vllm_max_model_len_why']}; the rows below are what it "
            "would hold with the override"]
