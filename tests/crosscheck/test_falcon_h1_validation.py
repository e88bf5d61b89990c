"""Falcon-H1's configs kvlib refuses or reads, as transformers 5.25.0's own FalconH1Config
validates them (tests/test_config_vllm_reads.py holds kvlib's side without transformers; this
file needs transformers, which `make crosscheck` installs)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from test_config_vllm_reads import FALCON_H1  # noqa: E402

transformers = pytest.importorskip("transformers")


def _build(cfg: dict):
    return transformers.FalconH1Config(**{k: v for k, v in cfg.items() if k != "model_type"})


def _rejects(cfg: dict) -> str:
    with pytest.raises(Exception) as e:  # noqa: B017 (strict validation's own error type)
        _build(cfg)
    return str(e.value)


def test_no_mamba_d_ssm_takes_1024_which_24_heads_do_not_divide():
    cfg = {k: v for k, v in FALCON_H1.items() if k != "mamba_d_ssm"}
    assert "mamba_n_heads must divide" in _rejects(cfg)


def test_heads_times_width_not_d_ssm_is_rejected():
    assert "do not match the model intermediate_size" in _rejects({**FALCON_H1,
                                                                   "mamba_n_heads": 16})


def test_heads_that_do_not_divide_d_ssm_are_rejected():
    assert "mamba_n_heads must divide" in _rejects({**FALCON_H1, "mamba_n_heads": 25})


def test_null_d_ssm_and_auto_head_read_as_kvlib_reads_them():
    t = _build({**FALCON_H1, "mamba_d_ssm": None, "mamba_d_head": "auto"})
    assert (t.mamba_d_head, t.mamba_n_heads) == (256, 24)  # 6,144 // 24, as kvlib reads it


def test_the_published_config_builds():
    assert _build(FALCON_H1).mamba_d_head == 128
