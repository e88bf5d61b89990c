"""Which config.json keys the engines read where they build a layer's cache (issue 31, section 1).

Reads the released wheels as zip files (nothing is installed or imported from them) and writes
``kvlib/models/engine_keys.json``, the data kvlib's closed world (kvlib/models/readers/closed.py)
judges unknown keys by:

* for vLLM (the release served, and the one before it), per ``model_type``: the config keys read
  on the paths that build a layer's attention module, its KV-cache spec or its state, each with
  the file and line of one read;
* for transformers, per ``model_type``: the keys its config class knows (annotated fields,
  ``self.x =`` and ``attribute_map``), and the keys its modeling file's attention and decoder
  classes read; plus the keys its cache code (``cache_utils.py``) reads.

How a model file is read (a static over-approximation, per model file, documented in
docs/closed-world.md):

* model_type -> architecture: transformers' auto mappings (causal LM, image-text-to-text,
  multimodal LM), plus the ``model_type`` / ``architectures`` pairs of the configs kvlib bundles
  and tests (kvlib/models/configs, tests/fixtures/configs) for families transformers lacks;
  architecture -> module: vLLM's model registry (``_TEXT_GENERATION_MODELS``,
  ``_MULTIMODAL_MODELS``).
* In the module, every method of a class whose name says it builds a layer (Attention, Attn,
  Mixer, Mamba, Indexer, DeltaNet, Conv, MLA, DecoderLayer, Block, Layer, Model) and not a tower,
  an MTP or draft head, or the LM head (Vision, Audio, Projector, Encoder, MTP, Eagle,
  ForCausalLM, ...); the methods of any class that build a cache spec or a state shape
  (``get_kv_cache_spec``, ``get_*state_shape*``, ``*layer_type*``, ...); and, followed
  transitively, the module-level functions those call and the layer classes they import from
  other vLLM modules.
* A read is ``X.key``, ``getattr(X, "key")``, ``hasattr(X, "key")``, ``X.get("key")``,
  ``X["key"]`` or ``getattr_iter(X, ("a", "b"))`` where X names a config (``config``,
  ``hf_config``, ``text_config``, ``hf_text_config``, ``self.config``, ``X.get_text_config()``).
* Family-independent reads (``common``): vLLM's ``config/model.py`` methods that count layers,
  heads, windows and hybrid blocks, and ``transformers_utils/model_arch_config_convertor.py``'s
  base convertor.

Run (docs/closed-world.md): ``python scripts/engine_keys.py --vllm WHEEL --vllm-previous WHEEL
--transformers WHEEL`` writes the JSON; ``--diff OLD.json`` prints what changed per family.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kvlib" / "models" / "engine_keys.json"
CONFIG_SOURCES = (ROOT / "kvlib" / "models" / "configs", ROOT / "tests" / "fixtures" / "configs")

# Published model_type / architecture pairs that neither transformers' auto mappings nor the
# configs kvlib holds name the way vLLM registers them (from the models' own config.json files).
EXTRA_ARCHITECTURES = {
    "kimi_k25": ["KimiK25ForConditionalGeneration"],
    "kimi_k2": ["DeepseekV3ForCausalLM"],
    "minimax_m3_vl_text": ["MiniMaxM3SparseForCausalLM"],
    "minimax_m3_vl": ["MiniMaxM3SparseForConditionalGeneration"],
}
CONFIG_NAMES = {"config", "hf_config", "text_config", "hf_text_config", "language_config",
                "llm_config", "text_cfg"}
NOT_KEYS = {"get", "get_text_config", "to_dict", "__dict__", "update", "items", "keys",
            "values", "__class__", "model_type", "pop", "setdefault"}
BUILDS = re.compile(r"Attention|Attn|Mixer|Mamba|Indexer|DeltaNet|Delta|Conv|KDA|MLA|Lightning|"
                    r"DecoderLayer|Block|Layer$|Model$|Compressor|Cache")
TOWER = re.compile(r"Vision|Vit|ViT|Visual|Audio|Image|Video|Projector|Processor|Encoder|"
                   r"Siglip|SigLip|Clip|CLIP|Whisper|Patch|MultiModal|Multimodal|Dummy|Mtp|MTP|"
                   r"Eagle|Medusa|ForCausalLM|ForConditionalGeneration|Embedding|Pooler|Tower|"
                   r"Resampler|Merger|Speech|Draft|Reward|Classification|PreTrained")
# files of a model package that hold speculative-decoding heads, not the served model's layers
DRAFT_FILE = re.compile(r"mtp|eagle|dspark|dflash|draft|medusa")
SPEC_METHOD = re.compile(r"kv_cache_spec|state_shape|state_dtype|state_copy|layer_type|"
                         r"get_num_layers|is_hybrid|get_mamba")
# config/model.py and the arch convertor: methods that count layers, heads, windows, blocks
COMMON_METHOD = re.compile(r"layer|kv_head|head_size|head_dim|sliding|window|hybrid|block_type|"
                           r"mla|attention|attn|state|mamba|noops|rope_head")


def _terminal(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_text_config"):
        return "text_config"
    return None


def _is_config(node) -> bool:
    return _terminal(node) in CONFIG_NAMES


def _strings(node) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]
    return []


def config_reads(tree) -> list[tuple[str, int]]:
    """(key, line) of every config read inside ``tree`` (module, class or function node)."""
    found: list[tuple[str, int]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and _is_config(n.value):
            if n.attr not in NOT_KEYS and not n.attr.startswith("__"):
                found.append((n.attr, n.lineno))
        elif isinstance(n, ast.Call):
            f = n.func
            if (isinstance(f, ast.Name) and f.id in ("getattr", "hasattr", "getattr_iter")
                    and len(n.args) >= 2 and _is_config(n.args[0])):
                found += [(k, n.lineno) for k in _strings(n.args[1])]
            elif (isinstance(f, ast.Attribute) and f.attr in ("get", "pop") and n.args
                  and _is_config(f.value)):
                found += [(k, n.lineno) for k in _strings(n.args[0])]
        elif isinstance(n, ast.Subscript) and _is_config(n.value):
            found += [(k, n.lineno) for k in _strings(n.slice)]
    return found


class Source:
    """The .py files of a wheel, parsed on demand."""

    def __init__(self, wheel: Path):
        self.zip = zipfile.ZipFile(wheel)
        self.names = set(self.zip.namelist())
        self._trees: dict[str, ast.Module] = {}

    def tree(self, path: str) -> ast.Module | None:
        if path not in self.names:
            return None
        if path not in self._trees:
            self._trees[path] = ast.parse(self.zip.read(path).decode("utf-8"))
        return self._trees[path]

    def version(self, package: str) -> str:
        for name in self.names:
            m = re.fullmatch(rf"{package}-([^/]+)\.dist-info/METADATA", name)
            if m:
                return m.group(1)
        raise SystemExit(f"no {package} dist-info in the wheel")


def _module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _imports(tree: ast.Module, path: str) -> dict[str, tuple[str, str]]:
    """name -> (file, name there) for ``from ... import`` of vllm / transformers modules."""
    package = path.rsplit("/", 1)[0].replace("/", ".")
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            if not module.startswith(("vllm.", "transformers.")):
                continue
            for alias in node.names:
                out[alias.asname or alias.name] = (_module_path(module), alias.name)
    return out


def _scopes(src: Source, path: str, wanted: set[str] | None, reads: dict[str, str],
            seen: set[tuple[str, str]]) -> None:
    """Add to ``reads`` (key -> 'file:line') the config reads of the layer-building scopes of
    ``path`` (or only of the names in ``wanted``), following calls and imports."""
    tree = src.tree(path)
    if tree is None:
        return
    top = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    imports = _imports(tree, path)
    todo: list = []
    for name, node in top.items():
        if (path, name) in seen:
            continue
        if wanted is not None:
            if name in wanted:
                todo.append(node)
            continue
        if isinstance(node, ast.ClassDef):
            if BUILDS.search(name) and not TOWER.search(name):
                todo.append(node)
            else:
                todo += [m for m in node.body if isinstance(m, ast.FunctionDef)
                         and SPEC_METHOD.search(m.name)]
        elif SPEC_METHOD.search(name):
            todo.append(node)
    while todo:
        node = todo.pop()
        key = (path, getattr(node, "name", ""))
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node in top.values():
            if key in seen:
                continue
            seen.add(key)
        short = path.split("/", 1)[0] + "/" + path.split("/", 1)[1]
        for k, line in config_reads(node):
            reads.setdefault(k, f"{short}:{line}")
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in top and (path, n.id) not in seen:
                    target = top[n.id]
                    if isinstance(target, ast.FunctionDef) or (
                            BUILDS.search(n.id) and not TOWER.search(n.id)):
                        todo.append(target)
                elif n.id in imports:
                    file, name = imports[n.id]
                    if (file, name) not in seen and (BUILDS.search(name) or name[:1].islower()) \
                            and not TOWER.search(name) \
                            and ("/models/" in file or "/layers/" in file):
                        _scopes(src, file, {name}, reads, seen)


def _module_files(src: Source, module: str) -> list[str]:
    """The files of a registry module: ``llama`` (models/llama.py) or ``vllm.models.x`` (a
    package: every file under it)."""
    if not module.startswith("vllm."):
        return [f"vllm/model_executor/models/{module}.py"]
    path = _module_path(module)
    if path in src.names:
        return [path]
    folder = module.replace(".", "/") + "/"
    return sorted(n for n in src.names if n.startswith(folder) and n.endswith(".py")
                  and not DRAFT_FILE.search(n.rsplit("/", 1)[-1]))


def _follow_bases(src: Source, path: str, cls: str, reads: dict[str, str], seen: set,
                  depth: int = 0) -> None:
    """The registered class's base classes from other model modules (Phi3ForCausalLM is a
    LlamaForCausalLM): their modules' layer-building scopes are read too."""
    tree = src.tree(path)
    if tree is None or depth > 4:
        return
    imports = _imports(tree, path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in imports:
                    file, name = imports[base.id]
                    if "/models/" in file and (file, "*") not in seen:
                        seen.add((file, "*"))
                        _scopes(src, file, None, reads, seen)
                        _follow_bases(src, file, name, reads, seen, depth + 1)
                elif isinstance(base, ast.Name):
                    _follow_bases(src, path, base.id, reads, seen, depth + 1)


def class_reads(cls: ast.ClassDef, path: str) -> dict[str, str]:
    """Keys a config class reads to derive others (``self.x`` loads and ``kwargs.get("x")`` in
    ``__init__`` / ``__post_init__``): Qwen2Config turns ``use_sliding_window`` and
    ``max_window_layers`` into ``layer_types`` there."""
    reads: dict[str, str] = {}
    for m in cls.body:
        if isinstance(m, ast.FunctionDef) and m.name in ("__init__", "__post_init__"):
            for n in ast.walk(m):
                if (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
                        and isinstance(n.value, ast.Name) and n.value.id == "self"
                        and not n.attr.startswith("_")):
                    reads.setdefault(n.attr, f"{path}:{n.lineno}")
                elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and n.func.attr in ("get", "pop") and isinstance(n.func.value, ast.Name)
                      and n.func.value.id == "kwargs" and n.args):
                    for k in _strings(n.args[0]):
                        reads.setdefault(k, f"{path}:{n.lineno}")
    return reads


