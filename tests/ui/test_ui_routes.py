"""``/ui`` on a real in-process API server: 401 with a login hint and no data without a token, the
page and its documents with a viewer token; the documents' shape (pure builders)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from federation.apiserver.server import ApiServer, ServerConfig
from federation.ui import data
from tests.federation_status.builders import cluster, work


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data")) as srv:  # the API only: no controllers
        yield srv


async def _get(srv: ApiServer, path: str, token: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as session, session.get(srv.url + path, headers=headers) as response:
        return response.status, await response.text(), dict(response.headers)


@pytest.mark.parametrize("token", [None, "", "not-a-token"])
async def test_ui_without_a_valid_token_is_401_with_a_login_hint(server: ApiServer, token: str | None) -> None:
    for path in ("/ui", "/ui/", "/ui/jobs/default/train"):
        status, body, headers = await _get(server, path, token)
        assert status == 401, path
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert "caldera token --role viewer" in body and 'type="password"' in body
        assert "Traceback" not in body


async def test_ui_documents_need_a_token(server: ApiServer) -> None:
    for path in ("/ui/api/overview", "/ui/api/jobs/default/train"):
        status, body, _ = await _get(server, path, "wrong")
        assert status == 401 and '"kind":"Status"' in body.replace(" ", "") and "Traceback" not in body


async def test_a_viewer_token_reads_the_page_and_the_documents(server: ApiServer) -> None:
    viewer = server.mint_token("viewer")
    status, body, _ = await _get(server, "/ui", viewer)
    assert status == 200 and "<title>Caldera federation</title>" in body
    assert viewer not in body
    for name, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        status, body, headers = await _get(server, f"/ui/static/{name}")
        assert status == 200 and kind in headers["Content-Type"] and body
    status, body, _ = await _get(server, "/ui/static/routes.py")
    assert status == 404 and "no static file" in body  # only the named files, never a path
    status, body, _ = await _get(server, "/ui/static/../../tokens.csv")
    assert status in (401, 404) and "," not in body.split("{", 1)[0]
    status, body, _ = await _get(server, "/ui/api/overview", viewer)
    assert status == 200
    assert '"clusters":[]' in body and '"queues":[{"name":"default"' in body and '"events":[]' in body
    status, body, _ = await _get(server, "/ui/api/jobs/default/nope", viewer)
    assert status == 404 and "no Job default/nope" in body and "Traceback" not in body


def test_overview_adds_queues_fragmentation_and_two_phase() -> None:
    queues = [{"name": "ai-training", "allocated": {"nvidia.com/gpu": "8"}, "capability": {"nvidia.com/gpu": "32"}}]
    a = cluster("cluster-a", gpus=[{"product": "A100", "total": 64, "free": 20, "fragmented": 4}])
    b = cluster("cluster-b")
    for member in (a, b):
        member["status"]["queues"] = queues
    doc = {"clusters": [{"name": "cluster-a", "gpus": {}}, {"name": "cluster-b", "gpus": {}}],
           "jobs": [{"namespace": "default", "name": "train"}, {"namespace": "default", "name": "solo"}]}
    held = [work("train", "cluster-a", 1, hold=2), work("train", "cluster-b", 1, hold=2)]
    held[0]["spec"]["placement"]["hold"] = True
    out = data.overview(doc, [a, b], held, [])
    assert [c["gpus"]["fragmented"] for c in out["clusters"]] == [4, 0]
    (queue,) = out["queues"]
    assert queue["allocated"] == {"nvidia.com/gpu": 16.0} and queue["clusters"] == ["cluster-a", "cluster-b"]
    assert [j["twoPhase"] for j in out["jobs"]] == ["Held", ""]


def test_two_phase_state_follows_the_newest_generation() -> None:
    assert data.two_phase_state([]) == ""
    old = {"spec": {"placement": {"generation": 1, "clusters": 2, "hold": False, "cancelled": True}}}
    new = {"spec": {"placement": {"generation": 2, "clusters": 2, "hold": False}}}
    assert data.two_phase_state([old, new]) == "Released"
    assert data.two_phase_state([old]) == "Cancelled"


def test_job_page_lists_pods_by_cluster_and_task_and_sorts_events() -> None:
    share = {"metadata": {"namespace": "karmada-es-cluster-b"}, "spec": {"placement": {"generation": 1}},
             "status": {"manifestStatuses": [{"status": {"taskStatusCount": {
                 "worker": {"phase": {"Running": 3, "Pending": 1}}}}}]}}
    events = [{"reason": "Scheduled", "lastTimestamp": "2026-12-03T07:00:00Z", "involvedObject": {"kind": "Job"}},
              {"reason": "Released", "lastTimestamp": "2026-12-03T07:00:05Z", "involvedObject": {"kind": "Job"}}]
    page = data.job_page({"name": "train", "namespace": "default"}, [share], events)
    assert page["pods"] == [{"cluster": "cluster-b", "task": "worker", "phases": {"Running": 3, "Pending": 1},
                             "total": 4}]
    assert [e["reason"] for e in page["events"]] == ["Released", "Scheduled"]


async def test_a_member_mode_server_has_no_dashboard(tmp_path: Path) -> None:
    async with ApiServer(ServerConfig(data_dir=tmp_path / "member", member_mode=True)) as member:
        status, body, _ = await _get(member, "/ui")
        assert status == 401 and "<html" not in body  # the API's own 401: no page, no route behind it
        status, _, _ = await _get(member, "/ui", member.admin_token)
        assert status == 404


def test_queue_table_shows_the_fleet_row_from_the_queue_and_each_cluster_under_it() -> None:
    """A Queue holds for the fleet: its capability is the Queue's, not the sum of the clusters' copies."""
    reports = {"cluster-a": {"allocated": {"nvidia.com/gpu": "8"}, "capability": {"nvidia.com/gpu": "32"}},
               "cluster-b": {"allocated": {"nvidia.com/gpu": "16"}, "capability": {"nvidia.com/gpu": "32"}}}
    members = []
    for name, report in reports.items():
        member = cluster(name)
        member["status"]["queues"] = [{"name": "ai-training", **report}]
        members.append(member)
    fleet_queue = {"metadata": {"name": "ai-training"}, "spec": {"weight": 3, "capability": {"nvidia.com/gpu": "32"}},
                   "status": {"allocated": {"nvidia.com/gpu": "24"}, "deserved": {"nvidia.com/gpu": "28"},
                              "allocatedByCluster": {"cluster-a": {"nvidia.com/gpu": "8"},
                                                     "cluster-b": {"nvidia.com/gpu": "16"}}}}
    (row,) = data.queue_rows(members, [fleet_queue])
    assert (row["allocated"], row["deserved"], row["capability"]) == (
        {"nvidia.com/gpu": 24.0}, {"nvidia.com/gpu": 28.0}, {"nvidia.com/gpu": 32.0})
    assert [(c["cluster"], c["allocated"]) for c in row["perCluster"]] == [
        ("cluster-a", {"nvidia.com/gpu": 8.0}), ("cluster-b", {"nvidia.com/gpu": 16.0})]
    (without,) = data.queue_rows(members)  # no Queue object: the reports' capability is not summed either
    assert without["capability"] == {"nvidia.com/gpu": 32.0} and without["allocated"] == {"nvidia.com/gpu": 24.0}
