"""Bundled real models, and the paper's formulas applied to them as blog post A does (notebook 05).

``BUNDLED`` maps a short name (used by ``kvlib estimate`` and the widgets) to
an offline copy of the model's ``config.json`` (``kvlib/models/configs/<name>.json``),
the Hugging Face repository it was copied from, and its published parameter
count. :func:`load_model` reads a bundled name or a path into a
:class:`kvlib.models.spec.ModelSpec`::

    >>> load_model("llama-3.1-70b").kv_bytes_per_token(2)   # 80 * 2 * 8 * 128 * 2
    327680

:func:`simplified` gives blog post A's view of a model: the paper's Table 1 / Table 2
formulas on the model specs of the paper's Table 3 (every layer full
attention, MLA counted as the latent alone), evaluated through the same
formulas.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from kvlib.models.readers import ConfigReading, load_config, parse_config, read_config
from kvlib.models.spec import EMPTY, CacheKind, LayerGroup, ModelSpec

__all__ = [
    "BundledModel", "BUNDLED", "HYBRIDS", "bundled_config", "bundled_name", "load_model", "reading",
    "simplified", "attention_label", "title",
]


@dataclass(frozen=True)
class BundledModel:
    """One bundled model.

    params: total parameter count as published by the model's authors (for a
    mixture of experts, all experts; ``active_params`` is the per-token count, published
    and cited in the note; None for a dense text model, whose active count is its total:
    :attr:`active`).
    """

    name: str
    title: str
    repo: str
    params: int
    params_note: str
    active_params: int | None = None
    copy: str = ""  # where the bundled file was copied from, when not from the Hub page itself

    @property
    def active(self) -> int:
        """Parameters one token reads: ``active_params``, or the total for a dense model."""
        return self.params if self.active_params is None else self.active_params

    @property
    def source(self) -> str:
        return f"https://huggingface.co/{self.repo}/blob/main/config.json"


def _key(name: str) -> str:
    """Spelling-insensitive form of a name: 'Llama-3.1-70B', 'llama3.1-70b' -> 'llama3170b'."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _m(name, title, repo, params, note, active=None, copy="") -> BundledModel:
    return BundledModel(name, title, repo, int(params), note, None if active is None
                        else int(active), copy)


# Hybrid and heterogeneous models (notebook 07). huggingface.co is not reachable from where
# these were collected: each file is a public GitHub copy of the model's config.json.
_AIC = ("copied from ai-dynamo/aiconfigurator @095f58a5 "
        "(aic-core/src/aiconfigurator_core/model_configs/)")
_AIC_NEWER = _AIC.replace("@095f58a5", "@0b077da5")  # the 2026 families' later commit


