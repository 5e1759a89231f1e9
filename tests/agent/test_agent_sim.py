"""The simulated cluster and kubelet, on a manual clock (no real sleeps)."""

from __future__ import annotations

import asyncio

import pytest

from member_agent.cluster.clock import ManualClock, ScaledClock
from member_agent.cluster.gateway import AlreadyExists, BindConflict, Gone, NotFound, node_ready
from member_agent.cluster.sim import EVENTS, HISTORY, SimCluster, SimGateway
from member_agent.cluster.sim_kubelet import KubeletOptions, parse_duration
from policies.cluster_layout import pool_nodes


def make_cluster(nodes: int = 2, start_delay: float = 2.0, duration: float = 30.0) -> tuple[SimCluster, ManualClock]:
    clock = ManualClock()
    pool = {"name": "cpu", "count": nodes, "cpu": 8, "memory": "32Gi"}
    cluster = SimCluster(pool_nodes(pool, "pool"), clock, KubeletOptions(start_delay, duration))
    return cluster, clock


def pod(name: str, annotations: dict[str, str] | None = None, restart: str | None = None) -> dict:
    spec: dict = {"schedulerName": "volcano", "containers": [{"name": "main", "image": "busybox"}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}}, "spec": spec}


def phase(cluster: SimCluster, name: str) -> str:
    return cluster.pods[f"ns/{name}"]["status"]["phase"]


# (annotations, restartPolicy, expected phase after the run, exit code, restarts)
LIFECYCLE = [
    ({}, None, "Succeeded", 0, 0),
    ({"caldera.io/sim-duration": "10s"}, None, "Succeeded", 0, 0),
    ({"caldera.io/sim-exit-code": "3"}, None, "Failed", 3, 0),
    ({"caldera.io/sim-exit-code": "3"}, "Never", "Failed", 3, 0),
    ({"caldera.io/sim-exit-code": "2"}, "OnFailure", "Running", None, 1),
]


@pytest.mark.parametrize(("annotations", "restart", "final", "exit_code", "restarts"), LIFECYCLE)
def test_bound_pod_runs_then_ends(annotations, restart, final, exit_code, restarts) -> None:
    cluster, clock = make_cluster()
    cluster.create_pod(pod("p", annotations, restart))
    cluster.bind("ns", "p", "cpu-0")
    duration = parse_duration(annotations.get("caldera.io/sim-duration"), 30.0)
    clock.advance(1.9)
    cluster.kubelet.step()
    assert phase(cluster, "p") == "Pending"
    clock.advance(0.1)
    cluster.kubelet.step()
    assert phase(cluster, "p") == "Running"
    assert cluster.pods["ns/p"]["status"]["containerStatuses"][0]["state"]["running"]
    clock.advance(duration - 0.5)
    cluster.kubelet.step()
    assert phase(cluster, "p") == "Running"
    clock.advance(0.5)
    cluster.kubelet.step()
    status = cluster.pods["ns/p"]["status"]
    assert status["phase"] == final
    cs = status["containerStatuses"][0]
    assert cs["restartCount"] == restarts
    if exit_code is not None:
        assert cs["state"]["terminated"]["exitCode"] == exit_code


def test_unbound_pod_never_starts() -> None:
    cluster, clock = make_cluster()
    cluster.create_pod(pod("p"))
    clock.advance(100)
    cluster.kubelet.step()
    assert phase(cluster, "p") == "Pending"


def test_create_and_bind_conflicts() -> None:
    cluster, _ = make_cluster()
    cluster.create_pod(pod("p"))
    with pytest.raises(AlreadyExists):
        cluster.create_pod(pod("p"))
    cluster.bind("ns", "p", "cpu-0")
    cluster.bind("ns", "p", "cpu-0")  # same node again: idempotent
    with pytest.raises(BindConflict):
        cluster.bind("ns", "p", "cpu-1")
    with pytest.raises(NotFound):
        cluster.bind("ns", "missing", "cpu-0")


def test_graceful_delete_keeps_pod_until_grace_ends() -> None:
    cluster, clock = make_cluster()
    cluster.create_pod(pod("p"))
    cluster.bind("ns", "p", "cpu-0")
    clock.advance(2)
    cluster.kubelet.step()
    cluster.evict("ns", "p", "preempt", grace_period_seconds=5)
    stored = cluster.pods["ns/p"]
    assert stored["metadata"]["deletionTimestamp"]
    assert any(c["type"] == "DisruptionTarget" for c in stored["status"]["conditions"])
    clock.advance(4.9)
    cluster.kubelet.step()
    assert "ns/p" in cluster.pods
    clock.advance(0.1)
    cluster.kubelet.step()
    assert "ns/p" not in cluster.pods


def test_unbound_pod_deletes_at_once() -> None:
    cluster, _ = make_cluster()
    cluster.create_pod(pod("p"))
    cluster.delete_pod("ns", "p", 30)
    assert "ns/p" not in cluster.pods
    cluster.delete_pod("ns", "p", 30)  # missing: not an error


