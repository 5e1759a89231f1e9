"""Bad or impossible input gives a clear Scheduled=False condition on the binding; nothing crashes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.controllers_fed.conftest import DATA, ROOT, SEED, Fed, load, until

CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "bad-input.yaml").read_text())
CLUSTERS = [ROOT / "tests" / "data" / "placement" / "clusters-seed.yaml", DATA / "clusters-extra.yaml"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
async def test_bad_input_reports_a_condition(fed: Fed, case: dict[str, Any]) -> None:
    for path in CLUSTERS:
        for cluster in load(path):
            await fed.apply(cluster)
    if case["policy"] is not None:
        await fed.apply({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                         "metadata": {"name": case["name"]}, "spec": case["policy"]})
    job = load(SEED / "job-gpu-dist-training.yaml")[0]
    if case.get("job_replicas"):
        job["spec"]["tasks"][0]["replicas"] = case["job_replicas"]
    await fed.apply(job)

    async def condition() -> dict[str, Any] | None:
        rb = await fed.rb("gpu-dist-training")
        for cond in ((rb or {}).get("status") or {}).get("conditions") or []:
            if cond["type"] == "Scheduled":
                return cond
        return None

    cond = await until(condition, "the Scheduled condition")
    assert cond["status"] == "False"
    assert cond["reason"] == case["reason"], cond
    assert case["message"] in cond["message"]
    rb = await fed.rb("gpu-dist-training")
    assert rb is not None and rb["spec"]["clusters"] == []
    assert await fed.works("gpu-dist-training") == {}
    events = await until(lambda: _warnings(fed), "a FailedScheduling event")
    assert case["reason"] in events[0]["message"]
    # the controllers are still alive: a job that fits is placed next to the failed one
    if case["name"] == "no-policy":
        for doc in load(SEED / "propagationpolicy-volcano-job-policy.yaml"):
            await fed.apply(doc)
        placed = await until(lambda: _has_clusters(fed), "placement once a policy exists")
        assert {c["name"] for c in placed["spec"]["clusters"]} == {"cluster-a", "cluster-b"}


async def _warnings(fed: Fed) -> list[dict[str, Any]]:
    return [e for e in await fed.events("gpu-dist-training") if e["reason"] == "FailedScheduling"]


async def _has_clusters(fed: Fed) -> dict[str, Any] | None:
    rb = await fed.rb("gpu-dist-training")
    return rb if rb and rb["spec"].get("clusters") else None
