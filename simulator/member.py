"""One member cluster in virtual time: the agent's job controller, its scheduler cache and its
session scheduler, with a kubelet that ends each pod ``duration`` seconds after it starts
(:mod:`simulator.kubelet`); each job's share is a :class:`~simulator.share.Share`.

What runs is the agent's own code, fed by the replay instead of informers:

* a job share is a :class:`~member_agent.works.WorkRecord` driven by
  :class:`~member_agent.job_runner.JobRun` (the Volcano job controller: PodGroup, pods, phases,
  policies), exactly as the agent drives it for a Work;
* the PodGroups, pods, Queues and PriorityClasses go to a
  :class:`~member_agent.scheduler.scheduler_cache.SchedulerCache` as events;
* a session is ``run_cycle(cache.snapshot(), conf, clock)``; its bindings become Running pods
  (with the session's device annotations), its PodGroup phases go back to the runs, its
  evictions delete pods (the controller then acts per the job's policies);
* a held share of a gang spanning clusters keeps its bindings as a reservation in a
  :class:`~member_agent.gang.GangTracker` (shown bound in every snapshot, as the agent's
  overlay does) until the federation releases or cancels it.
"""

from __future__ import annotations

from typing import Callable, Optional

from member_agent.cluster.clock import rfc3339
from member_agent.controllers import ControllerConfig
from member_agent.gang import GangTracker
from member_agent.job_runner import FINISHED_JOB_PHASES
from member_agent.pod_writes import with_placement
from member_agent.scheduler.cycle import run_cycle
from member_agent.scheduler.framework.result import CycleResult
from member_agent.scheduler.framework.session import SessionOptions
from member_agent.works import Placement, WorkRecord
from policies.scheduler_conf import SchedulerConf
from policies.wire_objects import copy_wire_sharing
from simulator import job_models, pod_models
from simulator.clock import VirtualClock
from simulator.cluster_fit import ClusterFit
from simulator.kubelet import PodEnds, running_status, succeeded_status
from simulator.member_cache import seeded_cache
from simulator.share import Obj, Share, gpus_per_pod
from simulator.trace import TraceJob

__all__ = ["Member", "Obj", "Share"]


