"""The replay's kubelet: a pod ends ``duration`` seconds after it starts, and what the kubelet
writes to its status when it starts and when it ends (exit code 0)."""

from __future__ import annotations

import heapq
from typing import Any, Iterator, Optional

Obj = dict[str, Any]


class PodEnds:
    """When each running pod's run time is over: a heap of (time, binding seq, job, pod). A pod
    deleted (evicted, restarted) before its end and bound again under the same name runs anew:
    only its latest binding's entry ends it."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, str]] = []
        self._latest: dict[tuple[str, str], int] = {}  # (job, pod) -> the seq of its latest binding
        self._seq = 0

    def start(self, job: str, name: str, ends_at: float) -> None:
        self._seq += 1
        self._latest[(job, name)] = self._seq
        heapq.heappush(self._heap, (ends_at, self._seq, job, name))

    def next(self) -> float:
        return self._heap[0][0] if self._heap else float("inf")

    def due(self, until: float) -> Iterator[tuple[str, str]]:
        """(job, pod) of each latest binding whose run time is over by ``until``, in end order."""
        while self._heap and self._heap[0][0] <= until:
            _when, seq, job, name = heapq.heappop(self._heap)
            if self._latest.get((job, name)) == seq:
                del self._latest[(job, name)]
                yield job, name


def running_status(start_time: str) -> Obj:
    return {"phase": "Running", "startTime": start_time,
            "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {}}}]}


def succeeded_status(start_time: Optional[str]) -> Obj:
    return {"phase": "Succeeded", "startTime": start_time,
            "containerStatuses": [{"name": "main", "ready": False,
                                   "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
