"""The PodGroup copies the replay hands the scheduler cache (``policies.wire_objects.copy_wire_sharing``): a
copy that shares the previous copy's equal parts equals a fresh copy and shares nothing with the
PodGroup it copies, over random versions."""

from __future__ import annotations

import copy
import random
from typing import Any

from policies.wire_objects import copy_wire, copy_wire_sharing


def _group() -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "j-0", "namespace": "sim", "labels": {}, "annotations": {},
                         "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u", "controller": True}]},
            "spec": {"minMember": 1, "queue": "q", "minResources": {"cpu": "4", "nvidia.com/gpu": "1"}},
            "status": {"phase": "Pending"}}


def _move(rng: random.Random, group: dict[str, Any]) -> None:
    """What a job controller or a session moves in place: a status, annotations, the spec, a new part."""
    what = rng.randrange(5)
    if what == 0:
        group["status"]["phase"] = rng.choice(["Pending", "Inqueue", "Running"])
    elif what == 1:
        group["status"]["conditions"] = [{"type": "Scheduled", "status": "True", "transitionID": str(rng.random())}]
    elif what == 2:
        group["metadata"]["annotations"] = {"volcano.sh/job-allocated-hypernode": str(rng.randrange(3))}
    elif what == 3:
        group["spec"]["minMember"] = rng.randrange(1, 4)
    else:
        group["status"] = {"phase": "Running", "running": rng.randrange(3)}


def test_a_shared_copy_equals_a_fresh_one_and_shares_nothing_with_its_source() -> None:
    rng = random.Random(5)
    group = _group()
    last = None
    shared = 0
    for _ in range(400):
        _move(rng, group)
        if last is not None and last == group:
            continue  # the replay copies only a changed PodGroup
        made = copy_wire_sharing(group, last)
        assert made == copy_wire(group) and list(made) == list(group)
        before = copy.deepcopy(made)
        _move(rng, group)  # the source moves on in place: the copy handed to the cache does not
        _move(rng, group)
        assert made == before
        if last is not None:
            shared += sum(made[k] is last[k] for k in ("metadata", "spec"))
        last = made
    assert shared > 100  # the unchanged parts were shared, not copied