def config_classes(src: Source, folder: str) -> dict[str, dict[str, str]]:
    """model_type -> the keys its config class (under ``folder``) reads to derive others."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(n for n in src.names if n.startswith(folder) and n.endswith(".py")
                       and "configuration_" in n or (n.startswith(folder) and "/configs/" in n
                                                     and n.endswith(".py"))):
        for cls in src.tree(path).body:
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id == "model_type"
                        and isinstance(node.value, ast.Constant)):
                    out.setdefault(node.value.value, {}).update(class_reads(cls, path))
    return out


def _dict_of(tree: ast.Module, names: set[str]) -> dict:
    """Literal entries of the module-level dicts (or OrderedDict([...]) calls) named ``names``."""
    out = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if not isinstance(target, ast.Name) or target.id not in names or node.value is None:
            continue
        value = node.value
        if isinstance(value, ast.Call) and value.args:  # OrderedDict([...])
            value = value.args[0]
        pairs = (zip(value.keys, value.values, strict=True) if isinstance(value, ast.Dict)
                 else [(e.elts[0], e.elts[1]) for e in getattr(value, "elts", [])
                       if isinstance(e, ast.Tuple) and len(e.elts) == 2])
        for k, v in pairs:
            if k is None:
                continue
            try:
                out.setdefault(ast.literal_eval(k), ast.literal_eval(v))
            except ValueError:
                continue
    return out


def _common_vllm(src: Source) -> dict[str, str]:
    reads: dict[str, str] = {}
    for path, classes in (("vllm/config/model.py", {"ModelConfig"}),
                          ("vllm/transformers_utils/model_arch_config_convertor.py",
                           {"ModelArchConfigConvertorBase"})):
        tree = src.tree(path)
        for cls in tree.body:
            if isinstance(cls, ast.ClassDef) and cls.name in classes:
                for m in cls.body:
                    if isinstance(m, ast.FunctionDef) and COMMON_METHOD.search(m.name):
                        for k, line in config_reads(m):
                            reads.setdefault(k, f"{path}:{line}")
    return dict(sorted(reads.items()))


_CLASSES: dict[int, dict] = {}


def src_classes(src: Source) -> dict:
    if id(src) not in _CLASSES:
        _CLASSES[id(src)] = config_classes(src, "vllm/transformers_utils/configs/")
    return _CLASSES[id(src)]


def architectures(tf: Source) -> dict[str, list[str]]:
    """model_type -> architecture class names: transformers' auto mappings, then the configs
    kvlib bundles and tests (for families transformers does not have)."""
    tree = tf.tree("transformers/models/auto/modeling_auto.py")
    archs: dict[str, list[str]] = {}
    for name in ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
                 "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES"):
        for mt, arch in _dict_of(tree, {name}).items():
            for a in (arch,) if isinstance(arch, str) else arch:
                archs.setdefault(mt, []).append(a)
    for mt, names in EXTRA_ARCHITECTURES.items():
        archs.setdefault(mt, []).extend(a for a in names if a not in archs.get(mt, []))
    for folder in CONFIG_SOURCES:
        for path in sorted(folder.glob("*.json")):
            cfg = json.loads(path.read_text())
            for obj in (cfg, cfg.get("text_config") or {}):
                mt, arch = obj.get("model_type"), obj.get("architectures") or cfg.get(
                    "architectures")
                if isinstance(mt, str) and isinstance(arch, list):
                    for a in arch:
                        if a not in archs.setdefault(mt, []):
                            archs[mt].append(a)
    return archs


def vllm_keys(src: Source, archs: dict[str, list[str]], tf_classes: dict) -> tuple[dict, dict]:
    registry = _dict_of(src.tree("vllm/model_executor/models/registry.py"),
                        {"_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS"})
    families = {}
    for mt, names in sorted(archs.items()):
        entries = sorted({tuple(registry[a]) for a in names if a in registry})
        if not entries:
            continue
        reads: dict[str, str] = {}
        seen: set = set()
        for module, cls in entries:
            for path in _module_files(src, module):
                _scopes(src, path, None, reads, seen)
                _follow_bases(src, path, cls, reads, seen)
        modules = sorted({m for m, _ in entries})
        # the config class vLLM loads (its own, else transformers'): keys it derives others from
        own = src_classes(src).get(mt)
        for k, where in (own if own is not None else tf_classes.get(mt, {})).items():
            reads.setdefault(k, where)
        families[mt] = {"architectures": sorted(a for a in names if a in registry),
                        "modules": modules, "keys": dict(sorted(reads.items()))}
    return families, _common_vllm(src)


def transformers_keys(tf: Source) -> tuple[dict, dict]:
    """model_type -> {config_class, keys (the config class's), modeling (reads, file:line)}."""
    families: dict = {}
    for path in sorted(n for n in tf.names if re.fullmatch(
            r"transformers/models/[^/]+/configuration_[^/]+\.py", n)):
        tree = tf.tree(path)
        for cls in tree.body:
            if not isinstance(cls, ast.ClassDef):
                continue
            mt, keys = None, set()
            for node in cls.body:
                if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                        and node.targets[0].id == "model_type"
                        and isinstance(node.value, ast.Constant)):
                    mt = node.value.value
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    keys.add(node.target.id)
                elif (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                      and node.targets[0].id == "attribute_map"
                      and isinstance(node.value, ast.Dict)):
                    keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
            for n in ast.walk(cls):
                for t in getattr(n, "targets", []) + [getattr(n, "target", None)]:
                    if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                            and t.value.id == "self"):
                        keys.add(t.attr)
            if not isinstance(mt, str):
                continue
            keys -= {"model_type", "sub_configs", "base_config_key", "keys_to_ignore_at_inference",
                     "base_model_tp_plan", "base_model_pp_plan", "base_model_ep_plan"}
            modeling = path.replace("configuration_", "modeling_")
            reads: dict[str, str] = {}
            if modeling in tf.names:
                _scopes(tf, modeling, None, reads, set())
            families[mt] = {"config_class": f"{path}:{cls.lineno} {cls.name}",
                            "keys": sorted(k for k in keys if not k.startswith("_")),
                            "modeling": dict(sorted(reads.items()))}
    cache: dict[str, str] = {}
    tree = tf.tree("transformers/cache_utils.py")
    for k, line in config_reads(tree):
        cache.setdefault(k, f"transformers/cache_utils.py:{line}")
    return families, dict(sorted(cache.items()))


