"""The status and health controllers inside a real in-process API server (polling with deadlines)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli.compose import FederationServer
from federation.client import ResourceClient
from federation.controllers.health import health_controller
from federation.controllers.status import status_controller
from policies.kinds import lookup
from tests.apiserver.helpers import request
from tests.federation_status.builders import binding, cluster, job, lease, work

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
RBS = lookup("work.karmada.io/v1alpha2", "ResourceBinding")
WORKS = lookup("work.karmada.io/v1alpha1", "Work")
CLUSTERS = lookup("cluster.karmada.io/v1alpha1", "Cluster")
LEASES = lookup("coordination.k8s.io/v1", "Lease")
NAMESPACES = lookup("v1", "Namespace")
EVENTS = lookup("v1", "Event")
OPTIONS = {"cluster_lease_grace": 3, "cluster_failover_grace": 1, "cluster_success_threshold": 0,
           "cluster_monitor_period": 0.1}
Obj = dict[str, Any]


def micro(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def eventually(probe: Callable[[], Awaitable[Any]], what: str, timeout: float = 15.0) -> Any:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}; last answer: {last!r}")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    config = ServerConfig(data_dir=tmp_path / "data")
    async with FederationServer(config, controllers=[status_controller, health_controller],
                                controller_options=dict(OPTIONS)) as srv:
        yield srv


@pytest.fixture
async def rc(server: ApiServer) -> AsyncIterator[ResourceClient]:
    async with server.api_client() as api:
        yield ResourceClient(api)


async def put_work(rc: ResourceClient, body: Obj) -> None:
    status = body.pop("status", None)
    created = await rc.create(WORKS, body)
    if status is not None:
        await rc.patch(WORKS, created["metadata"]["name"], {"status": status}, created["metadata"]["namespace"],
                       subresource="status")


async def test_job_status_is_aggregated_from_binding_and_works(server: ApiServer, rc: ResourceClient) -> None:
    for ns in ("karmada-es-a", "karmada-es-b"):
        await rc.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    body = job()
    body["metadata"] = {"name": "train", "namespace": "default"}
    await rc.create(JOBS, body)

    async def phase() -> Obj | None:
        status = (await rc.get(JOBS, "train", "default")).get("status") or {}
        return status if status.get("state") else None

    first = await eventually(phase, "a Pending status before any placement")
    assert first["state"]["phase"] == "Pending" and first["state"]["reason"] == "WaitingForPlacement"

    rb = binding("train", 1, {"a": {"worker": [4, 4]}, "b": {"master": [1, 1], "worker": [4, 4]}})
    rb_status = rb.pop("status")
    await rc.create(RBS, rb)
    await rc.patch(RBS, "train-job", {"status": rb_status}, "default", subresource="status")
    await put_work(rc, work("train", "a", 1, "Running", running=4))
    await put_work(rc, work("train", "b", 1, "Pending", pending=5, gang={"phase": "Pending",
                                                                       "reason": "gang: 3/5 tasks fit"}))

    async def waiting() -> Obj | None:
        status = (await rc.get(JOBS, "train", "default")).get("status") or {}
        return status if "b: gang: 3/5 tasks fit" in (status.get("state") or {}).get("message", "") else None

    pending = await eventually(waiting, "why pending: the share's gang reason")
    assert pending["state"]["phase"] == "Pending"
    assert [(c["name"], c["phase"], c.get("gangPhase")) for c in pending["clusters"]] == [
        ("a", "Running", None), ("b", "Pending", "Pending")]

    running_b = work("train", "b", 1, "Running", running=5)["status"]
    await rc.patch(WORKS, "default.train", {"status": dict(running_b, gang=None)}, "karmada-es-b",
                   subresource="status")

    async def running() -> Obj | None:
        status = (await rc.get(JOBS, "train", "default")).get("status") or {}
        return status if (status.get("state") or {}).get("phase") == "Running" else None

    done = await eventually(running, "phase Running once every share runs")
    assert done["running"] == 9 and done["minAvailable"] == 9
    assert [(c["name"], c["phase"], c["running"]) for c in done["clusters"]] == [("a", "Running", 4),
                                                                                ("b", "Running", 5)]
    assert [c["status"] for c in done["conditions"] if not c.get("type")] == ["Pending", "Running"]

    uid = (await rc.get(JOBS, "train", "default"))["metadata"]["uid"]

    async def event() -> list[Obj]:
        listed = await rc.list(EVENTS, "default", field_selector=f"involvedObject.uid={uid}")
        return [e for e in listed["items"] if e["reason"] == "AllSharesRunning"]

    events = await eventually(event, "an Event for the phase change")
    assert "Pending -> Running" in events[0]["message"]

    code, doc = await request(server, "GET", "/status")
    assert code == 200 and doc["placementLatency"]["observed"]["count"] >= 1  # first seen -> Scheduled=True
    assert [(j["name"], j["phase"], len(j["clusters"])) for j in doc["jobs"]] == [("train", "Running", 2)]

    # no write loop: the resourceVersion stays put while nothing changes
    rv = (await rc.get(JOBS, "train", "default"))["metadata"]["resourceVersion"]
    await rc.patch(RBS, "train-job", {"metadata": {"labels": {"touched": "yes"}}}, "default")
    await asyncio.sleep(0.3)  # give the controller a chance to (wrongly) write; not waiting for state
    assert (await rc.get(JOBS, "train", "default"))["metadata"]["resourceVersion"] == rv


async def test_a_binding_change_alone_reaches_the_job_status(rc: ResourceClient) -> None:
    """Only the binding changes (no Work, Job untouched): its watch event must bring the Job's
    status up to date well before the controller's periodic resync (30 s)."""
    body = job()
    body["metadata"] = {"name": "solo", "namespace": "default"}
    await rc.create(JOBS, body)

    async def first_status() -> Obj | None:
        status = (await rc.get(JOBS, "solo", "default")).get("status") or {}
        return status if (status.get("state") or {}).get("reason") == "WaitingForPlacement" else None

    await eventually(first_status, "the Job's first status, before any binding exists")
    rb = binding("solo", 0, {})  # Scheduled=False, Unschedulable, "no cluster fits"
    rb_status = rb.pop("status")
    await rc.create(RBS, rb)
    await rc.patch(RBS, "solo-job", {"status": rb_status}, "default", subresource="status")

    async def why_pending() -> Obj | None:
        status = (await rc.get(JOBS, "solo", "default")).get("status") or {}
        return status if "no cluster fits" in (status.get("state") or {}).get("message", "") else None

    status = await eventually(why_pending, "the binding's Scheduled=False message on the Job", timeout=10.0)
    assert status["state"]["phase"] == "Pending"


