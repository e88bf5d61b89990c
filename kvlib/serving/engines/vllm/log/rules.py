"""What each vLLM release does with a budget: the rules a log is read by (:data:`RULES`), the
settings the log gives or the user supplies, and kvlib's layout on one rank."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from kvlib.models.spec import STATEFUL, CacheKind, ModelSpec
from kvlib.serving.engines.vllm.defaults import DEFAULT_BLOCK
from kvlib.serving.engines.vllm.layout import vllm_layout
from kvlib.serving.engines.vllm.log.reading import VllmLog, _version_key
from kvlib.serving.engines.vllm.log.tpu import tpu_cache
from kvlib.serving.engines.vllm.pages import VllmLayout
from kvlib.serving.gpus import get_gpu
from kvlib.serving.sharding import shard

__all__ = ["RULES", "setups", "state_modes", "setting"]

#: whether kvlib's vLLM layout takes a release (0.33 or 0.34 rules)
_RELEASES = "release" in inspect.signature(vllm_layout).parameters

RULES = ("v0", "v1-0.8", "v1-0.11", "v1-0.20", "v1-0.27", "v1-0.28")


# ------------------------------------------------------------------------------ the model

@dataclass(frozen=True)
class _Setup:
    """What the checks need: the release's rules, and kvlib's layout on one rank."""

    rules: str
    tp: int
    kv_dtype: str | None
    layout: VllmLayout | None
    v0_block_bytes: int | None
    why_not: str  # why the layout is None
    block_size: int
    #: kvlib's layout at another (max_model_len, kv dtype, TP) with the log's other settings
    #: (same GPU, batched tokens, prefix caching, block size); ValueError where it cannot say
    relayout: Callable[[int, str, int], VllmLayout] | None = None
    #: whether the log printed its release (else the tokens rule is one of two: see
    #: :data:`TOKENS_FROM_CONCURRENCY`)
    version_known: bool = True
    #: the layout with an MTP drafter's layer added, where the log shows no settings at all (no
    #: engine line, no whole args) and the model is a hybrid that may run one: a padding line
    #: only that layer explains is then said not explained, never a disagreement
    mtp_layout: VllmLayout | None = None
    #: the TP was inferred from the ranks the log prints, not read: a layout figure that
    #: disagrees under it is said not explained
    tp_inferred: bool = False


_KV_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16",
              "fp16": "fp16", "float32": "fp32", "float": "fp32", "fp8": "fp8",
              "fp8_e4m3": "fp8", "fp8_e5m2": "fp8"}


def _kv_dtype(log: VllmLog, given: str | None, notes: list[str]) -> str | None:
    if given:
        return given
    raw = setting(log, "kv_cache_dtype")[0]
    if raw in (None, "auto"):
        dtype = setting(log, "dtype")[0]
        if dtype is None:
            notes.append("kv cache dtype: the log does not say; bf16 assumed (pass --kv-dtype)")
            return "bf16"
        return _KV_DTYPES.get(str(dtype).replace("torch.", ""))
    found = _KV_DTYPES.get(str(raw))
    if found is None:
        notes.append(f"kv_cache_dtype={raw}: a layout kvlib does not model")
    return found


def setting(log: VllmLog, key: str) -> tuple[object, str | None]:
    """(value, where) of a setting the log shows: its engine line, else its non-default args,
    else a launch command pasted with it; (None, None) where none does."""
    for where, d in (("the engine line", log.engine), ("the non-default args", log.args),
                     (f"line {log.command_line}'s pasted command", log.command)):
        if d.get(key) is not None:
            return d[key], where
    return None, None


#: the settings a pasted launch command may give, said in the notes when it is what gave them
_COMMAND_KEYS = ("tensor_parallel_size", "kv_cache_dtype", "dtype", "max_model_len",
                 "block_size", "enable_prefix_caching", "gpu_memory_utilization",
                 "max_num_batched_tokens", "mamba_cache_mode")


def _command_notes(log: VllmLog, given: dict, notes: list[str], model: ModelSpec | None
                   ) -> None:
    """Say which settings kvlib took from the pasted command (those the engine line and
    non-default args do not print, no flag gives, and the checks use), and where a flag given
    on kvlib's command line overrode one the log shows."""
    skip = {k for k, (_, v) in given.items() if v is not None}
    if model is None:
        skip |= {"kv_cache_dtype", "dtype", "enable_prefix_caching", "mamba_cache_mode",
                 "max_num_batched_tokens"}
    elif not any(g.kind in STATEFUL for g in model.groups):
        skip |= {"enable_prefix_caching", "mamba_cache_mode"}
    if "kv_cache_dtype" in skip or str(setting(log, "kv_cache_dtype")[0]) not in ("None", "auto"):
        skip.add("dtype")
    if any(f.kind in ("capacity", "concurrency", "kv_failure") for f in log.found):
        skip.add("max_model_len")  # the lines print it
    if any(f.kind == "batched" for f in log.found):
        skip.add("max_num_batched_tokens")
    if not any(f.kind in ("kv_failure", "no_kv_memory") for f in log.found):
        skip.add("gpu_memory_utilization")  # only the failure's "to fit" advice uses it
    used = [f"{k} {v}" for k in _COMMAND_KEYS if k not in skip and
            (v := log.command.get(k)) is not None and
            str(setting(log, k)[1]).endswith("command")]
    if used:
        notes.append(f"from line {log.command_line}'s pasted launch command: {', '.join(used)} "
                     "(the engine line and non-default args win where they print one; a flag "
                     "given to kvlib wins over all)")
    for key, (flag, value) in given.items():
        raw, where = setting(log, key)
        if key == "kv_cache_dtype" and raw is not None:
            raw = _KV_DTYPES.get(str(raw), raw)
        if value is not None and raw is not None and str(raw) != str(value):
            notes.append(f"{key} {value}: {flag} (the log's {where} says {raw}: the flag wins)")


