"""No number in the prose can drift from what kvlib computes (issues 24 and 25).

nbval re-runs the notebooks and compares their stored outputs, so a number an output shows is
recomputed on every `make test`. Three rules build on that:

* QUOTED: numbers the lessons promise (issues, paper, blog posts) are in a stored output, each
  with enough context ("saving 8x", "| 576 |") that it cannot match an unrelated number;
* PROSE: sentences that quote an output say what the output now shows;
* every quantity in a notebook's Markdown (outside its Exercises), in README.md and in docs/
  ("496 KiB", "1.55x", "12.5%", "1,097,728", "**9**") is in an output as a whole number, rounds
  from one, or is listed in EXEMPT / DOC_EXEMPT: an input with its reason, or a number recomputed
  here with kvlib (never a pasted constant alone).
"""

import json
import re
from pathlib import Path

import pytest

NB = Path(__file__).parent.parent / "notebooks"

QUOTED = {
    "01_attention_and_kv_cache.ipynb": [
        "2,621,440 B", "2.5 MiB", "2.62 MB", "21.5 GB", "343.6 GB",
    ],
    "02_gqa_and_mqa.ipynb": [
        "327,680 B", "320 KiB", "saving 8x", "40 GiB", "507,904 B", "496 KiB", "saving 2x",
        "1.55x",
    ],
    "03_latent_attention_mla.ipynb": ["61,440", "60 KiB", "4,915,200", "bytes ratio: 80 x",
                                      "decompressed 600 GiB"],
    "04_rope_decoupling.ipynb": ["69,120", "67.5 KiB", "12.5%", "8.44 GiB", "7.5 GiB", "| 576 |",
                                 "17*N_h/9 FLOPs per byte of cache"],  # 34/9 N_h / b at b = 2
    "engines/05_mla_decode_in_engines.ipynb": [
        "CUDA total 633.76 GiB", "= 583.06 GiB for weights", "= 608.76 GiB for weights",
        "x 60 layers = 69,120 B", "= 656 B per token per layer", "17/9 = 1.89", "512/3 = 170.67",
        "re-expanding wins from N_Q = 341", "compute-bound from 156.4 heads x query tokens",
    ],
    "05_real_models.ipynb": [
        "496 KiB", "320 KiB", "60 KiB", "62 GiB", "40 GiB", "7.5 GiB", "1.55x", "8.3x",
        "67.5 KiB", "10.41 GiB",
    ],
    "06_capacity_planning.ipynb": [
        "564 GB", "1,293,945", "= 40%", "9.87 sessions of 128K", "held back 9.125 GiB",
        "**9 sessions of 128K**", "| 4.74 |", "97.49% of reserved slots empty",
        "0.23% of reserved slots empty", "3.76% of reserved slots empty",
        "13.44% of reserved slots empty", "| 8.05 GiB |", "| 7.93 GiB |", "39.7x less",
        "3.556x smaller than bf16", "3.765x smaller than bf16", "scales add 3.12%",
    ],
    "engines/02_one_model_three_engines.ipynb": [  # vLLM #21348's 2x, corrected (issue 40)
        "367,404 tokens = 2.05x vLLM's 178,880", "172,459 tokens = 0.96x vLLM's 178,880",
        "SGLang holds 0.96x vLLM's tokens", "SGLang holds 0.48x vLLM's tokens",
        "- 0.819) = 8.74 GiB",
    ],
    "engines/03_reading_a_startup_log.ipynb": [
        "log 17.27x, kvlib 17.27x", "log 178,880, kvlib 180,816 to 181,040",
    ],
}

# Numbers a markdown cell states (first) that an output shows (second): when kvlib's answer
# changes, nbval fails on the stored output, the output is re-executed, and then this fails
# until the prose says the new number. Numbers kvlib computes in the middle of an argument are
# not typed in markdown at all: a code cell prints the sentence (notebook 06, sections 3, 7-8).
PROSE = {
    "engines/05_mla_decode_in_engines.ipynb": [  # moved from notebook 03 (issue 40)
        ("CUDA\n8 x 79.22 GiB = 633.76 GiB", "CUDA total 633.76 GiB"),
        ("leaves at most 583.06 GiB", "= 583.06 GiB for weights"),
        ("at most 608.76 GiB", "= 608.76 GiB for weights"),
        ("about 156 heads x query tokens", "compute-bound from 156.4 heads"),
    ],
    "06_capacity_planning.ipynb": [
        ("**9** as a server counts", "**9 sessions of 128K**"),
        ("Reproduced: 424 GB left, 1,293,945 tokens, 9.87 sessions", "9.87 sessions of 128K"),
        ("0.23% at 16 tokens, 3.76% even at 256", "3.76% of reserved slots empty"),
        ("at `max_model_len` 128K, 97.49% of the reserved", "97.49% of reserved slots empty"),
        ("the 13.44% bar above", "13.44% of reserved slots empty"),
        ("(8.05 to 7.93 GiB in the chart)", "| 7.93 GiB |"),
        ("At TP=1 Llama 3.1 70B caches 4.74x more", "| 4.74 |"),
    ],
    "engines/02_one_model_three_engines.ipynb": [
        ("reproduces the log's 367,404 tokens", "367,404 tokens = 2.05x"),
        ("slightly *fewer* tokens than vLLM's 178,880", "= 0.96x vLLM's 178,880"),
    ],
}


def _outputs(path: Path) -> str:
    text = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            text.append("".join(out.get("text", "")))
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    text.append("".join(value))
    return "\n".join(text)


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_quoted_numbers_are_in_the_outputs(name):
    shown = _outputs(NB / name)
    missing = [q for q in QUOTED[name] if q not in shown]
    assert not missing, f"{name} does not show {missing}"


