"""Karmada's claim marks on a propagated Job and its binding (the permanent-id label, policy annotations)."""

from __future__ import annotations

from typing import Any

import pytest

from federation.controllers.claim import (
    CPP_NAME,
    CPP_PERMANENT_ID,
    PP_NAME,
    PP_NAMESPACE,
    PP_PERMANENT_ID,
    claim_patch,
)
from tests.controllers_fed.conftest import SEED, Fed, load, until
from tests.controllers_fed.test_policies_and_idempotence import POLICY, seed

BATCH = "batch.volcano.sh/v1alpha1"


@pytest.mark.slow
async def test_placed_job_and_binding_carry_the_policy_marks_and_lose_them_with_the_policy(fed: Fed) -> None:
    await seed(fed)
    policy = await fed.get(POLICY, "PropagationPolicy", "volcano-job-policy", "default")
    assert policy is not None
    await fed.apply(load(SEED / "job-gpu-dist-training.yaml")[0])

    async def marked() -> dict[str, Any] | None:
        job = await fed.get(BATCH, "Job", "gpu-dist-training", "default")
        return job if PP_PERMANENT_ID in ((job or {})["metadata"].get("labels") or {}) else None

    job = await until(marked, "the permanent-id label on the Job")
    assert job["metadata"]["labels"][PP_PERMANENT_ID] == policy["metadata"]["uid"]
    notes = job["metadata"]["annotations"]
    assert (notes[PP_NAME], notes[PP_NAMESPACE]) == ("volcano-job-policy", "default")
    rb = await until(lambda: fed.rb("gpu-dist-training"), "the binding")
    assert rb["metadata"]["labels"][PP_PERMANENT_ID] == policy["metadata"]["uid"]
    assert rb["metadata"]["annotations"][PP_NAME] == "volcano-job-policy"

    await fed.delete(POLICY, "PropagationPolicy", "volcano-job-policy", "default")

    async def unmarked() -> dict[str, Any] | None:
        job = await fed.get(BATCH, "Job", "gpu-dist-training", "default")
        labels = (job or {})["metadata"].get("labels") or {}
        return job if PP_PERMANENT_ID not in labels else None

    job = await until(unmarked, "the marks removed once no policy claims the Job")
    assert PP_NAME not in (job["metadata"].get("annotations") or {})


def test_claim_patch_switches_from_a_pp_to_a_cpp_and_is_none_when_in_line() -> None:
    pp = {"kind": "PropagationPolicy", "metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}
    cpp = {"kind": "ClusterPropagationPolicy",
           "metadata": {"name": "c", "uid": "u2", "labels": {CPP_PERMANENT_ID: "kept-id"}}}
    job: dict[str, Any] = {"metadata": {"labels": {"app": "x"}, "annotations": {}}}
    first = claim_patch(job, pp)
    assert first == {"metadata": {"labels": {PP_PERMANENT_ID: "u1"},
                                  "annotations": {PP_NAME: "p", PP_NAMESPACE: "ns"}}}
    job["metadata"]["labels"].update(first["metadata"]["labels"])
    job["metadata"]["annotations"].update(first["metadata"]["annotations"])
    assert claim_patch(job, pp) is None
    switched = claim_patch(job, cpp)
    assert switched == {"metadata": {"labels": {CPP_PERMANENT_ID: "kept-id", PP_PERMANENT_ID: None},
                                     "annotations": {CPP_NAME: "c", PP_NAME: None, PP_NAMESPACE: None}}}
