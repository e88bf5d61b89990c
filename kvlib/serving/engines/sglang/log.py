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
(DSATokenToKVPool, memory_pool.py:5279-5663) keeps the same bytes (its keys only in the layers
that compute their own top-k; index_kpool 1 assumed) and prints its dtype.
Releases before sglang PR #11309 printed the latent rows alone; a line that only that form
explains is read as it. A DSA model pages by 64 where the log does not say (CUDA's rule,
arg_groups/model_overrides/deepseek_v2.py:169-173); where neither the log nor a flag names the
KV dtype, a DSA or MLA line that only 1 B explains is shown with that inference, not counted.

Older releases (issue 43, second round): the 0.3 logs print no KV line (the scheduler's
max_total_num_tokens is their one pool figure); the logs of early 2025 print "KV Cache is
allocated. K size: X GB, V size: Y GB." without #tokens (the count is the scheduler's line). The
pool's token count is also worked out from the budget where the log prints the free memory
before and after the weights and the fraction (:mod:`~kvlib.serving.engines.sglang.log_budget`);
a run whose json_model_override_args changes the model is not checked against its config.

Logs as pasted (issue 43; :mod:`~kvlib.serving.engines.sglang.log_lines`): settings from
server_args, else a pasted launch command, else TP from the rank labels; pools told apart per
rank; a second model runner's pool (the draft's) shown, not checked; the state pool's line
checked by :mod:`~kvlib.serving.engines.sglang.log_state`.
"""

from __future__ import annotations

import re
from fractions import Fraction

from kvlib.models.spec import CacheKind
from kvlib.serving.engines.common import cell_bytes, kv_heads
from kvlib.serving.engines.log import EngineCheck, EngineExplanation, GiB
from kvlib.serving.engines.log import gib_ok as _gib_ok
from kvlib.serving.engines.sglang import log_lines as ll
from kvlib.serving.engines.sglang import pools as sg
from kvlib.serving.engines.sglang.defaults import HYBRID_SWA_ARCHS
from kvlib.serving.engines.sglang.log_budget import budget_checks, overridden
from kvlib.serving.engines.sglang.log_state import MAMBA, mamba_line_bytes
from kvlib.serving.engines.sglang.pools import k_size_bytes

__all__ = ["detect", "signs", "explain", "settings", "resolve", "dsa_058_bytes"]

_SG_KV = ll.KV
_SWA_POOL = ll.SWA_POOL
_SLIDING = (CacheKind.SLIDING, CacheKind.CHUNKED)
_DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float8_e4m3fn": 1,
                "torch.float8_e5m2": 1, "torch.float32": 4, "torch.uint8": 1}
_SSM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_MAX_TOTAL = ll.MAX_TOTAL


#: the settings line: ``server_args=ServerArgs(model_path='...', ..., tp_size=4, ...)`` (the
#: dataclass's repr, as SGLang 0.4-0.5.x logged it) or, in 0.5.23, ``server_args={'model_path':
#: '...', ..., 'tp_size': 4, ...}`` (entrypoints/engine.py:311, ``resolved_dict()``)
_SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")
_SETTINGS = ("model_path", "tp_size", "page_size", "kv_cache_dtype", "dtype",
             "speculative_algorithm", "nsa_prefill_backend", "nsa_decode_backend")
# read for the checks, not part of :func:`settings`' answer
_MORE = ("mamba_ssm_dtype", "dsa_prefill_backend", "dsa_decode_backend", "mem_fraction_static",
         "max_total_tokens", "json_model_override_args", "pp_size", "disable_hybrid_swa_memory")
#: ``--kv-cache-dtype`` values and their bytes; "auto" is the model's dtype (None here: the
#: KV line's own dtype, else 2 B)
_KV_SETTING = {"fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1, "bf16": 2, "bfloat16": 2, "fp16": 2,
               "float16": 2, "float32": 4}


def _server_args(text, keys) -> tuple[dict[str, str], int | None]:
    """``keys`` of the settings line in ``text`` (a string, or (number, line) pairs), and its
    number; a line the paste wrapped (it does not end in ")" or "}") is joined with the lines
    after it, up to the one that does."""
    lines = list(enumerate(text.splitlines(), 1)) if isinstance(text, str) else list(text)
    for k, (i, line) in enumerate(lines):
        if not _SERVER_ARGS.search(line):
            continue
        for _, more in lines[k + 1:k + 60]:
            if line.rstrip().endswith((")", "}")):
                break
            line = line.rstrip("\n") + more
        out = {}
        for key in keys:
            m = re.search(rf"(?:\b{key}=|'{key}':\s*)('[^']*'|[^,)}}]*)", line)
            if m:
                out[key] = m.group(1).strip().strip("'")
        return out, i
    return {}, None


def settings(text: str) -> tuple[dict[str, str], int | None]:
    """The settings SGLang's ``server_args=`` line prints (``model_path``, ``tp_size``,
    ``page_size``, ``kv_cache_dtype``, ``dtype``, ``speculative_algorithm``; strings as
    printed, ``None`` for Python's None), and its line number; ({}, None) when the log has
    none."""
    return _server_args(text, _SETTINGS)


def resolve(text: str, tp: int | None, page: int | None, kv_bytes: int | None,
            kv_name: str | None = None) -> tuple[int | None, int, int | None, list[str], dict]:
    """TP, page size and KV bytes for SGLang's checks: a flag given on the command line wins,
    else the log's ``server_args``, else a launch command pasted with the log (``--tp``,
    ``--page-size``, ``--kv-cache-dtype``), else (TP) the highest rank label + 1, (KV) a "Using KV
    cache dtype" line, else TP 1, page 1 and the KV line's own dtype (2 B when it prints none).
    TP is None where the lines carry the label TP0 alone (TP 2 or more, how many unsaid).
    Returns them, one sentence for each saying where it came from, and the log's settings
    (server_args', completed by the command's)."""
    lines, _ = ll.normalise(list(enumerate(text.splitlines(), 1)))
    found, where = _server_args(lines, _SETTINGS)
    command, at = ll.command_settings(lines)
    log_at = f"line {where}'s server_args" if where else ""
    words: list[str] = []

    def pick(name: str, given, key: str, default, parse, fallback=None):
        raw = found.get(key)
        from_log = parse(raw) if raw not in (None, "None", "") else None
        said = log_at
        if from_log is None and command.get(key) not in (None, "None", ""):
            raw, from_log = command[key], parse(command[key])
            said = f"line {at}'s launch command"
        if given is not None:
            clash = (f"; the log says {raw}: the flag wins" if from_log is not None and
                     from_log != given else "")
            words.append(f"{name} {given if name != 'kv' else kv_name}: the command line"
                         f"{clash}")
            return given
        if from_log is not None:
            words.append(f"{name} {raw}: {said}")
            return from_log
        if fallback is not None and fallback[0] is not None:
            words.append(f"{name} {fallback[1]}: {fallback[2]}")
            return fallback[0]
        words.append(f"{name} {default if name != 'kv' else 'from the KV line'}: "
                     + ("the log does not say" if not where else f"{log_at} leaves it "
                        f"{raw or 'unset'}"))
        return default

    def integer(raw):
        return int(raw) if raw and raw.isdigit() else None

    ranks_tp, seen = ll.tp_from_ranks(lines)
    by_ranks = (ranks_tp if ranks_tp and ranks_tp > 1 else None, ranks_tp,
                f"inferred from the rank labels TP{seen[0]}-TP{seen[-1]} (highest + 1; more "
                "where the paste holds some ranks only)" if seen else "")
    tp_ = pick("TP", tp, "tp_size", 1, integer, by_ranks)
    by_default = tp is None and words[-1].startswith("TP 1:") and (
        "does not say" in words[-1] or "leaves it" in words[-1])
    if by_default and at is not None:
        # a pasted command without --tp runs at SGLang's default tp_size 1
        words[-1] = (f"TP 1: line {at}'s command passes no --tp (SGLang's default tp_size 1)")
    elif seen == [0] and by_default:
        # 0.5.x prints " TP0" only where tp_size > 1 (managers/scheduler.py:6289-6290); older
        # releases and bench_one_batch print it at TP 1 too: either way TP is not said
        words[-1] = ("TP unknown: the lines carry the rank label TP0 and no other rank (0.5.x "
                     "prints it only where tp_size > 1, scheduler.py:6289-6290; earlier releases "
                     "at TP 1 too): pass --tp")
        tp_ = None
    dp_found, _ = _server_args(lines, ("enable_dp_attention", "dp_size"))
    dp_on = (dp_found.get("enable_dp_attention") == "True"
             or (not where and "enable_dp_attention" in command))
    dp = integer(dp_found.get("dp_size") or command.get("dp_size") or "")
    if tp_ is not None and tp is None and dp_on and dp and dp > 1 and tp_ % dp == 0:
        # runtime_context.py:73-76: attn_tp_size = tp_size // attn_dp_size
        words.append(f"attention TP {tp_ // dp}: tp_size {tp_} / dp_size {dp} with DP attention "
                     "(runtime_context.py:73-76, SGLang 0.5.23); KV heads are split over it")
        tp_ = tp_ // dp
    elif (tp_ is not None and tp is None and not dp_found and "dp_size" not in command
          and ll.dp_attention_from_labels(lines)):
        words.append(f"attention TP 1: the rank labels pair DPk with TPk (DP attention over "
                     f"one-rank groups: dp rank = tp rank // attention TP, runtime_context.py:"
                     f"73-76, SGLang 0.5.23), so each rank holds every KV head, not 1/{tp_}")
        tp_ = 1
    page_ = pick("page", page, "page_size", 1, integer)
    dtype, dline = ll.kv_dtype_line(lines)
    kv = pick("kv", kv_bytes, "kv_cache_dtype", None, _KV_SETTING.get,
              (_DTYPE_BYTES.get(dtype), dtype, f"line {dline}'s \"Using KV cache dtype\""))
    if found.get("speculative_algorithm") not in (None, "None"):
        words.append(f"speculative decoding ({found['speculative_algorithm']}): the draft "
                     "model's pool is not checked")
    merged = {**{k: v for k, v in command.items() if k == "model_path"}, **found}
    return tp_, page_, kv, words, merged


def detect(text: str) -> bool:
    """Whether ``text`` holds SGLang's KV-cache line (coloured or wrapped by the paste too) or
    its scheduler's ``max_total_num_tokens=N``: the pool's size in tokens, which every release
    prints (managers/scheduler.py:1269 in 0.5.23; the 0.3 releases' one pool figure) and no
    other engine does, so the line alone makes the text SGLang's (issue 43, tester's round)."""
    if _SG_KV.search(text) or ll.MAX_TOTAL.search(text):
        return True
    if "KV Cache is allocated" not in text:
        return False
    lines, _ = ll.normalise(list(enumerate(text.splitlines(), 1)))
    return any(_SG_KV.search(t) for _, t in lines)


#: what only SGLang prints besides its pool lines (SGLang 0.5.23 source; the older releases'
#: logs in tests/fixtures/sglang_logs print the same words): its settings line
#: (entrypoints/engine.py:311), a launch command, its module paths, the model runner's memory
#: lines (model_runner.py:1274; kv_cache_configurator.py:499), the server's ready line
#: (entrypoints/http_server.py:2600)
_SIGNS = ((_SERVER_ARGS, "its settings line, server_args="),
          (re.compile(r"\bsglang(?:\.launch_server|\.bench_one_batch|\.bench_offline_throughput"
                      r"| serve)\b"), "a launch command"),
          (re.compile(r"\bsglang[./]srt\b"), "SGLang's module path, sglang.srt"),
          (ll.LOAD_BEGIN, "\"Load weight begin. avail mem=\""),
          (ll.SGLANG_ONLY[1], "\"Load weight end. type=\""),
          (ll.SGLANG_ONLY[0], "\"Memory pool end. avail mem=\""),
          (re.compile(r"The server is fired up and ready to roll"), "the server's ready line"))


def signs(text: str) -> tuple[int, str] | None:
    """The first line of ``text`` that only SGLang prints (its number, and what it is), a
    KV line or not; None where there is none: a log whose pool lines kvlib does not find is
    still named SGLang's (``kvlib explain-log``)."""
    for i, line in enumerate(text.splitlines(), 1):
        for rx, what in _SIGNS:
            if rx.search(line):
                return i, what
    return None


