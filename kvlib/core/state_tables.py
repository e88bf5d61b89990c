"""Tensor tables of layers that keep a constant-size state, as data (notebook 07).

Hybrid models replace attention in many layers by a recurrence: Mamba (a selective
state-space model), Mamba2, gated linear attention (Gated DeltaNet), lightning
(linear) attention, or a short convolution. Such a layer keeps, per sequence, a
*state* whose size does not depend on how many tokens it has read: the last
``d_conv - 1`` inputs of its causal convolution, and (except the short
convolution) a recurrent matrix per head. The rows below give their shapes in
kvlib's own symbols (:data:`kvlib.core.notation.STATE_SYMBOLS`), with the layout
vLLM allocates (``MambaStateShapeCalculator`` in
``vllm/model_executor/layers/mamba/mamba_utils.py``); the paper covers attention only.

Each state row is ``conv`` or ``ssm`` (``store``): the two are kept in element types
of their own, ``b_c`` and ``b_s`` bytes. :mod:`kvlib.core.derive` sums them and
checks that nothing grows with N_KV.
"""

from __future__ import annotations

from kvlib.core import notation
from kvlib.core.tables import Role, TensorTable, _t

__all__ = ["MAMBA", "MAMBA2", "GATED_DELTANET", "LIGHTNING", "SHORT_CONV", "STATE_TABLES",
           "INDEXER", "V4_ENTRY", "V4_COMPRESSOR", "SHORT_CONV_WINDOW"]

W, A, S = Role.WEIGHT, Role.ACTIVATION, Role.STATE
# The SymPy symbols themselves, for arithmetic on shapes.
(N_KV, N_h, N_lk, N_lv, N_sg, N_sh, d_conv, d_in, d_inner, d_lk, d_lv, d_QK, d_sh, d_state,
 d_V, d_I, d_c, d_R, d_w) = (getattr(notation, n).symbol for n in (
    "N_KV", "N_h", "N_lk", "N_lv", "N_sg", "N_sh", "d_conv", "d_in", "d_inner", "d_lk", "d_lv",
    "d_QK", "d_sh", "d_state", "d_V", "d_I", "d_c", "d_R", "d_w"))
_CONV_ROWS = d_conv - 1  # a causal convolution of width d_conv needs d_conv - 1 past inputs

MAMBA = TensorTable(
    "Mamba",
    "Tensors of one Mamba (selective SSM) layer on N_KV tokens: a causal convolution over "
    "d_inner channels, then one d_state-wide recurrence per channel.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("W^in", r"W^{\mathrm{in}}", d_in, 2 * d_inner, 1, W, note="input and gate"),
        _t("w^conv", r"w^{\mathrm{conv}}", d_conv, d_inner, 1, W, note="depthwise kernel"),
        _t("C^conv", r"C^{\mathrm{conv}}", _CONV_ROWS, d_inner, 1, S,
           note="last d_conv - 1 inputs of the convolution", store="conv"),
        _t("H", "H", d_inner, d_state, 1, S, note="SSM state: d_state per channel",
           store="ssm"),
        _t("Y", "Y", N_KV, d_in, 1, A, note="layer output"),
    ),
)

MAMBA2 = TensorTable(
    "Mamba2",
    "Tensors of one Mamba2 layer: the convolution also runs over the B and C inputs of "
    "N_sg groups, and the state is one d_sh x d_state matrix per head.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^conv", r"C^{\mathrm{conv}}", _CONV_ROWS, d_inner + 2 * N_sg * d_state, 1, S,
           note="last d_conv - 1 inputs: x, B and C", store="conv"),
        _t("H_h", "H_h", d_sh, d_state, N_sh, S, note="SSM state of each head", store="ssm"),
        _t("Y", "Y", N_KV, d_in, 1, A, note="layer output"),
    ),
)

GATED_DELTANET = TensorTable(
    "Gated DeltaNet",
    "Tensors of one gated linear-attention (Gated DeltaNet) layer: a short convolution over "
    "queries, keys and values, then one d_lk x d_lv matrix per value head, updated per token.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^conv", r"C^{\mathrm{conv}}", _CONV_ROWS, 2 * N_lk * d_lk + N_lv * d_lv, 1, S,
           note="last d_conv - 1 inputs of q, k and v", store="conv"),
        _t("H_h", "H_h", d_lk, d_lv, N_lv, S, note="recurrent state of each value head",
           store="ssm"),
        _t("Y", "Y", N_KV, d_in, 1, A, note="layer output"),
    ),
)

LIGHTNING = TensorTable(
    "Lightning attention",
    "Tensors of one lightning (linear) attention layer: the state is sum_n k_n^T v_n, one "
    "d_QK x d_V matrix per head, however many tokens were read.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("K_h^T V_h", r"K_h^{T} V_h", d_QK, d_V, N_h, S, note="running key-value product",
           store="ssm"),
        _t("Y", "Y", N_KV, d_in, 1, A, note="layer output"),
    ),
)

SHORT_CONV = TensorTable(
    "Short convolution",
    "Tensors of one gated short-convolution layer (LFM2): only the last d_conv - 1 inputs of "
    "its causal convolution over d_in channels are kept.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^conv", r"C^{\mathrm{conv}}", _CONV_ROWS, d_in, 1, S,
           note="last d_conv - 1 inputs", store="conv"),
        _t("Y", "Y", N_KV, d_in, 1, A, note="layer output"),
    ),
)

STATE_TABLES = {t.name: t for t in (MAMBA, MAMBA2, GATED_DELTANET, LIGHTNING, SHORT_CONV)}


