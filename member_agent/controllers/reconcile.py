"""Entry point of the job controller: ``reconcile(observation, now) -> JobPlan``.

Pure and deterministic: the agent passes the Job, its PodGroup and pods as observed, the
requests derived from what changed (:mod:`member_agent.controllers.observe`), the deferred
actions returned by the previous plan, and the time; it gets back what to create, update and
delete, the new Job status, the Job events, and when to call again. See docs/job-controller.md.

Per call: TTL first (a finished job past ``ttlSecondsAfterFinished`` is deleted); then the
deferred actions that fell due and the new requests are resolved to actions in order; the
first action that kills pods ends the pass (later requests are re-derived next time, as
Volcano's per-request queue would see them after the version bump); without any action the
pass is a SyncJob.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Mapping, Optional, Sequence

from member_agent.controllers import lifecycle, pod_status
from member_agent.controllers.job_pass import JobPass, PodDeletion, RecordedEvent, initial_status
from member_agent.controllers.job_view import JobView, view_job
from member_agent.controllers.plugins.base import KeySource, WireObject
from member_agent.controllers.podgroup import pod_group_phase, reconcile_pod_group
from member_agent.controllers.requests import DeferredAction, JobAction, JobEvent, JobRequest
from member_agent.controllers.state_machine import FINISHED_PHASES, execute
from member_agent.controllers.timestamps import go_duration, parse_rfc3339
from policies.lru import LRU
from policies.models.core import Pod
from policies.models.volcano_batch import Job, JobStatus
from policies.models.volcano_scheduling import PodGroup

#: Plugins every job gets unless it configures them itself. Volcano adds none; Caldera adds
#: ``env`` and ``svc`` (without the NetworkPolicy, which would cut off a serving job's clients)
#: so that ``$(VC_TASK_INDEX)`` and ``$(VC_MASTER_HOST)`` in the seed's torchrun command resolve.
CALDERA_DEFAULT_PLUGINS: Mapping[str, list[str]] = {"env": [], "svc": ["--disable-network-policy=true"]}


@dataclass(frozen=True)
class ControllerConfig:
    #: Generates ssh key pairs (default: RSA 2048 via ``cryptography``); tests pass a fixed one.
    key_source: Optional[KeySource] = None
    #: Plugins every job gets in addition to its own; a job listing the same plugin wins.
    #: ``{}`` gives Volcano's exact behaviour.
    default_plugins: Mapping[str, list[str]] = field(default_factory=lambda: dict(CALDERA_DEFAULT_PLUGINS))


@dataclass(frozen=True)
class JobObservation:
    job: Job
    pod_group: Optional[PodGroup] = None
    #: The job's pods as observed (terminating ones included, with deletionTimestamp).
    pods: Sequence[Pod] = ()
    requests: Sequence[JobRequest] = ()
    #: ``JobPlan.deferred`` of the previous call.
    deferred: Sequence[DeferredAction] = ()
    #: PriorityClass name -> value, for pod priority and minResources ordering.
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    #: Plugin-owned objects that exist, by (kind, name), e.g. the ssh Secret (keeps keys stable).
    existing_objects: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: Labels the agent wants on every pod it creates (e.g. its Work uid and generation).
    pod_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class JobPlan:
    status: JobStatus
    status_changed: bool
    create_pods: list[Pod] = field(default_factory=list)
    #: Annotate each with ``volcano.sh/controller-out-of-sync`` (or remember the names) and delete.
    delete_pods: list[PodDeletion] = field(default_factory=list)
    pod_group_action: Optional[str] = None  # "create" | "update" | "delete" | None
    pod_group: Optional[PodGroup] = None
    #: Plugin objects (ConfigMap, Service, NetworkPolicy, Secret) to create or update.
    apply_objects: list[WireObject] = field(default_factory=list)
    #: (kind, name) of plugin objects to delete; NotFound is success.
    delete_objects: list[tuple[str, str]] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    deferred: list[DeferredAction] = field(default_factory=list)
    #: Actions executed this pass, in order (SyncJob included).
    actions: list[JobAction] = field(default_factory=list)
    #: Call reconcile again at this time even if nothing changes (deferred action or TTL).
    requeue_at: Optional[datetime] = None
    #: TTL: the job is deleted at this time (``status.state.lastTransitionTime + ttl``).
    delete_job_at: Optional[datetime] = None
    #: The TTL has passed: delete the Job (pods and PodGroup follow by owner reference).
    delete_job: bool = False
    #: The pass that follows this one plans nothing, provided it observes exactly what this plan
    #: asked for and nothing else (:func:`_followup_settles`; read by the replay, which writes it).
    followup_settles: bool = False


def _ttl_deadline(job: JobView, status: Mapping[str, Any]) -> Optional[datetime]:
    state = status.get("state") or {}
    if job.ttl_seconds_after_finished is None or state.get("phase") not in FINISHED_PHASES:
        return None
    finished = parse_rfc3339(state.get("lastTransitionTime"))
    return None if finished is None else finished + timedelta(seconds=job.ttl_seconds_after_finished)


def _live_phases(observation: JobObservation) -> dict[str, str]:
    return {p.metadata.name or "": pod_status.phase(p) for p in observation.pods if p.metadata.deletion_timestamp is None}


def _split_deferred(observation: JobObservation, live: Mapping[str, str], version: int,
                    now: datetime) -> tuple[list[DeferredAction], list[DeferredAction]]:
    due: list[DeferredAction] = []
    waiting: list[DeferredAction] = []
    for deferred in observation.deferred:
        if not lifecycle.still_valid(deferred, observation.requests, live, version):
            continue
        (due if deferred.due <= now else waiting).append(deferred)
    return due, waiting


#: Wire forms of the Job statuses seen lately, by identity: a status model stands until a pass
#: changes it, and each pass reads it (a pass changes it about one time in three). Entries hold
#: their model, so an id cannot be reused while its entry lives; the dicts are only read.
_STATUS_WIRES: LRU[int, tuple[JobStatus, dict[str, Any]]] = LRU(256)


def _status_wire(status: JobStatus) -> dict[str, Any]:
    hit = _STATUS_WIRES.get(id(status))
    if hit is not None and hit[0] is status:
        return hit[1]
    wire = status.to_wire()
    _remember_wire(status, wire)
    return wire


def _remember_wire(status: JobStatus, wire: dict[str, Any]) -> None:
    _STATUS_WIRES.put(id(status), (status, wire))


def _validated_status(wire: dict[str, Any]) -> JobStatus:
    """The model of a status a pass wrote, its wire form remembered as the dict it came from: the
    next pass reads it (``_status_wire``), and dumping the new model again was a tenth of a
    follow-up pass. Exact because that dict is the model's own dump: it holds only what a pass
    writes (JobStatus fields by their wire names, none of them None; ints, strings, and dicts and
    lists of those, over the nested values of a dumped status, ``initial_status``) and no JobStatus
    field has a validator that changes a value (``tests/controllers/harness.py`` compares the two
    after every pass of every scenario)."""
    model = JobStatus.model_validate(wire)
    _remember_wire(model, wire)
    return model


def _new_pass(observation: JobObservation, job: JobView, old_status: Mapping[str, Any], now: datetime,
              config: ControllerConfig) -> JobPass:
    return JobPass(
        job=job, now=now, status=initial_status(old_status),
        pods={pod.metadata.name or "": pod for pod in observation.pods},
        pod_group=observation.pod_group, priority_classes=observation.priority_classes,
        existing_objects=observation.existing_objects, key_source=config.key_source,
        default_plugins=config.default_plugins, pod_labels=dict(observation.pod_labels),
    )


def reconcile(observation: JobObservation, now: datetime, config: ControllerConfig = ControllerConfig()) -> JobPlan:
    """Plan one pass over ``observation.job`` at time ``now``.

    Raises :class:`~policies.errors.ValidationFailed` for a malformed share annotation or an
    unknown policy action, naming the field; nothing is planned in that case.
    """
    job = view_job(observation.job)
    old_status = _status_wire(observation.job.status) if observation.job.status else {}
    p = _new_pass(observation, job, old_status, now, config)
    # The Job's own status model stands for its wire form (validating that wire form again gives an
    # equal model); a pass validates a status only when it changed it.
    unchanged = observation.job.status if observation.job.status is not None else JobStatus.model_validate(old_status)
    plan = JobPlan(status=unchanged, status_changed=False)
    if observation.job.metadata.deletion_timestamp is not None:
        return plan  # being deleted: the garbage collector removes the pods and PodGroup
    deadline = _ttl_deadline(job, p.status)
    if deadline is not None and now >= deadline:
        plan.delete_job, plan.delete_job_at = True, deadline
        return plan

    live = _live_phases(observation)
    due, waiting = _split_deferred(observation, live, p.version, now)
    work = [d.request.with_action(d.action) for d in due] + list(observation.requests)
    pending_keys = {d.key() for d in waiting}
    acted = False
    for request in work:
        resolution = lifecycle.resolve(job, request, p.version)
        if resolution.delay > timedelta(0):
            deferred = lifecycle.defer(request, resolution)
            # Overdue already (an event timed from a pod's creation after an agent restart): run now.
            overdue = deferred.due <= now and lifecycle.still_valid(deferred, observation.requests, live, p.version)
            if not overdue:
                if deferred.key() not in pending_keys:
                    waiting.append(deferred)
                    pending_keys.add(deferred.key())
                    p.event("ExecuteAction", f"Execute action {resolution.action.value} after "
                            f"{go_duration(resolution.delay)}")
                continue
        if request.event == JobEvent.COMMAND_ISSUED and request.action is not None:
            p.event("CommandIssued", f"Start to execute action {request.action.value}")
        if resolution.action == JobAction.SYNC_JOB:
            continue
        p.event("ExecuteAction", f"Start to execute action {resolution.action.value}")
        execute(p, resolution.action, request)
        plan.actions.append(resolution.action)
        acted = True
        if p.killed:
            break
    if not acted:
        execute(p, JobAction.SYNC_JOB)
        plan.actions.append(JobAction.SYNC_JOB)

    plan.status_changed = p.status != old_status
    plan.status = _validated_status(p.status) if plan.status_changed else unchanged
    plan.create_pods = p.create_pods
    plan.delete_pods = list(p.delete_pods.values())
    plan.pod_group_action, plan.pod_group = p.pod_group_action, p.pod_group_out
    plan.apply_objects = [] if p.killed else list(p.apply_objects.values())
    plan.delete_objects = p.delete_objects
    plan.events = p.events
    # Actions after a kill must not be lost if the job restarted: drop deferrals of old versions.
    plan.deferred = [d for d in waiting if d.request.job_version is None or d.request.job_version >= p.version]
    plan.delete_job_at = _ttl_deadline(job, p.status)
    times = [d.due for d in plan.deferred] + ([plan.delete_job_at] if plan.delete_job_at else [])
    if p.killed:
        times.append(now)
    plan.requeue_at = min(times) if times else None
    plan.followup_settles = _followup_settles(observation, job, p, plan, old_status)
    return plan


def _followup_settles(observation: JobObservation, job: JobView, p: JobPass, plan: JobPlan,
                      old_status: Mapping[str, Any]) -> bool:
    """Whether the SyncJob of the next pass, over this pass's own outputs (the new status, the PodGroup
    as planned with its status kept or ``{"phase": "Pending"}`` when created, each created pod
    observed Pending, the plugin objects applied) and nothing else, plans nothing: ``resync_settled``
    without running it. It holds when this pass was that SyncJob alone (no policy, nothing deferred or
    due, no kill, event, deletion or deletion of objects) in Pending or Running and left the phase as
    its status rule found it: the next SyncJob then takes the same branches with the same counts (a
    created pod counted Pending either way, ``PodCounts.add_created``), the same rule over them and
    the same PodGroup spec, so its status equals this one's; and each plugin whose objects this pass
    made (``on_job_add``) makes on a resync (``on_job_update``) objects equal to those."""
    old_phase = str((old_status.get("state") or {}).get("phase") or "")
    new_phase = str((p.status.get("state") or {}).get("phase") or "")
    if not (plan.actions == [JobAction.SYNC_JOB] and new_phase in ("Pending", "Running")
            and new_phase == (old_phase or "Pending") and _only_resyncs(observation, job) and not p.killed
            and not plan.delete_pods and not plan.events and not plan.delete_objects and not plan.deferred
            and plan.requeue_at is None and not plan.delete_job and plan.pod_group_action != "delete"):
        return False
    if "plugins" not in job.derived:
        return False
    marks = old_status.get("controlledResources") or {}
    added = [plugin for plugin in job.derived["plugins"][1]
             if marks.get(plugin.controlled_resource[0]) != plugin.controlled_resource[1]]
    if not added:
        return True
    loaded = p._plugins()
    if loaded is None:
        return False
    ctx = loaded[1]
    return all(p.apply_objects.get((obj["kind"], obj["metadata"]["name"])) == obj
               for plugin in added for obj in plugin.on_job_update(ctx))


def resync_settled(observation: JobObservation, now: datetime, config: ControllerConfig = ControllerConfig()) -> bool:
    """Whether :func:`reconcile` would plan nothing for ``observation``, whatever its requests: the
    conditions of :func:`plan_settles`, checked by running only the SyncJob (no requests to derive
    or resolve, no plan to build). The agent asks this of the pass that follows one that changed
    something, before paying for a whole pass.
    """
    job = view_job(observation.job)
    if not _only_resyncs(observation, job):
        return False
    old_status = _status_wire(observation.job.status) if observation.job.status else {}
    p = _new_pass(observation, job, old_status, now, config)
    if _ttl_deadline(job, p.status) is not None:
        return False
    execute(p, JobAction.SYNC_JOB)
    return (not p.killed and not p.create_pods and not p.delete_pods and p.pod_group_action is None
            and not p.events and not p.delete_objects and p.status == old_status
            and all(observation.existing_objects.get(key) == obj for key, obj in p.apply_objects.items()))


def plan_settles(observation: JobObservation, plan: JobPlan) -> bool:
    """Whether ``plan`` (made by :func:`reconcile` for ``observation``) shows every pass over an
    observation that reads the same (:func:`pod_resync_view`, :func:`pod_group_resync_view`, a
    PodGroup spec the Job wants) planning nothing, whatever its requests and its time.

    It does when the Job has no lifecycle policies (every request, of any event, resolves to
    SyncJob; the deferred actions, none here, are the only other source of actions), is not being
    deleted, and the SyncJob that ran (actions ``[SyncJob]``) changed no status and asked for no
    pod, PodGroup, event, deletion or wait (``requeue_at``: no TTL deadline, no kill), its plugin
    objects equal to the existing ones. Such a SyncJob reads the clock only where it changes
    something, so the same SyncJob at any later time plans nothing either.
    """
    if not _only_resyncs(observation, view_job(observation.job)):
        return False
    return (plan.actions == [JobAction.SYNC_JOB] and not plan.status_changed and not plan.create_pods
            and not plan.delete_pods and plan.pod_group_action is None and not plan.events and not plan.delete_objects
            and not plan.deferred and plan.requeue_at is None and not plan.delete_job
            and all(observation.existing_objects.get((str(obj["kind"]), str(obj["metadata"]["name"]))) == obj
                    for obj in plan.apply_objects))


def requests_matter(job: Job, deferred: Sequence[DeferredAction]) -> bool:
    """Whether the requests the agent derives from what changed (``observe_*``: none carries an
    action of its own) can change a pass's plan. They cannot when the Job has no lifecycle policy and
    no action is deferred: each resolves to SyncJob, which :func:`reconcile` then runs once whatever
    the requests were, and no deferred action reads them (``still_valid``); the agent derives none.
    Raises as :func:`reconcile` does for a malformed share (``view_job``)."""
    return bool(deferred) or not lifecycle.only_resyncs(view_job(job))


def _only_resyncs(observation: JobObservation, job: JobView) -> bool:
    """Every action a pass over ``observation`` can take is the SyncJob: no deferred action, the
    Job not being deleted, and no lifecycle policy to resolve a request to anything else."""
    return (not observation.deferred and observation.job.metadata.deletion_timestamp is None
            and lifecycle.only_resyncs(job))


def pod_resync_view(pod: Pod) -> tuple[bool, str, str, bool]:
    """All a SyncJob (syncJob, killJob, the counts and the status rules) reads of a pod besides its
    name: terminating, phase, task, ready."""
    return (pod_status.is_terminating(pod), pod_status.phase(pod), pod_status.task_of(pod), pod_status.is_ready(pod))


#: PodGroup phases in which a SyncJob holds the job's pods back (``sync_job``: no pod is created)
WAITING_PHASES = ("", "Pending")


def pod_group_resync_view(pod_group: Optional[PodGroup]) -> Optional[tuple[bool, tuple[str, ...]]]:
    """All a SyncJob reads of the PodGroup's status: whether its phase holds pods back ("" or
    Pending), and then the messages of its Unschedulable conditions (events); None without one."""
    if pod_group is None:
        return None
    waiting = pod_group_phase(pod_group) in WAITING_PHASES
    conditions = (pod_group.status.conditions or []) if waiting and pod_group.status is not None else []
    return waiting, tuple(c.message or "" for c in conditions if c.type == "Unschedulable")


def pod_group_resync_stable(observation: JobObservation) -> bool:
    """The SyncJob leaves the observed PodGroup's spec alone (it has the spec the Job wants)."""
    group = observation.pod_group
    return group is not None and reconcile_pod_group(view_job(observation.job), group, observation.priority_classes)[0] is None
