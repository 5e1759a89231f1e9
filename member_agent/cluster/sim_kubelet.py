"""The simulated kubelet: runs bound pods on the cluster's clock.

A bound pod becomes ``Running`` after its start delay, then after its duration ends with the
exit code of ``caldera.io/sim-exit-code`` (default 0): 0 is ``Succeeded``, anything else
``Failed`` — unless ``restartPolicy`` is ``OnFailure``/``Always``, in which case a failed
container restarts (``restartCount`` goes up) as a real kubelet would. Durations come from
``caldera.io/sim-duration`` (``"90s"``, ``"2m"``, or seconds) or the default. A terminating pod
is removed when its grace period ends; a pod on a failed node fails with reason ``NodeLost``.

Work happens in :meth:`SimKubelet.step` (due transitions, in time order); :meth:`run` is the
loop that sleeps on the clock until the next transition or until a new pod is bound.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from member_agent.cluster.clock import Clock, rfc3339
from member_agent.cluster.gateway import (
    SIM_DURATION_ANNOTATION,
    SIM_EXIT_CODE_ANNOTATION,
    SIM_START_DELAY_ANNOTATION,
    Obj,
    node_ready,
    pod_node,
)
from member_agent.cluster.sim_logs import start_lines
from policies.k8s import durations


def parse_duration(text: object, default: float) -> float:
    """Seconds in ``"90s"``/``"1m30s"``/``"12.5"``; anything unreadable gives ``default``."""
    if text is None:
        return default
    value = str(text).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, durations.parse_seconds(value))
    except durations.InvalidDuration:
        return default


class KubeletHost(Protocol):
    """The cluster a kubelet runs pods for (:class:`member_agent.cluster.sim.SimCluster` implements
    it): its nodes and pods, and the two writes a kubelet makes. A protocol, so the kubelet needs
    no import of the cluster."""

    nodes: dict[str, Obj]
    pods: dict[str, Obj]

    def modify_pod(self, key: str, change: Callable[[Obj], Any]) -> Obj: ...

    def remove_pod(self, key: str) -> None: ...


@dataclass(frozen=True)
class KubeletOptions:
    start_delay: float = 1.0
    default_duration: float = 30.0
    #: ``--speed``: pods run this many times faster (delays, durations and grace periods divided).
    speed: float = 1.0


class SimKubelet:
    def __init__(self, cluster: KubeletHost, clock: Clock, options: KubeletOptions) -> None:
        self.cluster = cluster
        self.clock = clock
        self.options = options
        self._timers: list[tuple[float, int, str, str, str]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()

    # ------------------------------------------------------------ scheduling transitions
    def _scaled(self, seconds: float) -> float:
        return seconds / self.options.speed if self.options.speed > 0 else seconds

    def _at(self, due: float, key: str, action: str) -> None:
        uid = (self.cluster.pods[key].get("metadata") or {}).get("uid", "")
        heapq.heappush(self._timers, (due, next(self._seq), key, action, uid))
        self._wake.set()

    def _annotation(self, key: str, name: str) -> Optional[str]:
        return ((self.cluster.pods[key].get("metadata") or {}).get("annotations") or {}).get(name)

    def pod_bound(self, key: str) -> None:
        delay = parse_duration(self._annotation(key, SIM_START_DELAY_ANNOTATION), self.options.start_delay)
        self._at(self.clock.now() + self._scaled(delay), key, "start")

    def pod_terminating(self, key: str, grace: float) -> None:
        self._at(self.clock.now() + self._scaled(grace), key, "remove")

    def forget(self, key: str) -> None:
        """Stale timers are recognised by uid when they fire; the pod's log goes with it."""
        logs = getattr(self.cluster, "logs", None)
        if logs is not None:
            logs.forget(key)

    def next_due(self) -> Optional[float]:
        return self._timers[0][0] if self._timers else None

    # ------------------------------------------------------------ transitions
    def step(self) -> int:
        """Carry out every transition due by now; returns how many happened."""
        now = self.clock.now()
        done = 0
        while self._timers and self._timers[0][0] <= now:
            due, _, key, action, uid = heapq.heappop(self._timers)
            pod = self.cluster.pods.get(key)
            if pod is None or (pod.get("metadata") or {}).get("uid", "") != uid:
                continue
            if action == "remove":
                self.cluster.remove_pod(key)
                done += 1
            elif action == "start" and self._start(key, pod, due) or action == "finish" and self._finish(key, pod, due):
                done += 1
        return done

    def _start(self, key: str, pod: Obj, when: float) -> bool:
        node = self.cluster.nodes.get(pod_node(pod) or "")
        if (pod.get("status") or {}).get("phase") != "Pending" or node is None or not node_ready(node):
            return False
        if pod["metadata"].get("deletionTimestamp"):
            return False
        stamp = rfc3339(when)
        host_index = list(self.cluster.nodes).index(node["metadata"]["name"])
        pod_index = next(self._seq) % 65000

        def run(p: Obj) -> None:
            status = p.setdefault("status", {})
            status["phase"] = "Running"
            status["startTime"] = stamp
            status["hostIP"] = f"10.{host_index // 250}.{host_index % 250}.1"
            status["podIP"] = f"10.{128 + pod_index // 250 % 128}.{pod_index % 250}.{2 + host_index % 250}"
            status["conditions"] = _ready_conditions(status.get("conditions"), stamp, ready=True)
            status["containerStatuses"] = [
                {"name": c.get("name", f"c{i}"), "ready": True, "restartCount": 0, "started": True,
                 "image": c.get("image", ""), "state": {"running": {"startedAt": stamp}}}
                for i, c in enumerate((p.get("spec") or {}).get("containers") or [{}])
            ]

        self.cluster.modify_pod(key, run)
        self._log(key, start_lines(self.cluster.pods[key], stamp))
        duration = parse_duration(self._annotation(key, SIM_DURATION_ANNOTATION), self.options.default_duration)
        self._at(when + self._scaled(duration), key, "finish")
        return True

    def _finish(self, key: str, pod: Obj, when: float) -> bool:
        if (pod.get("status") or {}).get("phase") != "Running":
            return False
        raw = self._annotation(key, SIM_EXIT_CODE_ANNOTATION)
        try:
            exit_code = int(raw) if raw is not None else 0
        except ValueError:
            exit_code = 1
        stamp = rfc3339(when)
        restart_policy = (pod.get("spec") or {}).get("restartPolicy")
        if exit_code != 0 and restart_policy in ("OnFailure", "Always"):
            def restart(p: Obj) -> None:
                for cs in p["status"].get("containerStatuses") or []:
                    cs["restartCount"] = int(cs.get("restartCount", 0)) + 1
                    cs["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": stamp}}
                    cs["state"] = {"running": {"startedAt": stamp}}

            self.cluster.modify_pod(key, restart)
            self._log(key, [f"{stamp} exit: code {exit_code}; restarting ({restart_policy})"])
            duration = parse_duration(self._annotation(key, SIM_DURATION_ANNOTATION), self.options.default_duration)
            self._at(when + self._scaled(self.options.start_delay + duration), key, "finish")
            return True
        self._terminate(key, exit_code, "Completed" if exit_code == 0 else "Error", stamp)
        return True

    def _terminate(self, key: str, exit_code: int, reason: str, stamp: str, pod_reason: Optional[str] = None,
                   message: Optional[str] = None) -> None:
        def end(p: Obj) -> None:
            status = p.setdefault("status", {})
            status["phase"] = "Succeeded" if exit_code == 0 and pod_reason is None else "Failed"
            if pod_reason:
                status["reason"] = pod_reason
            if message:
                status["message"] = message
            status["conditions"] = _ready_conditions(status.get("conditions"), stamp, ready=False)
            containers = status.get("containerStatuses") or [
                {"name": c.get("name", f"c{i}"), "restartCount": 0, "image": c.get("image", "")}
                for i, c in enumerate((p.get("spec") or {}).get("containers") or [{}])
            ]
            for cs in containers:
                cs["ready"] = False
                cs["started"] = False
                cs["state"] = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": stamp}}
            status["containerStatuses"] = containers

        self.cluster.modify_pod(key, end)
        self._log(key, [f"{stamp} exit: code {exit_code} ({pod_reason or reason})"], running=False)

    def _log(self, key: str, lines: list[str], running: bool = True) -> None:
        """The container's log (sim_logs.py), when the cluster keeps one."""
        logs = getattr(self.cluster, "logs", None)
        if logs is not None:
            logs.write(key, lines, running)

    def lose(self, key: str, message: str) -> None:
        """The pod's node failed under it."""
        self._terminate(key, 137, "Error", rfc3339(self.clock.now()), pod_reason="NodeLost", message=message)

    # ------------------------------------------------------------ loop
    async def run(self, idle: float = 5.0) -> None:
        while True:
            self.step()
            due = self.next_due()
            delay = idle if due is None else min(idle, max(0.0, due - self.clock.now()))
            self._wake.clear()
            sleeper = asyncio.ensure_future(self.clock.sleep(delay))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sleeper, waker):
                    task.cancel()


def _ready_conditions(existing: Optional[list[dict[str, object]]], stamp: str, ready: bool) -> list[dict[str, object]]:
    kept = [c for c in existing or [] if c.get("type") not in ("Ready", "ContainersReady", "Initialized")]
    value = "True" if ready else "False"
    extra: dict[str, object] = {} if ready else {"reason": "PodCompleted"}
    return kept + [
        {"type": "Initialized", "status": "True", "lastTransitionTime": stamp},
        {"type": "Ready", "status": value, "lastTransitionTime": stamp, **extra},
        {"type": "ContainersReady", "status": value, "lastTransitionTime": stamp, **extra},
    ]
