"""``caldera agent`` and ``caldera schedule`` (run as ``python -m member_agent``).

Each command module exports ``NAME``, ``HELP``, ``register(parser)`` and ``run(args)``. Only the
module of the command being run is imported (an agent never loads the dry-run scheduler CLI and
its state loader); ``--help`` without a command imports them all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import Sequence

#: command name -> module
COMMANDS: dict[str, str] = {"agent": "member_agent.agent_cmd", "schedule": "member_agent.schedule_cmd"}


def command_modules(argv: Sequence[str]) -> list[ModuleType]:
    chosen = next((a for a in argv if not a.startswith("-")), None)
    names = [chosen] if chosen in COMMANDS else list(COMMANDS)
    return [importlib.import_module(COMMANDS[name]) for name in names]


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="caldera", description="Caldera member-cluster commands.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules(argv):
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.register(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130
