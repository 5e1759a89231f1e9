"""The embedded member cluster: nodes from a cluster file, pods in memory, a simulated kubelet.

:class:`SimCluster` is a tiny synchronous object store with Kubernetes' semantics where the
agent depends on them: one increasing resourceVersion, ADDED/MODIFIED/DELETED watch events
replayed from a bounded history (an older resourceVersion raises :class:`Gone`, like a 410),
create conflicts, binding conflicts, graceful deletion (the pod stays, terminating, until the
kubelet removes it). :class:`SimGateway` puts the async :class:`ClusterGateway` face on it.

Fault injection for tests and demos: :meth:`SimCluster.fail_node` / :meth:`recover_node`
(the agent also serves them over HTTP, docs/agent.md).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from collections import deque
from typing import Any, AsyncIterator, Optional

from member_agent.cluster.clock import Clock, rfc3339
from member_agent.cluster.gateway import (
    AlreadyExists,
    BindConflict,
    Gone,
    Listing,
    NotFound,
    Obj,
    WatchEvent,
    key_of,
    pod_node,
)
from member_agent.cluster.sim_kubelet import KubeletOptions, SimKubelet
from member_agent.cluster.sim_logs import PodLogs

#: watch events kept for a watcher that resumes from an older resourceVersion (older ones get Gone and
#: relist, as from kube-apiserver, whose watch cache keeps 100 per resource by default). Each entry is a
#: deep copy of a whole pod or node (~4 KiB), and every pod leaves ~6 of them: 5000 bound an agent that
#: ran ~1000 pods at tens of MiB, 500 at ~2 MiB once ~80 pods had run; the only watcher is this process's
#: own cache, which resumes from the resourceVersion of the listing it just made (within a few events).
HISTORY = 100
#: Events kept (the newest; kube-apiserver drops them after an hour): ~0.7 KiB each, only tests read them.
EVENTS = 500


class SimCluster:
    def __init__(self, nodes: list[Obj], clock: Clock, options: Optional[KubeletOptions] = None,
                 history: int = HISTORY) -> None:
        self.clock = clock
        self._rv = itertools.count(1)
        self.resource_version = 0
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}
        self.events: deque[Obj] = deque(maxlen=EVENTS)
        #: Job plugins' objects (ConfigMap, Service, Secret, ...) by (kind, namespace, name).
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self._history: deque[tuple[int, str, WatchEvent]] = deque(maxlen=history)
        self._first_kept = 1
        self._subscribers: list[tuple[str, asyncio.Queue[Optional[WatchEvent]]]] = []
        self.logs = PodLogs()  # the containers' logs the sim kubelet writes (sim_logs.py)
        self.kubelet = SimKubelet(self, clock, options or KubeletOptions())
        for node in nodes:
            self._put("Node", node["metadata"]["name"], copy.deepcopy(node), "ADDED")

    # ----------------------------------------------------------------- store core
    def _stamp(self, obj: Obj) -> None:
        self.resource_version = next(self._rv)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.resource_version)

    def _put(self, kind: str, key: str, obj: Obj, event_type: str) -> Obj:
        md = obj.setdefault("metadata", {})
        if event_type == "ADDED":
            md.setdefault("uid", str(uuid.uuid4()))
            md.setdefault("creationTimestamp", rfc3339(self.clock.now()))
        self._stamp(obj)
        table = self.nodes if kind == "Node" else self.pods
        if event_type == "DELETED":
            table.pop(key, None)
        else:
            table[key] = obj
        self._publish(kind, event_type, obj)
        return obj

    def _publish(self, kind: str, event_type: str, obj: Obj) -> None:
        if len(self._history) == self._history.maxlen:
            self._first_kept = self._history[0][0] + 1
        event = WatchEvent(event_type, copy.deepcopy(obj))
        self._history.append((self.resource_version, kind, event))
        for wanted, queue in self._subscribers:
            if wanted == kind:
                queue.put_nowait(event)

    def modify_pod(self, key: str, change: Any) -> Obj:
        """Apply ``change(pod)`` in place and publish MODIFIED."""
        pod = self.pods.get(key)
        if pod is None:
            raise NotFound(f"pod {key} not found")
        change(pod)
        return self._put("Pod", key, pod, "MODIFIED")

    def modify_node(self, name: str, change: Any) -> Obj:
        node = self.nodes.get(name)
        if node is None:
            raise NotFound(f"node {name} not found")
        change(node)
        return self._put("Node", name, node, "MODIFIED")

    def remove_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None:
            self.kubelet.forget(key)
            self._put("Pod", key, pod, "DELETED")

    # ----------------------------------------------------------------- reads and watches
    def list(self, kind: str) -> Listing:
        table = self.nodes if kind == "Node" else self.pods
        return Listing([copy.deepcopy(o) for o in table.values()], str(self.resource_version))

    async def watch(self, kind: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        since = int(resource_version or 0)
        if since + 1 < self._first_kept:
            raise Gone(f"too old resource version: {since} ({self._first_kept - 1})")
        queue: asyncio.Queue[Optional[WatchEvent]] = asyncio.Queue()
        for rv, k, event in self._history:
            if rv > since and k == kind:
                queue.put_nowait(event)
        entry = (kind, queue)
        self._subscribers.append(entry)
        try:
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event
        finally:
            self._subscribers.remove(entry)

    def close_watches(self) -> None:
        for _, queue in self._subscribers:
            queue.put_nowait(None)

    # ----------------------------------------------------------------- pod writes
    def create_pod(self, pod: Obj) -> Obj:
        pod = copy.deepcopy(pod)
        md = pod.setdefault("metadata", {})
        md.setdefault("namespace", "default")
        if not md.get("name"):
            raise ValueError("pod metadata.name is required")
        key = key_of(pod)
        if key in self.pods:
            raise AlreadyExists(f"pods {md['name']!r} already exists in namespace {md['namespace']!r}")
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        status = pod.setdefault("status", {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", "Burstable")
        created = self._put("Pod", key, pod, "ADDED")
        if pod_node(created):
            self.kubelet.pod_bound(key)
        return copy.deepcopy(created)

    def bind(self, namespace: str, name: str, node: str) -> None:
        key = f"{namespace}/{name}"
        pod = self.pods.get(key)
        if pod is None:
            raise NotFound(f"pod {key} not found")
        current = pod_node(pod)
        if current == node:
            return
        if current:
            raise BindConflict(f'pod {name} is already assigned to node "{current}"')
        if node not in self.nodes:
            raise NotFound(f"node {node} not found")

        def assign(p: Obj) -> None:
            p["spec"]["nodeName"] = node
            conditions = [c for c in p["status"].get("conditions") or [] if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(self.clock.now())})
            p["status"]["conditions"] = conditions

        self.modify_pod(key, assign)
        self.kubelet.pod_bound(key)

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: Optional[int] = None) -> None:
        key = f"{namespace}/{name}"
        pod = self.pods.get(key)
        if pod is None:
            return
        grace = 30 if grace_period_seconds is None else max(0, int(grace_period_seconds))
        running = pod_node(pod) and (pod.get("status") or {}).get("phase") in ("Pending", "Running")
        if grace == 0 or not running:
            self.remove_pod(key)
            return
        if pod["metadata"].get("deletionTimestamp"):
            return

        def mark(p: Obj) -> None:
            p["metadata"]["deletionTimestamp"] = rfc3339(self.clock.now() + grace)
            p["metadata"]["deletionGracePeriodSeconds"] = grace

        self.modify_pod(key, mark)
        self.kubelet.pod_terminating(key, grace)

    def evict(self, namespace: str, name: str, reason: str, grace_period_seconds: int = 30) -> None:
        key = f"{namespace}/{name}"
        if key not in self.pods:
            return

        def disrupt(p: Obj) -> None:
            conditions = [c for c in p["status"].get("conditions") or [] if c.get("type") != "DisruptionTarget"]
            conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                               "message": reason, "lastTransitionTime": rfc3339(self.clock.now())})
            p["status"]["conditions"] = conditions

        self.modify_pod(key, disrupt)
        self.delete_pod(namespace, name, grace_period_seconds)

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, Optional[str]]) -> None:
        def patch(p: Obj) -> None:
            current = p["metadata"].setdefault("annotations", {})
            for k, v in annotations.items():
                if v is None:
                    current.pop(k, None)
                else:
                    current[k] = v

        self.modify_pod(f"{namespace}/{name}", patch)

    def nominate(self, namespace: str, name: str, node: Optional[str]) -> None:
        def patch(p: Obj) -> None:
            status = p.setdefault("status", {})
            if node:
                status["nominatedNodeName"] = node
            else:
                status.pop("nominatedNodeName", None)

        self.modify_pod(f"{namespace}/{name}", patch)

    def record_event(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        md = involved.get("metadata") or {}
        self.events.append({
            "type": event_type, "reason": reason, "message": message,
            "involvedObject": {"kind": involved.get("kind"), "namespace": md.get("namespace"),
                               "name": md.get("name"), "uid": md.get("uid")},
            "lastTimestamp": rfc3339(self.clock.now()),
        })

    # ----------------------------------------------------------------- node faults
    def fail_node(self, name: str, reason: str = "NodeFailure") -> None:
        """The node goes NotReady; every pod on it that was still running fails with ``NodeLost``."""

        def down(n: Obj) -> None:
            n["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": reason,
                                          "message": f"node {name} failed ({reason})",
                                          "lastTransitionTime": rfc3339(self.clock.now())}]

        self.modify_node(name, down)
        for key, pod in list(self.pods.items()):
            if pod_node(pod) == name and (pod.get("status") or {}).get("phase") in ("Pending", "Running"):
                self.kubelet.lose(key, f"node {name} failed")

    def recover_node(self, name: str) -> None:
        def up(n: Obj) -> None:
            n["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                          "lastTransitionTime": rfc3339(self.clock.now())}]

        self.modify_node(name, up)

    def cordon(self, name: str, unschedulable: bool = True) -> None:
        self.modify_node(name, lambda n: n.setdefault("spec", {}).__setitem__("unschedulable", unschedulable))


class SimGateway:
    """:class:`ClusterGateway` over a :class:`SimCluster` in the same event loop."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster

    async def list_nodes(self) -> Listing:
        return self.cluster.list("Node")

    async def list_pods(self) -> Listing:
        return self.cluster.list("Pod")

    def watch_nodes(self, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self.cluster.watch("Node", resource_version)

    def watch_pods(self, resource_version: str) -> AsyncIterator[WatchEvent]:
        return self.cluster.watch("Pod", resource_version)

    async def create_pod(self, pod: Obj) -> Obj:
        return self.cluster.create_pod(pod)

    async def delete_pod(self, namespace: str, name: str, grace_period_seconds: Optional[int] = None) -> None:
        self.cluster.delete_pod(namespace, name, grace_period_seconds)

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        self.cluster.bind(namespace, name, node)

    async def evict_pod(self, namespace: str, name: str, reason: str, grace_period_seconds: int = 30) -> None:
        self.cluster.evict(namespace, name, reason, grace_period_seconds)

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, Optional[str]]) -> None:
        self.cluster.annotate_pod(namespace, name, annotations)

    async def nominate_pod(self, namespace: str, name: str, node: Optional[str]) -> None:
        self.cluster.nominate(namespace, name, node)

    async def record_event(self, involved: Obj, event_type: str, reason: str, message: str) -> None:
        self.cluster.record_event(involved, event_type, reason, message)

    async def apply_object(self, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        self.cluster.objects[(str(obj.get("kind")), str(md.get("namespace") or "default"), str(md.get("name")))] = \
            copy.deepcopy(obj)

    async def delete_object(self, kind: str, namespace: str, name: str) -> None:
        self.cluster.objects.pop((kind, namespace, name), None)

    def pod_log(self, namespace: str, name: str, follow: bool = False, tail_lines: Optional[int] = None,
                limit_bytes: Optional[int] = None, container: str = "") -> AsyncIterator[bytes]:
        """The log the sim kubelet wrote (:class:`NotFound` for an unknown pod); a sim pod has one log
        whatever ``container`` is named."""
        key = f"{namespace}/{name}"
        if key not in self.cluster.pods:
            raise NotFound(f'pods "{name}" not found')
        return self.cluster.logs.read(key, follow, tail_lines, limit_bytes)

    async def close(self) -> None:
        self.cluster.close_watches()
