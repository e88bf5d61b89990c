"""How transformers' config classes fill ``head_dim`` and the KV head count when a config.json
omits them (issue 42, "Read what vLLM reads").

vLLM 0.34.0 does not read config.json: it reads the config object transformers builds from it
(``transformers_utils/config.py:1303-1317``, ``get_hf_text_config``), so a key the file leaves
out takes the config class's default. Its head size is that object's ``head_dim`` when not None
and positive, else ``hidden_size_per_head``, else ``hidden_size // num_attention_heads``
(``transformers_utils/model_arch_config_convertor.py:91-118``); its KV head count the first of
``n_head_kv``, ``num_kv_heads``, ``num_key_value_heads``, ``multi_query_group_num``,
``num_attention_groups`` the object has, else ``num_attention_heads``
(``model_arch_config_convertor.py:152-157``, ``transformers_utils/config.py:58-64``,
``config/utils.py:133-159``). kvlib, without the keys, derives ``hidden_size /
num_attention_heads`` and one KV head per query head.

For every ``model_type`` transformers knows (``CONFIG_MAPPING_NAMES``) this builds the config
class (``AutoConfig.for_model``) at three shapes (hidden_size, num_attention_heads) = (768, 12),
(1536, 8), (2560, 20), once without ``head_dim`` (KV heads given) and once without the KV head
count (``head_dim`` given), and, for a wrapper whose class has a ``text_config`` sub-config, the
same inside ``text_config``. Each answer is one of:

* ``derived``: what kvlib derives (not written; kvlib's rule is the class's);
* ``constant``: the same number whatever the shape (written, with the transformers
  ``file:line`` of the default);
* ``raises``: transformers will not build the config without the key (written: kvlib refuses);
* ``other``: neither, or the same number copied from another field's default (DeepSeek V3's
  ``head_dim = qk_rope_head_dim``): written with the values seen; kvlib refuses too.

The same is recorded under ``KEY:null`` for a file that writes the key as null: many classes
annotate ``head_dim: int = 128`` and reject a None (transformers' strict dataclass
validation), others derive from it.

A ``model_type`` vLLM 0.34.0 builds with a config class of its own (``_CONFIG_REGISTRY``,
``transformers_utils/config.py:123-181``) is left out: vLLM does not read transformers' class;
so is one whose head size or KV heads vLLM computes by a rule of its own
(``model_arch_config_convertor.py:462-553,792-830``: Falcon, DBRX, Zamba2, Nemotron-NAS, ...).

Run: ``.venv/bin/python scripts/class_defaults.py`` writes ``kvlib/models/readers/
class_defaults.json``; ``--check`` compares instead and exits 1 on a difference (the crosscheck,
tests/crosscheck/test_class_defaults_fresh.py, calls :func:`generate`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import warnings
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "kvlib" / "models" / "readers" / "class_defaults.json"
SHAPES = ((768, 12), (1536, 8), (2560, 20))
# vLLM 0.34.0's transformers_utils/config.py:58-64 (CONFIG_FIELD_ALIASES["total_num_kv_heads"])
KV_NAMES = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
            "num_attention_groups")
# vLLM 0.34.0's transformers_utils/config.py:123-181: model types built with vLLM's own class
VLLM_OWN = frozenset({
    "alpamayo2_super", "bagel", "bailing_moe_v3_vl", "beam", "chatglm", "ultravbert", "colqwen3",
    "ops_colqwen3", "qwen3_vl_nemotron_embed", "deepseek_vl_v2", "deepseek_v32", "dory",
    "dots3_note", "k3_dspark", "funaudiochat", "hy_v4", "hyperclovax", "isaac", "kimi_k2",
    "kimi_linear", "kimi_vl", "kimi_k25", "muse_spark_dspark", "muse_spark_text",
    "muse_spark_vision", "muse_spark_audio", "muse_spark", "kimi_k3", "kimi_k31", "lfm3",
    "lfm3_audio", "lfm3_vl", "RefinedWeb", "RefinedWebModel", "midashenglm", "minimax_m3_vl",
    "minimax_m3_mtp", "ming_v3_asr", "moondream3", "nemo_speechlm", "eagle", "speculators",
    "openvla", "ovis", "ultravox", "step3_vl", "step3_text", "step3p5", "step5", "step5_vl",
    "ricursive", "unlimited-ocr", "unlimited_ocr", "deepseek_v41", "flint", "inkling_mm_model",
    "inkling_model",
})
# vLLM 0.34.0's model_arch_config_convertor.py:462-553,792-830 (registered :837-878): model types
# whose head size or KV head count vLLM computes its own way (Falcon's multi_query, DBRX's
# attn_config.kv_n_heads, Zamba2's attention_head_dim, Nemotron-NAS's block_configs, ...)
VLLM_OWN_RULE = frozenset({"cohere_asr", "mamba", "falcon_mamba", "timm_wrapper", "zamba2",
                           "falcon", "RefinedWeb", "RefinedWebModel", "dbrx", "nemotron-nas",
                           "moss_audio"})
KEYS = ("head_dim", "num_key_value_heads")
# Classes whose KV head count follows multi_query (GPTBigCodeConfig: 1 if multi_query else
# n_head, configuration_gpt_bigcode.py:82): kvlib's reader reads multi_query itself, so the
# rule measured is the one without it
MULTI_QUERY = frozenset({"gpt_bigcode"})


def _vllm_head_dim(cfg) -> int:
    hd = getattr(cfg, "head_dim", None)
    if hd is not None and hd > 0:
        return hd
    if getattr(cfg, "hidden_size_per_head", None) is not None:
        return cfg.hidden_size_per_head
    return cfg.hidden_size // cfg.num_attention_heads


def _vllm_kv(cfg) -> int | None:
    for name in KV_NAMES:
        if hasattr(cfg, name):
            return getattr(cfg, name)
    return cfg.num_attention_heads


def _build(model_type: str, scope: str, fields: dict):
    """The config object vLLM reads (``get_text_config()``) of ``model_type`` built from
    ``fields`` at the top level (``scope`` "config") or as its ``text_config``."""
    from transformers import AutoConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if scope == "config":
            return AutoConfig.for_model(model_type, **fields).get_text_config()
        return AutoConfig.for_model(model_type, text_config=dict(fields)).get_text_config()


def _names(model_type: str, scope: str) -> dict:
    """The class's own names for the keys (``attribute_map``: GPTBigCodeConfig's ``n_head``),
    as its published configs write them: a class may derive a default in ``__post_init__``
    before an alias given as a keyword reaches it."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[model_type]
    if scope == "text_config":
        cls = (getattr(cls, "sub_configs", None) or {}).get("text_config")
    return dict(getattr(cls, "attribute_map", None) or {}) if isinstance(cls, type) else {}