def test_node_failure_fails_its_pods_and_recovery_readies_node() -> None:
    cluster, clock = make_cluster()
    for name, node in (("a", "cpu-0"), ("b", "cpu-1")):
        cluster.create_pod(pod(name))
        cluster.bind("ns", name, node)
    clock.advance(2)
    cluster.kubelet.step()
    cluster.fail_node("cpu-0")
    assert not node_ready(cluster.nodes["cpu-0"])
    assert phase(cluster, "a") == "Failed"
    assert cluster.pods["ns/a"]["status"]["reason"] == "NodeLost"
    assert phase(cluster, "b") == "Running"
    clock.advance(1000)
    cluster.kubelet.step()  # the stale finish timer of "a" does nothing
    assert phase(cluster, "a") == "Failed"
    cluster.recover_node("cpu-0")
    assert node_ready(cluster.nodes["cpu-0"])


def test_recreated_pod_ignores_old_timers() -> None:
    cluster, clock = make_cluster()
    cluster.create_pod(pod("p"))
    cluster.bind("ns", "p", "cpu-0")
    cluster.delete_pod("ns", "p", 0)
    cluster.create_pod(pod("p"))
    clock.advance(5)
    cluster.kubelet.step()
    assert phase(cluster, "p") == "Pending"


async def test_watch_replays_and_follows_then_410() -> None:
    cluster, _ = make_cluster()
    gateway = SimGateway(cluster)
    listing = await gateway.list_pods()
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for event in gateway.watch_pods(listing.resource_version):
            seen.append((event.type, event.object["metadata"]["name"]))
            if len(seen) == 3:
                return

    task = asyncio.create_task(consume())
    await gateway.create_pod(pod("p"))
    await gateway.bind_pod("ns", "p", "cpu-0")
    await gateway.delete_pod("ns", "p", 0)
    await asyncio.wait_for(task, 2)
    assert seen == [("ADDED", "p"), ("MODIFIED", "p"), ("DELETED", "p")]

    small = SimCluster(pool_nodes({"name": "x", "count": 1, "cpu": 1, "memory": "1Gi"}, "p"), ManualClock(), history=3)
    for i in range(5):
        small.create_pod(pod(f"p{i}"))
    with pytest.raises(Gone):
        async for _ in small.watch("Pod", "1"):
            pass


async def test_watch_history_is_bounded_as_kube_apiservers_watch_cache() -> None:
    """100 events kept (each a deep copy of a pod): older resourceVersions get Gone and relist."""
    cluster = SimCluster(pool_nodes({"name": "x", "count": 1, "cpu": 1, "memory": "1Gi"}, "p"), ManualClock())
    for i in range(150):
        cluster.create_pod(pod(f"p{i}"))
    assert HISTORY == 100 and len(cluster._history) == HISTORY
    with pytest.raises(Gone):
        async for _ in cluster.watch("Pod", str(cluster.resource_version - HISTORY - 1)):
            pass
    since = cluster.resource_version - HISTORY
    watch = cluster.watch("Pod", str(since))
    first = await asyncio.wait_for(watch.__anext__(), 2)
    assert first.object["metadata"]["resourceVersion"] == str(since + 1)
    await watch.aclose()


def test_recorded_events_are_bounded_newest_kept() -> None:
    cluster = SimCluster(pool_nodes({"name": "x", "count": 1, "cpu": 1, "memory": "1Gi"}, "p"), ManualClock())
    job = {"kind": "Job", "metadata": {"namespace": "ns", "name": "j", "uid": "u"}}
    for i in range(EVENTS + 50):
        cluster.record_event(job, "Normal", "ExecuteAction", f"event {i}")
    assert EVENTS == 500 and len(cluster.events) == EVENTS
    assert cluster.events[0]["message"] == "event 50" and cluster.events[-1]["message"] == f"event {EVENTS + 49}"


async def test_kubelet_loop_on_scaled_clock_finishes_pod() -> None:
    clock = ScaledClock(speed=200.0)
    cluster = SimCluster(pool_nodes({"name": "x", "count": 1, "cpu": 1, "memory": "1Gi"}, "p"), clock,
                         KubeletOptions(start_delay=1.0, default_duration=20.0))
    loop = asyncio.create_task(cluster.kubelet.run())
    try:
        cluster.create_pod(pod("p"))
        cluster.bind("ns", "p", "x-0")
        deadline = asyncio.get_running_loop().time() + 5
        while phase(cluster, "p") != "Succeeded":
            assert asyncio.get_running_loop().time() < deadline, phase(cluster, "p")
            await asyncio.sleep(0.01)
    finally:
        loop.cancel()


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("1m30s", 90.0), ("12.5", 12.5), ("2h", 7200.0),
                                               ("500ms", 0.5), ("bogus", 7.0), (None, 7.0)])
def test_parse_duration(text, seconds) -> None:
    assert parse_duration(text, 7.0) == seconds
