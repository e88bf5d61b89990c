"""NumPy reference implementations: attention with an explicit KV cache, MLA (naive,
absorbed, decoupled RoPE) and RoPE, the code the notebooks check the formulas against.

May import :mod:`kvlib.core`.
"""
