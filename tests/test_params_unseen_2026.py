"""Parameters of the configs a tester ran ``kvlib plan`` on, unseen before (issue 42): Mistral 3
(Devstral Small 2, Ministral 3 3B: a Pixtral tower), LFM2 and LFM2-VL, Voxtral (an audio tower)
and Qwen3.5's vision tower, each counted by hand below from the config's numbers and vLLM
0.34.0's modeling code (file:line cited), not from kvlib. The files are byte-for-byte copies in
tests/fixtures/configs/unseen-2026/ (SOURCES.md). make crosscheck compares the same counts with
transformers 5.25.0's meta-device model (tests/crosscheck/test_params_unseen_meta.py).
"""

import copy
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from kvlib.models.params import count_params
from kvlib.serving.weights import checkpoint_weights

UNSEEN = Path(__file__).resolve().parent / "fixtures" / "configs" / "unseen-2026"


def load(name: str) -> dict:
    return json.loads((UNSEEN / f"{name}.json").read_text(encoding="utf-8"))


def llama_like(v, d, n, h, kv, hd, i, tied):
    """Embedding, head unless tied, per layer q/k/v/o, a gated MLP and two RMSNorms, a final
    norm (vLLM llama.py:267-305; Ministral 3 as MistralForCausalLM, registry.py:178)."""
    return (v * d * (1 if tied else 2)
            + n * (d * h * hd + 2 * d * kv * hd + h * hd * d + 3 * d * i + 2 * d) + d)


def pixtral(d_text, c=3, p=14, d=1024, i=4096, n=24, m=2):
    """Pixtral tower + Mistral 3 projector, no biases (pixtral.py:1599-1908, mistral3.py:
    97-190): (whole on every rank, split by TP)."""
    whole = c * p * p * d + d + n * 2 * d + d + (d * m * m) * d   # conv, ln_pre, norms, merger
    split = n * (3 * d * d + d * d + 2 * d * i + i * d) + d * d_text + d_text * d_text
    return whole, split


def tower_fixed(count):
    return {f.name: (f.elements, f.bytes_per, f.whole) for f in count.fixed if f.part == "vision"}


# --- Mistral 3: Devstral Small 2 24B (fp8) and Ministral 3 3B -------------------------------

def test_devstral_small_2_text_and_pixtral_tower_by_hand():
    """Text: 131,072 x 5,120, 40 layers, 32 heads of 128, 8 KV heads, MLP 32,768, head untied
    (the wrapper's tie_word_embeddings false, handed down to text_config). Tower: 24 layers of
    1,024 (vision_feature_layer -1 keeps all), MLP 4,096, patch 14, merge 2, no projector bias."""
    r = count_params(load("devstral-small-2-24b-fp8"))
    text = llama_like(131072, 5120, 40, 32, 8, 128, 32768, tied=False)
    assert text == 23_572_403_200
    whole, split = pixtral(5120)
    assert (whole, split) == (602_112 + 1024 + 49_152 + 1024 + 4_194_304,
                              24 * 16_777_216 + 5_242_880 + 26_214_400)
    assert r.towers == "counted" and r.model_type == "ministral3"
    assert r.text == text and r.parts["vision"] == whole + split == 438_958_080
    assert r.total == 24_011_361_280
    assert tower_fixed(r) == {"model.vision_tower (whole on every rank)": (whole, 2, True),
                              "model.vision_tower (split by TP)": (split, 2, False)}
    assert all(lin.part != "vision" for lin in r.linears)  # the tower is priced apart


def test_devstral_tower_per_gpu_at_tp_8():
    """The fp8 checkpoint keeps the tower and projector in bf16 (modules_to_not_convert): per
    GPU at TP 8 the tower adds its whole part and an eighth of the rest, 2 B each (within the
    one byte the per-GPU figure rounds up)."""
    cfg = load("devstral-small-2-24b-fp8")
    r = count_params(cfg)
    text_only = replace(r, parts={**r.parts, "vision": 0}, towers="none",
                        fixed=tuple(f for f in r.fixed if f.part != "vision"))
    whole, split = pixtral(5120)
    more = checkpoint_weights(cfg, 8, r).per_gpu - checkpoint_weights(cfg, 8, text_only).per_gpu
    assert abs(more - (whole * 2 + split * 2 / 8)) <= 1


