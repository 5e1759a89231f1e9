"""The agent side of member pods: the reporter writes only what changed (and cleans up after a
restart), the sim kubelet's logs (start, rank, env, exit; tail, limit, follow)."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from member_agent.changes import Changes
from member_agent.cluster.gateway import NotFound
from member_agent.cluster.sim_logs import PodLogs, start_lines
from member_agent.member_report import MemberReporter
from tests.member_pods.builders import pod


@dataclass
class FakeFederation:
    """Records requests; holds the raw copies like the API server would (404 / 409 included)."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)

    async def request(self, what: str, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.log.append((method, path))
        base = path.removesuffix("/status")
        if method == "GET" and path.endswith(("/pods", "/podgroups")):
            return {"items": [o for p, o in self.objects.items() if p.rsplit("/", 1)[0] == path]}
        if method == "POST":
            key = f"{path}/{body['metadata']['name']}"
            if key in self.objects:
                raise RuntimeError("already exists")
            self.objects[key] = copy.deepcopy(body)
            return body
        if base not in self.objects:
            raise NotFound(path)
        if method == "DELETE":
            del self.objects[base]
        elif path.endswith("/status"):
            self.objects[base]["status"] = copy.deepcopy(body.get("status"))
        else:
            self.objects[base] = {**copy.deepcopy(body), "status": self.objects[base].get("status")}
        return {}

    def writes(self) -> list[tuple[str, str]]:
        done = [entry for entry in self.log if entry[0] != "GET"]
        self.log.clear()
        return done


def member_pod(name: str, phase: str, node: str = "n1") -> dict[str, Any]:
    body = pod(name, node, phase, 2)
    body["metadata"]["labels"]["caldera.io/work-uid"] = "w-1"
    body["metadata"]["uid"] = f"uid-{name}"
    return body


def fake_agent(pods: dict[str, dict[str, Any]], groups: list[dict[str, Any]]) -> Any:
    works = {f"w{i}": SimpleNamespace(podgroup=g, deleted=False,
                                      record=SimpleNamespace(uid="w-1", placement=SimpleNamespace(generation=2)))
             for i, g in enumerate(groups)}
    return SimpleNamespace(options=SimpleNamespace(cluster="b"), cache=SimpleNamespace(pods=pods), works=works,
                           changes=Changes())


POD_PATH = "/api/v1/namespaces/karmada-es-b/pods"


async def test_the_reporter_writes_only_what_changed() -> None:
    pods = {"team/w-0": member_pod("w-0", "Pending", node=""), "team/w-1": member_pod("w-1", "Running"),
            "other/x": {"metadata": {"name": "x", "namespace": "other"}, "spec": {}}}  # not a Work's pod
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "job", "namespace": "team"}, "spec": {"minMember": 2}, "status": {"phase": "Inqueue"}}
    api = FakeFederation()
    reporter = MemberReporter(fake_agent(pods, [group]), api, clock=None)  # type: ignore[arg-type]
    await reporter.report_once()
    assert sorted(api.writes()) == [("POST", POD_PATH), ("POST", POD_PATH),
                                    ("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/karmada-es-b/podgroups")]
    copied = api.objects[f"{POD_PATH}/team.w-1"]
    assert copied["metadata"]["annotations"]["resource.karmada.io/cached-from-cluster"] == "b"
    assert copied["metadata"]["annotations"]["caldera.io/member-uid"] == "uid-w-1"
    await reporter.report_once()
    assert api.writes() == []  # nothing changed: nothing written
    pods["team/w-1"] = member_pod("w-1", "Succeeded")  # a status change: the status alone
    await reporter.report_once()
    assert api.writes() == [("PUT", f"{POD_PATH}/team.w-1/status")]
    bound = member_pod("w-0", "Pending", node="n7")  # a binding: spec only
    pods["team/w-0"] = bound
    await reporter.report_once()
    assert api.writes() == [("PUT", f"{POD_PATH}/team.w-0")]
    assert api.objects[f"{POD_PATH}/team.w-0"]["spec"]["nodeName"] == "n7"
    del pods["team/w-1"]  # the pod went: its copy goes
    await reporter.report_once()
    assert api.writes() == [("DELETE", f"{POD_PATH}/team.w-1")]


async def test_a_restarted_reporter_updates_and_removes_what_the_federation_holds() -> None:
    api = FakeFederation()
    first = MemberReporter(fake_agent({"team/w-0": member_pod("w-0", "Running"),
                                       "team/w-1": member_pod("w-1", "Running")}, []), api, clock=None)  # type: ignore[arg-type]
    await first.report_once()
    api.writes()
    # after a restart: w-1 is gone from the member, w-0 changed phase; nothing is created twice
    again = MemberReporter(fake_agent({"team/w-0": member_pod("w-0", "Succeeded")}, []), api, clock=None)  # type: ignore[arg-type]
    await again.report_once()
    assert sorted(api.writes()) == [("DELETE", f"{POD_PATH}/team.w-1"), ("PUT", f"{POD_PATH}/team.w-0"),
                                    ("PUT", f"{POD_PATH}/team.w-0/status")]
    assert list(api.objects) == [f"{POD_PATH}/team.w-0"]
    assert api.objects[f"{POD_PATH}/team.w-0"]["status"]["phase"] == "Succeeded"


