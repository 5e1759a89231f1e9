"""Binding preemption behind ResourceBindingPreemption: a preempted gang leaves every cluster and
is requeued whole; with the gate off nothing is preempted."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from federation.controllers.common import ControllerOptions
from tests.controllers_fed.conftest import DATA, FAST, Fed, load, until
from tests.controllers_fed.test_sched_queue_live import job, scheduled


@pytest.fixture
def options(request: pytest.FixtureRequest) -> ControllerOptions:
    opts = copy.copy(FAST)
    opts.queue_initial_backoff_seconds = opts.queue_max_backoff_seconds = 3600.0
    opts.feature_gates = {"ResourceBindingPreemption": getattr(request, "param", True)}
    return opts


def gang(name: str) -> dict[str, Any]:
    out = job(name, "ordinary")
    out["spec"]["minAvailable"] = 2
    out["spec"]["tasks"][0]["replicas"] = 2
    return out


async def placed_on(fed: Fed, name: str) -> dict[str, int] | None:
    rb = await scheduled(fed, name, "True")
    return {t["name"]: t["replicas"] for t in rb["spec"]["clusters"]} if rb else None


async def test_a_preempted_gang_leaves_as_a_unit_and_is_requeued_whole(fed: Fed) -> None:
    for doc in load(DATA / "preemption.yaml"):
        await fed.apply(doc)
    await fed.apply(gang("low"))
    assert await until(lambda: placed_on(fed, "low"), "the gang on both clusters") == {"pa": 1, "pb": 1}
    before = int((await fed.rb("low"))["metadata"]["annotations"]["caldera.io/placement-generation"])  # type: ignore[index]
    await until(lambda: _work_count(fed, "low", 2), "the gang's two Works")

    await fed.apply(job("urgent-job", "urgent"))
    assert await until(lambda: placed_on(fed, "urgent-job"), "the urgent job placed") == {"pa": 1}
    low = await until(lambda: _withdrawn(fed, "low", before), "the gang withdrawn under a new generation")
    assert not low["spec"].get("clusters")
    assert await until(lambda: _work_count(fed, "low", 0), "every Work of the gang withdrawn") is True
    events = await until(lambda: _reasons(fed, "low", "Preempted"), "a Preempted event on the gang's Job")
    assert "urgent-job" in events[0]["message"] and "cluster pa" in events[0]["message"]

    # it waits whole (8 GPUs free on pb are not enough for its 2 x 8), then comes back whole
    assert (await scheduled(fed, "low", "False")) is not None
    await fed.delete("batch.volcano.sh/v1alpha1", "Job", "urgent-job", "default")
    assert await until(lambda: placed_on(fed, "low"), "the gang placed again whole") == {"pa": 1, "pb": 1}


@pytest.mark.parametrize("options", [False], indirect=True)
async def test_with_the_gate_off_nothing_is_preempted(fed: Fed) -> None:
    for doc in load(DATA / "preemption.yaml"):
        await fed.apply(doc)
    await fed.apply(gang("low"))
    await until(lambda: placed_on(fed, "low"), "the gang placed")
    await fed.apply(job("urgent-job", "urgent"))
    await until(lambda: scheduled(fed, "urgent-job", "False"), "the urgent job waiting")
    assert await placed_on(fed, "low") == {"pa": 1, "pb": 1}


async def _withdrawn(fed: Fed, name: str, generation: int) -> dict[str, Any] | None:
    rb = await fed.rb(name)
    gen = int(((rb or {}).get("metadata") or {}).get("annotations", {}).get("caldera.io/placement-generation", 0))
    return rb if rb is not None and gen > generation and not rb["spec"].get("clusters") else None


async def _reasons(fed: Fed, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in await fed.events(name) if e.get("reason") == reason]


async def _work_count(fed: Fed, name: str, count: int) -> bool:
    return len(await fed.works(name)) == count
