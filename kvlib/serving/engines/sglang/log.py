"""SGLang's KV-cache start-up line, worked out again (``kvlib explain-log``, issue 35).

SGLang 0.5.23 (mem_cache/memory_pool.py:2073-2098): "KV Cache is allocated. [dtype: D,]
#tokens: N, K size: X GB, V size: Y GB" (GB = 2^30 B, memory_pool.py:116) and the MLA form
"... KV size: X GB". K holds N + one page of rows (:2574-2578): K = (N + page) x KV heads per
rank x head_dim x full-attention layers x b, V the same with v_head_dim; MLA: (N + page) x
(kv_lora_rank + qk_rope_head_dim) x layers x b. Each printed number is compared with its
rounding (two decimals: ± 0.005).

A hybrid-SWA model (issue 43) prints one line per pool, each recomputed with its own layers:
0.5.23 labels them ("Full KV Cache ...", "SWA KV Cache ...", memory_pool.py:2077-2081; the
full pool built first, swa_memory_pool.py:77-106); 0.5.8.post1 and 0.5.9 print both unlabelled,
the sliding pool first (swa_memory_pool.py:63-76 in both wheels), then "SWAKVPool mem usage: X
GB, swa size: S, full size: F" (:86-90), which tells them apart where S and F differ and is
itself checked.

A sparse-indexer (DSA) model's KV line, in 0.5.8.post1 and 0.5.9's form (no dtype printed), is
recomputed as those releases allocated it (issue 43 item 2; :func:`dsa_058_bytes`): an fp8
pool keeps 656-byte rows a layer (kv_lora_rank 512 + 512 / 128 x 4 B of scales + rope 64 x 2
B), not 576, and the indexer's keys add 128 + 4 B a token in whole pages. 0.5.23's DSA pool
(DSATokenToKVPool, kv_cache_configurator.py:3412) is not traced: its line is shown, not checked.
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import cell_bytes, kv_heads
from kvlib.serving.engines.log import EngineCheck, EngineExplanation, GiB
from kvlib.serving.engines.log import gib_ok as _gib_ok
from kvlib.serving.engines.sglang import pools as sg
from kvlib.serving.engines.sglang.pools import k_size_bytes

__all__ = ["detect", "explain", "settings", "resolve", "dsa_058_bytes"]

_SG_KV = re.compile(r"KV Cache is allocated\.\s*(?:dtype:\s*(?P<dtype>[\w.]+),\s*)?#tokens:\s*"
                    r"(?P<n>\d+),\s*(?:K size:\s*(?P<k>[\d.]+) GB,\s*V size:\s*(?P<v>[\d.]+) GB"
                    r"|KV size:\s*(?P<kv>[\d.]+) GB)")
_SWA_POOL = re.compile(r"SWAKVPool (?:mem usage|VA upper bound): (?P<gb>[\d.]+) GB, swa size: "
                       r"(?P<swa>\d+), full size: (?P<full>\d+)")
_LABEL = re.compile(r"\b(?P<label>Full|SWA) KV Cache (?:is allocated|VA upper bound)")
_SLIDING = (CacheKind.SLIDING, CacheKind.CHUNKED)
_DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float8_e4m3fn": 1,
                "torch.float8_e5m2": 1, "torch.float32": 4, "torch.uint8": 1}


#: the settings line: ``server_args=ServerArgs(model_path='...', ..., tp_size=4, ...)`` (the
#: dataclass's repr, as SGLang 0.4-0.5.x logged it) or, in 0.5.23, ``server_args={'model_path':
#: '...', ..., 'tp_size': 4, ...}`` (entrypoints/engine.py:311, ``resolved_dict()``)
_SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")
_SETTINGS = ("model_path", "tp_size", "page_size", "kv_cache_dtype", "dtype",
             "speculative_algorithm", "nsa_prefill_backend", "nsa_decode_backend")
#: ``--kv-cache-dtype`` values and their bytes; "auto" is the model's dtype (None here: the
#: KV line's own dtype, else 2 B)
_KV_SETTING = {"fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1, "bf16": 2, "bfloat16": 2, "fp16": 2,
               "float16": 2, "float32": 4}


def settings(text: str) -> tuple[dict[str, str], int | None]:
    """The settings SGLang's ``server_args=`` line prints (``model_path``, ``tp_size``,
    ``page_size``, ``kv_cache_dtype``, ``dtype``, ``speculative_algorithm``; strings as
    printed, ``None`` for Python's None), and its line number; ({}, None) when the log has
    none."""
    for i, line in enumerate(text.splitlines(), 1):
        if not _SERVER_ARGS.search(line):
            continue
        out = {}
        for key in _SETTINGS:
            m = re.search(rf"(?:\b{key}=|'{key}':\s*)('[^']*'|[^,)}}]*)", line)
            if m:
                out[key] = m.group(1).strip().strip("'")
        return out, i
    return {}, None


def resolve(text: str, tp: int | None, page: int | None, kv_bytes: int | None,
            kv_name: str | None = None) -> tuple[int, int, int | None, list[str], dict]:
    """TP, page size and KV bytes for SGLang's checks: a flag given on the command line wins,
    else the log's ``server_args``, else TP 1, page 1 and the KV line's own dtype (2 B when
    it prints none). Returns them, one sentence for each saying where it came from, and the
    log's settings."""
    found, where = settings(text)
    log_at = f"line {where}'s server_args" if where else ""
    words: list[str] = []

    def pick(name: str, given, key: str, default, parse):
        raw = found.get(key)
        from_log = parse(raw) if raw not in (None, "None", "") else None
        if given is not None:
            clash = (f"; the log says {raw}: the flag wins" if from_log is not None and
                     from_log != given else "")
            words.append(f"{name} {given if name != 'kv' else kv_name}: the command line"
                         f"{clash}")
            return given
        if from_log is not None:
            words.append(f"{name} {raw}: {log_at}")
            return from_log
        words.append(f"{name} {default if name != 'kv' else 'from the KV line'}: "
                     + ("the log does not say" if not where else f"{log_at} leaves it "
                        f"{raw or 'unset'}"))
        return default

    def integer(raw):
        return int(raw) if raw and raw.isdigit() else None

    tp_ = pick("TP", tp, "tp_size", 1, integer)
    page_ = pick("page", page, "page_size", 1, integer)
    kv = pick("kv", kv_bytes, "kv_cache_dtype", None, _KV_SETTING.get)
    if found.get("speculative_algorithm") not in (None, "None"):
        words.append(f"speculative decoding ({found['speculative_algorithm']}): the draft "
                     "model's pool is not checked")
    return tp_, page_, kv, words, found


