"""``caldera apply -f FILE|DIR|-``: create or update objects from manifests.

Like ``kubectl apply`` (client-side): the manifest is stored in the
``kubectl.kubernetes.io/last-applied-configuration`` annotation, and an update is a merge
patch that sets what the manifest says and removes what a previous apply set but the
manifest no longer has; fields written by others (status, controllers' labels) stay.
Manifests are decoded and checked locally first (policies.codec); if any document is bad,
nothing is applied. Documents are sent in dependency order (:data:`APPLY_ORDER`: namespaces,
then Queues, PriorityClasses and ConfigMaps, then policies and templates, then workloads), so a
directory applies in one go whatever its files are called.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import TYPE_CHECKING, Any

from federation.cli.common import (
    add_connection_args,
    namespace_for,
    run_with_client,
    server_error,
    singular_ref,
)
from policies.k8s import patches
from policies.kinds import lookup

if TYPE_CHECKING:
    from federation.client import ResourceClient

NAME = "apply"
HELP = "create or update objects from manifest files, directories or - (stdin)"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                        help="manifest file, directory (recursively) or - for stdin; repeatable")
    add_connection_args(parser)


#: Kinds others refer to go first, so one ``apply -f DIR`` of a whole setup works in any file order
#: (a Job is rejected while its Queue is missing; a JobFlow needs its templates). Lower goes first;
#: unlisted kinds (workloads) last; the order of the files is kept within a rank.
APPLY_ORDER = {
    "Namespace": 0,
    "Queue": 1, "PriorityClass": 1, "ConfigMap": 1,
    "Cluster": 2, "PropagationPolicy": 2, "ClusterPropagationPolicy": 2,
    "OverridePolicy": 2, "ClusterOverridePolicy": 2, "JobTemplate": 2,
}
WORKLOAD_RANK = 3


def apply_rank(manifest: dict[str, Any]) -> int:
    return APPLY_ORDER.get(str(manifest.get("kind")), WORKLOAD_RANK)


def load_documents(paths: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Wire dicts of every document in apply order, and error texts (bad documents, unknown kinds,
    documents without a name)."""
    from policies.codec import decode_paths

    result = decode_paths(paths)
    errors = [e.describe() for e in result.errors]
    if not errors:  # admission offline as well, so one invalid document stops the whole apply
        from policies.codec import admit_all

        errors = [e.describe() for e in admit_all(result).errors]
    for decoded in result.objects:
        meta = decoded.obj.to_wire().get("metadata") or {}
        if not meta.get("name"):  # validate accepts such fragments; an object to store needs a name
            errors.append(f"{decoded.origin}: {decoded.obj.to_wire().get('kind')}: metadata.name: "
                          "required: an object needs a name to be created or updated")
    for warning in result.warnings:
        print(f"warning: skipped {warning.describe()}", file=sys.stderr)
    return sorted((d.obj.to_wire() for d in result.objects), key=apply_rank), errors


async def apply_one(rc: "ResourceClient", manifest: dict[str, Any], args: argparse.Namespace) -> str:
    from kubernetes_asyncio import client as k8s

    info = lookup(manifest["apiVersion"], manifest["kind"])
    body = copy.deepcopy(manifest)
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    ns = namespace_for(info, args, body)
    if ns:
        meta["namespace"] = ns
    applied = json.dumps({k: v for k, v in body.items()}, sort_keys=True, separators=(",", ":"))
    meta.setdefault("annotations", {})[LAST_APPLIED] = applied
    name = meta.get("name", "")
    ref = f"{singular_ref(info)}/{name}"
    try:
        live = await rc.get(info, name, ns)
    except k8s.ApiException as exc:
        if exc.status != 404:
            raise
        await rc.create(info, body, ns)
        return f"{ref} created"
    last_text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    last = json.loads(last_text) if last_text else {}
    patch = patches.merge_diff(last, body)
    patch.pop("apiVersion", None)
    patch.pop("kind", None)
    patched = await rc.patch(info, name, patch, ns)
    same = patched["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    return f"{ref} {'unchanged' if same else 'configured'}"


def run(args: argparse.Namespace) -> int:
    manifests, errors = load_documents(args.filename)
    if errors:
        for text in errors:
            print(f"error: {text}", file=sys.stderr)
        print("error: nothing applied: fix the documents above first", file=sys.stderr)
        return 1
    if not manifests:
        print("error: no objects passed to apply", file=sys.stderr)
        return 1

    async def body(rc: "ResourceClient") -> int:
        from kubernetes_asyncio import client as k8s

        failed = 0
        for manifest in manifests:
            try:
                print(await apply_one(rc, manifest, args), flush=True)
            except k8s.ApiException as exc:
                failed += 1
                print(server_error(exc), file=sys.stderr)
        return 1 if failed else 0

    return run_with_client(args, body)