def test_ministral3_3b_text_tied_and_pixtral_tower_by_hand():
    """Text: 131,072 x 3,072 tied, 26 layers, 32 heads of 128, 8 KV heads, MLP 9,216; the
    tower as Devstral's, projected to 3,072. The file's model_type is the text family's
    (mlc-llm's preset): counted by its architectures, said in a note."""
    r = count_params(load("ministral3-3b-2512"))
    text = llama_like(131072, 3072, 26, 32, 8, 128, 9216, tied=True)
    whole, split = pixtral(3072)
    assert (text, whole + split) == (3_429_006_336, 420_083_712)
    assert (r.text, r.parts["vision"], r.total) == (text, whole + split, 3_849_090_048)
    assert any("Mistral3ForConditionalGeneration" in n and "config.py:1309-1315" in n
               for n in r.notes)


@pytest.mark.parametrize("change, layers, bias", [({"vision_feature_layer": -3}, 22, False),
                                                  ({"vision_feature_layer": [2, -5]}, 20, False),
                                                  ({"multimodal_projector_bias": True}, 24, True)])
def test_pixtral_layers_and_projector_biases_as_vllm_builds(change, layers, bias):
    """vLLM builds the encoder up to the deepest feature layer (mistral3.py:391-409: -k keeps
    24 - k + 1); the projector's biases: linear_1's (split) and linear_2's (whole, added after
    the reduction), 5,120 each."""
    cfg = {**load("devstral-small-2-24b-fp8"), **change}
    r = count_params(cfg)
    whole, split = pixtral(5120, n=layers)
    assert tower_fixed(r) == {
        "model.vision_tower (whole on every rank)": (whole + (5120 if bias else 0), 2, True),
        "model.vision_tower (split by TP)": (split + (5120 if bias else 0), 2, False)}


@pytest.mark.parametrize("change, message", [
    ({"vision_feature_layer": 30}, "vision_feature_layer must be a layer index"),
    ({"vision_config": {"hidden_size": 1000, "num_attention_heads": 16}},
     "vision_config.hidden_size=1000 is not divisible by vision_config.num_attention_heads=16"),
    ({"vision_config": {"head_dim": 128}}, "vision_config.head_dim=128, but vLLM builds"),
])
def test_pixtral_refusals_name_the_field(change, message):
    cfg = {**load("devstral-small-2-24b-fp8"), **change}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        count_params(cfg)


def test_a_text_config_error_says_text_config():
    cfg = copy.deepcopy(load("devstral-small-2-24b-fp8"))
    del cfg["text_config"]["hidden_size"]
    with pytest.raises(ValueError, match="^text_config: "):
        count_params(cfg)


# --- LFM2 and LFM2.5-VL ---------------------------------------------------------------------

# LFM2.5-VL-1.6B's text model (LFM2-1.2B): 16 layers, 6 attention (layer_types), 10 short conv;
# d 2,048, 32 heads of 2,048 / 32 = 64, 8 KV heads; vocab 65,536, head tied (lfm2.py:593-599);
# MLP: auto-adjusted int(2 x 12,288 / 3) = 8,192, x 1.0, a multiple of 256 (lfm2.py:71-78)
LFM2_TEXT = (65536 * 2048                                     # embedding (the head tied)
             + 10 * (2048 * 3 + 2048 * 3 * 2048 + 2048 * 2048)  # conv: conv1d, in_proj, out
             + 6 * (2048 * (32 + 2 * 8) * 64 + 2048 * 2048 + 2 * 64)  # qkv, out, q/k norms
             + 16 * (3 * 2048 * 8192 + 2 * 2048)              # w1 / w3 / w2, two norms
             + 2048)                                          # embedding_norm


def test_lfm2_text_by_hand():
    cfg = load("lfm2.5-vl-1.6b")["text_config"]
    r = count_params(cfg)
    assert (r.model_type, r.towers, r.total) == ("lfm2", "none", LFM2_TEXT)
    assert LFM2_TEXT == 1_170_340_608
    assert r.active == r.total  # no experts


