"""Karmada application failover: a share whose member Job stays Failed past tolerationSeconds is
evicted (a gracefulEvictionTasks entry), the job placed again without it, and the old Work removed
as its purgeMode says. Time is an injected clock the tests move; no sleeps."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import pytest

from federation.controllers import app_failover as af
from federation.controllers.common import ControllerOptions, rfc3339
from tests.controllers_fed.conftest import FAST, Fed, ready_cluster, until

T0 = 1_800_000_000.0


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.now  # real time moves (timers), the test adds jumps


CLOCK = Clock()


@pytest.fixture
def options() -> ControllerOptions:
    CLOCK.now = 0.0
    opts = copy.copy(FAST)
    opts.clock = CLOCK
    return opts


# --------------------------------------------------------------------------- pure checks

def _rb(app: dict[str, Any] | None, generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"annotations": {"caldera.io/placement-generation": str(generation)}},
            "spec": {"clusters": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 2}],
                     **({"failover": {"application": app}} if app is not None else {})}}


def _work(phase: str | None, since: float | None = None, generation: int = 1, gang: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if phase is not None:
        status["manifestStatuses"] = [{"status": {"state": {"phase": phase, "lastTransitionTime": rfc3339(since or T0)}}}]
    if gang is not None:
        status["gang"] = {"generation": generation, "phase": gang}
    return {"spec": {"placement": {"generation": generation}}, "status": status}


# (name, application, work on a, now, expected evicted, expected wake)
UNHEALTHY_CASES: list[tuple[str, Any, Any, float, set[str], float | None]] = [
    ("no application failover: never", None, _work("Failed", T0), T0 + 10_000, set(), None),
    ("tolerated below tolerationSeconds", {"decisionConditions": {"tolerationSeconds": 30}}, _work("Failed", T0),
     T0 + 29, set(), T0 + 30),
    ("evicted at tolerationSeconds", {"decisionConditions": {"tolerationSeconds": 30}}, _work("Failed", T0),
     T0 + 30, {"a"}, None),
    ("default tolerationSeconds is 300", {}, _work("Failed", T0), T0 + 299, set(), T0 + 300),
    ("health Unhealthy is Karmada's signal", {"decisionConditions": {"tolerationSeconds": 5}},
     {**_work("Running", T0), "status": {"manifestStatuses": [{"health": "Unhealthy", "status": {"state": {
         "phase": "Aborted", "lastTransitionTime": rfc3339(T0)}}}]}}, T0 + 5, {"a"}, None),
    ("health Healthy wins over the phase", {"decisionConditions": {"tolerationSeconds": 0}},
     {**_work("Failed", T0), "status": {"manifestStatuses": [{"health": "Healthy", "status": {"state": {
         "phase": "Failed", "lastTransitionTime": rfc3339(T0)}}}]}}, T0 + 5, set(), None),
    ("a running share is healthy", {"decisionConditions": {"tolerationSeconds": 0}}, _work("Running", T0),
     T0 + 100, set(), None),
    ("an older generation's failure does not count", {"decisionConditions": {"tolerationSeconds": 0}},
     _work("Failed", T0, generation=0), T0 + 100, set(), None),
]


@pytest.mark.parametrize("case", UNHEALTHY_CASES, ids=[c[0] for c in UNHEALTHY_CASES])
def test_unhealthy_shares_table(case: tuple[str, Any, Any, float, set[str], float | None]) -> None:
    _name, app, work, now, evicted, wake = case
    found, when = af.unhealthy_shares(_rb(app), {"a": work, "b": _work("Running")}, now)
    assert set(found) == evicted and when == wake


# (name, purge mode, task extras, new shares running, now - created, expected kept)
SETTLE_CASES: list[tuple[str, str, dict[str, Any], bool, float, bool]] = [
    ("Directly goes at once", "Directly", {}, False, 0, False),
    ("Gracefully waits for the new shares", "Gracefully", {"gracePeriodSeconds": 120}, False, 60, True),
    ("Gracefully goes once they run", "Gracefully", {"gracePeriodSeconds": 120}, True, 1, False),
    ("Gracefully goes after gracePeriodSeconds", "Gracefully", {"gracePeriodSeconds": 120}, False, 120, False),
    ("Never stays even when they run", "Never", {"suppressDeletion": True}, True, 10**6, True),
    ("Never goes once suppressDeletion is false", "Never", {"suppressDeletion": False}, False, 0, False),
]


@pytest.mark.parametrize("case", SETTLE_CASES, ids=[c[0] for c in SETTLE_CASES])
def test_settle_table(case: tuple[str, str, dict[str, Any], bool, float, bool]) -> None:
    _name, mode, extra, running, age, kept = case
    task = {"fromCluster": "a", "purgeMode": mode, "creationTimestamp": rfc3339(T0), **extra}
    gang = "Running" if running else "Reserved"
    keep, _ = af.settle([task], {"b": _work(None, generation=2, gang=gang), "c": _work(None, generation=2, gang=gang)},
                        2, T0 + age)
    assert (keep == [task]) is kept


def test_eviction_task_fields() -> None:
    rb = _rb({"purgeMode": "Gracefully", "gracePeriodSeconds": 90})
    [task] = af.eviction_tasks(rb, {"a": "application Failed for 40s"}, T0)
    assert task == {"fromCluster": "a", "purgeMode": "Gracefully", "gracePeriodSeconds": 90, "replicas": 2,
                    "reason": "ApplicationFailure", "message": "application Failed for 40s",
                    "producer": "resource-binding-application-failover-controller",
                    "creationTimestamp": rfc3339(T0)}
    [never] = af.eviction_tasks(_rb({"purgeMode": "Never"}), {"b": "x"}, T0)
    assert never["suppressDeletion"] is True and "gracePeriodSeconds" not in never


# --------------------------------------------------------------------------- through the controllers

def _cluster(name: str, nodes: int) -> dict[str, Any]:
    return ready_cluster(name, nodes, {"cpu": "64", "memory": "256Gi", "pods": "110"})


ABC = ("cluster-a", "cluster-b", "cluster-c")


def _policy(application: dict[str, Any], names: tuple[str, ...] = ABC) -> dict[str, Any]:
    weights = [{"targetCluster": {"clusterNames": [n]}, "weight": 1} for n in names]
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "af"},
            "spec": {"resourceSelectors": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}],
                     "placement": {"clusterAffinity": {"clusterNames": list(names)},
                                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                         "replicaDivisionPreference": "Weighted",
                                                         "weightPreference": {"staticWeightList": weights}}},
                     "failover": {"application": application}}}


def _job(name: str) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "w", "image": "busybox",
                                    "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}}}]}}
    # the clock jumps past tolerationSeconds and grace periods: keep the reserve timeout out of the way
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "annotations": {"caldera.io/reserve-timeout-seconds": "100000000"}},
            "spec": {"minAvailable": 6, "schedulerName": "volcano",
                     "tasks": [{"name": "worker", "replicas": 6, "template": pod}]}}


async def _generation(fed: Fed, job: str, generation: int, clusters: set[str]) -> dict[str, Any] | None:
    works = await fed.works(job)
    current = {n for n, w in works.items() if w["spec"]["placement"]["generation"] == generation}
    return works if current == clusters else None


async def _fail(fed: Fed, cluster: str, job: str, since: float) -> None:
    await fed.patch("work.karmada.io/v1alpha1", "Work", f"default.{job}", {"status": {"manifestStatuses": [
        {"identifier": {"ordinal": 0, "group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job",
                        "namespace": "default", "name": job},
         "health": "Unhealthy", "status": {"state": {"phase": "Failed", "lastTransitionTime": rfc3339(since)}}}]}},
        f"karmada-es-{cluster}", "status")


async def _start(fed: Fed, name: str, application: dict[str, Any]) -> None:
    for n in ("cluster-a", "cluster-b", "cluster-c"):
        await fed.apply(_cluster(n, 4))
    await fed.apply(_policy(application))
    await fed.apply(_job(name))
    await until(lambda: _generation(fed, name, 1, {"cluster-a", "cluster-b", "cluster-c"}), "generation 1 on a, b, c")
    for n in ("cluster-a", "cluster-b", "cluster-c"):
        await fed.gang(n, name, 1, "Running")


async def _evict_a(fed: Fed, name: str, tolerate: int) -> dict[str, Any]:
    """cluster-a's share fails; tolerated until the clock passes tolerationSeconds, then evicted."""
    await _fail(fed, "cluster-a", name, CLOCK())
    # below tolerationSeconds: a later job is placed, and this one has not moved
    await fed.apply(_job(f"{name}-probe"))
    await until(lambda: _generation(fed, f"{name}-probe", 1, {"cluster-a", "cluster-b", "cluster-c"}), "probe placed")
    rb = await fed.rb(name)
    assert rb["metadata"]["annotations"]["caldera.io/placement-generation"] == "1"
    assert not rb["spec"].get("gracefulEvictionTasks")
    CLOCK.now += tolerate + 1
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a", {"metadata": {"labels": {"poke": "1"}}})
    await until(lambda: _generation(fed, name, 2, {"cluster-b", "cluster-c"}), "generation 2 on b and c only")
    rb = await fed.rb(name)
    assert "cluster-a" not in {t["name"] for t in rb["spec"]["clusters"]}
    return rb


