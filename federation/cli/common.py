"""What the object commands (apply, get, describe, delete) share: kubeconfig, client, errors."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from policies.errors import UnknownKind
from policies.kinds import KindInfo, resolve

if TYPE_CHECKING:  # kubernetes_asyncio takes ~1 s to import: only commands that talk to a server load it
    from federation.client import ResourceClient


def add_connection_args(parser: argparse.ArgumentParser, namespaced: bool = True) -> None:
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, else ./caldera-data/admin.kubeconfig)")
    if namespaced:
        parser.add_argument("-n", "--namespace", default=None, help="namespace (default: default)")


def singular_ref(info: KindInfo) -> str:
    """``job.batch.volcano.sh`` / ``configmap``: how kubectl names a kind in messages."""
    return f"{info.singular}.{info.group}" if info.group else info.singular


def kind_from_name(name: str) -> KindInfo:
    try:
        return resolve(name)
    except UnknownKind as exc:
        raise SystemExit(f'error: the server doesn\'t have a resource type "{name}" ({exc})') from None


def server_error(exc: Any) -> str:
    """``Error from server (NotFound): jobs.batch.volcano.sh "x" not found``, as kubectl says it."""
    try:
        status = json.loads(exc.body)
        return f"Error from server ({status.get('reason') or exc.reason}): {status.get('message', exc.body)}"
    except (TypeError, ValueError):
        return f"Error from server ({exc.status}): {exc.reason}"


def run_with_client(args: argparse.Namespace, body: Callable[["ResourceClient"], Awaitable[int]]) -> int:
    """Open a client from the kubeconfig, run ``body``, report server and connection errors."""
    from kubernetes_asyncio import client as k8s

    from federation.client import ResourceClient, default_kubeconfig_path, load_client

    path = default_kubeconfig_path(getattr(args, "kubeconfig", None))

    async def main() -> int:
        try:
            api = load_client(path)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        async with api:
            try:
                return await body(ResourceClient(api))
            except k8s.ApiException as exc:
                print(server_error(exc), file=sys.stderr)
                return 1
            except OSError as exc:  # aiohttp connection errors derive from OSError
                print(f"error: cannot reach the API server in {path}: {exc}", file=sys.stderr)
                return 1

    return asyncio.run(main())


def namespace_for(info: KindInfo, args: argparse.Namespace, obj: dict[str, Any] | None = None) -> str | None:
    if not info.namespaced:
        return None
    if obj is not None and (obj.get("metadata") or {}).get("namespace"):
        return str(obj["metadata"]["namespace"])
    return getattr(args, "namespace", None) or "default"