def _int_setting(log: VllmLog, key: str, given: int | None, default: int) -> int:
    if given:
        return given
    raw = setting(log, key)[0]
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _rules(log: VllmLog) -> str:
    if log.v0:
        return "v0"
    if any(f.kind == "capacity" for f in log.found):
        return "v1-0.28"
    if any(f.kind == "v1_blocks" for f in log.found):
        return "v1-0.8"  # "# GPU blocks: N" alone: V1 of 0.7.x, one group, tokens = N x block
    key = _version_key(log.version)
    if key is not None and key < (0, 9):
        return "v1-0.8"
    if key is not None and key >= (0, 27):
        return "v1-0.27"
    if key is not None and key >= (0, 20):
        return "v1-0.20"  # tokens = int(concurrency x max_model_len): see TOKENS_FROM_CONCURRENCY
    return "v1-0.11"


#: The rules that print one capacity figure for the engine, after every rank's blocks are cut
#: to the smallest rank's (0.27.0 kv_cache_utils.py:2210-2240; 0.28.0 :2213-2221)
ENGINE_WIDE = ("v1-0.20", "v1-0.27", "v1-0.28")

#: Where vLLM's "GPU KV cache size: N tokens" became ``int(max_concurrency x max_model_len)``
#: instead of ``num_blocks // groups x smallest block`` (the fix vLLM PRs 38364 and 40694
#: propose, "Fix incorrect KV cache log output", March-April 2026). Fixed by posted logs, not by
#: a wheel: 0.19.0 still divides the blocks (vLLM issue 40691: Qwen3.5, 290,864 tokens beside
#: 33.04x at 32,768), 0.20.1 prints 619,479 tokens beside 2.36x at 262,144 (club-3090 issue 91:
#: no whole number of blocks), and 0.24.0's 569,878 tokens are int(300 / 69 x 131,072)
#: (club-3090 issue 652). A log that prints no release is checked against both rules, and the
#: output says which one its tokens follow.
TOKENS_FROM_CONCURRENCY = (0, 20)


#: the block a backend other than CUDA's takes when none is set: vLLM 0.34.0
#: platforms/cpu.py:560-562 (128 for the CPU backend; 16 for its reference MLA kernel,
#: :287-297); the TPU backend (tpu-inference) pages by 256 (issue 43: a TPU failure log's
#: 5,632 tokens are 22 blocks of 256)
PLATFORM_BLOCK = {"cpu": 128, "tpu": 256}