async def test_stale_lease_taints_cluster_then_recovery_clears(server: ApiServer, rc: ResourceClient) -> None:
    admin_taint = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
    body = cluster("member-1", taints=[admin_taint])
    status = body.pop("status")
    body["metadata"] = {"name": "member-1"}
    await rc.create(CLUSTERS, body)
    await rc.patch(CLUSTERS, "member-1", {"status": status}, subresource="status")
    await rc.create(LEASES, lease("member-1", micro(datetime.now(UTC) - timedelta(seconds=60))))

    async def tainted() -> Obj | None:
        obj = await rc.get(CLUSTERS, "member-1")
        effects = {t["effect"] for t in obj["spec"].get("taints") or [] if t["key"].endswith("/unreachable")}
        return obj if effects == {"NoSchedule", "NoExecute"} else None

    obj = await eventually(tainted, "unreachable NoSchedule then NoExecute taints")
    ready = [c for c in obj["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "Unknown" and ready["reason"] == "ClusterStatusUnknown"
    assert admin_taint in obj["spec"]["taints"]  # an admin's taint is kept

    current = await rc.get(LEASES, "member-1", "karmada-cluster")
    current["spec"]["renewTime"] = micro(datetime.now(UTC))
    await rc.replace(LEASES, current)

    async def recovered() -> Obj | None:
        obj = await rc.get(CLUSTERS, "member-1")
        ready = [c for c in obj["status"]["conditions"] if c["type"] == "Ready"][0]
        return obj if ready["status"] == "True" and obj["spec"].get("taints") == [admin_taint] else None

    await eventually(recovered, "Ready=True and only the admin's taint after a fresh renewal")

    async def status_doc() -> Obj | None:
        code, doc = await request(server, "GET", "/status", token=server.mint_token("viewer"))
        assert code == 200
        return doc if doc["clusters"] and doc["clusters"][0]["ready"] == "True" else None

    doc = await eventually(status_doc, "GET /status showing the cluster")
    entry = doc["clusters"][0]
    assert entry["name"] == "member-1" and 0 <= entry["leaseAgeSeconds"] < 30
    assert entry["taints"] == [admin_taint] and entry["schedulable"] is False
    code, _body = await request(server, "GET", "/status", token="")
    assert code == 401
    code, text = await request(server, "GET", "/metrics", token="")
    assert code == 200 and 'caldera_cluster_ready{cluster="member-1"} 1.0' in text


async def test_a_poisoned_work_is_reported_once_and_parked_until_an_input_changes(server: ApiServer,
                                                                                 rc: ResourceClient) -> None:
    """A Work stored with a nonsense ``spec.placement.clusters`` makes the aggregate raise: one
    StatusAggregationFailed event, no retry loop; a corrected Work is aggregated again."""
    await rc.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-es-a"}})
    body = job()
    body["metadata"] = {"name": "odd", "namespace": "default"}
    await rc.create(JOBS, body)
    rb = binding("odd", 1, {"a": {"worker": [4, 4]}})
    rb_status = rb.pop("status")
    await rc.create(RBS, rb)
    await rc.patch(RBS, "odd-job", {"status": rb_status}, "default", subresource="status")
    poisoned = work("odd", "a", 1, "Pending", pending=4)
    poisoned["spec"]["placement"] = {"generation": 1, "hold": True, "clusters": "many"}
    poisoned.pop("status", None)
    poisoned["metadata"].update(uid="u-odd", creationTimestamp="2026-12-02T10:00:00Z", generation=1)
    server.store.put("work.karmada.io/works", poisoned, "ADDED")  # past admission, as an old object would be

    async def failures() -> list[Obj]:
        items = (await rc.list(EVENTS, "default")).get("items") or []
        return [e for e in items if e.get("reason") == "StatusAggregationFailed"
                and (e.get("involvedObject") or {}).get("name") == "odd"]

    reported = await eventually(failures, "a StatusAggregationFailed event")
    assert "ValueError" in reported[0]["message"] and "retried when" in reported[0]["message"]
    # Another job's change wakes the loop; once that job's status is written, the poisoned one was skipped.
    other = job()
    other["metadata"] = {"name": "other", "namespace": "default"}
    await rc.create(JOBS, other)
    await eventually(lambda: _has_status(rc, "other"), "the other job's status")
    assert [e.get("count", 1) for e in await failures()] == [1]
    fixed = dict(server.store.get("work.karmada.io/works", "karmada-es-a", "default.odd") or {})
    fixed = {**fixed, "spec": {**fixed["spec"], "placement": {"generation": 1, "hold": False, "clusters": 1}}}
    server.store.put("work.karmada.io/works", fixed, "MODIFIED")
    await eventually(lambda: _has_status(rc, "odd"), "the odd job aggregated once its Work is sane")


async def _has_status(rc: ResourceClient, name: str) -> Obj | None:
    found: Obj = await rc.get(JOBS, name, "default")
    return found if (found.get("status") or {}).get("state") else None


async def test_graces_are_published_and_the_agents_fence_is_checked(server: ApiServer, rc: ResourceClient) -> None:
    body = cluster("fenced-1")
    status = body.pop("status")
    body["metadata"] = {"name": "fenced-1"}
    await rc.create(CLUSTERS, body)
    late = {"enabled": True, "fenceSeconds": 10, "spanningFenceSeconds": 1, "podTerminationGraceSeconds": 0}
    await rc.patch(CLUSTERS, "fenced-1", {"status": dict(status, fence=late)}, subresource="status")
    await rc.create(LEASES, lease("fenced-1", micro(datetime.now(UTC))))

    async def checked(result: str) -> Obj | None:
        timing = ((await rc.get(CLUSTERS, "fenced-1")).get("status") or {}).get("failoverTiming") or {}
        return timing if (timing.get("fenceCheck") or {}).get("result") == result else None

    timing = await eventually(lambda: checked("Unsafe"), "the late fence reported Unsafe")
    assert (timing["leaseGraceSeconds"], timing["failoverGraceSeconds"]) == (3, 1)
    assert timing["podTerminationGraceSeconds"] == 0  # 30 s cut to half of 3 + 1 - 6 s, at least 0
    assert "is not before the re-placement" in timing["fenceCheck"]["message"]

    async def unsafe_event() -> bool:  # the controller writes the Event after the status: poll, not one read
        events = (await rc.list(EVENTS, "default")).get("items") or []
        return any(e.get("reason") == "UnsafeFence" and e["involvedObject"]["name"] == "fenced-1" for e in events)

    assert await eventually(unsafe_event, "an UnsafeFence Event for fenced-1")
    early = dict(late, fenceSeconds=0.5, spanningFenceSeconds=0.5)
    await rc.patch(CLUSTERS, "fenced-1", {"status": {"fence": early}}, subresource="status")
    await eventually(lambda: checked("Safe"), "the early fence reported Safe")
