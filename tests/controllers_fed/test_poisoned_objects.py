"""A poisoned Job (stored past admission, e.g. before a rule existed) is reported once and parked:
Scheduled=False/SchedulerError on its binding, one FailedScheduling Event, no retry loop; fixing
its spec (a new generation) places it."""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

import pytest

from federation.apiserver.registry import resource_key, timestamp, utc_now
from federation.controllers.poison import POISON_AFTER_FAILURES, PoisonGuard
from federation.controllers.runner import WorkQueue, run_workers
from policies.kinds import lookup
from tests.controllers_fed.conftest import SEED, Fed, load, until
from tests.controllers_fed.test_placement_dispatch import scheduled, seed

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
#: Quantities admission now refuses but a store may still hold; each made placement raise before.
POISONS = ["1e309", "999999999999999999999999999999"]


def poisoned_job(name: str, gpus: Any, generation: int = 1, uid: str | None = None) -> dict[str, Any]:
    job = copy.deepcopy(load(SEED / "job-gpu-dist-training.yaml")[0])
    job["metadata"].update(name=name, namespace="default", uid=uid or str(uuid.uuid4()), generation=generation,
                           creationTimestamp=timestamp(utc_now()))
    job["spec"].update(queue="default", minAvailable=8)
    for task in job["spec"]["tasks"]:
        task.update(minAvailable=8, maxRetry=3)
        task["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus
    return job


def inject(fed: Fed, job: dict[str, Any]) -> None:
    """Write straight into the store, past admission (as an object stored before a rule tightened)."""
    fed.server.store.put(resource_key(JOBS), copy.deepcopy(job), "ADDED")


async def failed_scheduling(fed: Fed, name: str) -> list[dict[str, Any]]:
    return [e for e in await fed.events(name) if e.get("reason") == "FailedScheduling"]


async def test_poisoned_job_gets_a_condition_and_is_not_retried_until_it_changes(fed: Fed) -> None:
    await seed(fed)
    for index, gpus in enumerate(POISONS):
        inject(fed, poisoned_job(f"poisoned-{index}", gpus))
    for index in range(len(POISONS)):
        rb = await until(lambda i=index: _condition(fed, f"poisoned-{i}", "False"), f"poisoned-{index} reported")
        cond = scheduled(rb)
        assert cond is not None and cond["reason"] == "SchedulerError"
        assert "retried when the Job changes" in cond["message"] and POISONS[index] in cond["message"], cond
    events = await until(lambda: failed_scheduling(fed, "poisoned-0"), "the FailedScheduling event")
    assert len(events) == 1 and events[0]["type"] == "Warning" and events[0].get("count", 1) == 1
    rb_before = await fed.rb("poisoned-0")
    assert rb_before is not None
    # Something that queues every unscheduled job again (a Cluster change), then a healthy job: once the
    # healthy job is placed, the controller has been through its queue, and the poisoned job was skipped.
    await fed.patch("cluster.karmada.io/v1alpha1", "Cluster", "cluster-a", {"metadata": {"labels": {"x": "y"}}})
    for doc in load(SEED / "job-gpu-dist-training.yaml"):
        await fed.apply(doc)
    await until(lambda: _condition(fed, "gpu-dist-training", "True"), "the healthy job placed")
    rb_after = await fed.rb("poisoned-0")
    assert rb_after is not None
    assert rb_after["metadata"]["resourceVersion"] == rb_before["metadata"]["resourceVersion"]
    assert len(await failed_scheduling(fed, "poisoned-0")) == 1
    assert (await failed_scheduling(fed, "poisoned-0"))[0].get("count", 1) == 1
    # Fixing the spec is a new generation: the job is placed.
    stored = fed.server.store.get(resource_key(JOBS), "default", "poisoned-0")
    assert stored is not None
    inject(fed, poisoned_job("poisoned-0", 8, generation=2, uid=stored["metadata"]["uid"]))
    await until(lambda: _condition(fed, "poisoned-0", "True"), "the fixed job placed", timeout=20)


async def _condition(fed: Fed, job: str, status: str) -> dict[str, Any] | None:
    rb = await fed.rb(job)
    cond = scheduled(rb)
    return rb if cond is not None and cond.get("status") == status else None


FAILURES = [
    ("overflow", lambda: OverflowError("int too large to convert to float"), 1),
    ("unexpected", lambda: RuntimeError("a bug meeting odd data"), POISON_AFTER_FAILURES),
]


@pytest.mark.parametrize("what,make_error,attempts", FAILURES, ids=[f[0] for f in FAILURES])
async def test_run_workers_parks_a_poisoned_key_until_its_version_changes(what: str, make_error: Any,
                                                                           attempts: int) -> None:
    """OverflowError is permanent at once; an unexpected error after POISON_AFTER_FAILURES tries."""
    calls: list[Any] = []
    reports: list[tuple[Any, BaseException]] = []
    versions = {"k": 1}
    reported = asyncio.Event()

    async def reconcile(key: Any) -> None:
        calls.append((key, versions[key]))
        if versions[key] == 1:
            raise make_error()

    async def report(key: Any, err: BaseException) -> None:
        reports.append((key, err))
        reported.set()

    queue, stop = WorkQueue(), asyncio.Event()
    guard = PoisonGuard(lambda key: versions[key], report)
    task = asyncio.create_task(run_workers(queue, reconcile, stop, workers=1, base_backoff=0.01, guard=guard))
    queue.add("k")
    await asyncio.wait_for(reported.wait(), 10)
    assert len(calls) == attempts and len(reports) == 1 and guard.poisoned == {"k": 1}
    for _ in range(3):  # the same version again: skipped, not reconciled
        queue.add("k")
    await _drained(queue)
    assert len(calls) == attempts
    versions["k"] = 2  # the object changed: reconciled again, and it now succeeds
    queue.add("k")
    await _until_calls(calls, attempts + 1)
    assert calls[-1] == ("k", 2) and guard.poisoned == {}
    stop.set()
    await asyncio.wait_for(task, 10)


async def _drained(queue: WorkQueue) -> None:
    for _ in range(200):
        if len(queue) == 0 and not queue._active:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the work queue never drained")


async def _until_calls(calls: list[Any], count: int) -> None:
    for _ in range(500):
        if len(calls) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"reconcile was called {len(calls)} times, expected {count}")
