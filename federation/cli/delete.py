"""``caldera delete KIND NAME...`` or ``caldera delete -f FILE|DIR|-``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from federation.cli.common import (
    add_connection_args,
    kind_from_name,
    namespace_for,
    run_with_client,
    server_error,
    singular_ref,
)
from policies.kinds import KindInfo, lookup

if TYPE_CHECKING:
    from federation.client import ResourceClient

NAME = "delete"
HELP = "delete objects by kind and name, or those described in manifest files"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", help="kind, plural or short name")
    parser.add_argument("names", nargs="*", help="object names")
    parser.add_argument("-f", "--filename", action="append", default=[], metavar="FILE|DIR|-")
    parser.add_argument("--cascade", choices=["background", "foreground", "orphan"], default="background",
                        help="what happens to dependents (ownerReferences), default background")
    parser.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    add_connection_args(parser)


def run(args: argparse.Namespace) -> int:
    targets: list[tuple[KindInfo, str, str | None]] = []
    if args.filename:
        from federation.cli.apply import load_documents

        manifests, errors = load_documents(args.filename)
        if errors:
            for text in errors:
                print(f"error: {text}", file=sys.stderr)
            return 1
        for manifest in manifests:
            info = lookup(manifest["apiVersion"], manifest["kind"])
            targets.append((info, manifest["metadata"]["name"], namespace_for(info, args, manifest)))
    elif args.kind and args.names:
        info = kind_from_name(args.kind)
        targets = [(info, name, namespace_for(info, args)) for name in args.names]
    else:
        print("error: give KIND NAME... or -f FILE", file=sys.stderr)
        return 1

    async def body(rc: "ResourceClient") -> int:
        from kubernetes_asyncio import client as k8s

        failed = 0
        for info, name, namespace in targets:
            try:
                await rc.delete(info, name, namespace, propagation_policy=args.cascade.capitalize())
                where = f" from {namespace} namespace" if namespace else ""
                print(f'{singular_ref(info)} "{name}" deleted{where}', flush=True)
            except k8s.ApiException as exc:
                if exc.status == 404 and args.ignore_not_found:
                    continue
                failed += 1
                print(server_error(exc), file=sys.stderr)
        return 1 if failed else 0

    return run_with_client(args, body)
