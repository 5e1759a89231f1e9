"""API server throughput: durable Job creates/s and watch fan-out events/s.

    python bench/apiserver.py [--creates 600] [--clients 1,10,50] [--watchers 100] [--events 400]
    python bench/apiserver.py --backend etcd      # etcd figures printed beside SQLite's

With ``--backend etcd`` a one-member etcd (fsync on, a temp data dir, a free loopback port) is started
too, and the same rounds run against ``caldera serve --etcd-servers`` after the SQLite ones.

Starts ``caldera serve`` (plain HTTP, no controllers, a fresh data dir: SQLite WAL with
``synchronous=FULL``, every 2xx committed) as a subprocess, then, from this process:

* **creates/s**: Volcano Jobs (the seed's ``gpu-training``) created through kubernetes-asyncio
  ``CustomObjectsApi`` by 1, 10 and 50 concurrent clients (one ApiClient each), with latency
  percentiles;
* **watch fan-out**: 100 watches on Jobs (raw HTTP streams, so the figure is the server's, not
  the client library's decoder); a writer creates ``--events`` Jobs and the figure is events
  delivered to all watchers per second, from the first create to the last watcher's last event.

Targets (issue 8): >= 500 durable creates/s, >= 10,000 watch events/s. Two shared cores: noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from federation.client import api_client_from_dict  # noqa: E402

SEED_JOB: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "seed" / "job-gpu-training.yaml").read_text())
GROUP, VERSION, PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
JOBS_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}"


def job(name: str) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(orjson.dumps(SEED_JOB))
    body["metadata"] = {"name": name}
    body["spec"]["queue"] = "default"
    return body


class Server:
    """``caldera serve`` in a subprocess on a free port."""

    def __init__(self, data_dir: Path, profile: Path | None, extra: list[str] | None = None) -> None:
        cmd = [sys.executable]
        if profile is not None:
            cmd += ["-m", "cProfile", "-o", str(profile)]
            cmd += [str(ROOT / "federation" / "__main__.py")]
        else:
            cmd += ["-m", "federation"]
        cmd += ["serve", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0", "--plain-http",
                "--no-controllers", *(extra or [])]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            match = re.search(r"listening on (\S+)", line)
            if match:
                self.url = match.group(1)
                break
        else:
            raise RuntimeError("caldera serve did not start")
        self.kubeconfig: dict[str, Any] = yaml.safe_load((data_dir / "admin.kubeconfig").read_text())
        self.token = self.kubeconfig["users"][0]["user"]["token"]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


async def creates(server: Server, clients: int, total: int, prefix: str) -> tuple[float, list[float]]:
    """(creates per second, per-request latencies) for ``total`` Jobs over ``clients`` clients."""
    from kubernetes_asyncio import client as k8s

    api_clients = [api_client_from_dict(server.kubeconfig) for _ in range(clients)]
    latencies: list[float] = []
    counter = iter(range(total))

    async def worker(api: Any) -> None:
        custom = k8s.CustomObjectsApi(api)
        for i in counter:
            started = time.perf_counter()
            await custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job(f"{prefix}-{i}"),
                                                         _request_timeout=60)
            latencies.append(time.perf_counter() - started)

    # warm the connections (and the server's first-request paths) before timing
    for api in api_clients:
        await k8s.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, limit=1)
    started = time.perf_counter()
    await asyncio.gather(*(worker(api) for api in api_clients))
    elapsed = time.perf_counter() - started
    for api in api_clients:
        await api.close()
    return total / elapsed, latencies


async def commit_counts(server: Server) -> tuple[float, float]:
    """(transactions, object writes) committed so far, from the server's /metrics."""
    async with aiohttp.ClientSession() as session, session.get(server.url + "/metrics") as resp:
        text = await resp.text()
    values = dict(re.findall(r"^(apiserver_storage_\w+) (\S+)$", text, re.M))
    return float(values.get("apiserver_storage_commits", 0)), float(values.get("apiserver_storage_committed_writes", 0))


