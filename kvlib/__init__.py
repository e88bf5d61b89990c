"""kvlib: KV-cache memory derived from the paper's tensor tables, evaluated exactly.

One path from table to number: :mod:`kvlib.tables` (data) -> :mod:`kvlib.derive`
(SymPy) -> :mod:`kvlib.numeric` (generated functions) -> :mod:`kvlib.formulas`
(the attention kinds). Notebooks, widgets, plots, the CLI and the tests all call it.
"""

from kvlib.dtypes import DTYPE_BYTES, bytes_per_element
from kvlib.formulas import GQA, KINDS, MHA, MQA, Attention, ratio
from kvlib.units import describe, fmt_bytes, to_unit

__all__ = [
    "Attention", "MHA", "GQA", "MQA", "KINDS", "ratio",
    "DTYPE_BYTES", "bytes_per_element", "describe", "fmt_bytes", "to_unit",
]
__version__ = "0.1.0"
