"""How a checkpoint's weights are stored: ``quantization_config`` read into exact bytes (issue 24).

:func:`read_quantization` reads ``quantization_config`` (or the older ``compression_config``)
into a :class:`Quantization`: the :class:`Scheme` of its quantized linear weights, the
modules left in the model dtype, and the KV-cache scheme if it names one. The scale layouts
follow vLLM 0.33.0 ``vllm/model_executor/layers/quantization/``:

* ``fp8``: e4m3 weights; per-tensor fp32 ``weight_scale`` (plus ``input_scale`` when
  activations are static), or with ``weight_block_size`` [b_out, b_in] one fp32
  ``weight_scale_inv`` per block (fp8.py; utils/fp8_utils.py ``create_fp8_scale_parameter``).
* ``mxfp4``: MoE experts only, 4-bit values and one uint8 (e8m0) scale per 32 inputs;
  linear layers stay unquantized (mxfp4.py ``get_quant_method``).
* ``fp8`` in a DeepSeek V4 config (``model_type`` deepseek_v4) is vLLM 0.34.0's
  ``deepseek_v4_fp8`` (models/deepseek_v4/quant_config.py:171-188): FP8 128 x 128 blocks for
  the linears, and by ``expert_dtype`` (default "fp4", :88-108) either MXFP4 routed experts
  (4-bit, one e8m0 byte per 32 inputs: ``Mxfp4MoEMethod``, :222) with every FP8 block scale
  one e8m0 byte (``is_scale_e8m0``, :111-115), or FP8 block experts with fp32 scales.
  With ``moe_quant_algo`` NVFP4 (ModelOpt's exports) the routed experts are NVFP4 instead
  (models/deepseek_v41/quant_config.py:247-261).
* ``modelopt`` / ``modelopt_fp4``: ``quant_algo`` NVFP4 (4-bit values, one fp8 scale per 16
  inputs, fp32 ``weight_scale_2`` and ``input_scale``) or FP8 (per-tensor; modelopt.py);
  MIXED_PRECISION: each module in the algorithm ``quantized_layers`` gives it (NVFP4,
  W4A16_NVFP4, FP8, MXFP8), found as vLLM finds it for the module it builds.
* ``awq`` (auto_awq.py): qweight int32 (in, out/8), qzeros int32 (in/g, out/8), fp16 scales
  (in/g, out). ``gptq`` (auto_gptq.py): qweight (in/8, out), qzeros (in/g, out/8), fp16
  scales (in/g, out), and the checkpoint's int32 ``g_idx`` (in,) that vLLM no longer loads.
* ``compressed-tensors``: config groups of ``weights`` (num_bits, type, strategy,
  group_size / block_structure, symmetric); scales in the model dtype except NVFP4's fp8
  (plus its fp32 global scales); packed formats add ``weight_shape`` (2 x int64) and
  asymmetric schemes zero points packed along the output dimension. With several groups each
  module is matched to its group by ``targets`` as vLLM matches it (names of the modules vLLM
  builds, ``re:`` regexes, class names).

A config without ``quant_method`` (from which vLLM derives none) is refused: vLLM 0.34.0
serves it with no quantization method, and its quantized tensors do not load.
* ``bitsandbytes`` (the bitsandbytes library's ``QuantState``): 4-bit with one fp32 absmax
  per 64 values (with double quant: uint8 absmax, an fp32 absmax per 256 blocks, a 256-entry
  code and an offset) and a 16-entry fp32 code; 8-bit with one fp32 ``SCB`` per output row.
  The small JSON quant-state blob is not counted.

What the files store (:func:`checkpoint_bytes`, :func:`linear_bytes`) and what vLLM 0.34.0
allocates (:func:`allocated_linear_bytes` of :func:`vllm_quantization`, which
``checkpoint_weights``' ``per_gpu`` sums) differ where vLLM holds a tensor in another dtype
(compressed-tensors FP8 scales in fp32), refines or pads it per rank (FP8 MoE scale grids,
gpt-oss's MXFP4 experts), or rewrites the method (Kimi K3's mxfp4).

Embeddings, norms and every non-linear element stay in the model dtype; lm_head, routers
(MoE gates), the MTP ``eh_proj`` (vLLM deepseek_mtp.py builds it as a plain nn.Linear) and
the V3.2 indexer's ``weights_proj`` (deepseek_v2.py builds it unquantized) are never
quantized by default. An unknown ``quant_method`` raises ValueError naming it.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kvlib.models.params import ParamCount, count_params
from kvlib.models.readers.fields import Fields, describe, load_config
from kvlib.models.readers.state import model_dtype_bytes

__all__ = ["Scheme", "Quantization", "read_quantization", "quantization_entry",
           "checkpoint_bytes", "linear_bytes", "METHODS", "modelopt_method", "KVCacheRequest",
           "kv_cache_request", "unmatched", "vllm_module", "vllm_quantization",
           "allocated_linear_bytes", "mxfp4_moe_padding", "MXFP4_MOE_ALIGN"]

# Never quantized unless a config says so: lm_head, embeddings, routers, MTP and indexer
# projections (module name's last segments).
# DeepSeek V4's compressor wkv / wgate are built with quant_config=None (vLLM 0.34.0
# models/deepseek_v4/compressor.py:285-293) and ship in bf16 (transformers 5.25.0
# modeling_deepseek_v4.py:1254-1263).
_DENSE = re.compile(r"(^|\.)(lm_head|embed_tokens|shared_head\.head|eh_proj|mtp\.fc|gate|router"
                    r"|router\.proj|shared_expert_gate|weights_proj|compressor\.wkv"
                    r"|compressor\.wgate)$")


def _packed(n: int, bits: int) -> int:
    """Bytes of n values of ``bits`` packed into int32 words."""
    return math.ceil(n * bits / 32) * 4


@dataclass(frozen=True)
class Scheme:
    """How one quantized linear weight (out_features, in_features) is stored.

    bits: per value; strategy: "tensor", "channel" (one scale per output row), "group"
    (``group`` inputs per scale) or "block" (``block`` = (b_out, b_in)); scale_bytes: per
    scale; zero_bits: per zero point (0: symmetric, none stored), packed into int32 along
    the output dimension; pack: values packed into int32 words ("in" or "out"), or "" for
    plain bytes; g_idx: an int32 group index per input; extra: fixed bytes per module
    (per-tensor fp32 scales, ``weight_shape``, code books). loaded_scale_bytes: per scale as
    vLLM 0.34.0 allocates it on the GPU where that differs from the checkpoint's (0: the
    same): compressed-tensors FP8 stores its scales in the model dtype, vLLM holds them in
    fp32 (:meth:`bytes` with ``loaded``).
    """

    name: str
    bits: int
    strategy: str
    group: int = 0
    block: tuple[int, int] = (0, 0)
    scale_bytes: int = 4
    zero_bits: int = 0
    pack: str = ""
    g_idx: bool = False
    extra: int = 0
    loaded_scale_bytes: int = 0

    def scales(self, in_features: int, out_features: int) -> int:
        """Number of scales: 1, out, out x ceil(in / group) or the blocks covering the matrix."""
        if self.strategy == "tensor":
            return 1
        if self.strategy == "channel":
            return out_features
        if self.strategy == "group":
            return out_features * math.ceil(in_features / self.group)
        return math.ceil(out_features / self.block[0]) * math.ceil(in_features / self.block[1])

    def bytes(self, in_features: int, out_features: int, loaded: bool = False) -> int:
        """Exact bytes of the stored weight, its scales, zero points and indices; with
        ``loaded``, the scales in the dtype vLLM allocates them in (``loaded_scale_bytes``)."""
        if self.pack == "in":
            values = _packed(in_features, self.bits) * out_features
        elif self.pack == "out":
            values = in_features * _packed(out_features, self.bits)
        else:
            values = math.ceil(Fraction(in_features * out_features * self.bits, 8))
        n_scales = self.scales(in_features, out_features)
        zeros = (_packed(out_features, self.zero_bits) * (n_scales // out_features)
                 if self.zero_bits else 0)
        per_scale = self.loaded_scale_bytes if loaded and self.loaded_scale_bytes \
            else self.scale_bytes
        return (values + n_scales * per_scale + zeros
                + (4 * in_features if self.g_idx else 0) + self.extra)


@dataclass(frozen=True)
class Quantization:
    """A checkpoint's storage: ``scheme`` for its quantized linears, ``skip`` patterns (as the
    config lists them) for those left in the model dtype (``dense_bytes`` per element).
    experts_only: only routed experts are quantized (mxfp4). experts: the scheme of the
    routed experts when it differs from ``scheme`` (DeepSeek V4's MXFP4), else None.
    kv_cache: the KV-cache scheme the config names ("fp8", ...) or None. per_module: for a
    checkpoint with an algorithm per module (several compressed-tensors groups, ModelOpt
    MIXED_PRECISION), the :class:`Scheme` of a linear by its name and part (None: model
    dtype); ``scheme`` and ``experts`` then name the other linears' and the experts' first.
    mixed: the modules are in more than one scheme by the config's own mapping."""

    method: str
    scheme: Scheme
    skip: tuple[str, ...] = ()
    dense_bytes: int = 2
    experts_only: bool = False
    quantize_lm_head: bool = False
    kv_cache: str | None = None
    notes: tuple[str, ...] = field(default=())
    experts: Scheme | None = None
    per_module: Callable[[str, str], Scheme | None] | None = None
    mixed: bool = False

    def scheme_for(self, module_name: str, part: str = "") -> Scheme | None:
        """The :class:`Scheme` the linear ``module_name`` (part from
        :mod:`kvlib.models.params`) is stored in, or None where it stays in the model dtype.

        A checkpoint with an algorithm per module (``per_module``: compressed-tensors with
        several config groups, ModelOpt MIXED_PRECISION) answers module by module; routers
        and the projections vLLM builds unquantized (:data:`_DENSE`) never are."""
        head = module_name == "lm_head" or part == "lm_head"
        if not head and (part == "router" or _DENSE.search(module_name)):
            return None
        if self.per_module is not None:
            return self.per_module(module_name, part)
        if head:
            return self.scheme if self.quantize_lm_head else None
        if self.experts_only and ".experts." not in module_name:
            return None
        if any(_matches(p, module_name) for p in self.skip):
            return None
        if self.experts is not None and ".experts." in module_name:
            return self.experts
        return self.scheme

    def quantized(self, module_name: str, part: str = "") -> bool:
        """Whether the linear ``module_name`` (part from :mod:`kvlib.models.params`) is stored
        quantized (in ``scheme``, ``experts`` or its own module's scheme)."""
        return self.scheme_for(module_name, part) is not None

    def bytes(self, in_features: int, out_features: int, module_name: str, part: str = "") -> int:
        """Exact stored bytes of the linear weight (out_features, in_features) ``module_name``."""
        scheme = self.scheme_for(module_name, part)
        if scheme is not None:
            return scheme.bytes(in_features, out_features)
        return in_features * out_features * self.dense_bytes


def _matches(pattern: str, name: str) -> bool:
    """A skip entry as the methods write them: ``re:`` regex (compressed-tensors), a
    wildcard (modelopt, gpt-oss), else a module name or any part of one (AWQ, fp8). A path
    under a multimodal wrapper (``model.language_model.``, ``language_model.model.``) is
    read as the text model's (``model.``), as vLLM maps both onto its own modules
    (modelopt.py:198-233 tests ``language_model.``-less prefixes too)."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    pattern, name = _ct_norm(pattern), _ct_norm(name)
    if "*" in pattern or "?" in pattern:
        parts = name.split(".")
        return any(fnmatch.fnmatchcase(".".join(parts[:k]), pattern)
                   for k in range(1, len(parts) + 1))
    return pattern in name


def _skip(q: Fields, *keys: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in keys:
        value = q.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{q.path(key)} must be a list of module names, got "
                             f"{describe(value)}")
        out += value
    return tuple(out)


def _fp8(q: Fields, d: int) -> tuple[Scheme, dict]:
    static = q.text("activation_scheme") == "static"
    block = q.data.get("weight_block_size")
    skip = {"skip": _skip(q, "ignored_layers", "modules_to_not_convert")}
    if block is None:
        return Scheme("fp8 per-tensor", 8, "tensor", extra=4 if static else 0), skip
    if not (isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise ValueError(f"{q.path('weight_block_size')} must be two positive ints, got "
                         f"{describe(block)}")
    return Scheme(f"fp8 block {block[0]}x{block[1]}", 8, "block", block=tuple(block)), skip


def _mxfp4(q: Fields, d: int) -> tuple[Scheme, dict]:
    return (Scheme("mxfp4", 4, "group", group=32, scale_bytes=1),
            {"skip": _skip(q, "modules_to_not_convert", "ignored_layers"), "experts_only": True})


def _modelopt(q: Fields, d: int, family: str = "") -> tuple[Scheme, dict]:
    inner = Fields(q.data["quantization"], q.path("quantization.")) \
        if isinstance(q.data.get("quantization"), Mapping) else q
    algo = inner.text("quant_algo").upper()
    kv = inner.text("kv_cache_quant_algo") or None
    skip = {"skip": _skip(inner, "exclude_modules", "ignore"), "kv_cache": kv and kv.lower()}
    if algo == "MIXED_PRECISION":
        return _modelopt_mixed(inner, skip, family)
    return _modelopt_scheme(inner, algo, inner.path("quant_algo")), skip


def _modelopt_scheme(f: Fields, algo: str, where: str, group: int | None = None) -> Scheme:
    """One ModelOpt linear algorithm: NVFP4 (4-bit values, one fp8 scale per ``group_size``
    (16) inputs, fp32 weight_scale_2 and input_scale), W4A16_NVFP4 (the same weights, no
    input_scale: activations stay bf16), FP8 (per-tensor, fp32 weight_scale and input_scale)
    or MXFP8 (e4m3 values, one e8m0 scale per 32 inputs: vLLM 0.34.0 modelopt.py:161,
    utils/mxfp8_utils.py:13)."""
    if algo in ("NVFP4", "W4A16_NVFP4"):
        g = group or f.int("group_size", required=False) or 16
        if algo == "NVFP4":
            return Scheme("nvfp4", 4, "group", group=g, scale_bytes=1, extra=8)
        return Scheme("w4a16 nvfp4", 4, "group", group=g, scale_bytes=1, extra=4)
    if algo == "FP8":
        return Scheme("fp8 per-tensor (modelopt)", 8, "tensor", extra=4)
    if algo == "MXFP8":
        return Scheme("mxfp8", 8, "group", group=32, scale_bytes=1)
    raise ValueError(f"{where}={algo or None!r}: kvlib reads NVFP4, W4A16_NVFP4, FP8 and MXFP8")


def _modelopt_mixed(inner: Fields, skip: dict, family: str = "") -> tuple[Scheme, dict]:
    """ModelOpt MIXED_PRECISION: ``quantized_layers`` maps checkpoint modules to their
    algorithm, each module counted in its own, found as vLLM 0.34.0's
    ``ModelOptMixedPrecisionConfig._resolve_quant_algo`` finds it (modelopt.py:1865-1942) for
    the module vLLM builds (:func:`vllm_module`): the module itself; else its shards (a fused
    module's shards must agree, or vLLM refuses: :1896-1900); else a listed module under it;
    else, for routed experts, any listed module under their parent; else, for qkv_proj /
    gate_up_proj, its listed shards. A module not found, or one ``exclude_modules`` /
    ``ignore`` matches, stays in the model dtype (UnquantizedLinearMethod). NVFP4's group
    size is the config's ``group_size``, else the first NVFP4-family entry's (:1808-1820).
    The multimodal prefixes (``model.language_model.``, ``language_model.model.``) are read
    as one (:1944-1959)."""
    layers = inner.data.get("quantized_layers")
    where = inner.path("quantized_layers")
    if not isinstance(layers, Mapping) or not layers:
        raise ValueError(f"{where} must map module names to their algorithm, got "
                         f"{describe(layers)}")
    group = inner.int("group_size", required=False)
    algos: dict[str, str] = {}
    for name, recipe in layers.items():
        r = Fields(recipe if isinstance(recipe, Mapping) else {}, f"{where}.{name}.")
        algos[_ct_norm(name)] = r.text("quant_algo").upper()
        if group is None and algos[_ct_norm(name)] in ("NVFP4", "W4A16_NVFP4"):
            group = r.int("group_size", required=False)
    schemes = {a: _modelopt_scheme(inner, a, f"{where}.{n}.quant_algo", group)
               for n, a in zip(layers, algos.values(), strict=True)}
    # a fused module's shards in different algorithms: vLLM refuses (modelopt.py:1896-1900)
    fused: dict[str, dict[str, str]] = {}
    for name, algo in algos.items():
        module, shards = vllm_module(name, family)
        if shards:
            fused.setdefault(module, {})[name.rpartition(".")[2]] = algo
    for module, found in fused.items():
        if len(set(found.values())) > 1:
            kinds = sorted({f"{a} group_size {_layers_group(layers, a)}" for a in found.values()})
            raise ValueError(f"{where}: the other modules mix {kinds} within the fused layer "
                             f"{module} ({', '.join(sorted(found))}); vLLM 0.34.0 refuses "
                             "shards of one layer in different algorithms "
                             "(modelopt.py:1896-1900)")

    def resolve(name: str, part: str) -> Scheme | None:
        module, shards = vllm_module(_ct_norm(name), family)
        if ".experts." in name:
            module = module.rpartition(".0.")[0]  # vLLM's RoutedExperts prefix
        if any(_matches(p, n) for p in skip["skip"] for n in (name, module)):
            return None
        algo = _mixed_algo(algos, module, shards)
        if algo is None:
            return None
        scheme = schemes[algo]
        if module == _ct_norm(name) and shards:  # one kvlib linear, several checkpoint modules
            return _per_module_scales(scheme, sum(1 for s in shards if s in algos) or 1)
        if ".experts." in name and name.endswith(".gate_up_proj") and any(
                n.startswith(module + ".") and n.endswith((".w1", ".gate_proj")) for n in algos):
            return _per_module_scales(scheme, 2)  # stored as w1 and w3 (gate and up) per expert
        return scheme

    listed = {a: sum(1 for x in algos.values() if x == a) for a in dict.fromkeys(algos.values())}
    expert_algos = [a for n, a in algos.items() if ".experts" in n]
    other = [a for n, a in algos.items() if ".experts" not in n] or expert_algos
    note = (f"MIXED_PRECISION: {len(algos)} modules listed in {where} ("
            + ", ".join(f"{n} {a}" for a, n in listed.items())
            + "), each counted in its own algorithm as vLLM 0.34.0 finds it "
            "(modelopt.py:1865-1942); a module it does not list stays in the model dtype")
    return schemes[other[0]], {**skip, "per_module": resolve, "mixed": True,
                               "experts": schemes[expert_algos[0]] if expert_algos else None,
                               "notes_extra": (note,)}


def _per_module_scales(scheme: Scheme, modules: int) -> Scheme:
    """``scheme`` for one kvlib linear the checkpoint stores as ``modules`` modules (Qwen3.5's
    in_proj_qkvz as in_proj_qkv and in_proj_z): each module has its own per-tensor scales
    (``extra``, and the one scale of a per-tensor scheme)."""
    if modules == 1:
        return scheme
    per = scheme.extra + (scheme.scale_bytes if scheme.strategy == "tensor" else 0)
    return replace(scheme, extra=scheme.extra + (modules - 1) * per)


def _layers_group(layers: Mapping, algo: str):
    """The ``group_size`` the first ``quantized_layers`` entry of ``algo`` names, or None."""
    for recipe in layers.values():
        if isinstance(recipe, Mapping) and str(recipe.get("quant_algo", "")).upper() == algo:
            return recipe.get("group_size")
    return None


def _mixed_algo(algos: Mapping[str, str], module: str, shards: tuple[str, ...]) -> str | None:
    """``_resolve_quant_algo`` (vLLM 0.34.0 modelopt.py:1865-1942) on kvlib's names (their
    multimodal prefix already taken off)."""
    if module in algos:
        return algos[module]
    found = {algos[s] for s in shards if s in algos}
    if len(found) == 1:
        return found.pop()
    under = next((a for n, a in algos.items() if n.startswith(module + ".")), None)
    if under is not None:
        return under
    if module.endswith(".experts"):
        parent = module.rpartition(".experts")[0] + "."
        return next((a for n, a in algos.items() if n.startswith(parent)), None)
    return None


def _awq_gptq(q: Fields, d: int, gptq: bool) -> tuple[Scheme, dict]:
    bits = q.int("bits", "w_bit")
    g = 0 if q.data.get("group_size") == -1 else q.int("group_size", "q_group_size",
                                                        required=False)  # -1: per channel
    if bits not in (2, 3, 4, 8):
        raise ValueError(f"{q.path('bits')}={bits}: AWQ and GPTQ store 2, 3, 4 or 8 bits")
    zeros = bits if gptq or q.flag("zero_point") is not False else 0
    strategy = "group" if g else "channel"
    if gptq:
        scheme = Scheme(f"gptq {bits}-bit g{g or 'channel'}", bits, strategy, g, scale_bytes=2,
                        zero_bits=zeros, pack="in", g_idx=True)
        return scheme, {"quantize_lm_head": bool(q.flag("lm_head"))}
    scheme = Scheme(f"awq {bits}-bit g{g or 'channel'}", bits, strategy, g, scale_bytes=2,
                    zero_bits=zeros, pack="out")
    return scheme, {"skip": _skip(q, "modules_to_not_convert")}


def _ct_scheme(w: Fields, fmt: str, d: int) -> Scheme:
    """One compressed-tensors config group's ``weights`` read into a :class:`Scheme`: scales
    in the model dtype (``d`` bytes) except FP4's one byte (NVFP4's fp8 plus its two fp32
    global scales; MXFP4's e8m0, ``mxfp4-pack-quantized``, with no global scale);
    ``pack-quantized`` adds ``weight_shape`` (2 x int64) and packs values into int32. FP8
    weights' scales (block, channel, tensor) are allocated by vLLM 0.34.0 in fp32
    (``loaded_scale_bytes`` 4: ``create_fp8_scale_parameter``, utils/fp8_utils.py:1396-1405,
    for the linears; compressed_tensors_moe_w8a8_fp8.py:170-230 for the routed experts)."""
    bits, kind, strategy = w.int("num_bits"), w.text("type") or "int", w.text("strategy")
    fp4 = kind == "float" and bits == 4
    mxfp4 = fp4 and fmt == "mxfp4-pack-quantized"
    extra = (8 if fp4 and not mxfp4 else 0) + (16 if fmt == "pack-quantized" else 0)
    fp32 = 4 if kind == "float" and bits == 8 else 0
    zero = 0 if w.flag("symmetric") is not False or kind == "float" else bits
    if strategy in ("group", "tensor_group"):
        return Scheme(f"compressed-tensors {kind}{bits} g{w.int('group_size')}", bits, "group",
                      w.int("group_size"), scale_bytes=1 if fp4 else d, zero_bits=zero,
                      pack="in" if fmt == "pack-quantized" else "", extra=extra)
    if strategy == "block":
        b = w.data.get("block_structure")
        if not (isinstance(b, list) and len(b) == 2):
            raise ValueError(f"{w.path('block_structure')} must be two ints, got {describe(b)}")
        return Scheme(f"compressed-tensors {kind}{bits} block {b[0]}x{b[1]}", bits, "block",
                      block=tuple(b), scale_bytes=d, extra=extra, loaded_scale_bytes=fp32)
    if strategy in ("channel", "tensor"):
        return Scheme(f"compressed-tensors {kind}{bits} {strategy}", bits, strategy,
                      scale_bytes=d, zero_bits=zero,
                      pack="in" if fmt == "pack-quantized" else "", extra=extra,
                      loaded_scale_bytes=fp32)
    raise ValueError(f"{w.path('strategy')}={strategy!r}: not counted")


def _compressed(q: Fields, d: int, family: str = "") -> tuple[Scheme, dict]:
    sparsity = q.data.get("sparsity_config")
    if isinstance(sparsity, Mapping) and sparsity.get("format") not in (None, "dense"):
        raise ValueError(f"{q.path('sparsity_config.format')}={sparsity.get('format')!r}: "
                         "sparse checkpoints are not counted")
    groups = q.data.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(f"{q.path('config_groups')} must map group names to their scheme, "
                         f"got {describe(groups)}")
    kv = q.data.get("kv_cache_scheme")
    kv_name = None
    if isinstance(kv, Mapping):
        k = Fields(kv, q.path("kv_cache_scheme."))
        kv_name = f"{'fp' if k.text('type') == 'float' else 'int'}{k.int('num_bits')}"
    out = {"skip": _skip(q, "ignore"), "kv_cache": kv_name}
    top = q.text("format")
    schemes: list[tuple[str, tuple[str, ...], Scheme]] = []
    for gname, group in groups.items():
        where = q.path(f"config_groups.{gname}.")
        if not isinstance(group, Mapping):
            raise ValueError(f"{where[:-1]} must be a JSON object, got {describe(group)}")
        g = Fields(group, where)
        targets = group.get("targets")
        if not (isinstance(targets, list) and targets
                and all(isinstance(t, str) for t in targets)):
            raise ValueError(f"{where}targets must be a list of module names, patterns or "
                             f"classes, got {describe(targets)}")
        # a group's own format wins over the top level's ("mixed-precision" names no layout)
        fmt = g.text("format") or top
        w = Fields(group.get("weights") or {}, where + "weights.")
        scheme = _ct_scheme(w, fmt, d)
        # vLLM 0.34.0 drops a group whose one target is an attention class: attention
        # quantization goes with the KV cache (compressed_tensors.py:240-252)
        if len(targets) == 1 and targets[0].endswith("Attention"):
            out["notes_extra"] = out.get("notes_extra", ()) + (
                f"{where}targets={targets}: dropped, as vLLM 0.34.0 drops an attention "
                "class's group (compressed_tensors.py:240-252)",)
            dropped = scheme
            continue
        schemes.append((gname, tuple(targets), scheme))
    if not schemes:  # every group dropped: every linear in the model dtype
        return dropped, {**out, "per_module": lambda name, part: None}
    return _ct_groups(q, schemes, out, family)


def _ct_norm(path: str) -> str:
    """A module path with a multimodal wrapper's prefix taken off, as vLLM's weight mappers
    take it off before matching (``model.language_model.`` / ``language_model.model.`` ->
    ``model.``; ``language_model.lm_head`` -> ``lm_head``)."""
    for pre in ("model.language_model.", "language_model.model."):
        if path.startswith(pre):
            return "model." + path[len(pre):]
    return "lm_head" if path == "language_model.lm_head" else path


def _ct_equal(value: str, target: str) -> bool:
    """compressed-tensors' match of a name against one target or ignore entry: a ``re:``
    regex by ``re.match``, else the same path (vLLM 0.34.0 utils/config_utils.py:501-521)."""
    if target.startswith("re:"):
        return re.match(target[3:], value) is not None
    return _ct_norm(target) == _ct_norm(value)


def _ct_groups(q: Fields, groups: list[tuple[str, tuple[str, ...], Scheme]],
               out: dict, family: str = "") -> tuple[Scheme, dict]:
    """Several compressed-tensors config groups, each module matched to one as vLLM 0.34.0's
    ``CompressedTensorsConfig.get_scheme_dict`` does (compressed_tensors.py:998-1031;
    utils.py:73-157): ``ignore`` first; then the first target equal to (or, for ``re:``, a
    regex matching) the name of the module vLLM builds (:func:`vllm_module`); then, for a
    fused module, a target for every one of its shards (the first shard's group); then a
    class-name target contained in its class (``Linear`` is in every linear's class name and
    is extended to the routed experts, compressed_tensors.py:221-232). Routed experts are
    looked up as vLLM asks for them, ``<experts>.0.<projection>``
    (compressed_tensors_moe/compressed_tensors_moe.py:36-58). A module no group matches stays
    in the model dtype, as vLLM builds it (UnquantizedLinearMethod /
    UnquantizedFusedMoEMethod)."""
    ignore = out["skip"]
    targets = [(t, gname, scheme) for gname, ts, scheme in groups for t in ts]

    def find(name: str) -> tuple[str, Scheme] | None:
        for t, gname, scheme in targets:
            if _ct_equal(name, t):
                return gname, scheme
        return None

    def match(name: str, part: str) -> tuple[str, Scheme] | None:
        module, shards = vllm_module(name, family)
        expert = ".experts." in name
        if any(_ct_equal(module, p) for p in ignore) or (
                shards and all(any(_ct_equal(s, p) for p in ignore) for s in shards)):
            return None
        hit = find(module)
        if hit is None and shards:
            found = [find(s) for s in shards]
            hit = found[0] if all(found) else None
        if hit is None and part != "lm_head":  # ParallelLMHead's class holds no "Linear"
            classes = ("Linear", "RoutedExperts") if expert else ("Linear",)
            hit = next(((g, s) for t, g, s in targets if t in classes), None)
        return hit

    def resolve(name: str, part: str) -> Scheme | None:
        hit = match(name, part)
        parent, _, last = name.rpartition(".")
        siblings = next((p for p in _EXPERT_PROJECTIONS if last in p), ())
        if ".experts." in name and siblings:
            # one scheme for all of an expert's projections, or vLLM refuses
            # (compressed_tensors_moe.py:45-55)
            found = {s: match(f"{parent}.{s}", part) for s in siblings}
            groups = {s: h[0] if h else None for s, h in found.items()}
            if len(set(groups.values())) > 1:
                raise ValueError(
                    f"{q.path('config_groups')}: the routed experts {parent} match "
                    + ", ".join(f"{s}: {g or 'no group'}" for s, g in groups.items())
                    + "; vLLM 0.34.0 refuses MoE projections in different schemes "
                    "(compressed_tensors_moe.py:45-55)")
        return hit[1] if hit else None

    if len(groups) == 1:
        return groups[0][2], {**out, "per_module": resolve}
    note = (f"compressed-tensors with {len(groups)} config groups ("
            + "; ".join(f"{g}: {s.name} for {list(ts)}" for g, ts, s in groups)
            + "), each module matched to its group as vLLM 0.34.0 matches it "
            "(compressed_tensors.py:998-1031); a module no group matches stays in the model "
            "dtype; routed experts are looked up as <experts>.0.<projection> "
            "(compressed_tensors_moe.py:36-58)")
    return groups[0][2], {**out, "per_module": resolve, "mixed": True,
                          "notes_extra": out.get("notes_extra", ()) + (note,)}


# An expert's projections as the families name them (vLLM looks up all three, :func:`_ct_groups`)
_EXPERT_PROJECTIONS = (("w1", "w3", "w2"), ("gate_proj", "up_proj", "down_proj"),
                       ("gate_up_proj", "down_proj"))

# The fused modules vLLM 0.34.0 builds from kvlib's per-checkpoint linears (the models'
# packed_modules_mapping: qwen3_5.py:305-313, 479-482; models/deepseek_v4/nvidia/
# model.py:1332-1336; models/minimax_m3/nvidia/model.py:1770-1773, 900-912): the fused name
# and its shards, by the linear's last name (or its last two), for every family and for one.
_QKV = ("qkv_proj", ("q_proj", "k_proj", "v_proj"))
_GATE_UP = ("gate_up_proj", ("gate_proj", "up_proj"))
_PACKED = {"q_proj": _QKV, "k_proj": _QKV, "v_proj": _QKV, "qkv_proj": _QKV,
           "gate_proj": _GATE_UP, "up_proj": _GATE_UP, "gate_up_proj": _GATE_UP,
           "in_proj_qkvz": ("in_proj_qkvz", ("in_proj_qkv", "in_proj_z")),
           "in_proj_ba": ("in_proj_ba", ("in_proj_b", "in_proj_a"))}
_PACKED_FAMILY = {
    "deepseek_v4": {"attn.wq_a": ("fused_wqa_wkv", ("wq_a", "wkv")),
                    "attn.wkv": ("fused_wqa_wkv", ("wq_a", "wkv")),
                    "compressor.wkv": ("fused_wkv_wgate", ("wkv", "wgate")),
                    "compressor.wgate": ("fused_wkv_wgate", ("wkv", "wgate"))},
    # one qkv_proj GEMM holds q, k, v and the indexer's q and k (MinimaxM3QKVParallelLinear
    # WithIndexer); its shards by the packed mapping are q, k, v
    "minimax_m3": {"index_q_proj": _QKV, "indexer.wk": _QKV}}
_PACKED_FAMILY["minimax_m3_vl"] = _PACKED_FAMILY["minimax_m3"]


def vllm_module(name: str, family: str = "") -> tuple[str, tuple[str, ...]]:
    """(the module vLLM 0.34.0 builds a kvlib linear into, that module's shards' names or ())
    for a name from :mod:`kvlib.models.params` of a ``family`` (model_type):
    ``...self_attn.q_proj`` -> ``...qkv_proj`` with shards ``q_proj``, ``k_proj``, ``v_proj``;
    DeepSeek V4's ``attn.wq_a`` / ``attn.wkv`` -> ``attn.fused_wqa_wkv``; a routed expert's
    ``...experts.w1`` -> ``...experts.0.w1``, as vLLM asks for one expert's projection (no
    shards)."""
    parent, _, last = name.rpartition(".")
    if parent.endswith(".experts") or parent == "experts":
        return f"{parent}.0.{last}", ()
    table = {**_PACKED, **_PACKED_FAMILY.get(family, {})}
    key = f"{parent.rpartition('.')[2]}.{last}"
    key = key if key in table else last
    if key not in table:
        return name, ()
    fused, shards = table[key]
    base = parent.removesuffix(".indexer") if key == "indexer.wk" else parent
    base = base + "." if base else ""
    return base + fused, tuple(base + s for s in shards)


def _bnb(q: Fields, d: int) -> tuple[Scheme, dict]:
    skip = {"skip": _skip(q, "llm_int8_skip_modules", "modules_to_not_convert")}
    if q.flag("load_in_4bit"):
        kind = q.text("bnb_4bit_quant_type") or "fp4"
        if kind not in ("nf4", "fp4"):
            raise ValueError(f"{q.path('bnb_4bit_quant_type')}={kind!r}: nf4 or fp4")
        if q.flag("bnb_4bit_use_double_quant"):  # uint8 absmax per 64; fp32 per 256 blocks
            return Scheme(f"bnb {kind} double-quant", 4, "group", 64, scale_bytes=1,
                          extra=64 + 1024 + 4), skip
        return Scheme(f"bnb {kind}", 4, "group", 64, scale_bytes=4, extra=64), skip
    if q.flag("load_in_8bit"):
        return Scheme("bnb int8", 8, "channel", scale_bytes=4), skip
    raise ValueError(f"{q.path('quant_method')}='bitsandbytes' needs load_in_4bit or "
                     "load_in_8bit")


def _deepseek_v4(cfg: Mapping, q: Fields, d: int) -> tuple[Scheme, dict]:
    """vLLM 0.34.0's DeepseekV4FP8Config (models/deepseek_v4/quant_config.py), which takes
    over an ``fp8`` config of model_type deepseek_v4 (:171-188)."""
    scheme, extra = _fp8(q, d)
    if scheme.strategy != "block":
        raise ValueError(f"{q.path('weight_block_size')} is missing: DeepSeek V4 checkpoints "
                         "store FP8 in 128 x 128 blocks (quant_config.py:60-64)")
    # transformers 5.25.0 moves expert_dtype into quantization_config
    # (configuration_deepseek_v4.py:243-251); vLLM reads the top level, default "fp4" (:88-108)
    dtype = cfg.get("expert_dtype", q.data.get("expert_dtype", "fp4"))
    if dtype not in ("fp4", "fp8"):
        raise ValueError(f"expert_dtype={dtype!r}: vLLM 0.34.0 knows fp4 and fp8 "
                         "(models/deepseek_v4/quant_config.py:22)")
    if dtype == "fp8":  # fp32 block scales, Fp8MoEMethod for the experts (:228-230);
        return scheme, extra  # moe_quant_algo is read only for fp4 experts
    e8m0 = Scheme(f"{scheme.name}, e8m0 scales", 8, "block", block=scheme.block, scale_bytes=1)
    moe = q.data.get("moe_quant_algo")
    if not (isinstance(moe, str) and moe.upper() == "NVFP4"):
        # any other value (or none) keeps the MXFP4 experts (quant_config.py:214-227)
        return e8m0, {**extra, "experts": Scheme("mxfp4", 4, "group", group=32, scale_bytes=1)}
    # moe_quant_algo NVFP4 (ModelOpt's DeepSeek V4 exports): the routed experts are NVFP4 (two
    # fp32 per-tensor scales and one fp8 scale per 16 inputs: ModelOptNvFp4FusedMoE with
    # group_size 16) and every other linear stays FP8 128 x 128 with e8m0 scales; the config's
    # own ignore list and quantized_layers are not read by this method (Fp8Config.from_config,
    # fp8.py:155-172, reads ignored_layers / modules_to_not_convert), except that on CUDA an
    # ignore pattern matching a layer's "layers.<i>.ffn.experts" keeps that layer's experts
    # in MXFP4 (models/deepseek_v41/quant_config.py:111-124, 247-261).
    layers = cfg.get("num_hidden_layers")
    ignore = [p for p in (q.data.get("ignore") or []) if isinstance(p, str)]
    hit = [p for p in ignore for i in range(layers if isinstance(layers, int) else 0)
           if fnmatch.fnmatchcase(f"layers.{i}.ffn.experts", p)]
    if hit:
        raise ValueError(f"{q.path('ignore')} entry {hit[0]!r} keeps some routed experts in MXFP4 "
                         "beside the NVFP4 ones (moe_quant_algo 'NVFP4'): experts in two "
                         "formats are not counted")
    nvfp4 = Scheme("nvfp4", 4, "group", group=16, scale_bytes=1, extra=8)
    note = (f"{q.path('moe_quant_algo')}='{moe}': routed experts in NVFP4 (vLLM 0.34.0 "
            "ModelOptNvFp4FusedMoE, models/deepseek_v41/quant_config.py:247-261), the other "
            f"linears {e8m0.name}")
    return e8m0, {**extra, "experts": nvfp4, "notes_extra": (note,)}


METHODS = {"fp8": _fp8, "mxfp4": _mxfp4, "modelopt": _modelopt, "modelopt_fp4": _modelopt,
           "modelopt_mixed": _modelopt,
           "awq": lambda q, d: _awq_gptq(q, d, False), "gptq": lambda q, d: _awq_gptq(q, d, True),
           "compressed-tensors": _compressed, "bitsandbytes": _bnb}


def quantization_entry(cfg: Mapping) -> tuple[str, object] | None:
    """(its path, its value) of the quantization section vLLM 0.34.0 reads from a config dict,
    or None: the top level's ``quantization_config``, else its ``compression_config``, else
    the same two inside ``text_config`` (model_arch_config_convertor.py:285-292)."""
    text = cfg.get("text_config")
    places = [(cfg, "")] + ([(text, "text_config.")] if isinstance(text, Mapping) else [])
    for where, prefix in places:
        for name in ("quantization_config", "compression_config"):
            if where.get(name) is not None:
                return prefix + name, where[name]
    return None


def modelopt_method(raw: Mapping) -> str:
    """``quant_method`` as vLLM 0.34.0 normalizes it (transformers_utils/
    model_arch_config_convertor.py:241-283): a ModelOpt file (``producer.name`` "modelopt", as
    ``hf_quant_config.json`` writes it, with no ``quant_method``) gets "modelopt" for FP8,
    "modelopt_fp4" for NVFP4 and "modelopt_mixed" for MIXED_PRECISION (ValueError, as vLLM,
    for another ``quant_algo``); any other method is lowercased, compressed_tensors spelled
    compressed-tensors."""
    producer = raw.get("producer")
    inner = raw.get("quantization")
    legacy = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    name = producer.get("name") if isinstance(producer, Mapping) else None
    if (name == "modelopt" or legacy) and isinstance(inner, Mapping) \
            and inner.get("quant_algo") is not None:
        algo = str(inner["quant_algo"]).upper()
        if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"):
            return "modelopt"
        if algo == "NVFP4":
            return "modelopt_fp4"
        if algo == "MIXED_PRECISION":
            return "modelopt_mixed"
        raise ValueError(f"quantization_config.quantization.quant_algo={inner['quant_algo']!r}: "
                         "vLLM 0.34.0 knows FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4 "
                         "and MIXED_PRECISION (model_arch_config_convertor.py:256-270)")
    method = raw.get("quant_method")
    return method.lower().replace("compressed_tensors", "compressed-tensors") \
        if isinstance(method, str) else ""


@dataclass(frozen=True)
class KVCacheRequest:
    """The KV-cache dtype a checkpoint asks for, which vLLM's kv_cache_dtype "auto" becomes.

    kv_cache_dtype: vLLM's name ("fp8_e4m3", "nvfp4", "fp8"). key, value: the config field
    that asks, by its path, and its value. rule: where vLLM 0.34.0 takes it, in words."""

    kv_cache_dtype: str
    key: str
    value: object
    rule: str


# vLLM 0.34.0 utils/torch_utils.py:90-93, MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP
_MODELOPT_KV = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}


def _modelopt_kv(raw: Mapping) -> tuple[str, object, str | None] | None:
    """(path, value, vLLM's dtype or None for an unknown one) of a ModelOpt config's KV-cache
    request, read as ``get_kv_cache_quant_algo_string`` does (utils/torch_utils.py:463-515):
    the first set of quantization.kv_cache_scheme, kv_cache_scheme,
    quantization.kv_cache_quant_algo, kv_cache_quant_algo."""
    inner = raw.get("quantization")
    inner = inner if isinstance(inner, Mapping) else raw
    prefix = "quantization." if inner is not raw else ""
    places = ((inner, f"{prefix}kv_cache_scheme"), (raw, "kv_cache_scheme"),
              (inner, f"{prefix}kv_cache_quant_algo"), (raw, "kv_cache_quant_algo"))
    for where, path in places:
        value = where.get(path.rsplit(".", 1)[-1])
        if not value:
            continue
        if isinstance(value, Mapping):
            # a scheme dict becomes the algorithm's name, which then goes through the same
            # map as a string (torch_utils.py:480-508): 8-bit static floats "fp8" -> fp8_e4m3
            if value.get("dynamic") is False and value.get("num_bits") == 8 \
                    and value.get("type") == "float":
                return path, value, _MODELOPT_KV["fp8"]
            if value.get("num_bits") == 4 and value.get("type") == "float":
                return path, value, _MODELOPT_KV["nvfp4"]
            return path, value, None
        if isinstance(value, str):
            return path, value, _MODELOPT_KV.get(value.lower())
        return path, value, None
    return None


def kv_cache_request(config) -> KVCacheRequest | None:
    """The KV-cache dtype the checkpoint (a config path or dict) asks for, or None: vLLM 0.34.0's
    kv_cache_dtype "auto" then stays the model's dtype.

    * ModelOpt (``quant_method`` modelopt*, or a ``hf_quant_config.json`` merged in as
      ``quantization_config``, :func:`modelopt_method`): ``kv_cache_quant_algo`` "FP8" ->
      fp8_e4m3, "NVFP4" -> nvfp4 (or a ``kv_cache_scheme`` of 8-bit static floats -> fp8_e4m3,
      4-bit floats -> nvfp4), from the top level's ``quantization_config`` only:
      ``resolve_kv_cache_dtype_string`` (utils/torch_utils.py:518-536), called by
      engine/arg_utils.py:2329 before the cache is configured. An unknown value stays "auto"
      (vLLM warns, :492-514).
    * compressed-tensors with a ``kv_cache_scheme`` (llm-compressor): the attention layer takes
      fp8 while the dtype is "auto" and writes it back to the cache config
      (model_executor/layers/attention/attention.py:302-312), whatever the scheme's bits.
    """
    cfg = load_config(config)
    raw = cfg.get("quantization_config")
    if isinstance(raw, Mapping) and modelopt_method(raw).startswith("modelopt"):
        found = _modelopt_kv(raw)
        if found is not None and found[2] is not None:
            path, value, dtype = found
            return KVCacheRequest(dtype, f"quantization_config.{path}", value,
                                  "vLLM 0.34.0 resolves kv_cache_dtype 'auto' from a ModelOpt "
                                  "checkpoint's KV-cache algorithm (resolve_kv_cache_dtype_string,"
                                  " utils/torch_utils.py:463-536; engine/arg_utils.py:2329)")
    entry = quantization_entry(cfg)
    if entry is not None and isinstance(entry[1], Mapping) \
            and modelopt_method(entry[1]) == "compressed-tensors" \
            and entry[1].get("kv_cache_scheme") is not None:
        return KVCacheRequest("fp8", f"{entry[0]}.kv_cache_scheme", entry[1]["kv_cache_scheme"],
                              "vLLM 0.34.0's attention layer takes fp8 for a compressed-tensors "
                              "kv_cache_scheme while kv_cache_dtype is 'auto' "
                              "(model_executor/layers/attention/attention.py:302-312)")
    return None


def _no_method(key: str, raw: Mapping) -> str:
    """Why vLLM 0.34.0 cannot serve a quantization_config that names no method.

    Without ``quant_method`` (and without the ``quantization.quant_algo`` from which vLLM
    derives one for a ModelOpt producer, model_arch_config_convertor.py:241-283) no method's
    ``override_quantization_method`` claims the config (config/model.py:1403-1470; ModelOpt's
    needs a quant_method starting "modelopt", modelopt.py:292-309), so vLLM takes no
    quantization (:1472) and builds every linear unquantized, where the checkpoint's scale
    tensors have no parameter to load into (vLLM's own loader, run on the meta device with
    Qwen3-32B-FP8-Static-PerTensor's config, fails on ``q_proj.weight_scale``: 'QKVParallelLinear'
    object has no attribute 'data'); and any ``--quantization`` is refused as not matching the
    config's None (:1473-1482)."""
    producer = raw.get("producer")
    name = producer.get("name") if isinstance(producer, Mapping) else None
    why = (f" (producer.name {name!r} without a quantization.quant_algo, from which vLLM would "
           "derive one; its top-level quant_algo and config_groups are not read for the method)"
           if name == "modelopt" else "")
    algo = raw.get("quant_algo")
    hint = (f"; with \"quant_method\": \"modelopt\" in it, vLLM (and kvlib) read it as ModelOpt "
            f"{algo}" if name == "modelopt" and isinstance(algo, str) and algo else "")
    return (f"{key}.quant_method is missing{why}: vLLM 0.34.0 finds no quantization method for "
            "this checkpoint (model_arch_config_convertor.py:241-283, config/model.py:1403-1482) "
            "and builds its linears unquantized, into which the checkpoint's quantized weights "
            "and scales do not load; any --quantization is refused as not matching the "
            f"config's (None){hint}")


def read_quantization(config) -> Quantization | None:
    """The storage of a config's (path or dict) weights, or None for an unquantized checkpoint.

    Read where vLLM 0.34.0 reads it: the top level's ``quantization_config`` (or
    ``compression_config``), else the same keys inside ``text_config`` (Kimi K2.5's INT4
    experts are declared there).

    ValueError names an unknown ``quant_method`` or a bad field and its value.
    """
    cfg = load_config(config)
    outer = Fields(cfg)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), Mapping) else None
    c = Fields(text, "text_config.", outer) if text is not None else outer
    # vLLM 0.34.0 takes the top level's quantization_config, else its compression_config,
    # and only when neither is there the text_config's (a multimodal wrapper such as Kimi
    # K2.5 keeps it there): transformers_utils/model_arch_config_convertor.py:285-292
    # ``get_quantization_config`` (:241-245 for compression_config), which config/model.py:1409
    # reads for the method; model_loader/weight_utils.py:256-260 ``get_quant_config`` also
    # falls back to text_config.quantization_config.
    found = quantization_entry(cfg)
    if found is None:
        return None
    key, raw = found
    if not isinstance(raw, Mapping):
        raise ValueError(f"{key} must be a JSON object, got {describe(raw)}")
    q = Fields(raw, f"{key}.")
    # a hf_quant_config.json merged in (ModelOpt 0.29 and before) names no quant_method: vLLM
    # derives it from producer and quant_algo
    q.text("quant_method")  # a string, if there
    method = modelopt_method(raw)
    if not method:
        raise ValueError(_no_method(key, raw))
    if method not in METHODS:
        raise ValueError(f"{q.path('quant_method')}={method or None!r} is not a method kvlib "
                         f"counts ({', '.join(METHODS)}); refusing rather than assume bf16")
    notes: list[str] = []
    d = model_dtype_bytes(c, notes)
    if method == "fp8" and c.text("model_type") == "deepseek_v4":
        scheme, extra = _deepseek_v4(c.data, q, d)
        method = "deepseek_v4_fp8"
    elif METHODS[method] in (_compressed, _modelopt):  # modules matched by their names
        family = c.text("model_type") or outer.text("model_type")
        scheme, extra = METHODS[method](q, d, family=family)
    else:
        scheme, extra = METHODS[method](q, d)
    notes += extra.pop("notes_extra", ())
    return Quantization(method, scheme, dense_bytes=d, notes=tuple(notes), **extra)