#: NSATokenToKVPool's quantisation block and the bytes of its bf16 rope (0.5.8.post1
#: memory_pool.py:1676-1679; 0.5.9 :1730-1733)
_QUANT_BLOCK, _ROPE_BYTES = 128, 2


def dsa_058_bytes(tokens: int, page: int, layers: int, d_l: int, d_r: int, d_i: int, b: int,
                  trtllm: bool = False, index_layers: int | None = None) -> tuple[int, int]:
    """What SGLang 0.5.8.post1 and 0.5.9 log as the "KV size" of a sparse-indexer (DSA) model's
    pool, in bytes, and the latent row's bytes a layer. Per layer: ``(tokens + page)`` latent rows
    (memory_pool.py:1387 in 0.5.8.post1, :1441 in 0.5.9) of ``d_l + d_r`` values x ``b``, except
    an fp8 pool (``b`` 1), whose rows are ``d_l + d_l / 128 x 4 + d_r x 2`` bytes (656 for
    DeepSeek V3.2: 0.5.8.post1 :1699-1705; 0.5.9 model_runner_kv_cache_mixin.py:233-247, where a
    trtllm NSA backend keeps ``d_l + d_r``: :227-231); plus the indexer's ``(tokens + page + 1)
    // page`` pages of ``page x (d_i + d_i / 128 x 4)`` bytes (0.5.8.post1 :1744-1752; 0.5.9
    :1791-1799), summed by get_kv_size_bytes (:1832-1836; 0.5.9 :1879-1883). 0.5.23's
    DSATokenToKVPool (memory_pool.py:5279-5378, 5659-5663; the row calculate_mla_kv_cache_dim's,
    kv_cache_configurator.py:3411-3474; the keys' pages mem_cache/index_key_cache.py:22-47) keeps
    the same bytes at index_kpool 1, its keys in ``index_layers`` layers only (the ones that do
    not reuse the previous layer's top-k)."""
    if b == 1 and not trtllm:
        row = d_l + d_l // _QUANT_BLOCK * 4 + d_r * _ROPE_BYTES
    else:
        row = (d_l + d_r) * b
    index = (tokens + page + 1) // page * page * (d_i + d_i // _QUANT_BLOCK * 4)
    index_layers = layers if index_layers is None else index_layers
    return layers * (tokens + page) * row + index_layers * index, row


