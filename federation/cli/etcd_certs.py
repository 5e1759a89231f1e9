"""``caldera etcd-certs``: the Secrets deploy/federation/etcd and the federation mount, with fresh certificates.

    caldera etcd-certs | kubectl apply -f -          # into caldera-system, before kubectl apply -k

Writes the two Secrets whose placeholders deploy/ ships: ``caldera-etcd-server`` (the CA, the server
and the peer certificates etcd mounts) and ``caldera-etcd-client`` (the CA and the client certificate
``caldera serve`` passes as --etcd-cafile/--etcd-certfile/--etcd-keyfile); see
federation/apiserver/etcd_certs.py for what each certificate is for.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

NAME = "etcd-certs"
HELP = "make the etcd CA, server, peer and client certificates as the Secrets deploy/ mounts (YAML)"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", default="caldera-system", help="namespace of the Secrets and of the etcd "
                        "Services their names cover (default caldera-system)")
    parser.add_argument("--dns-name", action="append", default=[], metavar="NAME",
                        help="another name clients or members use for etcd (repeatable)")
    parser.add_argument("--days", type=int, default=3650, help="validity of every certificate (default 3650)")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="write the Secrets to this file (mode 0600) instead of standard output")


def secrets(namespace: str, dns_names: list[str], days: int) -> list[dict[str, object]]:
    from federation.apiserver.etcd_certs import deploy_names, generate

    certs = generate([*deploy_names(namespace), *dns_names], days=days)

    def secret(name: str, data: dict[str, bytes]) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
                "type": "Opaque", "stringData": {k: v.decode() for k, v in data.items()}}

    return [secret("caldera-etcd-server", {"ca.crt": certs.ca.cert, "server.crt": certs.server.cert,
                                           "server.key": certs.server.key, "peer.crt": certs.peer.cert,
                                           "peer.key": certs.peer.key}),
            secret("caldera-etcd-client", {"ca.crt": certs.ca.cert, "client.crt": certs.client.cert,
                                           "client.key": certs.client.key})]


def run(args: argparse.Namespace) -> int:
    if args.days < 1:
        raise SystemExit(f"error: --days {args.days}: must be at least 1")
    text = yaml.safe_dump_all(secrets(args.namespace, list(args.dns_name), args.days), sort_keys=False)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private keys inside
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    print(f"wrote Secrets caldera-etcd-server and caldera-etcd-client to {args.output}", file=sys.stderr)
    return 0
