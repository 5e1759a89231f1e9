"""Every write the agent makes to member-cluster pods, and what is still in flight.

The job controller creates and deletes pods; the scheduling pass binds, evicts and nominates
them. Writes go through the :class:`~member_agent.cluster.gateway.ClusterGateway` as
background tasks so a slow member API never stalls a pass; until the cache shows their
effect, :meth:`PodWrites.overlay` shows it on the cached pod, so the next session does not
schedule a pod twice or give its GPUs away again:

* **bind** — the session's pod annotations (``volcano.sh/gpu-index``,
  ``volcano.sh/topology-decision``) are patched onto the pod *before* the Binding, as Volcano's
  deviceshare/numa-aware plugins do: the next session rebuilds per-GPU and per-NUMA accounting
  from them. A failed patch means no bind (the pod is scheduled again).
* **evict** — the pod gets the ``DisruptionTarget`` condition with the session's reason and is
  deleted with grace; an ``Evict`` event with the reason is recorded about the pod (Volcano
  records it about the PodGroup, which lives only in the agent here).
* **nominate** — ``status.nominatedNodeName`` of a pipelined preemptor, so the next session
  tries that node first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from member_agent.cluster.gateway import ClusterGateway, GatewayError, Obj, key_of, pod_node, pod_terminating

log = logging.getLogger("caldera.agent")
EVICT_GRACE = 30
#: DisruptionTarget message when the session gave no reason.
DEFAULT_EVICT_REASON = "evicted by the scheduler"


def with_placement(pod: Obj, node: str, annotations: Optional[dict[str, str]]) -> Obj:
    """A copy of ``pod`` as it will be once bound to ``node`` with ``annotations``."""
    md = pod.get("metadata") or {}
    out = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
    if annotations:
        out["metadata"] = dict(md, annotations={**(md.get("annotations") or {}), **annotations})
    return out


def own_grace(pod: Obj) -> int:
    """The pod's ``spec.terminationGracePeriodSeconds`` (Kubernetes' default 30 when unset)."""
    try:
        return max(0, int((pod.get("spec") or {}).get("terminationGracePeriodSeconds", EVICT_GRACE)))
    except (TypeError, ValueError):
        return EVICT_GRACE


def nominated_node(pod: Obj) -> Optional[str]:
    return (pod.get("status") or {}).get("nominatedNodeName") or None


def format_devices(allocation: dict[str, list[int]]) -> str:
    parts = [f"{kind} {','.join(map(str, ids))}" for kind, ids in sorted(allocation.items()) if ids]
    return "; ".join(parts) or "none"


class PodWrites:
    def __init__(self, gateway: ClusterGateway) -> None:
        self.gateway = gateway
        self.assumed: dict[str, str] = {}  # pod key -> node, binds in flight
        self.annotating: dict[str, dict[str, str]] = {}  # pod key -> annotations patched with the bind
        self.nominated: dict[str, Optional[str]] = {}  # pod key -> node (None: clearing), in flight
        self.devices: dict[str, dict[str, list[int]]] = {}  # pod key -> the session's device allocation
        self.creating: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ in-flight view
    def overlay(self, key: str, pod: Obj) -> Obj:
        """The cached pod with binds and nominations in flight applied."""
        node = self.assumed.get(key)
        if node and not pod_node(pod):
            pod = with_placement(pod, node, self.annotating.get(key))
        nominee = self.nominated.get(key)
        if key in self.nominated and nominated_node(pod) != nominee:
            status = {k: v for k, v in (pod.get("status") or {}).items() if k != "nominatedNodeName"}
            pod = dict(pod, status=dict(status, nominatedNodeName=nominee) if nominee else status)
        return pod

    def settle(self, pods: dict[str, Obj]) -> None:
        """Forget writes whose effect the cache now shows (or whose pod is gone)."""
        for key in [k for k in self.assumed if k not in pods or pod_node(pods[k])]:
            self.assumed.pop(key, None)
            self.annotating.pop(key, None)
        for key in [k for k, n in self.nominated.items() if k not in pods or nominated_node(pods[k]) == n]:
            self.nominated.pop(key, None)
        for key in [k for k in self.devices if k not in pods]:
            self.devices.pop(key, None)

    # ------------------------------------------------------------------ scheduling decisions
    def bind(self, pod_key: str, node: str, annotations: Optional[dict[str, str]] = None) -> None:
        self.assumed[pod_key] = node
        if annotations:
            self.annotating[pod_key] = dict(annotations)
        self._spawn(self._bind(pod_key, node, annotations))

    async def _bind(self, pod_key: str, node: str, annotations: Optional[dict[str, str]]) -> None:
        namespace, name = pod_key.split("/", 1)
        try:
            if annotations:
                await self.gateway.annotate_pod(namespace, name, dict(annotations))
            await self.gateway.bind_pod(namespace, name, node)
        except GatewayError as exc:
            log.warning("Binding Task %s to node %s failed: %s", pod_key, node, exc)
            self.assumed.pop(pod_key, None)
            self.annotating.pop(pod_key, None)

    def evict(self, pod_key: str, reason: str, pod: Optional[Obj]) -> None:
        self._spawn(self._evict(pod_key, reason or DEFAULT_EVICT_REASON, pod))

    async def _evict(self, pod_key: str, reason: str, pod: Optional[Obj]) -> None:
        namespace, name = pod_key.split("/", 1)
        try:
            await self.gateway.evict_pod(namespace, name, reason, EVICT_GRACE)
        except GatewayError as exc:
            log.warning("evict %s: %s", pod_key, exc)
            return
        if pod is not None:
            await self.gateway.record_event(pod, "Normal", "Evict", reason)

    def nominate(self, pod_key: str, node: Optional[str], pod: Obj) -> None:
        """Set (or with ``None`` clear) the pod's ``status.nominatedNodeName``."""
        if nominated_node(pod) == node or (pod_key in self.nominated and self.nominated[pod_key] == node):
            return
        self.nominated[pod_key] = node
        self._spawn(self._nominate(pod_key, node))

    async def _nominate(self, pod_key: str, node: Optional[str]) -> None:
        namespace, name = pod_key.split("/", 1)
        try:
            await self.gateway.nominate_pod(namespace, name, node)
        except GatewayError as exc:
            log.warning("nominate %s to node %s: %s", pod_key, node, exc)
            self.nominated.pop(pod_key, None)

    # ------------------------------------------------------------------ job controller writes
    async def create(self, pod: Obj) -> None:
        key = key_of(pod)
        if key in self.creating:
            return
        self.creating.add(key)
        try:
            await self.gateway.create_pod(pod)
        except GatewayError as exc:
            log.debug("create pod %s: %s", key, exc)
        finally:
            self.creating.discard(key)

    async def delete(self, namespace: str, name: str, grace: int = EVICT_GRACE) -> None:
        try:
            await self.gateway.delete_pod(namespace, name, grace)
        except GatewayError as exc:
            log.warning("delete pod %s/%s: %s", namespace, name, exc)

    async def delete_all(self, pods: list[Obj], why: str, grace: Optional[int] = EVICT_GRACE) -> None:
        """Delete ``pods`` (those not terminating yet) with ``grace`` (None: each pod's own
        ``terminationGracePeriodSeconds``, as ``kubectl delete`` does)."""
        for pod in pods:
            if not pod_terminating(pod):
                log.info("Deleting pod %s: %s", key_of(pod), why)
                await self.delete(pod["metadata"].get("namespace", "default"), pod["metadata"]["name"],
                                  own_grace(pod) if grace is None else grace)
