"""``caldera logs JOB [--task T --index I] [-f]``: the logs of a job's ranks, wherever they run.

The job's pods are read from the federation's member view (``GET /api/v1/namespaces/NS/pods``
with the Volcano labels ``volcano.sh/job-name``, ``volcano.sh/task-spec``, ``volcano.sh/task-index``);
each log comes through ``pods/NAME/log``, which the pod's agent ships on request (docs/protocol.md
"Member pods"). One pod: its log as is. Several: each under a ``==> ns/pod (cluster, node) <==``
header, or, with ``-f``, followed together with every line prefixed ``[pod]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from federation.cli.common import add_connection_args, run_with_client

NAME = "logs"
HELP = "print (or follow) the logs of a job's pods, from whichever member cluster runs them"
CACHED_FROM = "resource.karmada.io/cached-from-cluster"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the Volcano Job (or the Job a PyTorchJob/VCJob became)")
    parser.add_argument("--task", default=None, help="only this task's pods (e.g. worker)")
    parser.add_argument("--index", type=int, default=None, help="only the pod of this global task index (needs --task)")
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until the pods end")
    parser.add_argument("--tail", type=int, default=None, help="only the last N lines of each log")
    parser.add_argument("-C", "--cluster", default=None,
                        help="only the copies this member cluster reports (during a failover: the other copy), "
                             "through Karmada's cluster proxy path")
    add_connection_args(parser)


def _selector(args: argparse.Namespace) -> str:
    terms = [f"volcano.sh/job-name={args.job}"]
    if args.task:
        terms.append(f"volcano.sh/task-spec={args.task}")
    if args.index is not None:
        terms.append(f"volcano.sh/task-index={args.index}")
    return ",".join(terms)


def _cluster_root(cluster: str) -> str:
    return f"/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy/api/v1"


def _matches(pod: dict[str, Any], args: argparse.Namespace) -> bool:
    """The label selector, applied here: the cluster proxy path lists one member's copies unfiltered."""
    labels = pod["metadata"].get("labels") or {}
    wanted = dict(term.split("=", 1) for term in _selector(args).split(","))
    return all(labels.get(key) == value for key, value in wanted.items())


def _index(pod: dict[str, Any]) -> tuple[str, int, str]:
    labels = pod["metadata"].get("labels") or {}
    raw = str(labels.get("volcano.sh/task-index", ""))
    return str(labels.get("volcano.sh/task-spec", "")), int(raw) if raw.isdigit() else -1, pod["metadata"]["name"]


def _header(pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    cluster = (meta.get("annotations") or {}).get(CACHED_FROM, "?")
    node = (pod.get("spec") or {}).get("nodeName") or "<none>"
    return f"==> {meta['namespace']}/{meta['name']} (cluster {cluster}, node {node}) <=="


def run(args: argparse.Namespace) -> int:
    if args.index is not None and not args.task:
        print("error: --index needs --task (indices are counted per task)", file=sys.stderr)
        return 2
    from kubernetes_asyncio import client as k8s

    from federation.client import ResourceClient
    from policies.kinds import lookup

    pods_info = lookup("v1", "Pod")

    async def body(rc: ResourceClient) -> int:
        namespace = args.namespace or "default"
        if args.cluster:  # one member's copies: .../clusters/C/proxy/api/v1/namespaces/NS/pods
            listing = await rc._call("GET", f"{_cluster_root(args.cluster)}/namespaces/{namespace}/pods",
                                     query=[("labelSelector", _selector(args))])
            listing["items"] = [p for p in listing.get("items") or [] if _matches(p, args)]
        else:
            listing = await rc.list(pods_info, namespace, label_selector=_selector(args))
        # a failover can leave copies of one name in two clusters: the pod's GET (and its log) is the current one
        pods = sorted({p["metadata"]["name"]: p for p in listing.get("items") or []}.values(), key=_index)
        if not pods:
            what = f"job {namespace}/{args.job}" + (f" task {args.task}" if args.task else "") + (
                f" index {args.index}" if args.index is not None else "")
            print(f"error: no pods of {what} are reported by any member cluster", file=sys.stderr)
            return 1
        core = k8s.CoreV1Api(rc.api)
        if args.follow and len(pods) > 1:
            await asyncio.gather(*(_stream(core, p, args, prefix=f"[{p['metadata']['name']}] ") for p in pods))
            return 0
        for pod in pods:
            if len(pods) > 1:
                print(_header(pod), flush=True)
            await _stream(core, pod, args)
        return 0

    return run_with_client(args, body)


async def _stream(core: Any, pod: dict[str, Any], args: argparse.Namespace, prefix: str = "") -> None:
    meta = pod["metadata"]
    options: dict[str, Any] = {"follow": args.follow, "_preload_content": False}
    if args.tail is not None:
        options["tail_lines"] = args.tail
    if args.cluster:
        query = [("follow", "true")] if args.follow else []
        query += [("tailLines", str(args.tail))] if args.tail is not None else []
        response = await core.api_client.call_api(
            f"{_cluster_root(args.cluster)}/namespaces/{meta['namespace']}/pods/{meta['name']}/log", "GET", {}, query,
            {"Accept": "text/plain"}, auth_settings=["BearerToken"], _preload_content=False)
        response = response[0] if isinstance(response, tuple) else response
    else:
        response = await core.read_namespaced_pod_log(meta["name"], meta["namespace"], **options)
    try:
        pending = b""
        async for chunk in response.content.iter_any():
            if not prefix:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                sys.stdout.buffer.write(prefix.encode() + line + b"\n")
            sys.stdout.flush()
        if pending:
            sys.stdout.buffer.write(prefix.encode() + pending + b"\n")
    finally:
        response.release()
