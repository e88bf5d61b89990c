"""Weight bytes per GPU (notebook 06, "The budget").

Two ways: :func:`checkpoint_weights` reads the checkpoint's config (parameters counted per
layer, each linear in its stored, possibly quantized, format, split and allocated as vLLM
0.34.0 allocates it on a rank: its ``per_gpu`` is weights memory, its ``total`` the files'
bytes), and :func:`weights_bytes_per_gpu` is parameters x bytes per weight / TP, for an
override (``--weight-dtype``) or a model whose parameters kvlib cannot count. A third reads
nothing but what the checkpoint stores: :func:`stored_weights` of a model folder (its
``model.safetensors.index.json`` or the safetensors files' headers), exact file bytes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from kvlib.core import validate
from kvlib.core.dtypes import DTYPE_BYTES

__all__ = ["CheckpointWeights", "StoredWeights", "checkpoint_weights", "safetensors_header",
           "stored_weights", "weight_bytes_per_element", "weights_bytes_per_gpu"]


def weight_bytes_per_element(dtype: str) -> Fraction:
    """Bytes per weight for ``dtype`` (bf16/fp16 2, fp8/int8 1, int4 1/2)."""
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(
            f"weight dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}"
        ) from None


def weights_bytes_per_gpu(params: int, dtype: str = "bf16", tp: int = 1) -> int:
    """ceil(params x bytes per weight / tp): weights split evenly over the TP ranks.

    An approximation: vLLM replicates the small parts (norms, and the K/V
    projections when TP exceeds the KV heads), and int4 checkpoints add scales.
    """
    params = validate.positive_int("parameter count", params)
    tp = validate.positive_int("tensor_parallel_size", tp)
    return math.ceil(Fraction(params * weight_bytes_per_element(dtype) / tp))



# Linear layers vLLM 0.33.0 keeps whole on every TP rank: the MoE router (GateLinear is a
# ReplicatedLinear, model_executor/layers/fused_moe/router/gate_linear.py:22; under
# block_sparse_moe in Mixtral, MiniMax-M2 and M3: vLLM 0.34.0 mixtral.py:111,
# minimax_m2.py:110, minimax_m3/nvidia/model.py:531), MLA's down
# projections (q_a_proj and kv_a_proj_with_mqa, ReplicatedLinear or disable_tp=True,
# models/deepseek_v2.py:494-525, 953-967) and the sparse indexer's projections (wq_b,
# wk + weights_proj, models/deepseek_v2.py:703-719); DeepSeek V4's (vLLM 0.34.0
# models/deepseek_v4/): the MoE gate, wq_a + wkv (fused_wqa_wkv, disable_tp, attention.py:
# 253-260), the compressors' wkv + wgate (disable_tp, compressor.py:285-293) and the indexer's
# wq_b and weights_proj (ReplicatedLinear, attention.py:947-960). Kimi K3's latent MoE
# projections routed_expert_down_proj / routed_expert_up_proj (ReplicatedLinear,
# models/kimi_k3/nvidia/model.py:479-503); Kimi's KDA f_a_proj (the replicated shard of
# in_proj_qkvgfab, nvidia/kda.py:115-131, 646-669; layers/mamba/gdn/kimi_gdn_linear_attn.py:
# 199) and g_a_proj (ReplicatedLinear, kimi_gdn_linear_attn.py:291-296); Gemma 3n's AltUp
# correction_coefs, prediction_coefs and modality_router and its per_layer_input_gate and
# per_layer_projection (ReplicatedLinear, models/gemma3n.py:89-110, 490-507); Gemma 4's
# router.proj (measured whole on vLLM 0.34.0's rank 0 at TP 8).
_REPLICATED = re.compile(r"(\.mlp\.gate|\.ffn\.gate|\.block_sparse_moe\.gate|\.router"
                         r"|\.router\.proj|q_a_proj"
                         r"|kv_a_proj_with_mqa|indexer\.(wq_b|wk|weights_proj)|attn\.(wq_a|wkv)"
                         r"|compressor\.(wkv|wgate)|routed_expert_(down|up)_proj"
                         r"|self_attn\.(f_a_proj|g_a_proj)"
                         r"|altup\.(correction_coefs|prediction_coefs|modality_router)"
                         r"|\.per_layer_input_gate|\.per_layer_projection)$")
# what a whole-on-every-rank linear is, in words, by its name (first match)
_WHOLE_WORDS = ((re.compile(r"(altup\.|per_layer_)"), "AltUp and per-layer-input projections"),
                (re.compile(r"(gate|router|router\.proj)$"), "routers"),
                (re.compile(r"(q_a_proj|kv_a_proj_with_mqa|attn\.(wq_a|wkv))$"),
                 "MLA down projections"),
                (re.compile(r"indexer\."), "indexer"), (re.compile(r"compressor\."), "compressors"),
                (re.compile(r"routed_expert_"), "latent-MoE projections"),
                (re.compile(r"(f_a_proj|g_a_proj)$"), "KDA gate projections"),
                (re.compile(r"(^|\.)hc_"), "hyper-connections"),
                (re.compile(r"res_proj$"), "attention-residual projections"))
# and a fixed tensor its name does not place, by its part
_FIXED_WORDS = {"router": "routers", "norms": "norms", "attention": "attention tensors",
                "mixers": "mixer tensors"}
# row-parallel linears (RowParallelLinear; the routed experts' w2): each rank holds a slice
# of the inputs, and the bias, added once after the reduction, whole (layers/linear.py
# RowParallelLinear; fused_moe w2_bias of (experts, hidden))
_ROW_PARALLEL = re.compile(r"(o_proj|down_proj|out_proj|\.w2)$")
VOCAB_PADDING = 64  # VocabParallelEmbedding pads the vocabulary to a multiple of 64, then splits


@dataclass(frozen=True)
class CheckpointWeights:
    """Weight bytes per GPU of a checkpoint as vLLM loads it under TP.

    per_gpu: bytes vLLM 0.34.0 allocates on one rank (the fullest), the weights memory the plan
    subtracts; total: the checkpoint's bytes as its files store them (no MTP layers), which
    is not per_gpu x tp where vLLM holds a tensor in another dtype or pads it;
    replicated: bytes every rank holds whole; method: the quantization method or the dtype;
    whole: what those replicated bytes are, in words ("routers", "norms", "vision tower",
    ...), in the order met, at this TP.
    """

    per_gpu: int
    total: int
    replicated: int
    method: str
    notes: tuple[str, ...]
    whole: tuple[str, ...] = ()


def _words(name: str, default: str) -> str:
    return next((w for r, w in _WHOLE_WORDS if r.search(name)), default)


# Kimi K3's KDA (full-rank gate, g_proj): vLLM 0.34.0 fuses q, k, v, g, f_a and b into one
# in_proj_qkvgfab and pads each rank's 4 P / tp + head_dim + H / tp rows up to a multiple of
# 16 (models/kimi_k3/nvidia/kda.py:640-669; layers/mamba/gdn/kimi_gdn_linear_attn.py:198-212)
_KDA_ALIGN = 16


def _kda_padding(linears, tp: int, q, d: int) -> int:
    """Bytes of the rows vLLM pads each rank's in_proj_qkvgfab with, over all ranks (so / tp
    is one rank's): per full-rank-gate KDA layer, -(4 P / tp + head_dim + H / tp) % 16 rows
    of ``hidden`` inputs in the fused module's dtype (the model dtype where the checkpoint
    leaves the layer unquantized, as Kimi K3 does; a quantized one adds none here). Kimi K3
    at TP 8: 4 x 1536 + 128 + 12 = 6,284 rows a rank, 4 padded, 4 x 7168 x 2 B a layer."""
    by = {lin.name: lin for lin in linears}
    out = 0
    for lin in linears:
        if not lin.name.endswith(".g_proj") or lin.part != "mixers":
            continue
        base = lin.name[: -len("g_proj")]
        qp, fa, b = by.get(base + "q_proj"), by.get(base + "f_a_proj"), by.get(base + "b_proj")
        if qp is None or fa is None or b is None or (q is not None and q.quantized(
                base + "in_proj_qkvgfab", lin.part)):
            continue
        rows = -(4 * qp.out_features // tp + fa.out_features + b.out_features // tp) % _KDA_ALIGN
        out += tp * rows * lin.in_features * d
    return out


def checkpoint_weights(config, tp: int = 1, count=None, sm: int | None = 90) -> CheckpointWeights:
    """Weights per GPU from a config dict: parameters counted per layer (``count``, else
    :func:`kvlib.models.params.count_params` of the config), each linear in its stored format
    (:func:`kvlib.models.quantization.linear_bytes`), split as vLLM splits them: column/row-
    parallel layers and routed experts by ``tp``; the vocabulary padded to 64 and split; K/V
    projections split by at most the KV-head count (vLLM replicates KV heads when tp exceeds
    them); routers, MLA down projections, indexer projections, Kimi K3's latent-MoE
    projections, Gemma 3n's AltUp and per-layer-input projections and norms whole on every
    rank; the count's ``fixed`` tensors (fp32 routers and biases, DeepSeek V4's fp32
    hyper-connections, compressor positions, sinks, int32 hash tables, weights vLLM builds
    unquantized, vision towers) in their own dtype, whole or split as each says at ``tp``.
    Other small tensors (biases, convolution kernels, SSM parameters) are counted as split.
    MTP / next-n layers are not counted: vLLM loads them only for speculative decoding.

    ``per_gpu`` is what vLLM 0.34.0 allocates on one rank (:func:`kvlib.models.quantization.
    allocated_linear_bytes` of the quantization vLLM builds, :func:`kvlib.models.quantization.
    vllm_quantization`): compressed-tensors FP8 scales in fp32, FP8 MoE scales on the grid
    refined for the rank's rows, gpt-oss's MXFP4 experts padded as its backend pads them on a
    GPU of compute capability ``sm`` (90: Hopper's Triton kernels; 100 / 103: Blackwell's
    TRT-LLM ones), Kimi K3's mxfp4 rewrite (its latent-MoE projections in bf16) and its KDA
    rows padded to 16; ``total`` is the checkpoint's bytes as its files store them
    (:func:`kvlib.models.quantization.checkpoint_bytes`).
    """
    from kvlib.models.params import count_params
    from kvlib.models.quantization import (
        allocated_linear_bytes,
        linear_bytes,
        read_quantization,
        unmatched,
        vllm_quantization,
    )
    from kvlib.models.readers.fields import Fields, load_config
    from kvlib.models.readers.state import model_dtype_bytes

    tp = validate.positive_int("tensor_parallel_size", tp)
    cfg = load_config(config)
    count = count or count_params(cfg)
    q = read_quantization(cfg)
    vq = vllm_quantization(cfg)
    notes: list[str] = list(count.notes)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    d = q.dense_bytes if q else model_dtype_bytes(Fields(text), notes)
    if d == 4:
        d = 2
        notes.append("float32 checkpoint: vLLM's dtype 'auto' loads it in bf16 (2 B)")
    n_kv = text.get("num_key_value_heads") or text.get("num_attention_heads") or 1
    vocab = text.get("vocab_size") or 0
    padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
    # bytes by what divides them: tp (split), a K/V projection's KV heads where TP exceeds
    # them (a KV head per rank, each layer's own count: MiMo's and Gemma 4's layers differ),
    # vocab x tp / padded
    # (the padded vocabulary split), 1 (whole on every rank); one Fraction at the end. Norms
    # in the model dtype, whole; a norm vLLM keeps in a dtype of its own is a fixed tensor
    fixed_norms = sum(f.elements for f in count.fixed if f.part == "norms")
    by = {"tp": 0, "vocab": 0, "whole": (count.parts["norms"] - fixed_norms) * d}
    stored, kv_split = 0, Fraction(0)
    words: dict[str, None] = {}  # what is whole, in words, in order
    whole_bias = 0  # bias elements of row-parallel and replicated linears: whole
    for lin in count.linears:
        stored += linear_bytes(q, lin, d)
        size = allocated_linear_bytes(vq, lin, d, tp, sm)  # on all ranks together
        if lin.bias and (_ROW_PARALLEL.search(lin.name) or _REPLICATED.search(lin.name)):
            whole_bias += lin.count * lin.out_features
        if _REPLICATED.search(lin.name):
            by["whole"] += size
            words[_words(lin.name, "projections")] = None
        elif lin.name.endswith(("k_proj", "v_proj")) and isinstance(heads := (
                lin.kv_heads or n_kv), int) and tp > heads:
            kv_split += Fraction(size, heads)  # one KV head a rank, replicated over the rest
        elif lin.part in ("embedding", "lm_head") and vocab:
            by["vocab"] += size
        else:
            by["tp"] += size
    linear_elements = sum(lin.params for lin in count.linears)
    fixed_elements = 0
    for f in count.fixed:  # tensors vLLM keeps in a dtype of their own (fp32, int32)
        fixed_elements += f.elements
        stored += f.elements * f.bytes_per
        by["whole" if f.whole_at(tp) else "tp"] += f.elements * f.bytes_per
        if f.whole_at(tp) and f.elements:
            words[_words(f.name, _FIXED_WORDS.get(f.part) or (
                "audio tower" if "audio" in f.name else "vision tower"))] = None
    other = (count.total - linear_elements - fixed_elements - count.parts["norms"]
             + fixed_norms - whole_bias) * d
    by["whole"] += whole_bias * d
    if whole_bias:
        words["biases of row-parallel and replicated linears"] = None
    if vocab and not any(lin.part == "embedding" for lin in count.linears):
        rows = count.parts["embedding"] * d  # an embedding table not held as a linear
        other -= rows
        by["vocab"] += rows
    by["tp"] += other + _kda_padding(count.linears, tp, vq, d)
    split = Fraction(by["tp"], tp) + kv_split
    if vocab:
        split += Fraction(by["vocab"] * padded, vocab * tp)
    total = stored + (count.total - linear_elements - fixed_elements) * d
    method = q.method if q else {2: "bf16", 1: "fp8"}.get(d, f"{d} B")
    if q:
        notes += list(q.notes) + [n for n in (vq.notes if vq else ()) if n not in q.notes]
        kept = unmatched(q, count.linears)
        if kept:
            notes.append(kept)
    if count.parts["norms"] - fixed_norms:
        words["norms"] = None
    return CheckpointWeights(math.ceil(split) + by["whole"], total, by["whole"], method,
                             tuple(notes), tuple(words))


INDEX = "model.safetensors.index.json"
# bytes per element of the safetensors dtypes (safetensors' Dtype; F4 / F6 / E8M0 are the
# MX formats: 4 and 6 bits, one byte)
_SAFETENSORS_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
                     "E8M0": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32,
                     "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "F4": 4,
                     "F6_E2M3": 6, "F6_E3M2": 6}
_HEADER_LIMIT = 100 * 1024**2  # safetensors refuses a header over 100 MB too


@dataclass(frozen=True)
class StoredWeights:
    """The bytes a checkpoint stores, read from its files (not counted from its config).

    total: bytes of every tensor (MTP / next-n layers and towers included, as stored);
    source: the file(s) read; how: one line saying which and how; tensors: how many
    tensors the headers list (None from the index alone); by_dtype: bytes per safetensors
    dtype (empty from the index alone).
    """

    total: int
    source: tuple[str, ...]
    how: str
    tensors: int | None = None
    by_dtype: tuple[tuple[str, int], ...] = ()


def safetensors_header(path) -> dict:
    """The JSON header of a ``.safetensors`` file: an 8-byte little-endian length N, then N
    bytes of JSON ({tensor: {dtype, shape, data_offsets}}, ``__metadata__``). Read without the
    safetensors package; ValueError naming the file for a header that is not one."""
    path = Path(path)
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: {len(head)} bytes, too short for a safetensors header")
        n = int.from_bytes(head, "little")
        if not 0 < n <= _HEADER_LIMIT:
            raise ValueError(f"{path}: header length {n} is not that of a safetensors file")
        raw = f.read(n)
    if len(raw) != n:
        raise ValueError(f"{path}: header says {n} bytes, the file holds {len(raw)}")
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: the safetensors header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the safetensors header is not a JSON object")
    return header


def _tensor_bytes(path: Path, name: str, t) -> tuple[str, int]:
    """(dtype, bytes) of one header entry, its offsets checked against dtype x shape."""
    where = f"{path.name}: tensor {name!r}"
    if not isinstance(t, dict):
        raise ValueError(f"{where} is not an object")
    dtype, shape, off = t.get("dtype"), t.get("shape"), t.get("data_offsets")
    if not (isinstance(off, list) and len(off) == 2 and all(isinstance(o, int) for o in off)
            and 0 <= off[0] <= off[1]):
        raise ValueError(f"{where}: data_offsets must be [begin, end], got {off!r}")
    size = off[1] - off[0]
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
        raise ValueError(f"{where}: shape must be a list of sizes, got {shape!r}")
    bits = _SAFETENSORS_BITS.get(dtype)
    if bits is not None and -(-math.prod(shape) * bits // 8) != size:
        raise ValueError(f"{where}: {dtype} {shape} is {-(-math.prod(shape) * bits // 8)} "
                         f"bytes, but its data_offsets span {size}")
    return str(dtype), size


def stored_weights(folder) -> StoredWeights:
    """The checkpoint's weight bytes, exact, from a Hugging Face model folder.

    ``model.safetensors.index.json``'s ``metadata.total_size`` when the folder has the
    index (Hugging Face writes there the sum of every tensor's bytes); else the sum, over
    the folder's ``*.safetensors`` files, of each header's tensors' ``data_offsets`` spans
    (each checked against its dtype x shape). ValueError naming the file and field when
    neither is there or one is malformed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a model folder")
    index = folder / INDEX
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{index}: not JSON ({e})") from None
        meta = data.get("metadata") if isinstance(data, dict) else None
        total = meta.get("total_size") if isinstance(meta, dict) else None
        if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
            raise ValueError(f"{index}: metadata.total_size must be a positive integer of "
                             f"bytes, got {total!r}")
        return StoredWeights(total, (INDEX,), f"read from {INDEX} (metadata.total_size: "
                             f"{total:,} bytes, every tensor as stored)")
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{folder}: neither {INDEX} nor a .safetensors file to read the "
                         "weights from")
    by: dict[str, int] = {}
    count = 0
    for path in files:
        for name, t in safetensors_header(path).items():
            if name == "__metadata__":
                continue
            dtype, size = _tensor_bytes(path, name, t)
            by[dtype] = by.get(dtype, 0) + size
            count += 1
    total = sum(by.values())
    return StoredWeights(total, tuple(p.name for p in files),
                         f"read from the headers of {len(files)} safetensors file"
                         f"{'s' if len(files) > 1 else ''} ({count:,} tensors, {total:,} "
                         "bytes as stored)", count, tuple(sorted(by.items())))