BUNDLED: dict[str, BundledModel] = {m.name: m for m in (
    _m("llama-3-70b", "Llama 3 70B", "meta-llama/Meta-Llama-3-70B", 70.6e9,
       "70.6B, the count shown on the model page (paper's Table 3 model)"),
    _m("llama-3.1-70b", "Llama 3.1 70B", "meta-llama/Llama-3.1-70B", 70.6e9,
       "70.6B, the count shown on the model page"),
    _m("llama-3.1-8b", "Llama 3.1 8B", "meta-llama/Llama-3.1-8B", 8.03e9,
       "8.03B, the count shown on the model page"),
    _m("gemma-3-27b", "Gemma 3 27B", "google/gemma-3-27b-it", 27.4e9,
       "27.4B including the 0.4B SigLIP vision encoder (paper's Table 3 model); active: "
       "27.4B less the 417M vision encoder (Gemma 3 report, arXiv:2503.19786, Table 1), "
       "which decoding text does not read", 26.983e9),
    _m("deepseek-v2", "DeepSeek V2", "deepseek-ai/DeepSeek-V2", 236e9,
       "236B total, 21B activated per token (DeepSeek-V2 paper, arXiv:2405.04434, "
       "abstract; paper's Table 3 model)", 21e9),
    _m("deepseek-v3", "DeepSeek V3", "deepseek-ai/DeepSeek-V3", 671e9,
       "671B total (the 685B on the model page adds the 14B multi-token-prediction "
       "module), 37B activated per token (DeepSeek-V3 report, arXiv:2412.19437, "
       "abstract)", 37e9),
    _m("gemma-2-9b", "Gemma 2 9B", "google/gemma-2-9b", 9.24e9,
       "9.24B, the count shown on the model page"),
    _m("qwen3-32b", "Qwen3 32B", "Qwen/Qwen3-32B", 32.8e9,
       "32.8B, from the model card"),
    _m("qwen2.5-7b", "Qwen2.5 7B Instruct", "Qwen/Qwen2.5-7B-Instruct", 7.61e9,
       "7.61B, from the model card"),
    _m("mistral-7b-v0.1", "Mistral 7B v0.1", "mistralai/Mistral-7B-v0.1", 7.24e9,
       "7.24B, the count shown on the model page (announced as 7.3B)"),
    _m("falcon-7b", "Falcon 7B", "tiiuae/falcon-7b", 7.22e9,
       "7.22B, the count shown on the model page (model card: 7B)"),
    _m("gpt2", "GPT-2 (124M)", "openai-community/gpt2", 124e6,
       "124M, the smallest GPT-2"),
    _m("llama-4-scout", "Llama 4 Scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct", 109e9,
       "109B total (vision encoder included), 17B activated per token (16 experts; "
       "Meta's model card)", 17e9),
    _m("gpt-oss-20b", "gpt-oss 20B", "openai/gpt-oss-20b", 20.9e9,
       "20.9B total, 3.6B activated per token, the input embedding not counted "
       "(gpt-oss model card, arXiv:2508.10925)", 3.6e9),
    _m("qwen3-next-80b-a3b", "Qwen3-Next 80B-A3B", "Qwen/Qwen3-Next-80B-A3B-Instruct", 80e9,
       "80B total, 3B active (transformers docs, model_doc/qwen3_next.md)", 3e9,
       copy=f"{_AIC.replace('@095f58a5', '@1b7cfb10')} (the Thinking sibling, same content) and "
            "a report quoting the Instruct file: the two agree key for key"),
    _m("nemotron-h-56b", "Nemotron-H 56B", "nvidia/Nemotron-H-56B-Base-8K", 56e9,
       "56B, dense (arXiv:2504.03624)", copy=f"{_AIC}; re-serialised (4-space indent); no "
       "second copy found"),
    _m("nemotron-3-nano-30b-a3b", "Nemotron 3 Nano 30B-A3B",
       "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 30e9,
       "30B total, 3B active, as the model's name states (not checked against its card)", 3e9,
       copy=f"{_AIC}; no second copy found (two fine-tunes carry the same layer pattern)"),
    _m("llama-3.3-nemotron-super-49b", "Llama 3.3 Nemotron Super 49B",
       "nvidia/Llama-3_3-Nemotron-Super-49B-v1", 49e9,
       "49B, dense (NVIDIA Megatron-Bridge docs, llama-nemotron.md)",
       copy=f"{_AIC}; a second copy embedded in a public test module agrees on every block"),
    _m("deepseek-v3.2", "DeepSeek V3.2", "deepseek-ai/DeepSeek-V3.2", 671e9,
       "671B total, 37B active, DeepSeek's figure for the V3 architecture (not checked "
       "against the V3.2 card)", 37e9, copy=f"{_AIC}; no second copy found"),
    _m("gemma-4-26b-a4b", "Gemma 4 26B-A4B", "google/gemma-4-26B-A4B", 26e9,
       "26B total, 4B active, as the model's name states (not checked against its card)", 4e9,
       copy=f"{_AIC}; no second copy found"),
    # 2026 families (issue 23), byte-for-byte copies from the same mirror (git blob ids in
    # tests/fixtures/configs/SOURCES.md and below)
    _m("qwen3.5-27b", "Qwen3.5 27B", "Qwen/Qwen3.5-27B", 27e9,
       "27B, as the model's name states (of its text model kvlib's counter, from the config, "
       "finds 26,895,998,464)",
       copy=f"{_AIC_NEWER}, blob bde2be7f34a1"),
    _m("qwen3.6-35b-a3b", "Qwen3.6 35B-A3B", "Qwen/Qwen3.6-35B-A3B", 35e9,
       "35B total, 3B active, as the model's name states", 3e9,
       copy="copied from ai-dynamo/aiconfigurator @21555d0a (src/aiconfigurator/model_configs/"
            "Qwen--Qwen3.6-35B-A3B_config.json, branch simonec/layerwise-moe), blob b3de40f40a9f"),
    _m("glm-5", "GLM-5", "zai-org/GLM-5", 744e9,
       "744B total, 40B activated (GLM-5 technical report, arXiv:2602.15763, architecture "
       "table)", 40e9, copy=f"{_AIC_NEWER}, blob a34ad26ab367"),
    _m("nemotron-3-ultra-550b-a55b", "Nemotron 3 Ultra 550B-A55B",
       "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 550e9,
       "550B total, 55B active, as the model's name states (kvlib's count from the config: "
       "549.3B)", 55e9, copy=f"{_AIC_NEWER}, blob 1919ced0bfec"),
    _m("gpt-oss-120b", "gpt-oss 120B", "openai/gpt-oss-120b", 116.8e9,
       "116.8B total, 5.1B activated per token (gpt-oss model card, arXiv:2508.10925)", 5.1e9,
       copy=f"{_AIC_NEWER}, blob 2dbc99f5a0ec"),
    _m("minimax-m2.5", "MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.5", 230e9,
       "230B total, 10B active, MiniMax-M2's model card (M2.5 keeps its architecture)", 10e9,
       copy=f"{_AIC_NEWER}, blob b88d057a4df1"),
    # Issue 31: families read from vLLM 0.34.0's modeling code, byte-for-byte copies from the same
    # mirror at the commit named (git blob ids in tests/fixtures/configs/SOURCES.md)
    _m("mimo-v2-flash", "MiMo-V2-Flash", "XiaomiMiMo/MiMo-V2-Flash", 309e9,
       "309B total, 15B active, Xiaomi's announced figures (not checked against the card)", 15e9,
       copy=f"{_AIC.replace('@095f58a5', '@27f3be86')}, blob adfc14eaab04"),
    _m("glm-5.2", "GLM-5.2", "zai-org/GLM-5.2", 744e9,
       "744B total, 40B active, GLM-5's figures (GLM-5.2's config keeps GLM-5's sizes; not "
       "checked against the GLM-5.2 card)", 40e9,
       copy=f"{_AIC.replace('@095f58a5', '@e418fe29')}, blob f8b342fa9e8f"),
    _m("kimi-k2.5", "Kimi K2.5", "moonshotai/Kimi-K2.5", 1.04e12,
       "1.04T total, 32B active, Kimi K2's model-card figures (K2.5 keeps K2's text model; "
       "vision tower not counted)", 32e9,
       copy=f"{_AIC.replace('@095f58a5', '@507f0fb0')}, blob 2a9983f30584"),
    _m("minimax-m2.7", "MiniMax-M2.7", "MiniMaxAI/MiniMax-M2.7", 230e9,
       "230B total, 10B active, MiniMax-M2's model card (M2.7 keeps its architecture)", 10e9,
       copy=f"{_AIC.replace('@095f58a5', '@69386f5f')}, blob ba213004c5c8"),
    # Issue 33: DeepSeek V4's compressed attention (notebook 08), byte-for-byte copies from the
    # same mirror (tests/fixtures/configs/corpus-2026.json.gz holds them with their source)
    _m("deepseek-v4-flash", "DeepSeek V4-Flash", "deepseek-ai/DeepSeek-V4-Flash", 284e9,
       "284B total, 13B active, DeepSeek's announced figures (kvlib counts it from the config "
       "within 1%: tests/test_params_v4.py)", 13e9,
       copy=f"{_AIC.replace('@095f58a5', '@ab0e2834')} (src/aiconfigurator/model_configs/), "
            "blob e78680334c31"),
    _m("deepseek-v4-pro", "DeepSeek V4-Pro", "deepseek-ai/DeepSeek-V4-Pro", 1.6e12,
       "1.6T total, 49B active, DeepSeek's announced figures, rounded to a tenth of a trillion "
       "(kvlib's count from the config lies inside: tests/test_params_v4.py)", 49e9,
       copy=f"{_AIC.replace('@095f58a5', '@ab0e2834')} (src/aiconfigurator/model_configs/), "
            "blob b282a14e3f5f"),
    # Notebook 08's comparison: plain MHA, and a model whose later layers share earlier caches
    _m("llama-2-7b", "Llama 2 7B", "meta-llama/Llama-2-7b-hf", 6.74e9,
       "6.74B, the count shown on the model page (every layer MHA: 32 KV heads of 32)",
       copy=f"{_AIC.replace('@095f58a5', '@38028ec8')} (src/aiconfigurator/model_configs/"
            "meta-llama--Llama-2-7b-hf_config.json), blob 611075355b09; re-serialised"),
    _m("gemma-3n-e4b", "Gemma 3n E4B", "google/gemma-3n-E4B", 8e9,
       "8B raw, 4B effective, Google's model card figures (per-layer embeddings kept off the "
       "accelerator make the difference)", 4e9,
       copy="no public copy of the Hub file found: written from transformers 5.25.0's "
            "Gemma3nConfig() defaults, which its docstring gives as google/gemma-3n-E4B's "
            "(models/gemma3n/configuration_gemma3n.py:34, 96-124), with the checkpoint's "
            "architectures (Gemma3nForConditionalGeneration) added"),
)}


