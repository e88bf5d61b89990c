"""SGLang 0.5.23's own pool arithmetic, lifted from its released wheel and run beside kvlib
(issue 35). The functions are plain Python over a few numbers; this test takes their source
out of the wheel with ``ast`` and runs it with stand-ins for SGLang's config accessors, so no
SGLang dependency is installed. The wheel: ``make oracle`` downloads it into build/oracle
(``pip download sglang==0.5.23 --no-deps``); without it the test is skipped (with
KVLIB_REQUIRE_ORACLE=1 it fails)."""

import ast
import glob
import os
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from kvlib.serving.engines import engine_tokens
from kvlib.serving.engines import sglang as sg

ROOT = Path(__file__).resolve().parents[2]


def _wheel():
    found = sorted(glob.glob(os.environ.get("KVLIB_SGLANG_WHEEL", "")) or
                   glob.glob(str(ROOT / "build" / "oracle" / "sglang-0.5.23-*.whl")))
    if not found:
        if os.environ.get("KVLIB_REQUIRE_ORACLE"):
            pytest.fail("the SGLang 0.5.23 wheel is missing: run make oracle")
        pytest.skip("the SGLang 0.5.23 wheel is not in build/oracle (make oracle)")
    return found[0]


def _source(path: str) -> str:
    with zipfile.ZipFile(_wheel()) as z:
        return z.read(path).decode()


def _function(path: str, name: str, cls: str | None = None, env: dict | None = None):
    """The function ``name`` (a method of ``cls``) as SGLang's wheel defines it."""
    tree = ast.parse(_source(path))
    scope = tree.body
    if cls is not None:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)
    node.decorator_list = []
    node.returns = None
    for a in node.args.args + node.args.kwonlyargs:
        a.annotation = None
    module = ast.Module(body=[node], type_ignores=[])
    namespace = dict(env or {})
    exec(compile(module, f"sglang-0.5.23/{path}", "exec"), namespace)  # noqa: S102
    return namespace[name]


@dataclass
class _Config:  # MemoryPoolConfig's fields that calculate_pool_sizes fills
    max_total_num_tokens: int
    full_max_total_num_tokens: int | None = None
    swa_max_total_num_tokens: int | None = None
    unified_memory_pool_bytes: int | None = None


def test_prefill_graph_sizes_are_sglangs():
    theirs = _function("sglang/srt/arg_groups/cuda_graph_hook.py",
                       "generate_prefill_cuda_graph_batch_sizes")
    for max_bs in (2048, 4096, 8192, 16384):
        assert sg.prefill_graph_sizes(max_bs) == theirs(max_bs)


@pytest.mark.parametrize(("model", "gpu", "tp"), [
    ("llama-3.1-8b", "H200", 1), ("llama-3.1-70b", "H200", 4), ("qwen3-32b", "H100-80GB", 2),
    ("deepseek-v3", "H200", 8), ("mistral-7b-v0.1", "A100-80GB", 1)])
def test_default_pool_tokens_are_sglangs(model, gpu, tp):
    ours = engine_tokens(model, gpu, "sglang", tp=tp, context=8192)
    calc = _function("sglang/srt/model_executor/pool_configurator.py", "calculate_pool_sizes",
                     cls="DefaultPoolConfigurator", env={"MemoryPoolConfig": _Config})
    me = types.SimpleNamespace(_fixed_overhead_bytes=0, _cell_size=ours.cell,
                               _zero_kv_max_tokens=None)
    assert calc(me, ours.kv_budget, ours.page).max_total_num_tokens == ours.tokens
    # max_running_requests with none given (KVCacheConfigurator.resolve_max_num_reqs)
    schedule = types.SimpleNamespace(max_running_requests=None)
    resolve = _function("sglang/srt/mem_cache/kv_cache_configurator.py", "resolve_max_num_reqs",
                        cls="KVCacheConfigurator",
                        env={"get_schedule": lambda: schedule, "logger": None})
    kvc = types.SimpleNamespace(model_config=types.SimpleNamespace(context_len=8192),
                                attn_dp_size=1, mambaish_config=None)
    assert resolve(kvc, ours.tokens) == ours.max_running_requests


def test_hybrid_swa_pools_are_sglangs():
    ours = engine_tokens("gpt-oss-120b", "H200", "sglang", context=8192)
    env = {"MemoryPoolConfig": _Config, "logger": types.SimpleNamespace(info=lambda *a: None)}
    recompute = _function("sglang/srt/model_executor/pool_configurator.py",
                          "_recompute_cell_size", cls="HybridSWAPoolConfigurator", env=env)
    solve = _function("sglang/srt/model_executor/pool_configurator.py", "_solve_pool_sizes",
                      cls="HybridSWAPoolConfigurator", env=env)
    calc = _function("sglang/srt/model_executor/pool_configurator.py", "calculate_pool_sizes",
                     cls="HybridSWAPoolConfigurator", env=env)
    full_cell = ours.cell  # 18 full layers; gpt-oss's 18 sliding layers have the same heads
    me = types.SimpleNamespace(
        _full_layers_num=18, _swa_layers_num=18, _full_per_token=full_cell // 18,
        _swa_per_token=ours.swa_cell // 18, _draft_full_layers_num=0,
        _draft_swa_layers_num=0, _draft_swa_full_layers_num=0, _draft_cell_size=0,
        _swa_full_tokens_ratio=0.8, _enable_unified_memory=False, _sliding_window_size=128,
        _page_size=1, _fused_full_entry=None, _fused_swa_entry=None)
    me._full_cell_bytes = lambda: me._full_per_token * me._full_layers_num
    me._swa_cell_bytes = lambda: me._swa_per_token * me._swa_layers_num
    me.validate_swa_pool_size = lambda *a: None
    me._make_pool_config = lambda full, swa: _Config(full, full, swa)
    me._solve_pool_sizes = lambda n, page: solve(me, n, page)
    recompute(me)
    config = calc(me, ours.kv_budget, ours.page)
    assert config.full_max_total_num_tokens == ours.tokens
    assert config.swa_max_total_num_tokens == ours.swa_tokens