def unmatched(q: Quantization | None, linears) -> str | None:
    """One line naming the linears (by part, with their count) that a mixed checkpoint
    (several compressed-tensors groups, ModelOpt MIXED_PRECISION) leaves in the model dtype,
    ignored or matched by nothing in its config as vLLM 0.34.0 looks them up; routers and the
    projections vLLM always builds unquantized (:data:`_DENSE`) are not named. None when
    every other linear is matched, or for another checkpoint."""
    if q is None or not q.mixed:
        return None
    parts: dict[str, int] = {}
    for lin in linears:
        if lin.part == "router" or (lin.part != "lm_head" and _DENSE.search(lin.name)):
            continue
        if q.scheme_for(lin.name, lin.part) is None:
            parts[lin.part] = parts.get(lin.part, 0) + 1
    if not parts:
        return None
    words = {"experts": "routed-expert", "shared_experts": "shared-expert", "mlp": "MLP",
             "mixers": "mixer"}
    named = ", ".join(f"{n} {words.get(p, p)} linear{'s' if n > 1 else ''}"
                      for p, n in parts.items())
    return ("kept in the model dtype, as vLLM 0.34.0 builds them (ignored, or matched by no "
            f"group or entry of the quantization config): {named}")


def linear_bytes(q: Quantization | None, lin, dense_bytes: int) -> int:
    """Stored bytes of every copy of one linear (a :class:`kvlib.models.params.Linear`): in
    ``q``'s format (scales and zeros included), or ``dense_bytes`` per element unquantized."""
    if q is None:
        return lin.params * dense_bytes
    return lin.count * q.bytes(lin.in_features, lin.out_features, lin.name, lin.part)


