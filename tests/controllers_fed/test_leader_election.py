"""Leader election of the controller manager: one of several managers runs the controllers, /status
and the metric say which, a clean stop hands over within a retry period, a leader that cannot renew
steps down, and the Lease follows kube-controller-manager's shape."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import V1Lease, V1LeaseSpec, V1ObjectMeta

from federation import metrics
from federation.apiserver.server import ApiServer, ServerConfig
from federation.controllers.context import ControllerContext
from federation.controllers.leader_election import ElectionConfig, LeaderElector, leader_gate
from federation.controllers.manager import ControllerManager
from tests.apiserver.helpers import request

FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "api")) as server:
        yield server


class Recorder:
    """A controller that notes which manager runs it, and when it was told to stop."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.ever: list[str] = []

    def controller(self, name: str) -> Any:
        async def run(context: ControllerContext) -> None:
            self.running.add(name)
            self.ever.append(name)
            try:
                await context.stop.wait()
            finally:
                self.running.discard(name)
        return run


async def _until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


def _manager(server: ApiServer, recorder: Recorder, name: str, **overrides: Any) -> tuple[ControllerManager, Any]:
    config = ElectionConfig(identity=name, **{**FAST, **overrides})
    gate, elector = leader_gate(server.kubeconfig(), config)
    return ControllerManager(server.kubeconfig(), [recorder.controller(name)], gate=gate), elector


async def test_one_of_three_leads_and_a_clean_stop_hands_over(api: ApiServer) -> None:
    recorder = Recorder()
    managers = [_manager(api, recorder, f"replica-{i}") for i in range(3)]
    for manager, _ in managers:
        await manager.start()
    try:
        await _until(lambda: len(recorder.running) == 1)
        await asyncio.sleep(FAST["lease_duration"])  # several renewals later, still exactly one
        assert len(recorder.running) == 1 and len(recorder.ever) == 1
        leader = next(iter(recorder.running))
        code, status = await request(api, "GET", "/status")
        assert code == 200 and status["controllers"]["leader"] == leader
        lease = api.store.get("coordination.k8s.io/leases", "caldera-system", "caldera-controllers")
        assert lease is not None and lease["spec"]["holderIdentity"] == leader
        assert lease["spec"]["leaseDurationSeconds"] == 1 and lease["spec"]["leaseTransitions"] == 0
        gauge = metrics.REGISTRY.get_sample_value("leader_election_master_status",
                                                  {"name": "caldera-controllers", "identity": leader})
        assert gauge == 1.0
        index = int(leader.rsplit("-", 1)[1])
        stopped_at = time.monotonic()
        await managers[index][0].stop()  # releases the Lease
        await _until(lambda: len(recorder.running) == 1 and leader not in recorder.running)
        assert time.monotonic() - stopped_at < FAST["lease_duration"], "a released Lease is taken at once"
        successor = next(iter(recorder.running))
        await _until(lambda: api.store.get("coordination.k8s.io/leases", "caldera-system",
                                           "caldera-controllers")["spec"]["holderIdentity"] == successor)
        lease = api.store.get("coordination.k8s.io/leases", "caldera-system", "caldera-controllers")
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        for manager, _ in managers:
            await manager.stop()
    assert recorder.running == set()


async def test_a_leader_that_cannot_renew_steps_down(api: ApiServer) -> None:
    recorder = Recorder()
    manager, elector = _manager(api, recorder, "only")
    await manager.start()
    try:
        await _until(lambda: recorder.running == {"only"})
        # Another writer takes the Lease over (as a replica would after this one stalled).
        lease = api.store.get("coordination.k8s.io/leases", "caldera-system", "caldera-controllers")
        body = dict(lease, spec=dict(lease["spec"], holderIdentity="usurper", leaseDurationSeconds=30))
        code, _ = await request(api, "PUT", "/apis/coordination.k8s.io/v1/namespaces/caldera-system/leases/"
                                            "caldera-controllers", body=__import__("json").dumps(body))
        assert code == 200
        await _until(lambda: recorder.running == set(), timeout=FAST["renew_deadline"] + 3)
        assert elector().is_leader is False and elector().leader == "usurper"
        await asyncio.sleep(FAST["lease_duration"])
        assert recorder.running == set(), "the usurper's 30 s lease is respected"
    finally:
        await manager.stop()


