"""The cluster gateway: everything the agent does to a member cluster goes through this protocol.

Two implementations: :mod:`member_agent.cluster.sim` (embedded nodes and a simulated kubelet)
and :mod:`member_agent.cluster.kube` (a real API server through kubernetes-asyncio). Objects
cross the gateway as plain Kubernetes wire dicts (``{"apiVersion": "v1", "kind": "Pod", ...}``),
exactly as ``kubectl get -o json`` shows them, so the scheduler's snapshot builder and the
``caldera schedule -f STATE.yaml`` file format read the same thing.

Scope decisions (docs/agent.md):

* Only Nodes, Pods, Events and the job plugins' objects (ConfigMap, Service, Secret,
  NetworkPolicy, PVC) live in the member cluster. The local Volcano ``Job`` and its
  ``PodGroup`` are kept by the agent (rebuilt after a restart from the Works and the pods'
  labels) and reported on the Work's status. A member cluster therefore needs no Volcano CRDs,
  and there is one source of truth for each object.
* ``list_pods`` returns every pod, whatever its scheduler: pods of other schedulers still use
  node resources. The agent schedules only pods whose ``spec.schedulerName`` is in
  :data:`MANAGED_SCHEDULERS`.
* Errors are the small tree below, so callers never see transport-specific exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator, Optional, Protocol

from policies.errors import CalderaError, TemporaryError
from policies.wire_objects import MANAGED_SCHEDULERS as MANAGED_SCHEDULERS
from policies.wire_objects import TOPOLOGY_ANNOTATION as TOPOLOGY_ANNOTATION
from policies.wire_objects import Obj as Obj
from policies.wire_objects import node_ready as node_ready
from policies.wire_objects import node_schedulable as node_schedulable
from policies.wire_objects import pod_managed as pod_managed
from policies.wire_objects import pod_node as pod_node
from policies.wire_objects import pod_phase as pod_phase
from policies.wire_objects import pod_terminal as pod_terminal
from policies.wire_objects import pod_terminating as pod_terminating

# Obj, MANAGED_SCHEDULERS, TOPOLOGY_ANNOTATION and the node/pod facts above live in policies.wire_objects
# (caldera place derives an agent's report too); they stay importable from here.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
#: The sim kubelet runs a bound pod for this long (Go duration or seconds) ...
SIM_DURATION_ANNOTATION = "caldera.io/sim-duration"
#: ... and ends it with this exit code (0: Succeeded, anything else: Failed).
SIM_EXIT_CODE_ANNOTATION = "caldera.io/sim-exit-code"
#: Optional per-pod start delay for the sim kubelet (image pull, container start).
SIM_START_DELAY_ANNOTATION = "caldera.io/sim-start-delay"


class GatewayError(CalderaError):
    """Something the member cluster refused or could not do."""


class NotFound(GatewayError):
    pass


class AlreadyExists(GatewayError):
    pass


class BindConflict(GatewayError):
    """The pod is already bound to another node (binding to the same node is a success)."""


class Gone(GatewayError):
    """The watch's resourceVersion is older than the server keeps: list again (HTTP 410)."""


class Unavailable(GatewayError, TemporaryError):
    """The member API server did not answer; retry later."""


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    object: Obj


@dataclass(frozen=True)
class Listing:
    items: list[Obj]
    resource_version: str


class ClusterGateway(Protocol):
    """The member-cluster surface the agent needs; every method is safe to repeat."""

    async def list_nodes(self) -> Listing: ...

    async def list_pods(self) -> Listing: ...

    def watch_nodes(self, resource_version: str) -> AsyncIterator[WatchEvent]:
        """Changes after ``resource_version``; raises :class:`Gone` when it is too old."""
        ...

    def watch_pods(self, resource_version: str) -> AsyncIterator[WatchEvent]: ...

    async def create_pod(self, pod: Obj) -> Obj:
        """Create the pod; :class:`AlreadyExists` when one of that name exists."""
        ...

    async def delete_pod(self, namespace: str, name: str, grace_period_seconds: Optional[int] = None) -> None:
        """Delete (idempotent: a missing pod is not an error)."""
        ...

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        """Bind through the Binding subresource; same node again is a success,
        another node raises :class:`BindConflict`, a missing pod :class:`NotFound`."""
        ...

    async def evict_pod(self, namespace: str, name: str, reason: str, grace_period_seconds: int = 30) -> None:
        """Mark the pod ``DisruptionTarget`` with the reason, then delete it with grace."""
        ...

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, Optional[str]]) -> None:
        """Merge-patch pod annotations (``None`` removes one): device and NUMA decisions."""
        ...

    async def nominate_pod(self, namespace: str, name: str, node: Optional[str]) -> None:
        """Set (``None``: clear) the pod's ``status.nominatedNodeName``: a pipelined preemptor
        whose victims are leaving that node; the next session tries the node first."""
        ...

    async def record_event(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        """A ``v1`` Event about ``involved`` (best effort: failures are swallowed)."""
        ...

    async def apply_object(self, obj: Obj) -> None:
        """Create, or update in place, a job plugin's namespaced object (ConfigMap ``<job>-svc``,
        Service, Secret ``<job>-ssh``, NetworkPolicy, PersistentVolumeClaim)."""
        ...

    async def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete a job plugin's object (idempotent)."""
        ...

    def pod_log(self, namespace: str, name: str, follow: bool = False, tail_lines: Optional[int] = None,
                limit_bytes: Optional[int] = None, container: str = "") -> AsyncIterator[bytes]:
        """The pod's container log as chunks (``kubectl logs`` semantics); :class:`NotFound` for a
        missing pod (raised at once or on the first chunk). The log shipper serves it to the federation."""
        ...

    async def close(self) -> None: ...


# ------------------------------------------------------------------ helpers on wire dicts


def meta(obj: Obj) -> dict[str, Any]:
    return obj.setdefault("metadata", {}) if isinstance(obj, dict) else {}


def key_of(obj: Obj) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    m = obj.get("metadata") or {}
    ns = m.get("namespace")
    return f"{ns}/{m.get('name')}" if ns else str(m.get("name"))
