"""``caldera get KIND [NAME...] [-o wide|yaml|json|name] [-n NS|-A] [-l SELECTOR]``.

Tables come from the server (``as=Table``), so ``caldera get`` and ``kubectl get`` show the
same columns: Jobs STATUS, MINAVAILABLE, RUNNING, CLUSTERS, AGE; Clusters READY,
GPUS FREE/TOTAL, AGE; Queues WEIGHT, STATE, AGE.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

import yaml

from federation.cli.common import add_connection_args, kind_from_name, run_with_client, singular_ref
from policies.kinds import KindInfo

if TYPE_CHECKING:
    from federation.client import ResourceClient

NAME = "get"
HELP = "list objects of a kind (vcjob, queue, pp, cpp, cluster, rb, work, pg, jobflow, ...) or show some"
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", help="kind, plural, short name (vcjob, pp, ...) or plural.group")
    parser.add_argument("names", nargs="*", help="object names (default: all)")
    parser.add_argument("-o", "--output", choices=["wide", "yaml", "json", "name"], default=None)
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    parser.add_argument("-l", "--selector", default=None, help="label selector (a=b,c!=d,e in (x,y))")
    parser.add_argument("--field-selector", default=None, help="field selector (metadata.name=x, status.phase=Running)")
    add_connection_args(parser)


async def fetch_table(rc: "ResourceClient", info: KindInfo, namespace: str | None, names: list[str],
                      selector: str | None, field_selector: str | None) -> dict[str, Any]:
    from federation.client import collection_path, object_path

    query: list[tuple[str, str]] = []
    if selector:
        query.append(("labelSelector", selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    headers = {"Accept": TABLE_ACCEPT}
    if not names:
        result: dict[str, Any] = await rc.api.call_api(
            collection_path(info, namespace), "GET", {}, query, headers,
            response_types_map={200: "object"}, auth_settings=["BearerToken"], _return_http_data_only=True,
            _request_timeout=rc.timeout)
        return result
    merged: dict[str, Any] | None = None
    for name in names:
        one: dict[str, Any] = await rc.api.call_api(
            object_path(info, name, namespace), "GET", {}, [], headers,
            response_types_map={200: "object"}, auth_settings=["BearerToken"], _return_http_data_only=True,
            _request_timeout=rc.timeout)
        if merged is None:
            merged = one
        else:
            merged["rows"].extend(one["rows"])
    assert merged is not None
    return merged


def render_table(table: dict[str, Any], wide: bool, with_namespace: bool) -> str:
    columns = [(i, c) for i, c in enumerate(table["columnDefinitions"]) if wide or not c.get("priority")]
    headers = [c["name"].upper() for _, c in columns]
    rows = []
    for row in table.get("rows", []):
        cells = ["" if row["cells"][i] is None else str(row["cells"][i]) for i, _ in columns]
        if with_namespace:
            cells.insert(0, ((row.get("object") or {}).get("metadata") or {}).get("namespace", ""))
        rows.append(cells)
    if with_namespace:
        headers.insert(0, "NAMESPACE")
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
             for line in [headers, *rows]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    info = kind_from_name(args.kind)
    namespace = None if args.all_namespaces or not info.namespaced else (args.namespace or "default")
    if args.all_namespaces and args.names:
        print("error: a resource cannot be retrieved by name across all namespaces", file=sys.stderr)
        return 1

    async def body(rc: "ResourceClient") -> int:
        if args.output in ("yaml", "json", "name"):
            if args.names:
                items = [await rc.get(info, n, namespace) for n in args.names]
            else:
                listed = await rc.list(info, namespace, label_selector=args.selector,
                                       field_selector=args.field_selector)
                items = [dict(o, apiVersion=info.api_version, kind=info.kind) for o in listed["items"]]
            if args.output == "name":
                for obj in items:
                    print(f"{singular_ref(info)}/{obj['metadata']['name']}")
                return 0
            doc: Any = items[0] if len(items) == 1 and args.names else {"apiVersion": "v1", "kind": "List",
                                                                        "items": items}
            if args.output == "json":
                print(json.dumps(doc, indent=4, ensure_ascii=False))
            else:
                print(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), end="")
            return 0
        table = await fetch_table(rc, info, namespace, args.names, args.selector, args.field_selector)
        if not table.get("rows"):
            where = f" in {namespace} namespace" if namespace else ""
            print(f"No resources found{where}.", file=sys.stderr)
            return 0
        print(render_table(table, args.output == "wide", args.all_namespaces and info.namespaced))
        return 0

    return run_with_client(args, body)