def _platform(log: VllmLog) -> tuple[str | None, str]:
    """The backend the log names: its platform line, else the device its capacity line
    names ("CPU KV cache size", 0.34.0 v1/core/kv_cache_utils.py:1152-1154)."""
    for f in log.found:
        if f.kind == "platform":
            return f.values[0].lower(), f"line {f.line.number}'s platform"
    for f in log.found:
        if f.kind in ("tpu_kv", "tpu_model"):
            return "tpu", f"line {f.line.number}'s tpu-inference runner"
    for f in log.found:
        if f.kind == "capacity" and f.values[0].lower() in PLATFORM_BLOCK:
            return f.values[0].lower(), f"line {f.line.number}'s \"{f.values[0]} KV cache size\""
    return None, ""


def _block(log: VllmLog, model: ModelSpec | None, given: int | None,
           notes: list[str]) -> int | None:
    """The block: --block-size, else the log's "Setting kv cache block size" line or its
    block_size setting, else the backend's (CPU 128, TPU 256); None: the release's default."""
    bs_line = [f for f in log.found if f.kind == "block_size"]
    user_bs = setting(log, "block_size")[0]
    from_log = int(bs_line[-1].values[0]) if bs_line else int(user_bs) if user_bs and \
        str(user_bs).isdigit() else None
    tokens = next((int(f.values[0].replace(",", "")) for f in log.found if f.kind == "tokens"),
                  None)
    tpu = tpu_cache(log.found, tokens)
    if from_log is None and tpu is not None:
        from_log = tpu.page  # the TPU cache's shape names its page
    platform, where = _platform(log)
    default = PLATFORM_BLOCK.get(platform or "")
    if default == 128 and model is not None and any(g.kind == "latent"
                                                    for g in model.groups):
        default = 16  # the CPU backend's MLA kernel (0.34.0 platforms/cpu.py:287-297)
    if given:
        said = from_log or default
        notes.append(f"block {given}: --block-size" + (
            f" (the log says {said}: the flag wins)" if said and said != given else ""))
        return given
    if from_log is None and default is not None:
        notes.append(f"block {default}: the {platform.upper()} backend's ({where}; vLLM 0.34.0 "
                     "platforms/cpu.py:560-562 for the CPU, 256 for the TPU); --block-size "
                     "overrides")
        return default
    return from_log


#: vLLM's MTP drafters share the target's KV cache: each adds ``mtp_num_hidden_layers``
#: full-attention layers (1 when the config says nothing; vLLM 0.34.0
#: model_executor/models/qwen3_5_mtp.py:84, layers of type "full_attention" at :120-127), grouped
#: and padded with the target's (v1/core/kv_cache_planning.py:560-590)
MTP_LAYERS = 1


def spec_tokens(log: VllmLog) -> tuple[str | None, int | str]:
    """(method, k) of the log's speculative decoding: the engine line's
    ``speculative_config=SpeculativeConfig(method=..., num_spec_tokens=k)``, else the
    non-default args' ``'speculative_config': {'method': ..., 'num_speculative_tokens': k}``;
    (None, 0) when neither shows one."""
    method = log.engine.get("speculative_method")
    if method:
        return method, int(log.engine.get("num_spec_tokens", 0))
    cfg = log.args.get("speculative_config")
    if isinstance(cfg, dict) and cfg.get("method"):
        return str(cfg["method"]), int(cfg.get("num_speculative_tokens") or 0)
    return None, 0


