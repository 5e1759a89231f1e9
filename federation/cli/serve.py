"""``caldera serve``: the federation API server (Kubernetes-compatible REST on SQLite) and, in the
same process, the controller manager (``--no-controllers``: the API only)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

NAME = "serve"
HELP = "run the federation API server and its controllers (kubectl and kubernetes-asyncio work against it)"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default="caldera-data", type=Path,
                        help="directory for the SQLite store, tokens.csv and admin.kubeconfig (default ./caldera-data)")
    parser.add_argument("--listen", default="127.0.0.1:7443", metavar="HOST:PORT",
                        help="address to listen on (default 127.0.0.1:7443; port 0 picks a free one)")
    parser.add_argument("--token-file", type=Path, default=None,
                        help="bearer tokens, kube-apiserver --token-auth-file format: token,user,uid,\"groups\" "
                             "(default: DIR/tokens.csv with a generated admin token)")
    parser.add_argument("--tls-cert-file", type=Path, default=None, help="serve HTTPS with this certificate")
    parser.add_argument("--tls-private-key-file", type=Path, default=None, help="private key for --tls-cert-file")
    parser.add_argument("--plain-http", action="store_true",
                        help="serve plain HTTP instead of HTTPS with a generated self-signed certificate "
                             "(note: kubectl never sends tokens over plain HTTP)")
    parser.add_argument("--member-mode", action="store_true",
                        help="stand in for a member cluster's API server (core kinds, no federation controllers)")
    parser.add_argument("--no-controllers", action="store_true",
                        help="serve the API only (run `caldera controllers` against it separately)")
    parser.add_argument("--agent-token", action="append", default=[], metavar="CLUSTER",
                        help="also write DIR/agent-CLUSTER.kubeconfig with a new agent token (repeatable)")
    from federation.feature_gates import add_feature_gates_flag
    from federation.health_options import add_health_flags

    add_health_flags(parser)
    add_feature_gates_flag(parser)


def run(args: argparse.Namespace) -> int:
    from federation.apiserver.server import ServerConfig
    from federation.cli.compose import FederationServer, serve_forever
    from federation.feature_gates import feature_gate_options
    from federation.health_options import health_options

    config = ServerConfig(data_dir=args.data_dir, listen=args.listen, token_file=args.token_file,
                          tls_cert_file=args.tls_cert_file, tls_private_key_file=args.tls_private_key_file,
                          self_signed_tls=not args.plain_http, member_mode=args.member_mode,
                          agent_kubeconfigs=list(args.agent_token))
    server = FederationServer(config, run_controllers=not args.no_controllers,
                              controller_options={**health_options(args), **feature_gate_options(args, "serve")})
    return asyncio.run(serve_forever(server, lambda line: print(line, flush=True)))

