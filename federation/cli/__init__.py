"""The ``caldera`` command.

Each command lives in its own module under :mod:`federation.cli` and exports
``NAME``, ``HELP`` and ``register(parser)``; the parser built here lists them
explicitly, so adding a command is one import and one entry in :data:`COMMANDS`.

Commands that belong to the member agent (``agent``, ``schedule``) run as
``python -m member_agent``: the federation never imports the agent's code.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType
from typing import Sequence

from federation.cli import apply, controllers, delete, demo, describe, get, place, serve, token, validate
from federation.cli import etcd_certs as etcd_certs
from federation.cli import logs as logs
from federation.version import caldera_version as caldera_version

#: Commands implemented in this package, in the order ``--help`` lists them.
COMMANDS: list[ModuleType] = [validate, serve, controllers, token, place, apply, get, describe, delete, demo, logs]
COMMANDS.append(etcd_certs)  # the etcd Secrets deploy/ mounts

#: Commands handed to ``python -m member_agent`` (name -> one-line help).
AGENT_COMMANDS: dict[str, str] = {
    "agent": "run the member-cluster agent (scheduler, job controller, sync with the federation)",
    "schedule": "dry-run one scheduling session on a cluster-state file",
}

#: Commands handed to another package's ``python -m`` (name -> (module, one-line help));
#: ``simulate`` composes both planes, so it lives in the top-level ``simulator`` package.
EXEC_COMMANDS: dict[str, tuple[str, str]] = {
    **{name: ("member_agent", text) for name, text in AGENT_COMMANDS.items()},
    "simulate": ("simulator", "replay a job trace in virtual time through Caldera's scheduler"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="caldera",
        description="Caldera: place gang-scheduled AI jobs across Kubernetes clusters.",
    )
    parser.add_argument("--version", action="version", version=f"caldera {caldera_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.register(command)
        command.set_defaults(_run=module.run)
    for name, (_module, help_text) in EXEC_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in EXEC_COMMANDS:
        # Hand over to the agent's (or simulator's) own CLI in a fresh interpreter (no shared imports).
        module = EXEC_COMMANDS[args_list[0]][0]
        rest = args_list if module == "member_agent" else args_list[1:]
        cmd = [sys.executable, "-m", module, *rest]
        if argv is not None:
            import subprocess

            return subprocess.call(cmd)
        os.execv(sys.executable, cmd)
    parser = build_parser()
    args = parser.parse_args(args_list)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