def with_spec_states(log: VllmLog, model: ModelSpec, notes: list[str]) -> ModelSpec:
    """``model`` with each Gated DeltaNet layer's convolution state k rows longer when the log
    shows speculative decoding with k tokens: vLLM keeps ``conv_kernel_size - 1 + num_spec``
    rows (0.34.0 model_executor/layers/mamba/mamba_utils.py:280-294, num_spec from
    ``speculative_config.num_speculative_tokens``: models/qwen3_5.py:400-415), which widens the
    state page and so the hybrid attention block."""
    method, k = spec_tokens(log)
    if not method or not k:
        return model
    groups = list(model.groups)
    changed = False
    for i, g in enumerate(groups):
        if g.kind in STATEFUL and g.attention == "Gated DeltaNet" and "d_conv" in g.sizes:
            groups[i] = replace(g, sizes={**g.sizes, "d_conv": g.sizes["d_conv"] + int(k)})
            changed = True
    if changed:
        notes.append(f"speculative decoding, k = {k}: each Gated DeltaNet conv state keeps "
                     f"{k} more rows (kernel - 1 + k: vLLM 0.34.0 mamba_utils.py:280-294)")
    return replace(model, groups=tuple(groups))


def with_spec_blocks(log: VllmLog, lay: VllmLayout) -> VllmLayout:
    """``lay`` with each state group needing k more blocks per request when the log shows
    speculative decoding with k tokens: ``MambaSpec.max_memory_usage_bytes`` is
    ``page x (2 + num_speculative_blocks + checkpoints)`` with prefix caching ("align") and
    ``page x (1 + num_speculative_blocks)`` without, num_speculative_blocks = k (0.34.0
    v1/kv_cache_interface.py:1168-1174; layers/mamba/abstract.py:94-98)."""
    method, k = spec_tokens(log)
    if not method or not k:
        return lay
    states = {"mamba", "linear", "conv"}
    groups = tuple(replace(g, blocks_per_request=g.blocks_per_request + int(k))
                   if g.kind in states else g for g in lay.groups)
    if groups == lay.groups:
        return lay
    return replace(lay, groups=groups,
                   blocks_per_request=sum(g.blocks_per_request for g in groups),
                   notes=(*lay.notes, f"speculative decoding, k = {k}: each state group needs "
                          f"{k} more blocks per request (num_speculative_blocks, vLLM 0.34.0 "
                          "v1/kv_cache_interface.py:1168-1174)"))


#: How many blocks a Mamba / Gated DeltaNet state group takes one request, by release and
#: setting (``MambaSpec.max_memory_usage_bytes`` / page): "one" 1 (+ k speculative blocks);
#: "align" 2 (+ k), prefix caching's align mode before checkpoint blocks; "align_ckpt" 2 + k +
#: the prefill checkpoint blocks (kvlib's layout of 0.33/0.34); "all" cdiv(max_model_len, block),
#: the mode of models that declare SupportsMambaPrefixCaching (not traced by kvlib).
#:
#: * up to 0.11.0 one block whatever the settings (0.11.0 v1/kv_cache_interface.py:235-239:
#:   "We allocate 1 block for each request now");
#: * 0.11.1-0.14: cdiv(max_model_len, mamba_block_size) (0.11.1 kv_cache_interface.py:261-263),
#:   mamba_block_size = max_model_len unless prefix caching is on for a model that supports it
#:   (0.11.1 model_executor/models/config.py:290-305; a model that does not is "disabling");
#:   prefix caching off for hybrids by default (0.11.1 engine/arg_utils.py:1847, 0.12.0-0.14.0
#:   config/model.py is_prefix_caching_supported: hybrid -> False);
#: * 0.15-0.25: mamba_cache_mode none / align / all (0.15.0 kv_cache_interface.py
#:   MambaSpec.max_memory_usage_bytes), prefix caching on -> "all" for a model that supports it,
#:   else "align" (0.19.0 models/config.py:436-451); still off by default for hybrids;
#: * 0.26-0.27: the same, prefix caching on by default for hybrids (0.26.0 config/model.py:
#:   "Generative hybrid models support prefix caching");
#: * 0.28 on: prefix caching on -> align for every model (0.28.0 models/config.py:603-604);
#:   num_prefill_checkpoint_blocks from 0.29 (0.29.0 kv_cache_interface.py:889-892), set to 1 by
#:   Mamba2 layers from 0.32 (0.32.0 layers/mamba/mamba_mixer2.py:1107) and by Qwen's Gated
#:   DeltaNet (FlashInfer prefill, 64-token checkpoint alignment) from 0.33 (0.33.0
#:   layers/mamba/gdn/qwen_gdn_linear_attn.py:748); before that the hybrid block is the smallest
#:   that holds a state page (0.24.0 platforms/interface.py:751-768).
#:
#: Qwen3-Next's and Qwen3.5's Gated DeltaNet classes never declare SupportsMambaPrefixCaching
#: (0.11.2-0.24.0 models/qwen3_next.py, qwen3_5.py), so for them "all" never applies.
STATE_MODES = ("one", "align", "align_ckpt", "all")

