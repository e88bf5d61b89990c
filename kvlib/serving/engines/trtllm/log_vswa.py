"""TensorRT-LLM's per-window pools (variable sliding-window attention, VSWA) in a start-up
log, worked out again (issue 43).

Where the layers hold more than one attention window (gpt-oss: 128 and the full length; Gemma
3: 1,024 and the full length), the C++ KV cache manager keeps one block pool per window and
prints one line per window::

    Max KV cache blocks per sequence: 65 [window size=2051], tokens per block=32,
    primary blocks=116617, secondary blocks=0

then "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)" once for all
pools, where (KVCacheManager::allocatePools, cpp/tensorrt_llm/batch_manager/
kvCacheManager.cpp@b35ac1b64368, and BlockManager::getNumPrimaryBlocks,
cpp/include/tensorrt_llm/batch_manager/kvCacheManager.h@2213a799e45a):

* N = the primary blocks *summed over the windows* (``sumWindows``) x tokens per block;
* X = the sum over the pools of the pool's volume x the element size / 2^30, a pool holding
  primary blocks x tokens per block x (K, V) x KV heads x head_dim for each of its window's
  layers.

So with the model, bytes = sum over windows of P_w x n x cell_w, cell_w = 2 x (layers with
window w) x KV heads per rank x head_dim x b; the largest window is the full-attention
layers' (their window is the sequence length), a smaller one a sliding group's whose window
it is (a window clamped to the sequence length is the full one's too).
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.log import EngineCheck, GiB, gib_ok

__all__ = ["WINDOW_LINE", "window_lines", "layers_by_window", "explain_windows"]

WINDOW_LINE = re.compile(r"Max KV cache blocks per sequence: (?P<m>\d+) \[window size="
                         r"(?P<w>\d+)\], tokens per block=(?P<b>\d+), primary blocks="
                         r"(?P<p>\d+)")
_ALLOC = re.compile(r"\[MemUsageChange\] Allocated (?P<x>[\d.]+) GiB for max tokens in "
                    r"paged KV cache \((?P<n>\d+)\)")


def window_lines(lines) -> list[tuple[int, int, int, int]]:
    """(line, window, tokens per block, primary blocks) of each per-window line."""
    return [(i, int(m["w"]), int(m["b"]), int(m["p"])) for i, t in lines
            if (m := WINDOW_LINE.search(t))]


def layers_by_window(model, windows: list[int]) -> dict[int, list] | str:
    """The model's attention groups under each window the log names, or why they cannot be
    matched: a sliding (or chunked) group goes to the window equal to its own, else (its
    window past the sequence length) to the largest; full groups to the largest."""
    top = max(windows)
    out: dict[int, list] = {w: [] for w in windows}
    for g in model.groups:
        if g.kind == CacheKind.FULL or g.kind == CacheKind.LATENT:
            out[top].append(g)
        elif g.kind in (CacheKind.SLIDING, CacheKind.CHUNKED):
            if g.window in out:
                out[g.window].append(g)
            elif g.window > top:
                out[top].append(g)
            else:
                return (f"the model's {g.kind} window {g.window} is none of the log's windows "
                        f"{sorted(windows)}")
    empty = [w for w, gs in out.items() if not gs]
    if empty:
        return f"no layer of the model has the log's window {empty[0]}"
    return out


def explain_windows(lines, model, cell_of_groups) -> list[EngineCheck]:
    """Checks of each allocation line after per-window lines: its tokens (summed over the
    windows) and, with a model, its GiB (summed over the pools). ``cell_of_groups(groups)``:
    bytes per token of those groups at the log's TP and dtype."""
    out: list[EngineCheck] = []
    pending: list[tuple[int, int, int, int]] = []
    seen = window_lines(lines)
    for i, text in lines:
        row = next((r for r in seen if r[0] == i), None)
        if row is not None:
            pending = [p for p in pending if p[1] != row[1]] + [row]
            continue
        m = _ALLOC.search(text)
        if m is None or len(pending) < 2:
            continue
        n, x = int(m["n"]), m["x"]
        total = sum(b * p for _, _, b, p in pending)
        where = ", ".join(f"line {j}: {p:,} x {b} [window {w:,}]" for j, w, b, p in pending)
        out.append(EngineCheck(i, text, "tokens (all windows)", f"{n:,}", f"{total:,}",
                               "ok" if n == total else "mismatch",
                               f"primary blocks summed over the windows x tokens per block "
                               f"({where}; BlockManager::getNumPrimaryBlocks sums the window "
                               "managers)"))
        if model is not None:
            groups = layers_by_window(model, [w for _, w, _, _ in pending])
            if isinstance(groups, str):
                out.append(EngineCheck(i, text, "GiB allocated (all pools)", f"{x} GiB",
                                       "not traced", "info", groups))
            else:
                parts = [(w, p * b, cell_of_groups(groups[w])) for _, w, b, p in pending]
                exact = sum(t * c for _, t, c in parts)
                how = " + ".join(f"{t:,} tokens x {c:,} B [window {w:,}]" for w, t, c in parts)
                out.append(EngineCheck(i, text, "GiB allocated (all pools)", f"{x} GiB",
                                       f"{float(Fraction(exact, GiB)):.4f} GiB",
                                       "ok" if gib_ok(x, exact) else "mismatch",
                                       f"{how} = {exact:,} B, GiB = 2^30 (one pool per "
                                       "window: its layers only)"))
        pending = []
    return out
