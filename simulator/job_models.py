"""The Job models of the replay's shares, one validated Job spec per shape.

``JobRun.start`` validates each share's Job (``Job.model_validate`` of the manifest, its creation
stamped). A trace's jobs come in a few shapes: their manifests differ in the metadata (name, uid)
and are otherwise equal, queue included. The Job model has no validator across its fields, so a
Job validates as its parts do: the model of a manifest equals the kept model of another manifest
with the same non-metadata parts, its metadata replaced by this manifest's (validated alone,
through Job's own validator). Jobs of one shape then share one ``JobSpec`` model, which nobody
changes in place (the controller replaces a Job's status with ``model_copy``, never its spec), and
what the controller keeps per spec (the pod prototype, ``pod_builder``) serves the whole shape.
``tests/simulate/test_job_models.py`` compares each with a validation.
"""

from __future__ import annotations

from typing import Any

from member_agent.cluster.clock import rfc3339
from member_agent.job_runner import JobRun
from member_agent.works import WorkRecord
from policies.lru import LRU
from policies.models.volcano_batch import Job
from policies.wire_objects import frozen_wire

#: the model of the first manifest of each shape, by its non-metadata parts (``frozen_wire``)
_SHAPES: LRU[Any, Job] = LRU(256)


def job_model(manifest: dict[str, Any], first_seen: float) -> Job:
    """``JobRun.start``'s model of ``manifest`` (without a status) first seen at ``first_seen``."""
    metadata = dict(manifest.get("metadata") or {})
    metadata.setdefault("creationTimestamp", rfc3339(first_seen))
    rest = {key: value for key, value in manifest.items() if key != "metadata"}
    key = frozen_wire(rest)
    kept = _SHAPES.get(key)
    if kept is None:
        kept = Job.model_validate({**manifest, "metadata": metadata})
        _SHAPES.put(key, kept)
        return kept
    # the same fields set as the kept one's (the same keys besides "metadata", which both have)
    return kept.model_copy(update={"metadata": Job.model_validate({"metadata": metadata}).metadata})


def start(record: WorkRecord, first_seen: float) -> JobRun:
    """``JobRun.start(record, first_seen)`` for a replay share (no status seeded): the Job's model
    by shape where the manifest is wire data without a status, else validated as ``start`` does."""
    manifest = record.job
    if not isinstance(manifest, dict) or "status" in manifest:
        return JobRun.start(record, first_seen)
    try:
        return JobRun(job=job_model(manifest, first_seen))
    except (TypeError, ValueError):  # not wire data, or refused: as JobRun.start decides
        return JobRun.start(record, first_seen)
