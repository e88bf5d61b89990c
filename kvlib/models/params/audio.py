"""Voxtral's audio tower and adapter as vLLM 0.34.0 loads them (:mod:`kvlib.models.params`,
issue 42).

vLLM builds Voxtral (models/voxtral.py:315-345) as the text model from ``text_config``, a
Whisper encoder (VoxtralEncoderModel -> WhisperEncoder with ``init_in_fp32``, whisper.py:
497-565) and the AudioLanguageAdapter (voxtral.py:652-660). With d = the encoder's width
(``audio_config.hidden_size``, Whisper's d_model), i its MLP width, M the mel bins, S the
source positions, L the layers, D the text width:

* conv1: M x d x 3 + d, conv2: d x d x 3 + d (nn.Conv1d with biases, whisper.py:517-518)
* embed_positions: S x d, created in fp32 (nn.Embedding under ``init_in_fp32``, :553-564)
* per layer (:383-410): qkv d -> 3 d with a bias of 3 d (QKVParallelLinear(bias=True): the k
  bias Whisper's checkpoint lacks is held all the same, zeros), out_proj d -> d + d, two
  LayerNorms (2 d each), fc1 d -> i + i, fc2 i -> d + d
* the final layer_norm (2 d)
* adapter: w_in (d x downsample_factor) -> D and w_out D -> D, no biases (nn.Linear). The
  Hugging Face file gives its input width as ``audio_config.intermediate_size`` (transformers'
  VoxtralMultiModalProjector.linear_1); vLLM's mistral-format config gives d_model x
  downsample_factor (transformers_utils/configs/mistral.py:245-280): the same 5120 in
  Voxtral Mini 3B's files.
"""

from __future__ import annotations

from kvlib.models.readers.fields import Fields

__all__ = ["voxtral_audio"]


def voxtral_audio(outer: Fields, d_text: int) -> dict[str, tuple[int, int, bool]]:
    """Voxtral's audio tower and adapter (module docstring), by name: (elements, bytes per
    element, held whole on every TP rank). Whole: the convolutions, the norms, the fp32
    positions, the adapter (plain nn.Linear) and the row-parallel out_proj's and fc2's biases;
    split by TP: qkv_proj, out_proj, fc1, fc2. Absent keys take transformers 5.25.0's
    VoxtralEncoderConfig defaults. Bytes per element 2 (the model's dtype; vLLM quantizes no
    tower here) but the fp32 positions (4)."""
    a = Fields(outer.data.get("audio_config") or {}, "audio_config.", outer)
    d = a.int("hidden_size", "d_model", required=False) or 1280
    i = a.int("intermediate_size", "encoder_ffn_dim", required=False) or 5120
    n = a.int("num_hidden_layers", "encoder_layers", required=False) or 32
    mel = a.int("num_mel_bins", required=False) or 128
    positions = a.int("max_source_positions", required=False) or 1500
    whole = (mel * d * 3 + d + d * d * 3 + d + n * (2 * 2 * d + d + d) + 2 * d)
    split = n * (d * 3 * d + 3 * d + d * d + d * i + i + i * d)
    return {"model.audio_tower (whole on every rank)": (whole, 2, True),
            "model.audio_tower.embed_positions": (positions * d, 4, True),
            "model.audio_tower (split by TP)": (split, 2, False),
            "model.multi_modal_projector (audio adapter)": (i * d_text + d_text * d_text, 2,
                                                            True)}
