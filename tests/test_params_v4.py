"""DeepSeek V4 (V4-Flash, V4-Pro): parameters, checkpoint bytes and the plan, worked by hand.

Independent values: each tensor written out from vLLM 0.34.0's modules (vllm/models/
deepseek_v4/attention.py, compressor.py, nvidia/model.py, nvidia/mtp.py; cited in
kvlib.models.params.latent._v4_layer) and the checkpoint's storage (quant_config.py: FP8 128 x 128
blocks with one e8m0 byte per block, MXFP4 experts with one e8m0 byte per 32 inputs; bf16
compressor projections per transformers 5.25.0 modeling_deepseek_v4.py:1254-1263), not from
kvlib's tally; DeepSeek's announced totals; the Hub's element count and download sizes.
"""

from __future__ import annotations

import math

from kvlib.cli import main
from kvlib.models.catalog import bundled_config
from kvlib.models.params import count_params
from kvlib.models.quantization import checkpoint_bytes, read_quantization
from kvlib.serving.weights import checkpoint_weights


def fp8(i: int, o: int, scale: int = 1) -> int:
    """Bytes of an FP8 (o, i) weight and its scale per 128 x 128 block (e8m0: 1 byte)."""
    return o * i + scale * math.ceil(o / 128) * math.ceil(i / 128)


