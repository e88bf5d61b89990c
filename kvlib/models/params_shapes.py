"""Parameters from a config's shapes, for the families that share the decoder's shape (issue 42).

Many families are the same decoder with different switches: an embedding (tied to the head or
not), per layer an attention of q/k/v/o projections (biases by the family's keys, q/k norms or
not), an MLP gated (3 matrices) or plain (2), or a MoE block (routed experts, router, shared
experts, some layers dense), and norms (RMSNorm: a weight; LayerNorm: weight and bias). One
counter walks that shape; a small table, :data:`SHAPES`, says for each ``model_type`` which
keys name what. Each row cites the transformers 5.25.0 modeling file it follows
(``transformers/models/<family>/modeling_<family>.py:LINE``) and how vLLM 0.34.0 serves it
(``vllm/model_executor/models/registry.py`` line, its model file where it loads something
differently, e.g. Command R's head, always the embedding: ``commandr.py:417``).

    >>> count_by_shape({"model_type": "granite", "vocab_size": 100, "hidden_size": 8,
    ...                 "intermediate_size": 16, "num_hidden_layers": 1,
    ...                 "num_attention_heads": 2, "num_key_value_heads": 1}).total
    2200

(embedding 100 x 8 = 800, head 800, per layer q 8 x 8 = 64, k and v 8 x 4 = 32 each, o 64,
MLP 3 x 8 x 16 = 384, two norms of 8; the final norm 8: 800 + 800 + 192 + 384 + 16 + 8.)

A multimodal wrapper whose text model is a row (EXAONE 4.5: its ``text_config`` is EXAONE
4.0's) is counted by :data:`WRAPPERS`: that row read from ``text_config``, plus its vision
tower and projector as vLLM 0.34.0 loads them (``towers == "counted"``).

:func:`count_by_shape` returns a :class:`kvlib.models.params.ParamCount` (elements, exact
ints; every linear weight as a :class:`~kvlib.models.params.Linear` so the quantization code
can price it) or None for a ``model_type`` not in the table. A bad or missing key raises
ValueError naming the field and its value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

# the leaf module, not the package: kvlib.models.params dispatches here (count_params)
from kvlib.models.params.tally import PARTS, Fixed, Linear, ParamCount
from kvlib.models.readers.class_defaults import take
from kvlib.models.readers.fields import Fields, describe

__all__ = ["SHAPES", "WRAPPERS", "Moe", "Shape", "Wrapper", "count_by_shape"]

# A bias or norm switch: a constant, or (config key, the config class's default)
Switch = bool | tuple[str, bool]


@dataclass(frozen=True)
class Moe:
    """A family's MoE block. experts / top_k / width: the keys (first present) of the routed
    expert count, experts per token, expert width (gate and up d -> width, down back).
    block: module name of the block. router: its name (d -> E, no bias). shared: "" (none),
    the key giving the shared expert's width (0: none), or "x:KEY": KEY shared experts of
    the routed width as one MLP (``shared_default`` when KEY is absent); a gated MLP named
    ``shared_name``. shared_gate: a d -> 1 gate beside the shared expert. dense: which
    layers keep a dense MLP of ``intermediate_size``: "" none, "qwen" (those in
    ``mlp_only_layers``, and those where (i + 1) % ``decoder_sparse_step`` != 0).
    router_fp32: the router's weight is kept in fp32 (a Fixed tensor, not a Linear);
    score_bias: an fp32 ``e_score_correction_bias`` of E beside it."""

    experts: tuple[str, ...]
    top_k: tuple[str, ...] = ("num_experts_per_tok",)
    width: tuple[str, ...] = ("moe_intermediate_size",)
    block: str = "mlp"
    router: str = "gate"
    shared: str = ""
    shared_name: str = "shared_expert"
    shared_gate: bool = False
    shared_default: int = 0
    dense: str = ""
    router_fp32: bool = False
    score_bias: bool = False


@dataclass(frozen=True)
class Shape:
    """One family's decoder. cite: transformers 5.25.0 file:line followed; vllm: how vLLM
    0.34.0 serves it (registry.py line) and what it loads differently.

    qkv: "split" (q, k, v) or "fused" (one ``query_key_value``, d -> (h + 2 kv) hd).
    qkv_bias / o_bias: biases. qk_norm: "" none, "head" (a norm of hd on q and one on k,
    in ``norms``: whole on every rank), "heads" (h hd on q, kv hd on k), "olmoe" (d on q,
    kv d / h on k), these two in ``attention``; qk_norm_if: whether
    the family has it; qk_norm_bias: those norms are LayerNorms with a bias.
    mlp: "glu" (gate, up, down), "glu_fused" (gate_up d -> 2i, down), "plain" (up, down).
    inter / inter_x: the MLP width's keys, else ``inter_x`` x hidden_size.
    norms: norms per layer; more_norms: ((switch, count), ...) added when the switch holds;
    norm_bias: every norm is a LayerNorm with a bias; final_norm: the model's last norm.
    scalars: parameters per layer outside linears and norms (Apertus' xIELU: 4).
    tied: tie_word_embeddings' default; head_bias: the head has a bias; vllm_tied: vLLM
    always reads the embedding as the head (no lm_head loaded whatever the config says).
    embed_norm: a LayerNorm right after the embedding (BLOOM). head_dim_key: the family
    reads ``head_dim`` (else it is always hidden_size / heads); hd_required: transformers
    cannot build the family's module without one. A ``head_dim`` or ``num_key_value_heads``
    the file omits takes the config class's default where it is not hidden_size / heads or
    the heads (:mod:`kvlib.models.readers.class_defaults`, the table the KV-cache readers use).
    layer_keys: the keys of the layer count. o_from_hidden: o_proj is hidden -> hidden.
    refuse: ((key, value, why), ...): a value vLLM builds differently from transformers.
    sinks: a learned attention sink per head and layer (as vLLM loads it).
    """

    cite: str
    vllm: str
    root: str = "model"
    attn: str = "self_attn"
    qkv: str = "split"
    qkv_names: tuple[str, str, str] = ("q_proj", "k_proj", "v_proj")
    o: str = "o_proj"
    qkv_bias: Switch = ("attention_bias", False)
    o_bias: Switch = ("attention_bias", False)
    qk_norm: str = ""
    qk_norm_if: Switch = True
    qk_norm_bias: bool = False
    mlp: str = "glu"
    mlp_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    mlp_bias: Switch = ("mlp_bias", False)
    inter: tuple[str, ...] = ("intermediate_size",)
    inter_x: int = 0
    norms: int = 2
    more_norms: tuple[tuple[Switch, int], ...] = ()
    norm_bias: bool = False
    final_norm: bool = True
    scalars: int = 0
    tied: bool = False
    head_bias: bool = False
    vllm_tied: bool = False
    embed_norm: bool = False
    head_dim_key: bool = True
    hd_required: bool = False
    layer_keys: tuple[str, ...] = ("num_hidden_layers", "n_layer")
    o_from_hidden: bool = False
    refuse: tuple[tuple[str, object, str], ...] = ()
    sinks: Switch = False
    moe: Moe | None = None


_T = "transformers/models"
_V = "vllm/model_executor/models"
# vLLM 0.34.0 serves these through its Transformers backend (registry.py:782-806,
# _TRANSFORMERS_SUPPORTED_MODELS): it builds transformers' own module and loads what that
# module has, so transformers' count is vLLM's
_BACKEND = f"{_V}/registry.py:782-806 (Transformers backend: transformers' module)"
# vLLM falls back to the Transformers backend for an architecture transformers has and that
# supports its attention interface (registry.py:1345-1400, _try_resolve_transformers)
_FALLBACK = (f"{_V}/registry.py:1345-1400,1468-1478 (an architecture vLLM has no file for: "
             "the Transformers backend fallback, transformers' module)")
_LLAMA = f"{_V}/llama.py:267-305 (LlamaForCausalLM, registry.py:142-155)"

SHAPES: dict[str, Shape] = {
    # --- dense, Llama's shape -------------------------------------------------------
    "apertus": Shape(f"{_T}/apertus/modeling_apertus.py:43-50,197-223,269-278,341,416 "
                     "(plain MLP with xIELU: alpha_p, alpha_n and the buffers beta, eps)",
                     f"{_V}/apertus.py:104-109 (registry.py:77; XIELU: the same 4 tensors, "
                     "layers/activation.py:699-710)",
                     qk_norm="head", mlp="plain", mlp_names=("up_proj", "down_proj"),
                     scalars=4),
    "arcee": Shape(f"{_T}/arcee/modeling_arcee.py:50-57,215-227,278-279,343,418", _BACKEND,
                   mlp="plain", mlp_names=("up_proj", "down_proj")),
    "cohere": Shape(f"{_T}/cohere/modeling_cohere.py:51-55,114-122,216-236,294,371,446 "
                    "(LayerNorm without bias; one norm per layer; q/k norms (h, hd) and "
                    "(kv, hd) with use_qk_norm)",
                    f"{_V}/commandr.py:257-262,417 (registry.py:87: the head is never "
                    "loaded, the embedding is read as it)",
                    qk_norm="heads", qk_norm_if=("use_qk_norm", False), norms=1, tied=True,
                    vllm_tied=True),
    "cohere2": Shape(f"{_T}/cohere2/modeling_cohere2.py:88-92,192-203,249-257,271,344,424",
                     f"{_V}/commandr.py:417 (registry.py:88: Cohere2 as CohereForCausalLM, "
                     "the head never loaded)",
                     norms=1, tied=True, vllm_tied=True),
    "cwm": Shape(f"{_T}/cwm/modeling_cwm.py:175-178,245-253,268-269,339,420 (no biases in "
                 "attention)", _BACKEND, qkv_bias=False, o_bias=False),
    "glm": Shape(f"{_T}/glm/modeling_glm.py:48-54,211-220,293-294,358,433 (q/k/v bias "
                 "attention_bias, o none; gate_up fused)", _BACKEND,
                 qkv_bias=("attention_bias", True), o_bias=False, mlp="glu_fused",
                 mlp_names=("gate_up_proj", "down_proj"), mlp_bias=False),
    "glm4": Shape(f"{_T}/glm4/modeling_glm4.py:49-55,74-77,211-220,362,437 (GLM's layer "
                  "with 4 norms)", f"{_V}/glm4.py:257 (registry.py:122)",
                  qkv_bias=("attention_bias", True), o_bias=False, mlp="glu_fused",
                  mlp_names=("gate_up_proj", "down_proj"), mlp_bias=False, norms=4),
    "granite": Shape(f"{_T}/granite/modeling_granite.py:128-139,210-212,227-228,360,439",
                     f"{_V}/granite.py:339,444 (registry.py:130)"),
    "hyperclovax": Shape(f"{_T}/hyperclovax/modeling_hyperclovax.py:194-205,255-257,272-280,"
                         "367,446 (post_norm1/2 with use_post_norm)",
                         f"{_V}/hyperclovax.py:245-248 (registry.py:140)",
                         more_norms=((("use_post_norm", True), 2),)),
    "internlm3": Shape(f"{_T}/llama/modeling_llama.py:219-230,158-160,282-283,347,422 "
                       "(auto/modeling_auto.py:891: LlamaForCausalLM; InternLM3Config "
                       "reads qkv_bias as attention_bias, bias as mlp_bias)",
                       f"{_LLAMA}: qkv_bias for q/k/v, attention_bias or bias for o",
                       qkv_bias=("qkv_bias", False), o_bias=("bias", False),
                       mlp_bias=("bias", False)),
    "iquestcoder": Shape(f"{_T}/llama/modeling_llama.py:219-230,158-160,282-283,347,422 "
                         "(auto/modeling_auto.py:892: LlamaForCausalLM)", _LLAMA),
    "jais2": Shape(f"{_T}/jais2/modeling_jais2.py:44-51,142-153,205-206,316,391 (LayerNorm "
                   "with bias, plain MLP)", _BACKEND, mlp="plain",
                   mlp_names=("up_proj", "down_proj"), norm_bias=True),
    "ministral3": Shape(f"{_T}/ministral3/modeling_ministral3.py:123-126,184-186,221-222,332,"
                        "407", f"{_V}/registry.py:178 (MistralForCausalLM: Llama's layer)",
                        qkv_bias=False, o_bias=False, mlp_bias=False),
    "nanochat": Shape(f"{_T}/nanochat/modeling_nanochat.py:44,187-201,254-255,273-274,348 "
                      "(RMSNorms without weights: no norm parameters)", _BACKEND,
                      mlp="plain", mlp_names=("fc1", "fc2"), mlp_bias=False, norms=0,
                      final_norm=False),
    "nemotron": Shape(f"{_T}/nemotron/modeling_nemotron.py:62,178-179,244-247,299-300,380,"
                      "454 (LayerNorm1P: weight and bias; plain MLP)",
                      f"{_V}/nemotron.py:82-90,279-295,355 (registry.py:189)",
                      mlp="plain", mlp_names=("up_proj", "down_proj"), norm_bias=True),
    "olmo": Shape(f"{_T}/olmo/modeling_olmo.py:48,68-70,206-217,277-278,342 (LayerNorm "
                  "without parameters)", _BACKEND, norms=0, final_norm=False),
    "olmo2": Shape(f"{_T}/olmo2/modeling_olmo2.py:197-210,264-266,281-282,345,420 (q/k norms "
                   "over h hd and kv hd)", _BACKEND, qk_norm="heads"),
    "olmo3": Shape(f"{_T}/olmo3/modeling_olmo3.py:146-159,216-218,233-234,370,454", _BACKEND,
                   qk_norm="heads"),
    "seed_oss": Shape(f"{_T}/seed_oss/modeling_seed_oss.py:75-77,170-181,237-238,348,423 "
                      "(o bias: attention_out_bias)", _BACKEND,
                      o_bias=("attention_out_bias", False)),
    "vaultgemma": Shape(f"{_T}/vaultgemma/modeling_vaultgemma.py:72-74,176-187,242-244,376,460"
                        " (input and pre-feedforward norms)", _BACKEND, tied=True),
    "helium": Shape(f"{_T}/helium/modeling_helium.py:110-118,208-223,275-276,340,415 (o_proj "
                    "hidden -> hidden, no bias)", _FALLBACK, o_bias=False, o_from_hidden=True),
    "ministral": Shape(f"{_T}/ministral/modeling_ministral.py:50-58,145-154,229-230,340,423",
                       _FALLBACK, qkv_bias=False, o_bias=False, mlp_bias=False, hd_required=True),
    "hunyuan_v1_dense": Shape(f"{_T}/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py:66-74,161-180,"
                              "234-235,373,448 (query/key RMSNorms of head_dim; head_dim read as "
                              "given: the class's default None does not build)", _BACKEND,
                              qk_norm="head", mlp_bias=False, hd_required=True),
    "ernie4_5": Shape(f"{_T}/ernie4_5/modeling_ernie4_5.py:90-99,192-202,275-276,340,415",
                      f"{_V}/ernie45.py:42-53 (registry.py:102: Llama's layer without biases)",
                      qkv_bias=False, o_bias=False, mlp_bias=False, tied=True,
                      refuse=(("use_bias", True, "transformers gives ERNIE 4.5's "
                                             "linears biases, vLLM 0.34.0 builds it as Llama "
                                             "without them (ernie45.py:42-53, llama.py:267-305);"
                                             " kvlib refuses rather than pick one"),)),
    "exaone": Shape(f"{_T}/llama/modeling_llama.py:219-230,158-160,282-283,347,422 "
                    "(auto/modeling_auto.py:839: LlamaForCausalLM; ExaoneConfig reads "
                    "num_layers as num_hidden_layers, configuration_exaone.py:83-87)",
                    f"{_V}/exaone.py:237-265 (registry.py:104: the same shapes)",
                    layer_keys=("num_hidden_layers", "num_layers")),
    "exaone4": Shape(f"{_T}/exaone4/modeling_exaone4.py:194,204-210,267-269,284-285,344,348,"
                     "424,433 (no biases; q/k RMSNorms of head_dim; per layer only the "
                     "post-attention and post-feedforward norms; head untied by default, "
                     "configuration_exaone4.py:92)",
                     f"{_V}/exaone4.py:139-167,255-260,308,326,406-413 (registry.py:105); its "
                     "biases come from attention_bias / bias / mlp_bias (exaone4.py:229-231,"
                     "243,252), which transformers never builds: refused",
                     qkv_bias=False, o_bias=False, qk_norm="head", mlp_bias=False,
                     refuse=tuple((k, True, f"vLLM 0.34.0 gives EXAONE 4.0's {what} biases "
                                  f"from {k} (exaone4.py:229-231,243,252), transformers "
                                  "5.25.0 builds none (modeling_exaone4.py:204-207,267-269)"
                                  "; kvlib refuses rather than pick one")
                                 for k, what in (("attention_bias", "q/k/v/o"),
                                                 ("bias", "q/k/v/o"),
                                                 ("mlp_bias", "MLP")))),
    # --- biases everywhere, LayerNorms, plain MLPs ------------------------------------
    "starcoder2": Shape(f"{_T}/starcoder2/modeling_starcoder2.py:57-58,153-156,212-213,323,403"
                        " (use_bias on every linear; LayerNorms)", _BACKEND,
                        qkv_bias=("use_bias", True), o_bias=("use_bias", True), mlp="plain",
                        mlp_names=("c_fc", "c_proj"), mlp_bias=("use_bias", True),
                        norm_bias=True, tied=True),
    "stablelm": Shape(f"{_T}/stablelm/modeling_stablelm.py:146-148,156-161,239-248,327-330,"
                      "410,486 (LayerNorms; per-head q/k LayerNorms without bias with "
                      "qk_layernorm; no post-attention norm with use_parallel_residual)",
                      _BACKEND, qkv_bias=("use_qkv_bias", False), o_bias=False,
                      qk_norm="heads", qk_norm_if=("qk_layernorm", False), mlp_bias=False,
                      more_norms=((("use_parallel_residual", False), -1),), norm_bias=True,
                      head_dim_key=False),
    "phi": Shape(f"{_T}/phi/modeling_phi.py:164-176,243-244,258,325,400 (biases on every "
                 "linear and the head; one LayerNorm per layer; q/k LayerNorms of hd with "
                 "qk_layernorm)", f"{_BACKEND}; the head's bias loaded too "
                 "(transformers/causal.py:69-85)", qkv_bias=True, o_bias=True, o="dense",
                 qk_norm="head", qk_norm_if=("qk_layernorm", False), qk_norm_bias=True,
                 mlp="plain", mlp_names=("fc1", "fc2"), mlp_bias=True, norms=1,
                 norm_bias=True, head_bias=True),
    "gpt_neox": Shape(f"{_T}/gpt_neox/modeling_gpt_neox.py:41-42,181-182,232-233,301,385 "
                      "(fused query_key_value and dense with attention_bias)", _BACKEND,
                      root="gpt_neox", attn="attention", qkv="fused",
                      qkv_names=("query_key_value",) * 3, o="dense",
                      qkv_bias=("attention_bias", True), o_bias=("attention_bias", True),
                      mlp="plain", mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
                      mlp_bias=True, norm_bias=True, head_dim_key=False),
    "gptj": Shape(f"{_T}/gptj/modeling_gptj.py:124-127,195-196,213,276,375 (n_inner, else 4 "
                  "n_embd; one LayerNorm per layer; head with bias)",
                  f"{_V}/gpt_j.py:261 (registry.py:129: the head never tied)",
                  root="transformer", attn="attn", qkv_bias=False, o="out_proj",
                  o_bias=False, mlp="plain", mlp_names=("fc_in", "fc_out"), mlp_bias=True,
                  inter=("n_inner",), inter_x=4, norms=1, norm_bias=True, head_bias=True,
                  head_dim_key=False),
    "bloom": Shape(f"{_T}/bloom/modeling_bloom.py:197-198,321-323,350-353,425-431,570 (fused "
                   "query_key_value, MLP 4 d, LayerNorms, one after the embedding)",
                   f"{_V}/bloom.py:332 (registry.py:84)", root="transformer",
                   attn="self_attention", qkv="fused", qkv_names=("query_key_value",) * 3,
                   o="dense", qkv_bias=True, o_bias=True, mlp="plain",
                   mlp_names=("dense_h_to_4h", "dense_4h_to_h"), mlp_bias=True, inter=(),
                   inter_x=4, norm_bias=True, tied=True, embed_norm=True, head_dim_key=False),
    # --- MoE --------------------------------------------------------------------------
    "granite_swa": Shape(f"{_T}/granite_swa/modeling_granite_swa.py:137-153,227-229,244 "
                         "(Granite's layer with a sink per head)",
                         f"{_V}/granite.py:109,208-223 (registry.py:135: sinks unless "
                         "attention_sinks is false)", tied=True, sinks=("attention_sinks", True)),
    "granitemoe_swa": Shape(f"{_T}/granitemoe_swa/modeling_granitemoe_swa.py:217-233,319-320,"
                            "356-360,493,665 (GraniteMoeShared's layer with a sink per head)",
                            f"{_V}/granitemoeshared.py:1-11, granitemoe.py:195-212 "
                            "(registry.py:134)", sinks=("attention_sinks", True),
                            moe=Moe(("num_local_experts",), width=("intermediate_size",),
                                    block="block_sparse_moe", router="router",
                                    shared="shared_intermediate_size",
                                    shared_name="shared_mlp")),
    "qwen2_moe": Shape(f"{_T}/qwen2_moe/modeling_qwen2_moe.py:222-225,272-281,311-318,332-338,"
                       "354-365,440,596 (qkv bias qkv_bias; shared expert and its gate; "
                       "dense layers by mlp_only_layers / decoder_sparse_step)",
                       f"{_V}/qwen2_moe.py:469 (registry.py:204)",
                       qkv_bias=("qkv_bias", True), o_bias=False,
                       moe=Moe(("num_experts",), shared="shared_expert_intermediate_size",
                               shared_gate=True, dense="qwen")),
    "solar_open": Shape(f"{_T}/solar_open/modeling_solar_open.py:44-52,93-114,185-196,292-301,"
                        "383,454,532 (q/k/v bias attention_bias, o none; every layer MoE: "
                        "n_routed_experts, the router's weight and e_score_correction_bias "
                        "kept in fp32, n_shared_experts x moe_intermediate_size shared)",
                        _FALLBACK, o_bias=False, mlp_bias=False,
                        moe=Moe(("n_routed_experts", "num_local_experts"),
                                shared="x:n_shared_experts", shared_default=1,
                                shared_name="shared_experts", router_fp32=True,
                                score_bias=True)),
    "kolibri1": Shape(f"{_T}/kolibri1/modeling_kolibri1.py:154-160,274-275,307,325-328,453,"
                      "536 (no attention biases, q/k norms of head_dim, 4 norms a layer; every "
                      "layer MoE with an fp32 e_score_correction_bias and a shared expert)",
                      f"{_V}/registry.py:794 (Transformers MoE backend)", qkv_bias=False,
                      o_bias=False, qk_norm="head", norms=4,
                      moe=Moe(("num_local_experts", "num_experts"),
                              shared="shared_expert_intermediate_size",
                              shared_name="shared_experts", score_bias=True)),
    "olmoe": Shape(f"{_T}/olmoe/modeling_olmoe.py:210-226,279-288,318-325,361-362,433,583 "
                   "(q norm d, k norm kv d / h)", _BACKEND, qk_norm="olmoe",
                   moe=Moe(("num_experts",), width=("intermediate_size",))),
    "flex_olmo": Shape(f"{_T}/flex_olmo/modeling_flex_olmo.py:210-223,278,301-302,354-355,428,"
                       "578 (OLMoE's experts with OLMo 2's q/k norms over h hd and kv hd, "
                       "post-attention and post-feedforward norms)",
                       _BACKEND, qk_norm="heads",
                       moe=Moe(("num_experts",), width=("intermediate_size",))),
    "granitemoe": Shape(f"{_T}/granitemoe/modeling_granitemoe.py:113-145,276-287,336-337,404,"
                        "555 (block_sparse_moe: router, experts of intermediate_size)",
                        f"{_V}/granitemoe.py:425 (registry.py:131)",
                        moe=Moe(("num_local_experts",), width=("intermediate_size",),
                                block="block_sparse_moe", router="router")),
    "granitemoeshared": Shape(f"{_T}/granitemoeshared/modeling_granitemoeshared.py:70-86,"
                              "117-149,280-291,335-344,470,621 (shared_mlp of "
                              "shared_intermediate_size unless 0)",
                              f"{_V}/granitemoeshared.py:110-114 (registry.py:133)",
                              moe=Moe(("num_local_experts",), width=("intermediate_size",),
                                      block="block_sparse_moe", router="router",
                                      shared="shared_intermediate_size",
                                      shared_name="shared_mlp")),
}


class _Count:
    """Running count: parts, linears, routed-expert elements not read per token."""

    def __init__(self, c: Fields, family: str):
        self.c, self.family = c, family
        self.parts = dict.fromkeys(PARTS, 0)
        self.linears: list[Linear] = []
        self.fixed: list[Fixed] = []
        self.idle = 0
        self.notes: list[str] = []

    def lin(self, part: str, name: str, i: int, o: int, bias: bool = False, count: int = 1,
            kv_heads: int = 0):
        """A Linear(i -> o): weight (o, i) and bias (o,), ``count`` copies; ``kv_heads``: a
        K or V projection's KV heads (:class:`~kvlib.models.params.tally.Linear`)."""
        self.linears.append(Linear(name, part, i, o, count, kv_heads))
        self.parts[part] += count * (i * o + (o if bias else 0))

    def keep(self, part: str, name: str, elements: int, bytes_per: int = 4,
             whole: bool = True) -> None:
        """A tensor vLLM and transformers keep in fp32 whatever the model's dtype (or, with
        ``bytes_per``, one priced apart: a tower), whole on every TP rank unless ``whole``
        is False."""
        self.fixed.append(Fixed(name, part, elements, bytes_per, whole))
        self.parts[part] += elements

    def switch(self, s: Switch) -> bool:
        if isinstance(s, bool):
            return s
        key, default = s
        v = self.c.flag(key)
        return default if v is None else v


def _layer_set(c: Fields, key: str, n: int) -> set[int]:
    v = c.data.get(key)
    if v is None:
        return set()
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                      or not 0 <= x < n for x in v):
        raise ValueError(f"{c.path(key)} must list layer indices below {n}, got "
                         f"{describe(v)[:80]}")
    return set(v)