_MODE_WORDS = {
    "one": "1 block a request per state group (prefix caching off for it)",
    "align": "2 blocks a request per state group (prefix caching's align mode, vLLM 0.15-0.32)",
    "align_ckpt": "2 + checkpoint blocks a request per state group (align mode: Mamba2 from "
                  "vLLM 0.32, Gated DeltaNet from 0.33)",
    "all": "cdiv(max_model_len, block) blocks a request per state group (prefix caching's "
           "'all' mode)",
}


def _release(version: str | None) -> tuple[int, int, int] | None:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def _flag(raw) -> bool | None:
    if raw is None:
        return None
    return str(raw).strip().lower() not in ("false", "0", "none", "no")


def _modes_of(rel: tuple[int, int, int], prefix: bool | None, qwen: bool) -> set[str]:
    """The state modes of release ``rel`` with prefix caching ``prefix`` (None: the default)."""
    if rel < (0, 11, 1):
        return {"one"}
    if rel < (0, 15):
        return {"one"} if not prefix or qwen else {"one", "all"}
    on = prefix if prefix is not None else rel >= (0, 26)
    if not on:
        return {"one"}
    if rel >= (0, 33) or (rel >= (0, 32) and not qwen):
        return {"align_ckpt"}
    if rel >= (0, 28) or qwen:
        return {"align"}
    return {"align", "all"}


#: a release of each span :func:`_modes_of` tells apart, for a log that prints none
_SPANS = ((0, 11, 0), (0, 12, 0), (0, 20, 0), (0, 26, 0), (0, 28, 0), (0, 32, 0), (0, 33, 0))


def state_modes(log: VllmLog, model: ModelSpec, said: dict) -> tuple[str, ...]:
    """The state modes (:data:`STATE_MODES`) the log's release and settings allow for
    ``model``, most likely first; ``said`` gets where the settings came from."""
    prefix = None
    for where, d in (("the engine line", log.engine), ("the non-default args", log.args),
                     ("the pasted command", log.command)):
        if "enable_prefix_caching" in d:
            prefix = _flag(d["enable_prefix_caching"])
            said["enable_prefix_caching"] = f"{prefix} ({where})"
            break
    mode = log.args.get("mamba_cache_mode") or log.command.get("mamba_cache_mode")
    qwen = all(g.attention == "Gated DeltaNet" for g in model.groups if g.kind in STATEFUL)
    rel = _release(log.version)
    if prefix is False:
        return ("one",)
    if rel is None:
        modes = set().union(*(_modes_of(r, prefix, qwen) for r in _SPANS))
        said["release"] = "not printed: every release's rule tried"
    else:
        modes = _modes_of(rel, prefix, qwen)
    if mode in ("align", "all") and modes != {"one"}:
        ckpt_from = (0, 33) if qwen else (0, 32)
        modes = ({"all"} if mode == "all" else {"align", "align_ckpt"} if rel is None else
                 {"align_ckpt" if rel >= ckpt_from else "align"})
        said["mamba_cache_mode"] = mode
    return tuple(m for m in STATE_MODES if m in modes)


def with_state_mode(lay: VllmLayout, mode: str) -> VllmLayout:
    """``lay`` (built with prefix caching off for "one" and "align", on for "align_ckpt") with
    each state group's blocks a request as ``mode`` says (before speculative blocks)."""
    states = {"mamba", "linear", "conv"}
    if mode == "align":
        groups = tuple(replace(g, blocks_per_request=2) if g.kind in states else g
                       for g in lay.groups)
        lay = replace(lay, groups=groups, mamba_cache_mode="align",
                      blocks_per_request=sum(g.blocks_per_request for g in groups))
    if any(g.kind in states for g in lay.groups):
        lay = replace(lay, notes=(*lay.notes, f"state groups: {_MODE_WORDS[mode]}"))
    return lay