# The hybrid and heterogeneous models of notebook 07.
HYBRIDS = ("qwen3-next-80b-a3b", "nemotron-h-56b", "nemotron-3-nano-30b-a3b",
           "llama-3.3-nemotron-super-49b", "deepseek-v3.2", "gemma-4-26b-a4b", "qwen3.5-27b",
           "qwen3.6-35b-a3b", "glm-5", "nemotron-3-ultra-550b-a55b")

_BY_KEY = {_key(n): n for n in BUNDLED}  # spelling-insensitive lookup


def _unknown(name: str) -> ValueError:
    close = difflib.get_close_matches(_key(str(name)), list(_BY_KEY), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(_BY_KEY[k] for k in close)}? " if close else ""
    return ValueError(f"unknown model {name!r}: {hint}bundled models are {', '.join(BUNDLED)} "
                      "(or give the path of a config.json)")


# Words at the end of a repository name that keep a model's layers: tuning and packaging, and
# quantized re-packagings (same layers and cache, other weights). Matched word by word.
_SAME_WORDS = {"instruct", "base", "chat", "it", "hf", "bf16", "fp16", "thinking", "pt"}
_QUANT_WORDS = {"fp8", "dynamic", "static", "awq", "gptq", "int4", "int8", "w4a16", "w8a8",
                "w4a8", "nvfp4", "fp4", "mxfp4", "4bit", "8bit", "gguf", "mlx", "quantized"}