async def _tasks(fed: Fed, name: str) -> list[dict[str, Any]]:
    return list((await fed.rb(name))["spec"].get("gracefulEvictionTasks") or [])


async def _no_tasks_and_a_gone(fed: Fed, name: str) -> bool:
    return not await _tasks(fed, name) and "cluster-a" not in await fed.works(name)


async def test_directly_removes_the_old_work_at_once(fed: Fed) -> None:
    await _start(fed, "direct", {"decisionConditions": {"tolerationSeconds": 30}, "purgeMode": "Directly"})
    await _evict_a(fed, "direct", 30)
    # the new gang is still on hold (not Running), yet the old share is gone
    assert await until(lambda: _no_tasks_and_a_gone(fed, "direct"), "cluster-a's Work deleted")
    works = await fed.works("direct")
    assert all(w["spec"]["placement"]["hold"] for w in works.values())


async def test_gracefully_keeps_the_old_work_until_the_new_gang_runs(fed: Fed) -> None:
    await _start(fed, "graceful", {"decisionConditions": {"tolerationSeconds": 30}, "purgeMode": "Gracefully",
                                   "gracePeriodSeconds": 600})
    rb = await _evict_a(fed, "graceful", 30)
    [task] = rb["spec"]["gracefulEvictionTasks"]
    assert (task["fromCluster"], task["purgeMode"], task["reason"], task["gracePeriodSeconds"]) == \
        ("cluster-a", "Gracefully", "ApplicationFailure", 600)
    assert task["producer"] == "resource-binding-application-failover-controller" and task["creationTimestamp"]
    # two-phase rule for the re-placed gang: both new shares held, released only when both reserve
    works = await fed.works("graceful")
    assert works["cluster-b"]["spec"]["placement"]["hold"] and works["cluster-c"]["spec"]["placement"]["hold"]
    await fed.gang("cluster-b", "graceful", 2, "Reserved")
    await fed.gang("cluster-b", "graceful", 2, "Running")  # one new share running is not enough
    assert "cluster-a" in await fed.works("graceful") and await _tasks(fed, "graceful")
    await fed.gang("cluster-c", "graceful", 2, "Reserved")
    assert await until(lambda: _released(fed, "graceful"), "the new gang released")
    assert "cluster-a" in await fed.works("graceful")
    await fed.gang("cluster-c", "graceful", 2, "Running")
    assert await until(lambda: _no_tasks_and_a_gone(fed, "graceful"), "old Work and task removed once all run")


