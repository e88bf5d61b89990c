"""Weight bytes per GPU (notebook 06, "The budget").

Two ways: :func:`checkpoint_weights` reads the checkpoint's config (parameters counted per
layer, each linear in its stored, possibly quantized, format, split as vLLM splits it), and
:func:`weights_bytes_per_gpu` is parameters x bytes per weight / TP, for an override
(``--weight-dtype``) or a model whose parameters kvlib cannot count.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from kvlib.core import validate
from kvlib.core.dtypes import DTYPE_BYTES

__all__ = ["CheckpointWeights", "checkpoint_weights", "weight_bytes_per_element",
           "weights_bytes_per_gpu"]


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
# ReplicatedLinear, model_executor/layers/fused_moe/router/gate_linear.py:22), MLA's down
# projections (q_a_proj and kv_a_proj_with_mqa, ReplicatedLinear or disable_tp=True,
# models/deepseek_v2.py:494-525, 953-967) and the sparse indexer's projections (wq_b,
# wk + weights_proj, models/deepseek_v2.py:703-719); DeepSeek V4's (vLLM 0.34.0
# models/deepseek_v4/): the MoE gate, wq_a + wkv (fused_wqa_wkv, disable_tp, attention.py:
# 253-260), the compressors' wkv + wgate (disable_tp, compressor.py:285-293) and the indexer's
# wq_b and weights_proj (ReplicatedLinear, attention.py:947-960).
_REPLICATED = re.compile(r"(\.mlp\.gate|\.ffn\.gate|\.router|q_a_proj|kv_a_proj_with_mqa|indexer\.("
                         r"wq_b|wk|weights_proj)|attn\.(wq_a|wkv)|compressor\.(wkv|wgate))$")
VOCAB_PADDING = 64  # VocabParallelEmbedding pads the vocabulary to a multiple of 64, then splits


@dataclass(frozen=True)
class CheckpointWeights:
    """Weight bytes per GPU of a checkpoint as vLLM loads it under TP.

    per_gpu: bytes on one rank (the fullest); total: the checkpoint's bytes (no MTP layers);
    replicated: bytes every rank holds whole; method: the quantization method or the dtype.
    """

    per_gpu: int
    total: int
    replicated: int
    method: str
    notes: tuple[str, ...]


def checkpoint_weights(config, tp: int = 1, count=None) -> CheckpointWeights:
    """Weights per GPU from a config dict: parameters counted per layer (``count``, else
    :func:`kvlib.models.params.count_params` of the config), each linear in its stored format
    (:func:`kvlib.models.quantization.linear_bytes`), split as vLLM splits them: column/row-
    parallel layers and routed experts by ``tp``; the vocabulary padded to 64 and split; K/V
    projections split by at most the KV-head count (vLLM replicates KV heads when tp exceeds
    them); routers, MLA down projections, indexer projections and norms whole on every rank;
    the count's ``fixed`` tensors (DeepSeek V4's fp32 hyper-connections, compressor positions,
    sinks, int32 hash tables) in their own dtype, whole or split as it says.
    Other small tensors (biases, convolution kernels, SSM parameters) are counted as split.
    MTP / next-n layers are not counted: vLLM loads them only for speculative decoding.
    """
    from kvlib.models.params import count_params
    from kvlib.models.quantization import linear_bytes, read_quantization
    from kvlib.models.readers.fields import Fields, load_config
    from kvlib.models.readers.state import model_dtype_bytes

    tp = validate.positive_int("tensor_parallel_size", tp)
    cfg = load_config(config)
    count = count or count_params(cfg)
    q = read_quantization(cfg)
    notes: list[str] = list(count.notes)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    d = q.dense_bytes if q else model_dtype_bytes(Fields(text), notes)
    if d == 4:
        d = 2
        notes.append("float32 checkpoint: vLLM's dtype 'auto' loads it in bf16 (2 B)")
    n_kv = text.get("num_key_value_heads") or text.get("num_attention_heads") or 1
    vocab = text.get("vocab_size") or 0
    padded = -(-vocab // VOCAB_PADDING) * VOCAB_PADDING
    # bytes by what divides them: tp (split), n_kv (a KV head per rank), vocab x tp / padded
    # (the padded vocabulary split), 1 (whole on every rank); one Fraction at the end
    by = {"tp": 0, "kv": 0, "vocab": 0, "whole": count.parts["norms"] * d}
    stored = 0
    for lin in count.linears:
        size = linear_bytes(q, lin, d)
        stored += size
        if _REPLICATED.search(lin.name):
            by["whole"] += size
        elif lin.name.endswith(("k_proj", "v_proj")) and isinstance(n_kv, int) and tp > n_kv:
            by["kv"] += size
        elif lin.part in ("embedding", "lm_head") and vocab:
            by["vocab"] += size
        else:
            by["tp"] += size
    linear_elements = sum(lin.params for lin in count.linears)
    fixed_elements = 0
    for f in count.fixed:  # tensors vLLM keeps in a dtype of their own (fp32, int32)
        fixed_elements += f.elements
        stored += f.elements * f.bytes_per
        by["whole" if f.whole else "tp"] += f.elements * f.bytes_per
    other = (count.total - linear_elements - fixed_elements - count.parts["norms"]) * d
    if vocab and not any(lin.part == "embedding" for lin in count.linears):
        rows = count.parts["embedding"] * d  # an embedding table not held as a linear
        other -= rows
        by["vocab"] += rows
    by["tp"] += other
    split = Fraction(by["tp"], tp) + Fraction(by["kv"], n_kv if isinstance(n_kv, int) else 1)
    if vocab:
        split += Fraction(by["vocab"] * padded, vocab * tp)
    total = stored + (count.total - linear_elements - fixed_elements) * d
    method = q.method if q else {2: "bf16", 1: "fp8"}.get(d, f"{d} B")
    if q:
        notes += list(q.notes)
    return CheckpointWeights(math.ceil(split) + by["whole"], total, by["whole"], method,
                             tuple(notes))
