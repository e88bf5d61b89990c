"""TensorRT-LLM's C++ runtime KV-cache lines: those of the 0.5 to 0.8 releases (the C++ batch
manager behind Triton's ``tensorrtllm_backend`` and ``examples/run.py``), worked out again
(issue 43).

Those releases print, per rank, the bytes and the tokens of the paged KV cache instead of
0.9's "[MemUsageChange] Allocated X GiB ..." (:mod:`.log`)::

    [TensorRT-LLM][INFO] Allocate 69524783104 bytes for k/v cache.
    [TensorRT-LLM][INFO] Using 132608 tokens in paged KV cache.
    [TensorRT-LLM][INFO] Using 29184 total tokens in paged KV cache, and 272 blocks per sequence

and, where one sequence does not fit, refuse with "maxTokensInPagedKvCache (T) must be large
enough to process at least 1 sequence to completion (i.e. must be larger than beam_width (w)
* tokensPerBlock (n) * maxBlocksPerSeq (m))".

What is checked, each from the log's own numbers (posted logs: TensorRT-LLM issue 1400, 0.8 on
an A100; tensorrtllm_backend issue 366, Mistral 7B at TP 4 on four A10G; TensorRT-LLM issue
224, 0.5 on an A10):

* bytes = tokens x bytes per token, exactly (integers both): with a model, bytes per token =
  2 x layers x KV heads per rank x head_dim x b (the same cell as 0.9's, :func:`.log.
  cell_bytes_per_token`); without one, bytes / tokens shown as information. Where the tokens
  line is cut off, bytes / bytes per token must be a whole number of tokens.
* tokens in whole blocks, where the log names the block (``tokensPerBlock (128)``, "Number of
  tokens per block"): from 0.8 the tokens are the allocated blocks x block (132,608 = 2,072 x
  64; 29,184 = 228 x 128). 0.5 printed the figure before rounding it up to whole blocks (its
  maintainers' answer in issue 224: 10,718 tokens with 16-token blocks), so a log that names
  no block is not held to it.
* the refusal: T is the tokens line's figure, m its "blocks per sequence", and T < w x n x m.

From 0.9 the C++ runtime prints its budget, "Memory usage when calculating max tokens in paged
kv cache: total: T GiB, available: A GiB", and the primary pool's blocks: :func:`
explain_cpp_budget` (blocks = ceil(int(0.9 x A / bytes per token) / block)).
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.serving.engines.log import HALF, EngineCheck, GiB

__all__ = ["detect", "explain_legacy", "explain_cpp_budget", "infer_bytes"]

_ALLOC = re.compile(r"Allocate (?P<n>\d+) bytes for k/v cache\.")
_TOKENS = re.compile(r"Using (?P<t>\d+) (?:total )?tokens in paged KV cache"
                     r"(?:, and (?P<m>\d+) blocks per sequence)?")
_REFUSED = re.compile(r"maxTokensInPagedKvCache \((?P<t>\d+)\) must be large enough to process "
                      r"at least 1 sequence to completion \(i\.e\. must be larger than "
                      r"beam_width \((?P<w>\d+)\) \* tokensPerBlock \((?P<n>\d+)\) \* "
                      r"maxBlocksPerSeq \((?P<m>\d+)\)\)")
_TPB = re.compile(r"Number of tokens per block: (?P<b>\d+)")
_MEMUSAGE = re.compile(r"Memory usage when calculating max tokens in paged kv cache: total: "
                       r"(?P<t>[\d.]+) GiB, available: (?P<a>[\d.]+) GiB")
_PRIMARY = re.compile(r"Number of blocks in KV cache primary pool: (?P<p>\d+)")
_SECONDARY = re.compile(r"Number of blocks in KV cache secondary pool: (?P<s>\d+)")
_ALLOC_GIB = re.compile(r"\[MemUsageChange\] Allocated (?P<x>[\d.]+) GiB for max tokens in "
                        r"paged KV cache \((?P<n>\d+)\)")
#: trtllm-build's paged-KV block of the C++ runtime's engines (plugin config
#: ``tokens_per_block: int = 64``), for a log that prints none
ENGINE_TOKENS_PER_BLOCK = 64


def detect(text: str) -> bool:
    """Whether ``text`` holds one of the 0.5-0.8 KV-cache lines."""
    return bool(_ALLOC.search(text) or _TOKENS.search(text) or _MEMUSAGE.search(text))


def _pairs(lines):
    """(allocation line, its bytes, the tokens line after it or None, its tokens), in order:
    a tokens line pairs with the allocation just before it (at most 3 lines up)."""
    out, last = [], None
    for i, text in lines:
        if (m := _ALLOC.search(text)):
            last = [i, text, int(m["n"]), None, None, None]
            out.append(last)
        elif (m := _TOKENS.search(text)):
            if last is not None and last[3] is None and i - last[0] <= 3:
                last[3:] = [(i, text), int(m["t"]), m["m"]]
            else:
                out.append([None, None, None, (i, text), int(m["t"]), m["m"]])
    return out


def infer_bytes(lines, cell_of) -> tuple[int | None, int | None]:
    """The element size (1, 2 or 4 B) whose cell ``cell_of(b)`` gives the first pair's bytes
    exactly, and that allocation's line; (None, None) if no pair or not exactly one size."""
    for at, _, n, tok, t, _ in _pairs(lines):
        if at is not None and tok is not None and t:
            fits = [b for b in (1, 2, 4) if n == t * cell_of(b)]
            return (fits[0], at) if len(fits) == 1 else (None, None)
    return None, None


