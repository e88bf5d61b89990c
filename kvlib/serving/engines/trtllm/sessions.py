"""TensorRT-LLM's sessions: requests of C tokens at once, whole blocks each, at most
max_batch_size S_max (``SESSIONS``); a count of requests.
"""

from __future__ import annotations

import sympy as sp

from kvlib.serving.engines.trtllm.symbols import C, S_max, T, n

__all__ = ["SESSIONS"]

SESSIONS = sp.Min(S_max, sp.floor(T / (sp.ceiling(C / n) * n)))
