"""The command-line examples of README.md and docs/cli.md are what the commands print now,
and the numbers the prose around them quotes are kvlib's (issues 24 and 25).

An example is a fenced block whose first line is ``$ kvlib ...``; the rest is the output, line
for line. A block may leave out lines: a line that is only ``...`` stands for any number of
printed lines, and a line that ends in ``...`` is the start of a longer printed line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kvlib import Deployment, load_model
from kvlib.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/cli.md")
FENCE = re.compile(r"^```[a-z]*\n(\$ kvlib [^\n]*)\n(.*?)^```", re.M | re.S)


def examples(page: str) -> list[tuple[str, list[str]]]:
    text = (ROOT / page).read_text(encoding="utf-8")
    return [(cmd[2:], body.rstrip("\n").split("\n")) for cmd, body in FENCE.findall(text)]


def shows(shown: list[str], printed: list[str]) -> bool:
    """Whether the example's lines are the printed lines, "..." standing for what is left out."""
    if not shown:
        return not printed
    head, rest = shown[0], shown[1:]
    if head == "...":
        return any(shows(rest, printed[i:]) for i in range(len(printed) + 1))
    if not printed:
        return False
    line = printed[0]
    same = line.startswith(head[:-3]) if head.endswith("...") else line == head
    return same and shows(rest, printed[1:])


def run(command: str, capsys, monkeypatch) -> tuple[int, list[str]]:
    monkeypatch.chdir(ROOT)  # the examples name files relative to the repository
    argv = shlex.split(command)
    assert argv[0] == "kvlib"
    code = main(argv[1:])
    out, err = capsys.readouterr()
    return code, out.rstrip("\n").split("\n")


CASES = [(page, command, body) for page in PAGES for command, body in examples(page)]


def test_the_pages_have_examples():
    commands = [c.split()[1] for _, c, _ in CASES]
    assert {"estimate", "plan", "explain-log"} <= set(commands)
    readme = [c for p, c, _ in CASES if p == "README.md"]
    assert "kvlib plan llama-3.1-70b --gpu H200 --gpus 4 --tp 4 --context 128K" in readme


@pytest.mark.parametrize(("page", "command", "body"), CASES,
                         ids=[f"{p}: {c.split()[1]}" for p, c, _ in CASES])
def test_example_is_what_the_command_prints(page, command, body, capsys, monkeypatch):
    code, printed = run(command, capsys, monkeypatch)
    assert code == 0
    assert shows(body, printed), (
        f"{page}: `{command}` now prints:\n" + "\n".join(printed))


def test_the_matcher():
    assert shows(["a", "b"], ["a", "b"]) and not shows(["a"], ["a", "b"])
    assert shows(["a", "..."], ["a", "b", "c"]) and shows(["...", "c"], ["a", "b", "c"])
    assert shows(["a long li...", "b"], ["a long line", "b"])
    assert not shows(["a", "c"], ["a", "b", "c"]) and not shows(["x..."], ["a"])


def test_prose_quotes_the_plan():
    """docs/posts.md's, README's and docs/capacity.md's sentences about blog post A's 4 x H200
    example: vLLM 0.33.0's profiled rule (the post's arithmetic, made exact), and the default
    release's."""
    d = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4, vllm="0.33.0")
    d34 = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4)
    assert d34.vllm == "0.34.0"
    sheet = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4, memory="datasheet",
                       vllm="0.33.0")
    n, exact = d.max_sequences_per_replica(131072), d.sessions(131072)
    n34 = d34.max_sequences_per_replica(131072)
    posts = " ".join((ROOT / "docs/posts.md").read_text(encoding="utf-8").split())
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (f"Counted, with vLLM 0.33.0's `gpu_memory_utilization` ({float(d.gpu_mem_util):g}), "
            f"the overhead and whole sessions, it is {n}") in posts
    assert (f"vLLM 0.34.0's measured budget {'also ' if n34 == n else ''}gives {n34}") in posts
    assert (f"`gpu_memory_utilization` resolves to {float(d34.gpu_mem_util):.1f} "
            f"({float(d.gpu_mem_util):g} in 0.20.0-0.33.0") in readme
    capacity = (ROOT / "docs/capacity.md").read_text(encoding="utf-8")
    finds = " ".join(capacity.split("**What notebook 06 finds:**")[1].split())
    for said in (f"becomes **{n}** under vLLM 0.33.0's rule, once `gpu_memory_utilization` "
                 f"{float(d.gpu_mem_util):g}",
                 f"({float(exact):.2f} before flooring",
                 f"{d.usable_bytes_per_gpu:,} B usable - {d.weights_bytes_per_gpu:,} B of weights",
                 f"the checkpoint's {d.params:,} parameters",
                 f"= {d.kv_budget_bytes_per_gpu:,} B of KV budget per GPU",
                 f"{float(sheet.sessions(131072)):.2f} with the datasheet's 141 GB",
                 f"vLLM 0.34.0's measured budget, the default, gives "
                 f"{float(d34.sessions(131072)):.2f}, **{n34}** whole"):
        assert said in finds, said
    dense = Deployment(load_model("llama-3.1-70b"), "H200", 4, 4).plan(8192)
    assert f"{dense.decode_step_seconds_lower_bound * 1e3:.1f} ms on H200 at 8K" in finds
    moe = Deployment(load_model("deepseek-v2"), "H200", 8, 8).plan(32768)
    assert (f"at 32K and {moe.max_sequences} sessions takes at least "
            f"{moe.decode_step_seconds_lower_bound * 1e3:.2f} ms, not the "
            f"{moe.decode_step_seconds_all_weights * 1e3:.2f} ms of reading every weight (uniform "
            f"routing: {moe.decode_step_seconds_uniform_routing * 1e3:.2f} ms)") in finds
    cli = " ".join((ROOT / "docs/cli.md").read_text(encoding="utf-8").split())
    assert (f"default the release's: {float(d34.gpu_mem_util):.1f} for 0.34.0's extensible KV "
            f"cache, where a smaller value shrinks the cache, {float(d.gpu_mem_util):g} for "
            "0.33.0") in cli


