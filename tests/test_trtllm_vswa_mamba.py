"""TensorRT-LLM's sliding windows, Mamba hybrids and fp8 context-MLA workspace (issue 41 item 4),
traced by hand from its source, beside ``kvlib plan --engine trtllm``.

No TensorRT-LLM wheel can be installed here, so, as in tests/test_trtllm_hand_trace.py, each
rule is written out below from NVIDIA/TensorRT-LLM's files as the search store holds them
(kvlib/serving/engines/trtllm/sources.py names each file and commit) and fed each model's own
config.json, not kvlib's model:

* windows (gpt-oss, Gemma 3): ``KVCacheManager`` (resource_manager.py@001541bad83b) has one
  window, max_seq_len, unless ``kv_cache_config.max_attention_window`` is set; _util.py at
  0004396720054f derives windows from ``layer_types`` only for ``KVCacheManagerV2``. So every
  layer is held at full length, as TensorRT-LLM 1.1.0rc3's own logs show for gpt-oss. With
  ``max_attention_window`` set (VSWA), ``calculate_max_num_blocks_for_vswa`` gives each window
  size an equal share: ``int(pool * (1.0 / n_windows) / cell_w // tokens_per_block)`` blocks.
* Mamba (Nemotron-H): ``_estimate_mamba_hybrid_cache_cost`` (mamba common.py@28295084972c):
  slope = the attention layers' cell, intercept = (max_batch_size + 1) x Mamba layers x
  ``get_states_bytes_per_layer``; max_tokens = max((budget - intercept) // slope, 0).
* fp8 context-MLA (DeepSeek V3): ``get_mla_context_workspace_reserve`` (_util.py):
  reserve = min(w x min(max_batch_size, max_num_tokens) x max_seq_len, budget x w / (k + w)),
  w = (num_attention_heads // TP) x (qk_rope + qk_nope + v_head_dim) (attentionOp.cpp), on SM
  90/100/103/107/120 with an fp8 cache.
"""

import pytest
from engine_fit import float32
from hypothesis import given
from hypothesis import strategies as st

from kvlib.models.catalog import bundled_config
from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines.trtllm import TRTLLM_OTHER_PEAK
from kvlib.serving.engines.trtllm.planner import RELEASES, resolve_release
from kvlib.serving.engines.trtllm.pools import tokens as pool_tokens

BLOCK = 32
GiB = 1 << 30


def budget(total: int, weights: int) -> int:
    """_cal_max_memory: int((total - peak + temporary) x float32(0.9))."""
    return int((total - (weights + TRTLLM_OTHER_PEAK)) * float32(0.9))


