"""A model on N GPUs, in vLLM's vocabulary: the memory budget and the cache per sequence.

The budget follows the vLLM release named by ``vllm`` (default the newest,
:data:`kvlib.serving.engines.vllm.defaults.VLLM_RELEASES`), its rule written once in
:data:`kvlib.serving.engines.vllm.budget.RULES` (docs/capacity.md, with source lines):

* **0.34.0** (extensible KV cache, on by default on CUDA and ROCm): the cache is sized after
  warmup and CUDA-graph capture, min(ceil(u M), M - M_0 - margin) - W - O_R - P with
  margin = max(1 GiB, 0.75 P) and u = 1.0 unless set (a smaller u now shrinks the cache).
  vLLM measures M_0, O_R and P; kvlib assumes them (``in_use_bytes``, ``non_torch_bytes`` +
  ``graph_pool_bytes``, ``activation_peak_bytes`` + ``graph_pool_bytes``) and says so.
  Default block size 64.
* **0.33.0** (profiled), as below. Default block size 16.
* ``kv_cache_memory``: vLLM's ``kv_cache_memory_bytes``, the budget given outright (in 0.34.0
  it also turns the extensible cache off).

Budget per GPU, as vLLM 0.33.0 computes it: ``requested_memory`` =
ceil(gpu_memory_utilization x the total CUDA reports) (``request_memory``,
``vllm/v1/worker/utils.py``), minus the non-KV memory measured at start-up
(``determine_available_memory``, ``vllm/v1/worker/gpu_worker.py``;
``memory_profiling``, ``vllm/utils/mem_utils.py``): the weights, the profiling
run's activation peak (``transient_peak_headroom``), non-torch memory (NCCL,
cuBLAS handles: part of ``total_consumed``) and, by default from v0.20.0
(``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 in its envs.py:1725, 0 in
0.19.1's; vLLM's own log line says "default since v0.21.0"), the CUDA-graph estimate
(``cudagraph_memory_estimate``). kvlib counts the weights and
lumps the other three into ``overhead_bytes`` (default 4 GiB). The total is the
catalog's CUDA total where it has one (``memory="cuda"``, the default), else the
datasheet's. Sequences per TP group = floor(budget / KV per sequence per GPU);
GPUs / TP data-parallel replicas. A speculative-decoding
draft adds its weights and its own cache per sequence (sharded by its own TP,
by default the target's). The answer for one context is a
:class:`kvlib.serving.engines.vllm.plan.Plan`.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

from kvlib.core import validate
from kvlib.core.dtypes import kv_format
from kvlib.models.quantization import quantization_entry
from kvlib.models.spec import ModelSpec
from kvlib.serving.decode import (
    derived_active_params,
    moe_layout,
    read_params,
    uniform_routing_read_params,
)
from kvlib.serving.engines.vllm import budget as capacity_formulas
from kvlib.serving.engines.vllm import context_search
from kvlib.serving.engines.vllm.defaults import (
    DEFAULT_GPU_MEM_UTIL,
    DEFAULT_OVERHEAD_BYTES,
    MEASURED_DEFAULTS,
    VLLM_DEFAULTS,
    vllm_release,
)
from kvlib.serving.engines.vllm.dtypes import resolve_auto
from kvlib.serving.engines.vllm.plan import Plan, make_plan
from kvlib.serving.gpus import GPU, get_gpu
from kvlib.serving.kv import (
    KVScales,
    kv_bytes_per_sequence_per_gpu,
    kv_format_parts,
    sequence_shares,
    state_bytes_per_sequence_per_gpu,
)
from kvlib.serving.weights import (
    CheckpointWeights,
    StoredWeights,
    checkpoint_weights,
    weight_bytes_per_element,
    weights_bytes_per_gpu,
)

__all__ = ["CHECKPOINT", "MEMORY_BASES", "Deployment", "plan"]

GiB = 1024**3
CHECKPOINT = "checkpoint"  # weight_dtype: the checkpoint's own format, read from its config
MEMORY_BASES = ("cuda", "datasheet")


def _config_key(config: dict) -> str:
    """A config as a hashable key for the caches below (the widgets plan one model many times)."""
    return json.dumps(config, sort_keys=True)


@functools.lru_cache(maxsize=64)
def _count_of(key: str) -> tuple:
    """(ParamCount or None, why not) of the config ``key`` (:func:`_config_key`)."""
    from kvlib.models.params import count_params

    try:
        return count_params(json.loads(key)), ""
    except ValueError as e:
        return None, str(e)


@functools.lru_cache(maxsize=256)
def _weights_of(key: str, tp: int, sm: int | None = 90) -> CheckpointWeights:
    """:func:`checkpoint_weights` of a countable config ``key`` on ``tp`` ranks of a GPU of
    compute capability ``sm`` (major x 10 + minor; None off CUDA), which picks the MoE
    backend's padding."""
    return checkpoint_weights(json.loads(key), tp, _count_of(key)[0], sm)