def _architecture(model) -> str:
    """The first architecture of ``model``'s config (a bundled name or a config.json path, as
    kvlib read it); "" where it cannot be read again."""
    import json
    from pathlib import Path

    from kvlib.models.catalog import bundled_config, bundled_name
    from kvlib.serving.engines.common import arch

    try:
        if model is None:
            return ""
        if bundled_name(model.name):
            return arch(bundled_config(model.name))
        path = Path(model.source or "")
        if path.suffix == ".json" and path.is_file():
            return arch(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, OSError, KeyError):
        return ""
    return ""


def _mha_bytes(groups, n: int, page: int, dim: str, b: int, tp: int) -> int:
    return sum(k_size_bytes(n, page, kv_heads(g), g.sizes[dim], g.layers, b, tp)
               for g in groups if g.kind != CacheKind.LATENT)


def _which_b(printed: dict, exact_at, b: int | None) -> tuple[int, str]:
    """The bytes per value to check an MLA or sparse-indexer line with (its rows do not depend
    on TP), and how it was chosen: ``b`` where the log or a flag says it; else 2, or 1 where
    only 1 B makes every printed figure of the line (``printed``: name -> GB string;
    ``exact_at(b)``: name -> bytes) round as printed, said as an inference (the default KV dtype
    of a DSA model is the GPU's: fp8 on SM10x, bf16 before, arg_groups/overrides.py:532-538)."""
    if b is not None:
        return b, ""
    fits = [c for c in (2, 1) if all(_gib_ok(printed[k], v) for k, v in exact_at(c).items())]
    if fits == [1]:
        return 1, _INFERRED.format(b=1)
    return 2, ""


