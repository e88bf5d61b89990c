"""kvlib's reading of safetensors headers (``kvlib.serving.weights.stored_weights``) against
files safetensors itself writes (moved here from tests/test_params_stored_weights.py so that
``make crosscheck``, whose extra brings safetensors with transformers, runs it; the headers
summed by hand stay there)."""

from __future__ import annotations

import numpy as np
import safetensors.numpy as st_numpy
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlib.serving.weights import stored_weights

_DTYPES = {"float32": ("F32", 4), "float16": ("F16", 2), "int8": ("I8", 1),
           "int64": ("I64", 8), "uint8": ("U8", 1)}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(_DTYPES)),
                          st.lists(st.integers(0, 5), min_size=0, max_size=3)),
                min_size=1, max_size=6))
def test_headers_match_safetensors_own_writer(tmp_path_factory, tensors):
    """Property: for any tensors safetensors itself writes, the bytes read from the headers
    are the sum of elements x bytes per element, per dtype and in all."""
    folder = tmp_path_factory.mktemp("st")
    arrays = {f"t{i}": np.zeros(shape, dtype=dt) for i, (dt, shape) in enumerate(tensors)}
    st_numpy.save_file(arrays, str(folder / "model.safetensors"))
    w = stored_weights(folder)
    want: dict[str, int] = {}
    for dt, shape in tensors:
        name, size = _DTYPES[dt]
        n = 1
        for d in shape:
            n *= d
        want[name] = want.get(name, 0) + n * size
    assert w.total == sum(want.values())
    assert {k: v for k, v in dict(w.by_dtype).items() if v or k in want} == want
    assert w.tensors == len(tensors)