async def fan_out(server: Server, watchers: int, events: int) -> tuple[float, float]:
    """(events delivered per second to all watchers, creates per second of the writer)."""
    headers = {"Authorization": f"Bearer {server.token}"}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        async with session.get(server.url + JOBS_PATH + "?limit=1", headers=headers) as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        ready = 0
        all_ready = asyncio.Event()
        done_at: list[float] = []

        async def watch() -> None:
            nonlocal ready
            url = f"{server.url}{JOBS_PATH}?watch=true&resourceVersion={rv}"
            async with session.get(url, headers=headers) as resp:
                ready += 1
                if ready == watchers:
                    all_ready.set()
                seen = 0
                async for chunk in resp.content.iter_any():
                    seen += chunk.count(b"\n")
                    if seen >= events:
                        done_at.append(time.perf_counter())
                        return

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.wait_for(all_ready.wait(), 60)
        await asyncio.sleep(0.5)  # the server registers a watcher just after answering its headers
        write_headers = dict(headers, **{"Content-Type": "application/json"})
        counter = iter(range(events))

        async def writer() -> None:
            for i in counter:
                async with session.post(server.url + JOBS_PATH, data=orjson.dumps(job(f"fan-{i}")),
                                        headers=write_headers) as resp:
                    assert resp.status == 201, await resp.text()

        started = time.perf_counter()
        await asyncio.gather(*(writer() for _ in range(10)))
        written = time.perf_counter() - started
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
        elapsed = max(done_at) - started
        return watchers * events / elapsed, events / written


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_backend(args: argparse.Namespace, backend: str, tmp: Path) -> dict[str, float]:
    """Every round against one backend; prints each line and returns the figures by name."""
    extra: list[str] = []
    cluster = None
    if backend == "etcd":
        from tests.etcd_process import EtcdCluster

        cluster = EtcdCluster(tmp / "etcd").start()
        extra = ["--etcd-servers", ",".join(cluster.urls), "--etcd-compaction-interval", "0"]
    figures: dict[str, float] = {}
    server = Server(tmp / f"data-{backend}", Path(args.profile) if args.profile else None, extra)
    try:
        where = f"etcd {cluster.urls[0]} (fsync on)" if cluster else "WAL, synchronous=FULL"
        print(f"[{backend}] caldera serve at {server.url}; durable store: {where}")
        for clients in [int(c) for c in args.clients.split(",")]:
            commits, writes = await commit_counts(server)
            rate, lat = await creates(server, clients, args.creates, f"c{clients}")
            commits2, writes2 = await commit_counts(server)
            batch = (writes2 - writes) / max(commits2 - commits, 1)
            figures[f"creates/s, {clients} clients"] = rate
            figures[f"p99 ms, {clients} clients"] = percentile(lat, 0.99) * 1e3
            print(f"[{backend}] creates  clients={clients:>3}  {args.creates} Jobs  {rate:8,.0f} creates/s  "
                  f"p50 {statistics.median(lat) * 1e3:6.1f} ms  p99 {percentile(lat, 0.99) * 1e3:6.1f} ms  "
                  f"{batch:5.1f} writes/commit")
        if args.watchers:
            delivered, written = await fan_out(server, args.watchers, args.events)
            figures[f"watch events/s, {args.watchers} watchers"] = delivered
            print(f"[{backend}] watch    watchers={args.watchers}  {args.events} events each  {delivered:8,.0f} "
                  f"events/s delivered  (writer {written:,.0f} creates/s)")
    finally:
        server.stop()
        if cluster is not None:
            cluster.stop()
    return figures


async def main_async(args: argparse.Namespace) -> None:
    backends = ["sqlite", "etcd"] if args.backend == "etcd" else ["sqlite"]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="caldera-bench-") as tmp:
        for backend in backends:
            results[backend] = await run_backend(args, backend, Path(tmp))
    if len(results) > 1:
        print(f"\n{'':34} {'sqlite':>10} {'etcd':>10} {'etcd/sqlite':>12}")
        for name, value in results["sqlite"].items():
            other = results["etcd"].get(name, 0.0)
            print(f"{name:34} {value:10,.1f} {other:10,.1f} {other / value if value else 0:12.2f}")
    if args.profile:
        import pstats

        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--creates", type=int, default=600, help="Jobs created per client-count round")
    parser.add_argument("--clients", default="1,10,50", help="comma-separated concurrent client counts")
    parser.add_argument("--watchers", type=int, default=100, help="concurrent watches (0 skips the fan-out)")
    parser.add_argument("--events", type=int, default=400, help="Jobs created while the watchers watch")
    parser.add_argument("--profile", default="", help="run the server under cProfile, write stats here")
    parser.add_argument("--backend", choices=["sqlite", "etcd"], default="sqlite",
                        help="etcd: also run every round on etcd and print the figures beside SQLite's")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