def vllm_quantization(config) -> Quantization | None:
    """The storage vLLM 0.34.0 builds the model's linears in, where it differs from the
    checkpoint's (:func:`read_quantization`): Kimi K3's compressed-tensors
    ``mxfp4-pack-quantized`` is rewritten to ``mxfp4`` (KimiK3ForConditionalGenerationConfig,
    model_executor/models/config.py:786-816, for architectures KimiK3ForConditionalGeneration
    and KimiK3MTPModel, :1572-1573), whose Mxfp4Config quantizes the routed experts only and
    builds every linear unquantized (layers/quantization/mxfp4.py:92-108): the latent-MoE
    routed_expert_down/up_proj, MXFP4 in the checkpoint, sit in the model dtype on the GPU.
    gpt-oss's ``mxfp4`` is vLLM's ``gpt_oss_mxfp4`` (GptOssMxfp4Config for model_type
    gpt_oss, mxfp4.py:117-150), whose experts its own backends pad (:func:`mxfp4_moe_padding`).
    Any other config: :func:`read_quantization`'s."""
    cfg = load_config(config)
    q = read_quantization(cfg)
    if q is not None and q.method == "mxfp4" and cfg.get("model_type") == "gpt_oss":
        return replace(q, method="gpt_oss_mxfp4")
    entry = quantization_entry(cfg)
    arch = cfg.get("architectures") or []
    if q is not None and entry is not None and isinstance(entry[1], Mapping) \
            and q.method == "compressed-tensors" \
            and entry[1].get("format") == "mxfp4-pack-quantized" \
            and any(a in ("KimiK3ForConditionalGeneration", "KimiK3MTPModel") for a in arch):
        return Quantization("mxfp4", Scheme("mxfp4", 4, "group", group=32, scale_bytes=1),
                            dense_bytes=q.dense_bytes, experts_only=True, kv_cache=q.kv_cache,
                            notes=(f"{entry[0]}.format='mxfp4-pack-quantized': vLLM 0.34.0 "
                                   "rewrites Kimi K3's method to mxfp4 (models/config.py:786-"
                                   "816), which quantizes only the routed experts (mxfp4.py:"
                                   "92-108): the other linears are held in the model dtype",))
    return q