def detect(text: str) -> bool:
    """Whether ``text`` holds SGLang's KV-cache line."""
    return bool(_SG_KV.search(text))


def _pools(lines, hybrid: bool) -> dict[int, str]:
    """Which pool each KV line of a hybrid-SWA log is ("full" or "swa"), by line number: its
    label (0.5.23), else the SWAKVPool line's sizes where they differ, else its place (0.5.8.post1
    and 0.5.9 build the sliding pool first, swa_memory_pool.py:63-76). {} for one pool."""
    kv = [(i, t, m) for i, t in lines if (m := _SG_KV.search(t))]
    sizes = [(int(m["swa"]), int(m["full"])) for _, t in lines if (m := _SWA_POOL.search(t))]
    if not hybrid or not (sizes or any(_LABEL.search(t) for _, t, _ in kv)):
        return {}
    out = {}
    for k, (i, t, m) in enumerate(kv):
        if (lab := _LABEL.search(t)):
            out[i] = "swa" if lab["label"] == "SWA" else "full"
            continue
        n = int(m["n"])
        if sizes and sizes[0][0] != sizes[0][1] and n in sizes[0]:
            out[i] = "swa" if n == sizes[0][0] else "full"
        else:
            out[i] = "swa" if k % 2 == 0 else "full"
    return out


