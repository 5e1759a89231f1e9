"""``--scheduler-conf FILE`` for ``caldera serve`` and ``caldera controllers``: the federation's
``volcano-scheduler.conf``, in Volcano's format (a bare conf, or a ConfigMap carrying
``data["volcano-scheduler.conf"]``). Its queue plugin (proportion or capacity, with
``enableHierarchy``) and overcommit's ``overcommit-factor`` rule admission through the fleet's
queues (docs/queues.md); without the flag, Volcano's compiled-in default applies (proportion).
A file that cannot be read or parsed, or that names both proportion and capacity, is refused
before anything starts, naming the file, the field path and the rule.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Mapping

import yaml

from federation.fleet_queues.conf import load
from federation.fleet_queues.model import FleetConf
from policies.errors import InvalidConfiguration
from policies.scheduler_conf import CONF_KEY


def add_scheduler_conf_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler-conf", default=None, metavar="FILE",
                        help="the federation's volcano-scheduler.conf (or a ConfigMap carrying it): its queue "
                             "plugin rules fleet-wide queue admission (default: Volcano's default conf, proportion)")


def read_scheduler_conf(path: str) -> FleetConf:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise InvalidConfiguration(f"--scheduler-conf {path}: cannot read: {exc.strerror}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidConfiguration(f"--scheduler-conf {path}: not valid YAML: {exc}") from exc
    if isinstance(document, Mapping) and document.get("kind") == "ConfigMap":
        data = document.get("data") or {}
        if not isinstance(data, Mapping) or not isinstance(data.get(CONF_KEY), str):
            raise InvalidConfiguration(f"--scheduler-conf {path}: ConfigMap data.{CONF_KEY} is missing")
        text = data[CONF_KEY]
    try:
        return load(text)[1]
    except InvalidConfiguration as exc:
        raise InvalidConfiguration(f"--scheduler-conf {path}: {exc}") from exc


def with_scheduler_conf(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (``{"controller_options": ...}`` or more) with the conf's fleet queue rule."""
    if not getattr(args, "scheduler_conf", None):
        return options
    try:
        fleet = read_scheduler_conf(args.scheduler_conf)
    except InvalidConfiguration as exc:
        raise SystemExit(f"error: {exc}") from None
    from federation.controllers.common import ControllerOptions

    current = options.get("controller_options") or ControllerOptions()
    return {**options, "controller_options": dataclasses.replace(current, fleet_queues=fleet)}
