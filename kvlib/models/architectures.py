"""Which family an ``architectures`` entry names, where a config's ``model_type`` is unknown.

The engines build a model by its ``architectures`` entry, not its ``model_type``: vLLM 0.34.0
looks the class name up in ``_TEXT_GENERATION_MODELS`` / ``_MULTIMODAL_MODELS``
(vllm/model_executor/models/registry.py:73-223, 359-675), each entry naming the module that
builds it, and SGLang looks up its own registry the same way. So SGLang's DeepSeek V4 FP8
configs (``model_type`` "deepseek_ref", ``architectures`` ["DeepseekV4ForCausalLM"]) are built
as DeepSeek V4. The table, :data:`kvlib.models.architecture_table.ARCHITECTURES`, holds
vLLM's entries whose module is a family kvlib reads (module name = its ``model_type``); it is
made from the wheel by ``python -m kvlib.models.architectures PATH/vllm 0.34.0`` (the
unpacked wheel's package).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from kvlib.models.architecture_table import ARCHITECTURES

__all__ = ["architecture_family", "from_wheel"]

_DICTS = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS")


def architecture_family(architectures, known) -> tuple[str, str, str] | None:
    """(family, the class name, where vLLM maps it) for the first entry of ``architectures``
    that vLLM builds with the module of a family in ``known``, else None."""
    if not isinstance(architectures, list):
        return None
    for arch in architectures:
        if isinstance(arch, str) and arch in ARCHITECTURES:
            module, line = ARCHITECTURES[arch]
            if module in known:
                return module, arch, f"vllm/model_executor/models/registry.py:{line}"
    return None


def from_wheel(vllm_dir: str | Path, known) -> dict:
    """The table from an unpacked vLLM wheel: every entry of its text-generation and
    multimodal registries whose module (the last part of its dotted name) is in ``known``."""
    path = Path(vllm_dir) / "model_executor" / "models" / "registry.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, tuple[str, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and getattr(node.targets[0], "id", None) in _DICTS \
                and isinstance(node.value, ast.Dict):
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple):
                    module = ast.literal_eval(v.elts[0]).rsplit(".", 1)[-1]
                    if module in known:
                        out[k.value] = (module, k.lineno)
    return dict(sorted(out.items()))


if __name__ == "__main__":  # python -m kvlib.models.architectures PATH/vllm VERSION
    from kvlib.models.readers.registry import FAMILIES  # the package registers every family

    release = sys.argv[2] if len(sys.argv) > 2 else "0.34.0"
    found = from_wheel(sys.argv[1], set(FAMILIES))
    out = Path(__file__).with_name("architecture_table.py")
    out.write_text(
        f'"""vLLM {release}\'s architectures -> (kvlib family, the line of its registry.py\n'
        "that maps it). Made by\n"
        "``python -m kvlib.models.architectures PATH/vllm " + release + "`` from\n"
        "vllm/model_executor/models/registry.py (_TEXT_GENERATION_MODELS, _MULTIMODAL_MODELS);"
        '\ndo not edit by hand."""\n\n'
        f"RELEASE = {release!r}\n"
        "ARCHITECTURES = {\n"
        + "".join(f"    {k!r}: {v!r},\n" for k, v in found.items()) + "}\n",
        encoding="utf-8")
    print(f"{out}: {len(found)} architectures")