def build(vllm: Path, previous: Path, transformers: Path) -> dict:
    tf = Source(transformers)
    archs = architectures(tf)
    new, old = Source(vllm), Source(previous)
    tf_classes = config_classes(tf, "transformers/models/")
    v_new, common_new = vllm_keys(new, archs, tf_classes)
    v_old, common_old = vllm_keys(old, archs, tf_classes)
    t_fam, t_cache = transformers_keys(tf)
    vn, vo, tv = new.version("vllm"), old.version("vllm"), tf.version("transformers")
    families = {}
    for mt in sorted(set(v_new) | set(v_old) | (set(t_fam) & set(archs))):
        entry: dict = {}
        if mt in v_new:
            entry["vllm"] = v_new[mt]
        if mt in v_old:
            entry["vllm_previous"] = {"keys": v_old[mt]["keys"]}
        if mt in t_fam:
            entry["transformers"] = t_fam[mt]
        families[mt] = entry
    return {
        "generated_by": "scripts/engine_keys.py (docs/closed-world.md says how to re-run it)",
        "releases": {"vllm": vn, "vllm_previous": vo, "transformers": tv},
        "method": "static over-approximation per model file: config reads in the classes that "
                  "build a layer (attention, mixer, state, decoder layer, model body), the "
                  "cache-spec and state-shape methods, and what they call or import",
        "common": {"vllm": common_new, "vllm_previous": common_old,
                   "transformers_cache": t_cache},
        "families": families,
    }