def test_docs_models_lists_every_bundled_model():
    from kvlib.models.catalog import BUNDLED

    text = (Path(__file__).resolve().parent.parent / "docs" / "models.md").read_text()
    missing = [name for name in BUNDLED if f"`{name}`" not in text]
    assert not missing, f"docs/models.md does not list {missing}"


def test_the_blog_post_section_quotes_kvlib():
    """Every number docs/posts.md (once README's section) states about a real model (issues 25,
    34), recomputed; the posts' own figures (2.6 MB, 340 GB, 10-15%, ...) are quoted as theirs."""
    from kvlib import bundled_config, fmt_bytes, load_model, simplified
    from kvlib.serving.kv import kv_bytes_per_sequence_per_gpu

    section = " ".join((ROOT / "docs/posts.md").read_text(encoding="utf-8").split())
    llama, gemma, ds = (load_model(n) for n in ("llama-3.1-70b", "gemma-3-27b", "deepseek-v2"))
    token, seq = llama.kv_bytes_per_token(2), llama.kv_bytes_per_sequence(131072, 2)
    mha_seq = 2 * 80 * 8192 * 2 * 131072  # post B's formula, independent arithmetic
    weights = Deployment(llama, "H200", 4, 4).params * 2  # the checkpoint's, in bf16
    g = bundled_config("gemma-3-27b")["text_config"]
    over = g["hidden_size"] / (g["num_attention_heads"] * g["head_dim"]) - 1
    windowed = [x for x in gemma.groups if x.kind.value == "sliding"]
    ds_tp4 = kv_bytes_per_sequence_per_gpu(ds, 1, tp=4, block_size=1)  # post A's node: TP=4
    llama_tp4 = kv_bytes_per_sequence_per_gpu(llama, 1, tp=4, block_size=1)
    node = Deployment(ds, "H200", 4, 4).max_sequences_per_replica(131072)
    said = [
        f"from 2.6 MB to {fmt_bytes(token, 'MB')} per token",
        f"{fmt_bytes(token, 'MB')} per token and {fmt_bytes(seq, 'GB')} "
        f"({fmt_bytes(seq, 'GiB')}) per 128K",
        f"({g['hidden_size']} against {g['num_attention_heads']} x {g['head_dim']}) it "
        f"over-estimates by {over:.0%}",
        f"bf16 weights alone are {fmt_bytes(weights, 'GB')}",
        f"one 128K sequence of the real, GQA model is {fmt_bytes(seq, 'GB')},",
        f"under a third of the bf16 weights, and {-(-weights // seq)} of them pass the weights",
        f"Gemma 3 27B caches {gemma.kv_bytes_per_token(2) / llama.kv_bytes_per_token(2):.2f}x more "
        "per token than Llama 3 70B",
        f"it is {fmt_bytes(ds.kv_bytes_per_token(2), 'KiB')}",
        "(512 for DeepSeek V2, not a head size)",
        f"{sum(x.layers for x in windowed)} of its {gemma.num_layers} layers keep only "
        f"{windowed[0].window:,} tokens, about "
        f"{float(gemma.kv_bytes_per_sequence(131072, 2)) / 2**30:.1f} GiB",
        f"4 x H200 node at TP=4 DeepSeek V2 holds {fmt_bytes(ds_tp4, 'KiB')} per token on each "
        f"GPU against Llama 3.1 70B's {fmt_bytes(llama_tp4, 'KiB')} (a quarter of "
        f"{fmt_bytes(token, 'KiB')}), not a fifth of it",
        f"leave room for {node} sequence{'s' if node != 1 else ''} of 128K",
        f"adds {32 / 80:.0%} of Llama 3.1 70B's cache",
    ]
    missing = [s for s in said if s not in section]
    assert not missing, missing
    assert 3 * seq < weights and mha_seq > weights  # "under a third"; MHA's is bigger
    # by hand (tests/test_serving_claims.py has the sources): the latent + RoPE key whole on each
    # GPU, 60 x 576 x 2 B; Llama's 8 KV heads 2 per GPU, 80 x 2 x 2 x 128 x 2 B
    assert (ds_tp4, llama_tp4, token) == (60 * 576 * 2, 80 * 2 * 2 * 128 * 2, 80 * 2 * 8 * 128 * 2)
    assert ds_tp4 < llama_tp4 == token // 4 and 5 * ds_tp4 > token  # less, but not a fifth
    assert bundled_config("deepseek-v2")["kv_lora_rank"] == 512
    assert simplified(ds).kv_bytes_per_token(2) == 60 * 512 * 2 == 60 * 1024  # post A: 60 KiB
    assert load_model("llama-3.1-8b").num_layers == 32 and llama.num_layers == 80


def test_readme_is_short_and_links_the_posts():
    """README keeps a summary of the two blog posts and links their page (issue 34)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150, len(readme.splitlines())
    assert "](docs/posts.md)" in readme and (ROOT / "docs/posts.md").exists()
    assert "What two popular blog posts get right and wrong" not in readme
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).exists(), target
