"""The collection's notation, defined once (notebook 01, "Notation"): one symbol, one meaning.

Each symbol says where it comes from (``source``):

* ``paper``: M. F. Serret, *Understanding Transformers and Attention Mechanisms: An
  Introduction for Applied Mathematicians* (arXiv:2604.00965, 2026), Tables 1 and 2, as blog
  post A quotes them: N_L, N_h (the paper's N_heads), N_KV, d_in, d_QK, d_V (d_head in the
  cache formula as post A quotes it), d_L, and the matrices W^K, W^V and W^L;
* ``DeepSeek``: the DeepSeek-V2 paper (arXiv:2405.04434), whose decoupled RoPE key and
  query compression the paper's tables do not contain: d_R (its d_h^R), d_Lq (its d'_c) and
  the matrices W^{DQ}, W^{UQ}, W^{QR}, W^{KR};
* ``vLLM``: sizes named after what vLLM 0.33.0 allocates: b_c and b_s, the element sizes
  of the convolution and SSM states, and u, vLLM's ``gpu_memory_utilization``;
* ``ours``: kvlib's own: N_g (the paper names the number of key/value heads only in
  words), N_Q (neither blog post has it, and this collection does not verify that the paper
  does), B, b (the paper multiplies by the bits of one float; kvlib counts bytes), the symbols
  of the state tables (the paper covers attention only) and of capacity planning
  (:data:`SERVING_SYMBOLS`, notebook 06 and ``kvlib.serving.engines.vllm.budget``).

No two entries share a name or a meaning (``tests/test_notation.py``), and the notebooks, the
formula sheet and the docs write each meaning with its entry's symbol: a window is N_W (never
W), the context N_KV (never T), the weights one GPU holds W_GPU, a bandwidth BW, a peak
FLOP/s F_pk, the parameters P, a session's cache read per step R_KV (never K, the keys), the
batch B (never Mamba's input matrix, which the notebooks name in words), and the key and value
up-projections W^{LK}, W^{LV} (DeepSeek's W^{UK}, W^{UV}).

Issue 40 adds, in tuples of their own (:data:`INDEX_SYMBOLS`, :data:`TENSOR_SYMBOLS`,
:data:`RECURRENT_SYMBOLS`, :data:`SERVING_EXTRA_SYMBOLS`): the indices h (query head), g
(key/value head), i and j (query and key positions), t (decode step), p (RoPE's pair of
dimensions) and l (layer); the tensors X, Q, K, V, L, Y and their rows; the scores Z and the
weights A (never S or s: S is a session's bytes); the offset Delta = i - j, RoPE's rotation R_i
and the merged W^{QK}_h(Delta) (never m, a position, nor M, a matrix: m is V4's merge ratio, M a
GPU's memory); the LSE merge's running maximum mu; Gated DeltaNet's gate alpha and update
strength beta (never g); the draft tokens N_spec (never k); DeepSeek V4's compressor rows C and
its state C^{st}, Z^{st} (C is never a chunk or the context). :data:`SENSES` gives each entry's
words and the wrong senses a definition must not give it (``tests/test_symbols.py``).

Beware a clash of names: ``N_KV`` counts key/value *tokens* (the rows of the
cached K and V), as in the paper, while "KV heads" is ``N_g``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy as sp

__all__ = ["SYMBOLS", "STATE_SYMBOLS", "COMPRESSION_SYMBOLS", "WINDOW_SYMBOLS", "MATRIX_SYMBOLS",
           "SERVING_SYMBOLS", "INDEX_SYMBOLS", "TENSOR_SYMBOLS", "RECURRENT_SYMBOLS",
           "SERVING_EXTRA_SYMBOLS", "ALL_SYMBOLS", "SENSES", "Sense", "Symbol", "by_name",
           "sense"]


@dataclass(frozen=True)
class Symbol:
    """One symbol of the notation: the SymPy symbol, what it counts, its unit, and whose
    symbol it is (``paper``, ``DeepSeek``, ``vLLM`` or ``ours``: the module docstring)."""

    symbol: sp.Symbol
    meaning: str
    unit: str
    source: str = "ours"

    @property
    def name(self) -> str:
        return self.symbol.name

    def _sympy_(self) -> sp.Symbol:  # lets sp.sympify(N_h) give the SymPy symbol
        return self.symbol

    @property
    def integer(self) -> bool:
        return bool(self.symbol.is_integer)


def _count(name: str, meaning: str, unit: str = "count", source: str = "ours") -> Symbol:
    return Symbol(sp.Symbol(name, positive=True, integer=True), meaning, unit, source)


N_L = _count("N_L", "layers", source="paper")
N_h = _count("N_h", "query heads", source="paper (N_heads)")
N_g = _count("N_g", "key/value heads (GQA groups)")
N_KV = _count("N_KV", "key/value tokens cached (context length)", "tokens", source="paper")
N_Q = _count("N_Q", "query tokens in one step (1 in decode; a prefill chunk's length)", "tokens")
d_in = _count("d_in", "model (embedding) width", "elements", source="paper")
d_QK = _count("d_QK", "query/key width per head", "elements", source="paper")
d_V = _count("d_V", "value width per head", "elements", source="paper (d_head)")
d_L = _count("d_L", "latent width (MLA kv_lora_rank)", "elements", source="paper")
d_R = _count("d_R", "decoupled RoPE width (MLA qk_rope_head_dim)", "elements",
             source="DeepSeek (d_h^R)")
d_Lq = _count("d_Lq", "query latent width (MLA q_lora_rank)", "elements", source="DeepSeek (d'_c)")
B = _count("B", "sequences in the batch", "sequences")
# Bytes per element is not an integer for 4-bit formats (1/2 byte).
b = Symbol(sp.Symbol("b", positive=True), "bytes per cached element", "bytes", "ours")

SYMBOLS: tuple[Symbol, ...] = (N_L, N_h, N_g, N_KV, N_Q, d_in, d_QK, d_V, d_L, d_R, d_Lq, B, b)

# Layers that keep a constant-size state instead of a growing cache (notebook 07). These
# symbols are kvlib's own (the paper covers attention only); each names the config fields
# it is read from, spelled as each family's config spells them (kvlib/models/readers/).
d_conv = _count("d_conv", "convolution kernel width (mamba_d_conv: Jamba, Falcon-H1; conv_kernel: "
                "Nemotron-H; linear_conv_kernel_dim: Qwen3-Next; short_conv_kernel_size: Kimi "
                "Linear; conv_L_cache: LFM2)", "tokens")
d_inner = _count("d_inner", "Mamba channels (Mamba, Jamba: mamba_expand x hidden_size; Mamba2, "
                 "Nemotron-H: mamba_num_heads x mamba_head_dim; Falcon-H1: mamba_d_ssm)",
                 "elements")
d_state = _count("d_state", "SSM state size per channel (mamba_d_state: Jamba, Falcon-H1; "
                 "ssm_state_size: Nemotron-H)", "elements")
N_sg = _count("N_sg", "Mamba2 B/C groups (n_groups: Nemotron-H; mamba_n_groups: Falcon-H1)")
N_sh = _count("N_sh", "Mamba2 heads (mamba_num_heads: Nemotron-H; mamba_n_heads: Falcon-H1)")
d_sh = _count("d_sh", "Mamba2 head width (mamba_head_dim: Nemotron-H; mamba_d_head: Falcon-H1)",
              "elements")
N_lk = _count("N_lk", "linear-attention key heads (linear_num_key_heads: Qwen3-Next; "
              "linear_attn_config.num_heads: Kimi Linear)")
N_lv = _count("N_lv", "linear-attention value heads (linear_num_value_heads: Qwen3-Next; "
              "linear_attn_config.num_heads: Kimi Linear)")
d_lk = _count("d_lk", "linear-attention key head width (linear_key_head_dim: Qwen3-Next; "
              "linear_attn_config.head_dim: Kimi Linear)", "elements")
d_lv = _count("d_lv", "linear-attention value head width (linear_value_head_dim: Qwen3-Next; "
              "linear_attn_config.head_dim: Kimi Linear)", "elements")
d_I = _count("d_I", "sparse-attention indexer key width (index_head_dim)", "elements")
# DeepSeek V4's compressed attention (notebook 08): one d_c-wide vector per entry, read as key
# and value; a compressed layer merges every m tokens into one entry (compress_ratios[i]).
d_c = _count("d_c", "DeepSeek V4 key-value entry width (head_dim: one vector read as key and "
             "value)", "elements", source="DeepSeek V4 (c)")
m = _count("m", "tokens merged into one compressed entry (compress_ratios[i]: 4 or 128)",
           "tokens", source="DeepSeek V4 (m, m')")
# Notebook 08's other ideas: a window of uncompressed tokens, the entries an indexer selects,
# the overlap of a compressor's windows, and how many layers read one stored cache.
N_W = _count("N_W", "tokens a sliding window keeps (sliding_window)", "tokens")
N_top = _count("N_top", "entries the indexer selects per query (index_topk)", "entries",
               source="DeepSeek (k of top-k)")
c_o = _count("c_o", "compressor window overlap (2 for m = 4, whose windows overlap; else 1)",
             source="vLLM (coff)")
r_s = _count("r_s", "layers that read one stored cache (the sharing factor)")
b_c = Symbol(sp.Symbol("b_c", positive=True), "bytes per convolution-state element", "bytes",
             "vLLM")
b_s = Symbol(sp.Symbol("b_s", positive=True), "bytes per SSM / recurrent-state element",
             "bytes", "vLLM")

STATE_SYMBOLS: tuple[Symbol, ...] = (d_conv, d_inner, d_state, N_sg, N_sh, d_sh, N_lk, N_lv,
                                     d_lk, d_lv, d_I, b_c, b_s)
# Notebook 08's: compressed, selected and shared caches
COMPRESSION_SYMBOLS: tuple[Symbol, ...] = (d_c, m, N_W, N_top, c_o, r_s)
# Inkling's short convolutions, kept as a window of their last inputs (a sliding group)
d_w = _count("d_w", "width of one token's row in a short-convolution window (Inkling: its four "
             "streams K, V, attention output and MLP output, side by side)", "elements")
WINDOW_SYMBOLS: tuple[Symbol, ...] = (d_w,)


def _matrix(name: str, meaning: str, source: str) -> Symbol:
    return Symbol(sp.Symbol(name), meaning, "matrix", source)


# The weight matrices of notebooks 01-04 (names only; each notebook writes their shapes).
MATRIX_SYMBOLS: tuple[Symbol, ...] = (
    _matrix("W^Q_h", "query projection of head h (d_in x d_QK)",
            "Vaswani et al. (arXiv:1706.03762, W_i^Q)"),
    _matrix("W^K_h", "key projection of head h (d_in x d_QK)", "paper (W^K)"),
    _matrix("W^V_h", "value projection of head h (d_in x d_V)", "paper (W^V)"),
    _matrix("W^O_h", "output projection of head h (d_V x d_in)",
            "Vaswani et al. (arXiv:1706.03762, W^O)"),
    _matrix("W^L", "latent down-projection shared by all heads (d_in x d_L)",
            "paper (L = X W^L); DeepSeek's W^{DKV}"),
    _matrix("W^{LK}_h", "key up-projection of head h from the latent (d_L x d_QK)",
            "ours (kvlib's Table 2); DeepSeek's W^{UK}"),
    _matrix("W^{LV}_h", "value up-projection of head h from the latent (d_L x d_V)",
            "ours (kvlib's Table 2); DeepSeek's W^{UV}"),
    _matrix("W^{DQ}", "query down-projection (d_in x d_Lq, q_lora_rank)",
            "DeepSeek (arXiv:2405.04434, section 2.1.2)"),
    _matrix("W^{UQ}_h", "query up-projection of head h (d_Lq x d_QK)",
            "DeepSeek (arXiv:2405.04434, section 2.1.2)"),
    _matrix("W^{QR}_h", "RoPE query projection of head h (d_Lq x d_R)",
            "DeepSeek (arXiv:2405.04434, section 2.1.3)"),
    _matrix("W^{KR}", "RoPE key projection shared by all heads (d_in x d_R)",
            "DeepSeek (arXiv:2405.04434, section 2.1.3)"),
    _matrix("R_i", "RoPE's rotation at token position i (d_QK x d_QK, or d_R x d_R)",
            "RoFormer (arXiv:2104.09864, R^d_{Theta,m})"),
    _matrix("W^{QK}_h", "head h's merged query-key matrix W^Q_h R_Delta W^{LK T}_h, which "
            "with RoPE depends on the offset Delta (d_in x d_L)", "ours (notebook 04)"),
)


def _bytes(name: str, meaning: str, source: str = "ours", unit: str = "bytes") -> Symbol:
    return Symbol(sp.Symbol(name, positive=True), meaning, unit, source)


# Capacity planning (notebook 06, kvlib.serving.engines.vllm.budget, the formula sheet): bytes
# per GPU unless said. A session is one sequence being served.
SERVING_SYMBOLS: tuple[Symbol, ...] = (
    _bytes("u", "share of M that vLLM may use (gpu_memory_utilization)", "vLLM", "fraction"),
    _bytes("M", "memory CUDA reports for one GPU (its total, not the datasheet's)",
           "CUDA (cudaMemGetInfo's total, as vLLM reads it)"),
    _bytes("M_0", "memory in use on one GPU when vLLM starts (CUDA context, other processes)",
           "ours (M less the free memory vLLM 0.34.0 reads then)"),
    _bytes("M_pk", "transient peak vLLM 0.34.0 keeps free (profiling peak, CUDA-graph estimate)",
           "ours (vLLM 0.34.0's peak)"),
    Symbol(sp.Symbol("M_gr", nonnegative=True),  # may be 0
           "growth of torch's reservation over one sizing step (vLLM 0.34.0)", "bytes",
           "ours (vLLM 0.34.0's growth)"),
    _bytes("M_fl", "floor of vLLM 0.34.0's sizing margin (1 GiB on CUDA)",
           "ours (vLLM 0.34.0's margin floor)"),
    _bytes("W_GPU", "weights one GPU holds (a draft model's included)"),
    _bytes("O", "non-KV memory vLLM 0.33.0 measures at start-up (activations, CUDA graphs)"),
    _bytes("O_R", "non-KV memory resident after warmup besides the weights (vLLM 0.34.0)"),
    _bytes("S", "one session's bytes on one GPU: its cache in whole blocks, plus any state"),
    _bytes("R_W", "weight bytes one GPU reads per decode step"),
    _bytes("R_KV", "cache bytes one session reads per decode step on one GPU"),
    _bytes("BW", "memory bandwidth of one GPU (its datasheet)", unit="bytes/s"),
    _bytes("F_pk", "peak dense FLOP/s of one GPU (its datasheet)", unit="FLOP/s"),
    _bytes("F", "FLOPs of one decode step", unit="FLOPs"),
    _bytes("D", "bytes one decode step reads"),
    _count("TP", "tensor-parallel size (GPUs one replica's layers are split over)",
           source="vLLM (tensor_parallel_size)"),
    _count("P", "parameters of a model"),
    _count("P_a", "parameters active per token (an MoE's: shared and routed-to weights)"),
    _count("P_emb", "parameters of the untied input embedding (a lookup, not read whole)"),
    _bytes("b_w", "bytes per weight"),
    _count("E", "routed experts per MoE layer (n_routed_experts)"),
    _count("E_k", "routed experts each token is sent to (num_experts_per_tok)"),
    _count("N_blk", "tokens per cache block (vLLM's block_size: 16 in 0.33.0, 64 in 0.34.0)",
           "tokens", source="vLLM (block_size)"),
    _count("N_pre", "tokens of a prompt prefix that sessions share (a system prompt)", "tokens"),
)

# Issue 40: the letters every notebook writes beside the sizes, one meaning each. These tuples
# are new (the notebooks print SYMBOLS and SERVING_SYMBOLS; these are not added to them).
def _index(name: str, meaning: str) -> Symbol:
    return Symbol(sp.Symbol(name, nonnegative=True, integer=True), meaning, "index", "ours")


# Indices: a subscript that picks one head or one token (W^Q_h, K_g, k_j, q_i, alpha_t).
INDEX_SYMBOLS: tuple[Symbol, ...] = (
    _index("h", "query-head index (W^Q_h, Q_h; 1 to N_h)"),
    _index("g", "key/value-head index (K_g, V_g; 1 to N_g; g(h) is head h's group)"),
    _index("i", "position of the query token (q_i, R_i)"),
    _index("j", "position of a key token (k_j, R_j, L_j)"),
    _index("t", "decode step, the token being generated (alpha_t, beta_t; 1 to N_KV)"),
    _index("p", "pair of dimensions RoPE turns together (theta_p; 0 to d_QK/2 - 1, or d_R/2 - 1)"),
    _index("l", "layer index (1 to N_L)"),
)


def _tensor(name: str, meaning: str, source: str = "ours", unit: str = "matrix") -> Symbol:
    return Symbol(sp.Symbol(name), meaning, unit, source)


# The tensors of Tables 1 and 2 (shapes written where each notebook uses them), and the
# quantities of attention itself: scores Z = Q K^T / sqrt(d_QK), weights A = softmax(Z).
TENSOR_SYMBOLS: tuple[Symbol, ...] = (
    _tensor("X", "input embeddings of the tokens (N_KV x d_in)", "paper (X)"),
    _tensor("x", "input embedding of one token (1 x d_in)", "paper (x)", "vector"),
    _tensor("Q", "queries (N_Q x d_QK; Q_h one head's)", "paper (Q)"),
    _tensor("K", "keys (N_KV x d_QK; K_g one KV head's)", "paper (K)"),
    _tensor("V", "values (N_KV x d_V; V_g one KV head's)", "paper (V)"),
    _tensor("q", "query vector of one token (1 x d_QK; q_h one head's, q_i at position i)",
            "paper (q)", "vector"),
    _tensor("k", "key vector of one token (1 x d_QK; k_j at position j)", "paper (k)", "vector"),
    _tensor("v", "value vector of one token (1 x d_V; v_j at position j)", "paper (v)", "vector"),
    _tensor("L", "cached latent of the tokens, L = X W^L (N_KV x d_L; L_j one token's)",
            "paper (L)"),
    _tensor("Y", "attention layer's output (N_Q x d_in)", "paper (Y)"),
    _tensor("o", "one query's attention output before W^O (1 x d_V)", "ours", "vector"),
    _tensor("Z", "attention scores before the softmax, Q K^T / sqrt(d_QK) (N_Q x N_KV); "
            "also a compressor's scores"),
    _tensor("A", "attention weights, softmax(Z) row by row (N_Q x N_KV)"),
    _tensor("K^R", "decoupled RoPE keys shared by all heads, RoPE(X W^{KR}) (N_KV x d_R)",
            "DeepSeek (k^R_t)"),
    _tensor("Q^R", "decoupled RoPE queries of one head, RoPE(X W^{QR}_h) (N_Q x d_R)",
            "DeepSeek (q^R_{t,i})"),
    _tensor("q^R", "decoupled RoPE query of one token and head (1 x d_R)", "DeepSeek (q^R_t)",
            "vector"),
    _tensor("k^R", "decoupled RoPE key of one token (1 x d_R)", "DeepSeek (k^R_t)", "vector"),
    _tensor("K^I", "an indexer's keys (N_KV x d_I)", "DeepSeek V3.2 (k^I)"),
    _tensor("c^Q", "query latent of one token, x W^{DQ} (1 x d_Lq)", "DeepSeek (c_t^Q)", "vector"),
    # DeepSeek V4's compressor (notebook 08, kvlib.core.compression) and a convolution's state
    _tensor("C", "a compressor's projected rows, one per token (C_j = x_j W^{KV}, c_o d_c wide)",
            "DeepSeek V4 (C)"),
    _tensor("C^N", "a compressed entry's NoPE part (N_KV/m x (d_c - d_R), fp8)", "ours"),
    _tensor("C^R", "a compressed entry's RoPE part (N_KV/m x d_R, bf16)", "ours"),
    _tensor("C^{st}", "a compressor's state: the rows kept (min(N_KV, c_o m) x c_o d_c, fp32)",
            "ours (vLLM 0.34.0's compressor state)"),
    _tensor("Z^{st}", "a compressor's state: the scores kept (min(N_KV, c_o m) x c_o d_c, fp32)",
            "ours (vLLM 0.34.0's compressor state)"),
    _tensor("gamma^C", "a compressed entry's scale bytes (UE8M0: one per 64 NoPE values, plus "
            "one of padding)", "ours (vLLM 0.34.0's fp8_ds_mla scales)"),
    _tensor("gamma^I", "an indexer key's scales (one fp32 per 128 key values)",
            "ours (vLLM's indexer-key scales)"),
    _tensor("C^{conv}", "a short convolution's state: its last d_conv - 1 input rows",
            "ours (vLLM's conv_state)"),
    Symbol(sp.Symbol("Delta", integer=True), "offset between query and key positions, i - j",
           "tokens", "ours"),
    Symbol(sp.Symbol("theta", positive=True), "RoPE's rotation frequency of one pair of "
           "dimensions (radians per position)", "radians", "RoFormer (theta_i)"),
    Symbol(sp.Symbol("mu"), "running maximum of the log-sum-exps when partial attention outputs "
           "are merged", "nats", "ours"),
)

# Recurrent layers (notebook 07): Gated DeltaNet's per-step scalars and the state they update.
RECURRENT_SYMBOLS: tuple[Symbol, ...] = (
    Symbol(sp.Symbol("alpha", positive=True), "Gated DeltaNet's decay gate at step t (alpha_t, "
           "in (0, 1))", "fraction", "Gated DeltaNet (arXiv:2412.06464, alpha_t)"),
    Symbol(sp.Symbol("beta", positive=True), "Gated DeltaNet's update strength at step t "
           "(beta_t, in (0, 1))", "fraction", "Gated DeltaNet (arXiv:2412.06464, beta_t)"),
    _tensor("H", "recurrent state of one head of a linear-attention layer (H_h: d_lk x d_lv)",
            "ours (Gated DeltaNet's state)"),
)

# Serving symbols beyond SERVING_SYMBOLS (which notebook 06 prints): speculative decoding's
# draft tokens, the step time the decode bound limits, and the sessions that fit.
SERVING_EXTRA_SYMBOLS: tuple[Symbol, ...] = (
    _count("N_spec", "draft tokens proposed per step in speculative decoding "
           "(num_speculative_tokens)", "tokens", source="vLLM (num_speculative_tokens)"),
    Symbol(sp.Symbol("t_step", positive=True), "time of one decode step", "seconds", "ours"),
    _count("B_max", "whole sessions that fit one TP group's cache budget", "sessions"),
)

ALL_SYMBOLS: tuple[Symbol, ...] = (SYMBOLS + STATE_SYMBOLS + COMPRESSION_SYMBOLS + WINDOW_SYMBOLS
                                   + MATRIX_SYMBOLS + SERVING_SYMBOLS + INDEX_SYMBOLS
                                   + TENSOR_SYMBOLS + RECURRENT_SYMBOLS + SERVING_EXTRA_SYMBOLS)

_BY_NAME = {s.name: s for s in ALL_SYMBOLS}


def by_name(name: str) -> Symbol:
    """The notation entry called ``name`` (e.g. ``"N_h"``); KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown symbol {name!r}; known: {', '.join(_BY_NAME)}") from None


