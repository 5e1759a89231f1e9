"""A gang job divided 1:2 across both seed clusters: both shares reserve, start together, complete,
and the federated Job's status shows the per-cluster breakdown."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.harness import Recorder, api, apply, capacity_reported, job_phase, named, seed_one, until
from federation.demo.processes import System

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

#: the seed's gpu-dist-training (8 workers x 8 GPUs) under the seed's 1:2 policy:
#: Webster's division gives cluster-a 3 and cluster-b 5; both fit whole nodes, so Karmada's answer stands.
EXPECTED_SPLIT = {"cluster-a": 3, "cluster-b": 5}
RESERVED = {"Reserved", "Released", "Running"}
RELEASED = {"Released", "Running"}


def replay(events: list[tuple[str, dict[str, Any]]], job: str, expected_shares: int = 2) -> dict[str, Any]:
    """Walk the Work events of one job in order and note what the two-phase protocol did."""
    prefix = f"default.{job}"
    latest: dict[str, dict[str, Any]] = {}  # cluster -> latest Work
    first_spec: dict[str, dict[str, Any]] = {}
    reserved_before_release: dict[str, bool] = {}
    started_together = None
    for _, work in events:
        md = work["metadata"]
        if (md.get("labels") or {}).get("caldera.io/job") != prefix:
            continue
        cluster = md["namespace"].removeprefix("karmada-es-")
        first_spec.setdefault(cluster, work["spec"])
        latest[cluster] = work
        gang = ((work.get("status") or {}).get("gang") or {}).get("phase")
        if gang == "Reserved":
            reserved_before_release.setdefault(cluster, True)
        elif gang in RELEASED:
            reserved_before_release.setdefault(cluster, False)
        running = [c for c, w in latest.items() if _running(w) > 0]
        if running and started_together is None:
            # when the first pod of any share runs, the federation has released every share (hold off)
            # and every share had reserved (another agent may not have reported Released yet)
            gangs = {c: ((w.get("status") or {}).get("gang") or {}).get("phase") for c, w in latest.items()}
            released = {c: not (w["spec"].get("placement") or {}).get("hold") for c, w in latest.items()}
            started_together = (len(latest) == expected_shares and all(released.values())
                                and all(g in RESERVED for g in gangs.values()))
    return {"first_spec": first_spec, "reserved_first": reserved_before_release,
            "started_together": started_together, "latest": latest}


def _running(work: dict[str, Any]) -> int:
    statuses = (work.get("status") or {}).get("manifestStatuses") or [{}]
    return int(((statuses[0].get("status") or {}).get("running")) or 0)


async def test_gang_job_split_one_to_two(seed_system: System) -> None:
    job = named(seed_one("job-gpu-dist-training.yaml"), "split-training", seconds=60)
    async with api(seed_system) as rc, Recorder(rc, "works") as works:
        await capacity_reported(rc, seed_system)  # placement counts on every cluster's capacity
        await apply(rc, seed_one("propagationpolicy-volcano-job-policy.yaml"), job)
        done = await until(lambda: job_phase(rc, "split-training", "Completed"), 120, "split-training Completed")

    seen = replay(works.events, "split-training")
    shares = {c: w["spec"]["workload"]["manifests"][0]["spec"] for c, w in seen["latest"].items()}
    assert {c: sum(t["replicas"] for t in s["tasks"]) for c, s in shares.items()} == EXPECTED_SPLIT
    assert {c: s["minAvailable"] for c, s in shares.items()} == EXPECTED_SPLIT  # gang: all of each share
    assert sum(s["minAvailable"] for s in shares.values()) == 8

    # two-phase start: written held, each share reserved before it was released, all started together
    for cluster, spec in seen["first_spec"].items():
        assert spec["placement"]["hold"] is True, cluster
        assert spec["placement"]["clusters"] == 2, cluster
    assert seen["reserved_first"] == {"cluster-a": True, "cluster-b": True}
    assert seen["started_together"] is True

    # global indices: the shares' offsets tile 0..7
    offsets = sorted(int(_offsets(w)["worker"]) for w in seen["latest"].values())
    assert offsets == [0, 3] or offsets == [0, 5]

    breakdown = {c["name"]: c for c in done["status"]["clusters"]}
    assert set(breakdown) == set(EXPECTED_SPLIT)
    for cluster, replicas in EXPECTED_SPLIT.items():
        assert breakdown[cluster]["replicas"] == replicas
        assert breakdown[cluster]["minAvailable"] == replicas
        assert breakdown[cluster]["succeeded"] == replicas
        assert breakdown[cluster]["phase"] == "Completed"
    assert done["status"]["succeeded"] == 8


def _offsets(work: dict[str, Any]) -> dict[str, Any]:
    import json

    manifest = work["spec"]["workload"]["manifests"][0]
    return dict(json.loads(manifest["metadata"]["annotations"]["caldera.io/task-offsets"]))