def explain_legacy(lines, cell: int | None, inferred_at: int | None) -> list[EngineCheck]:
    """The checks of the 0.5-0.8 lines (module docstring). ``cell``: bytes per token of the
    model at the log's TP and dtype (None without a model); ``inferred_at``: the allocation
    line the dtype was inferred from (its bytes are then no independent check)."""
    out: list[EngineCheck] = []
    block = None
    for _, text in lines:
        if (m := _REFUSED.search(text)) or (m := _TPB.search(text)):
            block = int(m["n"] if "n" in m.groupdict() else m["b"])
            break
    tokens_seen: list[tuple[int, int, str | None]] = []
    for at, text, n, tok, t, m_per_seq in _pairs(lines):
        if at is not None and tok is not None:
            if cell is None:
                per, rest = divmod(n, t)
                out.append(EngineCheck(tok[0], tok[1], "bytes per token", f"{n:,} B / {t:,}",
                                       f"{per:,} B" + (f" + {rest}/{t}" if rest else ""),
                                       "info", f"line {at}'s bytes / this line's tokens "
                                       "(pass --model to check them)"))
            elif at == inferred_at:
                out.append(EngineCheck(at, text, "bytes for k/v cache", f"{n:,}",
                                       f"{t * cell:,}", "info", f"{t:,} tokens x {cell:,} B: "
                                       "the line the KV dtype was inferred from, so no "
                                       "independent check"))
            else:
                out.append(EngineCheck(at, text, "bytes for k/v cache", f"{n:,}",
                                       f"{t * cell:,}", "ok" if n == t * cell else "mismatch",
                                       f"line {tok[0]}'s {t:,} tokens x {cell:,} B per token "
                                       "(2 x layers x KV heads per rank x head_dim x b)"))
        elif at is not None and cell is not None:
            whole, rest = divmod(n, cell)
            out.append(EngineCheck(at, text, "bytes for k/v cache", f"{n:,}",
                                   f"{whole:,} tokens x {cell:,} B" + (f" + {rest:,} B" if rest
                                                                        else ""),
                                   "ok" if rest == 0 else "mismatch",
                                   "whole tokens of the model's cell (no tokens line after it "
                                   "to pair with)"))
        if tok is not None:
            tokens_seen.append((tok[0], t, m_per_seq))
            if block is not None:
                out.append(EngineCheck(tok[0], tok[1], f"tokens in blocks of {block}", f"{t:,}",
                                       f"{t // block:,} x {block} + {t % block}",
                                       "ok" if t % block == 0 else "mismatch",
                                       "0.8 allocates whole blocks (the block from the log)"))
            elif at is None:
                size = "" if cell is None else f" = {t * cell:,} B ({t * cell / (1 << 30):.2f} GiB)"
                out.append(EngineCheck(tok[0], tok[1], "tokens in paged KV cache", f"{t:,}",
                                       (f"{t:,} x {cell:,} B" if cell else "-") + size, "info",
                                       "no allocation or block in the log to check it against "
                                       "(0.5 printed it before rounding up to whole blocks)"))
    for i, text in lines:
        if not (m := _REFUSED.search(text)):
            continue
        t, w, n, m_ = (int(m[k]) for k in ("t", "w", "n", "m"))
        need = w * n * m_
        out.append(EngineCheck(i, text, "tokens one sequence needs", f"{t:,} < {need:,}",
                               f"{w} x {n} x {m_:,} = {need:,}", "ok" if t < need else
                               "mismatch", "beam_width x tokensPerBlock x maxBlocksPerSeq: the "
                               "refusal holds when the cache has fewer tokens"))
        before = [x for x in tokens_seen if x[0] < i]
        if before:
            j, t0, per_seq = before[-1]
            out.append(EngineCheck(i, text, "maxTokensInPagedKvCache", f"{t:,}", f"{t0:,}",
                                   "ok" if t == t0 else "mismatch", f"line {j}'s tokens"))
            if per_seq is not None:
                out.append(EngineCheck(i, text, "maxBlocksPerSeq", f"{m_:,}",
                                       f"{int(per_seq):,}", "ok" if m_ == int(per_seq)
                                       else "mismatch", f"line {j}'s blocks per sequence"))
    return out