def test_a_sim_pod_log_tells_its_rank_and_environment() -> None:
    body = pod("job-worker-3", "n4", "Running", 1)
    body["spec"]["containers"][0]["env"] += [{"name": "MASTER_ADDR", "value": "job-master-0.job"},
                                             {"name": "WORLD_SIZE", "value": "8"}, {"name": "RANK", "value": "4"}]
    lines = start_lines(body, "T")
    assert lines == ["T start: container main of pod team/job-worker-3 on node n4",
                     "T rank 4 (task worker, index 3)",
                     "T env VC_TASK_INDEX=3 MASTER_ADDR=job-master-0.job WORLD_SIZE=8 RANK=4"]


async def _read(logs: PodLogs, key: str, **options: Any) -> bytes:
    return b"".join([chunk async for chunk in logs.read(key, **options)])


@pytest.mark.parametrize("options, expected", [
    ({}, b"a\nb\nc\n"),
    ({"tail_lines": 2}, b"b\nc\n"),
    ({"tail_lines": 0}, b""),
    ({"limit_bytes": 3}, b"a\nb"),
])
async def test_sim_logs_tail_and_limit(options: dict[str, Any], expected: bytes) -> None:
    logs = PodLogs()
    logs.write("ns/p", ["a", "b", "c"], running=False)
    assert await _read(logs, "ns/p", **options) == expected


async def test_a_followed_sim_log_ends_with_its_container() -> None:
    logs = PodLogs()
    logs.write("ns/p", ["start"])
    follower = asyncio.ensure_future(_read(logs, "ns/p", follow=True))
    await asyncio.sleep(0)  # the follower has read what there is and waits for more
    logs.write("ns/p", ["running"])
    logs.write("ns/p", ["exit: code 0 (Completed)"], running=False)
    assert await asyncio.wait_for(follower, 5) == b"start\nrunning\nexit: code 0 (Completed)\n"
    logs.forget("ns/p")
    assert not logs.has("ns/p")


async def test_the_kube_gateway_streams_a_member_pods_log(tmp_path: Any) -> None:
    """``pods/NAME/log`` of a real member API (a stand-in answering kube's paths), streamed and 404."""
    from aiohttp import web
    from kubernetes_asyncio import client as k8s

    from member_agent.cluster.kube import KubeGateway

    seen: list[dict[str, str]] = []

    async def log(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.query))
        if request.match_info["name"] != "w-0":
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for line in (b"start\n", b"rank 0\n"):
            await response.write(line)
        return response

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{ns}/pods/{name}/log", log)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = k8s.Configuration(host=f"http://127.0.0.1:{port}")
    try:
        async with k8s.ApiClient(config) as api:
            gateway = KubeGateway(api)
            got = b"".join([c async for c in gateway.pod_log("team", "w-0", follow=True, tail_lines=5,
                                                             container="trainer")])
            assert got == b"start\nrank 0\n"
            assert seen[0]["follow"].lower() == "true" and seen[0]["tailLines"] == "5"
            assert seen[0]["container"] == "trainer"
            with pytest.raises(NotFound):
                _ = [c async for c in gateway.pod_log("team", "w-9")]
    finally:
        await runner.cleanup()


async def test_an_idle_reporter_computes_and_writes_nothing() -> None:
    """run(): a report only when the change counter or a PodGroup changed (the agent's idle footprint)."""
    from member_agent.cluster.clock import ManualClock

    pods = {"team/w-0": member_pod("w-0", "Running")}
    agent = fake_agent(pods, [])
    api = FakeFederation()
    clock = ManualClock()
    reporter = MemberReporter(agent, api, clock)  # type: ignore[arg-type]
    reports = []
    real = reporter.report_once

    async def counted() -> int:
        reports.append(agent.changes.version)
        return await real()

    reporter.report_once = counted  # type: ignore[method-assign]
    async def turns() -> None:  # let the reporter run until it waits on the clock again (no wall time)
        for _ in range(50):
            await asyncio.sleep(0)

    task = asyncio.ensure_future(reporter.run())
    try:
        await turns()
        for _ in range(5):  # several fallback periods with nothing changed
            clock.advance(2.5)
            await turns()
        assert reports == [0]
        pods["team/w-0"] = member_pod("w-0", "Succeeded")
        agent.changes.bump()
        for _ in range(3):
            await turns()
            clock.advance(0.5)
        await turns()
        assert reports == [0, 1]
        assert api.objects[f"{POD_PATH}/team.w-0"]["status"]["phase"] == "Succeeded"
    finally:
        task.cancel()
