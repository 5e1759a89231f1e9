"""One Work's Volcano Job, driven by the real job controller (``member_agent/controllers``).

The controller is pure: :meth:`JobRun.plan` observes the Job, its PodGroup and its pods, turns
what changed since the previous pass into requests (``observe_*``), carries the deferred
policy actions and calls ``reconcile``. The agent then carries out the :class:`RunPlan`
(create/delete pods through the gateway, keep the PodGroup, write the status).

What the agent keeps per Work (docs/agent.md): the local Job (spec from the Work, status from
the controller), the PodGroup (spec from the controller, phase from the scheduler), the job
plugins' objects (ConfigMap/Service/Secret, held by the agent), the previous observation and
the deferred actions. After a restart the Job status is seeded from the Work's status and
the PodGroup phase from its ``PodGroup`` condition; ``observe_pods`` sees every surviving pod
as added, which resyncs without creating duplicates (pod names are deterministic).

Pods are converted to models once per (uid, resourceVersion) (:mod:`member_agent.pod_model_book`); a pass whose inputs did not
change and that has nothing due is skipped (:meth:`JobRun.fingerprint`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Mapping, Optional

from member_agent.cluster.clock import rfc3339
from member_agent.cluster.gateway import Obj
from member_agent.controllers import (
    ControllerConfig,
    DeferredAction,
    JobObservation,
    JobPlan,
    JobRequest,
    observe_job,
    observe_pod_group,
    observe_pods,
    reconcile,
)
from member_agent.controllers.reconcile import plan_settles, requests_matter, resync_settled
from member_agent.job_settled import Settled, hides_phase_move
from member_agent.pod_group_models import observed_model, written_model
from member_agent.pod_model_book import PodModelBook
from member_agent.works import FENCE_LABEL, GENERATION_LABEL, JOB_API_VERSION, WORK_UID_LABEL, WorkRecord
from policies.errors import CalderaError
from policies.models.core import Pod
from policies.models.volcano_batch import Job
from policies.models.volcano_scheduling import PodGroup

log = logging.getLogger("caldera.agent.jobs")

FINISHED_JOB_PHASES = ("Completed", "Failed", "Terminated", "Aborted")
PODGROUP_API = "scheduling.volcano.sh/v1beta1"


def job_phase(status: Obj) -> str:
    return str(((status.get("state") or {}).get("phase")) or "Pending")


@lru_cache(maxsize=256)  # pure (datetimes are immutable): a tick runs many passes at one ``now``
def to_datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


@dataclass
class RunPlan:
    """What the agent does after one controller pass over a Work's Job."""

    create_pods: list[Obj] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message), new ones only
    #: Job plugins' objects to create or update in the member cluster (only those that changed).
    apply_objects: list[Obj] = field(default_factory=list)
    delete_objects: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) in the job's namespace
    #: The TTL passed: every pod goes, the PodGroup too; the Job keeps its final status.
    delete_job: bool = False
    #: The controller refused the Job (a malformed share annotation, an unknown policy action).
    error: Optional[str] = None
    #: The model each of ``create_pods`` was dumped from (same order), for a writer that can carry
    #: it to the created pod (:meth:`JobRun.carry_pod_model`).
    create_models: list[Pod] = field(default_factory=list)


