"""``caldera controllers``: the federation controller manager on its own, against any Caldera API
server (e.g. one started with ``caldera serve --no-controllers``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

NAME = "controllers"
HELP = "run the federation controllers (placement, dispatch, status, health, ...) against an API server"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig of the API server, admin role (default: $KUBECONFIG, "
                             "else ./caldera-data/admin.kubeconfig)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="directory the controllers may keep local files in (default: the kubeconfig's)")
    from federation.feature_gates import add_feature_gates_flag
    from federation.health_options import add_health_flags

    add_health_flags(parser)
    add_feature_gates_flag(parser)
    from federation.cli.scheduler_conf_flag import add_scheduler_conf_flag

    add_scheduler_conf_flag(parser)
    from federation.cli.leader_flags import add_leader_election_flags

    add_leader_election_flags(parser, default=True)  # kube-controller-manager's default


def run(args: argparse.Namespace) -> int:
    import yaml

    from federation.cli.compose import controllers_forever
    from federation.cli.scheduler_conf_flag import with_scheduler_conf
    from federation.client import default_kubeconfig_path, load_kubeconfig
    from federation.controllers.manager import server_url
    from federation.feature_gates import feature_gate_options
    from federation.health_options import health_options

    path = default_kubeconfig_path(args.kubeconfig)
    try:
        kubeconfig = load_kubeconfig(path)
        if not isinstance(kubeconfig, dict):
            raise ValueError("not a kubeconfig mapping")
        server_url(kubeconfig)
    except (OSError, ValueError, yaml.YAMLError) as exc:  # missing, unreadable, not YAML, no server in it
        print(f"error: --kubeconfig {path}: {exc}", file=sys.stderr)
        return 1
    data_dir = args.data_dir if args.data_dir is not None else path.parent
    from federation.cli.leader_flags import election_config

    return asyncio.run(controllers_forever(kubeconfig, data_dir,
                                           with_scheduler_conf(args, {**health_options(args),
                                                                               **feature_gate_options(args, "controllers")}),
                                           lambda line: print(line, flush=True), election=election_config(args)))
