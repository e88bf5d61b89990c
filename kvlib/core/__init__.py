"""The spine: notation, units and dtypes, the tensor tables (the paper's, DeepSeek's RoPE
variant, kvlib's states), their SymPy derivation, the numeric functions generated from it,
the attention kinds and decode-cost tables.

Imports nothing else from kvlib (NumPy and SymPy only).
"""