@dataclass
class JobRun:
    """The controller state of one Work's Job between passes."""

    job: Job
    pod_group: Optional[Obj] = None  # wire dict; status.phase written by the scheduler
    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)
    deferred: list[DeferredAction] = field(default_factory=list)
    requeue_at: Optional[float] = None
    deleted_by_us: set[str] = field(default_factory=set)
    #: After a restart, the PodGroup phase last reported on the Work (applied when it is re-created).
    seeded_pod_group_phase: Optional[str] = None
    deleted: bool = False  # TTL cleanup done
    spec_revision: int = 0
    #: Phase of the PodGroup when the controller deleted it (a finished or restarted job).
    last_pod_group_phase: Optional[str] = None
    _last_pods: dict[str, Pod] = field(default_factory=dict)
    _last_pod_group: Optional[PodGroup] = None
    _last_job: Optional[Job] = None
    _pod_models: PodModelBook = field(default_factory=PodModelBook)
    _fingerprint: Any = None
    _group_model: Optional[tuple[Obj, PodGroup]] = None  # (a copy of the wire dict, its model)
    _recorded: dict[tuple[str, str], float] = field(default_factory=dict)
    _settled: Optional[Settled] = None  # the last pass's observation, when it showed itself settled
    _followup_settles: bool = False  # the last pass's JobPlan.followup_settles, its PodGroup not seeded

    # ------------------------------------------------------------------ construction
    @classmethod
    def start(cls, record: WorkRecord, first_seen: float, seeded_status: Optional[Obj] = None,
              seeded_pod_group_phase: Optional[str] = None) -> "JobRun":
        wire = dict(record.job or {})
        metadata = dict(wire.get("metadata") or {})
        metadata.setdefault("creationTimestamp", rfc3339(first_seen))
        wire["metadata"] = metadata
        if seeded_status:
            wire["status"] = seeded_status
        try:
            job = Job.model_validate(wire)
        except ValueError:
            job = Job.model_validate({k: v for k, v in wire.items() if k != "status"})
        return cls(job=job, seeded_pod_group_phase=seeded_pod_group_phase)

    def update_spec(self, record: WorkRecord) -> None:
        """A new Work spec (placement generation, release): keep the status, take the new Job spec."""
        wire = dict(record.job or {})
        metadata = dict(wire.get("metadata") or {})
        metadata.setdefault("creationTimestamp", self.job.metadata.creation_timestamp)
        wire["metadata"] = metadata
        if self.job.status is not None:
            wire["status"] = self.job.status.to_wire()
        self.job = Job.model_validate(wire)
        self.spec_revision += 1

    # ------------------------------------------------------------------ views
    @property
    def status(self) -> Obj:
        return self.job.status.to_wire() if self.job.status is not None else {}

    @property
    def phase(self) -> str:
        # read from the model: ``job_phase(self.status)`` gives the same, after dumping the status
        status = self.job.status
        state = status.state if status is not None else None
        return str((state.phase if state is not None else None) or "Pending")

    @property
    def pod_group_phase(self) -> Optional[str]:
        if self.pod_group is not None:
            return ((self.pod_group.get("status") or {}).get("phase")) or "Pending"
        return self.last_pod_group_phase

    @property
    def min_member(self) -> int:
        return int(((self.pod_group or {}).get("spec") or {}).get("minMember", 0) or 0)

    def set_pod_group_phase(self, phase: str, conditions: Optional[list[Obj]] = None) -> bool:
        """The scheduler's verdict; True when the phase changed."""
        if self.pod_group is None:
            return False
        status = self.pod_group.setdefault("status", {})
        changed = bool(status.get("phase") != phase)
        status["phase"] = phase
        if conditions is not None:
            status["conditions"] = conditions
        return changed

    def settled_through(self, before: Optional[str]) -> bool:
        """Whether a pass now would be the settled one again (``_idle``: it plans nothing and keeps
        what it observed), after the scheduler moved the PodGroup's phase from ``before``
        (:meth:`set_pod_group_phase`): the last pass proved itself settled and the move hides from
        a SyncJob (:func:`~member_agent.job_settled.hides_phase_move`). For a caller that knows
        nothing else moved since that pass (no pod, Job or configuration change, no requeue due):
        the replay, which writes every pod itself."""
        return self._settled is not None and self.pod_group is not None and \
            hides_phase_move(before, self.pod_group_phase)

    def set_pod_group_annotations(self, annotations: Mapping[str, str]) -> bool:
        """Annotations the scheduler decided (``volcano.sh/job-allocated-hypernode``), kept on the
        PodGroup's metadata as Volcano's scheduler writes them; True when one changed. An update of
        the PodGroup's spec keeps the observed metadata, so they stay until the scheduler moves them."""
        if self.pod_group is None or not annotations:
            return False
        metadata = self.pod_group.setdefault("metadata", {})
        current = dict(metadata.get("annotations") or {})
        if all(current.get(key) == value for key, value in annotations.items()):
            return False
        metadata["annotations"] = {**current, **annotations}
        return True

    def _pod_model(self, pod: Obj) -> Pod:
        return self._pod_models.model(pod)

    def kept_pod_model(self, pod: Obj) -> Optional[Pod]:
        """The model kept for this version of ``pod`` (its uid and resourceVersion), if any."""
        return self._pod_models.kept(pod)

    def carry_pod_model(self, pod: Obj, model: Pod) -> None:
        """Keep ``model`` as the model of this version of ``pod``, which the next pass then does not
        validate: for a writer that made ``pod`` itself and knows ``model`` equals
        ``Pod.model_validate(pod)`` (the replay's own pod writes, :mod:`simulator.pod_models`)."""
        self._pod_models.carry(pod, model)

    def _pod_group_model(self) -> Optional[PodGroup]:
        """The PodGroup as a model, validated again only where its wire dict changed
        (:func:`~member_agent.pod_group_models.observed_model`)."""
        if self.pod_group is None:
            return None
        self._group_model = observed_model(self.pod_group, self._group_model)
        return self._group_model[1]

    def fingerprint(self, pods: list[Obj], now: float) -> Any:
        """Everything a pass depends on; equal fingerprints and nothing due ⇒ skip the pass."""
        due = self.requeue_at if self.requeue_at is not None and now >= self.requeue_at else None
        return (
            due,
            tuple(sorted(((p.get("metadata") or {}).get("name"), (p.get("metadata") or {}).get("resourceVersion"))
                         for p in pods)),
            ((self.pod_group or {}).get("status") or {}).get("phase"),
            self.spec_revision,
        )

    @property
    def pending_followup(self) -> bool:
        """The last pass changed something whose effect the next pass must see."""
        return self._fingerprint is None and not self.deleted

    # ------------------------------------------------------------------ one pass
    def plan(self, record: WorkRecord, pods: list[Obj], now: float, config: ControllerConfig,
             priority_classes: Mapping[str, int]) -> Optional[RunPlan]:
        """One controller pass; None when nothing changed since the last one."""
        self._followup_settles = False
        if self.deleted:
            return None
        fingerprint = self.fingerprint(pods, now)
        if fingerprint == self._fingerprint:
            return None
        if self._last_job is None:
            # First pass (or first after a restart): pods already terminating were deleted by a
            # previous pass of ours; their disappearance must not read as an eviction.
            self.deleted_by_us.update(str((p.get("metadata") or {}).get("name")) for p in pods
                                      if (p.get("metadata") or {}).get("deletionTimestamp"))
        try:
            live = [self._pod_model(p) for p in pods]
            pod_group = self._pod_group_model()
            if self._idle(live, pod_group, now, config, priority_classes):
                self._settle(live, pod_group, fingerprint, config, priority_classes)
                return RunPlan()
            when = to_datetime(now)
            pod_labels = {WORK_UID_LABEL: record.uid, GENERATION_LABEL: str(record.placement.generation),
                          FENCE_LABEL: record.fence_class}
            requests = self._requests(live, pod_group, when)
            observation = JobObservation(
                job=self.job, pod_group=pod_group, pods=live, requests=requests, deferred=self.deferred,
                priority_classes=priority_classes, existing_objects=self.objects, pod_labels=pod_labels,
            )
            plan = reconcile(observation, when, config)
        except (CalderaError, ValueError) as exc:  # ValueError: a pod or PodGroup the models refuse
            self._fingerprint = fingerprint  # the same input fails the same way: wait for a change
            self._settled = None
            return RunPlan(error=str(exc).replace("\n", " "))
        self._observed(live, pod_group)
        seeded = plan.pod_group_action == "create" and self.seeded_pod_group_phase
        out = self._apply(plan, now)
        self._followup_settles = plan.followup_settles and not seeded
        # A pass that changed something is followed by another (its effects are new input).
        self._fingerprint = fingerprint if not (out.create_pods or out.delete_pods or plan.status_changed
                                                or plan.pod_group_action) else None
        self._settled = Settled.of(self.job, live, pod_group, config, priority_classes) \
            if plan_settles(observation, plan) else None
        return out

    @property
    def followup_settles(self) -> bool:
        """The follow-up the last pass asks for plans nothing if it observes exactly what that pass
        planned (``JobPlan.followup_settles``): for a caller that writes it so, and nothing else, before
        the follow-up (the replay), which may then :meth:`settle_followup` instead of running it."""
        return self._followup_settles and self.pending_followup

    def settle_followup(self, pods: list[Obj], now: float, config: ControllerConfig,
                        priority_classes: Mapping[str, int]) -> None:
        """What the follow-up's pass over ``pods`` leaves when it plans nothing (``plan``'s idle branch)."""
        self._settle([self._pod_model(p) for p in pods], self._pod_group_model(), self.fingerprint(pods, now),
                     config, priority_classes)
        self._followup_settles = False

    def _settle(self, live: list[Pod], pod_group: Optional[PodGroup], fingerprint: Any, config: ControllerConfig,
                priority_classes: Mapping[str, int]) -> None:
        """What a pass that plans nothing leaves: what it observed kept, no deferred action (there is
        none) and no wait, and itself as the settled pass the next one compares with."""
        self._observed(live, pod_group)
        self.requeue_at, self._fingerprint = None, fingerprint
        self._settled = Settled.of(self.job, live, pod_group, config, priority_classes)

    def _idle(self, live: list[Pod], pod_group: Optional[PodGroup], now: float, config: ControllerConfig,
              priority_classes: Mapping[str, int]) -> bool:
        """Whether this pass would plan nothing (and can be skipped): it reads the same as the last
        one, which proved itself settled; or it follows a pass that changed something, and its
        SyncJob alone shows it settled (``resync_settled``), cheaper than the whole pass."""
        if self._settled is not None and self._settled.holds(self.job, live, pod_group, config, priority_classes):
            return True
        if self._fingerprint is not None or self._last_job is None:
            return False  # not a follow-up: most such passes change something, the check would be wasted
        observation = JobObservation(job=self.job, pod_group=pod_group, pods=live, deferred=self.deferred,
                                     priority_classes=priority_classes, existing_objects=self.objects)
        return resync_settled(observation, to_datetime(now), config)

    def _requests(self, live: list[Pod], pod_group: Optional[PodGroup], when: datetime) -> list[JobRequest]:
        """The requests from what changed since the last pass; none where they cannot change the plan
        (``requests_matter``: a fifth of a pass that changes something, for a Job without policies)."""
        return self._derive(live, pod_group, when) if requests_matter(self.job, self.deferred) else []

    def _derive(self, live: list[Pod], pod_group: Optional[PodGroup], when: datetime) -> list[JobRequest]:
        requests = observe_job(self._last_job, self.job, when)
        requests += observe_pods(self.job, self._last_pods.values(), live, when, self.deleted_by_us)
        return requests + observe_pod_group(self._last_pod_group, pod_group, when)

    def _observed(self, live: list[Pod], pod_group: Optional[PodGroup]) -> None:
        """Keep what this pass observed: the next one derives its requests from the difference."""
        self._last_pods = {p.metadata.name or "": p for p in live}
        self._last_pod_group = pod_group
        self._last_job = self.job
        self._pod_models.keep_only(self._last_pods)

    def _apply(self, plan: JobPlan, now: float) -> RunPlan:
        out = RunPlan()
        if plan.delete_job:
            log.info("Job %s/%s: ttlSecondsAfterFinished passed, deleting its pods and PodGroup",
                     self.job.metadata.namespace, self.job.metadata.name)
            self.deleted, out.delete_job = True, True
            out.delete_objects = sorted(self.objects)
            self.pod_group, self.objects, self.deferred, self.requeue_at = None, {}, [], None
            out.delete_pods = sorted(self._last_pods)
            return out
        if self.job.status is None or plan.status is not self.job.status:
            self.job = self.job.model_copy(update={"status": plan.status})
        # else the same status model: keeping the Job keeps the views and comparisons keyed by it
        if plan.pod_group_action == "delete":
            self.last_pod_group_phase = ((self.pod_group or {}).get("status") or {}).get("phase")
            self.pod_group, self._group_model = None, None
        elif plan.pod_group_action in ("create", "update") and plan.pod_group is not None:
            observed = dict((self.pod_group or {}).get("status") or {})
            wire = plan.pod_group.to_wire()
            wire.update(apiVersion=PODGROUP_API, kind="PodGroup")
            wire["metadata"].setdefault("creationTimestamp", rfc3339(now))
            if plan.pod_group_action == "create" and self.seeded_pod_group_phase:
                observed = {"phase": self.seeded_pod_group_phase}
                self.seeded_pod_group_phase = None
            wire["status"] = observed or {"phase": "Pending"}
            self.pod_group = wire
            self._group_model = written_model(plan.pod_group, wire)
        for kind, name in plan.delete_objects:
            self.objects.pop((kind, name), None)
            out.delete_objects.append((kind, name))
        for obj in plan.apply_objects:
            key = (str(obj["kind"]), str(obj["metadata"]["name"]))
            if self.objects.get(key) != obj:
                out.apply_objects.append(obj)
            self.objects[key] = obj
        for deletion in plan.delete_pods:
            self.deleted_by_us.add(deletion.name)
            out.delete_pods.append(deletion.name)
        for pod in plan.create_pods:
            wire = pod.to_wire()
            wire.update(apiVersion="v1", kind="Pod")
            self.deleted_by_us.discard(pod.metadata.name or "")
            out.create_pods.append(wire)
            out.create_models.append(pod)
        self.deferred = list(plan.deferred)
        self.requeue_at = plan.requeue_at.timestamp() if plan.requeue_at is not None else None
        for event in plan.events:
            key = (event.reason, event.message)
            # Aggregate repeats like an event recorder: the same event at most once a minute.
            if now - self._recorded.get(key, float("-inf")) >= 60.0:
                self._recorded[key] = now
                out.events.append((event.type, event.reason, event.message))
        if plan.actions and any(a.value != "SyncJob" for a in plan.actions):
            log.info("Job %s/%s: executed %s; phase %s", self.job.metadata.namespace, self.job.metadata.name,
                     ", ".join(a.value for a in plan.actions), self.phase)
        return out


def federation_event(run: JobRun, cluster: str, now: float, event_type: str, reason: str, message: str) -> Obj:
    """The Job's event as the federation sees it: about the federated Job (its uid), so that
    ``caldera describe job`` lists what every member's controller did."""
    md = run.job.metadata
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{md.name}.", "namespace": md.namespace or "default"},
        "involvedObject": {"apiVersion": JOB_API_VERSION, "kind": "Job", "namespace": md.namespace or "default",
                           "name": md.name, "uid": md.uid},
        "type": event_type, "reason": reason, "message": f"[{cluster}] {message}",
        "source": {"component": "caldera-agent", "host": cluster},
        "reportingComponent": "caldera-agent", "reportingInstance": cluster,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
