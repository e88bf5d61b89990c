"""The spine: notation, units and dtypes, the paper's tensor tables, their SymPy derivation,
the numeric functions generated from it, the attention kinds and decode-cost tables.

Imports nothing else from kvlib (NumPy and SymPy only).
"""
