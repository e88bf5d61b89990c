"""NumPy reference attention with an explicit KV cache (notebooks 01-02).

Float64 throughout, weights drawn from a seeded generator, so every number a
notebook prints is reproducible. Shapes use the collection's symbols:
X is (N_KV, d_in); per-head weights are stacked on a leading head axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "softmax", "attention", "AttentionWeights", "init_weights", "causal_attention",
    "KVCache", "decode", "repeat_kv",
]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Row-wise softmax, shifted by the row maximum for stability."""
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None):
    """Soft lookup of ``q`` in a database of keys ``k`` and values ``v``.

    q: (n_q, d_QK), k: (n_kv, d_QK), v: (n_kv, d_V) -> (n_q, d_V).
    ``mask`` (n_q, n_kv) is True where a query may look.
    """
    scores = q @ k.T / np.sqrt(q.shape[-1])  # (n_q, n_kv)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ v


@dataclass(frozen=True)
class AttentionWeights:
    """Weights of one layer. W_Q: (N_h, d_in, d_QK); W_K: (N_g, d_in, d_QK);
    W_V: (N_g, d_in, d_V); W_O: (N_h, d_V, d_in). N_g = N_h is MHA, N_g = 1 is MQA."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray

    @property
    def N_h(self) -> int:
        return self.W_Q.shape[0]

    @property
    def N_g(self) -> int:
        return self.W_K.shape[0]


def init_weights(rng: np.random.Generator, d_in: int, N_h: int, d_QK: int, d_V: int,
                 N_g: int | None = None) -> AttentionWeights:
    """Random weights scaled by 1/sqrt(fan-in); ``N_g`` defaults to ``N_h`` (MHA)."""
    N_g = N_h if N_g is None else N_g
    if N_h % N_g:
        raise ValueError(f"N_g={N_g} must divide N_h={N_h}")
    s_in, s_v = 1 / np.sqrt(d_in), 1 / np.sqrt(N_h * d_V)
    return AttentionWeights(
        W_Q=rng.normal(0, s_in, (N_h, d_in, d_QK)),
        W_K=rng.normal(0, s_in, (N_g, d_in, d_QK)),
        W_V=rng.normal(0, s_in, (N_g, d_in, d_V)),
        W_O=rng.normal(0, s_v, (N_h, d_V, d_in)),
    )


def repeat_kv(w: AttentionWeights) -> AttentionWeights:
    """The MHA layer that GQA equals: each KV head copied to every query head of its group."""
    group = w.N_h // w.N_g
    return AttentionWeights(w.W_Q, np.repeat(w.W_K, group, axis=0),
                            np.repeat(w.W_V, group, axis=0), w.W_O)


def causal_attention(X: np.ndarray, w: AttentionWeights) -> np.ndarray:
    """Full-sequence causal attention, no cache. X: (N, d_in) -> (N, d_in).

    Query head h reads key/value head h // (N_h / N_g).
    """
    n = X.shape[0]
    mask = np.tril(np.ones((n, n), dtype=bool))
    group = w.N_h // w.N_g
    out = np.zeros_like(X)
    for h in range(w.N_h):
        g = h // group
        head = attention(X @ w.W_Q[h], X @ w.W_K[g], X @ w.W_V[g], mask)  # (N, d_V)
        out += head @ w.W_O[h]
    return out


class KVCache:
    """Per-layer K and V for the tokens seen so far.

    ``K``: (N_L, N_g, N_KV, d_QK) and ``V``: (N_L, N_g, N_KV, d_V) are views of
    preallocated buffers, so ``K.nbytes + V.nbytes`` is exactly what N_KV tokens take.
    """

    def __init__(self, N_L: int, N_g: int, d_QK: int, d_V: int, capacity: int,
                 dtype=np.float64):
        self._K = np.zeros((N_L, N_g, capacity, d_QK), dtype)
        self._V = np.zeros((N_L, N_g, capacity, d_V), dtype)
        self.n_tokens = 0

    @property
    def K(self) -> np.ndarray:
        return self._K[:, :, : self.n_tokens]

    @property
    def V(self) -> np.ndarray:
        return self._V[:, :, : self.n_tokens]

    @property
    def nbytes(self) -> int:
        return self.K.nbytes + self.V.nbytes

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> None:
        """Store one token's keys k: (N_g, d_QK) and values v: (N_g, d_V) for ``layer``."""
        self._K[layer, :, self.n_tokens] = k
        self._V[layer, :, self.n_tokens] = v


def decode(X: np.ndarray, layers: list[AttentionWeights]):
    """Feed the rows of X one token at a time through a stack of attention layers
    (residual connections, nothing else), reusing cached K and V.

    X: (N, d_in). Returns (outputs (N, d_in), cache, macs) where ``macs[t]`` is
    the multiply-adds of attention at step t + 1 (scores plus weighted sum over the
    t + 1 cached tokens): it grows linearly with the tokens so far.
    """
    w0 = layers[0]
    N, d_QK, d_V = X.shape[0], w0.W_Q.shape[2], w0.W_V.shape[2]
    cache = KVCache(len(layers), w0.N_g, d_QK, d_V, capacity=N)
    outputs, macs = np.zeros_like(X), []
    for t in range(N):
        x = X[t]  # (d_in,)
        step = 0
        for i, w in enumerate(layers):
            group = w.N_h // w.N_g
            k = np.einsum("d,gde->ge", x, w.W_K)  # (N_g, d_QK): only the new token
            v = np.einsum("d,gde->ge", x, w.W_V)  # (N_g, d_V)
            cache.append(i, k, v)
            K, V = cache._K[i, :, : t + 1], cache._V[i, :, : t + 1]  # (N_g, t+1, d)
            y = np.zeros_like(x)
            for h in range(w.N_h):
                q = x @ w.W_Q[h]  # (d_QK,)
                y += attention(q[None], K[h // group], V[h // group])[0] @ w.W_O[h]
                step += (t + 1) * (d_QK + d_V)
            x = x + y
        cache.n_tokens = t + 1
        outputs[t] = x
        macs.append(step)
    return outputs, cache, np.array(macs)