def _mlp(t: _Count, s: Shape, p: str, d: int, i: int, part: str = "mlp",
         bias: bool = False, names: tuple[str, ...] | None = None) -> None:
    names = names or s.mlp_names
    kind = s.mlp if names is s.mlp_names else "glu"
    if kind == "glu":
        g, u, dn = names
        t.lin(part, f"{p}.{g}", d, i, bias)
        t.lin(part, f"{p}.{u}", d, i, bias)
        t.lin(part, f"{p}.{dn}", i, d, bias)
    elif kind == "glu_fused":
        t.lin(part, f"{p}.{names[0]}", d, 2 * i, bias)
        t.lin(part, f"{p}.{names[1]}", i, d, bias)
    else:
        t.lin(part, f"{p}.{names[0]}", d, i, bias)
        t.lin(part, f"{p}.{names[1]}", i, d, bias)


def _moe(t: _Count, s: Shape, m: Moe, p: str, d: int) -> None:
    c = t.c
    e, k, w = c.int(*m.experts), c.int(*m.top_k), c.int(*m.width)
    if k > e:
        raise ValueError(f"{c.path(c.first(*m.top_k))}={k} exceeds the {e} experts "
                         f"({c.path(c.first(*m.experts))})")
    b = f"{p}.{m.block}"
    before = t.parts["experts"]
    for name, a, o in (("gate_proj", d, w), ("up_proj", d, w), ("down_proj", w, d)):
        t.lin("experts", f"{b}.experts.{name}", a, o, False, e)
    t.idle += (t.parts["experts"] - before) * (e - k) // e
    if m.router_fp32:
        t.keep("router", f"{b}.{m.router}.weight", e * d)
    else:
        t.lin("router", f"{b}.{m.router}", d, e)
    if m.score_bias:
        t.keep("router", f"{b}.{m.router}.e_score_correction_bias", e)
    if m.shared.startswith("x:"):
        key = m.shared[2:]
        many = c.int(key, required=False, allow_zero=True)
        if many is None:
            many = m.shared_default
            t.notes.append(f"no {key}: {t.family}'s config class default {many}")
        width = w * many
    elif m.shared:
        width = c.int(m.shared, allow_zero=True)
    if m.shared:
        if width:
            q = f"{p}.{m.shared_name}" if m.block != "mlp" else f"{b}.{m.shared_name}"
            _mlp(t, s, q, d, width, "shared_experts", names=("gate_proj", "up_proj",
                                                               "down_proj"))
            if m.shared_gate:
                t.lin("router", f"{b}.shared_expert_gate", d, 1)


