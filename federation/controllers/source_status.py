"""Source status controller: report a converted Job's progress on the object the user wrote.

A ``kubeflow.org/v1`` PyTorchJob / TFJob / MPIJob or a ``batch.volcano.sh/v1alpha1`` VCJob is
converted by the API server into a Volcano Job of the same name, owned by the source
(:mod:`federation.apiserver.conversion`). The status controller aggregates that Job's status;
this controller copies it back onto the source's ``/status`` subresource, so
``kubectl get pytorchjob x -o yaml`` shows how the job is doing:

* Kubeflow kinds get the training operator's JobStatus: ``conditions`` (Created, Running,
  Restarting, Succeeded, Failed), ``replicaStatuses`` per replica type (from the Job's
  ``taskStatusCount``, task names as :mod:`policies.conversions` gives them), ``startTime``
  and ``completionTime``.
* A VCJob gets the Volcano Job's status as it is (both kinds share Volcano's JobStatus).

The mapping (:func:`kubeflow_status`) is pure and keeps timestamps unless something changed,
and a status is written (JSON merge patch) only when it differs from the stored one, so the
controller never writes in a loop.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client.exceptions import ApiException

from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.runner import Informer, WorkQueue, run_controller
from policies.conversions import MPI_ROLES, PYTORCH_ROLES, TF_ROLES
from policies.k8s import patches
from policies.kinds import KindInfo, lookup

if TYPE_CHECKING:
    from federation.controllers.context import ControllerContext

log = logging.getLogger("caldera.source_status")
Obj = dict[str, Any]
Key = tuple[str, str, str]  # (source kind, namespace, name)
Clock = Callable[[], datetime]

JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
SOURCES: dict[str, KindInfo] = {
    "PyTorchJob": lookup("kubeflow.org/v1", "PyTorchJob"),
    "TFJob": lookup("kubeflow.org/v1", "TFJob"),
    "MPIJob": lookup("kubeflow.org/v1", "MPIJob"),
    "VCJob": lookup("batch.volcano.sh/v1alpha1", "VCJob"),
}
#: Kubeflow kind -> {Volcano task name: replica type}, inverting the conversion's role tables.
REPLICA_TYPES: dict[str, dict[str, str]] = {
    kind: {task: replica_type for replica_type, (task, _flag) in roles.items()}
    for kind, roles in (("PyTorchJob", PYTORCH_ROLES), ("TFJob", TF_ROLES), ("MPIJob", MPI_ROLES))
}
#: Volcano phase -> the Kubeflow condition it sets (phases not listed change no condition).
CONDITION_OF_PHASE = {
    "Pending": "Created", "Inqueue": "Created",
    "Running": "Running", "Completing": "Running",
    "Restarting": "Restarting",
    "Completed": "Succeeded",
    "Failed": "Failed", "Aborted": "Failed", "Terminated": "Failed",
}
FINISHED = frozenset({"Succeeded", "Failed"})
VERBS = {"Created": "is created", "Running": "is running", "Restarting": "is restarting",
         "Succeeded": "successfully completed", "Failed": "has failed"}
TIMEOUT = 30.0


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def controller_ref(job: Obj) -> tuple[str, str] | None:
    """(kind, uid) of the Job's controlling source, if it is a kind this controller reports on."""
    for ref in (job.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") in SOURCES and \
                ref.get("apiVersion") == SOURCES[ref["kind"]].api_version:
            return str(ref["kind"]), str(ref.get("uid") or "")
    return None


def _set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str,
                   when: str) -> list[Obj]:
    """The training operator's rule: Running and Restarting exclude each other; a finished job
    turns Running to False. A condition whose content is unchanged keeps its timestamps."""
    current = next((c for c in conditions if c.get("type") == type_), None)
    if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
            status, reason, message):
        return conditions
    result: list[Obj] = []
    for cond in conditions:
        kind = cond.get("type")
        if kind == type_ or {kind, type_} == {"Running", "Restarting"}:
            continue
        if type_ in FINISHED and kind == "Running" and cond.get("status") != "False":
            cond = dict(cond, status="False", lastUpdateTime=when, lastTransitionTime=when)
        result.append(cond)
    transition = when if current is None or current.get("status") != status else current.get(
        "lastTransitionTime", when)
    result.append({"type": type_, "status": status, "reason": reason, "message": message,
                   "lastUpdateTime": when, "lastTransitionTime": transition})
    return result


def replica_statuses(kind: str, source: Obj, job_status: Obj) -> Obj:
    """``{Master: {active, succeeded, failed}, ...}`` for each replica type of the source's spec."""
    counts = job_status.get("taskStatusCount") or {}
    spec = source.get("spec") or {}
    specs = next((v for k, v in spec.items() if k.endswith("ReplicaSpecs") and isinstance(v, dict)), {})
    result: Obj = {}
    for task, replica_type in REPLICA_TYPES[kind].items():
        if replica_type not in specs:
            continue
        phases = (counts.get(task) or {}).get("phase") or {}
        result[replica_type] = {"active": int(phases.get("Running", 0)),
                                "succeeded": int(phases.get("Succeeded", 0)),
                                "failed": int(phases.get("Failed", 0))}
    return result


