"""The agents' election Lease kept in the federation, for agents with no member API (``--sim``).

kubernetes-asyncio's :class:`LeaderElection` runs client-go's algorithm over a *lock*; its own
``LeaseLock`` needs a kubernetes ApiClient of the member cluster. This lock keeps the same
coordination.k8s.io/v1 Lease, ``caldera-system/caldera-agent-<cluster>``, in the federation instead
(a namespace the federation always has; of its Leases an agent may write only its own cluster's), through the agent's
:class:`~member_agent.federation_api.FederationAPI`, so it fails over across ``--server`` endpoints
like every other call. Each update carries the resourceVersion of the Lease last read: two
replicas can never both win one version.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from kubernetes_asyncio.client.rest import ApiException
from kubernetes_asyncio.leaderelection.leaderelectionrecord import LeaderElectionRecord
from kubernetes_asyncio.leaderelection.resourcelock.baselock import BaseLock

from member_agent.cluster.gateway import GatewayError, NotFound
from member_agent.federation_api import FederationAPI
from policies.errors import CalderaError

log = logging.getLogger("caldera.agent.leader")
#: kubernetes-asyncio writes record times as ``str(datetime)``; the API wants RFC 3339 micro-times
_RECORD_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")
_MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def lease_location(cluster: str) -> tuple[str, str]:
    """(namespace, name) of the agents' election Lease of ``cluster`` in the federation."""
    return "caldera-system", f"caldera-agent-{cluster}"


def _to_api_time(text: str | None) -> str | None:
    for fmt in _RECORD_FORMATS:
        try:
            return datetime.strptime(text or "", fmt).strftime(_MICRO)
        except ValueError:
            continue
    return None


def _to_record_time(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return str(datetime.strptime(text.rstrip("Z").replace("T", " "), "%Y-%m-%d %H:%M:%S.%f"))
    except ValueError:
        return str(datetime.strptime(text.rstrip("Z").replace("T", " "), "%Y-%m-%d %H:%M:%S"))


class FederationLeaseLock(BaseLock):  # type: ignore[misc]
    def __init__(self, cluster: str, identity: str, api: FederationAPI) -> None:
        namespace, name = lease_location(cluster)
        super().__init__(name, namespace, identity)
        self.api = api
        self.lease: dict[str, Any] | None = None

    async def get(self, name: str, namespace: str) -> tuple[bool, Any]:
        try:
            lease = await self.api.get_lease(namespace, name)
        except NotFound:
            return False, _error(404, f"Lease {namespace}/{name} not found")
        except GatewayError as exc:  # unreachable or refused: not a lock we may create
            log.info("cannot read Lease %s/%s: %s", namespace, name, exc)
            return False, _error(503, str(exc))
        self.lease = lease
        spec = lease.get("spec") or {}
        duration = spec.get("leaseDurationSeconds")
        return True, LeaderElectionRecord(spec.get("holderIdentity") or None,
                                          str(duration) if duration else None,
                                          _to_record_time(spec.get("acquireTime")),
                                          _to_record_time(spec.get("renewTime")))

    def _spec(self, record: LeaderElectionRecord) -> dict[str, Any]:
        previous = (self.lease or {}).get("spec") or {}
        transitions = int(previous.get("leaseTransitions") or 0)
        if previous.get("holderIdentity") and previous.get("holderIdentity") != record.holder_identity:
            transitions += 1
        return {"holderIdentity": record.holder_identity,
                "leaseDurationSeconds": int(float(record.lease_duration or 0)),
                "acquireTime": _to_api_time(record.acquire_time), "renewTime": _to_api_time(record.renew_time),
                "leaseTransitions": transitions}

    async def create(self, name: str, namespace: str, election_record: LeaderElectionRecord) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace}, "spec": self._spec(election_record)}
        try:
            self.lease = await self.api.create_lease(namespace, body)
        except CalderaError as exc:  # unreachable, or another replica created it first
            log.info("cannot create Lease %s/%s: %s", namespace, name, exc)
            return False
        return True

    async def update(self, name: str, namespace: str, updated_record: LeaderElectionRecord) -> bool:
        if self.lease is None:
            return False
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": self.lease["metadata"]["resourceVersion"]},
                "spec": self._spec(updated_record)}
        try:  # the resourceVersion makes this a compare-and-swap
            self.lease = await self.api.replace_lease(namespace, name, body)
        except CalderaError as exc:  # 409 Conflict: another replica wrote that version first; or unreachable
            log.info("Lease %s/%s update refused: %s", namespace, name, exc)
            return False
        return True


def _error(status: int, message: str) -> ApiException:
    """What kubernetes-asyncio's election expects from a failed get: an ApiException with a Status body."""
    exc = ApiException(status=status, reason=message)
    exc.body = json.dumps({"kind": "Status", "code": status, "message": message})
    return exc
