"""JobFlow controller: run a ``flow.volcano.sh/v1alpha1`` JobFlow's DAG of JobTemplates as Jobs.

For every flow entry, the Volcano Job ``<jobflow>-<flow>`` is created from the entry's
JobTemplate (``flows[].jobTemplate.name``, or the flow name as upstream Volcano spells it) once
every ``dependsOn.targets`` Job has reached phase ``Completed`` (the federated Job's
``status.state.phase``, aggregated from the member clusters). The Job carries Volcano's labels
and annotations ``volcano.sh/createdByJobFlow=<ns>.<flow>`` and
``volcano.sh/createdByJobTemplate=<ns>.<template>``, the template's own labels, and a controller
ownerReference to the JobFlow (deleting the flow deletes its Jobs). ``flows[].patch.spec`` is
applied to the template's spec as a JSON merge patch. The Jobs are then placed like any other
Job (a PropagationPolicy must select them), possibly on different clusters.

Status follows Volcano: job names by phase (``pendingJobs`` also lists entries not created
yet), ``jobStatusList``, ``conditions`` per job, and ``state.phase``: Pending → Running (a job
runs or completed) → Succeed (every job completed) | Failed (a job Failed, Terminated or
Aborted; no further jobs are started). Succeed and Failed are final. With
``jobRetainPolicy: delete`` the flow's Jobs are deleted once it Succeeds. A missing JobTemplate
or a Job the API rejects is reported as a Warning Event on the JobFlow; the entry waits.

The decisions (:func:`plan`) are pure; :func:`jobflow_controller` is the watch loop around them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client.exceptions import ApiException

from federation.client import ResourceClient, api_client_from_dict
from federation.controllers.runner import Informer, WorkQueue, run_controller
from federation.events import record_event
from policies.k8s import patches
from policies.kinds import lookup

if TYPE_CHECKING:
    from federation.controllers.context import ControllerContext

log = logging.getLogger("caldera.jobflow")
Obj = dict[str, Any]
Clock = Callable[[], datetime]

FLOW_LABEL = "volcano.sh/createdByJobFlow"
TEMPLATE_LABEL = "volcano.sh/createdByJobTemplate"
JOBS = lookup("batch.volcano.sh/v1alpha1", "Job")
FLOWS = lookup("flow.volcano.sh/v1alpha1", "JobFlow")
TEMPLATES = lookup("flow.volcano.sh/v1alpha1", "JobTemplate")
FAILED_PHASES = frozenset({"Failed", "Terminated", "Aborted"})
FINAL_JOB_PHASES = FAILED_PHASES | {"Completed"}
FINAL_FLOW_PHASES = frozenset({"Succeed", "Failed"})
TIMEOUT = 30.0


@dataclass
class Entry:
    flow: str        # the flow entry's name (what dependsOn.targets name)
    job: str         # <jobflow>-<flow>
    template: str    # the JobTemplate's name
    targets: list[str]
    patch: Obj | None


@dataclass
class Plan:
    """What to do for one JobFlow: Jobs to create, problems to report, the status to write."""

    create: list[tuple[Entry, Obj]] = field(default_factory=list)
    #: (reason, message) for Warning Events
    problems: list[tuple[str, str]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    status: Obj | None = None


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def flow_ref(namespace: str, name: str) -> str:
    """Volcano's label value for the flow and template that created a Job."""
    return f"{namespace}.{name}"


def entries(flow: Obj) -> list[Entry]:
    """The flow's entries in DAG order (each after its targets; spec order among equals)."""
    name = flow["metadata"]["name"]
    given = []
    for item in (flow.get("spec") or {}).get("flows") or []:
        template = (item.get("jobTemplate") or {}).get("name") or item["name"]
        targets = list(((item.get("dependsOn") or {}).get("targets")) or [])
        given.append(Entry(item["name"], f"{name}-{item['name']}", template, targets,
                           (item.get("patch") or {}).get("spec")))
    ordered: list[Entry] = []
    placed: set[str] = set()
    known = {e.flow for e in given}
    while len(ordered) < len(given):
        ready = [e for e in given if e.flow not in placed and all(t in placed or t not in known for t in e.targets)]
        if not ready:  # a cycle (admission rejects these): keep the rest in spec order
            ready = [e for e in given if e.flow not in placed]
        for entry in ready:
            ordered.append(entry)
            placed.add(entry.flow)
    return ordered


