"""Volcano's node-search flags, shared by ``caldera agent`` and ``caldera schedule``.

vc-scheduler's ``--minimum-feasible-nodes`` (100), ``--minimum-percentage-nodes-to-find`` (5)
and ``--percentage-nodes-to-find`` (0: adaptive, ``max(minimum percentage, 50 - nodes/125)``)
bound how many feasible nodes a task's search collects before it stops (docs/scheduler.md,
"Node search"). Volcano takes any integer; Caldera refuses a negative value or a percentage
above 100, which Volcano would silently treat as 0 (adaptive) or 100, so a typo stays visible.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Callable

from member_agent.scheduler.framework.session import SessionOptions

DEFAULTS = SessionOptions()


def _bounded(flag: str, upper: int | None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < 0 or (upper is not None and value > upper):
            rule = f"from 0 to {upper}" if upper is not None else "0 or more"
            raise argparse.ArgumentTypeError(f"must be an integer {rule}, got {value}")
        return value

    parse.__name__ = flag.lstrip("-")  # argparse prefixes the message with "argument <flag>: "
    return parse


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minimum-feasible-nodes", type=_bounded("--minimum-feasible-nodes", None),
                        default=DEFAULTS.minimum_feasible_nodes, metavar="N",
                        help="The minimum number of feasible nodes to find and score "
                             f"(default {DEFAULTS.minimum_feasible_nodes})")
    parser.add_argument("--minimum-percentage-nodes-to-find", metavar="PCT",
                        type=_bounded("--minimum-percentage-nodes-to-find", 100),
                        default=DEFAULTS.minimum_percentage_nodes_to_find,
                        help="The minimum percentage of nodes to find and score "
                             f"(default {DEFAULTS.minimum_percentage_nodes_to_find})")
    parser.add_argument("--percentage-nodes-to-find", type=_bounded("--percentage-nodes-to-find", 100),
                        default=DEFAULTS.percentage_nodes_to_find, metavar="PCT",
                        help="The percentage of nodes to find and score, if <=0 will be calculated based on "
                             f"the cluster size (default {DEFAULTS.percentage_nodes_to_find})")


def session_options(args: argparse.Namespace, base: SessionOptions = DEFAULTS) -> SessionOptions:
    """``base`` with the node-search flags of ``args`` (flags ``args`` lacks keep ``base``'s value)."""
    names = ("minimum_feasible_nodes", "minimum_percentage_nodes_to_find", "percentage_nodes_to_find")
    return replace(base, **{name: getattr(args, name, getattr(base, name)) for name in names})
