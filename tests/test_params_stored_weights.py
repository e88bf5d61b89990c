"""Weight bytes read from a model folder (issue 42): ``model.safetensors.index.json``'s
``metadata.total_size``, else the safetensors headers (8-byte little-endian length, then
JSON), parsed without the safetensors package. Files are written here by hand, byte by byte,
and (where the package is installed) by safetensors itself, an independent writer."""

from __future__ import annotations

import json
import struct

import pytest

from kvlib.serving.weights import safetensors_header, stored_weights


def _write(path, tensors: dict, pad: bytes = b"") -> None:
    """A safetensors file by hand: <Q length, JSON header, the data bytes (zeros)."""
    header = json.dumps(tensors).encode() + pad
    end = max((t["data_offsets"][1] for k, t in tensors.items() if k != "__metadata__"),
              default=0)
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(end))


def test_index_total_size_is_read_exactly(tmp_path):
    # Qwen3-30B-A3B's published index: "total_size": 61064245248 (bytes, bf16)
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 61064245248}, "weight_map": {}}))
    w = stored_weights(tmp_path)
    assert w.total == 61064245248
    assert "model.safetensors.index.json" in w.how and "61,064,245,248 bytes" in w.how


def test_headers_summed_by_hand(tmp_path):
    # bf16 (2, 3): 12 bytes; f32 (4,): 16 bytes; f8_e4m3 (5,): 5 bytes; 12 + 16 + 5 = 33
    _write(tmp_path / "model-00001-of-00002.safetensors", {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [12, 28]}}, pad=b"   ")
    _write(tmp_path / "model-00002-of-00002.safetensors", {
        "c": {"dtype": "F8_E4M3", "shape": [5], "data_offsets": [0, 5]}})
    w = stored_weights(tmp_path)
    assert (w.total, w.tensors) == (33, 3)
    assert dict(w.by_dtype) == {"BF16": 12, "F32": 16, "F8_E4M3": 5}
    assert "2 safetensors files" in w.how and "3 tensors" in w.how


def test_index_preferred_over_headers(tmp_path):
    _write(tmp_path / "model.safetensors", {"a": {"dtype": "BF16", "shape": [1],
                                                  "data_offsets": [0, 2]}})
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 2}}))
    assert stored_weights(tmp_path).source == ("model.safetensors.index.json",)


@pytest.mark.parametrize("index, field", [
    ({"metadata": {}}, "metadata.total_size"),
    ({"metadata": {"total_size": "12GB"}}, "'12GB'"),
    ({"metadata": {"total_size": True}}, "True"),
    ({"weight_map": {}}, "metadata.total_size"),
])
def test_bad_index_named(tmp_path, index, field):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="model.safetensors.index.json") as e:
        stored_weights(tmp_path)
    assert field in str(e.value)


def test_offsets_disagreeing_with_shape_named(tmp_path):
    _write(tmp_path / "m.safetensors", {"w": {"dtype": "BF16", "shape": [3],
                                              "data_offsets": [0, 4]}})
    with pytest.raises(ValueError, match=r"m.safetensors: tensor 'w': BF16 \[3\] is 6 bytes, "
                                         r"but its data_offsets span 4"):
        stored_weights(tmp_path)


def test_not_safetensors_named(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ValueError, match="x.safetensors: header length"):
        stored_weights(tmp_path)
    (tmp_path / "x.safetensors").write_bytes(struct.pack("<Q", 4) + b"nope")
    with pytest.raises(ValueError, match="x.safetensors: the safetensors header is not JSON"):
        safetensors_header(tmp_path / "x.safetensors")


def test_empty_folder_and_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="neither model.safetensors.index.json nor"):
        stored_weights(tmp_path)
    with pytest.raises(ValueError, match="not a model folder"):
        stored_weights(tmp_path / "absent")
