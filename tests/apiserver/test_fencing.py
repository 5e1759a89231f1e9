"""Fencing a deposed controller leader: what its controllers send on waking (computed from what they
read before they were paused) is refused by the API itself, on SQLite and on etcd: a write carrying
a stale resourceVersion gets 409, and a Work whose placement generation goes back gets 422."""

from __future__ import annotations

import json
from typing import Any

from federation.apiserver.server import ApiServer
from tests.apiserver.helpers import request


async def _put(server: ApiServer, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    return await request(server, "PUT", path, body=json.dumps(body))


WORK = "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-a/works/default-train"


def _work(generation: int, hold: bool) -> dict[str, Any]:
    return {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "default-train", "namespace": "karmada-es-a"},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": "x"}}]},
                     "placement": {"generation": generation, "hold": hold, "clusters": 2}}}


async def test_late_writes_of_a_deposed_leader_are_refused(server: ApiServer) -> None:
    code, _ = await request(server, "POST", "/api/v1/namespaces", body=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-es-a"}}))
    assert code == 201
    code, read = await request(server, "POST", WORK.rsplit("/", 1)[0], body=json.dumps(_work(3, True)))
    assert code == 201
    # The new leader moves the placement on (generation 4) ...
    code, moved = await _put(server, WORK, dict(_work(4, True), metadata=read["metadata"]))
    assert code == 200
    # ... then the old one wakes up and sends what it computed from generation 3.
    stale = dict(_work(3, False), metadata=read["metadata"])
    code, body = await _put(server, WORK, stale)
    assert code == 409 and body["reason"] == "Conflict", "its resourceVersion is stale"
    unconditional = dict(stale, metadata={k: v for k, v in read["metadata"].items() if k != "resourceVersion"})
    code, body = await _put(server, WORK, unconditional)
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.placement.generation"
    assert "may not go back from 4 to 3" in body["message"]
    code, now = await request(server, "GET", WORK)
    assert now["spec"]["placement"] == moved["spec"]["placement"], "the new leader's decision stands"
