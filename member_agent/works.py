"""Works as the agent holds them: the share's Volcano Job, its placement (two-phase start) and
what the agent reports back on the Work's status (docs/protocol.md).

:func:`parse_work` decodes and admits the Work's one Job manifest with the same codec and
admission the federation uses; a bad manifest gives a :class:`WorkRecord` with ``error`` set,
which the agent reports as ``Applied=False`` with the reason and otherwise leaves alone.

Fencing: a Work's *placement generation* is ``spec.placement.generation`` (or the Job's
``caldera.io/placement-generation`` annotation, or ``metadata.generation``). The agent keeps
the highest generation it has seen per Work uid and ignores anything older; it deletes every pod
of a generation older than ``spec.placement.keepsFromGeneration`` (the oldest generation a
re-division for a changed spec keeps; absent: the generation itself), bound or not, and says in ``status.observedPlacementGeneration`` which
generation its status describes (the federation counts no status of an older one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from member_agent.cluster.clock import rfc3339
from member_agent.cluster.gateway import Obj
from policies.codec import admit_all, decode_text
from policies.models.karmada_work import JOB_UID, OBSERVED_PLACEMENT_GENERATION, PLACEMENT_GENERATION

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
GENERATION_ANNOTATION = PLACEMENT_GENERATION
WORK_UID_LABEL = "caldera.io/work-uid"
WORK_LABEL = "caldera.io/work"
GENERATION_LABEL = PLACEMENT_GENERATION
#: pod label: which fence stops the pod when its agent is cut off, known without the Work (a
#: restarted agent, member_agent/fence_store.py): "spanning", "single" or "never"
FENCE_LABEL = "caldera.io/fence"
DEFAULT_RESERVE_TIMEOUT = 60


@dataclass(frozen=True)
class Placement:
    generation: int
    hold: bool = False
    cancelled: bool = False
    clusters: int = 1
    reserve_timeout: int = DEFAULT_RESERVE_TIMEOUT
    #: The Work has ``spec.placement`` (a Caldera Work): the agent answers in ``status.gang``.
    declared: bool = False
    #: ``spec.placement.failover``: whether the federation may re-place this share when the cluster
    #: is lost (false: the policy keeps it here, so a cut-off agent never fences it)
    failover: bool = True
    #: ``spec.placement.keepsFromGeneration``: pods of an older generation are stopped (fencing
    #: tokens); a re-division for a changed spec keeps its running pods (absent: ``generation``)
    keeps_from: int = 0

    def stale(self, pod_generation: int, bound: bool) -> bool:
        """Whether a pod of ``pod_generation`` must stop (or never start) under this placement:
        every pod older than ``generation`` that is not bound yet, or that a held generation (a new
        gang attempt) replaces; a bound one older than ``keeps_from``."""
        if pod_generation >= self.generation:
            return False
        return not bound or self.hold or pod_generation < self.keeps_from


@dataclass
class WorkRecord:
    namespace: str
    name: str
    uid: str
    placement: Placement
    job: Optional[Obj] = None
    error: Optional[str] = None
    #: status the Work carried when the agent (re)started: seeds job retries and counts.
    previous_status: Obj = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def job_key(self) -> str:
        md = (self.job or {}).get("metadata") or {}
        return f"{md.get('namespace')}/{md.get('name')}"

    @property
    def fence_class(self) -> str:
        """The pods' :data:`FENCE_LABEL`: how :mod:`member_agent.fencing` treats this share."""
        if not self.placement.failover:
            return "never"
        return "spanning" if self.placement.clusters > 1 else "single"

    @property
    def gang_managed(self) -> bool:
        """Whether this share takes part in the two-phase start."""
        return self.placement.clusters > 1


def _placement(work: Obj, manifest: Optional[Obj]) -> Placement:
    raw = ((work.get("spec") or {}).get("placement")) or {}
    annotation = (((manifest or {}).get("metadata") or {}).get("annotations") or {}).get(GENERATION_ANNOTATION)
    fallback = int((work.get("metadata") or {}).get("generation") or 0)
    try:
        generation = int(raw.get("generation", annotation if annotation is not None else fallback))
    except (TypeError, ValueError):
        generation = fallback
    return Placement(
        generation=generation,
        hold=bool(raw.get("hold", False)),
        cancelled=bool(raw.get("cancelled", False)),
        clusters=max(1, int(raw.get("clusters", 1) or 1)),
        reserve_timeout=int(raw.get("reserveTimeoutSeconds") or DEFAULT_RESERVE_TIMEOUT),
        declared=bool(raw),
        failover=raw.get("failover") is not False,
        keeps_from=_keeps_from(raw, generation),
    )


def _keeps_from(raw: Obj, generation: int) -> int:
    try:
        return min(generation, int(raw.get("keepsFromGeneration", generation)))
    except (TypeError, ValueError):
        return generation


