"""Issue 12, items 4, 7 and 17: each corrected serving number, pinned by hand arithmetic
written out here or by a primary source's figure (cited), never by kvlib's own output."""

import functools
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvlib.models.catalog import BUNDLED, bundled_config, load_model
from kvlib.serving.decode import (
    derived_active_params,
    expected_distinct_experts,
    input_embedding_params,
    moe_layout,
    read_params,
)
from kvlib.serving.engines.vllm.deployment import Deployment
from kvlib.serving.gpus import CATALOG

# These hand values are vLLM 0.33.0's profiled budget, ceil(0.92 M) - W - O (notebook 06 as it
# stands): pinned to that release since 0.34.0 became the default (tests/test_cli_plan.py and
# tests/test_capacity_formulas.py hold 0.34.0's).
Deployment = functools.partial(Deployment, vllm="0.33.0")

GB, GiB, MiB = 10**9, 1024**3, 1024**2
H200_BW = 4_800 * 10**9  # NVIDIA H200 datasheet: 4.8 TB/s

# --- item 7: the memory vLLM multiplies ---------------------------------------------------------

# vLLM 0.33.0, vllm/v1/worker/utils.py, request_memory:
#     requested_memory = math.ceil(init_snapshot.total_memory * gpu_memory_utilization)
# with total_memory from torch.accelerator.get_memory_info (cudaMemGetInfo), MemorySnapshot.measure
# in vllm/utils/mem_utils.py. A public 8 x H200 log shows nvidia-smi "143771MiB" and vLLM's
# "total_gpu_memory (139.81GiB) x gpu_memory_utilization (0.85) = 118.84GiB" on the same node.
H200_CUDA_TOTAL = 15_011_984_441_344 // 100  # 13,981 x 1,073,741,824 / 100, floored


def test_h200_cuda_total_is_the_logged_figure_and_less_than_nvidia_smi():
    assert 13981 * 1_073_741_824 == 15_011_984_441_344
    assert CATALOG["H200"].cuda_total_bytes == H200_CUDA_TOTAL == 150_119_844_413
    assert CATALOG["H200"].total_memory_bytes == H200_CUDA_TOTAL
    # 139.81 GiB = 143,165.44 MiB, 605.56 MiB under nvidia-smi's 143,771 MiB
    assert Fraction(13981 * 1024, 100) == Fraction("143165.44")
    assert CATALOG["H200"].reported_bytes == 143_771 * MiB == 150_754_820_096
    assert H200_CUDA_TOTAL < CATALOG["H200"].reported_bytes
    # the log's own product: 0.85 x 139.81 = 118.8385, printed 118.84
    assert round(Fraction(85, 100) * Fraction(13981, 100), 2) == Fraction("118.84")


def test_gpus_without_a_cuda_total_keep_the_datasheet_figure():
    for name in ("H100-NVL", "A100-40GB", "B300", "GB200", "MI300X", "RTX-5090"):
        gpu = CATALOG[name]
        assert gpu.cuda_total_bytes is None and gpu.total_memory_bytes == gpu.hbm_bytes


# The totals public messages print for each part, GiB to two decimals (sources in gpus.py)
PRINTED_GIB = {"A100-80GB": "79.25", "H100-80GB": "79.22", "H200": "139.81", "B200": "178.35",
               "L40S": "44.42", "L4": "22.03", "RTX-4090": "23.64"}


@pytest.mark.parametrize("name, printed", PRINTED_GIB.items())
def test_cuda_totals_are_the_printed_figures(name, printed):
    gpu = CATALOG[name]
    assert gpu.cuda_total_bytes == int(Fraction(printed) * 2**30)  # floor: exact for these
    assert gpu.total_memory_bytes == gpu.cuda_total_bytes
    assert round(Fraction(gpu.cuda_total_bytes, 2**30), 2) == Fraction(printed)


def test_requested_memory_rounds_up():
    d = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4)
    # 0.92 (vLLM 0.33.0's default) x 150,119,844,413 = 138,110,256,859.96 -> 138,110,256,860
    assert 92 * 150_119_844_413 == 13_811_025_685_996
    assert d.usable_bytes_per_gpu == 138_110_256_860
    assert d.memory_basis == "cuda"