def test_lfm2_5_vl_siglip2_tower_by_hand():
    """SigLIP2 NaViT (lfm2_siglip2.py): patch linear 3 x 16 x 16 -> 1,152 with bias, 256
    positions, 27 layers (LayerNorms, qkv, out, fc1 -> 4,304, fc2, all with biases),
    post_layernorm; projector (lfm2_vl.py:493-525): 1,152 x 2^2 = 4,608 -> 2,048 -> 2,048 with
    biases, no LayerNorm (projector_use_layernorm false)."""
    r = count_params(load("lfm2.5-vl-1.6b"))
    d, i = 1152, 4304
    layer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * i + i) + (i * d + d)
    tower = (3 * 16 * 16 * d + d + 256 * d + 27 * layer + 2 * d
             + (4608 * 2048 + 2048) + (2048 * 2048 + 2048))
    assert tower == 426_285_296
    assert (r.text, r.parts["vision"], r.total) == (LFM2_TEXT, tower, 1_596_625_904)
    split = 27 * ((d * 3 * d + 3 * d) + d * d + (d * i + i) + i * d)  # row biases whole
    assert tower_fixed(r)["model.vision_tower (split by TP)"] == (split, 2, False)


def test_lfm2_reads_what_vllm_builds():
    """full_attn_idxs without layer_types (Lfm2Config.__post_init__), no MLP auto-adjust (the
    width as given), tie_word_embeddings false (vLLM ties all the same: said), conv_bias."""
    text = load("lfm2.5-vl-1.6b")["text_config"]
    cfg = {k: v for k, v in text.items() if k != "layer_types"}
    cfg.update(full_attn_idxs=[2, 5, 8, 10, 12, 14], block_auto_adjust_ff_dim=False,
               tie_word_embeddings=False, conv_bias=True)
    r = count_params(cfg)
    assert r.total == (LFM2_TEXT + 16 * 3 * 2048 * (12288 - 8192)     # MLP 12,288 wide
                       + 10 * (2048 + 3 * 2048 + 2048))              # conv biases
    assert any("always reads the embedding as LFM2's head" in n for n in r.notes)


def test_lfm2_refuses_a_block_width_vllm_and_transformers_build_apart():
    cfg = {**load("lfm2.5-vl-1.6b")["text_config"], "block_dim": 1024}
    with pytest.raises(ValueError, match="^block_dim=1024 differs from hidden_size=2048"):
        count_params(cfg)


# --- Voxtral Mini 3B: the Whisper audio tower vLLM loads --------------------------------------

def test_voxtral_audio_tower_by_hand():
    """Text: Llama, 131,072 x 3,072 untied, 30 layers, 32 heads of 128, 8 KV heads, MLP 8,192.
    Audio (whisper.py:497-565, voxtral.py:652-660): conv1 128 x 1,280 x 3 + 1,280, conv2
    1,280 x 1,280 x 3 + 1,280, 1,500 fp32 positions x 1,280, 32 layers (qkv 1,280 -> 3,840
    with a 3,840 bias: vLLM holds the k bias the checkpoint lacks; out 1,280^2 + 1,280; two
    LayerNorms; fc1 -> 5,120 + 5,120; fc2 + 1,280), a final LayerNorm; adapter 5,120 -> 3,072
    -> 3,072 without biases."""
    r = count_params(load("voxtral-mini-3b-2507"))
    text = llama_like(131072, 3072, 30, 32, 8, 128, 8192, tied=False)
    d, i = 1280, 5120
    whole = 128 * d * 3 + d + d * d * 3 + d + 32 * (4 * d + d + d) + 2 * d
    split = 32 * (d * 3 * d + 3 * d + d * d + d * i + i + i * d)
    adapter = 5120 * 3072 + 3072 * 3072
    assert text == 4_014_136_320
    assert (r.text, r.towers) == (text, "counted")
    assert tower_fixed(r) == {
        "model.audio_tower (whole on every rank)": (whole, 2, True),
        "model.audio_tower.embed_positions": (1500 * d, 4, True),
        "model.audio_tower (split by TP)": (split, 2, False),
        "model.multi_modal_projector (audio adapter)": (adapter, 2, True)}
    assert r.total == text + whole + 1500 * d + split + adapter == 4_676_312_064


# --- Qwen3.5: the vision tower vLLM loads (Qwen3-VL's, no deepstack) -------------------------

def qwen3_5_tower(out, d=1152, i=4304, depth=27, p=16, positions=2304):
    """qwen3_vl.py Qwen3_VisionTransformer as qwen3_5.py:500-518 builds it: Conv3d 3 x 2 x
    16 x 16 -> d with bias, positions, blocks (two LayerNorms, qkv and proj with biases, MLP
    fc1 / fc2 with biases), the merger (LayerNorm of d, fc1 over 4 d, fc2 -> out); no
    deepstack mergers (deepstack_visual_indexes [])."""
    w = 4 * d
    block = 4 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * i + i) + (i * d + d)
    return (3 * 2 * p * p * d + d + positions * d + depth * block
            + 2 * d + (w * w + w) + (w * out + out))