def kubeflow_status(kind: str, source: Obj, job: Obj, now: datetime) -> Obj:
    """The Kubeflow JobStatus of ``source`` given its converted Volcano ``job`` (pure).

    Built on the source's current status: conditions, ``startTime`` and ``completionTime`` keep
    their timestamps while they do not change, so the same inputs give the same status."""
    meta = source.get("metadata") or {}
    job_status = job.get("status") or {}
    state = job_status.get("state") or {}
    phase = state.get("phase") or "Pending"
    old = source.get("status") or {}
    when = state.get("lastTransitionTime") or stamp(now)
    name = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
    created_at = (job.get("metadata") or {}).get("creationTimestamp") or meta.get("creationTimestamp") or when

    conditions = copy.deepcopy(old.get("conditions") or [])
    conditions = _set_condition(conditions, "Created", "True", f"{kind}Created", f"{kind} {name} is created.",
                                created_at)
    type_ = CONDITION_OF_PHASE.get(phase)
    if type_ is not None and type_ != "Created":
        message = f"{kind} {name} {VERBS[type_]}."
        if type_ in ("Restarting", "Failed") and (state.get("reason") or state.get("message")):
            detail = ": ".join(str(p) for p in (state.get("reason"), state.get("message")) if p)
            message = f"{message[:-1]} (Volcano Job {phase}: {detail})."
        conditions = _set_condition(conditions, type_, "True", f"{kind}{type_}", message, when)

    status: Obj = {"conditions": conditions, "replicaStatuses": replica_statuses(kind, source, job_status),
                   "startTime": old.get("startTime") or created_at}
    if type_ in FINISHED:
        status["completionTime"] = old.get("completionTime") or when
    for key in ("lastReconcileTime",):  # keep fields this controller does not own
        if key in old:
            status[key] = old[key]
    return status


def desired_status(kind: str, source: Obj, job: Obj, now: datetime) -> Obj:
    if kind == "VCJob":
        return copy.deepcopy(job.get("status") or {})
    return kubeflow_status(kind, source, job, now)


class SourceStatusController:
    """Informers on Jobs and the four source kinds; one reconcile per source (kind, ns, name)."""

    def __init__(self, api: Any, clock: Clock | None = None, workers: int = 2) -> None:
        self.rc = ResourceClient(api, TIMEOUT)
        self.clock: Clock = clock or (lambda: datetime.now(UTC))
        self.workers = workers
        self.queue = WorkQueue()
        self.writes = 0
        self.jobs = Informer(self.rc, JOBS, self._job_changed)
        self.sources = {kind: Informer(self.rc, info, self._source_changed) for kind, info in SOURCES.items()}

    def _job_changed(self, _event: str, job: Obj, _old: Obj | None) -> None:
        ref = controller_ref(job)
        if ref is not None:
            meta = job.get("metadata") or {}
            self.queue.add((ref[0], meta.get("namespace") or "", meta.get("name") or ""))

    def _source_changed(self, event: str, source: Obj, _old: Obj | None) -> None:
        if event != "DELETED":
            meta = source.get("metadata") or {}
            self.queue.add((str(source.get("kind")), meta.get("namespace") or "", meta.get("name") or ""))

    def source_keys(self) -> list[Key]:
        return [(kind, ns, name) for kind, inf in self.sources.items() for ns, name in inf.store]

    async def reconcile(self, key: Key) -> None:
        kind, namespace, name = key
        source = self.sources[kind].get(namespace, name)
        job = self.jobs.get(namespace, name)
        if source is None or job is None or controller_ref(job) != (kind, source["metadata"].get("uid", "")):
            return  # not converted yet, or the Job is not this source's
        old = source.get("status") or {}
        new = desired_status(kind, source, job, self.clock())
        if new == old:
            return
        try:
            updated = await self.rc.patch(SOURCES[kind], name, {"status": patches.merge_diff(old, new)}, namespace,
                                          "status")
        except ApiException as exc:
            if exc.status == 404:  # deleted meanwhile
                return
            raise
        self.writes += 1
        self.sources[kind].remember(updated)

    async def run(self, stop: Any) -> None:
        await run_controller([self.jobs, *self.sources.values()], self.queue, self.reconcile, stop,
                             self.workers, "source-status")


async def source_status_controller(ctx: "ControllerContext") -> None:
    """The source status controller as a ``caldera serve`` background controller."""
    async with api_client_from_dict(ctx.kubeconfig) as api:
        await SourceStatusController(api).run(ctx.stop)