def test_blog_post_a_four_h200_breakdown_with_the_cuda_total():
    """Llama 3.1 70B, bf16, 4 x H200 at TP=4, 128K sessions (notebook 06, section 3)."""
    d = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4)
    # the bf16 checkpoint (safetensors total_size 141,107,412,992 B): a quarter per GPU, but the
    # (2 x 80 + 1) x 8,192 RMSNorm weights whole on every rank
    norms = (2 * 80 + 1) * 8192 * 2
    weights = (141_107_412_992 - norms) // 4 + norms  # 35.28 GB per GPU
    overhead = 4 * GiB  # 4,294,967,296
    budget = 138_110_256_860 - 35_278_831_616 - 4_294_967_296
    assert budget == 98_536_457_948 == d.kv_budget_bytes_per_gpu
    assert weights == d.weights_bytes_per_gpu == 35_278_831_616 and overhead == d.overhead_bytes
    per_session = 80 * 2 * 2 * 128 * 2 * 131_072  # 2 KV heads per GPU: 10 GiB
    assert per_session == 10 * GiB == 10_737_418_240
    assert d.sessions(131_072) == Fraction(98_536_457_948, 10_737_418_240)
    assert f"{98_536_457_948 / 10_737_418_240:.2f}" == "9.18"
    assert d.max_sequences_per_replica(131_072) == 9  # 9 x 10 GiB = 96.6 GB <= 98.5 GB
    # with the datasheet's literal 141 GB: 129.72 GB - 35.28 GB - 4 GiB = 90,146,201,088 B, 8.40
    sheet = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4, memory="datasheet")
    assert sheet.kv_budget_bytes_per_gpu == 129_720_000_000 - 35_278_831_616 - 4_294_967_296
    assert f"{90_146_201_088 / 10_737_418_240:.2f}" == "8.40"
    assert sheet.max_sequences_per_replica(131_072) == 8


