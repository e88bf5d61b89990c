"""SGLang's state-pool line worked out again (``kvlib explain-log``, issue 43): "Mamba Cache is
allocated. max_mamba_cache_size: S, conv_state size: X GB, ssm_state size: Y GB" (0.5.23
mem_cache/memory_pool.py:1004-1009; the same words in the 0.5.9 logs posted; in speculative
decoding it adds the intermediate caches, :983-992, shown but not checked).

Each state layer keeps S + 1 slots (the pool's padding slot; memory_pool.py:722-753): a conv
state of (conv_dim / TP, K - 1) elements of b_c bytes and a temporal state of (heads / TP,
head_dim, state_size) elements of b_s bytes, with conv_dim and the shapes as
:mod:`kvlib.serving.engines.sglang.state` reads them (configs/mamba_utils.py
``Mamba2StateShape.create``). b_c = 2 (bfloat16), b_s = 4 unless the log's mamba_ssm_dtype says
otherwise. GB = 2^30 (memory_pool.py:116).
"""

from __future__ import annotations

import re

from kvlib.serving.engines.sglang.state import _shape

__all__ = ["MAMBA", "mamba_line_bytes"]

MAMBA = re.compile(r"Mamba Cache is allocated\.\s*max_mamba_cache_size:\s*(?P<size>\d+),\s*"
                   r"conv_state size:\s*(?P<conv>[\d.]+)\s*GB,\s*ssm_state size:\s*"
                   r"(?P<ssm>[\d.]+)\s*GB(?P<spec>\s*intermediate_ssm_state_cache)?")


def mamba_line_bytes(groups, size: int, tp: int, b_s: int, b_c: int = 2) -> tuple[int, int]:
    """(conv_state, ssm_state) bytes one TP rank allocates for ``size`` state slots (plus the
    padding slot) over the state layer ``groups`` (Gated DeltaNet or Mamba2); ValueError where
    TP does not divide the heads or the conv channels, as SGLang's ``divide``."""
    conv = ssm = 0
    for g in groups:
        v = _shape(g)
        n_g = v["n_g"] if v["n_g"] % tp == 0 else tp  # extra_groups_for_head_shards
        conv_dim = v["d_inner"] + 2 * n_g * v["d_state"]
        if v["h_s"] % tp or conv_dim % tp:
            raise ValueError(f"TP={tp} does not divide {v['h_s']} state heads and a conv state "
                             f"of {conv_dim} channels (configs/mamba_utils.py divide)")
        conv += g.layers * (size + 1) * conv_dim // tp * (v["K_conv"] - 1) * b_c
        ssm += g.layers * (size + 1) * v["h_s"] // tp * v["d_h"] * v["d_state"] * b_s
    return conv, ssm
