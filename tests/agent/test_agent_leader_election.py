"""Agent leader election: flag rules (each bad combination named) and the federation Lease lock.

The real-process scenario (two ``--sim`` replicas, kill -9 the leader): e2e/test_ha_agent_election.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes_asyncio.leaderelection.leaderelectionrecord import LeaderElectionRecord

from member_agent import leader
from member_agent.cli import build_parser
from member_agent.cluster.gateway import AlreadyExists, NotFound, Unavailable
from member_agent.federation_lease_lock import FederationLeaseLock
from policies.errors import Conflict

BASE = ["agent", "--cluster", "c1", "--kubeconfig", "fed.kubeconfig", "--leader-elect"]
FLAG_CASES = [  # (extra flags, the message's start) ; None = accepted
    (["--sim", "c.yaml"], None),
    (["--member-kubeconfig", "m.kubeconfig"], None),
    (["--sim", "c.yaml", "--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "3s"],
     "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"),
    (["--sim", "c.yaml", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "2s"],
     "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period"),
    (["--sim", "c.yaml", "--leader-elect-retry-period", "500ms"], "--leader-elect-retry-period must be at least 1s"),
]


@pytest.mark.parametrize("extra,message", FLAG_CASES)
def test_leader_elect_flags(extra: list[str], message: str | None) -> None:
    argv = BASE + extra
    args = build_parser(argv).parse_args(argv)
    why = leader.check(args)
    assert (why is None) if message is None else (why or "").startswith(message), why


class FakeFederation:
    """Leases by (namespace, name) with resourceVersions, as the API keeps them."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.down = False

    def _bump(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        return stored

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        if self.down:
            raise Unavailable("connection refused")
        if (namespace, name) not in self.leases:
            raise NotFound(f"Lease {namespace}/{name}")
        return copy.deepcopy(self.leases[namespace, name])

    async def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise AlreadyExists(str(key))
        self.leases[key] = self._bump(body)
        return copy.deepcopy(self.leases[key])

    async def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.leases[namespace, name]["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
            raise Conflict(f"Lease {namespace}/{name}: conflict")  # what FederationAPI raises on 409
        self.leases[namespace, name] = self._bump(body)
        return copy.deepcopy(self.leases[namespace, name])


def _record(holder: str) -> LeaderElectionRecord:
    return LeaderElectionRecord(holder, "15", "2026-01-02 03:04:05.000006", "2026-01-02 03:04:07.500000")


async def test_lock_creates_reads_and_compares_versions() -> None:
    api = FakeFederation()
    a, b = FederationLeaseLock("c1", "a", api), FederationLeaseLock("c1", "b", api)  # type: ignore[arg-type]
    assert (a.namespace, a.name) == ("caldera-system", "caldera-agent-c1")
    found, err = await a.get(a.name, a.namespace)
    assert not found and err.status == 404 and '"code": 404' in err.body  # what the election reads
    assert await a.create(a.name, a.namespace, _record("a"))
    stored = api.leases["caldera-system", "caldera-agent-c1"]["spec"]
    assert stored["holderIdentity"] == "a" and stored["renewTime"] == "2026-01-02T03:04:07.500000Z"
    assert not await b.create(b.name, b.namespace, _record("b")), "one create wins"
    found, record = await b.get(b.name, b.namespace)
    assert found and record.holder_identity == "a" and record.lease_duration == "15"
    assert await a.update(a.name, a.namespace, _record("a")), "the holder renews what it read"
    assert not await b.update(b.name, b.namespace, _record("b")), "b read an older version: refused"
    _, _ = await b.get(b.name, b.namespace)
    assert await b.update(b.name, b.namespace, _record("b"))
    assert api.leases["caldera-system", "caldera-agent-c1"]["spec"]["leaseTransitions"] == 1


async def test_lock_unreachable_federation_is_not_a_missing_lease() -> None:
    api = FakeFederation()
    api.down = True
    found, err = await FederationLeaseLock("c1", "a", api).get("caldera-agent-c1", "caldera-system")  # type: ignore[arg-type]
    assert not found and err.status == 503, "must not try to create a Lease it could not read"
