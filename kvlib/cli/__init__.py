"""The ``kvlib`` command (also ``python -m kvlib``): one module per subcommand.

The top layer: may import every layer of kvlib.

Subcommands live in modules of their own, each exposing ``add_parser(subparsers)``
(which sets ``func`` on its parser) and raising ``ValueError`` / ``FileNotFoundError``
with a readable message on bad input. This module turns those into one line on
stderr and exit status 2, never a traceback. Output to a closed pipe (``kvlib plan ... |
head -1``) ends quietly with status 0.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMANDS = ("kvlib.cli.estimate", "kvlib.cli.plan", "kvlib.cli.explain_log")
# each subcommand's name -> its module: ``kvlib estimate ...`` imports only kvlib.cli.estimate
# (issue 42 item 6: the plan's module loads every engine, and SymPy with them)
MODULES = {"estimate": "kvlib.cli.estimate", "plan": "kvlib.cli.plan",
           "explain-log": "kvlib.cli.explain_log"}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other error here
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kvlib`` parser with every subcommand, or, given ``command`` (a key of
    :data:`MODULES`), with that one alone: its module is the only one imported."""
    parser = _Parser(prog="kvlib", description="KV-cache memory of real models, exactly.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND",
                                title="commands")
    for name in (MODULES[command],) if command in MODULES else SUBCOMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # the command named first loads alone; anything else (--help, a typo) gets them all
    parser = build_parser(argv[0] if argv and argv[0] in MODULES else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a usage error (one line already printed) or --help
        return int(e.code or 0)
    if args.command is None:  # bare `kvlib`: the usage and the commands, not only an error
        parser.print_help(sys.stderr)
        return 2
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, if the output fitted in the buffer
        return status
    except BrokenPipeError:
        return _closed_pipe()
    except (ValueError, FileNotFoundError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"kvlib {args.command}: error: {msg}", file=sys.stderr)
        return 2


def _closed_pipe() -> int:
    """``kvlib plan ... | head -1``: the reader has gone, which is not an error (status 0, as
    Python's docs advise, "Note on SIGPIPE" in the signal module). stdout is pointed at devnull
    so that the interpreter's own flush at exit does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