@pytest.mark.parametrize("name, out", [("unseen-2026/qwen3.5-9b", 4096),
                                       ("qwen3.5-35b-a3b", 2048),
                                       ("qwen3.5-397b-a17b", 4096)])
def test_qwen3_5_vision_tower_counted(name, out):
    cfg = json.loads((UNSEEN.parent / f"{name}.json").read_text(encoding="utf-8"))
    r = count_params(cfg)
    assert r.towers == "counted"
    assert r.parts["vision"] == qwen3_5_tower(out)
    without = count_params({k: v for k, v in cfg.items() if k != "vision_config"})
    assert r.text == without.total and r.active == without.active
    if name.endswith("9b"):
        assert qwen3_5_tower(4096) == 456_010_480 and r.total == 9_409_813_744


def test_qwen3_5_tower_defaults_are_qwen3_5_visionconfigs():
    """An empty vision_config: Qwen3_5VisionConfig's defaults (out_hidden_size 3,584), and no
    deepstack merger (the class has no deepstack_visual_indexes)."""
    cfg = {**load("qwen3.5-9b"), "vision_config": {}}
    assert count_params(cfg).parts["vision"] == qwen3_5_tower(3584)


def test_qwen3_5_tower_per_gpu_at_tp_8():
    """Qwen3.5-9B at TP 8, the tower on one rank in bf16: whole on every rank the Conv3d
    patch embedding (3 x 2 x 16 x 16 x 1,152 + 1,152), the 2,304 positions, 27 blocks' two
    LayerNorms and their row-parallel proj and linear_fc2 biases (1,152 each), the merger's
    LayerNorm and its linear_fc2 bias (4,096); the rest split 8 ways. 122,083,868 B is what
    vLLM 0.34.0's own Qwen3_5ForConditionalGeneration holds under ``visual`` on rank 0 of TP 8
    (built on the meta device with its classes, the oracle's boot.py / drive.py)."""
    d, i, w = 1152, 4304, 4608
    whole = (3 * 2 * 16 * 16 * d + d + 2304 * d + 27 * (4 * d + d + d)
             + 2 * d + 4096)
    split = 27 * (d * 3 * d + 3 * d + d * d + d * i + i + i * d) + (w * w + w + w * 4096)
    assert whole + split == qwen3_5_tower(4096)
    r = count_params(load("qwen3.5-9b"))
    assert tower_fixed(r) == {"vision tower (whole on every rank)": (whole, 2, True),
                              "vision tower (split by TP)": (split, 2, False)}
    assert whole * 2 + split * 2 // 8 == 122_083_868


def test_lfm2_5_vl_per_gpu_at_tp_8():
    """LFM2.5-VL-1.6B's weights on one rank at TP 8, bf16, by hand: the embedding (65,536 is a
    multiple of 64: no padding) and the text model's linears split 8 ways (8 KV heads: one per
    rank), its norms whole (two per layer, the final one, and the attention layers' q / k
    layernorms of 64); the tower's parallel layers split, the rest of it and the projector
    (ReplicatedLinear) whole. 425,535,388 B is what vLLM 0.34.0's own
    Lfm2VLForConditionalGeneration holds on rank 0 of TP 8 (meta device, the oracle's boot.py)."""
    d, w, vd, vi = 2048, 8192, 1152, 4304
    text_split = (65536 * d + 10 * (d * 3 + d * 3 * d + d * d) + 6 * (d * 48 * 64 + d * d)
                  + 16 * 3 * d * w)
    text_whole = 16 * 2 * d + d + 6 * 2 * 64
    tower_split = 27 * ((vd * 3 * vd + 3 * vd) + vd * vd + (vd * vi + vi) + vi * vd)
    tower_whole = 426_285_296 - tower_split
    per_gpu = (text_split + tower_split) * 2 // 8 + (text_whole + tower_whole) * 2
    assert per_gpu == 425_535_388
    assert checkpoint_weights(load("lfm2.5-vl-1.6b"), 8).per_gpu == per_gpu