def by_hand(c: dict, mtp: bool = False) -> dict:
    """Elements, active elements and checkpoint bytes of a V4 config, tensor by tensor;
    ``expert_dtype`` fp8: FP8 experts and fp32 block scales everywhere."""
    fp4 = c.get("expert_dtype", "fp4") == "fp4"
    sb = 1 if fp4 else 4

    def fp8(i: int, o: int) -> int:
        return globals()["fp8"](i, o, sb)

    d, h, hd, qr = c["hidden_size"], c["num_attention_heads"], c["head_dim"], c["q_lora_rank"]
    o_r, g, e, im = c["o_lora_rank"], c["o_groups"], c["n_routed_experts"], \
        c["moe_intermediate_size"]
    k, v, ih, ihd, hc = c["num_experts_per_tok"], c["vocab_size"], c["index_n_heads"], \
        c["index_head_dim"], c["hc_mult"]
    n = c["num_hidden_layers"]
    mix = (2 + hc) * hc
    el = act = byt = 0

    def layer(m: int, hashed: bool) -> tuple[int, int, int]:
        # attention: wq_a, wkv, wq_b, wo_a (g blocks), wo_b (FP8); q_norm, kv_norm; sinks fp32
        lin = [(d, qr), (d, hd), (qr, h * hd), (h * hd // g, g * o_r), (g * o_r, d)]
        e_, b_ = sum(i * o for i, o in lin) + qr + hd + h, \
            sum(fp8(i, o) for i, o in lin) + 2 * (qr + hd) + 4 * h
        for width, on in ((hd, m > 1), (ihd, m == 4)):  # compressor, indexer's compressor
            if on:
                cf = 2 if m == 4 else 1
                e_ += m * cf * width + 2 * d * cf * width + width   # ape, wkv + wgate, norm
                b_ += 4 * m * cf * width + 2 * (2 * d * cf * width + width)
        if m == 4:  # indexer wq_b (FP8), weights_proj (bf16)
            e_ += qr * ih * ihd + d * ih
            b_ += fp8(qr, ih * ihd) + 2 * d * ih
        # MoE: gate (bf16), tid2eid (int32) or e_score_correction_bias (fp32), shared expert
        # (FP8), experts (MXFP4)
        table = v * k if hashed else e
        e_ += d * e + table + 3 * d * im
        b_ += 2 * d * e + 4 * table + 2 * fp8(d, im) + fp8(im, d)
        experts = e * 3 * d * im
        # hyper-connections (fp32), attn_norm and ffn_norm
        hcp = 2 * (mix * hc * d + mix + 3)
        e_ += experts + hcp + 2 * d
        b_ += (e * 3 * (d * im // 2 + d * im // 32) if fp4 else
               e * (2 * fp8(d, im) + fp8(im, d))) + 4 * hcp + 2 * 2 * d
        return e_, e_ - experts + k * 3 * d * im, b_

    if mtp:  # one next-n layer: a decoder layer without compressor, e_proj, h_proj (FP8),
        # enorm, hnorm, the head's norm, an hc_head (fp32)
        e_, a_, b_ = layer(1, False)
        hch = hc * hc * d + hc + 1
        return {"elements": e_ + 2 * d * d + 3 * d + hch, "active": a_,
                "bytes": b_ + 2 * fp8(d, d) + 2 * 3 * d + 4 * hch}
    for i, m in enumerate(c["compress_ratios"][:n]):
        e_, a_, b_ = layer(max(m, 1), i < c["num_hash_layers"])
        el, act, byt = el + e_, act + a_, byt + b_
    hch = hc * hc * d + hc + 1  # the final hc_head
    top = 2 * v * d + d + hch   # embedding, untied head (bf16), final norm
    return {"elements": el + top, "active": act + top,
            "bytes": byt + 2 * (2 * v * d + d) + 4 * hch}


def test_flash_and_pro_counted_by_hand():
    for name, total, active, mtp in (
            ("deepseek-v4-flash", 284_334_567_511, 13_801_959_511, 6_610_048_891),
            ("deepseek-v4-pro", 1_572_999_528_803, 49_781_408_099, 25_840_145_979)):
        c, r = bundled_config(name), count_params(bundled_config(name))
        assert r.total == by_hand(c)["elements"] == total
        assert r.active == by_hand(c)["active"] == active
        assert r.mtp == by_hand(c, mtp=True)["elements"] == mtp
        assert r.towers == "none" and not r.notes


def test_announced_totals_and_active():
    # DeepSeek's model cards: V4-Flash 284B total, 13B activated; V4-Pro 1.6T, 49B (MTP apart).
    flash, pro = (count_params(bundled_config(n)) for n in ("deepseek-v4-flash",
                                                            "deepseek-v4-pro"))
    assert abs(flash.total / 284e9 - 1) < 0.002
    assert 1.55e12 <= pro.total < 1.65e12  # "1.6T" is a tenth of a trillion: 1.573T rounds to it
    # active as DeepSeek counts it, without the input embedding (V3's 37B likewise): 13.27B
    # ("13B") and 48.85B ("49B")
    assert 13e9 <= flash.active - flash.parts["embedding"] < 13.5e9
    assert abs((pro.active - pro.parts["embedding"]) / 49e9 - 1) < 0.005


def test_hub_element_count_of_the_pro_checkpoint():
    """The Hub counts stored elements: an MXFP4 byte (I8) holds two weights, every e8m0 scale
    is one element. The Pro page's Safetensors count is "862B params" (reported by
    openclawradar.com, 2026-04-24: "~862 billion"; theapplied.co: 861 mil millones); the
    checkpoint holds the main model and its next-n layer, no MTP embedding or head."""
    c = bundled_config("deepseek-v4-pro")
    r, q = count_params(c), read_quantization(c)
    stored = r.total + r.mtp
    for lin in r.linears + r.mtp_linears:
        if ".experts." in lin.name:
            stored += lin.params // 32 - lin.params // 2
        elif q.quantized(lin.name, lin.part):
            stored += lin.count * math.ceil(lin.in_features / 128) * math.ceil(
                lin.out_features / 128)
    assert stored == 861_608_274_846 and 861e9 <= stored < 862.5e9


def test_checkpoint_bytes_by_hand_and_the_download():
    # Download sizes on framia.pro's DeepSeek V4 model card page: ~160 GB (Flash), ~865 GB
    # (Pro). kvlib: tensor bytes, no safetensors headers, next-n layer included.
    for name, main_bytes, with_mtp, published in (
            ("deepseek-v4-flash", 156_006_389_980, 159_600_177_736, 160e9),
            ("deepseek-v4-pro", 850_738_896_844, 864_695_484_536, 865e9)):
        c = bundled_config(name)
        q = read_quantization(c)
        assert q.method == "deepseek_v4_fp8" and q.scheme.scale_bytes == 1
        assert (q.experts.bits, q.experts.group, q.experts.scale_bytes) == (4, 32, 1)
        assert checkpoint_bytes(c) == by_hand(c)["bytes"] == main_bytes
        assert checkpoint_bytes(c, include_mtp=True) == main_bytes + by_hand(c, True)["bytes"] \
            == with_mtp
        assert abs(with_mtp / published - 1) < 0.01


def test_fp8_experts_keep_fp32_block_scales():
    # expert_dtype fp8 (V4-Flash-Base): Fp8MoEMethod experts, fp32 block scales everywhere
    # (quant_config.py:111-115, 228-230)
    c = dict(bundled_config("deepseek-v4-flash"), expert_dtype="fp8")
    q = read_quantization(c)
    assert q.experts is None and q.scheme.scale_bytes == 4
    assert checkpoint_bytes(c) == by_hand(c)["bytes"] == 285_930_747_484


def test_weights_per_gpu_under_tp():
    """vLLM keeps whole on every rank: wq_a + wkv (fused_wqa_wkv), the compressors, the
    indexer's wq_b and weights_proj, the gate, its bias or hash table, the hyper-connections
    and norms; the rest splits by TP (vocabulary padded to 64)."""
    c = bundled_config("deepseek-v4-flash")
    r = count_params(c)
    whole = 2 * r.parts["norms"] + sum(f.elements * f.bytes_per for f in r.fixed if f.whole)
    for lin in r.linears:
        if lin.name.endswith(("compressor.wkv", "compressor.wgate", "indexer.weights_proj",
                              ".ffn.gate")):  # bf16
            whole += 2 * lin.params
        elif lin.name.endswith((".attn.wq_a", ".attn.wkv", "indexer.wq_b")):  # FP8
            whole += fp8(lin.in_features, lin.out_features)
    w1, w4 = checkpoint_weights(c, 1), checkpoint_weights(c, 4)
    assert w4.replicated == w1.replicated == whole
    assert w1.per_gpu == w1.total == checkpoint_bytes(c)
    # padded vocabulary: 129,280 is a multiple of 64, so the split is exact but for the ceil
    assert w4.per_gpu == math.ceil((w1.total - whole) / 4) + whole
    assert 37 * 2**30 < w4.per_gpu < 37.5 * 2**30


def run_json(capsys, *argv):
    import json

    rc = main(["plan", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def test_plan_needs_no_flags(capsys):
    rc, d, err = run_json(capsys, "deepseek-v4-flash", "--gpu", "H200", "--gpus", "4", "--tp",
                          "4", "--context", "128K")
    flash = checkpoint_weights(bundled_config("deepseek-v4-flash"), 4)
    assert rc == 0 and d["fits"] and d["weight_dtype"] == "checkpoint (deepseek_v4_fp8)"
    assert d["params"] == 284_334_567_511 and d["weights_bytes_per_gpu"] == flash.per_gpu
    assert d["max_sequences"] == 173
    rc, d8, _ = run_json(capsys, "deepseek-v4-pro", "--gpu", "H200", "--gpus", "8", "--tp", "8",
                         "--context", "1M")
    rc4, d4, _ = run_json(capsys, "deepseek-v4-pro", "--gpu", "H200", "--gpus", "8", "--tp", "4",
                          "--context", "1M")
    assert rc == 0 and d8["fits"] and d8["max_sequences"] == 3
    assert d8["weights_bytes_per_gpu"] == checkpoint_weights(bundled_config("deepseek-v4-pro"),
                                                             8).per_gpu
    # V4's cache is one latent per token, not split across TP ranks; the weights are
    assert d4["kv_bytes_per_sequence_per_gpu"] == d8["kv_bytes_per_sequence_per_gpu"]
    assert d4["weights_bytes_per_gpu"] > 1.9 * d8["weights_bytes_per_gpu"]
    assert not d4["fits"]
