"""``caldera agent`` as a real process: SIGKILL mid-job, restart, no duplicated pod; SIGTERM stops it.

The federation API server (and, for the kube gateway, a member-mode API server) run in the
test process; the agent is ``python -m member_agent agent ...``, as ``caldera demo`` runs it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, Optional

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from live_support import (
    Federation,
    eventually,
    job_phase,
    job_state,
    job_work,
    small_cluster,
    write_kubeconfig,
)

from federation.apiserver.server import ApiServer, ServerConfig

pytestmark = pytest.mark.slow
NS = "karmada-es-cluster-a"
REPO = Path(__file__).resolve().parents[2]


class AgentProcess:
    def __init__(self, args: list[str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self.proc: Optional[asyncio.subprocess.Process] = None
        self.url = ""

    async def start(self) -> "AgentProcess":
        with open(self.log_path, "ab") as log:  # the child keeps its own descriptor
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "member_agent", "agent", *self.args, "--listen", "127.0.0.1:0",
                stdout=asyncio.subprocess.PIPE, stderr=log, cwd=str(REPO), env=dict(os.environ, PYTHONUNBUFFERED="1"))
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        match = re.search(rb"listening on (http://\S+)", line)
        assert match, f"agent did not start: {line!r}; log: {self.log_path.read_text()[-2000:]}"
        self.url = match.group(1).decode()
        return self

    async def status(self) -> dict[str, Any]:
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession() as session, session.get(f"{self.url}/status", timeout=timeout) as response:
            return await response.json()

    async def get(self, path: str) -> str:
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession() as session, session.get(f"{self.url}{path}", timeout=timeout) as response:
            assert response.status == 200, (path, response.status)
            return await response.text()

    async def kill(self, sig: int = signal.SIGKILL) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return await asyncio.wait_for(self.proc.wait(), 20)

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


@pytest.fixture
async def federation_server(tmp_path):
    async with (ApiServer(ServerConfig(data_dir=tmp_path / "fed")) as server,
                server.api_client() as api_client):
        yield server, Federation(api_client)


def common_args(kubeconfig: str) -> list[str]:
    return ["--cluster", "cluster-a", "--kubeconfig", kubeconfig, "--schedule-period", "0.2",
            "--lease-period", "1", "--status-period", "0.5", "--log-level", "INFO"]


async def test_sim_agent_survives_sigkill_and_stops_on_sigterm(federation_server, tmp_path) -> None:
    server, federation = federation_server
    kubeconfig = write_kubeconfig(server, "agent:cluster-a", tmp_path / "agent.kubeconfig")
    args = common_args(kubeconfig) + ["--sim", str(REPO / "examples/clusters/cluster-a.yaml"), "--speed", "20",
                                      "--start-delay", "0.5"]
    first = await AgentProcess(args, tmp_path / "agent.log").start()
    try:
        await federation.create_work(job_work("long", replicas=4, cpu="4", duration="80s"))  # ~4 s real

        async def phase(expected: str):
            status = await federation.work_status(NS, "team.long")
            return status if job_phase(status) == expected else None
        await eventually(lambda: phase("Running"), what="Running before the kill")
        assert (await first.status())["pods"] == 4
        assert await first.kill() == -signal.SIGKILL
        second = await AgentProcess(args, tmp_path / "agent.log").start()
        try:
            peak = 0

            async def completed():
                nonlocal peak
                document = await second.status()
                peak = max(peak, document["pods"])
                return await phase("Completed")
            status = await eventually(completed, timeout=40, what="Completed after the restart")
            job = job_state(status)
            assert peak <= 4 and job["succeeded"] == 4 and job.get("failed", 0) == 0
            assert job.get("retryCount", 0) == 0  # resumed, not restarted by a policy
            metrics = await second.get("/metrics")
            for line in ('volcano_job_completed_phase_count{job_name="team/long",queue_name="default"} 1.0',
                         'volcano_schedule_attempts_total{result="scheduled"} 4.0',
                         'volcano_queue_allocated_milli_cpu{queue_name="default"}'):
                assert line in metrics, line
            for name in ("volcano_e2e_scheduling_latency_milliseconds_count", "volcano_e2e_job_scheduling_duration",
                         "volcano_e2e_job_scheduling_last_time", "volcano_queue_deserved_memory_bytes",
                         "volcano_queue_pod_group_running_count", "volcano_unschedule_job_count",
                         "volcano_controller_job_to_pod_creation_latency_milliseconds_count"):
                assert name in metrics, name
            assert await second.get("/healthz") == "ok"
            assert await second.kill(signal.SIGTERM) == 0
            assert "agent cluster-a stopped" in (tmp_path / "agent.log").read_text()
        finally:
            await second.stop()
    finally:
        await first.stop()


async def test_kube_agent_restart_keeps_its_pods(federation_server, tmp_path) -> None:
    """Pods live in a member API server: after a SIGKILL the new agent adopts them (same uids)."""
    server, federation = federation_server
    kubeconfig = write_kubeconfig(server, "agent:cluster-a", tmp_path / "agent.kubeconfig")
    async with ApiServer(ServerConfig(data_dir=tmp_path / "member", member_mode=True)) as member:
        member_kubeconfig = write_kubeconfig(member, "admin", tmp_path / "member.kubeconfig")
        async with member.api_client() as member_client:
            core = k8s.CoreV1Api(member_client)
            for node in small_cluster():
                await core.create_node(node)
            args = common_args(kubeconfig) + ["--member-kubeconfig", member_kubeconfig]
            first = await AgentProcess(args, tmp_path / "agent.log").start()
            second: Optional[AgentProcess] = None
            try:
                await federation.create_work(job_work("kjob", replicas=3, cpu="2"))

                async def bound_pods() -> Optional[dict[str, str]]:
                    pods = (await core.list_namespaced_pod("team")).items
                    if len(pods) == 3 and all(p.spec.node_name for p in pods):
                        return {p.metadata.name: p.metadata.uid for p in pods}
                    return None
                uids = await eventually(bound_pods, what="3 pods bound in the member cluster")
                assert sorted(uids) == ["kjob-worker-0", "kjob-worker-1", "kjob-worker-2"]
                await kubelet(core, "Running")

                async def phase(expected: str):
                    status = await federation.work_status(NS, "team.kjob")
                    return status if job_phase(status) == expected else None
                await eventually(lambda: phase("Running"), what="Running")
                await first.kill()
                second = await AgentProcess(args, tmp_path / "agent.log").start()
                await eventually(lambda: _cycles_after_sync(second), what="restarted agent scheduling")
                pods = (await core.list_namespaced_pod("team")).items
                assert {p.metadata.name: p.metadata.uid for p in pods} == uids
                await kubelet(core, "Succeeded")
                status = await eventually(lambda: phase("Completed"), what="Completed after the restart")
                assert job_state(status)["succeeded"] == 3
                assert {p.metadata.uid for p in (await core.list_namespaced_pod("team")).items} <= set(uids.values())
            finally:
                await first.stop()
                if second is not None:
                    await second.stop()


async def _cycles_after_sync(agent: AgentProcess) -> bool:
    document = await agent.status()
    work = document["works"].get(f"{NS}/team.kjob") or {}
    return bool(document["synced"] and document["lastCycle"] and work.get("podGroupPhase") == "Running")


async def kubelet(core: k8s.CoreV1Api, phase: str) -> None:
    """Play the member's kubelet: every pod in ``team`` goes to ``phase``."""
    for pod in (await core.list_namespaced_pod("team")).items:
        state = {"running": {}} if phase == "Running" else {"terminated": {"exitCode": 0, "reason": "Completed"}}
        body = {"status": {"phase": phase, "containerStatuses": [
            {"name": "main", "ready": phase == "Running", "restartCount": 0, "image": "busybox", "imageID": "",
             "state": state}], "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]}}
        await core.patch_namespaced_pod_status(pod.metadata.name, "team", body)