def job_phase(job: Obj | None) -> str:
    if job is None:
        return ""
    return ((job.get("status") or {}).get("state") or {}).get("phase") or "Pending"


def build_job(flow: Obj, entry: Entry, template: Obj) -> Obj:
    meta = flow["metadata"]
    namespace = meta.get("namespace") or "default"
    marks = {FLOW_LABEL: flow_ref(namespace, meta["name"]), TEMPLATE_LABEL: flow_ref(namespace, entry.template)}
    labels = dict((template.get("metadata") or {}).get("labels") or {}, **marks)
    spec = patches.merge_patch(template.get("spec") or {}, entry.patch) if entry.patch else template.get("spec") or {}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": entry.job, "namespace": namespace, "labels": labels, "annotations": dict(marks),
                         "ownerReferences": [{"apiVersion": flow.get("apiVersion", "flow.volcano.sh/v1alpha1"),
                                              "kind": "JobFlow", "name": meta["name"], "uid": meta.get("uid", ""),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec}


def _job_status_entry(job: Obj, previous: Obj | None, now: datetime) -> Obj:
    status = job.get("status") or {}
    phase = job_phase(job)
    entry: Obj = {"name": job["metadata"]["name"], "state": phase,
                  "startTimestamp": job["metadata"].get("creationTimestamp") or stamp(now),
                  "restartCount": int(status.get("retryCount") or 0)}
    if phase in FINAL_JOB_PHASES:
        entry["endTimestamp"] = ((previous or {}).get("endTimestamp")
                                 or (status.get("state") or {}).get("lastTransitionTime") or stamp(now))
    return entry


def _condition(job: Obj) -> Obj:
    status = job.get("status") or {}
    condition: Obj = {"phase": job_phase(job), "createTime": job["metadata"].get("creationTimestamp", "")}
    if status.get("runningDuration"):
        condition["runningDuration"] = status["runningDuration"]
    counts = status.get("taskStatusCount")
    if isinstance(counts, dict) and all(isinstance(v, dict) and isinstance(v.get("phase"), dict)
                                        for v in counts.values()):
        condition["taskStatusCount"] = {task: {"phase": dict(v["phase"])} for task, v in counts.items()}
    return condition


def plan(flow: Obj, jobs: dict[str, Obj], templates: dict[str, Obj], now: datetime) -> Plan:
    """Decide for one JobFlow. ``jobs``: the flow's Jobs by name; ``templates``: the namespace's."""
    result = Plan()
    old_status: Obj = flow.get("status") or {}
    old_phase = (old_status.get("state") or {}).get("phase") or ""
    if flow["metadata"].get("deletionTimestamp"):
        return result
    if old_phase == "Succeed":
        # final: with jobRetainPolicy delete the Jobs go, and the status keeps the record
        if (flow.get("spec") or {}).get("jobRetainPolicy") == "delete":
            result.delete = sorted(jobs)
        return result
    ordered = entries(flow)
    phases = {e.flow: job_phase(jobs.get(e.job)) for e in ordered}
    failed = any(p in FAILED_PHASES for p in phases.values())
    if old_phase != "Failed" and not failed:
        for entry in ordered:
            if entry.job in jobs or any(phases.get(t) != "Completed" for t in entry.targets):
                continue
            template = templates.get(entry.template)
            if template is None:
                result.problems.append(("JobTemplateNotFound",
                                        f"flow {entry.flow!r}: JobTemplate {entry.template!r} not found in namespace "
                                        f"{flow['metadata'].get('namespace')!r}; Job {entry.job!r} waits for it"))
                continue
            result.create.append((entry, build_job(flow, entry, template)))
    result.status = flow_status(ordered, jobs, old_status, old_phase, now)
    return result


def flow_status(ordered: list[Entry], jobs: dict[str, Obj], old: Obj, old_phase: str, now: datetime) -> Obj:
    lists: dict[str, list[str]] = {k: [] for k in ("pendingJobs", "runningJobs", "completedJobs", "failedJobs",
                                                   "terminatedJobs", "unKnowJobs")}
    previous = {e.get("name"): e for e in old.get("jobStatusList") or []}
    status_list: list[Obj] = []
    conditions: dict[str, Obj] = {}
    for entry in ordered:
        job = jobs.get(entry.job)
        phase = job_phase(job)
        bucket = {"": "pendingJobs", "Pending": "pendingJobs", "Completed": "completedJobs", "Failed": "failedJobs",
                  "Terminated": "terminatedJobs", "Aborted": "terminatedJobs"}.get(phase, "runningJobs")
        if phase not in ("", "Pending", "Completed", "Failed", "Terminated", "Aborted", "Running", "Restarting",
                         "Completing", "Aborting", "Terminating"):
            bucket = "unKnowJobs"
        lists[bucket].append(entry.job)
        if job is not None:
            status_list.append(_job_status_entry(job, previous.get(entry.job), now))
            conditions[entry.job] = _condition(job)
    if old_phase == "Failed" or lists["failedJobs"] or lists["terminatedJobs"]:
        phase = "Failed"
    elif ordered and len(lists["completedJobs"]) == len(ordered):
        phase = "Succeed"
    elif lists["runningJobs"] or lists["completedJobs"]:
        phase = "Running"
    else:
        phase = "Pending"
    status: Obj = {k: v for k, v in lists.items() if v}
    if status_list:
        status["jobStatusList"] = status_list
    if conditions:
        status["conditions"] = conditions
    status["state"] = {"phase": phase}
    return status


# -- the watch loop ---------------------------------------------------------------------------


class JobFlowController:
    """Informers on JobFlows, JobTemplates and Jobs; a work queue of ("flow"|"template", ns, name)."""

    def __init__(self, api: Any, clock: Clock = lambda: datetime.now(UTC)) -> None:
        self.api = api
        self.rc = ResourceClient(api, timeout=TIMEOUT)
        self.clock = clock
        self.flows = Informer(self.rc, FLOWS, self._flow_changed)
        self.templates = Informer(self.rc, TEMPLATES, self._template_changed)
        self.jobs = Informer(self.rc, JOBS, self._job_changed)
        self.queue = WorkQueue()
        #: (flow uid, reason, message) already reported, so a waiting flow is not an event storm
        self._reported: set[tuple[str, str, str]] = set()

    def _flow_changed(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        self.queue.add(("flow", obj["metadata"].get("namespace") or "", obj["metadata"]["name"]))

    def _template_changed(self, _type: str, obj: Obj, _old: Obj | None) -> None:
        namespace, name = obj["metadata"].get("namespace") or "", obj["metadata"]["name"]
        self.queue.add(("template", namespace, name))
        for flow in self.flows.items():
            if (flow["metadata"].get("namespace") or "") == namespace and any(
                    e.template == name for e in entries(flow)):
                self._flow_changed("MODIFIED", flow, None)

    def _job_changed(self, _type: str, obj: Obj, old: Obj | None) -> None:
        for source in (obj, old):
            labels = ((source or {}).get("metadata") or {}).get("labels") or {}
            for label, kind in ((FLOW_LABEL, "flow"), (TEMPLATE_LABEL, "template")):
                namespace, _, name = str(labels.get(label, "")).partition(".")
                if name:
                    self.queue.add((kind, namespace, name))

    async def run(self, stop: asyncio.Event) -> None:
        await run_controller([self.flows, self.templates, self.jobs], self.queue, self.reconcile, stop,
                             workers=2, name="jobflow")

    async def reconcile(self, key: Any) -> None:
        kind, namespace, name = key
        if kind == "flow":
            await self.sync_flow(namespace, name)
        else:
            await self.sync_template(namespace, name)

    def _namespace_items(self, informer: Informer, namespace: str) -> list[Obj]:
        return [o for o in informer.items() if (o["metadata"].get("namespace") or "") == namespace]

    async def sync_flow(self, namespace: str, name: str) -> None:
        flow = self.flows.get(namespace, name)
        if flow is None:
            return
        ref = flow_ref(namespace, name)
        jobs = {j["metadata"]["name"]: j for j in self._namespace_items(self.jobs, namespace)
                if (j["metadata"].get("labels") or {}).get(FLOW_LABEL) == ref}
        templates = {t["metadata"]["name"]: t for t in self._namespace_items(self.templates, namespace)}
        decision = plan(flow, jobs, templates, self.clock())
        for entry, body in decision.create:
            try:
                created = await self.rc.create(JOBS, body, namespace)
            except ApiException as exc:
                if exc.status == 409:
                    other = self.jobs.get(namespace, entry.job)
                    if other is not None and (other["metadata"].get("labels") or {}).get(FLOW_LABEL) != ref:
                        decision.problems.append(("JobNameTaken", f"flow {entry.flow!r}: a Job {entry.job!r} not "
                                                                  f"created by this JobFlow already exists"))
                    continue  # else our cache lags our own earlier create: the watch brings it
                if exc.status in (400, 403, 404, 422):
                    decision.problems.append(("JobCreateFailed", f"flow {entry.flow!r}: Job {entry.job!r} from "
                                                                 f"JobTemplate {entry.template!r} rejected: "
                                                                 f"{_api_message(exc)}"))
                    continue
                raise
            self.jobs.remember(created)
            jobs[entry.job] = created
            await self._event(flow, "Normal", "JobCreated", f"flow {entry.flow!r}: created Job {entry.job!r} "
                                                            f"from JobTemplate {entry.template!r}")
        if decision.create:
            decision.status = plan(flow, jobs, templates, self.clock()).status
        for reason, message in decision.problems:
            await self._event(flow, "Warning", reason, message)
        for job_name in decision.delete:
            try:
                await self.rc.delete(JOBS, job_name, namespace, propagation_policy="Background")
            except ApiException as exc:
                if exc.status != 404:
                    raise
        if decision.status is not None and decision.status != flow.get("status"):
            await self._write_status(flow, decision.status)

    async def _write_status(self, flow: Obj, status: Obj) -> None:
        meta = flow["metadata"]
        old_phase = ((flow.get("status") or {}).get("state") or {}).get("phase") or "Pending"
        try:
            updated = await self.rc.replace(FLOWS, dict(flow, status=status), subresource="status")
        except ApiException as exc:
            if exc.status in (404, 409):  # gone, or changed under us: the watch brings the new copy
                return
            raise
        self.flows.remember(updated)
        phase = status["state"]["phase"]
        if phase != old_phase:
            await self._event(flow, "Warning" if phase == "Failed" else "Normal", f"JobFlow{phase}",
                              f"JobFlow {meta['name']} is {phase}: " + ", ".join(
                                  f"{len(status.get(k) or [])} {k[:-4]}" for k in
                                  ("pendingJobs", "runningJobs", "completedJobs", "failedJobs")))

    async def sync_template(self, namespace: str, name: str) -> None:
        """Volcano's JobTemplate status: ``jobDependsOnList`` = the Jobs created from it."""
        template = self.templates.get(namespace, name)
        if template is None:
            return
        ref = flow_ref(namespace, name)
        names = sorted(j["metadata"]["name"] for j in self._namespace_items(self.jobs, namespace)
                       if (j["metadata"].get("labels") or {}).get(TEMPLATE_LABEL) == ref)
        status = {"jobDependsOnList": names} if names else {}
        if (template.get("status") or {}) == status:
            return
        try:
            updated = await self.rc.replace(TEMPLATES, dict(template, status=status), subresource="status")
        except ApiException as exc:
            if exc.status in (404, 409):
                return
            raise
        self.templates.remember(updated)

    async def _event(self, flow: Obj, type_: str, reason: str, message: str) -> None:
        key = (flow["metadata"].get("uid", ""), reason, message)
        if key in self._reported:
            return
        self._reported.add(key)
        try:
            await record_event(self.api, flow, reason, message, type_, component="caldera-jobflow", now=self.clock)
        except Exception as exc:  # events are best effort
            log.warning("could not record event %s on jobflow %s: %s", reason, flow["metadata"]["name"], exc)


def _api_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or b"{}").get("message") or exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


async def jobflow_controller(ctx: "ControllerContext") -> None:
    """The JobFlow controller as a ``caldera serve`` background controller."""
    async with api_client_from_dict(ctx.kubeconfig) as api:
        await JobFlowController(api).run(ctx.stop)