def with_mtp_draft(log: VllmLog, model: ModelSpec, notes: list[str]) -> ModelSpec:
    """``model`` with the MTP draft's full-attention layer added to its first full-attention
    group, when the log's engine line shows ``speculative_config`` with method 'mtp' (said in
    ``notes``); ``model`` unchanged otherwise (another drafter is said, not counted)."""
    method, k = spec_tokens(log)
    if not method:
        return model
    full = [i for i, g in enumerate(model.groups) if g.kind is CacheKind.FULL]
    if "mtp" not in method or not full:
        notes.append(f"speculative decoding ({method}, k = {k}): the drafter's layers are not "
                     "counted")
        return model
    i = full[0]
    groups = list(model.groups)
    groups[i] = replace(groups[i], layers=groups[i].layers + MTP_LAYERS)
    notes.append(f"speculative decoding (method {method}, k = {k}, the log's "
                 f"speculative_config): the MTP draft adds {MTP_LAYERS} full-attention layer "
                 "(mtp_num_hidden_layers, vLLM 0.34.0 qwen3_5_mtp.py:84, 120-127): "
                 f"{groups[i].layers} attention layers, grouped and padded with the target's")
    return replace(model, groups=tuple(groups))


def setups(log: VllmLog, model: ModelSpec | None, *, tp: int | None, kv_dtype: str | None,
           gpu: str | None, block_size: int | None = None
           ) -> list[tuple[str | None, _Setup, list[str]]]:
    """One (state mode, setup, notes) for each way the log's release and settings allow a
    hybrid model's state groups to be counted (:func:`state_modes`, most likely first); one
    (None, setup, notes) for a model without state layers."""
    said: dict = {}
    modes: tuple[str | None, ...] = (None,)
    if model is not None and not log.v0 and any(g.kind in STATEFUL for g in model.groups):
        modes = state_modes(log, model, said)
    out = []
    for mode in modes:
        notes: list[str] = []
        out.append((mode, _setup(log, model, tp=tp, kv_dtype=kv_dtype, gpu=gpu, notes=notes,
                                 block_size=block_size, state_mode=mode), notes))
    return out


