"""The simulated kubelet's container logs: a few lines per pod, readable and followable.

A simulated pod "prints" what a distributed-training rank would say about itself: that it started
(node, container), its rank and the environment the job plugins gave it (``VC_TASK_INDEX``,
``MASTER_ADDR``, ``WORLD_SIZE``, ``RANK``), restarts, and its exit. Logs live as long as the pod
(kube keeps a container's log until the pod is deleted). :meth:`PodLogs.read` serves
``kubectl logs`` semantics: ``tail_lines``, ``limit_bytes``, ``follow`` (until the pod ends or
goes).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Optional

Obj = dict[str, Any]
#: what a rank reports of its environment, in this order
RANK_ENV = ("VC_TASK_INDEX", "MASTER_ADDR", "WORLD_SIZE", "RANK")
#: lines kept per pod (a sim pod writes a handful; a bound keeps a restart loop small)
MAX_LINES = 1000


def _env(pod: Obj) -> dict[str, str]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return {str(e.get("name")): str(e.get("value", "")) for e in containers[0].get("env") or []
            if isinstance(e, dict) and "value" in e}


def start_lines(pod: Obj, stamp: str) -> list[str]:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    env = _env(pod)
    container = (((pod.get("spec") or {}).get("containers") or [{}])[0]).get("name", "main")
    node = (pod.get("spec") or {}).get("nodeName") or "?"
    rank = env.get("RANK") or env.get("VC_TASK_INDEX") or labels.get("volcano.sh/task-index") or "?"
    task = labels.get("volcano.sh/task-spec") or "?"
    shown = " ".join(f"{name}={env[name]}" for name in RANK_ENV if name in env) or "(none of them set)"
    return [f"{stamp} start: container {container} of pod {meta.get('namespace')}/{meta.get('name')} on node {node}",
            f"{stamp} rank {rank} (task {task}, index {labels.get('volcano.sh/task-index', '?')})",
            f"{stamp} env {shown}"]


class PodLogs:
    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}
        self._open: set[str] = set()
        self._changed: dict[str, asyncio.Event] = {}

    def _wake(self, key: str) -> None:
        event = self._changed.pop(key, None)
        if event is not None:
            event.set()

    def write(self, key: str, lines: list[str], running: bool = True) -> None:
        kept = self._lines.setdefault(key, [])
        kept.extend(lines)
        del kept[:-MAX_LINES]
        if running:
            self._open.add(key)
        else:
            self._open.discard(key)
        self._wake(key)

    def forget(self, key: str) -> None:
        self._lines.pop(key, None)
        self._open.discard(key)
        self._wake(key)

    def has(self, key: str) -> bool:
        return key in self._lines

    def text(self, key: str) -> str:
        return "".join(line + "\n" for line in self._lines.get(key, []))

    async def read(self, key: str, follow: bool = False, tail_lines: Optional[int] = None,
                   limit_bytes: Optional[int] = None) -> AsyncIterator[bytes]:
        """The log's chunks; with ``follow``, new lines until the container ends or the pod goes."""
        lines = list(self._lines.get(key, []))
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines > 0 else []
        sent = len(self._lines.get(key, []))
        budget = limit_bytes if limit_bytes and limit_bytes > 0 else None
        chunk = "".join(line + "\n" for line in lines).encode()
        while True:
            if budget is not None:
                chunk = chunk[:budget]
                budget -= len(chunk)
            if chunk:
                yield chunk
            if not follow or budget == 0 or key not in self._open:
                return
            event = self._changed.setdefault(key, asyncio.Event())
            await event.wait()
            current = self._lines.get(key)
            if current is None:
                return
            chunk = "".join(line + "\n" for line in current[min(sent, len(current)):]).encode()
            sent = len(current)
