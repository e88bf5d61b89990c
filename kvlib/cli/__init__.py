"""The ``kvlib`` command (also ``python -m kvlib``): one module per subcommand.

The top layer: may import every layer of kvlib.

Subcommands live in modules of their own, each exposing ``add_parser(subparsers)``
(which sets ``func`` on its parser) and raising ``ValueError`` / ``FileNotFoundError``
with a readable message on bad input. This module turns those into one line on
stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ("kvlib.cli.estimate", "kvlib.cli.plan", "kvlib.cli.explain_log")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like every other error here
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvlib", description="KV-cache memory of real models, exactly.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND",
                                title="commands")
    for name in SUBCOMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a usage error (one line already printed) or --help
        return int(e.code or 0)
    if args.command is None:  # bare `kvlib`: the usage and the commands, not only an error
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"kvlib {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