def _setup(log: VllmLog, model: ModelSpec | None, *, tp: int | None, kv_dtype: str | None,
           gpu: str | None, notes: list[str], block_size: int | None = None,
           state_mode: str | None = None) -> _Setup:
    rules = _rules(log)
    if model is not None:
        model = with_spec_states(log, with_mtp_draft(log, model, notes), notes)
    tp_ = _int_setting(log, "tensor_parallel_size", tp, 1)
    tp_inferred = False
    mesh = next((m.group(1) for f in log.found if f.kind == "tpu_kv"
                 and (m := re.search(r"'model':\s*(\d+)", f.values[5]))), None)
    _command_notes(log, {"tensor_parallel_size": ("--tp", tp), "block_size":
                         ("--block-size", block_size), "kv_cache_dtype": ("--kv-dtype",
                                                                           kv_dtype)},
                   notes, model)
    if tp is None and setting(log, "tensor_parallel_size")[1] is None:
        if mesh is not None:
            tp_ = int(mesh)
            notes.append(f"tensor_parallel_size {tp_}: the TPU mesh's 'model' axis")
        elif (top := max((x.rank for x in log.lines if x.rank is not None), default=0)) > 0:
            tp_ = 1 << top.bit_length()  # the power of two above the highest rank printed
            tp_inferred = True
            notes.append(f"tensor_parallel_size {tp_}: inferred from the highest TP rank the log "
                         f"prints ({top}), the power of two above it (the log does not say; "
                         "pass --tp): a figure that disagrees under it is not explained")
        elif log.args and log.args_cut is None:
            notes.append("tensor_parallel_size 1: vLLM's default, not among the log's "
                         "non-default args")
        else:
            notes.append("tensor_parallel_size: the log does not say; 1 assumed (pass --tp)")
    pp = _int_setting(log, "pipeline_parallel_size", None, 1)
    dcp = _int_setting(log, "decode_context_parallel_size", None, 1)
    dtype = _kv_dtype(log, kv_dtype, notes) if model is not None else None
    block = _block(log, model, block_size, notes)
    key = _version_key(log.version)
    release = "0.34" if key is not None and key >= (0, 34) else "0.33"
    if block is None and release == "0.34" and not log.v0:
        block = DEFAULT_BLOCK["0.34.0"]  # 0.34.0 config/cache.py:185 (16 before)
        notes.append("vLLM 0.34: 64-token blocks, its default (hybrid pages align from 64)")
    if model is None:
        return _Setup(rules, tp_, None, None, None, "no model: the log names none (pass --model)",
                      block or 16)
    if tp is not None:  # a TP the model's heads do not allow is the user's slip: say so
        for g in model.groups:
            if g.grows:
                try:
                    shard(g, tp_)
                except ValueError as e:
                    raise ValueError(f"--tp {tp}: {e}") from None
    if dtype is None:
        return _Setup(rules, tp_, None, None, None, "the kv cache dtype is not one kvlib "
                      "models", block or 16)
    if pp > 1 or dcp > 1:
        return _Setup(rules, tp_, dtype, None, None, "pipeline or decode-context parallelism: "
                      "kvlib's vLLM layout is for tensor parallelism only", block or 16)
    if rules == "v0":
        if any(g.kind in STATEFUL for g in model.groups):
            return _Setup(rules, tp_, dtype, None, None, "the V0 engine's state cache is not "
                          "modelled", block or 16)
        bs = block or 16
        per_token = sum(shard(g, tp_)[0].bytes_per_token(_bytes(dtype)) for g in model.groups
                        if g.grows)
        return _Setup(rules, tp_, dtype, None, int(per_token * bs), "", bs)
    batched = [f for f in log.found if f.kind == "batched"]
    n_batched = int(batched[-1].values[0]) if batched else \
        setting(log, "max_num_batched_tokens")[0]
    prefix = setting(log, "enable_prefix_caching")[0]
    prefix_on = str(prefix) != "False" if state_mode is None else state_mode == "align_ckpt"
    if state_mode == "all":
        return _Setup(rules, tp_, dtype, None, None, "prefix caching's 'all' mamba cache mode "
                      "(cdiv(max_model_len, block) blocks a request per state group, its own "
                      "block alignment) is not traced by kvlib", block or 16)
    kwargs = dict(batched_tokens=n_batched, prefix_caching=prefix_on, block_size=block)
    if _RELEASES:  # the log's release's rules: 0.34 for a log that says so, else 0.33's
        kwargs["release"] = release

    def layout(g, n=None, d=dtype, t=tp_):
        lay = vllm_layout(model, n or _max_len(log), d, t, g, **kwargs)
        return with_spec_blocks(log, lay if state_mode is None else
                                with_state_mode(lay, state_mode))

    def layout_of(m, g):  # another model (an unseen drafter's layer added), the same settings
        return vllm_layout(m, _max_len(log), dtype, tp_, g, **kwargs)

    def relayout(n: int, d: str, t: int) -> VllmLayout:
        if gpu:
            return layout(get_gpu(gpu), n, d, t)
        lays = {(x.block_size, x.bytes_per_block, x.blocks_per_request): x
                for x in (layout(get_gpu(g), n, d, t) for g in ("H200", "L40S", "B200"))}
        if len(lays) > 1:
            raise ValueError(f"at {n:,} tokens, kv {d}, TP={t} vLLM's layout depends on the "
                             "GPU, which the log does not name (pass --gpu)")
        return next(iter(lays.values()))

    try:
        if gpu:
            lay = layout(get_gpu(gpu))
        else:
            lays = {(x.block_size, x.bytes_per_block, x.blocks_per_request): x
                    for x in (layout(get_gpu(n)) for n in ("H200", "L40S", "B200"))}
            if len(lays) > 1:
                return _Setup(rules, tp_, dtype, None, None, "vLLM's layout of this model "
                              "depends on the GPU, which the log does not name (pass --gpu)",
                              block or 16)
            lay = next(iter(lays.values()))
    except ValueError as e:
        return _Setup(rules, tp_, dtype, None, None, f"kvlib's vLLM layout: {e}", block or 16)
    if rules not in ENGINE_WIDE and any(g.kind == "sliding" for g in lay.groups):
        notes.append("sliding-window blocks per request follow vLLM 0.27-0.34's rule (window + "
                     "in-flight tokens); older releases counted them differently")
    return _Setup(rules, tp_, dtype, lay, None, "", lay.block_size, relayout,
                  version_known=key is not None, tp_inferred=tp_inferred,
                  mtp_layout=_unseen_mtp_layout(log, model, gpu, layout_of))


