"""NumPy reference for multi-head latent attention (MLA) with an explicit cache
(notebooks 03-04).

Float64 throughout, weights from a seeded generator. Shapes use the
collection's symbols (Table 2, :data:`kvlib.core.tables.TABLE_2`); per-head weights are stacked
on a leading head axis. Row vectors: a token is x (d_in,), L is (N_KV, d_L).

Five ways to run one decode step (``mode`` of :func:`decode`):

* ``"expanded"``: cache each head's K and V, computed from the latent for the new
  token only (what a straightforward port of the training code does);
* ``"naive"``: cache the latent L (and K^R), re-expand every head's K = L W^LK_h
  and V = L W^LV_h for every cached token at every step;
* ``"absorb_values"``: cache the latent, re-expand every head's keys K = L W^LK_h
  at every step, but absorb the values: sum the latents with the attention
  weights, then apply W^LV_h once, sum_n s_n L_n W^LV_h = (sum_n s_n L_n) W^LV_h.
  RoPE on the keys blocks absorbing W^LK_h only (DeepSeek-V2, arXiv:2405.04434,
  section 2.1.3), so this is the fair alternative to decoupling (notebook 04);
* ``"absorbed"``: cache the latent, score and sum on it directly:
  q_h k_n^T = (x W^Q_h W^LK_h^T) L_n^T and sum_n s_n V_n W^O_h = (sum_n s_n L_n) W^LV_h W^O_h;
* ``"shortcut"``: the absorbed path forced onto RoPE-on-keys. The key's rotation
  cannot be moved through W^LK_h, so it is dropped: wrong on purpose (notebook 04).

``rope``: None, ``"keys"`` (RoPE on the up-projected q and k, d_QK wide) or
``"decoupled"`` (DeepSeek-V2: an extra d_R-wide RoPE query part per head and one
shared RoPE key per token, cached beside the latent). Token t sits at position t.

Every product goes through a counter, so :func:`decode` also returns the
multiply-adds it executed, step by step and layer by layer, to compare with the
symbolic counts of :mod:`kvlib.core.decode_cost`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvlib.reference.attention import KVCache, softmax
from kvlib.reference.rope import apply_rope

__all__ = [
    "MLAWeights", "init_mla_weights", "AbsorbedWeights", "absorb", "LatentCache",
    "DecodeResult", "decode", "MODES",
]

MODES = ("expanded", "naive", "absorb_values", "absorbed", "shortcut")


@dataclass(frozen=True)
class MLAWeights:
    """Weights of one MLA layer (Table 2; decoupled RoPE adds W_QR and W_KR).

    W_Q (N_h, d_in, d_QK), W_L (d_in, d_L), W_LK (N_h, d_L, d_QK),
    W_LV (N_h, d_L, d_V), W_O (N_h, d_V, d_in); W_QR (N_h, d_in, d_R) and
    W_KR (d_in, d_R), or None without decoupled RoPE.
    """

    W_Q: np.ndarray
    W_L: np.ndarray
    W_LK: np.ndarray
    W_LV: np.ndarray
    W_O: np.ndarray
    W_QR: np.ndarray | None = None
    W_KR: np.ndarray | None = None

    @property
    def N_h(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_in(self) -> int:
        return self.W_Q.shape[1]

    @property
    def d_QK(self) -> int:
        return self.W_Q.shape[2]

    @property
    def d_V(self) -> int:
        return self.W_LV.shape[2]

    @property
    def d_L(self) -> int:
        return self.W_L.shape[1]

    @property
    def d_R(self) -> int:
        """Width of the decoupled RoPE part, 0 when there is none."""
        return 0 if self.W_KR is None else self.W_KR.shape[1]

    @property
    def decoupled(self) -> bool:
        return self.W_KR is not None

    def sizes(self) -> dict[str, int]:
        """This layer's sizes in the notation's symbols, ready for a Formula call."""
        s = {"N_h": self.N_h, "d_in": self.d_in, "d_QK": self.d_QK, "d_V": self.d_V,
             "d_L": self.d_L}
        if self.decoupled:
            s["d_R"] = self.d_R
        return s


def init_mla_weights(rng: np.random.Generator, d_in: int, N_h: int, d_QK: int, d_V: int,
                     d_L: int, d_R: int | None = None) -> MLAWeights:
    """Random weights scaled by 1/sqrt(fan-in), so q, k, v entries are O(1)."""
    s_in, s_l, s_v = 1 / np.sqrt(d_in), 1 / np.sqrt(d_L), 1 / np.sqrt(N_h * d_V)
    return MLAWeights(
        W_Q=rng.normal(0, s_in, (N_h, d_in, d_QK)),
        W_L=rng.normal(0, s_in, (d_in, d_L)),
        W_LK=rng.normal(0, s_l, (N_h, d_L, d_QK)),
        W_LV=rng.normal(0, s_l, (N_h, d_L, d_V)),
        W_O=rng.normal(0, s_v, (N_h, d_V, d_in)),
        W_QR=None if d_R is None else rng.normal(0, s_in, (N_h, d_in, d_R)),
        W_KR=None if d_R is None else rng.normal(0, s_in, (d_in, d_R)),
    )


@dataclass(frozen=True)
class AbsorbedWeights:
    """The merged matrices of weight absorption (notebook 03).

    W_QL (N_h, d_in, d_L) = W^Q_h W^LK_h^T: query side, scores the latent directly.
    W_LO (N_h, d_L, d_in) = W^LV_h W^O_h: the latent-weighted sum straight to the output.
    """

    W_QL: np.ndarray
    W_LO: np.ndarray


def absorb(w: MLAWeights) -> AbsorbedWeights:
    """Precompute W^Q_h W^LK_h^T and W^LV_h W^O_h for every head."""
    return AbsorbedWeights(W_QL=w.W_Q @ w.W_LK.transpose(0, 2, 1), W_LO=w.W_LV @ w.W_O)


class LatentCache:
    """The MLA cache: the latent L and, with decoupled RoPE, the shared RoPE key K^R.

    ``L``: (N_L, N_KV, d_L) and ``K_R``: (N_L, N_KV, d_R) are views of
    preallocated buffers, so ``nbytes`` is exactly what N_KV tokens take.
    """

    def __init__(self, N_L: int, d_L: int, capacity: int, d_R: int | None = None,
                 dtype=np.float64):
        self._L = np.zeros((N_L, capacity, d_L), dtype)
        self._K_R = None if d_R is None else np.zeros((N_L, capacity, d_R), dtype)
        self.n_tokens = 0

    @property
    def L(self) -> np.ndarray:
        return self._L[:, : self.n_tokens]

    @property
    def K_R(self) -> np.ndarray | None:
        return None if self._K_R is None else self._K_R[:, : self.n_tokens]

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The cached arrays by their Table 2 names ("L", "K^R")."""
        out = {"L": self.L}
        if self._K_R is not None:
            out["K^R"] = self.K_R
        return out

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    def append(self, layer: int, l: np.ndarray, k_r: np.ndarray | None = None) -> None:
        """Store one token's latent l (d_L,) and RoPE key k_r (d_R,) for ``layer``."""
        self._L[layer, self.n_tokens] = l
        if self._K_R is not None:
            self._K_R[layer, self.n_tokens] = k_r