def _sm(gpu) -> int | None:
    """A GPU's compute capability as one number (H200: 90), None where it has none (AMD)."""
    cc = gpu.cuda_capability
    return None if cc is None else cc[0] * 10 + cc[1]


def _bundled_config(name: str) -> dict | None:
    from kvlib.models.catalog import BUNDLED, bundled_config

    return bundled_config(name) if name in BUNDLED else None


def _bundled_active(name: str) -> int | None:
    from kvlib.models.catalog import BUNDLED

    m = BUNDLED.get(name)
    return None if m is None else m.active


@dataclass(frozen=True)
class Deployment:
    """A model on ``gpus`` GPUs of one kind; everything but the context.

    gpu: a :class:`~kvlib.serving.gpus.GPU` or a catalog name. params overrides the
    model's parameter count (and then the weights are params x ``weight_dtype``, bf16 for
    "checkpoint"). weight_dtype: "checkpoint" (default) counts the weights from the config
    (:func:`kvlib.serving.weights.checkpoint_weights`: per layer, in the stored, possibly
    quantized, format, split as vLLM splits them); a dtype name overrides it.
    draft: a speculative-decoding draft model, with ``draft_tp`` ranks (default: the
    target's TP). scales: a :data:`KV_SCALES` name or :class:`KVScales` for the
    quantization scales of ``kv_dtype``.
    dcp: vLLM's decode_context_parallel_size for the target (see :func:`sequence_shares`).
    memory: "cuda" (default): the total CUDA reports where the catalog has it, else the
    datasheet's; "datasheet": always the datasheet's.
    active_params: parameters one token reads (default: the bundled model's published
    active count, else its total). config: the model's config.json as a dict (default:
    the bundled one), for the experts and the embedding of the decode bound.
    vllm: the vLLM release whose defaults and budget rule apply ("0.34", "0.33.0"; default
    the newest); gpu_mem_util, block_size: None takes the release's (:data:`VLLM_DEFAULTS`).
    overhead_bytes: 0.33.0's non-KV memory besides the weights (default 4 GiB).
    in_use_bytes, activation_peak_bytes, graph_pool_bytes, non_torch_bytes: what 0.34.0
    measures, assumed (:data:`MEASURED_DEFAULTS`). kv_cache_memory: vLLM's
    kv_cache_memory_bytes, the KV budget per GPU given outright (either release).
    kv_dtype: kvlib's name or vLLM's (``nvfp4``, ``int8_per_token_head``); after construction
    it holds kvlib's element dtype (``int4``) and ``scales`` the scales, while
    ``kv_cache_dtype`` keeps the name given (``nvfp4``), which the plan prints. "auto" is
    resolved as vLLM 0.34.0 resolves it (:func:`~kvlib.serving.engines.vllm.dtypes.
    resolve_auto`): the KV dtype the checkpoint asks for (ModelOpt's ``kv_cache_quant_algo``,
    in config.json or its ``hf_quant_config.json``; kv_cache_dtype then holds vLLM's name,
    ``fp8_e4m3``), else the model's dtype; ``kv_dtype_why`` says which and why, in one line
    (None where kv_dtype was not "auto").
    stored: the weight bytes read from a model folder's files
    (:func:`kvlib.serving.weights.stored_weights`); they replace the count unless params or a
    weight_dtype other than "checkpoint" is given. Without a parameter count (a family kvlib
    cannot count, no params) the deployment needs kv_cache_memory or stored: then params,
    the active count and the decode-step reads are None and the weights are not counted.
    """

    model: ModelSpec
    gpu: GPU | str
    gpus: int = 1
    tp: int = 1
    kv_dtype: str = "bf16"
    weight_dtype: str = CHECKPOINT
    gpu_mem_util: Fraction | float | str | None = None
    block_size: int | None = None
    overhead_bytes: int | None = None
    params: int | None = None
    draft: ModelSpec | None = None
    draft_tp: int | None = None
    scales: KVScales | str | None = None
    dcp: int = 1
    memory: str = "cuda"
    active_params: int | None = None
    config: dict | None = field(default=None, compare=False, repr=False)
    vllm: str | None = None
    kv_cache_memory: int | None = None
    in_use_bytes: int | None = None
    activation_peak_bytes: int | None = None
    graph_pool_bytes: int | None = None
    non_torch_bytes: int | None = None
    kv_cache_dtype: str | None = field(default=None, compare=False)
    kv_dtype_why: str | None = field(default=None, compare=False)
    stored: StoredWeights | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        set_ = object.__setattr__
        # the KV dtype as given (vLLM's name, or kvlib's), before kv_dtype becomes kvlib's
        # element dtype: nvfp4 and nvfp4_4over6 stay themselves, not int4 with scales
        set_(self, "kv_cache_dtype", kv_format(self.kv_cache_dtype if self.kv_cache_dtype
                                               is not None else self.kv_dtype).name)
        set_(self, "vllm", vllm_release(self.vllm))
        defaults = VLLM_DEFAULTS[self.vllm]
        if self.kv_cache_memory is not None:
            validate.positive_int("kv_cache_memory_bytes", self.kv_cache_memory)
        measured = [k for k in MEASURED_DEFAULTS if getattr(self, k) is not None]
        given = {"overhead_bytes": self.overhead_bytes is not None, **dict.fromkeys(measured, True)}
        if self.kv_cache_memory is not None and any(given.values()):
            raise ValueError(f"{', '.join(k for k, v in given.items() if v)}: not used when "
                             "kv_cache_memory gives the KV budget outright")
        if self.rule == "extensible" and self.overhead_bytes is not None:
            raise ValueError(f"overhead_bytes={self.overhead_bytes!r} is vLLM 0.33.0's lump of "
                             f"non-KV memory; vLLM {self.vllm} measures its terms: give "
                             "activation_peak_bytes, graph_pool_bytes, non_torch_bytes, "
                             "in_use_bytes")
        if self.rule == "profiled" and measured:
            raise ValueError(f"{measured[0]}={getattr(self, measured[0])!r} is a term of vLLM "
                             f"0.34.0's measured budget; vLLM {self.vllm} lumps them into "
                             "overhead_bytes")
        if self.rule == "profiled" and self.overhead_bytes is None:
            set_(self, "overhead_bytes", DEFAULT_OVERHEAD_BYTES)
        if self.rule == "extensible":
            for k, v in MEASURED_DEFAULTS.items():
                value = v if getattr(self, k) is None else getattr(self, k)
                set_(self, k, validate.positive_int(k.replace("_", " "), value, allow_zero=True))
        if self.gpu_mem_util is None:
            set_(self, "gpu_mem_util", DEFAULT_GPU_MEM_UTIL if self.kv_cache_memory is not None
                 else defaults["gpu_mem_util"])
        if self.block_size is None:
            set_(self, "block_size", defaults["block_size"])
        if not isinstance(self.gpu, GPU):
            set_(self, "gpu", get_gpu(self.gpu))
        validate.positive_int("gpus", self.gpus)
        validate.positive_int("tensor_parallel_size", self.tp)
        if self.gpus % self.tp:
            raise ValueError(
                f"gpus={self.gpus} must be a multiple of tensor_parallel_size={self.tp} "
                f"(each data-parallel replica is one TP group)"
            )
        util = validate.exact_fraction("gpu_memory_utilization", self.gpu_mem_util)
        if util > 1:
            raise ValueError(f"gpu_memory_utilization must be at most 1, got {self.gpu_mem_util!r}")
        set_(self, "gpu_mem_util", util)
        validate.positive_int("block_size", self.block_size)
        if self.overhead_bytes is not None:
            validate.positive_int("overhead bytes", self.overhead_bytes, allow_zero=True)
        if self.weight_dtype != CHECKPOINT:
            weight_bytes_per_element(self.weight_dtype)
        if self.memory not in MEMORY_BASES:
            raise ValueError(f"memory must be one of {', '.join(MEMORY_BASES)}, "
                             f"got {self.memory!r}")
        if self.config is None:
            set_(self, "config", _bundled_config(self.model.name))
        kv_dtype = self.kv_dtype
        if str(kv_dtype).strip().lower() == "auto":  # the checkpoint's KV dtype, else the model's
            auto = resolve_auto(self.config)
            kv_dtype = auto.kv_dtype
            set_(self, "kv_dtype_why", auto.why)
            if auto.from_checkpoint:  # vLLM's cache_config.cache_dtype becomes it too
                set_(self, "kv_cache_dtype", kv_format(auto.kv_cache_dtype).name)
        kv_dtype, scales = kv_format_parts(kv_dtype, self.scales)
        set_(self, "kv_dtype", kv_dtype)
        set_(self, "scales", scales)
        if self.params is not None or self.weight_dtype != CHECKPOINT:
            set_(self, "stored", None)  # --params or --weight-dtype override the files
        params = self.params
        if params is None and self.checkpoint is not None:
            params = self.param_count.total
        if params is None:
            params = self.model.params
        if params is None and self.kv_cache_memory is None and self.stored is None:
            raise ValueError(
                f"the parameter count of {self.model.name} is unknown and kvlib cannot count "
                f"it from its config ({self._count[1]}); give it (--params); under vLLM, "
                "--kv-cache-memory gives the KV budget outright and needs no weights")
        if params is not None:  # None: not counted, and the budget does not need them
            set_(self, "params", validate.positive_int("parameter count", params))
        if self.active_params is not None:
            validate.positive_int("active parameter count", self.active_params)
        if self.draft is not None:
            if self.draft.params is None:
                raise ValueError(f"the draft model {self.draft.name} has no parameter count")
            set_(self, "draft_tp", validate.positive_int("draft tensor_parallel_size",
                                                         self.draft_tp or self.tp))
            if self.tp % self.draft_tp:
                raise ValueError(f"draft tensor_parallel_size={self.draft_tp} must divide "
                                 f"tensor_parallel_size={self.tp}")
        # fail early on a TP (or DCP) the heads do not allow
        sequence_shares(self.model, 1, self.kv_dtype, self.tp, self.block_size, self.scales,
                        self.dcp)

    @cached_property
    def _count(self) -> tuple:
        """(the config's :class:`~kvlib.models.params.ParamCount`, or None, and why not)."""
        return _count_of(_config_key(self.config)) if self.config is not None else (
            None, "no config")

    @property
    def param_count(self):
        """The parameters counted from the config, or None where kvlib cannot count them."""
        return self._count[0]

    @cached_property
    def checkpoint(self) -> CheckpointWeights | None:
        """The checkpoint's weights per GPU (weight_dtype "checkpoint", no --params), or None
        when the weights are params x a dtype; ValueError for a quantization kvlib cannot count."""
        found = quantization_entry(self.config or {})  # also inside text_config, as vLLM
        quantized = found[1] if found else None
        method = quantized.get("quant_method", "?") if isinstance(quantized, dict) else quantized
        if self.weight_dtype == CHECKPOINT and self.params is not None and quantized:
            raise ValueError(f"{self.model.name}: --params given for a quantized checkpoint "
                             f"({method}); give --weight-dtype too, or leave --params out to "
                             "count it")
        if self.weight_dtype != CHECKPOINT or self.params is not None or self.config is None:
            return None
        count, why = self._count
        if count is None:
            if quantized and (self.kv_cache_memory is None and self.stored is None):
                raise ValueError(f"{self.model.name}: the checkpoint is quantized ({method}) "
                                 f"but kvlib cannot count its parameters ({why}); give "
                                 "--params and --weight-dtype")
            return None
        return _weights_of(_config_key(self.config), self.tp, _sm(self.gpu))

    @property
    def counted(self) -> bool:
        """False where the weights are neither counted nor read (no parameter count; the
        budget is kv_cache_memory, which they do not enter)."""
        return self.params is not None or self.stored_in_use

    @property
    def stored_in_use(self) -> bool:
        """True where the weights are the bytes read from the model folder's files."""
        return self.stored is not None

    @property
    def weights_label(self) -> str:
        """What the weights are: the checkpoint's format, or the dtype they are counted in."""
        if self.stored_in_use:
            return "checkpoint (read from its files)"
        if not self.counted:
            return "not counted"
        if self.checkpoint is not None:
            return f"checkpoint ({self.checkpoint.method})"
        return "bf16" if self.weight_dtype == CHECKPOINT else self.weight_dtype

    @property
    def replicas(self) -> int:
        return self.gpus // self.tp

    @property
    def total_memory_bytes_per_gpu(self) -> int:
        """The memory gpu_memory_utilization multiplies (see ``memory``)."""
        if self.memory == "cuda":
            return self.gpu.total_memory_bytes
        return self.gpu.hbm_bytes

    @property
    def memory_basis(self) -> str:
        """'cuda' when the total is the CUDA-reported one, else 'datasheet'."""
        cuda = self.memory == "cuda" and self.gpu.cuda_total_bytes is not None
        return "cuda" if cuda else "datasheet"

    @property
    def rule(self) -> str:
        """The budget rule: "extensible" (0.34.0's measured budget), "profiled" (0.33.0's),
        or "kv_cache_memory_bytes" (given outright)."""
        if self.kv_cache_memory is not None:
            return "kv_cache_memory_bytes"
        return VLLM_DEFAULTS[self.vllm]["rule"]

    @property
    def peak_bytes(self) -> int | None:
        """0.34.0: the transient peak kept free, activation peak + CUDA-graph estimate."""
        if self.rule != "extensible":
            return None
        return self.activation_peak_bytes + self.graph_pool_bytes

    @property
    def resident_bytes(self) -> int | None:
        """0.34.0: non-KV memory resident after capture besides the weights (non-torch
        memory + the CUDA-graph pool)."""
        if self.rule != "extensible":
            return None
        return self.non_torch_bytes + self.graph_pool_bytes

    @property
    def margin_bytes(self) -> int | None:
        """0.34.0: max(1 GiB, 0.75 x the peak), kept free besides the peak."""
        return None if self.rule != "extensible" else capacity_formulas.margin(self.peak_bytes)

    @property
    def overhead_bytes_per_gpu(self) -> int:
        """Non-KV memory besides the weights that the budget subtracts from the usable
        memory: 0.33.0's overhead; 0.34.0's resident non-KV memory + the peak kept free;
        0 when kv_cache_memory gives the budget."""
        if self.rule == "extensible":
            return self.resident_bytes + self.peak_bytes
        return self.overhead_bytes if self.rule == "profiled" else 0

    @property
    def usable_bytes_per_gpu(self) -> int:
        """vLLM's requested_memory, ceil(gpu_memory_utilization x total); 0.34.0's extensible
        cache caps it at total - in use at start - margin."""
        if self.rule == "extensible":
            return capacity_formulas.usable_extensible(
                self.gpu_mem_util, self.total_memory_bytes_per_gpu, self.in_use_bytes,
                self.peak_bytes)
        return capacity_formulas.usable(self.gpu_mem_util, self.total_memory_bytes_per_gpu)

    @property
    def active(self) -> int | None:
        """Parameters one token must read: the smaller of the published active count and
        total - the routed experts it does not use (dense: the total); None where there is
        no parameter count."""
        if self.active_params is not None:
            return self.active_params
        if self.params is None:
            return None
        if self.checkpoint is not None:
            return self.param_count.active  # counted per layer: top-k experts + everything dense
        derived = derived_active_params(self.params, moe_layout(self.config))
        published = _bundled_active(self.model.name) if self.params == self.model.params \
            else None
        return min(derived, published) if published is not None else derived

    def decode_read_bytes_per_gpu(self, batch: int | None = None):
        """Weight bytes a decode step reads per GPU (target + draft).

        batch None: the lower bound, floor(:func:`read_params` x bytes per weight / tp).
        batch B: the uniform-routing prediction for B tokens (a Fraction).
        None where there is no parameter count (the weights were not counted).
        """
        if self.active is None or self.bytes_per_weight is None:
            return None
        def part(active, config, tp):
            bpw = self.bytes_per_weight
            if batch is None:
                return math.floor(Fraction(max(0, read_params(active, config))) * bpw / tp)
            return uniform_routing_read_params(active, config, batch) * bpw / tp

        total = part(self.active, self.config, self.tp)
        if self.draft is not None:
            dconfig = _bundled_config(self.draft.name)
            dactive = derived_active_params(self.draft.params, moe_layout(dconfig))
            total += part(dactive, dconfig, self.draft_tp)
        return total

    def routing(self):
        """The target's :class:`~kvlib.serving.decode.MoELayout`, or None (dense)."""
        return moe_layout(self.config)

    @property
    def bytes_per_weight(self) -> Fraction | None:
        """Bytes per parameter: the checkpoint's average (scales included), else the dtype's;
        None where there is no parameter count."""
        if self.params is None:
            return None
        if self.stored_in_use:
            return Fraction(self.stored.total, self.params)
        if self.checkpoint is not None:
            return Fraction(self.checkpoint.total, self.param_count.total)
        return weight_bytes_per_element("bf16" if self.weight_dtype == CHECKPOINT
                                        else self.weight_dtype)

    @property
    def weights_bytes_per_gpu(self) -> int | None:
        """Weight bytes on one GPU: read from the folder's files (``stored``: split by TP
        except the parts every rank holds whole, where kvlib can count them), else counted
        from the config, else params x dtype / TP; None where none of these is known (the
        budget is kv_cache_memory, which the weights do not enter)."""
        if self.stored_in_use:
            whole = self.checkpoint.replicated if self.checkpoint is not None else 0
            whole = min(whole, self.stored.total)
            return whole + -(-(self.stored.total - whole) // self.tp)
        if self.params is None:
            return None
        if self.checkpoint is not None:
            return self.checkpoint.per_gpu
        dtype = "bf16" if self.weight_dtype == CHECKPOINT else self.weight_dtype
        return weights_bytes_per_gpu(self.params, dtype, self.tp)

    @cached_property
    def draft_checkpoint(self) -> CheckpointWeights | None:
        """The draft's checkpoint weights per GPU (counted as the target's are), or None."""
        config = _bundled_config(self.draft.name) if self.draft is not None else None
        if self.weight_dtype != CHECKPOINT or config is None:
            return None
        key = _config_key(config)
        if _count_of(key)[0] is None:
            return None  # a family kvlib cannot count: its published count x bf16
        return _weights_of(key, self.draft_tp, _sm(self.gpu))

    @property
    def draft_weights_bytes_per_gpu(self) -> int:
        if self.draft is None:
            return 0
        if self.draft_checkpoint is not None:
            return self.draft_checkpoint.per_gpu
        dtype = "bf16" if self.weight_dtype == CHECKPOINT else self.weight_dtype
        return weights_bytes_per_gpu(self.draft.params, dtype, self.draft_tp)

    @property
    def kv_budget_bytes_per_gpu(self) -> int:
        """Usable memory left for the cache, by the release's rule (:attr:`rule`); negative
        when the weights do not fit."""
        if self.rule == "kv_cache_memory_bytes":
            return self.kv_cache_memory
        weights = self.weights_bytes_per_gpu + self.draft_weights_bytes_per_gpu
        if self.rule == "extensible":
            return capacity_formulas.kv_budget_extensible(
                self.gpu_mem_util, self.total_memory_bytes_per_gpu, self.in_use_bytes, weights,
                self.resident_bytes, self.peak_bytes)
        return capacity_formulas.kv_budget(
            self.gpu_mem_util, self.total_memory_bytes_per_gpu, weights, self.overhead_bytes)

    def target_kv_per_sequence(self, context: int, block_size: int | None = None) -> int:
        bs = self.block_size if block_size is None else block_size
        return kv_bytes_per_sequence_per_gpu(self.model, context, self.kv_dtype, self.tp, bs,
                                             self.scales, self.dcp)

    def draft_kv_per_sequence(self, context: int, block_size: int | None = None) -> int:
        if self.draft is None:
            return 0
        bs = self.block_size if block_size is None else block_size
        # With draft_tp < tp the draft lives on draft_tp of the ranks: count the fullest GPU.
        return kv_bytes_per_sequence_per_gpu(self.draft, context, self.kv_dtype,
                                             self.draft_tp, bs, self.scales)

    def kv_bytes_per_sequence_per_gpu(self, context: int, block_size: int | None = None) -> int:
        """Target + draft cache of one sequence on one GPU, block-rounded (growing caches)."""
        return (self.target_kv_per_sequence(context, block_size)
                + self.draft_kv_per_sequence(context, block_size))

    @property
    def state_bytes_per_sequence_per_gpu(self) -> int:
        """Target + draft constant-size states (Mamba, linear attention, convolution) of one
        sequence on one GPU; 0 for pure-attention models."""
        draft = (state_bytes_per_sequence_per_gpu(self.draft, self.draft_tp)
                 if self.draft is not None else 0)
        return state_bytes_per_sequence_per_gpu(self.model, self.tp) + draft

    def bytes_per_sequence_per_gpu(self, context: int, block_size: int | None = None) -> int:
        """What one sequence takes on one GPU: its block-rounded cache plus its states."""
        return (self.kv_bytes_per_sequence_per_gpu(context, block_size)
                + self.state_bytes_per_sequence_per_gpu)

    def sessions(self, context: int) -> Fraction:
        """KV budget / memory per sequence, exactly: the fractional count before flooring."""
        return Fraction(max(0, self.kv_budget_bytes_per_gpu),
                        self.bytes_per_sequence_per_gpu(context))

    def max_sequences_per_replica(self, context: int) -> int:
        if self.rule != "profiled":
            return max(0, self.kv_budget_bytes_per_gpu) // self.bytes_per_sequence_per_gpu(context)
        return capacity_formulas.sessions(
            self.gpu_mem_util, self.total_memory_bytes_per_gpu,
            self.weights_bytes_per_gpu + self.draft_weights_bytes_per_gpu, self.overhead_bytes,
            self.bytes_per_sequence_per_gpu(context))

    def max_context(self, sequences: int, limit: int | None = None) -> int:
        """The longest context (tokens) at which ``sequences`` sequences fit per replica.

        See :func:`kvlib.serving.engines.vllm.context_search.max_context`.
        """
        return context_search.max_context(self, sequences, limit)

    def plan(self, context: int, sessions: str = "vllm", shared_prefix: int = 0):
        """The :class:`~kvlib.serving.engines.vllm.plan.Plan` for sequences of ``context`` tokens;
        sessions "vllm" (vLLM's allocator) or "bytes" (bytes alone: notebook 06's formula);
        shared_prefix: tokens of a prompt prefix every request shares, in vLLM's whole blocks
        (:func:`kvlib.serving.prefix_sharing.scheduler_sessions_sharing_prefix`)."""
        return make_plan(self, context, sessions, shared_prefix)


def plan(model: ModelSpec, gpu: GPU | str, gpus: int = 1, tp: int = 1, context: int = 8192,
         **options) -> Plan:
    """``Deployment(model, gpu, gpus, tp, **options).plan(context)``: vLLM's answer for
    ``model`` on ``gpus`` GPUs of ``gpu`` at ``context`` tokens a sequence."""
    return Deployment(model, gpu, gpus, tp, **options).plan(context)