def _dense_width(t: _Count, s: Shape, d: int) -> int:
    """The dense MLP's width: its key, else ``inter_x`` x hidden_size (said in the notes)."""
    c = t.c
    width = c.int(*s.inter, required=not s.inter_x) if s.inter else None
    if width is None:
        width = s.inter_x * d
        t.notes.append(f"MLP width {s.inter_x} x hidden_size = {width} ({t.family}'s default)")
    return width


def _is_moe(t: _Count, m: Moe, i: int, n: int) -> bool:
    c = t.c
    if m.dense == "qwen":
        only = _layer_set(c, "mlp_only_layers", n)
        step = c.int("decoder_sparse_step", required=False) or 1
        return i not in only and (i + 1) % step == 0
    return True


def count_by_shape(config: Mapping) -> ParamCount | None:
    """Count ``config`` (a config.json's dict) by its family's row in :data:`SHAPES`, or a
    wrapper's text model by its row and its tower by :data:`WRAPPERS`.

    Returns a ParamCount (elements per part, every linear weight, ``active`` = all but the
    routed experts a token does not read and the tower), or None when the ``model_type``
    has no row. Shapes: embedding (V, d); per layer q (d -> h hd), k and v (d -> kv hd), o
    (h hd -> d), the MLP (d -> i -> d), experts E x (gate and up d -> w, down w -> d), norms
    (d each).
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a JSON object, got {describe(config)}")
    family = config.get("model_type")
    if isinstance(family, str) and family in WRAPPERS:
        return _count_wrapper(config, family, WRAPPERS[family])
    if not isinstance(family, str) or family not in SHAPES:
        return None
    t = _Count(Fields(config), family)
    _decoder(t, SHAPES[family])
    return _result(t, family)


def _result(t: _Count, model_type: str, towers: str = "none") -> ParamCount:
    active = sum(t.parts.values()) - t.parts["vision"] - t.idle
    return ParamCount(model_type, dict(t.parts), active, tuple(t.linears), towers=towers,
                      notes=tuple(t.notes), fixed=tuple(t.fixed))


def _decoder(t: _Count, s: Shape, root: str = "", tied: bool | None = None) -> None:
    """Add the decoder of row ``s`` (the embedding, the layers, the final norm, the head)
    read from ``t.c`` to ``t``; its layers under ``root`` (the row's own by default), its
    head tied by ``tied`` where given (a wrapper's), else by the config's flag."""
    c, family = t.c, t.family
    d = c.int("hidden_size", "n_embd", "n_embed")
    n = c.int(*s.layer_keys)
    h = c.int("num_attention_heads", "n_head")
    for key, bad, why in s.refuse:
        if c.data.get(key) == bad:
            raise ValueError(f"{c.path(key)}={describe(bad)}: {why}")
    kv = c.int("num_key_value_heads", required=False)
    if kv is None:
        kv = take("num_key_value_heads", c, t.notes) or h
    if h % kv:
        raise ValueError(f"{c.path('num_attention_heads')}={h} is not a multiple of "
                         f"{c.path('num_key_value_heads')}={kv}")
    hd = c.int("head_dim", required=s.hd_required,
               why=f"transformers builds {family} from it") if s.head_dim_key else None
    if hd is None and s.head_dim_key:
        hd = take("head_dim", c, t.notes)
    if hd is None:
        if d % h:
            raise ValueError(f"{c.path('hidden_size')}={d} is not divisible by "
                             f"{c.path('num_attention_heads')}={h}; the config needs a head_dim")
        hd = d // h
    v = c.int("vocab_size")
    inter = 0  # the dense MLP's width, read when a layer has one
    if tied is None:
        tie = c.flag("tie_word_embeddings")
        tied = s.tied if tie is None else tie
    qkv_b, o_b, mlp_b = t.switch(s.qkv_bias), t.switch(s.o_bias), t.switch(s.mlp_bias)
    if family == "internlm3" and qkv_b != mlp_b:  # configuration_internlm3.py:99-103
        raise ValueError(f"qkv_bias={qkv_b} differs from bias={mlp_b}: InternLM3Config "
                         "rejects it (configuration_internlm3.py:99-103)")
    qk = s.qk_norm if t.switch(s.qk_norm_if) else ""
    sinks = t.switch(s.sinks)
    if not sinks and s.sinks:
        t.notes.append("attention_sinks=False: vLLM 0.34.0 builds no sinks (granite.py:109), "
                       "though transformers' module has them")
    nb = 2 if s.norm_bias else 1
    root = root or s.root
    t.parts["embedding"] += v * d
    if s.embed_norm:
        t.parts["norms"] += 2 * d
    for i in range(n):
        p = f"{root}.{'h' if root == 'transformer' else 'layers'}.{i}"
        a = f"{p}.{s.attn}"
        if s.qkv == "fused":
            t.lin("attention", f"{a}.{s.qkv_names[0]}", d, (h + 2 * kv) * hd, qkv_b)
        else:
            q, k_, v_ = s.qkv_names
            t.lin("attention", f"{a}.{q}", d, h * hd, qkv_b)
            t.lin("attention", f"{a}.{k_}", d, kv * hd, qkv_b, kv_heads=kv)
            t.lin("attention", f"{a}.{v_}", d, kv * hd, qkv_b, kv_heads=kv)
        t.lin("attention", f"{a}.{s.o}", d if s.o_from_hidden else h * hd, d, o_b)
        t.parts["attention"] += h if sinks else 0
        qb = 2 if s.qk_norm_bias else 1
        # q/k norms over head_dim, one pair shared by every head, are norms: whole on every
        # TP rank (vLLM's RMSNorm(head_dim), e.g. exaone4.py:166-167), as the tally's are
        # (params/tally.py _gqa); those over the heads stay with the attention
        t.parts["norms" if qk == "head" else "attention"] += qb * {
            "": 0, "head": 2 * hd, "heads": (h + kv) * hd, "olmoe": d + kv * (d // h)}[qk]
        if s.moe is not None and _is_moe(t, s.moe, i, n):
            _moe(t, s, s.moe, p, d)
        else:
            inter = inter or _dense_width(t, s, d)
            _mlp(t, s, f"{p}.mlp", d, inter, bias=mlp_b)
        norms = s.norms + sum(k for sw, k in s.more_norms if t.switch(sw))
        t.parts["norms"] += nb * norms * d
        t.parts["mlp"] += s.scalars
    if s.final_norm:
        t.parts["norms"] += nb * d
    if s.vllm_tied and not tied:
        t.notes.append(f"tie_word_embeddings=False, but vLLM 0.34.0 reads the embedding as "
                       f"the head and loads no lm_head ({s.vllm})")
    if not (tied or s.vllm_tied):
        t.lin("lm_head", "lm_head", d, v, s.head_bias)
    elif s.head_bias:  # a tied head keeps its own bias (V,)
        t.parts["lm_head"] += v


# --- multimodal wrappers whose text model is a row of SHAPES ------------------------------


def _exaone4_5_vision(v: Fields, notes: list[str]) -> tuple[int, int]:
    """EXAONE 4.5's vision tower and projector, elements (vLLM 0.34.0 exaone4_5.py:69-124,
    209-307 on qwen2_5_vl.py:540-620,667-719; transformers 5.25.0 modeling_exaone4_5.py:53-68,
    160-170,234-249,323-343,545-557) as (held whole by every TP rank, split by TP). Shapes,
    d = ``hidden_size``, h heads of hd = d / h, kv KV heads, i = ``intermediate_size``,
    m = ``spatial_merge_size``:

    * patch embedding: Conv3d (in_channels x temporal_patch_size x p x p -> d), no bias;
    * ``depth`` blocks: RMSNorms norm1, norm2 (d each); qkv d -> (h + 2 kv) hd and proj
      d -> d, with biases (GQA: exaone4_5.py:104-121); a gated MLP d -> i -> d with biases
      (vLLM's Exaone4GatedMLP, gate_up fused: the same elements);
    * merger: RMSNorm ln_q (d), m^2 d -> m^2 d and m^2 d -> ``out_hidden_size``, with biases.

    Whole on every rank: the patch embedding (Conv3dLayer, not parallel), the RMSNorms and the
    biases of the row-parallel layers (proj, down_proj, mlp.2); the rest is split by TP
    (QKV / column / row-parallel, the tower's ``mm_encoder_tp_mode`` default "weights":
    exaone4_5.py:341, config/multimodal.py:384). The rotary tables are buffers neither
    engine loads. A key the file omits takes Exaone4_5_VisionConfig's default
    (configuration_exaone4_5.py:45-59), said in ``notes``; the four that size the tower
    (depth, hidden_size, intermediate_size, num_heads) must be given."""
    d = v.int("hidden_size")
    i = v.int("intermediate_size")
    h = v.int("num_heads", "num_attention_heads")
    depth = v.int("depth", "num_hidden_layers")

    def opt(key: str, default: int, line: int) -> int:
        got = v.int(key, required=False)
        if got is None:
            notes.append(f"no {v.path(key)}: Exaone4_5_VisionConfig's default {default} "
                         f"(configuration_exaone4_5.py:{line}), as both engines read it")
            return default
        return got

    kv, p = opt("num_key_value_heads", 8, 59), opt("patch_size", 14, 51)
    tp, chans = opt("temporal_patch_size", 2, 53), opt("in_channels", 3, 50)
    m, out = opt("spatial_merge_size", 2, 52), opt("out_hidden_size", 3584, 55)
    if d % h:
        raise ValueError(f"{v.path('hidden_size')}={d} is not divisible by "
                         f"{v.path('num_heads')}={h}: vLLM 0.34.0 divides it "
                         "(exaone4_5.py:88-90)")
    if h % kv:
        raise ValueError(f"{v.path('num_heads')}={h} is not a multiple of "
                         f"{v.path('num_key_value_heads')}={kv}")
    hd, w = d // h, d * m * m
    whole = chans * tp * p * p * d + depth * (2 * d + d + d) + d + out
    split = depth * ((d + 1) * (h + 2 * kv) * hd + d * d + 2 * (d + 1) * i + i * d) \
        + (w + 1) * w + w * out
    return whole, split


@dataclass(frozen=True)
class Wrapper:
    """A multimodal wrapper whose ``text_config`` is a :data:`SHAPES` row. text: that row;
    text_types: the text_config ``model_type`` values the wrapper's config class accepts
    (read as ``text``); root: where the checkpoint keeps the text model's layers; tower:
    (``vision_config`` Fields, notes) -> elements of the tower and projector as vLLM 0.34.0
    loads them, (held whole by every TP rank, split by TP), kept in the model dtype; cite /
    vllm: transformers 5.25.0 and vLLM 0.34.0 file:line; tied: the wrapper class's
    tie_word_embeddings default (the flag both engines tie the head by);
    notes: what is always said (what neither engine loads)."""

    text: str
    text_types: tuple[str, ...]
    root: str
    tower: Callable[[Fields, list[str]], tuple[int, int]]
    cite: str
    vllm: str
    tied: bool = False
    notes: tuple[str, ...] = ()


WRAPPERS: dict[str, Wrapper] = {
    "exaone4_5": Wrapper(
        "exaone4", ("exaone4_5_text", "exaone4"), "model.language_model", _exaone4_5_vision,
        f"{_T}/exaone4_5/configuration_exaone4_5.py:66-82 (text_config: exaone4, the "
        "exaone4_5_text of the first release renamed to it), modeling_exaone4_5.py:641-642,"
        "808,818 (visual, language_model built as exaone4, lm_head tied by the wrapper's "
        "tie_word_embeddings, default False: configuration_exaone4_5.py:75)",
        f"{_V}/exaone4_5.py:326-368 (registry.py:411-414: visual as above, language_model "
        "Exaone4ForCausalLM from the text config, exaone4_5.py:359-364)",
        notes=("the checkpoint's mtp.* layers (text_config.num_nextn_predict_layers) are not "
               "counted: vLLM 0.34.0 drops them (exaone4_5.py:327-329) unless it serves them "
               "as a draft (exaone4_5_mtp.py), and transformers builds none "
               "(modeling_exaone4_5.py:526)",)),
}


def _count_wrapper(config: Mapping, family: str, w: Wrapper) -> ParamCount:
    """A wrapper's text model by its row (from ``text_config``, renamed to the row as its
    config class does) plus its vision tower; towers "counted"."""
    outer = Fields(config)
    text = outer.data.get("text_config")
    if not isinstance(text, Mapping):
        raise ValueError(f"{family}: text_config must be a JSON object, got {describe(text)}")
    kind = text.get("model_type")
    if kind not in w.text_types:
        raise ValueError(f"text_config.model_type={describe(kind)}: {family}'s config class "
                         f"reads {' or '.join(w.text_types)} ({w.cite})")
    vision = outer.data.get("vision_config")
    if not isinstance(vision, Mapping):
        raise ValueError(f"{family}: vision_config must be a JSON object, got "
                         f"{describe(vision)}")
    t = _Count(Fields({**text, "model_type": w.text}, "text_config.", outer), w.text)
    # the head is tied by the wrapper's flag in both engines: transformers' lm_head is the
    # wrapper's (modeling_exaone4_5.py:808,818), and vLLM copies the wrapper's flag into the
    # text config it builds the language model from (config/vllm.py:973-977, through
    # utils.py:707-708 with_hf_config); the text config's own flag is read by neither
    tie = outer.flag("tie_word_embeddings")
    tied = w.tied if tie is None else tie
    inner = t.c.flag("tie_word_embeddings")
    if inner is not None and inner != tied:
        t.notes.append(f"text_config.tie_word_embeddings={inner} is overridden by the "
                       f"wrapper's {tied} (vLLM 0.34.0 config/vllm.py:973-977; transformers "
                       f"ties {family}'s head by the wrapper's flag)")
    _decoder(t, SHAPES[w.text], w.root, tied)
    from kvlib.models.readers.state import model_dtype_bytes  # as the tally's, lazily

    b = model_dtype_bytes(t.c, [])
    b = 2 if b == 4 else b  # an fp32 file loads in bf16 (vLLM's dtype "auto")
    whole, split = w.tower(Fields(vision, "vision_config.", outer), t.notes)
    t.keep("vision", "vision tower (whole on every rank)", whole, b)
    t.keep("vision", "vision tower (split by TP)", split, b, whole=False)
    t.notes.extend(w.notes)
    return _result(t, family, "counted")