def _fields(model_type: str, scope: str, hidden: int, heads: int, omit: str | None,
            null: bool = False) -> dict:
    """The keys given: ``omit`` left out, or (``null``) written as null."""
    f = {"hidden_size": hidden, "num_attention_heads": heads,
         "head_dim": hidden // heads, "num_key_value_heads": heads}
    if model_type in MULTI_QUERY:  # kvlib reads multi_query itself: the class without it
        f["multi_query"] = False
    if omit and null:
        f[omit] = None
    elif omit:
        del f[omit]
    names = _names(model_type, scope)
    return {names.get(k, k): v for k, v in f.items()}


def _read(cfg, key: str) -> int | None:
    return _vllm_head_dim(cfg) if key == "head_dim" else _vllm_kv(cfg)


def _rel(path: str) -> str:
    return "transformers/" + path.replace("\\", "/").split("/transformers/", 1)[1]


def _cite(classes, key: str, value) -> str:
    """The transformers ``file:line`` that sets ``key``'s default to ``value``: in ``classes``
    (the class read, then a wrapper whose default ``text_config`` may carry it) or a class
    they inherit, an annotated field whose default is ``value`` (``key: int = 128``), else a
    line naming the key and the value, else the first class's first line naming the key."""
    def sources(cls):
        for klass in cls.__mro__:
            if (not klass.__module__.startswith("transformers.")
                    or klass.__name__ == "PreTrainedConfig"):
                continue
            try:
                lines, start = inspect.getsourcelines(klass)
                yield _rel(inspect.getsourcefile(klass)), lines, start
            except (OSError, TypeError):
                continue

    v = re.escape(str(value))
    for cls in classes:
        name = re.escape((getattr(cls, "attribute_map", None) or {}).get(key, key))
        field = re.compile(rf"^\s+{name}\s*:[^=]*=\s*{v}\s*(#.*)?$")
        for path, lines, start in sources(cls):
            for i, line in enumerate(lines):
                if field.match(line):
                    return f"{path}:{start + i}"
    for cls in classes:
        name = re.escape((getattr(cls, "attribute_map", None) or {}).get(key, key))
        setting = re.compile(rf"\b{name}\b\W+.*\b{v}\b")
        for path, lines, start in sources(cls):
            for i, line in enumerate(lines):
                if setting.search(line):
                    return f"{path}:{start + i}"
    for path, lines, start in sources(classes[0]):
        for i, line in enumerate(lines):
            if re.search(rf"\b{re.escape(key)}\b", line):
                return f"{path}:{start + i}"
    cls = classes[0]
    return f"{_rel(inspect.getsourcefile(cls))}:{inspect.getsourcelines(cls)[1]}"


def _reached(cfg, hidden: int, heads: int) -> bool:
    return (getattr(cfg, "hidden_size", None), getattr(cfg, "num_attention_heads", None)) == (
        hidden, heads)


def _classes(model_type: str, scope: str, cls) -> list:
    from transformers import CONFIG_MAPPING

    outer = CONFIG_MAPPING[model_type]
    return [cls] if outer is cls else [cls, outer]


def _rule(model_type: str, scope: str, key: str, null: bool = False) -> dict | None:
    """The class's rule for ``key`` in ``scope`` ("config" or "text_config"), the key absent
    (or, ``null``, written as null), or None where it is kvlib's (or the class cannot be built
    at these shapes even with the key given, or does not take the shape given: no evidence).
    A shape the class refuses without the key counts only where no shape builds ("raises");
    one where it builds with the key given but not the keys given reach the object vLLM reads
    ends the search (the keys are not what vLLM reads)."""
    seen: list[int | None] = []
    derived: list[int] = []
    shapes: list[tuple[int, int]] = []
    cls = None
    raised = None
    for hidden, heads in SHAPES:
        try:
            cfg = _build(model_type, scope, _fields(model_type, scope, hidden, heads, key, null))
        except Exception as e:  # noqa: BLE001 - transformers' own refusal, whatever its type
            try:  # the key given: does the class build at this shape at all?
                full = _build(model_type, scope, _fields(model_type, scope, hidden, heads, None))
            except Exception:  # noqa: BLE001 - not at this shape: no evidence either way
                continue
            if _reached(full, hidden, heads) and raised is None:
                said = " ".join(str(e).split())[:200]  # one line
                raised = {"rule": "raises", "error": f"{type(e).__name__}: {said}",
                          "class": type(full).__name__,
                          "source": _rel(inspect.getsourcefile(type(full)))}
            continue
        if not _reached(cfg, hidden, heads):
            # the shape given does not reach the object vLLM reads (a wrapper that builds its
            # text model from its own defaults): the keys are not what it reads either
            return None
        cls = type(cfg)
        seen.append(_read(cfg, key))
        shapes.append((hidden, heads))
        derived.append(hidden // heads if key == "head_dim" else heads)
    if not seen:  # at no shape without the key; transformers' refusal, if it refused
        return raised
    if seen == derived:
        return None
    values = [[h, n, v] for (h, n), v in zip(shapes, seen, strict=True)]
    if len(set(seen)) == 1 and isinstance(seen[0], int) and not isinstance(seen[0], bool):
        source = _cite(_classes(model_type, scope, cls), key, seen[0])
        if _literal(source, seen[0]):
            return {"rule": "constant", "value": seen[0], "class": cls.__name__,
                    "source": source}
        # the same number at every shape, but copied from another field's default (DeepSeek
        # V3: head_dim = qk_rope_head_dim): a constant only while that field is absent
        return {"rule": "other", "values": values, "class": cls.__name__, "source": source}
    return {"rule": "other", "values": values, "class": cls.__name__,
            "source": _rel(inspect.getsourcefile(cls))}


def _literal(source: str, value: int) -> bool:
    """Whether the line ``source`` (transformers file:line) writes ``value`` itself."""
    import transformers

    path, line = source.rsplit(":", 1)
    base = Path(transformers.__file__).resolve().parent
    text = (base / path.removeprefix("transformers/")).read_text().splitlines()[int(line) - 1]
    return re.search(rf"(?<![\w.]){value}(?![\w.])", text.split("#")[0]) is not None


def _has_text_config(model_type: str) -> bool:
    from transformers import CONFIG_MAPPING

    return "text_config" in (getattr(CONFIG_MAPPING[model_type], "sub_configs", None) or {})


def generate() -> dict:
    """The table: {"transformers": version, "shapes": ..., "checked": [model types],
    "families": {model_type: {"config"|"text_config": {key: rule}}}}."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    transformers.logging.set_verbosity_error()  # each class's warnings about the shapes given

    families: dict[str, dict] = {}
    checked = []
    for model_type in sorted(CONFIG_MAPPING_NAMES):
        if model_type in VLLM_OWN or model_type in VLLM_OWN_RULE:
            continue
        checked.append(model_type)
        scopes = ["config"] + (["text_config"] if _has_text_config(model_type) else [])
        for scope in scopes:
            for key in KEYS:
                for null in (False, True):
                    try:
                        rule = _rule(model_type, scope, key, null)
                    except Exception:  # noqa: BLE001 - the class itself cannot be made
                        rule = None
                    if rule is not None:
                        name = f"{key}:null" if null else key
                        families.setdefault(model_type, {}).setdefault(scope, {})[name] = rule
    return {
        "about": "How transformers' config class fills head_dim and the KV head count when "
                 "config.json omits them, where that differs from hidden_size / "
                 "num_attention_heads and one KV head per query head (scripts/class_defaults.py)",
        "transformers": transformers.__version__,
        "shapes": [list(s) for s in SHAPES],
        "vllm_own_config_classes": sorted(VLLM_OWN),
        "vllm_own_head_rules": sorted(VLLM_OWN_RULE),
        "checked": checked,
        "families": families,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the shipped JSON")
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    table = generate()
    text = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if a.check:
        same = a.out.read_text() == text
        print("same" if same else f"{a.out} differs from a fresh run")
        return 0 if same else 1
    a.out.write_text(text)
    fams = table["families"].values()
    absent = sum(any(k in r for r in f.values() for k in KEYS) for f in fams)
    null = sum(any(f"{k}:null" in r for r in f.values() for k in KEYS) for f in fams)
    print(f"wrote {a.out}: of {len(table['checked'])} model types, {absent} fill an absent "
          f"head_dim or KV head count otherwise than kvlib derives, {null} a null one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
