"""PodWrites: annotations patched before the bind, writes in flight shown by the overlay, failures undone."""

from __future__ import annotations

import asyncio
from typing import Optional

from agent_fakes import settle

from member_agent.cluster.gateway import NotFound
from member_agent.pod_writes import PodWrites

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "annotations": {"a": "1"}},
       "spec": {"containers": []}, "status": {"phase": "Pending"}}


class RecordingGateway:
    """Records the order of pod writes; ``gate`` holds every write until set; ``fail`` names calls that raise."""

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple] = []
        self.gate = asyncio.Event()
        self.fail = fail

    async def _call(self, *call: object) -> None:
        await self.gate.wait()
        self.calls.append(call)
        if call[0] in self.fail:
            raise NotFound(f"{call[0]}: injected")

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, Optional[str]]) -> None:
        await self._call("annotate", f"{namespace}/{name}", dict(annotations))

    async def bind_pod(self, namespace: str, name: str, node: str) -> None:
        await self._call("bind", f"{namespace}/{name}", node)

    async def nominate_pod(self, namespace: str, name: str, node: Optional[str]) -> None:
        await self._call("nominate", f"{namespace}/{name}", node)

    async def evict_pod(self, namespace: str, name: str, reason: str, grace_period_seconds: int = 30) -> None:
        await self._call("evict", f"{namespace}/{name}", reason)

    async def record_event(self, involved: dict, event_type: str, reason: str, message: str) -> None:
        self.calls.append(("event", involved["metadata"]["name"], reason, message))


async def test_annotations_are_patched_before_the_bind_and_shown_while_in_flight() -> None:
    gateway = RecordingGateway()
    writes = PodWrites(gateway)  # type: ignore[arg-type]
    writes.bind("ns/p", "n1", {"volcano.sh/gpu-index": "3"})
    await settle()
    shown = writes.overlay("ns/p", POD)
    assert shown["spec"]["nodeName"] == "n1"
    assert shown["metadata"]["annotations"] == {"a": "1", "volcano.sh/gpu-index": "3"}
    assert "nodeName" not in POD["spec"] and "volcano.sh/gpu-index" not in POD["metadata"]["annotations"]
    gateway.gate.set()
    await settle()
    assert gateway.calls == [("annotate", "ns/p", {"volcano.sh/gpu-index": "3"}), ("bind", "ns/p", "n1")]
    bound = dict(POD, spec={"nodeName": "n1"})
    writes.settle({"ns/p": bound})  # the cache shows the bind: nothing in flight any more
    assert writes.overlay("ns/p", POD) is POD


async def test_failed_annotation_means_no_bind_and_the_pod_is_free_again() -> None:
    gateway = RecordingGateway(fail=("annotate",))
    gateway.gate.set()
    writes = PodWrites(gateway)  # type: ignore[arg-type]
    writes.bind("ns/p", "n1", {"volcano.sh/gpu-index": "0"})
    await settle()
    assert [c[0] for c in gateway.calls] == ["annotate"]
    assert writes.overlay("ns/p", POD) is POD and not writes.assumed


async def test_nomination_shown_until_seen_and_eviction_records_the_reason() -> None:
    gateway = RecordingGateway()
    writes = PodWrites(gateway)  # type: ignore[arg-type]
    writes.nominate("ns/p", "n2", POD)
    writes.nominate("ns/p", "n2", POD)  # already in flight: one write
    assert writes.overlay("ns/p", POD)["status"]["nominatedNodeName"] == "n2"
    writes.evict("ns/p", "reclaim: queue q is above its deserved share", POD)
    gateway.gate.set()
    await settle()
    assert gateway.calls == [("nominate", "ns/p", "n2"), ("evict", "ns/p", "reclaim: queue q is above its deserved share"),
                             ("event", "p", "Evict", "reclaim: queue q is above its deserved share")]
    writes.settle({"ns/p": dict(POD, status={"nominatedNodeName": "n2"})})
    assert not writes.nominated


async def test_failed_eviction_records_no_event() -> None:
    gateway = RecordingGateway(fail=("evict",))
    gateway.gate.set()
    writes = PodWrites(gateway)  # type: ignore[arg-type]
    writes.evict("ns/p", "", POD)
    await settle()
    assert gateway.calls == [("evict", "ns/p", "evicted by the scheduler")]


async def test_a_nomination_that_no_longer_holds_is_cleared_and_the_overlay_shows_it() -> None:
    gateway = RecordingGateway()
    writes = PodWrites(gateway)  # type: ignore[arg-type]
    nominated = dict(POD, status={"phase": "Pending", "nominatedNodeName": "n1"})
    writes.nominate("ns/p", None, nominated)
    await settle()
    assert "nominatedNodeName" not in writes.overlay("ns/p", nominated)["status"]
    gateway.gate.set()
    await settle()
    assert gateway.calls == [("nominate", "ns/p", None)]
    writes.settle({"ns/p": POD})  # the cache shows it cleared: nothing in flight
    assert writes.overlay("ns/p", POD) is POD
