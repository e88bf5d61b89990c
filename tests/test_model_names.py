"""Model names as people type them (issue 36): a repository name without its organisation, and
a model's folder named by its whole name."""

import json
from pathlib import Path

import pytest

from kvlib.models.catalog import bundled_config, bundled_name, load_model, variant_of


@pytest.mark.parametrize("typed", ["Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct",
                                   "Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"])
def test_a_repository_name_without_its_organisation_is_the_bundled_model(typed):
    assert bundled_name(typed) == "llama-3.1-8b"
    spec = load_model(typed)
    assert spec.name == "llama-3.1-8b"


def test_a_variant_says_how_it_was_read_and_a_short_name_does_not():
    said = load_model("Llama-3.1-8B-Instruct").assumptions
    assert any("read as the bundled meta-llama/Llama-3.1-8B" in a for a in said)
    assert not any("read as the bundled" in a for a in load_model("llama-3.1-8b").assumptions)
    assert variant_of("llama-3.1-8b") is None  # a bundled short name, not a variant


def test_an_unknown_bare_name_is_still_refused():
    with pytest.raises(ValueError, match="unknown model 'Llama-3.1-9B-Instruct'"):
        load_model("Llama-3.1-9B-Instruct")


def test_a_folder_is_named_by_its_whole_name(tmp_path: Path):
    folder = tmp_path / "mistral-v0.3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(bundled_config("llama-3.1-8b")))
    assert load_model(str(folder)).name == "mistral-v0.3"
    assert load_model(folder).name == "mistral-v0.3"
    assert load_model(str(folder / "config.json")).name == "mistral-v0.3"


def test_the_reader_names_a_folder_by_its_whole_name(tmp_path: Path, monkeypatch):
    """parse_config / read_config given a folder (not only load_model): 'mistral-v0.3', not the
    stem 'mistral-v0'; '.' and a bare 'config.json' in that folder name it too."""
    from kvlib import parse_config, read_config

    folder = tmp_path / "mistral-v0.3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(bundled_config("llama-3.1-8b")))
    assert parse_config(folder).name == "mistral-v0.3"
    assert read_config(str(folder)).name == "mistral-v0.3"
    monkeypatch.chdir(folder)
    assert parse_config(".").name == "mistral-v0.3"
    assert parse_config("config.json").name == "mistral-v0.3"