def _unseen_mtp_layout(log: VllmLog, model: ModelSpec, gpu: str | None,
                       layout_of: Callable) -> VllmLayout | None:
    """The layout had an MTP drafter run that the log cannot show: None where the log prints
    its settings (the engine line or whole non-default args: a drafter would be in them), shows
    speculative decoding, or the model has no full-attention group beside state layers (the
    hybrids whose MTP layer joins the full-attention groups)."""
    if spec_tokens(log)[0] or log.engine or (log.args and log.args_cut is None):
        return None
    full = [i for i, g in enumerate(model.groups) if g.kind is CacheKind.FULL]
    if not full or not any(g.kind in STATEFUL for g in model.groups):
        return None
    groups = list(model.groups)
    groups[full[0]] = replace(groups[full[0]], layers=groups[full[0]].layers + MTP_LAYERS)
    try:  # padding counts layers, whatever the GPU: any one GPU's layout gives it
        return layout_of(replace(model, groups=tuple(groups)), get_gpu(gpu or "H200"))
    except ValueError:
        return None


def _bytes(kv_dtype: str) -> Fraction:
    from kvlib.core.dtypes import bytes_per_element
    return Fraction(bytes_per_element(kv_dtype))


def _max_len(log: VllmLog) -> int:
    for f in log.found:
        if f.kind == "capacity":
            return int(f.values[2].replace(",", ""))
        if f.kind == "concurrency":
            return int(f.values[0].replace(",", ""))
    for f in log.found:
        if f.kind == "kv_failure":
            return int(f.values[0])
    raw = log.engine.get("max_seq_len") or setting(log, "max_model_len")[0]
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 2048  # only the blocks-per-request count uses it; the checks say so


def _tokens_of(s: _Setup, blocks: int, max_len: int | None) -> int | None:
    lay = s.layout
    if s.rules in ENGINE_WIDE:
        return None if max_len is None else int(Fraction(blocks, lay.blocks_per_request)
                                                * max_len)
    if s.rules == "v1-0.8":
        return blocks * lay.block_size
    return blocks // len(lay.groups) * lay.block_size


def _concurrency_of(s: _Setup, blocks: int, max_len: int) -> Fraction:
    if s.rules == "v1-0.8":
        return Fraction(blocks * s.layout.block_size, max_len)
    return Fraction(blocks, s.layout.blocks_per_request)


def _tokens_formula(s: _Setup, max_len: int | None) -> str:
    lay = s.layout
    if s.rules in ENGINE_WIDE:
        return (f"int(blocks / {lay.blocks_per_request:,} blocks per request x {max_len:,}) "
                f"(vLLM {'0.20' if s.rules == 'v1-0.20' else '0.27'} on)")
    if s.rules == "v1-0.8":
        return f"blocks x block size {lay.block_size:,}"
    return (f"blocks // {len(lay.groups)} KV-cache group{'s' if len(lay.groups) > 1 else ''} "
            f"x block size {lay.block_size:,}")


def _layout_words(s: _Setup) -> str:
    lay = s.layout
    per_layer = (f"{lay.group_size} layers x {lay.page_bytes:,} B page" if lay.page_bytes
                 else f"{lay.group_size} layers' pages summed")
    return (f"bytes per block = {per_layer} = {lay.bytes_per_block:,} B (TP={s.tp}, kv "
            f"{s.kv_dtype}, block {lay.block_size:,})")


def _budget_blocks(s: _Setup, lo: int, hi: int) -> list[int]:
    b = s.layout.bytes_per_block
    return list(range(max(0, lo) // b, max(0, hi) // b + 1))

