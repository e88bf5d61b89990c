"""A model folder given to ``kvlib plan`` (config.json, and model.safetensors.index.json or
``*.safetensors`` beside it, as Hugging Face snapshots lay them out): its weights read from
the files (:func:`kvlib.serving.weights.stored_weights`), for every engine's plan."""

from __future__ import annotations

from pathlib import Path

__all__ = ["stored_weights_of"]


def stored_weights_of(model: str):
    """The :class:`~kvlib.serving.weights.StoredWeights` of ``model`` where it is a folder with
    config.json and the index or safetensors files beside it; else None (a bundled name, a
    config file, a folder holding config.json alone). ValueError naming the file and field for
    a malformed index or header."""
    from kvlib.serving.weights import INDEX, stored_weights

    folder = Path(str(model).strip())
    if not folder.is_dir() or not (folder / "config.json").is_file():
        return None
    if not (folder / INDEX).is_file() and not any(folder.glob("*.safetensors")):
        return None
    return stored_weights(folder)
