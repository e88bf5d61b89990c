"""EXAONE 4's layer kinds against transformers 5.25.0's own config classes, run on the CPU
(moved here from tests/test_config_unseen_2026.py so that ``make crosscheck``, which installs
transformers, runs them): Exaone4_5_Config turns the text_config into an Exaone4Config with the
file's layer_types, and Exaone4Config derives layer_types where a file has none
(configuration_exaone4.py:102-108: layer i slides iff (i + 1) % pattern != 0; pattern 4 and
window 4096 by default), or fails where kvlib refuses."""

import json
from pathlib import Path

import pytest
import transformers

from kvlib import parse_config

UNSEEN = Path(__file__).resolve().parents[1] / "fixtures" / "configs" / "unseen-2026"


def _exaone(n: int, **kw) -> dict:
    return {"model_type": "exaone4", "num_hidden_layers": n, "hidden_size": 256,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, **kw}


def test_exaone_4_5_text_config_is_what_transformers_makes_of_it():
    cfg = json.loads((UNSEEN / "exaone-4.5-33b.json").read_text())
    text = transformers.Exaone4_5_Config(**cfg).get_text_config()
    assert text.model_type == "exaone4"
    assert text.layer_types == cfg["text_config"]["layer_types"]
    assert text.layer_types.count("full_attention") == 16
    assert parse_config(cfg).family == "exaone4"


@pytest.mark.parametrize("n, extra", [(8, {}), (12, {"sliding_window_pattern": 3}),
                                      (5, {"sliding_window_pattern": 1}),
                                      (9, {"sliding_window_pattern": 4, "sliding_window": 512}),
                                      (7, {"sliding_window_pattern": 2, "sliding_window": 64})])
def test_exaone_without_layer_types_derives_them_as_exaone4config_does(n, extra):
    theirs = transformers.Exaone4Config(**_exaone(n, **extra))
    r = parse_config(_exaone(n, **extra))
    ours = [r.layer(i) for i in range(n)]
    assert ["full_attention" if k[0].value == "full" else "sliding_attention"
            for k in ours] == theirs.layer_types
    assert {k[1] for k in ours if k[0].value == "sliding"} <= {theirs.sliding_window}
    assert any("no layer_types: Exaone4Config derives it" in a for a in r.assumptions)


@pytest.mark.parametrize("extra", [{"sliding_window_pattern": "LLLG"}, {"sliding_window": None}])
def test_what_kvlib_refuses_exaone4config_cannot_build(extra):
    with pytest.raises(ValueError, match="give layer_types"):
        parse_config(_exaone(8, **extra))
    with pytest.raises((TypeError, ZeroDivisionError)):
        transformers.Exaone4Config(**_exaone(8, **extra))