@pytest.mark.parametrize(("overrides", "message"), [
    ({"lease_duration": 5.0, "renew_deadline": 10.0}, "--leader-elect-lease-duration must be greater"),
    ({"renew_deadline": 2.0, "retry_period": 2.0}, "--leader-elect-renew-deadline must be greater"),
    ({"identity": ""}, "--leader-elect-identity must not be empty"),
])
def test_bad_election_flags_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ElectionConfig(**{"identity": "x", **overrides}).check()


def test_the_cli_flags_take_kube_durations() -> None:
    import argparse

    from federation.cli.leader_flags import add_leader_election_flags, election_config

    parser = argparse.ArgumentParser()
    add_leader_election_flags(parser, default=True)
    config = election_config(parser.parse_args(["--leader-elect-lease-duration", "20s",
                                                "--leader-elect-renew-deadline", "15000ms"]))
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (20.0, 15.0, 2.0)
    assert config.identity and "_" in config.identity, "hostname plus a random suffix"
    assert election_config(parser.parse_args(["--leader-elect=false"])) is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--leader-elect-retry-period", "soon"])


class NoApi:
    """kubernetes-asyncio's CoordinationV1Api only stores its client here: no request is made."""


class _SlowLeases:
    """A Lease API whose reads take ``read_latency`` seconds of the injected clock; writes are recorded."""

    def __init__(self, now: list[float], holder: str) -> None:
        self.now, self.read_latency, self.writes = now, 0.0, []
        self.lease = V1Lease(metadata=V1ObjectMeta(name="caldera-controllers", resource_version="7"),
                             spec=V1LeaseSpec(holder_identity=holder, lease_duration_seconds=8,
                                              renew_time=datetime(2026, 1, 1, tzinfo=UTC), lease_transitions=3))

    async def read_namespaced_lease(self, name: str, namespace: str) -> V1Lease:
        self.now[0] += self.read_latency
        return self.lease

    async def replace_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any]) -> None:
        self.writes.append(body)


def _elector_over(leases: _SlowLeases, identity: str) -> LeaderElector:
    """An elector with an 8 s lease and a 6 s renew deadline on ``leases``' clock and API."""
    now = leases.now
    elector = LeaderElector(NoApi(), ElectionConfig(identity=identity, lease_duration=8, renew_deadline=6,
                                                    retry_period=1, clock=lambda: now[0]))
    elector.coordination = leases
    return elector


def test_a_rivals_lease_runs_from_when_the_read_returned_not_from_when_it_was_sent() -> None:
    """The rival renewed at most as late as our read returned; it steps down ``renew_deadline`` (6 s) after
    starting that renewal. Counting the 8 s lease from before a 3 s read would let us take over at 8 s
    after sending it, while the rival may still lead (its renewal could have started 2.9 s in): two
    leaders. Counted from the read's return, the 2 s gap between deadline and lease holds."""
    now = [100.0]
    leases = _SlowLeases(now, holder="rival")
    elector = _elector_over(leases, "candidate")
    leases.read_latency = 3.0
    assert asyncio.run(elector.try_acquire_or_renew()) is False  # sent at 100, returned at 103
    leases.read_latency = 0.0
    now[0] = 108.5  # 8 s after sending the read, 5.5 s after it returned: the rival's lease still runs
    assert asyncio.run(elector.try_acquire_or_renew()) is False and leases.writes == []
    now[0] = 111.0  # 8 s after the read returned without a change: the rival is past its deadline
    assert asyncio.run(elector.try_acquire_or_renew()) is True
    assert leases.writes[0]["spec"]["holderIdentity"] == "candidate"
    assert leases.writes[0]["spec"]["leaseTransitions"] == 4


def test_our_own_renewal_counts_from_before_the_read() -> None:
    """A leader's renew deadline runs from when it sent the read: its write cannot land earlier."""
    now = [200.0]
    leases = _SlowLeases(now, holder="leader")
    elector = _elector_over(leases, "leader")
    leases.read_latency = 2.0
    assert asyncio.run(elector.try_acquire_or_renew()) is True
    elector._set_leading(True)
    now[0] = 206.5  # 6.5 s after the read was sent, 4.5 s after it returned
    assert elector.leading_now() is False, "past the deadline counted from the read's start"
    elector._set_leading(False)
