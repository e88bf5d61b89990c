"""Where each TensorRT-LLM rule kvlib uses was read: the file, the commit the search store holds
it at, and the function (NVIDIA/TensorRT-LLM; no wheel can be installed here, so each file was
read one by one). Each citation is ``file@commit:LINE`` or ``file@commit:FIRST-LAST``, 1-based
lines at that commit: the store returns text by character offset, so the pages ``read_file``
returned were joined in order and the newlines before the cited code counted, each count checked
by reading the file again at the computed offset.
"""

from __future__ import annotations

__all__ = ["PINNED", "RC3", "FILES", "cite"]

# the commit of _util.py kvlib reads every budget rule at (the release line names it)
PINNED = "0004396720054fd8e205cbf616f21f0b57c6b412"
# TensorRT-LLM 1.1.0rc3: no commit of the tag is in the store; its rule is the one public logs
# show (every gpt-oss layer at full length, see tests/test_trtllm_vswa_mamba.py)
RC3 = "1.1.0rc3"

FILES = {
    "_util.py": ("tensorrt_llm/_torch/pyexecutor/_util.py", PINNED),
    "resource_manager.py": ("tensorrt_llm/_torch/pyexecutor/resource_manager.py",
                            "001541bad83b84ae4c5c4a279e464572d5f690f7"),
    "mamba common.py": ("tensorrt_llm/_torch/pyexecutor/kv_cache/mamba_cache_manager/common.py",
                        "28295084972c5ab61ef010a050a18f53f5d72810"),
    "mamba legacy.py": ("tensorrt_llm/_torch/pyexecutor/kv_cache/mamba_cache_manager/legacy.py",
                        "28295084972c5ab61ef010a050a18f53f5d72810"),
    "trtllm.py": ("tensorrt_llm/_torch/attention/backends/trtllm.py",
                  "017aa0caf7677d6ea4d9343f88f8b787fddf576b"),
    "attentionOp.cpp": ("cpp/tensorrt_llm/common/attentionOp.cpp",
                        "eea41b73a7bdddb1032ee255d8feb695e4811651"),
}


def cite(key: str, lines: str) -> str:
    """``path@commit[:12]:lines`` (lines ``"LINE"`` or ``"FIRST-LAST"``): one citation."""
    path, commit = FILES[key]
    return f"{path}@{commit[:12]}:{lines}"