def _markdown(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("name", sorted(PROSE))
def test_numbers_in_prose_are_the_outputs(name):
    prose, shown = _markdown(NB / name), _outputs(NB / name)
    for said, computed in PROSE[name]:
        assert said in prose, f"{name}: the markdown no longer says {said!r}"
        assert computed in shown, f"{name}: no output shows {computed!r}, which {said!r} quotes"


# --- every quantity the prose states (issue 25) ---------------------------------------------
#
# A quantity is a number with a unit ("496 KiB", "1.55x", "12.5%", "4,096 tokens") or a number
# with a thousands separator ("1,097,728"). Each one the Markdown of a notebook states (outside
# its Exercises, whose answers are checked by the exercise tests) is either in one of that
# notebook's stored outputs, which nbval recomputes, or listed below: an input (a config value,
# a datasheet figure, a source's claim quoted as such), or a number a test here recomputes with
# kvlib. README.md and docs/ are held to the same rule against every notebook's outputs.

UNIT = (r"(?:\s?(?:KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes?|x(?!\s?[\dA-Z$\\])|%|ms|FLOP/B|FLOPs?|"
        r"tokens?|sessions?|sequences?|blocks?|elements?|parameters)|\sB)")  # "70B" is a name
QUANTITY = re.compile(
    rf"(?<![\w.,/^{{_-])(\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?{UNIT}?|\d+(?:\.\d+)?{UNIT})(?![\w^])")


MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
BOLD = re.compile(r"\*\*(\d[\d,]*(?:\.\d+)*)\*\*")  # a bare number set in bold


def quantities(text: str) -> list[str]:
    """The quantities a piece of prose states, code spans, math and links left out."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)          # fenced code
    text = re.sub(r"`[^`\n]*`", " ", text)                        # code spans
    in_math = [n.replace("{,}", ",") for m in MATH.findall(text)
               for n in re.findall(r"(?<![\w.^])\d{1,3}(?:\{,\}\d{3})+|(?<![\w.^])\d+\.\d+", m)]
    text = MATH.sub(" ", text)  # math: only its 2{,}621{,}440s and decimals are kept
    text = re.sub(r"\]\([^)]*\)|<[^>\n]*>|https?://\S+", " ", text)  # links, tags
    found = [" ".join(q.split()) for q in QUANTITY.findall(text)] + in_math
    return found + [b for b in BOLD.findall(text) if b not in found]  # "**9** sessions"


def prose_cells(path: Path) -> list[tuple[str, str]]:
    """(cell id, markdown) for every Markdown cell, with its Exercises section left out."""
    out, in_exercises = [], False
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        kept = []
        for line in "".join(cell["source"]).split("\n"):
            heading = re.match(r"#{1,2} (.*)", line)
            if heading:
                in_exercises = "Exercises" in heading.group(1)
            if not in_exercises:
                kept.append(line)
        out.append((cell.get("id", "?"), "\n".join(kept)))
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _shows(shown: str, said: str) -> bool:
    """Whether output text shows ``said`` as a whole number, spaces aside: "4.5" is not shown
    by "14.5" or "4.56", "9" not by "19" or "1,9"; "143,771 MiB" shows "143,771MiB"."""
    pattern = r"\s*".join(re.escape(ch) for ch in said.replace(" ", ""))
    if said[0].isdigit():
        pattern = r"(?<!\d)(?<!\d[.,])" + pattern
    if said[-1].isdigit():
        pattern += r"(?!\d)(?![.,]\d)"
    return re.search(pattern, shown) is not None


class Input:
    """Not computed by kvlib: a config value, a datasheet figure, a definition, or a source's
    claim quoted as the source's."""

    def __init__(self, why: str):
        self.why = why


class Shown:
    """An output shows the number more precisely (``spelled``, in ``notebook`` or this one):
    the prose must be that number rounded to the digits the prose gives."""

    def __init__(self, spelled: str, notebook: str | None = None):
        self.spelled, self.notebook = spelled, notebook


class Computed:
    """kvlib computes the number here; ``fn()`` returns it spelled as the prose spells it."""

    def __init__(self, fn):
        self.fn = fn


def _number(text: str) -> float:
    return float(re.search(r"\d[\d,]*(?:\.\d+)?", text).group(0).replace(",", ""))


def _digits(text: str) -> int:
    found = re.search(r"\d[\d,]*(?:\.(\d+))?", text).group(1)
    return len(found) if found else 0


def _gib(n_bytes, digits: int = 1, unit: str = "GiB") -> str:
    from kvlib import to_unit

    return f"{float(to_unit(n_bytes, unit)):,.{digits}f} {unit}"


def _gemma_128k() -> int:
    from kvlib import load_model

    return load_model("gemma-3-27b").kv_bytes_per_sequence(131072, 2)


def _deepseek_v2_sizes() -> dict:
    from kvlib import load_model

    (group,) = [g for g in load_model("deepseek-v2").groups if g.attention == "MLA+RoPE"]
    return group.sizes


def _mla_elements() -> str:
    s = _deepseek_v2_sizes()
    return f"{s['d_L'] + s['d_R']} elements"


def _deepseek_v2_kib() -> str:
    from kvlib import fmt_bytes, load_model

    return fmt_bytes(load_model("deepseek-v2").kv_bytes_per_token(2), "KiB")


def _deepseek_v2_simplified_kib() -> str:
    from kvlib import fmt_bytes, load_model, simplified

    return fmt_bytes(simplified(load_model("deepseek-v2")).kv_bytes_per_token(2), "KiB")


def _per_layer_bytes() -> str:
    s = _deepseek_v2_sizes()
    return f"{(s['d_L'] + s['d_R']) * 2:,} B"


def _deepseek_v2_heads() -> int:
    from kvlib import bundled_config

    return bundled_config("deepseek-v2")["num_attention_heads"]


def _absorbed_flops_per_cached_token() -> str:
    s = _deepseek_v2_sizes()  # score against latent + RoPE key, add the latent: 2 FLOPs each
    return f"{2 * _deepseek_v2_heads() * (s['d_L'] + s['d_R'] + s['d_L']):,} FLOPs"


def _mla_vs_mha_cache(rope: bool) -> str:
    from kvlib import bundled_config

    c, s = bundled_config("deepseek-v2"), _deepseek_v2_sizes()
    mha = c["num_attention_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
                                      + c["v_head_dim"])  # K and V of every head
    return f"{round(mha / (s['d_L'] + (s['d_R'] if rope else 0)))}x"


def _kib(kind: str, **sizes) -> str:
    from kvlib import KINDS, fmt_bytes

    return fmt_bytes(KINDS[kind].bytes_per_token(b=2, **sizes), "KiB")


def _merged_over_factors(into: str) -> str:
    """A merged query-side matrix (``into`` x d_L) against DeepSeek V2's factors per head."""
    from kvlib import bundled_config

    c = bundled_config("deepseek-v2")
    factors = (c["q_lora_rank"] * c["qk_nope_head_dim"]
               + c["qk_nope_head_dim"] * c["kv_lora_rank"])
    return f"{round(c[into] * c['kv_lora_rank'] / factors)}x"


def _latent_over_head_width() -> str:
    """DeepSeek-V2's Table 1: (d_c + d_h^R) l = 4.5 d_h l elements per token."""
    from kvlib import bundled_config

    s = _deepseek_v2_sizes()
    return f"{(s['d_L'] + s['d_R']) / bundled_config('deepseek-v2')['qk_nope_head_dim']:g}"


def _rope_key_kib() -> str:
    from kvlib import fmt_bytes, load_model, simplified

    ds = load_model("deepseek-v2")
    return fmt_bytes(ds.kv_bytes_per_token(2) - simplified(ds).kv_bytes_per_token(2), "KiB")


def _qwen3_next_as_all_attention() -> str:
    """Qwen3-Next's attention bytes per token if all 48 layers were attention layers."""
    from kvlib import fmt_bytes, load_model

    spec = load_model("qwen3-next-80b-a3b")
    attn = next(g for g in spec.groups if g.grows)
    return fmt_bytes(attn.bytes_per_token(2) // attn.layers * spec.num_layers, "KiB")


def _absorbed_pair_macs() -> str:
    s = _deepseek_v2_sizes()  # 2 d_L + d_R multiply-adds per (query, key) pair and head
    return f"{2 * s['d_L'] + s['d_R']:,}"


def _gib_vs_gb() -> str:
    from kvlib.core.units import UNITS

    return f"{(UNITS['GiB'] - UNITS['GB']) / UNITS['GB'] * 100:.1f}%"


def _plain_scale_overhead() -> str:
    from kvlib.core.dtypes import DTYPE_BYTES  # one 4-byte scale per 128 one-byte elements

    return f"{float(4 / (128 * DTYPE_BYTES['fp8'])) * 100:.1f}%"


def _qwen3_next_tokens_per_state_page() -> str:
    from kvlib import load_model

    spec = load_model("qwen3-next-80b-a3b")
    attn = next(g for g in spec.groups if g.grows)
    state = next(g for g in spec.groups if not g.grows and g.layers)
    per_layer_state = state.state_bytes_per_sequence() // state.layers
    return f"{per_layer_state // (attn.bytes_per_token(2) // attn.layers)} tokens"


def _indexer_key_bytes() -> str:
    return "132 bytes" if 128 * 1 + 4 * (128 // 128) == 132 else "?"  # fp8 key + fp32 scale


def _mean_block_waste() -> str:
    """Tokens a session's last block leaves empty on average, lengths spread evenly over vLLM
    0.34.0's default block (notebook 06, section 5)."""
    from kvlib.serving.engines.vllm.defaults import DEFAULT_BLOCK

    return f"{(DEFAULT_BLOCK['0.34.0'] - 1) / 2} tokens"


def _margin_floor() -> str:
    from kvlib.serving.engines.vllm.budget import MARGIN_FLOOR_BYTES

    return f"{MARGIN_FLOOR_BYTES // 2**30} GiB"


def _default_overhead() -> str:
    from kvlib.serving.engines.vllm.defaults import (
        DEFAULT_OVERHEAD_BYTES,  # vLLM 0.33.0's non-KV lump
    )

    return f"{DEFAULT_OVERHEAD_BYTES // 2**30} GiB"


def _left_alone_by_033() -> str:
    from kvlib.serving.engines.vllm.defaults import (
        DEFAULT_GPU_MEM_UTIL,  # 0.92: 8% of each GPU unused
    )

    return f"{float(1 - DEFAULT_GPU_MEM_UTIL):.0%}"


INPUT_DEF = Input("a definition: one multiply-add is 2 FLOPs, bf16/fp16 is 2 bytes, fp8 1 byte")
POST_B = Input("blog post B's own figure, quoted as its claim")
POST_A = Input("blog post A's own figure, quoted as its claim")

# vLLM 0.34.0's scheduler, run by tests/oracle/engine on V4-Pro at 32K with a 64 GiB pool
# (kv dtype auto, H200, TP 1) during the 2026-12-03 review: requests carried at once
V4_PRO_32K_64GIB_CARRIED = 271


def _v4_pro_32k_gap() -> str:
    """How far kvlib's sessions fall below what vLLM's scheduler carried (engines/04, section 2)."""
    from kvlib import load_model
    from kvlib.serving.engines.vllm.layout import vllm_layout

    ours = vllm_layout(load_model("deepseek-v4-pro"), 32768, "fp8", 1, "H200").sessions(
        64 * 2**30, 32768)
    return f"{100 * (V4_PRO_32K_64GIB_CARRIED - ours) / ours:.1f}%"


def _issue_21348_budget_for_its_tokens() -> str:
    """The budget line that gives vLLM #21348's 178,880 tokens (engines/03, section 4): 11,180
    blocks of 16 tokens of Qwen3-235B-A22B at TP 4, 94 layers x 1 KV head x (128 + 128) x 2 B
    x 16 = 770,048 B each, in GiB (tests/test_explain_log.py edits the log to it)."""
    from kvlib.models.catalog import load_model
    from kvlib.serving.engines.vllm.layout import vllm_layout

    config = (NB.parent / "tests" / "fixtures" / "vllm_logs" / "configs"
              / "qwen3-235b-a22b-fp8.json")
    per_block = vllm_layout(load_model(str(config)), 2048, tp=4, gpu="H100-80GB",
                            release="0.33.0").bytes_per_block
    assert per_block == 94 * 1 * (128 + 128) * 2 * 16
    return _gib(178_880 // 16 * per_block, 2)


def _v32_latent_at_1m_half_up() -> str:
    """DeepSeek V3.2's bf16 latent + RoPE key at 1M tokens, without its indexer, rounded half
    up as the Reddit calculation rounds it (engines/04 prints the exact 68.625 GiB)."""
    from decimal import ROUND_HALF_UP, Decimal

    from kvlib import load_model

    g = next(g for g in load_model("deepseek-v3.2").groups if g.attention == "MLA+RoPE")
    gib = Decimal(g.bytes_per_sequence(1 << 20, 2)) / Decimal(2**30)
    return f"{gib.quantize(Decimal('0.01'), ROUND_HALF_UP)} GiB"


EXEMPT: dict[str, dict[str, object]] = {
    "01_attention_and_kv_cache.ipynb": {
        "60 KiB": Computed(_deepseek_v2_simplified_kib),
        "90%": Shown("0.899"),
        "2 bytes": INPUT_DEF,
        "2 FLOPs": INPUT_DEF,
        "7.4%": Computed(_gib_vs_gb),
        "2.6 MB": POST_B, "21 GB": POST_B, "340 GB": POST_B, "0.33 MB": POST_B, "564 GB": POST_A,
    },
    "02_gqa_and_mqa.ipynb": {
        "2 bytes": INPUT_DEF,
        "320 GiB": Input("a deliberately wrong unit in a units quiz (320 KiB, not GiB)"),
        "1,024 tokens": Input("Gemma 3's sliding_window, a config value"),
        "10.4 GiB": Shown("10.41 GiB", "05_real_models.ipynb"),
    },
    "03_latent_attention_mla.ipynb": {
        "2 bytes": INPUT_DEF,
        "80 GB": Input("the H100 datasheet's memory per GPU"),
        "640 GB": Input("the H100 datasheet, 8 x 80 GB"),
        "596 GiB": Computed(lambda: f"{round(8 * 80e9 / 2**30)} GiB"),
        "576 elements": Computed(_mla_elements),
        "67.5 KiB": Computed(_deepseek_v2_kib),
        "3.6x": Shown("3.64x"),
        "10x": Computed(lambda: _merged_over_factors("hidden_size")),
        "3x": Computed(lambda: _merged_over_factors("q_lora_rank")),
        "4.5": Computed(_latent_over_head_width),
    },
    "04_rope_decoupling.ipynb": {
        "4.5": Computed(_latent_over_head_width),
        "7.5 KiB": Computed(_rope_key_kib),
        "3x": Shown("3.4x the FLOPs"),
        "1 FLOP/B": Computed(lambda: f"{2 // 2} FLOP/B"),  # 2 FLOPs per element / b = 2 bytes
        "576 elements": Computed(_mla_elements),
        "1,152 B": Computed(_per_layer_bytes),
        "278,528 FLOPs": Computed(_absorbed_flops_per_cached_token),
        "80x": Shown("bytes ratio: 80 x", "03_latent_attention_mla.ipynb"),
        "71x": Computed(lambda: _mla_vs_mha_cache(rope=True)),
        "2 FLOPs": INPUT_DEF,
        "242 FLOPs": Shown("241.8 FLOPs per byte"),
        "30 FLOPs": Shown("30.2"),
        "24,848 FLOPs": Shown("| 24,848 |"),
        "61x": Shown("60.6x less time"),
    },
    "05_real_models.ipynb": {
        "10.4 GiB": Shown("10.41 GiB"),
        "1,024 tokens": Input("Gemma 3's sliding_window, a config value"),
        "160 KiB": Computed(lambda: _kib("GQA", N_L=64, N_g=8, d_QK=80, d_V=80)),
        "1.6x": Computed(lambda: f"{128 / 80:.1f}x"),
        "568 KiB": Computed(lambda: _kib("MHA", N_L=32, N_h=71, d_QK=64, d_V=64)),
        "2.6 MB": POST_B, "340 GB": POST_B, "0.33 MB": POST_B, "21 GB": POST_B,
        "43 GB": Shown("42.95 GB"),
    },
    "06_capacity_planning.ipynb": {
        "420 GB": POST_A,
        "4.74x": Shown("| 4.74 |"),
        "32x": Shown("32.0x less"),  # section 7: a 4K window on every layer
        "64 tokens": Input("vLLM 0.34.0's default block size (vllm/config/cache.py:185)"),
        "31.5 tokens": Computed(_mean_block_waste),
        "1 GiB": Computed(_margin_floor),
        "1 GB": Input("the definition of a unit"),
        "16 tokens": Input("a block size the paging comparison sweeps, an input"),
        "2x": Shown("2.0x less"),
        "8x": Shown("8.0x less"),
        "2 bytes": INPUT_DEF,
        "3.1%": Computed(_plain_scale_overhead),
        "12.5%": Shown("+12.50% over plain 4-bit"),
        "2,048 tokens": Input("the workload's median, an input of the simulation"),
        "512 tokens": POST_B,
        "40x": Shown("/39.75 |"),
        # section 3: the start-up terms kvlib assumes for vLLM (an input it names, with a flag
        # each: --in-use-gib, --non-torch-gib, --graph-pool-gib, --activation-peak-gib)
        "0.5 GiB": Input("kvlib's assumed M_0 and non-torch memory (serving/engines/startup.py)"),
        "2 GiB": Input("kvlib's assumed CUDA-graph pool and vLLM's estimate of it"),
        "1.5 GiB": Input("kvlib's assumed activation peak of the profiling run"),
    },
    # --- E01 begin: engines/01 (vLLM's budget and blocks)
    "engines/01_vllm_budget_and_blocks.ipynb": {
        "80GB": Input("a GPU's name (an A100 80GB)"),
        "143,165 MiB": Computed(lambda: f"{round(139.81 * 1024):,} MiB"),
        "139.80 GiB": Input("a PyTorch out-of-memory message, quoted"),
        "4 GiB": Computed(_default_overhead),
        "3 GiB": Input("vLLM 0.34.0's margin floor on ROCm, a constant of vLLM "
                       "(vllm/v1/worker/extensible_kv_cache.py:64-65)"),
        "8%": Computed(_left_alone_by_033),
        "11.2 GiB": Computed(lambda: f"{(100 - 92) * 139.81 / 100:.1f} GiB"),  # 8% of M, by hand
        "10%": Computed(lambda: f"{100 - 90}%"),  # 1 - 0.9, the utilization up to 0.19.1
        "15.38%": Computed(lambda: f"{8 / 52 * 100:.2f}%"),  # 8 padding slots of 52 layers
        "5,120": Input("DeepSeek V2's hidden_size, a config value"),
        "1,536 parameters": Input("DeepSeek V2's moe_intermediate_size, a config value"),
    },
    # --- E01 end
    "07_hybrid_models.ipynb": {
        "536 tokens": Computed(_qwen3_next_tokens_per_state_page),
        "96 KiB": Computed(_qwen3_next_as_all_attention),
        "4x": Computed(lambda: f"{48 // 12}x"),
        "13x": Shown("(13.2x)"),
        "132 bytes": Computed(_indexer_key_bytes),
        "9x": Computed(lambda: f"{round(_number(_per_layer_bytes()) / 132)}x"),
    },
    "engines/02_one_model_three_engines.ipynb": {
        "2 x": Input("K and V: two tensors per layer, a definition (TensorRT-LLM's 2 x layers)"),
        "32 tokens": Input("TensorRT-LLM's tokens_per_block default, an engine constant"),
        "2x": Shown("= 2.05x"),  # vLLM #21348's "almost 2x", as the output prints it
    },
    "engines/03_reading_a_startup_log.ipynb": {
        "0.005 GiB": Input("half of the last digit vLLM prints"),
        "8.02 GiB": Computed(_issue_21348_budget_for_its_tokens),
        "32 tokens": Input("TensorRT-LLM's tokens_per_block default, an engine constant"),
    },
    "engines/06_hybrid_pages_in_vllm.ipynb": {
        "64 tokens": Input("vLLM 0.34.0's default block size (vllm/config/cache.py:185)"),
    },
    "08_compressed_shared_selected.ipynb": {
        # the report's claims, quoted as it states them (section 7 reproduces them: 10.5%, 7.3%)
        "10%": Input("DeepSeek V4 report: V4-Pro's KV cache at 1M tokens is 10% of V3.2's"),
        "7%": Input("DeepSeek V4 report: V4-Flash's is 7% of V3.2's"),
        "8.7x": Input("vLLM's V4 blog post's factor, quoted in the Sources (8.71x is shown)"),
    },
    "engines/04_deepseek_v4_in_vllm.ipynb": {
        # the public figures section 1 reproduces, quoted as their sources state them
        "10%": Input("DeepSeek V4 report: V4-Pro's KV cache at 1M tokens is 10% of V3.2's"),
        "7%": Input("DeepSeek V4 report: V4-Flash's is 7% of V3.2's"),
        "8.7x": Input("vLLM's V4 blog post's factor, quoted (its 8.71x is shown)"),
        "7.9x": Input("the Reddit calculation's factor, quoted (its 7.88x is shown)"),
        "68.63 GiB": Computed(_v32_latent_at_1m_half_up),
        "83.9 GiB": Input("a blog summary's 'standard attention' figure for V3.2, quoted"),
        "9.6 GiB": Input("a blog post's BF16 figure for V4 (yiliu30.github.io/posts/ds-v4)"),
        "2 bytes": Input("bf16's element size, a definition"),
        "40 GiB": Input("the oracle's largest KV pool, tests/oracle/cases.py MAX_POOL"),
        "1.5%": Computed(_v4_pro_32k_gap),
        "576 bytes": Input("vLLM 0.34.0's fp8_ds_mla page alignment (models/deepseek_v4/"
                           "attention.py:832, v1/kv_cache_interface.py:731-738), an engine "
                           "constant"),
        "8 tokens": Input("the compressor states' block sizes, 4 or 8 tokens "
                          "(models/deepseek_v4/compressor.py:167-171), engine constants"),
        "64 GiB": Input("section 2's KV pool on one GPU, an input of the worked example"),
    },
    # --- E05 begin: engines/05 (MLA in the engines), moved from notebooks 03 and 04
    "engines/05_mla_decode_in_engines.ipynb": {
        "576 elements": Computed(_mla_elements),
        "2.3x": Shown("absorbed/re-expand = 2.27"),
        "341 tokens": Shown("re-expanding wins from N_Q = 341"),
        "3.35 TB": Input("the H800's bandwidth as FlashMLA's write-up states it (3.35 TB/s)"),
        "640 GB": Input("the H100 datasheet, 8 x 80 GB"),
        "596 GiB": Computed(lambda: f"{round(8 * 80e9 / 2**30)} GiB"),
        "81,559 MiB": Input("what nvidia-smi reports for an H100 80GB"),
        "637.2 GiB": Computed(lambda: f"{8 * 81559 / 1024:.1f} GiB"),
        "79.22 GiB": Input("the total CUDA reports on an H100 80GB (vLLM's start-up log)"),
    },
    # --- E05 end
}


def _check(name: str, said: str, how, shown: str) -> str | None:
    """Why ``said`` fails its exemption, or None."""
    if isinstance(how, Input):
        return None if how.why else "an input needs a reason"
    if isinstance(how, Computed):
        got = how.fn()
        return None if got == said else f"kvlib computes {got!r}"
    where = shown if how.notebook is None else _outputs(NB / how.notebook)
    if not _shows(where, how.spelled):
        return f"no output shows {how.spelled!r}"
    value = _number(how.spelled) * (100 if said.endswith("%") and "%" not in how.spelled else 1)
    if round(value, _digits(said)) != _number(said):
        return f"{how.spelled!r} does not round to it"
    return None


# The engines track's notebooks are held to the same rule, each named here (one line each).
ENGINES = ["engines/01_vllm_budget_and_blocks.ipynb", "engines/02_one_model_three_engines.ipynb",
           "engines/03_reading_a_startup_log.ipynb", "engines/04_deepseek_v4_in_vllm.ipynb",
           "engines/05_mla_decode_in_engines.ipynb", "engines/06_hybrid_pages_in_vllm.ipynb"]
NOTEBOOKS = sorted(p.name for p in NB.glob("*.ipynb")) + ENGINES


def _audit(where: str, said_at: list[tuple[str, str]], exempt: dict, shown: str,
           table: str) -> None:
    """Every quantity ``said`` (at ``place``) is listed in ``exempt`` and passes its check, or
    is shown in ``shown``; and ``exempt`` lists nothing no longer said."""
    used, wrong = set(), []
    for place, said in said_at:
        if said in exempt:
            used.add(said)
            why = _check(where, said, exempt[said], shown)
            if why:
                wrong.append(f"{place}{said!r}: {why}")
        elif not _shows(shown, said):
            wrong.append(f"{place}{said!r} is in no output and not listed in {table}")
    stale = sorted(set(exempt) - used)
    assert not wrong, f"{where}:\n" + "\n".join(wrong)
    assert not stale, f"{where}: {table} lists what the text no longer says: {stale}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_quantity_in_the_prose_is_shown_or_checked(name):
    said_at = [(f"{cell}: ", said) for cell, text in prose_cells(NB / name)
               for said in quantities(text)]
    _audit(name, said_at, EXEMPT.get(name, {}), _outputs(NB / name), "EXEMPT")


def test_quantities_are_found():
    text = "It caches 1.55x more, 496 KiB per token, 62 x 16 = 992, 1,097,728 / 2,048 (`9 GiB`)"
    assert quantities(text) == ["1.55x", "496 KiB", "1,097,728", "2,048"]
    assert quantities("$62 \\times 16$ and [x](a_2x.md) and 70B") == []
    assert quantities("becomes **9** once, **67.5 KiB**") == ["67.5 KiB", "9"]
    assert quantities("$d_{in} d_L = 2{,}621{,}440$, $\\theta = 10000^{-2i/d}$, $x = 1.89$") == [
        "2,621,440", "1.89"]


# --- README.md and docs/ ------------------------------------------------------------------
# The same rule for the pages: a quantity is in some notebook's stored output, or listed here.
# docs/workshop.md is a timetable (minutes), docs/benchmarks.md holds measured timings and
# docs/formula_sheet.md is generated from kvlib (tests/test_formula_sheet.py): not held here.

ROOT = NB.parent
PAGES = ["README.md"] + sorted(
    f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")
    if p.name not in ("workshop.md", "benchmarks.md", "formula_sheet.md"))
UNIT_DEF = Input("the definition of a unit")
TINY = Input("a worked example on a tiny random config; make crosscheck (torch, transformers) "
             "compares kvlib with transformers' allocation layer by layer, not this figure")


def _kv_per_sequence(name: str, context: int, unit: str, digits: int) -> str:
    from kvlib import load_model

    return _gib(load_model(name).kv_bytes_per_sequence(context, 2), digits, unit)


def _post_b_gqa_overestimate() -> str:
    from kvlib import bundled_config

    g = bundled_config("gemma-3-27b")["text_config"]
    return f"{g['hidden_size'] / (g['num_attention_heads'] * g['head_dim']) - 1:.0%}"


def _deepseek_v2_as_mha() -> int:
    from kvlib import KINDS, bundled_config

    c = bundled_config("deepseek-v2")
    return KINDS["MHA"].bytes_per_token(
        N_L=c["num_hidden_layers"], N_h=c["num_attention_heads"],
        d_QK=c["qk_nope_head_dim"] + c["qk_rope_head_dim"], d_V=c["v_head_dim"], b=2)


def _llama_node_sessions() -> int:
    from kvlib import Deployment, load_model

    return Deployment(load_model("llama-3.1-70b"), "H200", 4, 4).max_sequences_per_replica(131072)


def _llama_per_token(unit: str) -> str:
    from kvlib import fmt_bytes, load_model

    return fmt_bytes(load_model("llama-3.1-70b").kv_bytes_per_token(2), unit)


def _deepseek_v2_node() -> str:
    from kvlib import Deployment, load_model

    n = Deployment(load_model("deepseek-v2"), "H200", 4, 4).max_sequences_per_replica(131072)
    return f"{n} sequence" + ("s" if n != 1 else "")


def _per_gpu_at_tp4(name: str) -> str:
    """KiB per token on each GPU of post A's 4 x H200 node (TP=4); by hand in
    tests/test_serving_claims.py (test_post_a_node_per_gpu_cache_at_tp4_by_hand)."""
    from kvlib import fmt_bytes, load_model
    from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu

    return fmt_bytes(kv_bytes_per_sequence_per_gpu(load_model(name), 1, tp=4, block_size=1), "KiB")


def _sequences_in(budget_gib: int) -> str:
    from kvlib import load_model

    per = load_model("deepseek-v2").kv_bytes_per_sequence(131072, 2)
    return f"{budget_gib * 2**30 // per} sequences"


def _llama_weights_per_gpu() -> str:
    from kvlib import Deployment, load_model

    return f"{Deployment(load_model('llama-3.1-70b'), 'H200', 4, 4).weights_bytes_per_gpu:,} B"


DOC_EXEMPT: dict[str, dict[str, object]] = {
    "README.md": {
        "4.7 MiB": Computed(lambda: _gib(_deepseek_v2_as_mha(), 1, "MiB")),
        "1024 B": UNIT_DEF, "1000 B": UNIT_DEF,
    },
    "docs/posts.md": {
        "2.6 MB": POST_B, "21 GB": POST_B, "99%": POST_B,
        "0.33 MB": Computed(lambda: _llama_per_token("MB")),
        "31%": Computed(_post_b_gqa_overestimate),
        "10.4 GiB": Computed(lambda: _kv_per_sequence("gemma-3-27b", 131072, "GiB", 1)),
        "2 sequences": Computed(_deepseek_v2_node),
        # DeepSeek V2 per token (whole, and so on each GPU at TP=4); Llama 3.1 70B's per GPU
        "67.5 KiB": Computed(lambda: _per_gpu_at_tp4("deepseek-v2")),
        "80 KiB": Computed(lambda: _per_gpu_at_tp4("llama-3.1-70b")),
    },
    "docs/architecture.md": {"1024 B": UNIT_DEF, "1000 B": UNIT_DEF},
    "docs/capacity.md": {
        "0.33.0": Input("vLLM's release number"),
        "0.92": Input("vLLM 0.33.0's default utilization"),
        "2 bytes": INPUT_DEF,
        "9": Computed(lambda: str(_llama_node_sessions())),
        "143771MiB": Input("what nvidia-smi prints on an H200"),
        "13.4 TB": Input("NVIDIA's GB200 NVL72 datasheet"),
        "576 TB": Input("NVIDIA's GB200 NVL72 datasheet"),
        "13.5 TB": Input("NVIDIA's 2024 preliminary GB200 NVL72 page"),
        "279 GB": Input("NVIDIA's GB300 datasheet"),
        "288 GB": Input("NVIDIA's B300 chip figure"),
        "44.43 GiB": Input("PyTorch's total on an RTX 6000 Ada, a public message the catalog "
                           "cites (kvlib/serving/gpus.py)"),
        "79.11 GiB": Input("the H100 80GB CUDA total most public messages print (issue 34; "
                           "vLLM issue #27508)"),
        "0.1 GiB": Computed(lambda: _gib(92 * (7922 - 7911) * 2**30 // 10**4, 1)),
        "35,278,831,616 B": Computed(_llama_weights_per_gpu),
        "3 GiB": Input("vLLM 0.34.0's margin floor on ROCm, a constant of vLLM "
                       "(vllm/v1/worker/extensible_kv_cache.py:64-65)"),
        "0.49 GiB": Input("memory in use at start-up in a fixture log "
                          "(tests/fixtures/vllm_logs/qwen3-235b-a22b-fp8_8xL40S_tp8_v0.10.2.log)"),
        "97%": Shown("97.49% of reserved slots empty", "06_capacity_planning.ipynb"),
        "0.2%": Shown("0.23% of reserved slots empty", "06_capacity_planning.ipynb"),
    },
    "docs/cli.md": {
        "1": Input("an exit status"), "2": Input("an exit status"),
        "0.005 GiB": Input("half of the last digit vLLM prints"),
        "150 MiB": Input("vLLM's CUDA-graph margin, a constant of vLLM"),
        "238,224": Input("an example error message's log value"),
        "238,208": Input("an example error message's computed value"),
    },
    "docs/crosscheck.md": {
        "1728 elements": TINY, "1 block": Input("one block, a rule in words"), "9 tokens": TINY,
        "40,960 elements": Shown("40,960", "04_rope_decoupling.ipynb"),
        "864 elements": TINY, "384 elements": TINY, "2,624 B": TINY, "2,816": TINY,
        "10,752 B": TINY, "2,772 B": TINY, "2,816 B": TINY, "1,600 B": TINY, "37,376": TINY,
        "36,224": TINY, "18,432": TINY, "9,728": TINY,
        "20 tokens": TINY, "8 tokens": TINY, "1 token": Input("one token, a rule in words"),
        "1%": Input("issue 32's tolerance for the oracle's sessions"),
        "64 tokens": Input("the oracle's spread of final lengths (tests/oracle/engine/drive.py, "
                           "STAGGER)"),
        "576 bytes": Input("kv_lora_rank + qk_rope_head_dim = 512 + 64 fp8 values"),
    },
    "docs/models.md": {
        "10.4 GiB": Computed(lambda: _kv_per_sequence("gemma-3-27b", 131072, "GiB", 1)),
        "2,621,440 elements": Shown("merged 2,621,440", "03_latent_attention_mla.ipynb"),
        "3.6x": Shown("3.64x", "03_latent_attention_mla.ipynb"),
        "3x": Shown("3.00x", "03_latent_attention_mla.ipynb"),
        "10x": Computed(lambda: _merged_over_factors("hidden_size")),
        "242 FLOPs": Shown("241.8 FLOPs per byte", "04_rope_decoupling.ipynb"),
        "30 FLOPs": Shown("per GPU): 30.2", "04_rope_decoupling.ipynb"),
        "576 elements": Computed(_mla_elements),
        "11 sequences": Computed(lambda: _sequences_in(100)),
        "1,088": Computed(_absorbed_pair_macs),
        "341 tokens": Shown("re-expanding wins from N_Q = 341",
                            "engines/05_mla_decode_in_engines.ipynb"),
    },
    "docs/publishing.md": {
        **{said: Input("the built book's sizes, measured; tests/book/test_book_size.py holds "
                       "them to a fresh build within 10%")
           for said in ("22 MB", "8.2 MB", "8 MB", "294 KB", "215 KB", "79 KB")},
        "177 KB": Input("the planner's embedded data, measured when the book was built"),
        "50 KB": Input("uPlot's published size, a library weighed and not chosen"),
        "3.5 MB": Input("Plotly's published size, a library weighed and not chosen"),
        **{said: Input("input-to-redraw times measured in Chromium and Firefox, and the "
                       "150 ms limit tests/book/test_explorers.py enforces")
           for said in ("8 ms", "28 ms", "24 ms", "150 ms")},
    },
    "docs/testing.md": {"90%": Input("a layout threshold of the browser test")},
    "docs/engines.md": {"100 MiB": Input("SGLang 0.5.23's SGLANG_VLM_CACHE_SIZE_MB default "
                                         "(environ.py:1598), a setting read from its wheel")},
    # --- E01 begin: docs/vllm.md (N06's page beside engines/01)
    "docs/vllm.md": {
        "4 GiB": Computed(_default_overhead),
        **{said: Input("a vLLM log line quoted from vllm-project/vllm PR #10511")
           for said in ("1.79 GiB", "1.26 GiB", "3.58 GiB")},
    },
    # --- E01 end
}


def _text_quantities(page: str) -> list[str]:
    return quantities((ROOT / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_every_quantity_on_the_page_is_shown_or_checked(page):
    every = "\n".join(_outputs(p) for p in sorted(NB.glob("*.ipynb"))
                      + sorted(NB.glob("engines/*.ipynb")))
    _audit(page, [("", said) for said in _text_quantities(page)], DOC_EXEMPT.get(page, {}),
           every, "DOC_EXEMPT")


# --- DeepSeek V4's figures, by hand (notebook 08 section 7, engines/04; issue 40 item 4) ----
# One sequence of 1M = 2^20 tokens. V4-Pro: 61 layers, 30 with m = 4 (each with an indexer) and
# 31 with m = 128; V4-Flash: 43 layers, 21 and 20. Every layer keeps a 128-token window. An entry
# is 584 B as vLLM stores it (448 fp8 + 64 bf16 x 2 B + 8 scale bytes), 512 x 2 B in bf16; an
# indexer key is 128 + 4 B in fp8, 128 / 2 + 128 / 32 = 68 B in MXFP4 (vLLM 0.34.0,
# models/deepseek_v4/attention.py:977-980), 128 x 2 B in bf16. The compressor states, fp32: an
# m = 4 layer 8 slots of 2 x 1,024 values and its indexer's 8 of 2 x 256; an m = 128 layer 128
# slots of 2 x 512. V3.2: 61 layers; fp8_ds_mla 656 B + a 132-byte key a token, or in bf16
# (512 + 64) x 2 B + a 256-byte key.
_T = 2**20
_ENTRY, _MXFP4_KEY, _FP8_KEY, _BF16_KEY = 448 + 64 * 2 + 8, 128 // 2 + 128 // 32, 128 + 4, 128 * 2


def _v4_by_hand(layers: int, c4: int, c128: int, entry: int, key: int, states: bool) -> int:
    rows = c4 * (_T // 4) + c128 * (_T // 128) + layers * 128
    state = c4 * 8 * 2 * 1024 * 4 + c4 * 8 * 2 * 256 * 4 + c128 * 128 * 2 * 512 * 4
    return rows * entry + c4 * (_T // 4) * key + (state if states else 0)


_PRO = dict(layers=61, c4=30, c128=31)
_FLASH = dict(layers=43, c4=21, c128=20)
_SERVED = {"V4-Pro": _v4_by_hand(**_PRO, entry=_ENTRY, key=_MXFP4_KEY, states=True),
           "V4-Flash": _v4_by_hand(**_FLASH, entry=_ENTRY, key=_MXFP4_KEY, states=True),
           "V3.2": 61 * (656 + _FP8_KEY) * _T}
_BLOG = {"V4-Pro": _v4_by_hand(**_PRO, entry=512 * 2, key=_BF16_KEY, states=False),
         "V4-Flash": _v4_by_hand(**_FLASH, entry=512 * 2, key=_BF16_KEY, states=False),
         "V3.2": 61 * ((512 + 64) * 2 + _BF16_KEY) * _T}


def test_the_v4_claims_notebook_08_prints_are_the_hand_counts():
    # the report's 10% and 7%, counted as its precisions say; vLLM's blog's bf16 counting
    assert _MXFP4_KEY == 68
    assert (f"{100 * _SERVED['V4-Pro'] / _SERVED['V3.2']:.1f}%",
            f"{100 * _SERVED['V4-Flash'] / _SERVED['V3.2']:.1f}%") == ("10.5%", "7.3%")
    assert [f"{_BLOG[n] / 2**30:.2f} GiB" for n in ("V4-Pro", "V4-Flash", "V3.2")] == [
        "9.62 GiB", "6.72 GiB", "83.88 GiB"]
    assert f"{_BLOG['V3.2'] / _BLOG['V4-Pro']:.2f}x" == "8.71x"
    shown = _outputs(NB / "08_compressed_shared_selected.ipynb")
    assert "indexer key: 132 B in fp8, 68 B in MXFP4" in shown
    for n in _SERVED:
        assert f"| {n} | {_SERVED[n] / 2**30:.2f} GiB | {_BLOG[n] / 2**30:.2f} GiB |" in shown, n
    for n in ("V4-Pro", "V4-Flash"):
        assert (f"| {n} / V3.2 | {100 * _SERVED[n] / _SERVED['V3.2']:.1f}% | "
                f"{100 * _BLOG[n] / _BLOG['V3.2']:.1f}% ({_BLOG['V3.2'] / _BLOG[n]:.2f}x) |"
                in shown), n


def test_v4s_entry_is_1_97x_smaller_than_v3s_as_1_125x_narrower_and_1_75x_fp8():
    # V3's bf16 latent and RoPE key: 512 + 64 = 576 values; V4's head_dim 512 holds its 64 RoPE
    # dims; the same 512 values in bf16 (1,024 B) against the 584-byte fp8_ds_mla entry
    whole, narrower, fp8 = (576 * 2) / _ENTRY, 576 / 512, (512 * 2) / _ENTRY
    assert abs(whole - narrower * fp8) < 1e-12
    shown = _outputs(NB / "08_compressed_shared_selected.ipynb")
    assert (f"{whole:.2f}x smaller = {narrower:.3f}x (576 values -> 512) x {fp8:.2f}x "
            "(bf16 -> fp8)") in shown
    assert (f"{whole:.2f}, {narrower:.3f}, {fp8:.2f}") == "1.97, 1.125, 1.75"
    for m in (4, 128):
        assert f"{576 * 2 / (_ENTRY / m):.1f}x less than V3's = {m} x 1.125 x 1.75" in shown


def test_engines_04_reproduces_every_public_reading_by_hand():
    shown = _outputs(NB / "engines/04_deepseek_v4_in_vllm.ipynb")
    reddit_pro = _v4_by_hand(**_PRO, entry=512 * 2, key=_FP8_KEY, states=False) - 61 * 128 * 1024
    v32_bare = 61 * (512 + 64) * 2 * _T
    rows = {"V4-Pro, the report's precisions, MXFP4 keys": _SERVED["V3.2"] / _SERVED["V4-Pro"],
            "V4-Flash, the report's precisions, MXFP4 keys": _SERVED["V3.2"] / _SERVED["V4-Flash"],
            "V4-Pro, vLLM's blog: everything bf16": _BLOG["V3.2"] / _BLOG["V4-Pro"],
            "V4-Flash, vLLM's blog: everything bf16": _BLOG["V3.2"] / _BLOG["V4-Flash"],
            "V4-Pro, the Reddit post's": v32_bare / reddit_pro,
            # counted alike: both bf16 (latent or entries), both fp8 indexer keys (132 B)
            "V4-Pro, bf16 entries and fp8 keys, alike in both":
                61 * ((512 + 64) * 2 + _FP8_KEY) * _T / reddit_pro}
    for label, times in rows.items():
        assert f"| {label} | {100 / times:.1f}% | {times:.2f}x |" in shown, label
    assert f"{reddit_pro / 2**30:.2f} GiB" == "8.71 GiB" and f"{v32_bare / 2**30}" == "68.625"
    flash = f"{_BLOG['V4-Flash'] / 2**30:.2f} GiB"
    assert f"V4-Flash: bf16 entries and windows, bf16 keys      {flash}" in shown


def test_engine_source_lines_stay_in_the_engines_track():
    # lesson 08's prose cites no engine line (issue 40 item 1); engines/04 cites 0.34.0's lines,
    # num_kv_heads=1, max_tp_shards=1 where they are (models/deepseek_v4/attention.py:828-829)
    lesson = _markdown(NB / "08_compressed_shared_selected.ipynb")
    assert not re.search(r"\.py:\d", lesson)
    track = _markdown(NB / "engines/04_deepseek_v4_in_vllm.ipynb")
    assert "attention.py:828-829" in track and "823-826" not in track
    assert "attention.py:977-980" in track and "indexer.py:67-75" in track