def explain_cpp_budget(lines, cell: int | None, fraction) -> list[EngineCheck]:
    """The C++ runtime's budget (engines of 0.9 on, ``KVCacheManager::calculateMaxNumBlocks``:
    cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp as the search store holds it): it prints
    "Memory usage when calculating max tokens in paged kv cache: total: T GiB, available: A
    GiB" (A = free + the memory pool's free bytes), takes maxTokens = int(fraction x A /
    bytes per token), and blocksInPrimaryPool = ceilDiv(maxTokens, tokens per block), printed as
    "Number of blocks in KV cache primary pool: N". The fraction is the default 0.9 (a float32;
    no line prints it), so where a number does not fit it the line is said not explained
    (kv_cache_free_gpu_mem_fraction may have been set), never called a disagreement.

    * with the model's cell: N within the blocks A ± 0.005 gives;
    * without one: the allocation's X GiB within fraction x A and one block more (the blocks
      round up), its block taken from the allocation's own bytes per token."""
    out: list[EngineCheck] = []
    usage = primary = None
    block = None
    printed_block = False
    for _, text in lines:
        if (m := _TPB.search(text)):
            block, printed_block = int(m["b"]), True
    if block is None:
        block = ENGINE_TOKENS_PER_BLOCK
    f = Fraction(fraction)
    said = "" if printed_block else (f"; {block} tokens a block assumed (trtllm-build's "
                                     "default; the log prints none)")
    for i, text in lines:
        if (m := _MEMUSAGE.search(text)):
            usage = (i, Fraction(m["a"]), m["a"])
        elif (m := _PRIMARY.search(text)) and usage is not None:
            primary = (i, int(m["p"]))
            if cell is not None:
                lo = int(f * (usage[1] - HALF) * GiB // cell)
                hi = int(f * (usage[1] + HALF) * GiB // cell)
                blo, bhi = -(-lo // block), -(-hi // block)
                n = primary[1]
                fits = blo <= n <= bhi
                out.append(EngineCheck(
                    i, text, "blocks in the primary pool", f"{n:,}",
                    f"{blo:,}" + (f" to {bhi:,}" if bhi != blo else ""),
                    "ok" if fits else "info",
                    f"ceil(int(0.9 x line {usage[0]}'s {usage[2]} GiB ± 0.005 / {cell:,} B per "
                    f"token) / {block}) (calculateMaxNumBlocks, fraction 0.9 the default{said})"
                    + ("" if fits else ": not the default fraction's count, so not explained "
                       "(kv_cache_free_gpu_mem_fraction set?)")))
        elif (m := _SECONDARY.search(text)) and int(m["s"]) > 0:
            # the host pool: host_cache_size / bytes per block, a size no line prints
            n = int(m["s"])
            host = f"{n:,} x {block} tokens x {cell:,} B = {n * block * cell:,} B" if cell else "-"
            out.append(EngineCheck(
                i, text, "blocks in the secondary (host) pool", f"{n:,}", host, "info",
                "host_cache_size / bytes per block (calculateMaxNumBlocks); the log prints no "
                "host cache size, so the count is shown, not explained" + said))
        elif (m := _ALLOC_GIB.search(text)) and usage is not None and cell is None:
            x, n = Fraction(m["x"]), int(m["n"])
            if n == 0 or x == 0:
                continue
            one_block = x / n * block + HALF / n * block  # GiB of one block, from this line
            lo = f * (usage[1] - HALF) - HALF
            hi = f * (usage[1] + HALF) + one_block + HALF
            fits = lo <= x <= hi
            out.append(EngineCheck(
                i, text, "GiB allocated vs the budget", f"{m['x']} GiB",
                f"{float(f * usage[1]):.3f} GiB + up to one block ({float(one_block):.4f} GiB)",
                "ok" if fits else "info",
                f"0.9 x line {usage[0]}'s available {usage[2]} GiB, the tokens rounded up to "
                f"whole blocks of {block}{said}" + ("" if fits else ": not the default fraction's "
                                                    "size, so not explained")))
            usage = None
    return out
