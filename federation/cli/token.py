"""``caldera token``: mint a token and kubeconfig for a role on a server's data directory."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from federation import private_files

NAME = "token"
HELP = "mint a bearer token + kubeconfig (admin, viewer, or agent for a cluster) in a serve data dir"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default="caldera-data", type=Path, help="the data dir of `caldera serve`")
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", metavar="CLUSTER", help="an agent token for CLUSTER")
    who.add_argument("--role", choices=["admin", "viewer", "controller-manager"],
                     help="an admin, viewer or controller-manager (group caldera:controllers) token")
    parser.add_argument("--server", default=None,
                        help="API URL for the kubeconfig (default: the one in DIR/admin.kubeconfig)")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="kubeconfig path (default DIR/agent-CLUSTER.kubeconfig or DIR/ROLE.kubeconfig)")


def run(args: argparse.Namespace) -> int:
    from federation.apiserver.auth import TokenAuthenticator

    role = f"agent:{args.agent}" if args.agent else args.role
    data_dir: Path = args.data_dir
    server = args.server
    admin = data_dir / "admin.kubeconfig"
    cluster_entry: dict[str, object] = {}
    if server is None:
        if not admin.exists():
            print(f"error: {admin} not found; start `caldera serve --data-dir {data_dir}` first or pass --server")
            return 1
        cluster_entry = dict(yaml.safe_load(admin.read_text())["clusters"][0]["cluster"])
    else:
        cluster_entry = {"server": server}
    token = TokenAuthenticator(data_dir / "tokens.csv").mint(role.replace(":", "-"), role)
    user = role.replace(":", "-")
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [{"name": "caldera", "cluster": cluster_entry}],
              "users": [{"name": user, "user": {"token": token}}],
              "contexts": [{"name": f"caldera-{user}", "context": {"cluster": "caldera", "user": user}}],
              "current-context": f"caldera-{user}"}
    out = args.output or data_dir / (f"agent-{args.agent}.kubeconfig" if args.agent else f"{args.role}.kubeconfig")
    private_files.write_text(out, yaml.safe_dump(config, sort_keys=False))  # 0600 from creation
    print(f"{role} token written to {out}")
    return 0