#: NSATokenToKVPool's quantisation block and the bytes of its bf16 rope (0.5.8.post1
#: memory_pool.py:1676-1679; 0.5.9 :1730-1733)
_QUANT_BLOCK, _ROPE_BYTES = 128, 2


def dsa_058_bytes(tokens: int, page: int, layers: int, d_l: int, d_r: int, d_i: int, b: int,
                  trtllm: bool = False) -> tuple[int, int]:
    """What SGLang 0.5.8.post1 and 0.5.9 log as the "KV size" of a sparse-indexer (DSA) model's
    pool, in bytes, and the latent row's bytes a layer. Per layer: ``(tokens + page)`` latent rows
    (memory_pool.py:1387 in 0.5.8.post1, :1441 in 0.5.9) of ``d_l + d_r`` values x ``b``, except
    an fp8 pool (``b`` 1), whose rows are ``d_l + d_l / 128 x 4 + d_r x 2`` bytes (656 for
    DeepSeek V3.2: 0.5.8.post1 :1699-1705; 0.5.9 model_runner_kv_cache_mixin.py:233-247, where a
    trtllm NSA backend keeps ``d_l + d_r``: :227-231); plus the indexer's ``(tokens + page + 1)
    // page`` pages of ``page x (d_i + d_i / 128 x 4)`` bytes (0.5.8.post1 :1744-1752; 0.5.9
    :1791-1799), summed by get_kv_size_bytes (:1832-1836; 0.5.9 :1879-1883)."""
    if b == 1 and not trtllm:
        row = d_l + d_l // _QUANT_BLOCK * 4 + d_r * _ROPE_BYTES
    else:
        row = (d_l + d_r) * b
    index = (tokens + page + 1) // page * page * (d_i + d_i // _QUANT_BLOCK * 4)
    return layers * ((tokens + page) * row + index), row


def _mha_bytes(groups, n: int, page: int, dim: str, b: int, tp: int) -> int:
    return sum(k_size_bytes(n, page, kv_heads(g), g.sizes[dim], g.layers, b, tp)
               for g in groups if g.kind != CacheKind.LATENT)


