"""TensorRT-LLM's KV token count, traced by hand from its source on every bundled model kvlib
plans for it (issue 35), beside ``kvlib plan --engine trtllm``.

No TensorRT-LLM wheel could be obtained (PyPI holds a stub; pypi.nvidia.com does not resolve
from here), so unlike SGLang's oracle nothing is lifted: the arithmetic below is written out
from NVIDIA/TensorRT-LLM as stored (commit 0004396720054fd8e205cbf616f21f0b57c6b412 for
``_util.py``; ``resource_manager.py`` as stored at 001541bad83b), and reads each model's
config.json itself, not kvlib's model:

* ``tensorrt_llm/_torch/pyexecutor/resource_manager.py``,
  ``KVCacheManager.get_cache_size_per_token``:
  num_key_value_heads = getattr(config, 'num_key_value_heads', config.num_attention_heads);
  MLA (a config with kv_lora_rank): head_dim = kv_lora_rank + qk_rope_head_dim, kv_factor 1;
  else head_dim = (config.head_dim if an int else hidden_size // num_attention_heads)
  x num_key_value_heads // tp_size, kv_factor 2; mem_per_token = kv_factor x layers x head_dim,
  x 1 byte for an fp8 cache, 2 otherwise.
* ``tensorrt_llm/_torch/pyexecutor/_util.py``, ``KvCacheCreator._cal_max_memory``:
  available_kv_mem = (total_gpu_memory - peak_memory + allocated_bytes) * fraction (a Python
  float; fraction 0.9 held as a float32), max_tokens = int(available_kv_mem // kv_size_per_token).
* Blocks of ``tokens_per_block`` = 32; the count in "Allocated ... for max tokens in paged KV cache
  (N)" is max_tokens rounded up to whole blocks (docs: kvlib/serving/engines/trtllm/).

Windowed models (gpt-oss, Gemma 2/3, Mistral, Llama 4) are compared here too: TensorRT-LLM holds
every layer at full length unless ``max_attention_window`` is set, so their cell is every layer's
(the VSWA split, the Mamba hybrids and the fp8 MLA workspace: tests/test_trtllm_vswa_mamba.py).

kvlib supplies only what TensorRT-LLM would measure: the CUDA total, the weights per GPU and the
rest of the profiling peak (``--trtllm-peak-gib``)."""

import re

import pytest
from engine_fit import float32 as _float32
from engine_fit import smallest_tp

from kvlib.models.catalog import BUNDLED, bundled_config
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines.trtllm import TRTLLM_OTHER_PEAK

GPU = "H200"
CONTEXT = 8192
BLOCK = 32

# Bundled models kvlib refuses for TensorRT-LLM, with the words of the refusal
REFUSED = {
    "gemma-4-26b-a4b": "per-kind head sizes",
    "mimo-v2-flash": "K and V head sizes differ",
    "falcon-7b": "no num_key_value_heads",
    "qwen3-next-80b-a3b": "Gated DeltaNet state layers",
    "qwen3.5-27b": "Gated DeltaNet state layers",
    "qwen3.6-35b-a3b": "Gated DeltaNet state layers",
    "nemotron-3-ultra-550b-a55b": "without a hybrid_override_pattern",
    "llama-3.3-nemotron-super-49b": "layers that keep no cache",
    "gemma-3n-e4b": "layers that keep no cache",
    "deepseek-v3.2": "sparse-attention indexer",
    "glm-5": "sparse-attention indexer",
    "glm-5.2": "sparse-attention indexer",
    "deepseek-v4-flash": "Compressor state layers",
    "deepseek-v4-pro": "Compressor state layers",
}
# Mamba hybrids: their cell counts the attention layers only and their state comes off the
# budget first (traced by hand in tests/test_trtllm_vswa_mamba.py)
HYBRIDS = {"nemotron-h-56b", "nemotron-3-nano-30b-a3b"}
COMPARED = sorted(set(BUNDLED) - set(REFUSED) - HYBRIDS)
# transformers' attribute_map (GPT2Config): TensorRT-LLM reads the config through transformers
_GPT2 = {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer",
         "hidden_size": "n_embd"}


def cache_size_per_token(config: dict, tp: int, b: int = 2) -> int:
    """get_cache_size_per_token, by hand, from a config.json dict."""
    config = dict(config.get("text_config") or config)
    for attr, key in _GPT2.items():
        config.setdefault(attr, config.get(key))
    layers = config["num_hidden_layers"]
    if config.get("kv_lora_rank") is not None:
        return 1 * layers * (config["kv_lora_rank"] + config["qk_rope_head_dim"]) * b
    heads = config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim")
    if not isinstance(head_dim, int):
        head_dim = config["hidden_size"] // config["num_attention_heads"]
    return 2 * layers * (head_dim * heads // tp) * b


def trtllm_tokens(total: int, weights: int, other_peak: int, cell: int) -> int:
    """_cal_max_memory with peak - allocated = weights + the rest of the peak, then whole
    32-token blocks."""
    available = (total - (weights + other_peak)) * _float32(0.9)
    max_tokens = int(available // cell)
    return -(-max_tokens // BLOCK) * BLOCK


def _tp(name: str) -> int:
    return smallest_tp(name, "trtllm", GPU, CONTEXT)


def test_every_bundled_model_is_compared_or_refused():
    assert set(REFUSED) <= set(BUNDLED)
    for name, words in REFUSED.items():
        with pytest.raises(ValueError, match=re.escape(words)) as err:
            engine_tokens(name, GPU, "trtllm", tp=1, context=CONTEXT)
        assert name in str(err.value)


@pytest.mark.parametrize("name", COMPARED)
def test_trtllm_tokens_are_kvlibs(name):
    tp = _tp(name)
    ours = engine_tokens(name, GPU, "trtllm", tp=tp, context=CONTEXT)
    cell = cache_size_per_token(bundled_config(name), tp)
    assert ours.cell == cell, name
    theirs = trtllm_tokens(ours.total_memory, ours.weights, TRTLLM_OTHER_PEAK, cell)
    assert ours.page == BLOCK
    assert abs(ours.tokens - theirs) < BLOCK, name
    assert ours.tokens == theirs, name  # the float product lands in the same block here


def test_cells_worked_by_hand():
    """The per-token cell written out from three config.json files."""
    # Llama 3.1 70B: 80 layers, 8 KV heads of 128, TP 2: 2 x 80 x (128 x 8 // 2) x 2 B
    assert cache_size_per_token(bundled_config("llama-3.1-70b"), 2) == 2 * 80 * 512 * 2
    # DeepSeek V3: MLA, 61 layers x (512 + 64) x 2 B, whatever the TP
    assert cache_size_per_token(bundled_config("deepseek-v3"), 8) == 61 * 576 * 2 == 70272
    # GPT-2: n_head 12, n_layer 12, n_embd 768: head_dim 64, 2 x 12 x 768 x 2 B
    assert cache_size_per_token(bundled_config("gpt2"), 1) == 36864