# What each entry means, in words a definition uses, and the other meanings the collection once
# gave its letter (issue 40). tests/test_symbols.py reads the words around each definition in
# the notebooks and docs ("where $m$ is ...", "$S$, the ...") against these: a definition that
# names a wrong sense fails. Keywords not listed are the entry's meaning's own words.
@dataclass(frozen=True)
class Sense:
    keywords: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()


_POSITION = ("position", "offset")
_CONTEXT = ("context", "tokens? cached", "sequence length")
SENSES: dict[str, Sense] = {
    "m": Sense(("merge", "compress", "ratio", "entry", "entries"),
               _POSITION + ("maximum", "max", "running")),
    "mu": Sense(("maximum", "max", "log-sum-exp", "lse"), ("compress", "ratio")),
    "i": Sense(("query", "position", "token"), ("pair", "frequenc", "dimension", "layer")),
    "j": Sense(("key", "position", "token"), ("pair", "frequenc", "dimension", "layer")),
    "t": Sense(("step", "decode", "generat", "token"), ("time", "tensor", "context", "TP")),
    "h": Sense(("query", "head"), ("head size", "head dim", "head width", "hidden", "hybrid",
                                   "size of a head", "width")),
    "g": Sense(("key/value", "kv", "group", "head"), ("gate", "decay")),
    "k": Sense(("key",), ("draft", "speculat", "dimension", "columns", "rows", "experts?",
                          "top")),
    "K": Sense(("key",), ("read", "cache bytes", "session")),
    "S": Sense(("session", "bytes", "one sequence"), ("score", "softmax", "weights",
                                                       "probabilit")),
    "Z": Sense(("score", "logit", "before the softmax", "QK")),
    "A": Sense(("weight", "softmax", "probabilit"), ("score", "before the softmax")),
    "M": Sense(("memory", "GPU", "CUDA", "total"), ("matrix", "merged", "maximum")),
    "M_pk": Sense(("peak", "transient", "free")),
    "P": Sense(("parameter",), ("peak", "activation", "graph pool", "probabilit")),
    "W^{QK}_h": Sense(("merged", "matrix", "query-key")),
    "R_i": Sense(("rotation", "RoPE"), ("bytes", "read")),
    "R_W": Sense(("weight", "read"), ("rotation",)),
    "R_KV": Sense(("cache", "read", "session"), ("rotation",)),
    "d_c": Sense(("entry", "head_dim", "V4", "compressed"),
                 ("latent", "kv_lora_rank", "DeepSeek-V2", "V2")),
    "d_L": Sense(("latent", "kv_lora_rank"), ("V4", "entry width")),
    "d_QK": Sense(("query", "key", "width", "head")),
    "d_V": Sense(("value", "width", "head")),
    "N_KV": Sense(("token", "context", "cached", "sequence", "length"), ("heads",)),
    "N_W": Sense(("window", "sliding"), _CONTEXT),
    "N_Q": Sense(("query", "chunk", "prefill", "decode", "tokens in one step"), ()),
    "N_spec": Sense(("draft", "speculat", "proposed")),
    "N_g": Sense(("key/value heads", "kv heads", "group"), ("tokens",)),
    "N_h": Sense(("query heads", "heads"), ("tokens", "head size")),
    "B": Sense(("batch", "sequences", "sessions"), ("bytes", "Mamba", "input matrix")),
    "b": Sense(("bytes", "element", "dtype"), ("batch", "bits")),
    "u": Sense(("gpu_memory_utilization", "share", "utili", "fraction")),
    "W_GPU": Sense(("weight",), ("window",)),
    "TP": Sense(("tensor", "parallel", "GPUs")),
    "alpha": Sense(("gate", "decay", "forget")),
    "beta": Sense(("update", "strength", "write", "learning rate")),
    "H": Sense(("state", "recurrent", "matrix")),
    "D": Sense(("bytes", "read"), ("dimension",)),
    "E": Sense(("experts",), ("embedding",)),
    "E_k": Sense(("experts", "token"), ()),
    "X": Sense(("input", "embedding", "tokens", "activation", "layer input")),
    "L": Sense(("latent",), ("layers",)),
    "Delta": Sense(("offset", "distance", "i - j", "relative")),
    "theta": Sense(("frequenc", "angle", "rotation")),
    "p": Sense(("pair", "dimension"), ("position", "token", "parameter")),
    "l": Sense(("layer",), ("layers of the model", "number of layers")),
    "c^Q": Sense(("query", "latent", "compressed"), ("key", "cache")),
    "C": Sense(("compressor", "projected", "rows?"), ("chunk", "context", "prefill")),
}
_STOP = {"the", "one", "of", "a", "an", "and", "or", "in", "on", "per", "its", "to", "by", "for",
         "as", "at", "with", "from", "that", "not", "any", "x", "is", "be", "it", "whose", "which",
         "when", "each", "all", "this", "than", "into", "plus", "unless", "said", "what", "vllm"}


def sense(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(keywords, wrong senses) of the entry called ``name``: regular-expression stems, matched
    at the start of a word, case-insensitively. Keywords are :data:`SENSES`' and the meaning's
    own words (cut to their first six letters, so "tokens" and "token" both match)."""
    entry = by_name(name)
    words = re.findall(r"[A-Za-z][A-Za-z/_'-]{2,}", entry.meaning)
    own = tuple(re.escape(w[:6]) for w in words if w.casefold() not in _STOP)
    given = SENSES.get(name, Sense())
    return given.keywords + own, given.wrong