_INFERRED = ("; KV dtype inferred from this line: {b} B, the only width whose bytes print as "
             "the log's; the log names no dtype, so the line is shown, not counted as a check "
             "(pass --kv-dtype)")
_NO_TP = "TP unknown (the rank label TP0 alone says 2 or more): pass --tp"


def _status(printed: str, exact: int, inferred: str) -> str:
    """"info" for a line whose dtype was inferred from itself, else whether it agrees."""
    return "info" if inferred else "ok" if _gib_ok(printed, exact) else "mismatch"


def _info(e, i, text, what, printed, how):
    e.checks.append(EngineCheck(i, text, what, printed, "not checked", "info", how))


def explain(lines, model, tp: int, page: int, kv_bytes: int | None) -> EngineExplanation:
    """The checks of SGLang's lines (``lines``: (line number, text)); ``model`` (a ModelSpec)
    adds those that need its sizes."""
    e = EngineExplanation("sglang")
    lines, joins = ll.normalise(lines, (("Mamba Cache is allocated", MAMBA),))
    for note in joins:
        i = int(note.split()[1].split("-")[0])
        e.checks.append(EngineCheck(i, dict(lines)[i], "wrapped line", "joined", note, "info"))
    found, _ = _server_args(lines, _SETTINGS + _MORE)
    command, _ = ll.command_settings(lines)
    # a trtllm NSA backend keeps 576-value fp8 rows (0.5.9 model_runner_kv_cache_mixin.py:227-231)
    # 0.5.23 names them dsa_*: a trtllm backend, or tilelang for both, keeps raw rows
    # (kv_cache_configurator.py:3426-3456)
    backends = [found.get(f"{w}_{r}_backend") for w in ("nsa", "dsa")
                for r in ("prefill", "decode")]
    dsa_trtllm = "trtllm" in backends or backends[2:] == ["tilelang", "tilelang"]
    groups = model.groups if model else ()
    full = [g for g in groups if g.kind in (CacheKind.FULL, CacheKind.SLIDING, CacheKind.CHUNKED,
                                            CacheKind.LATENT)]
    states = [g for g in groups if g.kind in (CacheKind.LINEAR, CacheKind.MAMBA)
              and g.attention in ("Gated DeltaNet", "Mamba2")]
    indexer = [g for g in groups if g.kind == CacheKind.INDEXER]
    swa = [g for g in full if g.kind in _SLIDING]
    hybrid = bool(swa) and len(swa) < len(full)
    if hybrid and not ll.hybrid_evidence(lines):
        arch_ = _architecture(model)
        one_pool = (found.get("disable_hybrid_swa_memory") == "True"
                    or any(ll.NO_HYBRID.search(t) for _, t in lines)
                    or (arch_ and arch_ not in HYBRID_SWA_ARCHS))
        if one_pool:
            # Gemma 2/3 and every architecture outside SGLang's hybrid-SWA set: one pool, every
            # layer at full length (0.5.23 configs/model_config.py:2651-2697;
            # arg_groups/model_overrides/gemma2_gemma3.py: "Disable hybrid SWA memory")
            hybrid = False
            first = next(((i, t) for i, t in lines if _SG_KV.search(t)), (0, ""))
            e.checks.append(EngineCheck(
                first[0], first[1], "pools", "one", "one pool, every layer", "info",
                f"{arch_ or 'the model'} keeps its sliding-window layers at full length in "
                "SGLang's one KV pool (hybrid SWA memory off: not in is_hybrid_swa_model's "
                "architectures, configs/model_config.py:2651-2697, or disabled as for Gemma 2/3, "
                "model_overrides/gemma2_gemma3.py, SGLang 0.5.23)"))
    pool_of = ll.assign_pools(lines, hybrid)
    by_pool = {"swa": swa, "full": [g for g in full if g.kind not in _SLIDING]}
    if indexer and page == 1 and not (found.get("page_size") or command.get("page_size")):
        # CUDA's DSA rule: 0.5.23 arg_groups/model_overrides/deepseek_v2.py:169-173
        page = 64
        first = next(((i, t) for i, t in lines if _SG_KV.search(t)), (0, ""))
        e.checks.append(EngineCheck(
            first[0], first[1], "page size", "not printed", "64", "info",
            "a sparse-indexer (DSA) model pages by 64 on CUDA: \"Setting page size to 64 for "
            "DeepSeek DSA\" (arg_groups/model_overrides/deepseek_v2.py:169-173)"))
    ssm_b = _SSM_BYTES.get(found.get("mamba_ssm_dtype"), 4)
    b_seen = None
    settings_ = {**command, **{k: v for k, v in found.items() if v not in (None, "None", "")}}
    override = overridden(settings_.get("json_model_override_args"))
    kv_lines: dict[int, int] = {}  # the target's KV lines and their token counts
    b_budget: int | None = kv_bytes
    for i, text in lines:
        if states and (m := MAMBA.search(text)):
            size = int(m["size"])
            if tp is None:
                _info(e, i, text, "Mamba state", f"{m['conv']} + {m['ssm']} GB", _NO_TP)
                continue
            try:
                conv, ssm = mamba_line_bytes(states, size, tp, ssm_b)
            except ValueError as err:
                _info(e, i, text, "Mamba state", f"{m['conv']} + {m['ssm']} GB", str(err))
                continue
            layers = sum(g.layers for g in states)
            for name, printed, exact, what in (
                    ("conv_state size", m["conv"], conv, "conv_dim / TP x (K - 1) x 2 B"),
                    ("ssm_state size", m["ssm"], ssm,
                     f"heads / TP x head_dim x state_size x {ssm_b} B")):
                e.checks.append(EngineCheck(
                    i, text, name, f"{printed} GB", f"{exact / GiB:.4f} GB",
                    "ok" if _gib_ok(printed, exact) else "mismatch",
                    f"{layers} state layers x (max_mamba_cache_size {size:,} + 1) slots x "
                    f"{what}, TP={tp}, GB = 2^30 (memory_pool.py:722-753, 0.5.23)"))
            if m["spec"]:
                _info(e, i, text, "intermediate caches", "printed",
                      "speculative decoding's per-draft-token caches: not checked")
            continue
        if full and (m := _SWA_POOL.search(text)) and hybrid and tp is not None:
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
        if (t := _MAX_TOTAL.search(text)):
            kv_tokens = {int(k["n"]) for _, x in lines if (k := _SG_KV.search(x)) and k["n"]}
            if not kv_tokens and any(_SG_KV.search(x) for _, x in lines):
                kv_tokens = {int(t["n"])}  # the KV lines print no count: this line is theirs
            if not any(_SG_KV.search(x) for _, x in lines):
                # no KV line: this is the log's one pool figure (the 0.3 releases, a paste of
                # this line alone); the budget check works it out where the log gives the free
                # memory around the weights and the model is known
                budget = bool(full) and any(ll.LOAD_BEGIN.search(x) for _, x in lines) and any(
                    ll.LOAD_END.search(x) for _, x in lines)
                e.checks.append(EngineCheck(
                    i, text, "pool size (max_total_num_tokens)", f"{int(t['n']):,} tokens",
                    "worked out below" if budget else "not checked", "info",
                    "the KV pool's size in tokens (the scheduler's line, managers/scheduler.py:"
                    "1269 in SGLang 0.5.23, printed by every release); the log has no KV line to "
                    "hold it against" + ("" if budget else ", and " + (
                        "no free memory before and after the weights ('Load weight begin / end "
                        "... avail mem') to work it out from" if full else "no model (--model) "
                        "to work out the pool's bytes with") + ": shown, not checked")))
                continue
            e.checks.append(EngineCheck(
                i, text, "max_total_num_tokens", t["n"],
                "the #tokens of a KV line" if int(t["n"]) in kv_tokens else "no KV line's #tokens",
                "info", "the scheduler's token budget (managers/scheduler.py:1269): the full "
                "pool's #tokens, printed again"))
            continue
        m = _SG_KV.search(text)
        if not m:
            continue
        if m["n"] is None:  # the early-2025 form: no #tokens; the scheduler's line has it
            n_ = ll.tokens_of(lines, i, ll.rank_of(text))
            if n_ is None:
                _info(e, i, text, "K size" if m["k"] else "KV size", f"{m['k'] or m['kv']} GB",
                      "the line prints no #tokens (the form of early 2025) and no single "
                      "max_total_num_tokens line gives it")
                continue
            e.checks.append(EngineCheck(i, text, "#tokens", "not printed", f"{n_:,}", "info",
                                        "the line's form of early 2025 prints no count: the "
                                        "scheduler's max_total_num_tokens line gives it"))
            n = n_
        else:
            n = int(m["n"])
        b_line = _DTYPE_BYTES.get(m["dtype"]) if m["dtype"] else kv_bytes
        if b_line is not None and b_budget is None:
            b_budget = b_line
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
        which = pool_of.get(i)
        if which != "draft":
            kv_lines[i] = n
        if override and which != "draft":
            _info(e, i, text, "KV size" if m["kv"] else "K size", f"{m['k'] or m['kv']} GB",
                  f"the run overrides the model's config (json_model_override_args {override}): "
                  "the config's shape is not the run's, so the line is not worked out from it")
            continue
        if which == "draft":
            _info(e, i, text, "KV size" if m["kv"] else "K size", f"{m['k'] or m['kv']} GB",
                  "a second model runner's pool (printed after this rank's \"Memory pool end\": "
                  "the draft model of speculative decoding), whose layers kvlib does not read")
            continue
        if which == "unknown":
            _info(e, i, text, "K size", f"{m['k']} GB",
                  "one unlabelled pool line of a hybrid-SWA model, with neither its rank's other "
                  "pool line nor its SWAKVPool line in the paste: which pool it is is not said")
            continue
        if m["kv"] is not None and indexer:  # NSATokenToKVPool / 0.5.23's DSATokenToKVPool
            lat = [g for g in full if g.kind == CacheKind.LATENT][0]
            d_i = indexer[0].sizes["d_I"]

            def dsa(c, n=n, lat=lat, d_i=d_i):
                return dsa_058_bytes(n, page, lat.layers, lat.sizes["d_L"],
                                     lat.sizes.get("d_R", 0), d_i, c, trtllm=dsa_trtllm,
                                     index_layers=indexer[0].layers)

            b, how_b = _which_b({"kv": m["kv"]}, lambda c: {"kv": dsa(c)[0]}, b_line)
            latent_only = False
            if not _gib_ok(m["kv"], dsa(b)[0]):
                c_fit = [c for c in ((b,) if b_line else (2, 1))
                         if _gib_ok(m["kv"], lat.layers * (n + page) * dsa(c)[1])]
                if c_fit:
                    b, latent_only = c_fit[-1], True
                    how_b = "" if b_line else _INFERRED.format(b=b)
            exact, row = dsa(b)
            keys = d_i + d_i // _QUANT_BLOCK * 4
            if latent_only:
                exact = lat.layers * (n + page) * row
                how = (f"{lat.layers} layers x (#tokens {n:,} + page {page}) x {row} B latent row: "
                       "the latent rows alone, as releases before sglang PR #11309 (October 2025) "
                       "logged this pool, without the indexer's keys "
                       f"({lat.layers} x (#tokens + page + 1) // page x {page} x {keys} B)")
            else:
                how = (f"{lat.layers} layers x (#tokens {n:,} + page {page}) x {row} B latent "
                       f"row + {indexer[0].layers} indexer layers x (#tokens + page + 1) // page "
                       f"x {page} x {keys} B keys, GB = 2^30 ("
                       + ("SGLang 0.5.23's DSATokenToKVPool, memory_pool.py:5279-5663, index_kpool "
                          "1 assumed" if m["dtype"] else "SGLang 0.5.8.post1-0.5.9's "
                          "NSATokenToKVPool, memory_pool.py:1676-1836 in 0.5.8.post1") + ")")
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", f"{exact / GiB:.4f} GB",
                _status(m["kv"], exact, how_b), how + how_b))
            continue
        if m["kv"] is not None and not any(g.kind == CacheKind.LATENT for g in full):
            # one "KV size" is the form of a pool whose get_kv_size_bytes gives one figure (MLA,
            # the sparse indexer's, DeepSeek V4's: memory_pool.py:2090-2098, 0.5.23); a model
            # with K and V rows has no such pool, so its figure would be nothing (0 B)
            _info(e, i, text, "KV size", f"{m['kv']} GB",
                  "the line prints one KV size, the form of SGLang's latent (MLA) and "
                  "sparse-indexer pools (memory_pool.py:2090-2098, 0.5.23), but "
                  f"{getattr(model, 'name', 'the model')} has no latent layers (its pool prints "
                  "K size and V size): the model given is not the log's; not worked out")
            continue
        if m["kv"] is not None:  # an MLA latent: SGLang's CELL_MLA per row

            def mla(c, n=n):
                return (n + page) * sum(
                    cell_bytes(sg, "CELL_MLA", {"N_L": g.layers, "d_L": g.sizes["d_L"],
                                           "d_R": g.sizes.get("d_R", 0)}, tp, c)
                    for g in full if g.kind == CacheKind.LATENT)

            b, how_b = _which_b({"kv": m["kv"]}, lambda c: {"kv": mla(c)}, b_line)
            exact = mla(b)
            e.checks.append(EngineCheck(
                i, text, "KV size", f"{m['kv']} GB", f"{exact / GiB:.4f} GB",
                _status(m["kv"], exact, how_b),
                f"(#tokens {n:,} + page {page}) x (kv_lora_rank + rope) x layers x {b} B, "
                "GB = 2^30" + how_b))
            continue
        if tp is None:
            _info(e, i, text, "K size", f"{m['k']} GB", _NO_TP)
            continue
        pool = by_pool[which] if which else full
        # no dtype inferred here: at an unsaid TP, TP 2 at 2 B and TP 1 at 1 B print alike
        b = b_line or 2
        b_seen = b
        layers = sum(g.layers for g in pool)
        where = (f"the {'sliding' if which == 'swa' else 'full'} pool's {layers} layers" if which
                 else "attention layers")
        for name, printed, dim in (("K size", m["k"], "d_QK"), ("V size", m["v"], "d_V")):
            exact = _mha_bytes(pool, n, page, dim, b, tp)
            rows = exact // ((n + page) * b)
            e.checks.append(EngineCheck(
                i, text, name, f"{printed} GB", f"{exact / GiB:.4f} GB",
                "ok" if _gib_ok(printed, exact) else "mismatch",
                f"(#tokens {n:,} + page {page}) x {rows:,} (KV heads per rank x {dim} x "
                f"{where}) x {b} B, TP={tp}, GB = 2^30 (memory_pool.py:2574-2578)"))
    if full:
        e.checks.extend(budget_checks(lines, groups, tp, page, b_budget or 2, settings_,
                                      kv_lines))
    return e
