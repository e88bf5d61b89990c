"""docs/cli.md lists exactly the flags each ``--help`` lists (``kvlib``, ``kvlib estimate``,
``kvlib plan``, ``kvlib explain-log``), and every GPU the ``--gpu`` help names (issue 41
item 2): both texts are parsed here, the help as argparse prints it, the page's flag tables."""

import re
from pathlib import Path

import pytest

from kvlib.cli import main

DOC = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
COMMANDS = {"kvlib": [], "kvlib estimate": ["estimate"], "kvlib plan": ["plan"],
            "kvlib explain-log": ["explain-log"]}


def help_text(capsys, monkeypatch, argv) -> str:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option: no name broken at a hyphen
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def help_flags(text: str) -> set[str]:
    """The flags of the option lines argparse prints ('  -h, --help   show ...')."""
    flags = set()
    for line in text.splitlines():
        if line.startswith("  -"):
            invocation = re.split(r"\s{2,}", line.strip())[0]
            flags |= set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", invocation))
    return flags


def doc_section(command: str) -> str:
    """The page's text for ``command``: its '## `kvlib CMD`' section, or the text before the
    first section for bare ``kvlib``."""
    parts = re.split(r"^## ", DOC, flags=re.M)
    if command == "kvlib":
        return parts[0]
    (section,) = [p for p in parts if p.startswith(f"`{command}`")]
    return section


def doc_flags(section: str) -> set[str]:
    """The flags of the section's flag table rows ('| `--gpu GPU` | ...')."""
    flags = set()
    for line in section.splitlines():
        if line.startswith("| `-"):
            first = line.split("|")[1]
            flags |= set(re.findall(r"`(--?[A-Za-z][\w-]*)", first))
    return flags


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_page_lists_exactly_the_flags_of_the_help(capsys, monkeypatch, command):
    listed = help_flags(help_text(capsys, monkeypatch, COMMANDS[command]))
    documented = doc_flags(doc_section(command))
    assert "--help" in listed and "-h" in listed
    assert documented == listed, (f"{command}: on the page, not in --help: "
                                  f"{sorted(documented - listed)}; in --help, not on the page: "
                                  f"{sorted(listed - documented)}")


def test_the_plan_flags_the_issue_named_are_on_the_page(capsys, monkeypatch):
    documented = doc_flags(doc_section("kvlib plan"))
    for flag in ("--engine", "--mem-fraction-static", "--page-size", "--other-gib",
                 "--free-gpu-memory-fraction", "--tokens-per-block", "--trtllm-peak-gib"):
        assert flag in documented


def _gpus(text: str) -> list[str]:
    return [g.strip() for g in text.split(",")]


def test_every_gpu_of_the_help_is_on_the_page(capsys, monkeypatch):
    plan = help_text(capsys, monkeypatch, ["plan"])
    (line,) = [x for x in plan.splitlines() if x.startswith("  --gpu GPU")]
    in_help = _gpus(line.split("one of ", 1)[1])
    log = help_text(capsys, monkeypatch, ["explain-log"])
    (line,) = [x for x in log.splitlines() if x.startswith("  --gpu GPU")]
    in_log_help = _gpus(line.split("(", 1)[1].rstrip(")"))
    assert in_help == in_log_help and len(in_help) == 26
    (row,) = [x for x in doc_section("kvlib plan").splitlines() if x.startswith("| `--gpu GPU`")]
    on_page = _gpus(row.split("one of ", 1)[1].split(" (matched", 1)[0])
    (row,) = [x for x in doc_section("kvlib explain-log").splitlines()
              if x.startswith("| `--gpu GPU`")]
    on_log_page = _gpus(row.split("depends on it: ", 1)[1].rsplit(" |", 1)[0])
    assert on_page == in_help and on_log_page == in_help