def diff(old: dict, new: dict) -> list[str]:
    """Lines saying which keys each family gained or lost between two JSON files."""
    lines = [f"releases: {old.get('releases')} -> {new.get('releases')}"]
    for where in ("vllm", "transformers_cache"):
        a, b = old["common"].get(where, {}), new["common"].get(where, {})
        for k in sorted(set(a) ^ set(b)):
            lines.append(f"common {where}: {'+' if k in b else '-'} {k}")
    for mt in sorted(set(old["families"]) | set(new["families"])):
        a = old["families"].get(mt, {}).get("vllm", {}).get("keys", {})
        b = new["families"].get(mt, {}).get("vllm", {}).get("keys", {})
        for k in sorted(set(a) ^ set(b)):
            lines.append(f"{mt}: vllm {'+' if k in b else '-'} {k} ({b.get(k) or a.get(k)})")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vllm", type=Path, required=True, help="the vLLM wheel served")
    p.add_argument("--vllm-previous", type=Path, required=True, help="the release before it")
    p.add_argument("--transformers", type=Path, required=True, help="the transformers wheel")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--diff", type=Path, help="an older engine_keys.json to compare with")
    args = p.parse_args(argv)
    data = build(args.vllm, args.vllm_previous, args.transformers)
    old = json.loads(args.diff.read_text()) if args.diff else None
    for entry in data["families"].values():  # what changed between the two vLLM releases
        if "vllm" in entry and "vllm_previous" in entry:
            a, b = set(entry["vllm_previous"]["keys"]), set(entry["vllm"]["keys"])
            entry["vllm_changed"] = {"added": sorted(b - a), "removed": sorted(a - b)}
            del entry["vllm_previous"]
    args.out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out} ({len(data['families'])} model types)")
    if old is not None:
        print("\n".join(diff(old, data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
