"""``caldera agent`` and ``caldera schedule`` (run as ``python -m member_agent``).

Each command module exports ``NAME``, ``HELP``, ``register(parser)`` and ``run(args)``.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import Sequence

from member_agent import agent_cmd, schedule_cmd

COMMANDS: list[ModuleType] = [agent_cmd, schedule_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caldera", description="Caldera member-cluster commands.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.register(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
