"""SGLang 0.5.8.post1 / 0.5.9's sparse-indexer (DSA) pools as they were (issue 43 item 2). The
logs are tests/fixtures/sglang_logs (README.md there says how they were built); the published
configs: DeepSeek V3.2 61 layers, GLM-5 78 layers, both kv_lora_rank 512, qk_rope_head_dim 64,
index_head_dim 128. Every expected figure is worked out by hand below; the rule read from the
wheels is 656-byte fp8 rows (512 + 512 / 128 x 4 + 64 x 2) and 128 + 4 B of indexer keys a token
in whole 64-token pages."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kvlib.cli import main
from kvlib.serving.engines.sglang.log import dsa_058_bytes

SG = Path(__file__).resolve().parent / "fixtures" / "sglang_logs"
V32 = SG / "deepseek-v3.2_tp8_fp8_dsa_0.5.8-form.log"
GLM5 = SG / "glm-5_tp8_fp8_dsa_0.5.9-form.log"
GiB = 1 << 30


def _kv(capsys, path, *argv):
    code = main(["explain-log", str(path), *argv, "--json"])
    out, err = capsys.readouterr()
    d = json.loads(out)
    return code, [(c["kvlib"], c["status"]) for c in d["checks"] if c["quantity"] == "KV size"], d


def test_deepseek_v32_186_77_not_273_05(capsys):
    """4,172,096 tokens, page 64: latent 4,172,160 rows x 656 B = 2,736,936,960 B; indexer
    (4,172,161 // 64 = 65,190) pages x 64 x 132 B = 550,725,120 B; per layer 3,287,662,080 B,
    x 61 = 200,547,386,880 B = 186.774 GiB -> "186.77". Counted as 576 bf16 values a row (the
    issue's kvlib): 61 x 4,172,097 x 1,152 = 273.047 GiB, "273.05"."""
    assert 4_172_160 * 656 == 2_736_936_960 and 65_190 * 64 * 132 == 550_725_120
    assert 61 * (2_736_936_960 + 550_725_120) == 200_547_386_880
    assert f"{61 * 4_172_097 * 1152 / GiB:.2f}" == "273.05"
    code, kv, d = _kv(capsys, V32)
    assert code == 0 and d["model"] == "deepseek-v3.2"  # model_path read from server_args
    assert kv == [(f"{200_547_386_880 / GiB:.4f} GB", "ok")]


def test_glm5_43_67_not_63_84(capsys):
    """762,816 tokens: 762,880 x 656 = 500,449,280 B; 11,920 pages x 8,448 = 100,700,160 B;
    x 78 layers = 46,889,656,320 B = 43.669 GiB -> "43.67"; as bf16 576: 78 x 762,817 x 1,152
    = 63.836 GiB, "63.84"."""
    assert 78 * (500_449_280 + 11_920 * 64 * 132) == 46_889_656_320
    assert f"{78 * 762_817 * 1152 / GiB:.2f}" == "63.84"
    code, kv, _ = _kv(capsys, GLM5)
    assert code == 0 and kv == [("43.6694 GB", "ok")]


def test_bf16_flag_counts_576_values_of_2_bytes_and_disagrees(capsys):
    """--kv-dtype bf16: 4,172,160 x 1,152 = 4,806,328,320 B; + 550,725,120 = 5,357,053,440 B; x
    61 = 326,780,259,840 B = 304.34 GiB: the flag wins, and the log's 186.77 disagrees."""
    assert 61 * (4_172_160 * 1152 + 550_725_120) == 326_780_259_840
    code, kv, d = _kv(capsys, V32, "--kv-dtype", "bf16")
    assert code == 1 and kv == [(f"{326_780_259_840 / GiB:.4f} GB", "mismatch")]


def test_trtllm_backend_keeps_576_byte_fp8_rows(capsys, tmp_path):
    """0.5.9 with nsa_decode_backend='trtllm': 576 one-byte values a row, 61 x (4,172,160 x 576
    + 550,725,120) = 61 x (2,403,164,160 + 550,725,120) = 180,187,246,080 B = 167.81 GiB, not
    186.77."""
    assert 61 * (4_172_160 * 576 + 550_725_120) == 180_187_246_080
    text = V32.read_text(encoding="utf-8").replace("nsa_decode_backend='flashmla_kv'",
                                                   "nsa_decode_backend='trtllm'")
    (tmp_path / "t.log").write_text(text, encoding="utf-8")
    code, kv, _ = _kv(capsys, tmp_path / "t.log")
    assert code == 1 and kv == [(f"{180_187_246_080 / GiB:.4f} GB", "mismatch")]


def test_0523_form_is_checked_with_the_same_rows(capsys, tmp_path):
    """0.5.23's DSATokenToKVPool prints its dtype and keeps the same bytes (656-byte fp8 rows,
    132-byte keys in (N + page + 1) // page pages, memory_pool.py:5279-5663): 186.77 as above."""
    text = V32.read_text(encoding="utf-8").replace(
        "KV Cache is allocated. #tokens", "KV Cache is allocated. dtype: torch.float8_e4m3fn, "
        "#tokens")
    (tmp_path / "new.log").write_text(text, encoding="utf-8")
    code, kv, d = _kv(capsys, tmp_path / "new.log")
    assert code == 0 and kv == [(f"{200_547_386_880 / GiB:.4f} GB", "ok")]


def test_0523_keys_only_in_the_layers_with_their_own_topk(capsys, tmp_path):
    """GLM-5.2: 78 latent layers, keys in the 21 indexer layers alone (the others reuse the
    previous layer's top-k: a 0-row buffer, index_key_cache.py:56-59). 762,816 tokens, page 64:
    latent 78 x 762,880 x 656 = 39,035,043,840 B; keys 21 x ((762,816 + 65) // 64 = 11,920) x 64
    x 132 = 2,114,703,360 B; sum 41,149,747,200 B = 38.3237 GiB -> "38.32" (keys in all 78
    layers would add 57 x 100,700,160 = 5,739,909,120 B: 43.67 GiB)."""
    assert 78 * 762_880 * 656 == 39_035_043_840 and 21 * 11_920 * 64 * 132 == 2_114_703_360
    assert 57 * 11_920 * 64 * 132 == 5_739_909_120
    assert f"{41_149_747_200 / GiB:.2f}" == "38.32"
    assert f"{(41_149_747_200 + 5_739_909_120) / GiB:.2f}" == "43.67"
    line = ("[2026-09-01 10:00:00 TP0] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
            "#tokens: 762816, KV size: 38.32 GB\n")
    (tmp_path / "g.log").write_text(line, encoding="utf-8")
    code, kv, _ = _kv(capsys, tmp_path / "g.log", "--model", "glm-5.2", "--tp", "8")
    assert code == 0 and kv == [(f"{41_149_747_200 / GiB:.4f} GB", "ok")]


@given(st.integers(1, 10**5), st.sampled_from([1, 64]), st.integers(1, 100))
def test_indexer_pages_cover_the_rows(pages, page, layers):
    """SGLang's #tokens is whole pages; the indexer then holds tokens + page rows (page 64: one
    page past the tokens, (N + 65) // 64 = N / 64 + 1) or, page 1, tokens + 2; and fp8 rows beat
    bf16 ones by 1,152 - 656 = 496 B a token a layer."""
    tokens = pages * page
    fp8, row8 = dsa_058_bytes(tokens, page, layers, 512, 64, 128, 1)
    bf16, row16 = dsa_058_bytes(tokens, page, layers, 512, 64, 128, 2)
    assert (row8, row16) == (656, 1152)
    assert bf16 - fp8 == layers * (tokens + page) * 496
    index = fp8 // layers - (tokens + page) * 656
    assert index == (tokens + (page if page > 1 else 2)) * 132
