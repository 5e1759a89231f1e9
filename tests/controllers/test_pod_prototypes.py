"""The pod prototypes kept by the identity of the Job's spec and template
(``pod_builder.task_prototype``): each equals :func:`prototype` made afresh, for Jobs sharing a spec
model (a replay's jobs of one shape) or not, under other PriorityClass values and job names."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from member_agent.controllers import pod_builder
from member_agent.controllers.job_view import view_job
from member_agent.controllers.pod_builder import prototype, task_prototype
from policies.models.volcano_batch import Job
from tests.controllers.harness import make_job, worker_task

specs = st.fixed_dictionaries({"tasks": st.just([worker_task("worker", 1), worker_task("ps", 1)])}, optional={
    "schedulerName": st.sampled_from(["volcano", "other"]),
    "priorityClassName": st.sampled_from(["high", "low", "none"]),
    "volumes": st.sampled_from([[{"mountPath": "/data"}], [{"mountPath": "/d", "volumeClaimName": "c"}]]),
})


def _sharing(job: Job, name: str) -> Job:
    """Another Job with the same spec model (as ``simulator/job_models.py`` makes them)."""
    return job.model_copy(update={"metadata": job.metadata.model_copy(update={"name": name})})


@settings(max_examples=120, deadline=None)
@given(specs, st.lists(st.tuples(st.sampled_from(["a", "b", "c"]),
                                 st.dictionaries(st.sampled_from(["high", "low"]), st.integers(0, 3), max_size=2),
                                 st.sampled_from([0, 1])), min_size=1, max_size=8))
def test_a_kept_prototype_equals_a_fresh_one(spec: dict[str, Any], asks: list[tuple[str, dict[str, int], int]]) -> None:
    pod_builder._PROTOTYPES.clear()
    first = make_job(copy.deepcopy(spec))
    for name, classes, position in asks:
        job = view_job(_sharing(first, name))
        task = job.tasks[position]
        kept = task_prototype(job, task, classes)
        assert kept == prototype(job, task, classes)


def test_the_kept_prototype_serves_the_jobs_of_a_spec_and_not_others() -> None:
    pod_builder._PROTOTYPES.clear()
    first = make_job({"tasks": [worker_task()]})
    a, b = view_job(first), view_job(_sharing(first, "other"))
    assert task_prototype(b, b.tasks[0], {}) is task_prototype(a, a.tasks[0], {})
    same_content = view_job(make_job({"tasks": [worker_task()]}))  # an equal spec, another model: not shared
    assert task_prototype(same_content, same_content.tasks[0], {}) is not task_prototype(a, a.tasks[0], {})
    assert task_prototype(a, a.tasks[0], {"x": 1}) is not task_prototype(a, a.tasks[0], {})
    # an unnamed claim is named after the job: not shared between jobs
    claimed = make_job({"tasks": [worker_task()], "volumes": [{"mountPath": "/data"}]})
    c, d = view_job(claimed), view_job(_sharing(claimed, "other"))
    assert task_prototype(c, c.tasks[0], {}).spec != task_prototype(d, d.tasks[0], {}).spec
