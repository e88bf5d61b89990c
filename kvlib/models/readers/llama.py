"""Llama 1-3 and GPT-2: standard attention on every layer, read by the generic reader.

Only families checked against transformers' modeling code are registered; an
unregistered ``model_type`` is still read by the generic reader, with the
assumption said aloud (see :func:`kvlib.models.readers.parse_config`).
"""

from __future__ import annotations

from kvlib.models.readers import attention
from kvlib.models.readers.registry import register


@register("llama", "gpt2")
def read(c, family, n, notes):
    return attention.read(c, family, n, notes)