# Not a state: a second growing cache beside MLA's latent (DeepSeek V3.2's sparse attention).
# Each token leaves one d_I-wide indexer key per layer, stored as fp8 values plus one fp32
# scale per 128 of them; vLLM allocates both as uint8 bytes (vllm 0.33.0
# models/deepseek_v32/attention.py: head_dim = index_head_dim + index_head_dim // 128 * 4),
# so the table counts bytes and the group uses b = 1 whatever the KV dtype.
INDEXER = TensorTable(
    "Indexer keys",
    "The lightning indexer of one MLA layer with sparse attention: it keeps a small key for "
    "every token, scores all of them, and the layer attends to the top-k latents only.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("K^I", r"K^{I}", N_KV, d_I, 1, Role.CACHE, note="indexer keys, fp8: one byte each"),
        _t("gamma^I", r"\gamma^{I}", N_KV, d_I / 32, 1, Role.CACHE,
           note="one fp32 scale (4 bytes) per 128 key values: d_I/128 x 4 bytes"),
    ),
)


# DeepSeek V4's compressed attention (notebook 08). Every layer keeps a sliding window of
# uncompressed entries, and a compressed layer one entry per m tokens (compress_ratios[i]); an
# entry is one d_c-wide vector (head_dim = 512) read as key and value. vLLM 0.34.0 stores both
# in DeepSeek's fp8_ds_mla layout, whatever --kv-cache-dtype asks ("auto" and "fp8" become
# fp8_ds_mla, a bf16 cache is refused: models/deepseek_v4/attention.py:95-124), as uint8 bytes:
# the d_c - d_R "NoPE" values in fp8, the d_R RoPE values in bf16, and one UE8M0 scale byte per
# 64 NoPE values plus one byte of padding ("448B NoPE + 128B RoPE + 8B fp8 scale = 584B per
# token", attention.py:837-839; common/ops/fused_compress_quant_cache.py:193-194, 279, 302-308).
# So the table counts bytes and a group uses b = 1.
V4_ENTRY = TensorTable(
    "V4 entry",
    "One DeepSeek V4 KV entry as vLLM 0.34.0 stores it (fp8_ds_mla): a window row holds one "
    "token, a compressed row m tokens merged by the layer's learned compressor.",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^N", r"C^{N}", N_KV, d_c - d_R, 1, Role.CACHE,
           note="NoPE part, fp8: one byte per value"),
        _t("C^R", r"C^{R}", N_KV, 2 * d_R, 1, Role.CACHE,
           note="RoPE part, bf16: two bytes per value"),
        _t("gamma^C", r"\gamma^{C}", N_KV, (d_c - d_R) / 64 + 1, 1, Role.CACHE,
           note="one UE8M0 scale byte per 64 NoPE values, plus one byte of padding"),
    ),
)

# The compressor's running state: a compressed layer (and its indexer) merges m tokens into one
# entry with softmax-gated pooling, so until the m-th token arrives it keeps each token's
# projected value and gate score in fp32. vLLM 0.34.0 stores them as a sliding window of
# coff * m tokens (coff = 2 for m = 4, whose windows overlap, else 1), each slot
# 2 * coff * head_dim fp32 values (kv_state + score_state): models/deepseek_v4/compressor.py:
# 156-158 (the window) and 297-302 (state_dim, dtype float32), spec lines 179-192. This table is
# the per-slot row the layer groups evaluate, with the compressor's width c_o x head_dim (c_o x
# index_head_dim for the indexer's compressor) passed in for d_c; kvlib.core.compression's
# COMPRESSOR_STATE writes the same state with c_o and the min(N_KV, c_o m) slots as symbols.
V4_COMPRESSOR = TensorTable(
    "Compressor state",
    "The running state of one DeepSeek V4 compressor: per token of its window, the projected "
    "value and the gate score, in fp32 (bytes).",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^st", r"C^{\mathrm{st}}", N_KV, 4 * d_c, 1, Role.CACHE,
           note="projected rows C, fp32 (4 bytes a value)"),
        _t("Z^st", r"Z^{\mathrm{st}}", N_KV, 4 * d_c, 1, Role.CACHE,
           note="their gate scores Z, fp32"),
    ),
)


# Inkling's short convolutions (transformers 5.25.0 models/inkling*, vLLM 0.34.0 models/inkling):
# every decoder layer convolves four streams over its last d_conv inputs: its keys and values
# (before they are cached) and the outputs of its attention and of its MLP. vLLM 0.34.0 keeps
# the four as one sliding window of d_conv tokens per layer (``InklingConvState``: a
# ``SlidingWindowSpec`` with sliding_window = block_size = sconv_kernel_size, bf16,
# vllm/models/inkling/nvidia/sconv_swa_attn.py:150-192); transformers 5.25.0 keeps each stream's
# last conv_kernel_size inputs in float32 (cache_utils.py:1242-1301, models/inkling/
# modeling_inkling.py:555-557). So the table is one growing row per token, d_w elements wide,
# that a window of d_conv tokens bounds (the group's window), in b bytes each.
SHORT_CONV_WINDOW = TensorTable(
    "Short-conv window",
    "One Inkling layer's short-convolution streams, kept as a window of their last d_conv "
    "inputs: per token one row of d_w elements (the four streams side by side).",
    (
        _t("X", "X", N_KV, d_in, 1, A, note="layer input"),
        _t("C^w", r"C^{w}", N_KV, d_w, 1, Role.CACHE,
           note="one row per token of the window: K, V, attention-output and MLP-output inputs"),
    ),
)