def _core(repo_tail: str) -> tuple[str, bool]:
    """A repository name without its variant words, and whether one said it is quantized:
    'Meta-Llama-3.1-8B-Instruct-AWQ-INT4' -> ('llama3.18b', True)."""
    words = repo_tail.lower().split("-")
    quantized = False
    while len(words) > 1 and (words[-1] in _SAME_WORDS | _QUANT_WORDS):
        quantized |= words.pop() in _QUANT_WORDS
    if words[0] == "meta" and len(words) > 1:
        words.pop(0)
    return _key("-".join(words)), quantized


def variant_of(name: str) -> tuple[str, bool] | None:
    """(bundled name, quantized) when ``name`` is a repository id of a bundled model's
    instruct, base or quantized variant ('RedHatAI/Llama-3.1-8B-Instruct-FP8'), or such a
    repository's name without its organisation ('Llama-3.1-8B-Instruct'), naming one bundled
    model only; else None."""
    if not isinstance(name, str) or name.count("/") > 1 or name.endswith(".json") \
            or Path(name).exists():
        return None
    if "/" not in name and _key(name) in _BY_KEY:
        return None  # a bundled short name, not a variant
    core, quantized = _core(name.split("/")[-1])
    found = [m.name for m in BUNDLED.values() if _core(m.repo.split("/")[1])[0] == core]
    return (found[0], quantized) if len(found) == 1 else None


def bundled_name(name: str) -> str | None:
    """The bundled short name ``name`` means, matched as people type it, or None.

    Case and separators do not matter ('Llama-3.1-70B', 'llama3.1-70b'), and a
    bundled model's Hugging Face repository id ('meta-llama/Llama-3.1-70B') names it,
    unless a file or folder of that name exists (then it is a path).
    """
    if name in BUNDLED:
        return name
    by_repo = {m.repo.lower(): m.name for m in BUNDLED.values()}
    if name.strip().lower() in by_repo and not Path(name).exists():
        return by_repo[name.strip().lower()]
    found = variant_of(name.strip())
    if found is not None:
        return found[0]
    if _looks_like_path(name):
        return None
    return _BY_KEY.get(_key(name))


def bundled_config(name: str) -> dict:
    """The bundled config.json of ``name`` (as :func:`bundled_name` matches it), as a dict."""
    found = bundled_name(name) if isinstance(name, str) else None
    if found is None:
        raise _unknown(name)
    name = found
    path = resources.files("kvlib.models") / "configs" / f"{name}.json"
    text = path.read_text(encoding="utf-8")
    return load_config(json.loads(text))


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or os.sep in name or "/" in name or Path(name).exists()


