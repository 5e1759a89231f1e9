"""The highly available federation as real processes on loopback: a 3-member etcd, 3 ``caldera serve``
(controllers leader-elected), 2 sim agents that know every replica (``--server`` x3).

kill -9 the leading replica in the middle of a burst of Job creates spread over the replicas: every
acknowledged create exists afterwards, another replica leads within the lease duration + 5 s, every
Job is placed exactly once (one Work per cluster of its binding) and completes. Then one etcd
member is killed and writes go on. (Two of three down: tests/apiserver/test_etcd_quorum.py; a
paused leader: tests/controllers_fed/test_leader_fencing.py.) A bigger version: bench/ha.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from e2e.harness import AGENT_ARGS, JOB, WORK, apply, named, seed_clusters, seed_one
from federation.client import ResourceClient, api_client_from_dict
from federation.demo.processes import SERVE_LISTENING, ManagedProcess
from tests.etcd_process import EtcdCluster, free_port, require_etcd

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]
LEASE = ("15s", "10s", "2s")  # kube-controller-manager's defaults: lease duration, renew deadline, retry period
JOBS = 12


class HA:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.etcd = EtcdCluster(root / "etcd", size=3)
        self.serves: list[ManagedProcess] = []
        self.urls: list[str] = []
        self.agents: list[ManagedProcess] = []

    def serve_cmd(self, i: int, port: int) -> list[str]:
        import sys

        cmd = [sys.executable, "-m", "federation", "serve", "--plain-http", "--listen", f"127.0.0.1:{port}",
               "--data-dir", str(self.root / f"serve-{i}"), "--etcd-servers", ",".join(self.etcd.urls),
               "--leader-elect", "--leader-elect-identity", f"serve-{i}",
               "--leader-elect-lease-duration", LEASE[0], "--leader-elect-renew-deadline", LEASE[1],
               "--leader-elect-retry-period", LEASE[2], "--cluster-lease-grace", "20"]
        if i == 0:
            cmd += ["--agent-token", "cluster-a", "--agent-token", "cluster-b"]
        else:
            cmd += ["--token-file", str(self.root / "serve-0" / "tokens.csv")]
        return cmd

    def start(self) -> None:
        import sys

        require_etcd()
        self.etcd.start()
        for i in range(3):  # serve-0 writes the token file the other two read: it starts first
            port = free_port()
            proc = ManagedProcess(f"serve-{i}", self.serve_cmd(i, port), self.root / "logs" / f"serve-{i}.log").start()
            self.serves.append(proc)
            if i == 0:
                proc.wait_for(SERVE_LISTENING, 90)
        self.urls = [proc.wait_for(SERVE_LISTENING, 90).group(1) for proc in self.serves]
        for spec in seed_clusters():
            kubeconfig = self.root / "serve-0" / f"agent-{spec.name}.kubeconfig"
            servers = [a for url in self.urls for a in ("--server", url)]
            cmd = [sys.executable, "-m", "member_agent", "agent", "--cluster", spec.name, "--kubeconfig",
                   str(kubeconfig), *servers, "--sim", str(spec.sim_file), "--speed", "10", "--listen",
                   "127.0.0.1:0", *AGENT_ARGS]
            self.agents.append(ManagedProcess(f"agent-{spec.name}", cmd,
                                              self.root / "logs" / f"agent-{spec.name}.log").start())

    def stop(self) -> None:
        import signal

        everything = [p for p in [*self.agents, *self.serves] if p.alive]
        for proc in everything:  # signal all at once, then wait: they shut down in parallel
            with contextlib.suppress(Exception):
                proc._signal_group(signal.SIGTERM)
        for proc in [*self.agents, *self.serves]:
            with contextlib.suppress(Exception):
                proc.stop(10)
        self.etcd.stop()

    def client(self, i: int) -> Any:
        config = yaml.safe_load((self.root / "serve-0" / "admin.kubeconfig").read_text())
        config["clusters"][0]["cluster"]["server"] = self.urls[i]
        return api_client_from_dict(config)


@pytest.fixture
async def ha(tmp_path: Path) -> AsyncIterator[HA]:
    system = HA(tmp_path)
    try:
        system.start()
        yield system
    finally:
        system.stop()


async def _leader(rc: ResourceClient) -> str:
    from policies.kinds import lookup

    try:
        lease = await rc.get(lookup("coordination.k8s.io/v1", "Lease"), "caldera-controllers", "caldera-system")
    except ApiException:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def _until(probe: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ApiException, OSError, asyncio.TimeoutError):
            found = await probe()
            if found:
                return found
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def test_kill_the_leading_replica_mid_burst(ha: HA) -> None:
    clients = [ha.client(i) for i in range(3)]
    rcs = [ResourceClient(await c.__aenter__()) for c in clients]
    try:
        leader = await _until(lambda: _leader(rcs[0]), 60, "a controllers leader")
        index = int(leader.rsplit("-", 1)[1])
        alive = [i for i in range(3) if i != index]
        await apply(rcs[alive[0]], seed_one("queue-ai-training.yaml"),
                    seed_one("propagationpolicy-volcano-job-policy.yaml"))
        base = seed_one("job-pytorch-dist-training.yaml")
        acked: set[str] = set()
        errors: list[str] = []

        async def create(n: int) -> None:
            name = f"burst-{n}"
            for attempt in range(6):  # a create that failed on the killed replica is retried elsewhere
                rc = rcs[(n + attempt) % 3] if attempt == 0 else rcs[alive[attempt % 2]]
                try:
                    await rc.create(JOB, named(base, name, seconds=4), "default")
                    acked.add(name)
                    return
                except ApiException as exc:
                    if exc.status == 409:
                        acked.add(name)
                        return
                    errors.append(f"{name}: {exc.status} {exc.body}")
                    await asyncio.sleep(0.2)
                except Exception as exc:  # noqa: BLE001 (connection refused/reset by the killed replica)
                    errors.append(f"{name}: {exc!r}")
                    await asyncio.sleep(0.2)

        burst = [asyncio.ensure_future(create(n)) for n in range(JOBS)]
        try:
            await _until(lambda: asyncio.sleep(0, len(acked) >= JOBS // 3), 60, "a third of the burst acknowledged")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; errors: {errors[:3]}") from None
        killed_at = time.monotonic()
        ha.serves[index].kill()
        await asyncio.gather(*burst)
        new_leader = await _until(lambda: _leader_other(rcs[alive[0]], leader), 60, "a new controllers leader")
        took = time.monotonic() - killed_at
        assert new_leader != leader and took <= 15 + 5, f"new leader after {took:.1f}s"
        survivor = rcs[alive[0]]
        listed = await survivor.list(JOB, "default")
        names = {o["metadata"]["name"] for o in listed["items"]}
        assert acked <= names, f"acknowledged but missing: {acked - names}"

        async def all_completed() -> bool:
            jobs = (await survivor.list(JOB, "default"))["items"]
            phases = {o["metadata"]["name"]: ((o.get("status") or {}).get("state") or {}).get("phase")
                      for o in jobs if o["metadata"]["name"].startswith("burst-")}
            return len(phases) == JOBS and all(p == "Completed" for p in phases.values())

        await _until(all_completed, 150, "every burst Job Completed")
        from policies.kinds import lookup

        bindings = {b["metadata"]["name"]: b for b in (await survivor.list(
            lookup("work.karmada.io/v1alpha2", "ResourceBinding"), "default"))["items"]}
        per_job: dict[str, set[str]] = {}
        generations: dict[str, set[int]] = {}
        for work in (await survivor.list(WORK))["items"]:
            job = (work["metadata"].get("labels") or {}).get("caldera.io/job", "")
            per_job.setdefault(job, set()).add(work["metadata"]["namespace"].removeprefix("karmada-es-"))
            generations.setdefault(job, set()).add(work["spec"]["placement"]["generation"])
        for n in range(JOBS):
            job = f"default.burst-{n}"
            binding = bindings.get(f"burst-{n}-job") or bindings.get(f"burst-{n}") or {}
            placed = {c["name"] for c in (binding.get("spec") or {}).get("clusters") or []}
            assert per_job.get(job) == placed, f"{job}: Works on {per_job.get(job)}, binding says {placed}"
            assert len(generations[job]) == 1, f"{job}: Works of several placements {generations[job]}"
        ha.etcd.members[0].kill()  # one etcd member down: writes go on
        await _until(lambda: _create_ok(survivor, named(base, "after-etcd-kill", seconds=1)), 30,
                     "a write with one etcd member down")
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)


async def _leader_other(rc: ResourceClient, old: str) -> str:
    now = await _leader(rc)
    return now if now and now != old else ""


async def _create_ok(rc: ResourceClient, body: dict[str, Any]) -> bool:
    try:
        await rc.create(JOB, body, "default")
    except ApiException as exc:
        return exc.status == 409
    return True
