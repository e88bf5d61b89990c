"""A vLLM start-up log, read and checked number by number (issue 24, ``kvlib explain-log``).

:func:`read_log` finds the lines vLLM prints about memory while it starts (V1 engines of
0.8 to 0.34, and the V0 engine's "Memory profiling" / "# GPU blocks" lines), and the
start-up failure "X GiB KV cache is needed, which is larger than the available KV cache
memory" (:mod:`.failure`);
:func:`explain` works each number out again with kvlib's formulas and says whether it
agrees. Pure functions: nothing here prints.

**What is taken as given.** The memory vLLM *measures* (weights, activation peak,
non-torch memory, CUDA graphs, hence "Available KV cache memory") is not a formula kvlib
owns: those lines are checked for their arithmetic only. Every number vLLM *derives* from
them (blocks, tokens, concurrency, block sizes, padding) is recomputed from the model's
config through :func:`kvlib.serving.engines.vllm.layout.vllm_layout` (pages, groups, padding
layers, per-rank heads under tensor parallelism).

**Rounding.** A GiB figure printed to 2 decimals (``%.2f``, or 0.33's
``str(round(x, 2))``) stands for every byte count within 0.005 GiB of it, so a KV budget
line allows an interval of block counts, and a printed count is accepted when some block
count in that interval gives it. Where the same rank prints its budget in bytes (0.10's
"Current kv cache memory in use is N bytes"), the check is exact. Sums of rounded terms
carry each term's half-step.

**Releases** (the formulas differ; :data:`RULES`):

* ``v0``: the V0 engine. ``num_gpu_blocks = int(kv // block bytes)``, block bytes = layers x
  block x (K + V) x dtype bytes for every attention layer (vllm 0.8.5 worker/cache_engine.py);
  tokens = blocks x block; concurrency = blocks x block / max_model_len (executor_base.py).
* ``v1-0.8``: ``num_blocks = avail // page // layers``; tokens = blocks x block; concurrency
  = tokens / max_model_len (0.8.5 v1/core/kv_cache_utils.py). Also V1 of 0.7.x, which printed
  "# GPU blocks: N" alone before "Maximum concurrency" (PR 12569; "GPU KV cache size" from PR
  13596): concurrency = N x block / max_model_len, no model needed.
* ``v1-0.11``: two lines per rank; ``num_blocks = avail // page // group size``; tokens =
  ``num_blocks // groups x block``; concurrency = blocks / blocks one request needs summed
  over groups (0.11.0 v1/core/kv_cache_utils.py:780-795, 1076-1092). Used for a V1 log that
  prints "GPU KV cache size" and "Maximum concurrency" on two lines and a release before 0.20;
  a log that prints no release is also tried by 0.20's tokens rule, and the output says which
  one its tokens follow.
* ``v1-0.20``: the same two lines; tokens = ``int(concurrency x max_model_len)`` (the change
  vLLM PRs 38364 and 40694 propose, spring 2026; the release is fixed by posted logs: 0.19.0
  still divided the blocks, vLLM issue 40691; 0.20.1 and 0.24.0 print tokens that are no whole
  number of blocks, club-3090 issues 91 and 652).
* ``v1-0.27``: the same two lines, printed once for the engine after every rank's blocks are
  cut to the smallest rank's; tokens = ``int(concurrency x max_model_len)`` (0.27.0
  kv_cache_utils.py:2210-2240).
* ``v1-0.28``: one line "GPU KV cache size: N tokens, Maximum concurrency for L tokens per
  request: Zx" (0.28.0 kv_cache_utils.py:1869-1875; "%s KV cache size" naming the device in
  0.33.0 :1147-1154 and 0.34.0 :1168-1175); blocks the minimum over ranks; concurrency as
  above; tokens = ``int(concurrency x max_model_len)``. Checked against the 0.27.0 and 0.28.0
  wheels: the one-line form is from 0.28.0, not 0.33.
* vLLM 0.34's extensible KV cache adds "Memory after warmup: ..." and "Extended KV cache to N
  blocks (X GiB)" (v1/worker/extensible_kv_cache.py:693-705, :536-540): their arithmetic and
  their blocks x kvlib's bytes per block are checked; 0.34's default block is 64 tokens
  (config/cache.py:185).

**Logs as people paste them** (issue 43). A record wrapped at 80 columns, or split by its
poster, is read as one (:func:`read_log_text`; the output says which lines were joined); a
quote bar before each line ("> ", "▎ ") is dropped. A ``non-default args`` dict cut off by the
paste is read up to the cut, and a layout figure that disagrees is then said not explained
(the settings after the cut are unknown), never a disagreement. A budget the user fixed
(``--kv-cache-memory``: "reserved X GiB memory for KV Cache as specified by
kv_cache_memory_bytes") is read as the budget.

**Hybrid state groups** (Mamba, Gated DeltaNet): the blocks one request takes in a state group
follow the log's release and prefix-caching setting (:data:`~.rules.STATE_MODES`, read in vLLM's
0.11.0-0.34.0 wheels): 1 up to 0.11.0 and whenever prefix caching is off for the model (off by
default for hybrids before 0.26; Qwen's Gated DeltaNet before 0.15 never has it), 2 in align mode
(0.15-0.32), 2 + checkpoint blocks from 0.32 (Mamba2) and 0.33 (Gated DeltaNet); the 'all' mode
of models that support it is not traced. Where the log does not say (no release, no setting),
every way is tried: the one whose figures all agree is taken and said; if none or several do,
the figures they do not give alike are said not explained.

**A pasted launch command** (``vllm serve MODEL --tensor-parallel-size 2 --kv-cache-dtype
fp8_e5m2``, ``--tensor_parallel_size``, ``-tp``, ``--max-model-len``, ``--block-size``,
``--enable-prefix-caching``, ``--gpu-memory-utilization``) gives the settings the engine line and
non-default args do not print; a flag given to kvlib wins; the notes say which came from where.

**V0's failure** "max seq len (N) is larger than the maximum number of tokens that can be stored
in KV cache (M)" is M = blocks x block: checked against the "# GPU blocks" line or a KV-memory
line where the log has one, else shown with the bytes it means. "Overriding num_gpu_blocks=N with
num_gpu_blocks_override=M" is shown.

**Speculative decoding** (``speculative_config`` on the engine line or in the non-default
args, k tokens): an MTP drafter's full-attention layer joins the target's groups; each Gated
DeltaNet state keeps k more conv rows (0.34.0 mamba_utils.py:280-294), which widens the hybrid
block, and each state group needs k more blocks a request (kv_cache_interface.py:1168-1174).
The block is ``--block-size``, else the log's, else the backend's: CPU 128 (0.34.0
platforms/cpu.py:560-562), TPU 256, named by the platform line or by "CPU KV cache size".
The CPU backend's budget line "Explicitly set (X/Y) GiB for KV cache" (cpu_worker.py:210-214)
is read as the budget.

**Excerpts.** A tokens / concurrency pair pasted without its "Available KV cache memory" line
still fixes the blocks (the release's tokens rule, inverted) and so the concurrency, which is
checked; the tokens themselves are then not. V0's "total_gpu_memory (T) x
gpu_memory_utilization (u) = R" prints u with two decimals too (0.945 prints "0.94": vLLM
issue 15340), so R is checked against T ± 0.005 times u ± 0.005.

**The TPU backend** (tpu-inference): "Init kv-cache | shape=L * (blocks, page, 2 x KV heads,
head_dim) | sharding=... 'model': TP ... | hbm=[...]Gb" after "Init model | hbm=[...]Gb" gives the
page (256), the TP, and the HBM the cache took on each device, all checked (:mod:`.tpu`).

**Ranks.** Lines of several TP ranks pasted together (``(Worker_TP3 pid=...)``,
``rank=3``) are read as such: from 0.27 vLLM cuts every rank to the smallest rank's block
count (``get_kv_cache_configs``), so different budgets are said to be different ranks', not
a disagreement.
"""

from kvlib.serving.engines.vllm.log.checks import explain
from kvlib.serving.engines.vllm.log.numbers import Check, Explanation
from kvlib.serving.engines.vllm.log.reading import (
    Found,
    LogLine,
    VllmLog,
    model_name,
    read_log,
    read_log_text,
)
from kvlib.serving.engines.vllm.log.rules import RULES

__all__ = ["LogLine", "Found", "VllmLog", "Check", "Explanation", "RULES", "read_log",
           "read_log_text", "model_name", "explain"]
