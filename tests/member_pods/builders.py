"""Member pods as agents report them, and a small HTTP client for the in-process API server."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from federation.apiserver.server import ApiServer

CACHED_FROM = "resource.karmada.io/cached-from-cluster"


def pod(name: str, node: str, phase: str, generation: int, namespace: str = "team") -> dict[str, Any]:
    """A job pod as the member cluster holds it (Volcano's labels, the agent's generation label)."""
    task, _, index = name.rpartition("-")
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "trainer",
                                            "env": [{"name": "VC_TASK_INDEX", "value": index}]}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"volcano.sh/job-name": "job", "volcano.sh/task-spec": task.rpartition("-")[2],
                                    "volcano.sh/task-index": index,
                                    "caldera.io/placement-generation": str(generation)}},
            "spec": spec, "status": {"phase": phase}}


def podgroup(name: str, generation: int, namespace: str = "team") -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"caldera.io/placement-generation": str(generation)}},
            "spec": {"minMember": 2}, "status": {"phase": "Running"}}


def raw(cluster: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The copy an agent writes: ``karmada-es-<cluster>/<namespace>.<name>`` (docs/protocol.md)."""
    meta = obj["metadata"]
    return {**obj, "metadata": {**meta, "name": f"{meta['namespace']}.{meta['name']}",
                                "namespace": f"karmada-es-{cluster}",
                                "annotations": {CACHED_FROM: cluster}}}


class Client:
    def __init__(self, server: ApiServer, token: str) -> None:
        self.server = server
        self.token = token

    async def call(self, method: str, path: str, body: Any = None, accept: str = "application/json",
                   content_type: str | None = None, raw_text: bool = False) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept}
        data: Any = None
        if isinstance(body, bytes):
            data = body
        elif body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type or "application/json"
        async with aiohttp.ClientSession() as session, session.request(
                method, self.server.url + path, data=data, headers=headers) as response:
            text = await response.text()
            if raw_text and response.status == 200:
                return response.status, text
            try:
                return response.status, json.loads(text)
            except ValueError:
                return response.status, text

    async def create_raw(self, cluster: str, obj: dict[str, Any]) -> tuple[int, Any]:
        plural = "pods" if obj["kind"] == "Pod" else "podgroups"
        root = "/api/v1" if obj["kind"] == "Pod" else "/apis/scheduling.volcano.sh/v1beta1"
        return await self.call("POST", f"{root}/namespaces/karmada-es-{cluster}/{plural}", raw(cluster, obj))

    async def watch(self, path: str, count: int) -> list[dict[str, Any]]:
        """The first ``count`` events of a watch (the server replays them from the resourceVersion)."""
        events: list[dict[str, Any]] = []
        headers = {"Authorization": f"Bearer {self.token}"}
        async with aiohttp.ClientSession() as session, session.get(
                self.server.url + path, headers=headers, timeout=aiohttp.ClientTimeout(total=20)) as response:
            assert response.status == 200, await response.text()
            async for line in response.content:
                if line.strip():
                    events.append(json.loads(line))
                if len(events) >= count:
                    break
        return events
