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
           "INDEXER"]

W, A, S = Role.WEIGHT, Role.ACTIVATION, Role.STATE
# The SymPy symbols themselves, for arithmetic on shapes.
(N_KV, N_h, N_lk, N_lv, N_sg, N_sh, d_conv, d_in, d_inner, d_lk, d_lv, d_QK, d_sh, d_state,
 d_V, d_I) = (getattr(notation, n).symbol for n in (
    "N_KV", "N_h", "N_lk", "N_lv", "N_sg", "N_sh", "d_conv", "d_in", "d_inner", "d_lk", "d_lv",
    "d_QK", "d_sh", "d_state", "d_V", "d_I"))
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
        _t("S_h", "S_h", d_lk, d_lv, N_lv, S, note="recurrent state of each value head",
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
        _t("s^I", r"s^{I}", N_KV, d_I / 32, 1, Role.CACHE,
           note="one fp32 scale (4 bytes) per 128 key values: d_I/128 x 4 bytes"),
    ),
)
