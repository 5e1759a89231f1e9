"""How fast the federation serves member pods (issue 36): N pods reported by C clusters, then listed.

    python bench/member_pods.py                      # 10,000 pods across 20 clusters
    python bench/member_pods.py --pods 50000 --clusters 50 --rounds 5

Starts an in-process ``caldera serve`` (plain HTTP, no controllers, fresh data dir), fills the store
with the raw copies agents write (``karmada-es-<cluster>/<ns>.<pod>``, a realistic Volcano worker pod
each), then prints, per request shape, the best and median wall time of ``--rounds`` requests made
over HTTP by a client in its own process, until the answer's last byte is read (its JSON parse left out): ``GET /api/v1/pods`` (JSON), the same as a table (what
``kubectl get pods -A -o wide`` asks for), kubectl's paging (``limit=500`` pages until done), one
namespace, a label selector, the karmada-search proxy path, and a GET by name. Also how long agents'
reports take through the API (``--report`` pods created over HTTP by 20 concurrent writers).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation.apiserver.server import ApiServer, ServerConfig  # noqa: E402

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def worker_pod(cluster: str, namespace: str, job: str, index: int) -> dict[str, Any]:
    name = f"{job}-worker-{index}"
    env = [{"name": "VC_TASK_INDEX", "value": str(index)}, {"name": "MASTER_ADDR", "value": f"{job}-master-0.{job}"},
           {"name": "WORLD_SIZE", "value": "100"}, {"name": "RANK", "value": str(index)}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{namespace}.{name}", "namespace": f"karmada-es-{cluster}", "uid": str(uuid.uuid4()),
                         "creationTimestamp": "2026-12-05T10:00:00Z",
                         "labels": {"volcano.sh/job-name": job, "volcano.sh/task-spec": "worker",
                                    "volcano.sh/task-index": str(index), "volcano.sh/job-namespace": namespace,
                                    "caldera.io/placement-generation": "1", "caldera.io/work-uid": "w"},
                         "annotations": {"resource.karmada.io/cached-from-cluster": cluster,
                                         "scheduling.k8s.io/group-name": f"{job}-pg", "volcano.sh/task-spec": "worker",
                                         "volcano.sh/job-name": job, "volcano.sh/gpu-index": "0,1,2,3,4,5,6,7"}},
            "spec": {"schedulerName": "volcano", "nodeName": f"{cluster}-node-{index % 64}", "restartPolicy": "OnFailure",
                     "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.01-py3", "env": env,
                                     "command": ["torchrun", "--nproc_per_node=8", "train.py"],
                                     "resources": {"requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
                                                   "limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "10.0.0.1",
                       "startTime": "2026-12-05T10:00:05Z"}}


async def fill(server: ApiServer, pods: int, clusters: int) -> None:
    store = server.store
    registry = server.state.registry  # type: ignore[union-attr]
    for c in range(clusters):
        await registry.ensure_namespace(f"karmada-es-c{c:02d}")
    for i in range(pods):
        cluster = f"c{i % clusters:02d}"
        job = f"train-{i // 100}"
        await store.create("pods", worker_pod(cluster, f"team-{i // 1000}", job, i % 100))
    await store.wait_durable(store.rv)


async def timed(session: aiohttp.ClientSession, url: str, headers: dict[str, str], rounds: int,
                paged: bool = False) -> tuple[float, float, int]:
    """Best and median seconds until the last byte of the answer (every page) is read, and the items.
    The client's JSON parse is left out of the time (it is the client's cost, not the server's) except
    for reading each page's continue token."""
    times = []
    count = 0
    for _ in range(rounds):
        elapsed = 0.0
        count, token = 0, ""
        while True:
            started = time.perf_counter()
            async with session.get(url + (f"&continue={token}" if token else ""), headers=headers) as resp:
                body = await resp.read()
                assert resp.status == 200, body[:300]
            elapsed += time.perf_counter() - started
            doc = orjson.loads(body)
            listed = doc.get("items", doc.get("rows"))
            count += len(listed) if isinstance(listed, list) else 1
            token = (doc.get("metadata") or {}).get("continue", "") if paged else ""
            if not token:
                break
        times.append(elapsed)
    return min(times), statistics.median(times), count


async def report(server: ApiServer, pods: int) -> float:
    """Seconds for ``pods`` agent reports (creates) over HTTP by 20 concurrent writers."""
    token = server.mint_token("agent:r00")
    headers = {"Authorization": f"Bearer {token}"}
    await server.state.registry.ensure_namespace("karmada-es-r00")  # type: ignore[union-attr]
    queue = list(range(pods))

    async def writer(session: aiohttp.ClientSession) -> None:
        while queue:
            i = queue.pop()
            body = worker_pod("r00", "team-r", f"r-{i // 100}", i % 100)
            for key in ("uid", "creationTimestamp"):
                body["metadata"].pop(key)
            async with session.post(server.url + "/api/v1/namespaces/karmada-es-r00/pods", json=body,
                                    headers=headers) as resp:
                assert resp.status == 201, await resp.text()

    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(writer(session) for _ in range(20)))
    return time.perf_counter() - started


async def client(args: argparse.Namespace) -> None:
    headers = {"Authorization": f"Bearer {args.token}"}
    proxy = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy"
    shapes = [
        ("GET /api/v1/pods (JSON)", "/api/v1/pods?", {}, False),
        ("GET /api/v1/pods as Table (kubectl get pods -A -o wide, one page)", "/api/v1/pods?", {"Accept": TABLE},
         False),
        ("kubectl paging: limit=500 Table pages until done", "/api/v1/pods?limit=500", {"Accept": TABLE}, True),
        ("one namespace (1,000 pods)", "/api/v1/namespaces/team-3/pods?", {}, False),
        ("label selector volcano.sh/job-name=train-42", "/api/v1/pods?labelSelector=volcano.sh/job-name=train-42",
         {}, False),
        ("karmada-search proxy path", proxy + "/api/v1/pods?", {}, False),
        ("GET one pod by name", "/api/v1/namespaces/team-3/pods/train-31-worker-7?", {}, False),
    ]
    print(f"{'request':<70} {'best':>8} {'median':>8} {'items':>7}")
    async with aiohttp.ClientSession() as session:
        for label, path, extra, paged in shapes:
            best, median, count = await timed(session, args.client + path, {**headers, **extra}, args.rounds, paged)
            print(f"{label:<70} {best:7.3f}s {median:7.3f}s {count:>7}", flush=True)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with ApiServer(ServerConfig(data_dir=Path(tmp))) as server:
            started = time.perf_counter()
            await fill(server, args.pods, args.clusters)
            print(f"{args.pods} member pods from {args.clusters} clusters stored in "
                  f"{time.perf_counter() - started:.1f} s (in-process, store only)")
            # the client runs in a process of its own, as kubectl does: the server keeps this event loop
            client = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--client", server.url, "--token", server.admin_token,
                "--rounds", str(args.rounds))
            await client.wait()
            if args.report:
                seconds = await report(server, args.report)
                print(f"agent reports: {args.report} pod creates over HTTP, 20 writers: {seconds:.1f} s "
                      f"({args.report / seconds:.0f}/s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--clusters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--report", type=int, default=1000, help="agent report creates to time (0: skip)")
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)  # the timing client's own process
    parser.add_argument("--token", default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    asyncio.run(client(arguments) if arguments.client else main(arguments))