def explain(lines, model, tp: int, page: int, kv_bytes: int | None) -> EngineExplanation:
    """The checks of SGLang's lines (``lines``: (line number, text)); ``model`` (a ModelSpec)
    adds those that need its sizes."""
    e = EngineExplanation("sglang")
    found, _ = settings("\n".join(t for _, t in lines))
    # a trtllm NSA backend keeps 576-value fp8 rows (0.5.9 model_runner_kv_cache_mixin.py:227-231)
    dsa_trtllm = "trtllm" in (found.get("nsa_prefill_backend"), found.get("nsa_decode_backend"))
    full = [g for g in (model.groups if model else ()) if g.kind in (CacheKind.FULL,
                                                                      CacheKind.SLIDING,
                                                                      CacheKind.CHUNKED,
                                                                      CacheKind.LATENT)]
    swa = [g for g in full if g.kind in _SLIDING]
    hybrid = bool(swa) and len(swa) < len(full)
    pool_of = _pools(lines, hybrid)
    by_pool = {"swa": swa, "full": [g for g in full if g.kind not in _SLIDING]}
    b_seen = None
    for i, text in lines:
        if full and pool_of and (m := _SWA_POOL.search(text)):
            b = b_seen or kv_bytes or 2
            exact = sum(_mha_bytes(by_pool[name], int(m[name]), page, dim, b, tp)
                        for name in ("swa", "full") for dim in ("d_QK", "d_V"))
            e.checks.append(EngineCheck(
                i, text, "SWAKVPool mem usage", f"{m['gb']} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(m["gb"], exact) else "mismatch",
                f"K + V of the sliding pool ({int(m['swa']):,} + page {page} rows) and the full "
                f"pool ({int(m['full']):,} + page {page} rows), GB = 2^30 "
                "(swa_memory_pool.py:86-90, 0.5.8.post1)"))
            continue
        m = _SG_KV.search(text)
        if not m:
            continue
        n = int(m["n"])
        b = _DTYPE_BYTES.get(m["dtype"]) if m["dtype"] else kv_bytes
        b = b or 2
        b_seen = b
        if m["k"] is not None and m["k"] == m["v"]:
            e.checks.append(EngineCheck(i, text, "K size = V size", f"{m['k']} GB",
                                        f"{m['v']} GB", "info",
                                        "K and V rows of equal width (head_dim = v_head_dim)"))
        per_token = (Fraction(m["k"] or m["kv"]) + Fraction(m["v"] or 0)) * GiB / (n + page)
        e.checks.append(EngineCheck(i, text, "bytes per token (from the line)",
                                    f"{m['k'] or m['kv']} + {m['v'] or 0} GB",
                                    f"about {float(per_token):,.0f} B", "info",
                                    f"(K + V) x 2^30 / (#tokens + page {page})"))
        if not full:
            continue
        indexer = [g for g in (model.groups if model else ()) if g.kind == CacheKind.INDEXER]
        if m["kv"] is not None and indexer and m["dtype"]:
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", "not checked", "info",
                "0.5.23's sparse-indexer pool (DSATokenToKVPool) is not traced"))
            continue
        if m["kv"] is not None and indexer:  # 0.5.8.post1-0.5.9's NSATokenToKVPool
            lat = [g for g in full if g.kind == CacheKind.LATENT][0]
            exact, row = dsa_058_bytes(n, page, lat.layers, lat.sizes["d_L"],
                                       lat.sizes.get("d_R", 0), indexer[0].sizes["d_I"], b,
                                       trtllm=dsa_trtllm)
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(m["kv"], exact) else "mismatch",
                f"{lat.layers} layers x ((#tokens {n:,} + page {page}) x {row} B latent row + "
                f"(#tokens + page + 1) // page x {page} x "
                f"{indexer[0].sizes['d_I'] + indexer[0].sizes['d_I'] // _QUANT_BLOCK * 4} B "
                "indexer keys), GB = 2^30 (SGLang 0.5.8.post1-0.5.9's NSATokenToKVPool, "
                "memory_pool.py:1676-1836 in 0.5.8.post1)"))
            continue
        if m["kv"] is not None:  # an MLA latent: SGLang's CELL_MLA per row
            exact = (n + page) * sum(
                cell_bytes(sg, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                       "d_R": g.sizes.get("d_R", 0)}, tp, b)
                for g in full if g.kind == CacheKind.LATENT)
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(m["kv"], exact) else "mismatch",
                f"(#tokens {n:,} + page {page}) x (kv_lora_rank + rope) x layers x {b} B, "
                "GB = 2^30"))
            continue
        which = pool_of.get(i)
        groups = by_pool[which] if which else full
        layers = sum(g.layers for g in groups)
        pool = (f"the {'sliding' if which == 'swa' else 'full'} pool's {layers} layers" if which
                else "attention layers")
        for name, printed, dim in (("K size", m["k"], "d_QK"), ("V size", m["v"], "d_V")):
            exact = _mha_bytes(groups, n, page, dim, b, tp)
            rows = exact // ((n + page) * b)
            e.checks.append(EngineCheck(
                i, text, name, f"{printed} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(printed, exact) else "mismatch",
                f"(#tokens {n:,} + page {page}) x {rows:,} (KV heads per rank x {dim} x "
                f"{pool}) x {b} B, TP={tp}, GB = 2^30 (memory_pool.py:2574-2578)"))
    return e
