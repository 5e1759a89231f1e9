"""``--feature-gates GATE=BOOL,...`` for the controllers, by Karmada's gate names.

Shared by ``caldera serve`` (which composes the controllers) and ``caldera controllers``; the
parsed gates travel as ``ControllerOptions.feature_gates`` in the controllers' options.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--feature-gates", default="", metavar="GATE=BOOL,...",
                        help="controller feature gates by Karmada's names, e.g. ResourceBindingPreemption=true "
                             "(also CrossNamespaceResourceBindingPreemption)")


def parse_gates(text: str, command: str) -> dict[str, bool]:
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise SystemExit(f"caldera {command}: --feature-gates: {item!r} is not GATE=true or GATE=false")
        gates[name.strip()] = value.lower() == "true"
    return gates


def feature_gate_options(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """``{"controller_options": ControllerOptions(feature_gates=...)}``, or nothing when no gate is set."""
    if not args.feature_gates:
        return {}
    from federation.controllers.common import ControllerOptions

    return {"controller_options": ControllerOptions(feature_gates=parse_gates(args.feature_gates, command))}