async def _released(fed: Fed, job: str) -> bool:
    works = await fed.works(job)
    new = [w for n, w in works.items() if n != "cluster-a"]
    return len(new) == 2 and not any(w["spec"]["placement"]["hold"] for w in new)


async def test_gracefully_removes_the_old_work_after_the_grace_period(fed: Fed) -> None:
    await _start(fed, "grace-ends", {"decisionConditions": {"tolerationSeconds": 30}, "purgeMode": "Gracefully",
                                     "gracePeriodSeconds": 120})
    await _evict_a(fed, "grace-ends", 30)
    assert "cluster-a" in await fed.works("grace-ends")
    CLOCK.now += 121
    await fed.gang("cluster-b", "grace-ends", 2, "Reserved")  # any Work event makes dispatch look again
    assert await until(lambda: _no_tasks_and_a_gone(fed, "grace-ends"), "old Work removed after gracePeriodSeconds")


async def test_never_keeps_the_old_work_until_suppression_is_lifted(fed: Fed) -> None:
    await _start(fed, "never", {"decisionConditions": {"tolerationSeconds": 30}, "purgeMode": "Never"})
    await _evict_a(fed, "never", 30)
    for n in ("cluster-b", "cluster-c"):
        await fed.gang(n, "never", 2, "Reserved")
    await until(lambda: _released(fed, "never"), "the new gang released")
    for n in ("cluster-b", "cluster-c"):
        await fed.gang(n, "never", 2, "Running")
    CLOCK.now += 10**6
    await fed.gang("cluster-b", "never", 2, "Running")
    [task] = await _tasks(fed, "never")
    assert task["suppressDeletion"] is True and "cluster-a" in await fed.works("never")
    await fed.patch("work.karmada.io/v1alpha2", "ResourceBinding", "never-job",
                    {"spec": {"gracefulEvictionTasks": [{**task, "suppressDeletion": False}]}}, "default")
    assert await until(lambda: _no_tasks_and_a_gone(fed, "never"), "old Work removed once suppression is lifted")


async def test_an_evicted_cluster_stays_excluded_when_nothing_else_fits(fed: Fed) -> None:
    for n in ABC:
        await fed.apply(_cluster(n, 4))
    await fed.apply(_policy({"decisionConditions": {"tolerationSeconds": 10}, "purgeMode": "Gracefully",
                             "gracePeriodSeconds": 600}, ("cluster-a",)))
    await fed.apply(_job("alone"))
    await until(lambda: _generation(fed, "alone", 1, {"cluster-a"}), "generation 1 on cluster-a")
    await _fail(fed, "cluster-a", "alone", CLOCK())
    CLOCK.now += 11
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a", {"metadata": {"labels": {"poke": "1"}}})

    async def unplaced() -> dict[str, Any] | None:
        rb = await fed.rb("alone")
        scheduled = next((c for c in (rb or {}).get("status", {}).get("conditions") or [] if c["type"] == "Scheduled"),
                         {})
        done = rb and not rb["spec"]["clusters"] and rb["spec"].get("gracefulEvictionTasks")
        return rb if done and scheduled.get("status") == "False" else None

    rb = await until(unplaced, "the binding unplaced with its eviction task")
    assert [t["fromCluster"] for t in rb["spec"]["gracefulEvictionTasks"]] == ["cluster-a"]
    # the old (failed) Work stays for the grace period, as Gracefully says
    assert "cluster-a" in await fed.works("alone")