# The MXFP4 MoE backend vLLM 0.34.0 picks for gpt-oss (GptOssMxfp4MoEMethod,
# fused_moe/oracle/mxfp4.py:421-458), by the GPU's compute capability, and how it rounds each
# rank's (hidden, intermediate) up (mxfp4_round_up_hidden_size_and_intermediate_size,
# :822-901): Hopper (sm 90) runs OpenAI's Triton kernels (TRITON; the TRT-LLM ones need
# sm 100), which round the intermediate rows up to 64 (:900-901); datacenter Blackwell
# (sm 100, 103) the TRT-LLM kernels (FLASHINFER_TRTLLM_MXFP4_BF16), hidden to 256 and
# intermediate to 128 (:856-858); Ampere and Ada (sm 80, 86, 89), where neither the Triton
# kernels (sm 90 and up, experts/gpt_oss_triton_kernels_moe.py:41-60) nor FlashInfer's or
# CUTLASS's run, Marlin (sm 75 and up, experts/marlin_moe.py:539-541): hidden to 256 and
# intermediate to 128 (:850-855). Consumer Blackwell (sm 120) depends on whether FlashInfer's
# CUTLASS MoE is installed: not assumed. Only sm 90 is measured (make oracle).
_MARLIN = ("MARLIN", 256, 128)
MXFP4_MOE_ALIGN = {80: _MARLIN, 86: _MARLIN, 89: _MARLIN, 90: ("TRITON", 1, 64),
                   100: ("FLASHINFER_TRTLLM_MXFP4_BF16", 256, 128),
                   103: ("FLASHINFER_TRTLLM_MXFP4_BF16", 256, 128)}