def round_up(tokens: int) -> int:
    return -(-tokens // BLOCK) * BLOCK


# --- windows: full length (both releases) --------------------------------------------------

def test_rc3_logs_size_every_gpt_oss_layer_at_full_length():
    """TensorRT-LLM 1.1.0rc3's "[MemUsageChange] Allocated X GiB for max tokens in paged KV
    cache (N)": X = N x the cell over every layer, the sliding ones included."""
    c20 = bundled_config("gpt-oss-20b")
    # 24 layers x K and V x 8 KV heads x head_dim 64 x 2 B: no layer held at its 128 window
    cell20 = c20["num_hidden_layers"] * 2 * c20["num_key_value_heads"] * c20["head_dim"] * 2
    assert cell20 == 24 * 2 * 8 * 64 * 2 == 49_152
    assert f"{4128 * cell20 / GiB:.2f}" == "0.19"  # the DGX Spark log's 0.19 GiB, (4128)
    c120 = bundled_config("gpt-oss-120b")
    cell120 = c120["num_hidden_layers"] * 2 * c120["num_key_value_heads"] * c120["head_dim"] * 2
    assert cell120 == 36 * 2 * 8 * 64 * 2 == 73_728
    assert f"{86720 * cell120 / GiB:.2f}" == "5.95"
    # its max_tokens 86,711 comes out in whole 32-token blocks: 2,710 x 32 = 86,720
    assert pool_tokens(86711 * cell120, cell120)[2] == 86720
    # the sliding layers' windows would have saved 12 of 24 layers' bytes past 128 tokens
    assert c20["layer_types"].count("sliding_attention") == 12


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("name", ["gpt-oss-20b", "gpt-oss-120b", "gemma-3-27b"])
def test_windowed_models_plan_at_full_length(name, release):
    p = engine_tokens(name, "H200", "trtllm", tp=1, context=8192, release=release)
    c = bundled_config(name)
    t = c.get("text_config") or c
    cell = t["num_hidden_layers"] * 2 * t["num_key_value_heads"] * t["head_dim"] * 2
    assert p.cell == cell
    assert p.tokens == round_up(budget(p.total_memory, p.weights) // cell)
    assert p.sessions == min(2048, p.tokens // 8192)
    assert "full length" in p.window_pool


def test_release_names():
    assert resolve_release(None) == resolve_release("0004396") == resolve_release(
        "0004396720054fd8e205cbf616f21f0b57c6b412")
    assert resolve_release("1.1.0rc3") == "1.1.0rc3"
    with pytest.raises(ValueError, match="000439672005 .*1.1.0rc3"):
        resolve_release("1.0.0")
    p = engine_tokens("gpt-oss-20b", "H200", "trtllm", tp=1, context=8192, release="1.1.0rc3")
    assert p.release == "1.1.0rc3"
    assert engine_tokens("gpt-oss-20b", "H200", "trtllm", tp=1,
                         context=8192).release == "at 000439672005"


# --- windows: VSWA's equal split -------------------------------------------------------------

def gemma3_windows(context: int) -> dict[int, int]:
    """Window -> layers for Gemma 3 27B: transformers' Gemma3TextConfig default
    sliding_window_pattern 6 (layer i global when (i + 1) % 6 == 0), sliding_window from the
    config, each window clamped to max_seq_len = the context."""
    t = bundled_config("gemma-3-27b")["text_config"]
    n = t["num_hidden_layers"]
    glob = sum((i + 1) % 6 == 0 for i in range(n))
    return {min(context, t["sliding_window"]): n - glob, context: glob}


def test_gemma3_vswa_split_by_hand():
    context = 8192
    windows = gemma3_windows(context)
    assert windows == {1024: 52, 8192: 10}
    t = bundled_config("gemma-3-27b")["text_config"]
    # calculate_cache_size_per_token: layers x ceil(16 / TP) x kv_factor 2 x head_size, x 2 B
    cells = {w: layers * -(-t["num_key_value_heads"] // 1) * 2 * t["head_dim"] * 2
             for w, layers in windows.items()}
    assert cells == {1024: 52 * 16 * 2 * 128 * 2, 8192: 81_920}
    p = engine_tokens("gemma-3-27b", "H200", "trtllm", tp=1, context=context, vswa=True)
    pool = budget(p.total_memory, p.weights)
    share = 1.0 / len(windows)
    blocks = {w: int(pool * share / cells[w] // BLOCK) for w in windows}
    assert dict(p.extras)["blocks_window_1024"] == blocks[1024]
    assert dict(p.extras)["blocks_window_8192"] == blocks[8192]
    assert [row[1] for row in p.pools] == [blocks[1024] * BLOCK, blocks[8192] * BLOCK]
    # a request needs ceil(min(C, w) / 32) blocks in each window's pool
    assert p.sessions == min(blocks[1024] // (1024 // BLOCK), blocks[8192] // (8192 // BLOCK))
    full = engine_tokens("gemma-3-27b", "H200", "trtllm", tp=1, context=context)
    assert p.sessions > 3 * full.sessions  # the windows' saving, once max_attention_window is set
    assert any("max_attention_window set" in note for note in full.notes)


def test_vswa_shrinking_windows_is_refused_by_name():
    """One sequence of every window past the pool: adjust_window_sizes_for_vswa, not traced."""
    with pytest.raises(ValueError, match="adjust_window_sizes_for_vswa"):
        engine_tokens("gemma-3-27b", "H200", "trtllm", tp=1, context=131072, vswa=True,
                      free_gpu_memory_fraction=0.01)


@given(pool=st.integers(1 << 20, 1 << 40), heads=st.integers(1, 16), tp=st.sampled_from([1, 2, 4]),
       local=st.integers(1, 60), glob=st.integers(1, 20))
def test_vswa_each_window_stays_within_its_share(pool, heads, tp, local, glob):
    """Each window's blocks x block x cell_w <= pool / 2, so the pools together fit the pool."""
    from kvlib.core.numeric import evaluate
    from kvlib.serving.engines.trtllm.windows import BLOCKS_W, CELL_W
    total = 0
    for layers in (local, glob):
        cell = evaluate(CELL_W, L_w=layers, N_kv=heads, TP=tp, d_QK=128, b=2)
        blocks = evaluate(BLOCKS_W, B_KV=pool, N_w=2, L_w=layers, N_kv=heads, TP=tp, d_QK=128,
                          b=2, n=BLOCK)
        assert 2 * blocks * BLOCK * cell <= pool
        total += blocks * BLOCK * cell
    assert total <= pool


# --- Mamba hybrids ---------------------------------------------------------------------------

def nemotron_state_per_layer(config: dict, tp: int) -> int:
    """get_states_bytes_per_layer from a Nemotron-H config.json."""
    d_inner = config["mamba_head_dim"] * config["mamba_num_heads"]
    conv_dim = (d_inner + 2 * config["n_groups"] * config["ssm_state_size"]) // tp
    b_c = 2  # torch_dtype bfloat16
    b_s = {"float32": 4, None: 2}[config.get("mamba_ssm_cache_dtype")]
    conv = conv_dim * (config["conv_kernel"] - 1) * b_c
    ssm = (config["mamba_num_heads"] // tp) * config["mamba_head_dim"] * config[
        "ssm_state_size"] * b_s
    return conv + ssm


def test_nemotron_h_state_by_hand():
    c = bundled_config("nemotron-h-56b")
    assert c["torch_dtype"] == "bfloat16" and "mamba_ssm_cache_dtype" not in c
    # conv_dim (64 x 256 + 2 x 8 x 256) // 2 = 10,240; x 3 x 2 B = 61,440; SSM 128 x 64 x 256 x 2 B
    assert nemotron_state_per_layer(c, 2) == 61_440 + 4_194_304 == 4_255_744
    assert c["hybrid_override_pattern"].count("M") == 54
    assert c["hybrid_override_pattern"].count("*") == 10
    nano = bundled_config("nemotron-3-nano-30b-a3b")
    # fp32 SSM state (its config's mamba_ssm_cache_dtype): 6,144 x 3 x 2 + 64 x 64 x 128 x 4
    assert nemotron_state_per_layer(nano, 1) == 36_864 + 2_097_152


@pytest.mark.parametrize("name,tp,batch", [("nemotron-h-56b", 2, 8), ("nemotron-h-56b", 2, 64),
                                           ("nemotron-3-nano-30b-a3b", 1, 32)])
def test_nemotron_h_tokens_by_hand(name, tp, batch):
    c = bundled_config(name)
    pattern = c["hybrid_override_pattern"]
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    slope = 2 * pattern.count("*") * (head_dim * c["num_key_value_heads"] // tp) * 2
    intercept = (batch + 1) * pattern.count("M") * nemotron_state_per_layer(c, tp)
    p = engine_tokens(name, "H200", "trtllm", tp=tp, context=8192, max_batch_size=batch)
    pool = budget(p.total_memory, p.weights)
    max_tokens = max((pool - intercept) // slope, 0)
    assert p.cell == slope
    assert p.tokens == round_up(max_tokens)
    assert p.sessions == min(batch, p.tokens // 8192)
    assert f"{batch + 1:,} slots" in p.state_pool


def test_nemotron_h_default_batch_leaves_no_tokens():
    """max_batch_size 2,048 (trtllm-serve's default) reserves 2,049 x 54 x 4,255,744 B of state
    per rank at TP 2, about 438 GiB: more than an H200 holds, so no token is left."""
    p = engine_tokens("nemotron-h-56b", "H200", "trtllm", tp=2, context=8192)
    assert 2049 * 54 * 4_255_744 == 470_881_050_624
    assert dict((t[0], t[1]) for t in p.terms)["Mamba state, 2,049 slots"] == 470_881_050_624
    assert p.tokens == 0 and p.sessions == 0
    # the largest batch S with S requests beside S + 1 slots: S (state + 8,192 x cell) <=
    # budget - state
    pool = budget(p.total_memory, p.weights)
    s = 54 * 4_255_744
    fit = (pool - s) // (s + 8192 * 20_480)
    assert any(f"{fit:,}" in note for note in p.notes)
    ok = engine_tokens("nemotron-h-56b", "H200", "trtllm", tp=2, context=8192,
                       max_batch_size=fit)
    assert ok.sessions == fit
    short = engine_tokens("nemotron-h-56b", "H200", "trtllm", tp=2, context=8192,
                          max_batch_size=fit + 1)
    assert short.sessions < fit + 1


@given(batch=st.integers(1, 2048))
def test_mamba_state_and_tokens_fit_the_budget(batch):
    p = engine_tokens("nemotron-3-nano-30b-a3b", "H200", "trtllm", tp=1, context=4096,
                      max_batch_size=batch)
    pool = budget(p.total_memory, p.weights)
    state = (batch + 1) * 23 * 2_134_016
    # max_tokens (before block rounding) x cell + the state never exceeds the budget
    assert (dict(p.extras)["max_tokens"]) * p.cell + state <= pool or p.tokens == 0


def test_mamba_refused_at_rc3():
    with pytest.raises(ValueError, match="1.1.0rc3's Mamba state budget"):
        engine_tokens("nemotron-h-56b", "H200", "trtllm", tp=2, context=8192,
                      release="1.1.0rc3")


# --- fp8 context-MLA workspace ---------------------------------------------------------------

def test_deepseek_v3_fp8_mla_reserve_by_hand():
    c = bundled_config("deepseek-v3")
    tp, context = 8, 8192
    k = c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 1  # fp8
    w = (c["num_attention_heads"] // tp) * (c["qk_rope_head_dim"] + c["qk_nope_head_dim"]
                                            + c["v_head_dim"])
    assert (k, w) == (35_136, 16 * 320)
    p = engine_tokens("deepseek-v3", "H200", "trtllm", tp=tp, context=context, kv_dtype="fp8")
    pool = budget(p.total_memory, p.weights)
    # TensorRT-LLM's own float arithmetic
    reserve = min(w * min(2048, 8192) * context, pool * w / (k + w))
    after = int(pool - reserve)
    assert p.tokens == round_up(after // k)
    terms = {t[0]: t[1] for t in p.terms}
    assert abs(terms["fp8 context-MLA workspace reserve"] - reserve) <= 1
    # no workspace on SM 80 (A100) nor SM 121 (DGX Spark's GB10), the same on SM 100 (B200)
    from kvlib.serving.engines.trtllm.workspace import workspace_bytes_per_token
    assert [workspace_bytes_per_token("deepseek-v3", c, tp, "fp8", sm)
            for sm in (80, 121, 90, 100)] == [0, 0, w, w]
    assert workspace_bytes_per_token("deepseek-v3", c, tp, "bf16", 90) == 0
    bf16 = engine_tokens("deepseek-v3", "H200", "trtllm", tp=tp, context=context)
    assert bf16.tokens == round_up(pool // (2 * k))


def test_fp8_mla_refused_at_rc3():
    with pytest.raises(ValueError, match="context-MLA workspace is not traced"):
        engine_tokens("deepseek-v3", "H200", "trtllm", tp=8, context=8192, kv_dtype="fp8",
                      release="1.1.0rc3")