class _Counter:
    """Runs products and counts their multiply-adds (m k n for (m x k) @ (k x n))."""

    def __init__(self):
        self.macs = 0

    def mm(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        m = a.shape[0] if a.ndim == 2 else 1
        self.macs += m * a.shape[-1] * b.shape[-1]
        return a @ b

    def rope(self, v: np.ndarray, positions) -> np.ndarray:
        self.macs += 2 * v.size  # each output element: c * v_i -/+ s * v_j
        return apply_rope(v, positions)


@dataclass
class DecodeResult:
    """outputs (N, d_in); cache (LatentCache, or attention.KVCache for "expanded");
    macs (N, N_L): multiply-adds executed at step t in layer i."""

    outputs: np.ndarray
    cache: LatentCache | KVCache
    macs: np.ndarray


def _check(layers: list[MLAWeights], mode: str, rope: str | None, merged: bool) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if rope not in (None, "keys", "decoupled"):
        raise ValueError(f"rope must be None, 'keys' or 'decoupled', got {rope!r}")
    w = layers[0]
    if (rope == "decoupled") != w.decoupled:
        raise ValueError("rope='decoupled' needs weights made with d_R (W_QR, W_KR), "
                         "and those weights need rope='decoupled'")
    if mode == "absorbed" and rope == "keys":
        raise ValueError(
            "cannot absorb with RoPE on the up-projected keys: the key's rotation R_j sits "
            "between W^LK_h and the query and depends on the key's position j, so no "
            "position-independent merged matrix exists; use mode='absorb_values' (re-expand "
            "every key, absorb the values), mode='naive' (re-expand keys and values) or "
            "mode='shortcut' (drops the key rotation, to measure the error)"
        )
    if mode == "shortcut" and rope != "keys":
        raise ValueError("mode='shortcut' demonstrates RoPE on keys: pass rope='keys'")
    if merged and mode != "absorbed":
        raise ValueError("merged=True only applies to mode='absorbed'")
    if rope == "keys" and w.d_QK % 2:
        raise ValueError(f"RoPE on keys needs an even d_QK, got {w.d_QK}")


def _step(x, t, i, w, aw, cache, mode, rope, merged, c: _Counter) -> np.ndarray:
    """One token x (d_in,) at position t through layer i; returns the layer output (d_in,)."""
    n, dec, keys = t + 1, rope == "decoupled", rope == "keys"
    scale = 1 / np.sqrt(w.d_QK + w.d_R)
    l = c.mm(x, w.W_L)  # (d_L,)
    k_r = c.rope(c.mm(x, w.W_KR), t) if dec else None  # (d_R,)
    if mode == "expanded":
        k_new = np.stack([c.mm(l, w.W_LK[h]) for h in range(w.N_h)])  # (N_h, d_QK)
        if keys:
            k_new = c.rope(k_new, t)
        if dec:  # every head gets its own copy of the shared RoPE key
            k_new = np.concatenate([k_new, np.broadcast_to(k_r, (w.N_h, w.d_R))], axis=1)
        v_new = np.stack([c.mm(l, w.W_LV[h]) for h in range(w.N_h)])  # (N_h, d_V)
        cache.append(i, k_new, v_new)
        K, V = cache._K[i, :, :n], cache._V[i, :, :n]  # (N_h, n, d_QK [+ d_R]), (N_h, n, d_V)
    else:
        cache.append(i, l, k_r)
        L = cache._L[i, :n]  # (n, d_L)
        K_R = cache._K_R[i, :n] if dec else None  # (n, d_R)
    y = np.zeros_like(x)
    for h in range(w.N_h):
        q_r = c.rope(c.mm(x, w.W_QR[h]), t) if dec else None  # (d_R,)
        if mode == "expanded":
            q = c.mm(x, w.W_Q[h])
            if keys:
                q = c.rope(q, t)
            if dec:
                q = np.concatenate([q, q_r])
            s = softmax(c.mm(q, K[h].T) * scale)  # (n,)
            y += c.mm(c.mm(s, V[h]), w.W_O[h])
        elif mode in ("naive", "absorb_values"):
            q = c.mm(x, w.W_Q[h])
            if keys:
                q = c.rope(q, t)
            K_h = c.mm(L, w.W_LK[h])  # (n, d_QK): re-expanded for every cached token
            if keys:
                K_h = c.rope(K_h, np.arange(n))
            scores = c.mm(q, K_h.T)
            if dec:
                scores = scores + c.mm(q_r, K_R.T)
            s = softmax(scores * scale)
            if mode == "naive":
                V_h = c.mm(L, w.W_LV[h])  # (n, d_V): re-expanded for every cached token
                y += c.mm(c.mm(s, V_h), w.W_O[h])
            else:  # the values absorbed: weight the latents, then one (d_L x d_V) product
                y += c.mm(c.mm(c.mm(s, L), w.W_LV[h]), w.W_O[h])
        else:  # absorbed or shortcut: never forms a per-token key or value
            if merged:
                q_l = c.mm(x, aw.W_QL[h])  # (d_L,)
            else:
                q = c.mm(x, w.W_Q[h])
                if mode == "shortcut":
                    q = c.rope(q, t)  # the key side's R_j has nowhere to go
                q_l = c.mm(q, w.W_LK[h].T)  # (d_L,)
            scores = c.mm(q_l, L.T)
            if dec:
                scores = scores + c.mm(q_r, K_R.T)
            s = softmax(scores * scale)
            a = c.mm(s, L)  # (d_L,): the latent, weighted
            y += c.mm(a, aw.W_LO[h]) if merged else c.mm(c.mm(a, w.W_LV[h]), w.W_O[h])
    return y


def decode(X: np.ndarray, layers: list[MLAWeights], mode: str = "absorbed",
           rope: str | None = None, merged: bool = False) -> DecodeResult:
    """Feed the rows of X (N, d_in) one token at a time through a stack of MLA layers
    (residual connections, nothing else), caching as ``mode`` says."""
    _check(layers, mode, rope, merged)
    w0, N = layers[0], X.shape[0]
    if mode == "expanded":
        cache = KVCache(len(layers), w0.N_h, w0.d_QK + w0.d_R, w0.d_V, capacity=N)
    else:
        cache = LatentCache(len(layers), w0.d_L, N, w0.d_R if w0.decoupled else None)
    absorbed = [absorb(w) if merged else None for w in layers]
    outputs, macs = np.zeros_like(X), np.zeros((N, len(layers)), dtype=np.int64)
    for t in range(N):
        x = X[t]
        for i, w in enumerate(layers):
            c = _Counter()
            x = x + _step(x, t, i, w, absorbed[i], cache, mode, rope, merged, c)
            macs[t, i] = c.macs
        cache.n_tokens = t + 1
        outputs[t] = x
    return DecodeResult(outputs, cache, macs)
