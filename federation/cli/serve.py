"""``caldera serve``: the federation API server (Kubernetes-compatible REST on SQLite, or on etcd with
``--etcd-servers``) and, in the same process, the controller manager (``--no-controllers``: the API only)."""

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
    etcd = parser.add_argument_group("etcd storage (kube-apiserver's flags; without --etcd-servers: SQLite in DIR)")
    etcd.add_argument("--etcd-servers", default="", metavar="URL[,URL...]",
                      help="store objects in etcd v3 at these URLs (http:// or https://), comma-separated")
    etcd.add_argument("--etcd-prefix", default="/caldera/registry", help="key prefix (default /caldera/registry)")
    etcd.add_argument("--etcd-cafile", type=Path, default=None, help="CA bundle that signed etcd's certificates")
    etcd.add_argument("--etcd-certfile", type=Path, default=None, help="client certificate for etcd (mutual TLS)")
    etcd.add_argument("--etcd-keyfile", type=Path, default=None, help="private key of --etcd-certfile")
    etcd.add_argument("--etcd-compaction-interval", type=float, default=300.0, metavar="SECONDS",
                      help="compact etcd's history this often (default 300; 0 never)")
    parser.add_argument("--audit-log-path", default=None, metavar="FILE",
                        help="write one audit.k8s.io/v1 Event per request to FILE as JSON lines ('-' = stdout)")
    parser.add_argument("--audit-policy-file", type=Path, default=None,
                        help="kube audit Policy (audit.k8s.io/v1); default: every request at Metadata level")
    parser.add_argument("--audit-log-maxsize", type=int, default=0, metavar="MB",
                        help="rotate the audit log when it reaches MB megabytes (default 0: never)")
    parser.add_argument("--audit-log-maxbackup", type=int, default=0, metavar="N",
                        help="rotated audit files to keep (default 0: all)")
    parser.add_argument("--prometheus-url", type=_prometheus_url, default=None, metavar="URL",
                        help="the dashboard's GPU chart reads the last hour from this Prometheus (http[s]://host:port); "
                             "absent or unreachable: the server's own 5 s samples")
    from federation.feature_gates import add_feature_gates_flag
    from federation.health_options import add_health_flags

    add_health_flags(parser)
    add_feature_gates_flag(parser)
    from federation.cli.scheduler_conf_flag import add_scheduler_conf_flag

    add_scheduler_conf_flag(parser)
    from federation.cli.leader_flags import add_leader_election_flags

    # None until run(): kube-controller-manager's true wherever the store is shared (etcd), false on the
    # embedded SQLite (one process owns the file: there is nobody to elect against)
    add_leader_election_flags(parser, default=None,
                              default_text="true with --etcd-servers, false on the embedded SQLite")


def _prometheus_url(text: str) -> str:
    if not text.startswith(("http://", "https://")) or len(text.split("://", 1)[1].strip("/")) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL of a Prometheus server")
    return text


def leader_elect_default(args: argparse.Namespace) -> bool:
    """``--leader-elect`` as given, else true when the store is shared (``--etcd-servers``)."""
    if args.leader_elect is None:
        return bool(args.etcd_servers.strip())
    return bool(args.leader_elect)


def etcd_config(args: argparse.Namespace) -> object | None:
    if not args.etcd_servers:
        for flag in ("etcd_cafile", "etcd_certfile", "etcd_keyfile"):
            if getattr(args, flag):
                raise SystemExit(f"error: --{flag.replace('_', '-')} needs --etcd-servers")
        return None
    from federation.apiserver.etcd_client import EtcdConfig

    servers = [url.strip() for url in args.etcd_servers.split(",") if url.strip()]
    return EtcdConfig(servers=servers, prefix=args.etcd_prefix, cafile=args.etcd_cafile,
                      certfile=args.etcd_certfile, keyfile=args.etcd_keyfile,
                      compaction_interval=args.etcd_compaction_interval)


def run(args: argparse.Namespace) -> int:
    from federation.apiserver.server import ServerConfig
    from federation.cli.compose import FederationServer, serve_forever
    from federation.cli.leader_flags import election_config
    from federation.cli.scheduler_conf_flag import with_scheduler_conf
    from federation.feature_gates import feature_gate_options
    from federation.health_options import health_options

    args.leader_elect = leader_elect_default(args)
    config = ServerConfig(data_dir=args.data_dir, listen=args.listen, token_file=args.token_file,
                          tls_cert_file=args.tls_cert_file, tls_private_key_file=args.tls_private_key_file,
                          self_signed_tls=not args.plain_http, member_mode=args.member_mode,
                          agent_kubeconfigs=list(args.agent_token), etcd=etcd_config(args),  # type: ignore[arg-type]
                          audit_log_path=args.audit_log_path, audit_policy_file=args.audit_policy_file,
                          audit_log_maxsize=args.audit_log_maxsize, audit_log_maxbackup=args.audit_log_maxbackup,
                          prometheus_url=args.prometheus_url)
    server = FederationServer(config, run_controllers=not args.no_controllers,
                              controller_options=with_scheduler_conf(args, {**health_options(args),
                                                                                  **feature_gate_options(args, "serve")}),
                              election=election_config(args))
    from federation.apiserver.etcd_client import EtcdConfigError

    try:
        return asyncio.run(serve_forever(server, lambda line: print(line, flush=True)))
    except EtcdConfigError as exc:  # one line naming the flag, no traceback
        raise SystemExit(f"error: {exc}") from None
