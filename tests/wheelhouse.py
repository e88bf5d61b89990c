"""A wheelhouse packed from what this environment has installed, with no network (issue 36).

A room without a network installs from a folder of wheels (docs/workshop.md, "Without a
network in the room"). To test that route offline, ``build`` packs the installed
distributions that ``kvlib[lab]`` needs (the closure of its requirements, read from their
metadata) into wheels again: each wheel holds the files its distribution's RECORD lists,
with the files installed outside site-packages (JupyterLab's ``share/jupyter``, scripts that
are not entry points) under ``<name>-<version>.data/``, as a built wheel holds them, and a
RECORD rewritten with its hashes. Nothing is downloaded; a distribution that is missing here
raises ``LookupError``.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import sys
import sysconfig
import zipfile
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _requirements(dist: Distribution, extras: set[str]) -> list[Requirement]:
    """The requirements of ``dist`` with ``extras`` asked for, markers evaluated here."""
    out = []
    for line in dist.requires or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e})
                                     for e in (extras or {""}) | {""}):
            out.append(req)
    return out


def closure(project: str, extras: set[str], also: tuple[str, ...] = ()) -> list[Distribution]:
    """The installed distributions ``project[extras]`` needs, and ``also``, without ``project``."""
    wanted: dict[str, set[str]] = {}
    found: dict[str, Distribution] = {}
    todo = [(r.name, set(r.extras)) for r in _requirements(distribution(project), extras)]
    todo += [(Requirement(a).name, set(Requirement(a).extras)) for a in also]
    while todo:
        name, asked = todo.pop()
        key = canonicalize_name(name)
        if key in wanted and asked <= wanted[key]:
            continue
        wanted[key] = wanted.get(key, set()) | asked
        try:
            dist = found.setdefault(key, distribution(name))
        except PackageNotFoundError as err:
            raise LookupError(f"{name} is not installed here, so it cannot be packed") from err
        todo += [(r.name, set(r.extras)) for r in _requirements(dist, wanted[key])]
    return [found[k] for k in sorted(found)]


def _hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _tag(wheel_metadata: str) -> str:
    """The compressed tag set of a WHEEL file's Tag lines (py2 + py3 -> py2.py3-none-any)."""
    tags = [t.split("-") for t in re.findall(r"^Tag: (.+)$", wheel_metadata, re.M)]
    return "-".join(".".join(dict.fromkeys(t[i] for t in tags)) for i in range(3))


def pack(dist: Distribution, out: Path) -> Path:
    """``dist`` as a wheel in ``out`` (stored, not compressed: the test is timed)."""
    info = Path(dist._path)  # noqa: SLF001  (the .dist-info folder)
    site = info.parent
    prefix = Path(sys.prefix).resolve()
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    tag = _tag((info / "WHEEL").read_text())
    name = canonicalize_name(dist.metadata["Name"]).replace("-", "_")
    data_dir = f"{name}-{dist.version}.data"
    entry_points = {ep.name for ep in dist.entry_points
                    if ep.group in ("console_scripts", "gui_scripts")}
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    wheel = out / f"{name}-{dist.version}-{tag}.whl"
    rows = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as z:
        for f in dist.files or []:
            if "__pycache__" in f.parts or (f.parent.name == info.name and f.name in skip):
                continue
            src = (site / f).resolve()
            if not src.is_file():
                continue
            if src.is_relative_to(site.resolve()):
                arc = src.relative_to(site.resolve()).as_posix()
            elif src.is_relative_to(scripts):
                if src.name in entry_points:
                    continue  # pip writes these again from entry_points.txt
                arc = f"{data_dir}/scripts/{src.relative_to(scripts).as_posix()}"
            elif src.is_relative_to(prefix):
                arc = f"{data_dir}/data/{src.relative_to(prefix).as_posix()}"
            else:
                continue
            data = src.read_bytes()
            if arc.startswith(f"{data_dir}/scripts/") and data.startswith(b"#!") \
                    and b"python" in data.split(b"\n", 1)[0]:
                data = b"#!python\n" + data.split(b"\n", 1)[1]  # pip writes the new one
            z.writestr(arc, data)
            rows.append((arc, _hash(data), str(len(data))))
        record = f"{info.name}/RECORD"
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows + [(record, "", "")])
        z.writestr(record, text.getvalue())
    return wheel


def build(out: Path, project: str = "kvlib", extras: frozenset[str] = frozenset({"lab"}),
          also: tuple[str, ...] = ("setuptools",)) -> list[Path]:
    """Pack the closure of ``project[extras]`` and ``also`` into wheels in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return [pack(d, out) for d in closure(project, set(extras), also)]