def mxfp4_moe_padding(hidden: int, per_rank: int, sm: int | None = 90) -> tuple[int, int]:
    """(hidden, intermediate rows a rank) as gpt-oss's MXFP4 MoE backend on a GPU of compute
    capability ``sm`` (90 Hopper, 100 / 103 Blackwell; :data:`MXFP4_MOE_ALIGN`) allocates
    them: gpt-oss-120b at TP 8 on an H200, (2880, 360) -> (2880, 384). ValueError naming
    ``sm`` for a GPU whose backend kvlib does not assume."""
    if sm is None:  # ROCm and other platforms: their MXFP4 MoE kernels are not traced
        raise ValueError("a GPU without a CUDA compute capability: kvlib knows gpt-oss's MXFP4 "
                         "MoE padding only on NVIDIA sm "
                         f"{', '.join(map(str, MXFP4_MOE_ALIGN))} (vLLM 0.34.0's "
                         "fused_moe/oracle/mxfp4.py:822-901)")
    if sm not in MXFP4_MOE_ALIGN:
        raise ValueError(f"compute capability sm {sm}: kvlib knows gpt-oss's MXFP4 MoE padding "
                         f"on {', '.join(map(str, MXFP4_MOE_ALIGN))}")
    _, h, i = MXFP4_MOE_ALIGN[sm]
    return -(-hidden // h) * h, -(-per_rank // i) * i


def _fp8_moe_block(block: tuple[int, int], per_rank: int, hidden: int, tp: int
                   ) -> tuple[int, int]:
    """The scale grid vLLM 0.34.0's Fp8MoEMethod allocates for FP8 block experts with
    ``per_rank`` intermediate rows a rank: the checkpoint's block, refined to
    gcd(block_n, block_k, per_rank, hidden) square (at least 32) when per_rank does not divide
    block_n, or (tp > 1) block_k, with moe_backend "auto" (fused_moe/oracle/fp8.py:298-320,
    362-401; layers/quantization/fp8.py:553-565): Qwen3-30B-A3B-FP8 at TP 4, 192 rows a
    rank, 128 x 128 -> 64 x 64."""
    bn, bk = block
    if per_rank % bn == 0 and (tp == 1 or per_rank % bk == 0):
        return block
    refine = math.gcd(bn, bk, per_rank, hidden)
    return (refine, refine) if refine >= 32 else block


_DOWN = re.compile(r"(down_proj|\.w2)$")  # an expert's row-parallel projection


def allocated_linear_bytes(q: Quantization | None, lin, dense_bytes: int, tp: int = 1,
                           sm: int | None = 90) -> int:
    """Bytes vLLM 0.34.0 allocates for every copy of one linear (a
    :class:`kvlib.models.params.Linear`) on all ``tp`` ranks together, so that a split
    linear's share of one rank is this / tp: the checkpoint's format (:func:`linear_bytes`)
    with the scales in the dtype vLLM holds them in (compressed-tensors FP8: fp32), and, for
    routed experts, each rank's intermediate rows I / tp as vLLM lays them out: FP8 block
    experts (method fp8, Fp8MoEMethod) on the refined scale grid (:func:`_fp8_moe_block`);
    gpt-oss's MXFP4 experts padded as its backend pads them on a GPU of compute capability
    ``sm`` (:func:`mxfp4_moe_padding`; the padded rows of its biases too: w2's bias, whole on
    every rank, is returned tp times, so that / tp is one rank's). ``q`` is the
    quantization vLLM builds (:func:`vllm_quantization`). The checkpoint's file bytes are
    :func:`linear_bytes`."""
    if q is None:
        return lin.params * dense_bytes
    scheme = q.scheme_for(lin.name, lin.part)
    if scheme is None:
        return lin.params * dense_bytes
    expert = lin.part == "experts"
    gpt_oss = q.method == "gpt_oss_mxfp4"
    fp8_block = (q.method in ("fp8", "deepseek_v4_fp8") and scheme.strategy == "block"
                 and scheme.bits == 8 and scheme.scale_bytes == 4)
    if not expert or not (fp8_block or gpt_oss):
        return lin.count * scheme.bytes(lin.in_features, lin.out_features, loaded=True)
    down = bool(_DOWN.search(lin.name))
    shards = 2 if lin.name.endswith("gate_up_proj") else 1
    inter = (lin.in_features if down else lin.out_features // shards)
    hidden = lin.out_features if down else lin.in_features
    per_rank = inter // tp
    bias_rows = 0
    if fp8_block:
        s = replace(scheme, block=_fp8_moe_block(scheme.block, per_rank, hidden, tp))
    else:
        s = scheme
        hidden_pad, rows = mxfp4_moe_padding(hidden, per_rank, sm)
        if lin.bias:  # w13_bias (experts, 2 x rows) split; w2_bias (experts, hidden) whole
            bias_rows = hidden_pad - hidden if down else shards * (rows - per_rank)
        hidden, per_rank = hidden_pad, rows
    one = s.bytes(per_rank, hidden) if down else shards * s.bytes(hidden, per_rank)
    return tp * lin.count * (one + bias_rows * dense_bytes)


def checkpoint_bytes(config, count: ParamCount | None = None, include_mtp: bool = False) -> int:
    """Total weight bytes of a config's checkpoint as its files store them (tensor bytes, no
    file headers): not what vLLM allocates, which :func:`allocated_linear_bytes` and
    :func:`kvlib.serving.weights.checkpoint_weights`' ``per_gpu`` give.

    Each linear of ``count`` (:func:`kvlib.models.params.count_params` of the config when
    not given) in its stored format, each of its ``fixed`` tensors in its own dtype, every
    other element in the model dtype; with
    ``include_mtp`` the next-n layers the checkpoint ships too.
    """
    q = read_quantization(config)
    count = count or count_params(config)
    d = q.dense_bytes if q else model_dtype_bytes(Fields(load_config(config)), [])
    linears = count.linears + (count.mtp_linears if include_mtp else ())
    elements = count.total + (count.mtp if include_mtp else 0)
    total = 0
    for lin in linears:
        elements -= lin.params
        total += linear_bytes(q, lin, d)
    for f in count.fixed + (count.mtp_fixed if include_mtp else ()):  # fp32 / int32 tensors
        elements -= f.elements
        total += f.elements * f.bytes_per
    return total + elements * d