def pod_generation(pod: Obj) -> int:
    """The placement generation a pod was created for (0: unlabelled or unreadable)."""
    try:
        return int(((pod.get("metadata") or {}).get("labels") or {}).get(GENERATION_LABEL, 0))
    except ValueError:
        return 0


def parse_work(work: Obj) -> WorkRecord:
    md = work.get("metadata") or {}
    manifests = ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []
    jobs = [m for m in manifests if isinstance(m, dict) and m.get("kind") == "Job"]
    manifest = jobs[0] if len(jobs) == 1 else None
    record = WorkRecord(
        namespace=str(md.get("namespace") or ""),
        name=str(md.get("name") or ""),
        uid=str(md.get("uid") or ""),
        placement=_placement(work, manifest),
        previous_status=dict(work.get("status") or {}),
    )
    if manifest is None:
        record.error = (f"Work {record.key}: spec.workload.manifests must hold exactly one "
                        f"{JOB_API_VERSION} Job, found {len(jobs)} among {len(manifests)} manifest(s)")
        return record
    if manifest.get("apiVersion") != JOB_API_VERSION:
        record.error = f"Work {record.key}: spec.workload.manifests[0].apiVersion must be {JOB_API_VERSION}"
        return record
    namespace = ((manifest.get("metadata") or {}).get("namespace")) or "default"
    decoded = admit_all(decode_text(json.dumps(manifest), source=f"Work {record.key}"), namespace=namespace)
    if decoded.errors:
        record.error = "; ".join(e.describe().replace("\n", " ") for e in decoded.errors)
        return record
    job = decoded.objects[0].obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    job.setdefault("metadata", {}).setdefault("namespace", namespace)
    job["metadata"].setdefault("uid", (job["metadata"].get("annotations") or {}).get(JOB_UID) or record.uid)
    job.pop("status", None)
    if md.get("creationTimestamp"):  # the local Job was created with its Work (stable across agent restarts)
        job["metadata"].setdefault("creationTimestamp", md["creationTimestamp"])
    record.job = job
    return record


# ------------------------------------------------------------------ status


def condition(type_: str, ok: bool, reason: str, message: str, now: float) -> Obj:
    return {"type": type_, "status": "True" if ok else "False", "reason": reason, "message": message,
            "lastTransitionTime": rfc3339(now)}


def job_health(job_status: Obj) -> str:
    phase = ((job_status.get("state") or {}).get("phase")) or "Pending"
    if phase in ("Failed", "Aborted", "Terminated"):
        return "Unhealthy"
    if phase in ("Running", "Completed", "Completing"):
        return "Healthy"
    return "Unknown"


def work_status(record: WorkRecord, job_status: Obj, podgroup_phase: Optional[str], gang: Optional[Obj],
                now: float, previous: Optional[Obj] = None, error: Optional[str] = None) -> Obj:
    """The Work's status as the agent writes it (conditions keep their transition times).

    ``error``: the job controller refused the Job (reason ``InvalidJob``); a manifest that does
    not decode or admit is ``InvalidManifest``."""
    if record.error or error:
        reason, message = ("InvalidManifest", record.error) if record.error else ("InvalidJob", error or "")
        conditions = [condition("Applied", False, reason, message, now)]
        status: Obj = {"conditions": conditions, "manifestStatuses": []}
    else:
        job_md = (record.job or {}).get("metadata") or {}
        pg_ok = podgroup_phase in ("Running", "Completed")
        conditions = [
            condition("Applied", True, "AppliedSuccessful", "Manifest has been successfully applied", now),
            condition("PodGroup", pg_ok, podgroup_phase or "Pending", f"PodGroup phase {podgroup_phase or 'Pending'}", now),
        ]
        status = {
            "conditions": conditions,
            "manifestStatuses": [{
                "identifier": {"ordinal": 0, "group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job",
                               "resource": "jobs", "namespace": job_md.get("namespace"), "name": job_md.get("name")},
                "status": job_status,
                "health": job_health(job_status),
            }],
        }
    if gang is not None:
        status["gang"] = gang
    # a fencing token: the federation counts this status only for the generation it names
    status[OBSERVED_PLACEMENT_GENERATION] = record.placement.generation
    _keep_transition_times(status["conditions"], (previous or {}).get("conditions") or [])
    return status


def _keep_transition_times(conditions: list[Obj], previous: list[Obj]) -> None:
    before = {c.get("type"): c for c in previous}
    for c in conditions:
        old = before.get(c["type"])
        if old and old.get("status") == c["status"] and old.get("lastTransitionTime"):
            c["lastTransitionTime"] = old["lastTransitionTime"]


def comparable(status: Obj) -> str:
    """Status text without timestamps, to decide whether a write is needed."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("lastTransitionTime", "lastProbeTime")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(status), sort_keys=True)