def reading(name_or_path) -> ConfigReading:
    """The :class:`ConfigReading` of a bundled name or a config path (per-layer map)."""
    if isinstance(name_or_path, str) and bundled_name(name_or_path):
        return parse_config(bundled_config(name_or_path))
    if isinstance(name_or_path, Path) or (isinstance(name_or_path, str)
                                          and _looks_like_path(name_or_path)):
        return parse_config(name_or_path)
    if isinstance(name_or_path, str):
        raise _unknown(name_or_path)
    return parse_config(name_or_path)


def load_model(name_or_path) -> ModelSpec:
    """A :class:`ModelSpec` from a bundled short name, a config.json path, or a dict.

    Names match as :func:`bundled_name` says (any case, a repository id). An
    unknown name raises ValueError suggesting the closest bundled ones; a missing
    file raises FileNotFoundError.
    """
    found = bundled_name(name_or_path) if isinstance(name_or_path, str) else None
    if found is not None:
        m = BUNDLED[found]
        spec = read_config(bundled_config(m.name), name=m.name, params=m.params,
                           source_label=m.repo)
        typed = variant_of(name_or_path.strip())
        if typed is not None and name_or_path.strip().lower() != m.repo.lower():
            what = ("a quantized re-packaging: the same layers and cache, other weights (kvlib "
                    "plan needs its --weight-dtype, or its own config.json)" if typed[1]
                    else "a variant with the same layers")
            spec = replace(spec, assumptions=(
                f"{name_or_path.strip()} read as the bundled {m.repo} ({what})",
                *spec.assumptions))
        return spec
    if isinstance(name_or_path, str) and not _looks_like_path(name_or_path):
        raise _unknown(name_or_path)
    if isinstance(name_or_path, str) and name_or_path.count("/") == 1 \
            and not name_or_path.endswith(".json") and not Path(name_or_path).exists():
        close = difflib.get_close_matches(_core(name_or_path.split("/")[1])[0],
                                          [_core(m.repo.split("/")[1])[0] for m in
                                           BUNDLED.values()], n=3, cutoff=0.6)
        names = [m.name for m in BUNDLED.values() if _core(m.repo.split("/")[1])[0] in close]
        hint = f"the closest bundled: {', '.join(names)}; " if names else ""
        raise ValueError(f"unknown model {name_or_path!r}: not a bundled model or a variant of "
                         f"one, and kvlib does not download ({hint}save the model's config.json "
                         "and pass its path)")
    return read_config(name_or_path)


def title(spec: ModelSpec) -> str:
    """A reader's name for a spec: the bundled title, else its name."""
    m = BUNDLED.get(spec.name)
    return m.title if m else spec.name


def attention_label(spec: ModelSpec) -> str:
    """MHA, GQA, MQA or MLA, from the sizes of the model's attention groups; a hybrid adds
    its other layer kinds ("GQA + Gated DeltaNet")."""
    labels: list[str] = []
    for g in spec.groups:
        if g.kind in EMPTY:
            continue
        if g.attention.startswith("MLA"):
            label = "MLA"
        elif g.attention != "GQA":
            label = g.attention
        else:
            n_h, n_g = g.sizes["N_h"], g.sizes["N_g"]
            label = "MHA" if n_g == n_h else "MQA" if n_g == 1 else "GQA"
        if label not in labels:
            labels.append(label)
    return " + ".join(labels) or "no cache"


def simplified(spec: ModelSpec) -> ModelSpec:
    """Blog post A's arithmetic: every layer full attention, MLA as the latent d_L alone.

    The paper's Table 3 lists the models' specs; blog post A puts them into the
    paper's Table 1 / Table 2 formulas (its 496 / 320 / 60 KiB per token).

    Same formulas (``KINDS["GQA"]``, ``KINDS["MLA"]``), fewer details: windows
    are dropped and the decoupled RoPE key ``d_R`` is left out.
    """
    merged: dict = {}
    for g in spec.groups:
        if g.attention == "MLA+RoPE":
            attention, sizes = "MLA", {"d_L": g.sizes["d_L"]}
        else:
            attention, sizes = g.attention, dict(g.sizes)
        kind = CacheKind.LATENT if attention.startswith("MLA") else CacheKind.FULL
        key = (kind, attention, tuple(sorted(sizes.items())))
        merged[key] = merged.get(key, 0) + g.layers
    groups = tuple(LayerGroup(kind, n, attention, dict(sizes))
                   for (kind, attention, sizes), n in merged.items())
    return ModelSpec(
        name=spec.name, groups=groups, params=spec.params,
        max_position_embeddings=spec.max_position_embeddings, source=spec.source,
        assumptions=("blog post A's simplification: every layer keeps every token, "
                     "and MLA caches the latent d_L only (no decoupled RoPE key)",),
    )