class Member:
    """A member cluster: nodes from its cluster file, shares of jobs, one session per tick."""

    def __init__(self, name: str, nodes: list[Obj], conf: SchedulerConf, clock: VirtualClock, *,
                 options: SessionOptions = SessionOptions(), controller: ControllerConfig = ControllerConfig(),
                 queues: tuple[str, ...] = ("default",), priority_classes: Optional[dict[str, int]] = None,
                 hyper_nodes: tuple[Obj, ...] = ()) -> None:
        self.name, self.conf, self.clock, self.options, self.controller = name, conf, clock, options, controller
        self.nodes = nodes
        self.hyper_nodes = hyper_nodes  # the cluster file's ``hyperNodes:``, as the agent passes them
        self.priority_classes = dict(priority_classes or {})
        self.cache = seeded_cache(nodes, hyper_nodes, queues, self.priority_classes)
        #: simulator/topology.py: (member, job, nodes, clusters) -> run-time factor when a share binds
        self.on_bind: Optional[Callable[[str, str, list[str], int], float]] = None
        self._base: dict[str, float] = {}  # job -> its run time before any slowdown
        self.shares: dict[str, Share] = {}  # job name -> share
        self._by_group: dict[str, str] = {}  # "ns/podgroup" -> job name
        self._by_pod: dict[str, str] = {}  # "ns/pod" -> job name
        self._dirty: set[str] = set()
        #: shares whose PodGroup the scheduler moved where their settled controller cannot see it
        #: (``JobRun.settled_through``): the pass is not run, its PodGroup goes to the cache in its turn
        self._quiet: set[str] = set()
        #: kept as things change, so that has_pending and a session's follow-up cost what changed
        self._unstarted: set[str] = set()  # jobs whose share has not turned Running yet
        self._unbound: set[str] = set()  # "ns/pod" of pods without a node
        self._gang_jobs: set[str] = set()  # shares taking part in a two-phase start
        #: job -> when its controller asked to be looked at again (only shares that asked): read on
        #: every tick, so kept as passes set it rather than found by walking every share
        self._requeue_at: dict[str, float] = {}
        self._rv = 0
        self.changed = False  # since the last session
        self.pod_ends = PodEnds()
        self.sessions = 0
        self.fit = ClusterFit(name, nodes)
        self.gpus_total = self.fit.gpus_total
        self.gpus_allocated = 0.0
        self.gpus_by_queue: dict[str, float] = {}  # what each queue's running pods hold here
        self.evicted_pods = 0  # pods this member's own sessions evicted (preempt, reclaim)
        self.pods_version = 0  # moves whenever a pod is bound, ends or is deleted (the federation's status cache)
        self.finished_pods = 0  # pods that ran to their end (the federation re-tries its queue after one)
        #: called with (share, what) when a share starts, ends or is refused: "started", "ended", "error"
        self.on_change: Callable[[Share, str], None] = lambda share, what: None

    # ------------------------------------------------------------------ shares in
    def submit(self, job: str, manifest: Obj, duration: float, *, generation: int = 1, hold: bool = False,
               clusters: int = 1) -> Share:
        uid = str(manifest["metadata"].get("uid") or job)
        record = WorkRecord("sim", job, f"{uid}-{self.name}", Placement(generation, hold=hold, clusters=clusters),
                            manifest)
        share = Share(job, record, job_models.start(record, self.clock.now()), GangTracker(generation), duration,
                      gpus_per_pod(manifest),
                      queue=str(manifest["spec"].get("queue") or "default"))
        self._base[job] = duration
        self.shares[job] = share
        self._requeue_at.pop(job, None)  # a new run of the job: nothing asked yet
        self._unstarted.add(job)
        if record.gang_managed:
            self._gang_jobs.add(job)
        self._dirty.add(job)
        return share

    def release(self, job: str) -> None:
        """The federation's ``hold: false``: bind the reserved pods (all shares at the same time)."""
        share = self.shares[job]
        share.record = WorkRecord(share.record.namespace, share.record.name, share.record.uid,
                                  Placement(share.record.placement.generation, hold=False,
                                            clusters=share.record.placement.clusters), share.record.job)
        annotations = dict(share.gang.annotations)
        placed = share.gang.evaluate(share.record, share.run.min_member, share.run.phase, "", self.clock.now())
        if self.on_bind is not None:
            share.duration = self._base[job] * self.on_bind(self.name, job, list(placed.values()),
                                                            share.record.placement.clusters)
        for key, node in placed.items():
            self._bind(share, key.split("/", 1)[1], node, annotations.get(key))
        self._dirty.add(job)

    def cancel(self, job: str) -> None:
        """The federation's ``cancelled: true``: drop the reservation and the share."""
        share = self.shares.get(job)
        if share is not None:
            share.gang.drop("placement cancelled by the federation")
            self._forget(share)

    # ------------------------------------------------------------------ the controller
    def _pod_key(self, name: str) -> str:
        return f"sim/{name}"

    def _stamp(self, obj: Obj) -> None:
        self._rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)

    def reconcile(self) -> None:
        """Controller passes over every share something happened to, until they settle."""
        for _round in range(8):
            if not self._dirty and not self._quiet:
                return
            quiet, self._quiet = self._quiet - self._dirty, set()
            dirty, self._dirty = sorted(self._dirty | quiet), set()
            for job in dirty:
                share = self.shares.get(job)
                if share is None:
                    continue
                if job in quiet:
                    # what the settled pass's empty plan leaves: its PodGroup kept (the new phase to
                    # the cache) and the share's phase read, in the same order among the other passes
                    self._took(share, self.clock.now())
                else:
                    self._pass(share)
                self._note_requeue(job)

    def _note_requeue(self, job: str) -> None:
        share = self.shares.get(job)  # gone when the pass finished it
        at = share.run.requeue_at if share is not None else None
        if at is None:
            self._requeue_at.pop(job, None)
        else:
            self._requeue_at[job] = at

    def _pass(self, share: Share) -> None:
        now = self.clock.now()
        plan = share.run.plan(share.record, list(share.pods.values()), now, self.controller, self.priority_classes)
        if plan is None:
            return
        if plan.error:
            share.phase, share.ended = "Error: " + plan.error, now
            self.on_change(share, "error")
            self._forget(share)
            return
        for name in plan.delete_pods:
            self._delete_pod(share, name)
        for wire, model in zip(plan.create_pods, plan.create_models, strict=True):
            name = wire["metadata"]["name"]
            wire["metadata"].setdefault("uid", f"{share.record.uid}-{name}")
            wire["metadata"].setdefault("creationTimestamp", rfc3339(now))
            wire.setdefault("status", {})["phase"] = "Pending"
            self._stamp(wire)
            share.run.carry_pod_model(wire, pod_models.created(model, wire))
            share.pods[name] = wire
            self._by_pod[self._pod_key(name)] = share.job
            self._unbound.add(self._pod_key(name))
            self.cache.upsert(wire)
            self.changed = True
        self._took(share, now)

    def _took(self, share: Share, now: float) -> None:
        """After a pass: the PodGroup as the run now holds it, and the share's phase."""
        self._sync_group(share)
        phase = share.run.phase
        if phase == "Running" and share.started is None:
            share.started = now
            self._unstarted.discard(share.job)
            self.on_change(share, "started")
        if phase in FINISHED_JOB_PHASES and share.ended is None:
            share.phase, share.ended = phase, now
            self.on_change(share, "ended")
            self._forget(share)
            return
        share.phase = phase
        if share.run.pending_followup:
            if share.run.followup_settles and not share.record.gang_managed:
                # the member wrote exactly what the pass planned (its pods, PodGroup, objects and
                # status) and nothing else moves before the follow-up: it would plan nothing
                share.run.settle_followup(list(share.pods.values()), now, self.controller, self.priority_classes)
            else:
                self._dirty.add(share.job)

    def _sync_group(self, share: Share) -> None:
        group = share.run.pod_group
        held = share.record.gang_managed and not share.gang.schedulable
        if group is None or held:
            if share.cached_group is not None:
                self.cache.delete(share.cached_group)
                self._by_group.pop(self._group_key(share.cached_group), None)
                share.cached_group = None
                self.changed = True
            return
        if share.cached_group is None or share.cached_group != group:
            share.cached_group = copy_wire_sharing(group, share.cached_group)  # its versions move the status only
            self._by_group[self._group_key(group)] = share.job
            self.cache.upsert(share.cached_group)
            self.changed = True

    @staticmethod
    def _group_key(group: Obj) -> str:
        md = group.get("metadata") or {}
        return f"{md.get('namespace') or 'default'}/{md.get('name')}"

    def _forget(self, share: Share) -> None:
        """A finished (or cancelled) share leaves the cluster: its pods and PodGroup go (TTL)."""
        for name in list(share.pods):
            self._delete_pod(share, name)
        if share.cached_group is not None:
            self.cache.delete(share.cached_group)
            self._by_group.pop(self._group_key(share.cached_group), None)
        self.shares.pop(share.job, None)
        self._requeue_at.pop(share.job, None)
        self._dirty.discard(share.job)
        self._quiet.discard(share.job)
        self._unstarted.discard(share.job)
        self._gang_jobs.discard(share.job)
        self.changed = True

    def _delete_pod(self, share: Share, name: str) -> None:
        pod = share.pods.pop(name, None)
        if pod is None:
            return
        self.pods_version += 1
        key = self._pod_key(name)
        self._by_pod.pop(key, None)
        self._unbound.discard(key)
        share.gang.unreserve(key)
        if (pod.get("spec") or {}).get("nodeName") and pod["status"].get("phase") == "Running":
            self._count_gpus(share, pod, -1.0)
        self.cache.delete(pod)
        self.changed = True

    def _count_gpus(self, share: Share, pod: Obj, sign: float) -> None:
        gpus = sign * share.gpus_of(pod)
        self.gpus_allocated += gpus
        self.gpus_by_queue[share.queue] = self.gpus_by_queue.get(share.queue, 0.0) + gpus

    # ------------------------------------------------------------------ the kubelet
    def finish_due(self, until: float) -> None:
        """Pods whose run time is over succeed (exit code 0)."""
        for job, at in self._requeue_at.items():
            if at <= until:
                self._dirty.add(job)
        for job, name in self.pod_ends.due(until):
            share = self.shares.get(job)
            pod = share.pods.get(name) if share is not None else None
            if share is None or pod is None or pod["status"].get("phase") != "Running":
                continue  # deleted (the share finished or was cancelled) before its end
            before = share.run.kept_pod_model(pod)
            pod["status"] = succeeded_status(pod["status"].get("startTime"))
            self._count_gpus(share, pod, -1.0)
            self.finished_pods += 1
            self.pods_version += 1
            self._stamp(pod)
            if before is not None:
                share.run.carry_pod_model(pod, pod_models.restatused(before, pod))
            self.cache.upsert(pod)
            self._dirty.add(job)
            self.changed = True

    def next_finish(self) -> float:
        return self.pod_ends.next()

    def next_requeue(self) -> float:
        """The earliest time a share's controller asked to be looked at again (retry delay, TTL)."""
        return min(self._requeue_at.values(), default=float("inf"))

    def never_fits(self, job: TraceJob) -> str:
        """Why no state of this cluster could ever run ``job`` ("" when one could)."""
        return self.fit.never_fits(job)

    def _bind(self, share: Share, name: str, node: str, annotations: Optional[dict[str, str]]) -> None:
        pod = share.pods.get(name)
        if pod is None:
            return
        before = share.run.kept_pod_model(pod)
        bound = with_placement(pod, node, annotations)
        bound["status"] = running_status(rfc3339(self.clock.now()))
        self._stamp(bound)
        if before is not None:
            share.run.carry_pod_model(bound, pod_models.bound(before, bound))
        share.pods[name] = bound
        self._unbound.discard(self._pod_key(name))
        self.cache.upsert(bound)
        self._count_gpus(share, bound, 1.0)
        self.pods_version += 1
        self.pod_ends.start(share.job, name, self.clock.now() + share.duration)
        self._dirty.add(share.job)

    # ------------------------------------------------------------------ the scheduler
    def status_signature(self) -> tuple[int, int]:
        """What the Cluster status depends on: pods bound, ended or deleted, and the gangs' reservations."""
        held = sum(len(self.shares[j].gang.reservations) for j in self._gang_jobs if j in self.shares)
        return (self.pods_version, held)

    def has_pending(self) -> bool:
        """A share not yet Running, or a pod without a node (kept incrementally, not walked)."""
        return bool(self._unstarted or self._unbound)

    def schedule(self) -> CycleResult:
        """One session on the cache's snapshot, its decisions applied as the agent applies them."""
        self.changed = False
        self.sessions += 1
        result = run_cycle(self.cache.snapshot(), self.conf, self.clock, options=self.options)
        self.evicted_pods += len(result.evictions)
        for key in sorted(result.evictions):
            job = self._by_pod.get(key)
            if job is not None:
                self._delete_pod(self.shares[job], key.split("/", 1)[1])
                self._dirty.add(job)
        if self.on_bind is not None:
            self._slow_down(result.bindings)
        for key, node in sorted(result.bindings.items()):
            job = self._by_pod.get(key)
            if job is None:
                continue
            share = self.shares[job]
            annotations = result.pod_annotations.get(key)
            if share.record.gang_managed and share.record.placement.hold:
                share.gang.reserve(key, node, annotations)
                name = key.split("/", 1)[1]
                shown = with_placement(share.pods[name], node, annotations)
                self.cache.upsert(shown)  # held: resources taken in every later snapshot, nothing bound
            else:
                self._bind(share, key.split("/", 1)[1], node, annotations)
        # each PodGroup on its own (no order needed); the steady ones are skipped: only gang's
        # transitionID moved, which Volcano's job updater does not write
        for key in result.moved_pod_groups():
            job = self._by_group.get(key)
            if job is None:
                continue
            share = self.shares[job]
            before = share.run.pod_group_phase
            if share.run.set_pod_group_phase(result.pod_groups[key], result.conditions.get(key)):
                # not dirty: no pod of the share moved since its last pass (every pod write here
                # marks it), so a settled run's pass would plan nothing (a gang's tracker may move)
                if job not in self._dirty and not share.record.gang_managed and share.run.settled_through(before):
                    self._quiet.add(job)
                else:
                    self._dirty.add(job)
        if self._gang_jobs:  # only two-phase shares keep a gang tracker
            self._evaluate_gangs(result)
        self.reconcile()
        return result

    def _slow_down(self, bindings: dict[str, str]) -> None:
        """Each share binding now (not held) runs ``on_bind``'s factor longer: the tier its pods span."""
        assert self.on_bind is not None
        nodes_of: dict[str, list[str]] = {}
        for key, node in bindings.items():
            job = self._by_pod.get(key)
            if job is not None:
                nodes_of.setdefault(job, []).append(node)
        for job, nodes in sorted(nodes_of.items()):
            share = self.shares[job]
            if share.record.placement.hold:
                continue  # a held share binds at release
            bound = [str(p["spec"]["nodeName"]) for p in share.pods.values() if (p.get("spec") or {}).get("nodeName")]
            share.duration = self._base[job] * self.on_bind(self.name, job, bound + nodes,
                                                            share.record.placement.clusters)

    def _evaluate_gangs(self, result: CycleResult) -> None:
        reasons: dict[str, str] = {}
        for key, report in result.jobs.items():
            owner = self._by_group.get(key)
            if owner is not None and owner not in reasons:
                reasons[owner] = report.reason
        grouped = set(self._by_group.values())
        for job in sorted(self._gang_jobs & grouped):
            share = self.shares[job]
            share.gang.evaluate(share.record, share.run.min_member, share.run.phase, reasons.get(job, ""),
                                self.clock.now())