def test_h100_node_memory_sentence():
    """The node sentence (engines/05, moved from notebook 03): 600 GiB of decompressed K/V at
    128K against an H100 node."""
    assert 4_915_200 * 131_072 == 600 * GiB
    assert f"{8 * 80 * GB / GiB:.0f}" == "596"  # datasheet: 8 x 80 GB = 640 GB
    node_smi = 8 * 81_559 * MiB  # nvidia-smi 81559MiB per H100 (modal-labs/modal-client #2797)
    assert CATALOG["H100-80GB"].reported_bytes == 81_559 * MiB
    assert f"{node_smi / GiB:.1f}" == "637.2"
    # What vLLM 0.33.0 multiplies is the CUDA total, 79.22 GiB per H100 (vLLM's log), by its
    # default gpu_memory_utilization 0.92 (vllm/config/cache.py:215), rounded up per GPU.
    node_cuda = 8 * (7922 * GiB // 100)
    usable = 8 * -(-(7922 * GiB // 100) * 92 // 100)
    assert CATALOG["H100-80GB"].cuda_total_bytes == 7922 * GiB // 100
    assert Deployment(load_model("llama-3.1-8b"), "H100-80GB").usable_bytes_per_gpu * 8 == usable
    assert f"{node_cuda / GiB:.2f}" == "633.76" and f"{usable / GiB:.2f}" == "583.06"
    assert 600 * GiB > usable
    notebooks = Path(__file__).parent.parent / "notebooks"
    nb03 = (notebooks / "engines" / "05_mla_decode_in_engines.ipynb").read_text()
    assert "leaves at most 583.06 GiB" in nb03 and "about all\\nthe memory" not in nb03
    assert "`gpu_memory_utilization` of 0.92" in nb03 and "573.5" not in nb03


# --- item 4: the decode-step lower bound for a mixture of experts ---------------------------------

def test_deepseek_v2_routing_layout_from_its_config():
    layout = moe_layout(bundled_config("deepseek-v2"))
    # config.json: n_routed_experts 160, num_experts_per_tok 6, n_shared_experts 2,
    # moe_intermediate_size 1536, hidden_size 5120, 60 layers, first_k_dense_replace 1
    assert (layout.experts, layout.per_token, layout.shared) == (160, 6, 2)
    assert layout.moe_layers == 60 - 1 == 59
    assert layout.expert_params == 3 * 5120 * 1536 == 23_592_960


def test_mimo_v2_flash_moe_layer_freq_lists_its_moe_layers():
    """MiMo-V2-Flash writes moe_layer_freq as one 0/1 per layer (vLLM 0.34.0 mimo_v2.py:503-509
    reads layer i as MoE iff moe_layer_freq[i]): layer 0 dense, layers 1-47 MoE."""
    cfg = bundled_config("mimo-v2-flash")
    assert cfg["moe_layer_freq"] == [0] + [1] * 47
    layout = moe_layout(cfg)
    # n_routed_experts 256, num_experts_per_tok 8, n_shared_experts null, hidden 4096, width 2048
    assert (layout.experts, layout.per_token, layout.shared, layout.moe_layers) == (256, 8, 0, 47)
    assert layout.expert_params == 3 * 4096 * 2048 == 25_165_824
    # Xiaomi's 309B total, 15B active: 309e9 - 47 x 248 x 25,165,824 = 15.67B >= 15B
    assert derived_active_params(309 * 10**9, layout) == 309 * 10**9 - 293_332_844_544 \
        == 15_667_155_456 >= 15 * 10**9
    # a plain number: vLLM's is_moe_layer makes no layer MoE, so the model reads as dense
    assert moe_layout({**cfg, "moe_layer_freq": 1}) is None
    for bad in ([1] * 47, [0] + [2] * 47):
        with pytest.raises(ValueError, match="moe_layer_freq must list 0 .* 48 layers"):
            moe_layout({**cfg, "moe_layer_freq": bad})


def test_published_active_counts_do_not_overstate_the_config():
    """total - the experts one token skips >= the published active count (21B, 37B, 17B, 3.6B)."""
    # DeepSeek V2: 236e9 - 59 x 154 x 23,592,960 = 236e9 - 214,365,634,560
    assert 59 * 154 * 23_592_960 == 214_365_634_560
    assert derived_active_params(236 * 10**9, moe_layout(bundled_config("deepseek-v2"))) \
        == 21_634_365_440 >= 21 * 10**9
    # DeepSeek V3: 58 MoE layers, 256 experts, 8 per token, 3 x 7168 x 2048 = 44,040,192 each
    assert 671 * 10**9 - 58 * 248 * 44_040_192 == 37_525_878_272 >= 37 * 10**9
    # Llama 4 Scout: 48 MoE layers, 16 experts, 1 per token, 3 x 5120 x 8192 = 125,829,120
    assert 109 * 10**9 - 48 * 15 * 125_829_120 == 18_403_033_600 >= 17 * 10**9
    # gpt-oss-20b: 24 layers, 32 experts, 4 per token, 3 x 2880 x 2880 = 24,883,200
    assert 20_900_000_000 - 24 * 28 * 24_883_200 == 4_178_489_600 >= 3_600_000_000
    for name, active in (("deepseek-v2", 21e9), ("deepseek-v3", 37e9), ("llama-4-scout", 17e9),
                         ("gpt-oss-20b", 3.6e9)):
        assert BUNDLED[name].active_params == int(active)


def test_dense_models_read_their_total():
    assert BUNDLED["llama-3.1-70b"].active == 70_600_000_000
    assert moe_layout(bundled_config("llama-3.1-70b")) is None
    # untied input embedding 128,256 x 8,192: a step reads only the batch's rows
    assert input_embedding_params(bundled_config("llama-3.1-70b")) == 1_050_673_152
    assert read_params(70_600_000_000, bundled_config("llama-3.1-70b")) == 69_549_326_848
    assert input_embedding_params(bundled_config("gemma-3-27b")) == 0  # tied: read whole


def test_expected_distinct_experts_by_hand():
    # E (1 - (1 - k/E)^B), DeepSeek V2: E = 160, k = 6
    assert expected_distinct_experts(160, 6, 1) == 6
    # B = 2: 160 (1 - (154/160)^2) = 160 x 1,884 / 25,600 = 11.775
    assert expected_distinct_experts(160, 6, 2) == Fraction(160 * 1884, 25600) == Fraction("11.775")
    # never more than E; every one of a single expert's k = E picks
    assert expected_distinct_experts(160, 6, 10_000) < 160
    assert expected_distinct_experts(8, 8, 3) == 8


@pytest.mark.parametrize(("experts", "per_token", "batch"),
                         [(4, 1, 3), (5, 2, 3), (6, 3, 2), (4, 4, 2), (7, 2, 1)])
def test_expected_distinct_experts_by_enumeration(experts, per_token, batch):
    # Every way B tokens can each pick k of E experts, equally likely: the exact mean of
    # how many distinct experts the batch reaches, counted without the closed form.
    from itertools import combinations, product

    picks = list(combinations(range(experts), per_token))
    outcomes = list(product(picks, repeat=batch))
    mean = Fraction(sum(len(set().union(*o)) for o in outcomes), len(outcomes))
    assert expected_distinct_experts(experts, per_token, batch) == mean


@given(experts=st.integers(1, 256), data=st.data(), batch=st.integers(1, 512))
def test_expected_distinct_experts_grows_from_k_to_at_most_e(experts, data, batch):
    per_token = data.draw(st.integers(1, experts), label="per_token")
    now = expected_distinct_experts(experts, per_token, batch)
    nxt = expected_distinct_experts(experts, per_token, batch + 1)
    assert per_token <= now <= nxt <= experts
    if per_token < experts:  # a token more can only reach an expert none had picked
        assert now < nxt < experts


def test_deepseek_v2_decode_bound_on_eight_h200():
    """TP=8, 32K sessions: the bound reads 21B active parameters, not 236B."""
    # weights as the published 236B x bf16 / TP, the active count as published (21B)
    p = Deployment(load_model("deepseek-v2"), "H200", 8, 8, weight_dtype="bf16").plan(32_768)
    latent = 60 * (512 + 64) * 2 * 32_768  # the whole latent on every GPU
    assert latent == 2_264_924_160 == p.live_kv_bytes_per_sequence_per_gpu
    budget = 138_110_256_860 - 236 * 10**9 * 2 // 8 - 4 * GiB
    assert budget == 74_815_289_564 and budget // latent == 33 == p.max_sequences_per_replica
    read = (21 * 10**9 - 102_400 * 5120) * 2 // 8  # active - input embedding, bf16, / TP
    assert read == 5_118_928_000 == p.decode_weights_read_bytes_per_gpu
    bound = Fraction(read + 33 * latent, H200_BW)  # 79,861,425,280 B / 4.8 TB/s
    assert p.decode_step_seconds_lower_bound == pytest.approx(float(bound), rel=1e-12)
    assert f"{float(bound) * 1e3:.2f}" == "16.64"
    every = Fraction(59 * 10**9 + 33 * latent, H200_BW)  # 133,742,497,280 B: 27.86 ms
    assert p.decode_step_seconds_all_weights == pytest.approx(float(every), rel=1e-12)
    assert p.routed_experts == 160 and p.experts_per_token == 6
    assert p.decode_step_seconds_lower_bound < p.decode_step_seconds_uniform_routing \
        < p.decode_step_seconds_all_weights


# the bundled models kvlib plan can place (the hybrid state-space ones are not planned yet)
PLANNED = ("llama-3-70b", "llama-3.1-70b", "llama-3.1-8b", "gemma-3-27b", "deepseek-v2",
           "deepseek-v3", "gemma-2-9b", "qwen3-32b", "qwen2.5-7b", "mistral-7b-v0.1",
           "falcon-7b", "gpt2", "llama-4-scout", "gpt-oss-20b")


@pytest.mark.parametrize("name", PLANNED)
def test_the_bound_never_exceeds_reading_every_weight(name):
    model = load_model(name)
    d = Deployment(model, "B200")
    assert d.active <= d.params
    assert d.decode_read_bytes_per_gpu() <= d.weights_bytes_per_gpu
    layout = moe_layout(d.config)
    if layout is not None:  # the count's active parameters: within 0.1% of the derived bound
        assert d.active <= derived_active_params(d.params, layout) * 1.001


# --- issue 25: blog post A's MLA node, and a sliding window's extra block -----------------------

def test_deepseek_v2_on_blog_post_a_node_holds_one_128k_session():
    # 4 x H200, TP=4: usable per GPU ceil(0.92 x 150,119,844,413) = 138,110,256,860 B, 4 GiB of
    # overhead, weights = the checkpoint's 235,741,434,880 bf16 parameters split over 4 (plus what
    # every rank holds whole); the latent + RoPE key, 60 x 576 x 2 = 69,120 B per token, is held
    # whole by every rank (vLLM 0.33.0 mla_attention.py: num_kv_heads=1, max_tp_shards=1).
    d = Deployment(load_model("deepseek-v2"), "H200", 4, 4)
    usable = -(-CATALOG["H200"].cuda_total_bytes * 92 // 100)
    assert usable == d.usable_bytes_per_gpu == 138_110_256_860
    assert d.params == 235_741_434_880 and d.weights_bytes_per_gpu > d.params * 2 // 4
    budget = usable - 4 * GiB - d.weights_bytes_per_gpu
    per_session = 60 * 576 * 2 * 131072
    assert budget // per_session == 1 == d.max_sequences_per_replica(131072)
    llama = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4)
    assert llama.max_sequences_per_replica(131072) == 9


def test_a_sliding_window_spans_one_more_block_unless_aligned():
    # vLLM 0.33.0 single_type_kv_cache_manager.py: SlidingWindowManager.get_num_skipped_tokens is
    # num_computed - W + 1, and remove_skipped_blocks frees only whole blocks below it. With
    # W = 1,024 and 16-token blocks, tokens computed - 1,023 .. computed span 65 blocks unless
    # computed % 16 == 15, when they span 64.
    def held(computed, W=1024, bs=16):
        return computed // bs - (computed - W + 1) // bs + 1

    assert [held(c) for c in range(16_000, 16_016)].count(65) == 15
    assert held(16_015) == 64 == 1024 // 16


# --- issue 34: numbers notebook 06 and docs/posts.md corrected, by hand ------------------------

def _markdown_and_outputs(name: str) -> str:
    """A notebook's Markdown and its stored text outputs, whitespace collapsed."""
    import json

    cells = json.loads((Path(__file__).parent.parent / "notebooks" / name).read_text())["cells"]
    text = []
    for cell in cells:
        text.append("".join(cell["source"]) if cell["cell_type"] == "markdown" else "")
        for out in cell.get("outputs", []):
            text.append("".join(out.get("text", "")))
    return " ".join(" ".join(text).split())


def test_blackwell_mxfp4_padding_of_gpt_oss_20b_by_hand():
    """Engines 01, "Weights from the checkpoint": on Blackwell, vLLM 0.34.0's TRT-LLM MXFP4 MoE
    kernels round the experts' hidden size up to a multiple of 256 and the intermediate size to
    128 (mxfp4_round_up_hidden_size_and_intermediate_size, TRTLLM_BACKENDS branch,
    vllm/model_executor/layers/fused_moe/oracle/mxfp4.py, lines 822-858), and Mxfp4MoEMethod
    .create_weights (vllm/model_executor/layers/quantization/mxfp4.py) allocates, per expert,
    w13 (2 I x H/2 B of values, 2 I x H/32 e8m0 scales) and w2 (H x I/2 B, H x I/32 scales)
    at the padded sizes: +0.92 GB, 9.0% of the experts."""
    cfg = bundled_config("gpt-oss-20b")  # openai/gpt-oss-20b config.json
    assert cfg["quantization_config"]["quant_method"] == "mxfp4"
    layers, experts, hidden, inter = 24, 32, 2880, 2880
    assert (cfg["num_hidden_layers"], cfg["num_local_experts"], cfg["hidden_size"],
            cfg["intermediate_size"]) == (layers, experts, hidden, inter)
    h_pad, i_pad = 12 * 256, 23 * 128  # 2880 / 256 = 11.25 -> 12; 2880 / 128 = 22.5 -> 23
    assert (h_pad, i_pad) == (3072, 2944)

    def experts_bytes(h, i):
        # gate_up (2i x h) and down (h x i): half a byte per value, one byte per 32 values
        per_expert = (2 * i * h + h * i) // 2 + (2 * i * h + h * i) // 32
        return layers * experts * per_expert

    files = experts_bytes(hidden, inter)
    assert files == 768 * 3 * 2880 * 2880 * 17 // 32 == 10_152_345_600
    padded = experts_bytes(h_pad, i_pad)
    assert padded == 768 * 3 * 3072 * 2944 * 17 // 32 == 11_069_816_832
    extra = padded - files
    assert extra == 917_471_232  # 0.917 GB
    assert f"+{extra / 10**9:.2f} GB" == "+0.92 GB"
    assert f"{extra / files:.1%}" == "9.0%"  # 3072 x 2944 / 2880^2 - 1 = 9.04%
    assert Fraction(padded, files) == Fraction(3072 * 2944, 2880 * 2880)
    # what the notebook prints and says
    nb06 = _markdown_and_outputs("engines/01_vllm_budget_and_blocks.ipynb")
    assert ("Blackwell pads gpt-oss-20b's experts from 2880 x 2880 to 3072 x 2944: +0.92 GB in "
            "memory (9.0% of the experts)") in nb06
    assert ("(hidden to a multiple of 256, intermediate to 128: "
            "`mxfp4_round_up_hidden_size_and_intermediate_size`") in nb06
    assert "gpt-oss-20b's experts take 9.0% more memory than its files" in nb06


def test_post_a_node_per_gpu_cache_at_tp4_by_hand():
    """docs/posts.md: on post A's own 4 x H200 node at TP=4, DeepSeek V2 holds 67.5 KiB per token
    on each GPU (its 512 + 64 latent and RoPE key, whole on every rank: vLLM 0.33.0's
    MLAAttention.get_kv_cache_spec, one KV head, max_tp_shards=1) against Llama 3.1 70B's 80 KiB
    (8 KV heads split 2 per GPU: a quarter of 320 KiB)."""
    ds, llama = bundled_config("deepseek-v2"), bundled_config("llama-3.1-70b")
    assert (ds["num_hidden_layers"], ds["kv_lora_rank"], ds["qk_rope_head_dim"]) == (60, 512, 64)
    assert (llama["num_hidden_layers"], llama["num_key_value_heads"]) == (80, 8)
    assert llama["hidden_size"] // llama["num_attention_heads"] == 128  # no head_dim key
    ds_per_gpu = 60 * (512 + 64) * 2  # bf16, the same on each of the 4 GPUs
    llama_whole = 80 * 2 * 8 * 128 * 2
    llama_per_gpu = 80 * 2 * (8 // 4) * 128 * 2
    assert ds_per_gpu == 69_120 == int(67.5 * 1024)
    assert llama_whole == 327_680 == 320 * 1024 and llama_per_gpu * 4 == llama_whole
    assert llama_per_gpu == 81_920 == 80 * 1024
    assert Fraction(ds_per_gpu, llama_whole) > Fraction(1, 5)  # 0.21 of 320 KiB: not a fifth
    posts = " ".join((Path(__file__).parent.parent / "docs" / "posts.md").read_text().split())
    assert (f"on post A's own 4 x H200 node at TP=4 DeepSeek V2 holds {ds_per_gpu / 1024:g} KiB "
            f"per token on each GPU against Llama 3.1 70B's {llama_per_gpu // 1024} KiB (a quarter "
            f"of {llama_whole // 1024} KiB), not a fifth of it") in posts
    from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu

    for name, by_hand in (("deepseek-v2", ds_per_gpu), ("llama-3.1-70b", llama_per_gpu)):
        assert kv_bytes_per_sequence_per_gpu(load_model(name), 1, tp=4, block_size=1) == by_hand
