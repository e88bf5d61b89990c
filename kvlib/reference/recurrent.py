"""NumPy reference of a layer that keeps a constant-size state (notebook 07).

A gated linear-attention layer in the shape of Gated DeltaNet's state (without the
delta rule, which changes how the state is updated, not its size): a causal
depthwise convolution of width ``d_conv`` over the concatenated q, k, v
projections, then one ``d_lk x d_lv`` matrix per value head,

    H_h <- g H_h + k_h^T v_h,        y_h = q_h H_h,

with a fixed decay 0 < g <= 1. Decoding keeps exactly the two tensors of
:data:`kvlib.core.state_tables.GATED_DELTANET`: the last ``d_conv - 1`` convolution
inputs and the ``N_lv`` state matrices, whatever the number of tokens read.
Float64, seeded weights; shapes in kvlib's state symbols.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LinearWeights", "init_linear_weights", "RecurrentState", "decode_linear",
           "parallel_linear"]


@dataclass(frozen=True)
class LinearWeights:
    """W_Q, W_K: (N_lk, d_in, d_lk); W_V: (N_lv, d_in, d_lv); conv: (d_conv, channels)
    with channels = 2 N_lk d_lk + N_lv d_lv; W_O: (N_lv, d_lv, d_in); decay g."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    conv: np.ndarray
    W_O: np.ndarray
    g: float

    def sizes(self) -> dict:
        """The state symbols of this layer (for the formulas)."""
        return dict(d_conv=self.conv.shape[0], N_lk=self.W_K.shape[0], d_lk=self.W_K.shape[2],
                    N_lv=self.W_V.shape[0], d_lv=self.W_V.shape[2])


def init_linear_weights(rng: np.random.Generator, d_in: int, N_lk: int, d_lk: int, N_lv: int,
                        d_lv: int, d_conv: int = 4, g: float = 0.9) -> LinearWeights:
    """Random weights scaled by 1/sqrt(fan-in); value heads share key heads in groups."""
    if N_lv % N_lk:
        raise ValueError(f"N_lk={N_lk} key heads must divide N_lv={N_lv} value heads")
    channels = 2 * N_lk * d_lk + N_lv * d_lv
    s = 1 / np.sqrt(d_in)
    return LinearWeights(
        W_Q=rng.normal(0, s, (N_lk, d_in, d_lk)), W_K=rng.normal(0, s, (N_lk, d_in, d_lk)),
        W_V=rng.normal(0, s, (N_lv, d_in, d_lv)), conv=rng.normal(0, 0.5, (d_conv, channels)),
        W_O=rng.normal(0, 1 / np.sqrt(d_lv), (N_lv, d_lv, d_in)), g=g)


def _project(x: np.ndarray, w: LinearWeights) -> np.ndarray:
    """(n, d_in) -> (n, channels): q, k, v of every head, concatenated."""
    parts = [np.einsum("nd,hde->nhe", x, m).reshape(len(x), -1) for m in (w.W_Q, w.W_K, w.W_V)]
    return np.concatenate(parts, axis=1)


def _split(u: np.ndarray, w: LinearWeights):
    n_lk, d_lk = w.W_K.shape[0], w.W_K.shape[2]
    n_lv, d_lv = w.W_V.shape[0], w.W_V.shape[2]
    q = u[..., : n_lk * d_lk].reshape(*u.shape[:-1], n_lk, d_lk)
    k = u[..., n_lk * d_lk: 2 * n_lk * d_lk].reshape(*u.shape[:-1], n_lk, d_lk)
    v = u[..., 2 * n_lk * d_lk:].reshape(*u.shape[:-1], n_lv, d_lv)
    rep = n_lv // n_lk  # each key head serves rep value heads
    return np.repeat(q, rep, axis=-2), np.repeat(k, rep, axis=-2), v


@dataclass
class RecurrentState:
    """What one sequence keeps: conv (d_conv - 1, channels) and S (N_lv, d_lk, d_lv)."""

    conv: np.ndarray
    S: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.conv.nbytes + self.S.nbytes


def decode_linear(X: np.ndarray, w: LinearWeights) -> tuple[np.ndarray, RecurrentState, list]:
    """Read X (N_KV, d_in) one token at a time; returns outputs (N_KV, d_in), the final
    state, and the state's ``nbytes`` after every token (it never changes)."""
    d_conv, channels = w.conv.shape
    n_lv, d_lk, d_lv = w.W_V.shape[0], w.W_K.shape[2], w.W_V.shape[2]
    state = RecurrentState(np.zeros((d_conv - 1, channels)), np.zeros((n_lv, d_lk, d_lv)))
    outputs, sizes = [], []
    for x in X:
        u = _project(x[None], w)[0]  # (channels,)
        window = np.concatenate([state.conv, u[None]])  # the last d_conv inputs
        c = np.einsum("tc,tc->c", window, w.conv)  # causal depthwise convolution
        state.conv = window[1:]  # keep d_conv - 1 of them
        q, k, v = _split(c, w)  # (N_lv, d_lk), (N_lv, d_lk), (N_lv, d_lv)
        state.S = w.g * state.S + np.einsum("hk,hv->hkv", k, v)
        y = np.einsum("hk,hkv->hv", q, state.S)  # (N_lv, d_lv)
        outputs.append(np.einsum("hv,hvd->d", y, w.W_O))
        sizes.append(state.nbytes)
    return np.array(outputs), state, sizes


def parallel_linear(X: np.ndarray, w: LinearWeights) -> np.ndarray:
    """The same layer over all tokens at once, without a state: y_t = q_t sum_s g^(t-s) k_s^T v_s.

    Quadratic in the tokens, like attention: the reference the recurrence must equal.
    """
    d_conv = w.conv.shape[0]
    u = _project(X, w)
    padded = np.concatenate([np.zeros((d_conv - 1, u.shape[1])), u])
    c = np.stack([np.einsum("tc,tc->c", padded[t:t + d_conv], w.conv) for t in range(len(X))])
    q, k, v = _split(c, w)  # (n, N_lv, ...)
    n = len(X)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    decay = np.where(s <= t, w.g ** np.maximum(t - s, 0), 0.0)  # (n, n)
    scores = np.einsum("thk,shk->hts", q, k) * decay  # (N_lv, n, n)
    y = np.einsum("hts,shv->thv", scores, v)
    return np.einsum("thv,hvd->td", y, w.W_O)
