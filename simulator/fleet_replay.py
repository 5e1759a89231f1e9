"""Queues in trace replay (``caldera simulate --queues QUEUES.yaml``): fleet-wide or per cluster.

``--queue-scope fleet`` (the default) replays through the federation's own queue code
(:mod:`federation.fleet_queues`): every arriving Job joins the :class:`~federation.fleet_queues.FleetQueues`
ledger and waits at the federation until a fleet session (Volcano's enqueue and allocate gates,
proportion's water-filling or capacity's deserved over the fleet's total) admits it; only then is it
divided over the clusters. An admitted Job that fits nowhere goes back to Inqueue and, when the conf's
actions name ``reclaim`` (or ``gangreclaim``), :func:`~federation.fleet_queues.reclaim.plan_reclaim`
picks whole gangs of queues above their deserved share to evict; they follow their PodEvicted policy
(a trace job has none: RestartJob, so they wait again, whole, and run their full duration when
placed again). The members then run the conf without its reclaim actions: across clusters, reclaim is
the federation's (the agents' reclaim acts within their allotments, which the replay does not model).

``--queue-scope cluster`` is the behaviour before fleet queues, kept for comparison: each member
holds every Queue as written (so a capability holds per cluster, not fleet-wide) and its own
scheduler orders, shares and (if its conf says so) reclaims; the federation places first come, first
served. The fleet-wide deserved share is still computed, by the same ledger fed every job as placed
or waiting, as the yardstick both scopes are measured against.

A session runs when something that can change an answer happened: an arrival, a finish, a failed
placement; never on a timer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from federation.fleet_queues import FleetConf, FleetQueues
from federation.fleet_queues.adapters import job_from_object, queue_from_object
from federation.fleet_queues.reclaim import Placed, Reclaimer, plan_reclaim
from policies.codec import admit_all, decode_path
from policies.errors import InvalidConfiguration
from policies.models.pod_resources import template_request
from policies.models.volcano_batch import Job
from policies.resources import GPU, ResourceVector
from policies.scheduler_conf import SchedulerConf
from simulator.federated import Federation, Shares
from simulator.job_mode import EPOCH
from simulator.member import Member, Obj
from simulator.trace import NAMESPACE, TraceJob

RECLAIM_ACTIONS = ("reclaim", "gangreclaim")


def load_queues(path: str) -> list[Obj]:
    """The Queues of a multi-document YAML, checked by admission (errors name the document, field and rule)."""
    decoded = admit_all(decode_path(path))
    if decoded.errors:
        raise InvalidConfiguration("\n".join(e.describe() for e in decoded.errors))
    out = []
    for item in decoded.objects:
        if item.obj.kind != "Queue":
            raise InvalidConfiguration(f"{item.origin}: {item.obj.kind} {item.obj.name!r}: --queues takes only "
                                       "scheduling.volcano.sh/v1beta1 Queue documents")
        out.append(item.obj.to_wire())
    if not out:
        raise InvalidConfiguration(f"{path}: no Queue in the file")
    return out


def with_trace_queues(queues: list[Obj], names: set[str]) -> list[Obj]:
    """Queues the trace names and the file lacks: weight 1, no caps (Volcano's defaults)."""
    known = {q["metadata"]["name"] for q in queues}
    extra = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
              "spec": {"weight": 1, "reclaimable": True}} for name in sorted(names - known)]
    return [*queues, *extra]


def members_conf(conf: SchedulerConf) -> SchedulerConf:
    """The members' conf under fleet queues: reclaim across queues is the federation's."""
    return dataclasses.replace(conf, actions=tuple(a for a in conf.actions if a not in RECLAIM_ACTIONS))


def pods_of(manifest: Obj) -> tuple[tuple[dict[str, float], int], ...]:
    """(pod request, replicas) per task, in the ledger's units."""
    job = Job.model_validate(manifest)
    return tuple((dict(template_request(t.template)), t.replica_count) for t in job.spec.tasks or [])


def share_usage(shares: Shares) -> dict[str, dict[str, float]]:
    """cluster -> what the job's share there requests (the federation's view of a placed gang)."""
    out: dict[str, dict[str, float]] = {}
    for member, manifest, _ in shares:
        usage: dict[str, float] = {}
        for pod, count in pods_of(manifest):
            for name, amount in pod.items():
                usage[name] = usage.get(name, 0.0) + amount * count
        out[member.name] = usage
    return out


class QueueReplay:
    """Wraps the replay's :class:`Federation`: admission by the fleet's queues (``fleet``) or none (``cluster``),
    and the per-queue series (GPUs the queues' pods hold, GPUs the fleet-wide rule says they deserve)."""

    def __init__(self, federation: Federation, queues: list[Obj], conf: FleetConf, scope: str,
                 priority_classes: dict[str, int]) -> None:
        self.fed, self.scope, self.classes = federation, scope, priority_classes
        self.ledger = FleetQueues(conf)
        self.ledger.set_queues(queue_from_object(q) for q in queues)
        total: dict[str, float] = {}
        for member in federation.members.values():
            for node in member.nodes:
                for name, amount in ResourceVector.from_resource_list(
                        (node.get("status") or {}).get("allocatable")).items():
                    total[name] = total.get(name, 0.0) + amount
        self.ledger.set_capacity(total)
        self.names = tuple(sorted(self.ledger.queues))
        self.waiting: dict[tuple[str, str], tuple[TraceJob, Obj]] = {}
        self.placed: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        self.ready: list[tuple[TraceJob, Shares]] = []  # placed by a session, handed to the replay at the tick's end
        self.reclaimed: dict[str, int] = {}  # victim queue -> gangs evicted
        self.series: list[tuple[float, tuple[float, ...], tuple[float, ...]]] = []
        self._dirty = False
        self._seen_finishes = 0
        self._clusters: list[Obj] | None = None
        #: memos for reclaim, each checked against the object it was derived from (see _reclaim, _gangs, _free)
        self._pods_of: dict[tuple[str, str], tuple[tuple[dict[str, float], int], ...]] = {}
        self._gang_cache: dict[tuple[str, str], tuple[Any, Any, Placed]] = {}
        self._status_free: dict[str, tuple[Obj, dict[str, float]]] = {}
        #: job -> (the members' status objects, the assumed shares) its placement last failed against
        self._unfit: dict[tuple[str, str], tuple[list[Obj], tuple[tuple[str, int], ...]]] = {}

    @property
    def fleet_scope(self) -> bool:
        return self.scope == "fleet"

    # ------------------------------------------------------------------ the replay's hooks
    def divide(self, job: TraceJob, manifest: Obj) -> Shares | str:
        entry = job_from_object(manifest, self.classes)
        self.ledger.add_job(entry)
        if not self.fleet_scope:
            shares = self.fed.divide(job, manifest)
            if isinstance(shares, str):
                self.ledger.remove_job(entry.key)
            elif shares:
                self._placed(entry.key, shares)
            else:  # waits in the federation's FIFO queue: its request counts in the yardstick's demand
                self.ledger.mark_allocated(entry.key)
                self.ledger.unplaced(entry.key)
            return shares
        on_empty = self.fed._place(manifest, list(self.fed._empty.values()))
        if not on_empty.ok:
            self.ledger.remove_job(entry.key)
            return f"the federation cannot divide it even over empty clusters: {on_empty.reason}"
        self.fed._jobs[job.name] = (job, manifest)
        self.waiting[entry.key] = (job, manifest)
        self._dirty = True
        return []

    def release(self, now: float) -> list[tuple[TraceJob, Shares]]:
        placed = self.fed.release(now)  # two-phase start; in cluster scope also its FIFO queue
        for job, shares in placed:
            self._placed((NAMESPACE, job.name), shares)
        self._forget_finished()
        if self.fleet_scope and self._dirty:
            self._session()
        out, self.ready = [*placed, *self.ready], []
        self._record(now)
        return out

    # ------------------------------------------------------------------ ledger upkeep
    def _placed(self, key: tuple[str, str], shares: Shares) -> None:
        self.ledger.mark_allocated(key)
        self.placed[key] = share_usage(shares)
        self._dirty = True

    def _forget_finished(self) -> None:
        finishes = sum(m.finished_pods for m in self.fed.members.values())
        if finishes == self._seen_finishes and not self._dirty:
            return
        self._seen_finishes = finishes
        requeued = {job.name for job, _ in self.fed.backlog} | set(self.fed.held)  # a cancelled two-phase start
        for key in list(self.placed):
            if key[1] not in requeued and not any(_holding(m, key[1]) for m in self.fed.members.values()):
                del self.placed[key]
                self._gang_cache.pop(key, None)
                self._pods_of.pop(key, None)
                self._unfit.pop(key, None)
                self.ledger.remove_job(key)
                self._dirty = True

    # ------------------------------------------------------------------ fleet sessions
    def _session(self) -> None:
        """Admit, place, reclaim. Work once per shape: a pod shape that fit nowhere is not tried again
        this session (nor reclaimed for again by the same queue) until an eviction frees room."""
        self._dirty = False
        self._clusters = None
        unplaceable: set[Any] = set()
        not_reclaimed: set[Any] = set()
        for key in self.ledger.decide():
            job, manifest = self.waiting[key]
            shape = _shape(manifest)
            shares = None if shape in unplaceable else self._try(key, job, manifest)
            reclaim_key = (self.ledger.jobs[key].queue, shape)
            if shares is None and self.ledger.conf.reclaim and reclaim_key not in not_reclaimed:
                if self._reclaim(key, manifest):
                    unplaceable.clear()
                    shares = self._try(key, job, manifest)
                else:
                    not_reclaimed.add(reclaim_key)
            if shares is None:
                unplaceable.add(shape)
                self.ledger.unplaced(key)  # Inqueue: tried again at the next event
                continue
            del self.waiting[key]
            self._unfit.pop(key, None)
            self._placed(key, shares)
            self.ready.append((job, shares))
        self._dirty = False

    def _try(self, key: tuple[str, str], job: TraceJob, manifest: Obj) -> Shares | None:
        """The federation's placement, unless this job already failed against the very same room: the same
        members' status objects (rebuilt whenever a pod binds, ends or is evicted, or a reservation moves)
        and the same dispatched-but-unbound shares. Placement is a function of those and the job, so a
        job that fit nowhere is not tried again on every arrival while nothing it could use was freed."""
        clusters = self._statuses()
        self.fed._settle_assumed()  # what _try deducts: shares not yet bound or reserved
        assumed = tuple((name, self.fed.generation.get(name, 0)) for name in self.fed._assumed)
        failed = self._unfit.get(key)
        if failed is not None and failed[1] == assumed and len(failed[0]) == len(clusters) \
                and all(a is b for a, b in zip(failed[0], clusters, strict=True)):
            return None
        shares = self.fed._try(job, manifest, clusters)
        if shares is None:
            self._unfit[key] = (list(clusters), assumed)
        else:
            self._unfit.pop(key, None)
        return shares

    def _reclaim(self, key: tuple[str, str], manifest: Obj) -> bool:
        entry = self.ledger.jobs[key]
        pods = self._pods_of.get(key)
        if pods is None:  # a key's manifest never changes (an evicted gang waits again with the same one)
            pods = self._pods_of[key] = pods_of(manifest)
        reclaimer = Reclaimer(key, entry.queue, pods, entry.priority, counted=True)
        plan = plan_reclaim(self.ledger.attrs(), reclaimer, self._gangs(), self._free())
        if plan.evictions:
            self._clusters = None
        for eviction in plan.evictions:
            victim = eviction.victim.key
            for member in self.fed.members.values():
                member.cancel(victim[1])  # the whole gang leaves every cluster (PodEvicted → RestartJob)
            self.fed.held.pop(victim[1], None)
            self.fed._assumed.pop(victim[1], None)
            del self.placed[victim]
            self._gang_cache.pop(victim, None)
            self.ledger.unplaced(victim)
            self.waiting[victim] = self.fed._jobs[victim[1]]
            self.reclaimed[eviction.victim.queue] = self.reclaimed.get(eviction.victim.queue, 0) + 1
        return bool(plan.evictions)

    def _gangs(self) -> list[Placed]:
        """The placed gangs as reclaim sees them, in ``placed`` order; each built once per (ledger entry, usage)."""
        out = []
        for k, usage in self.placed.items():
            job = self.ledger.jobs.get(k)
            if job is None:
                continue
            cached = self._gang_cache.get(k)
            if cached is None or cached[0] is not job or cached[1] is not usage:
                cached = self._gang_cache[k] = (job, usage, Placed(k, job.queue, job.priority, dict(job.request),
                                                                   usage, True, job.created))
            out.append(cached[2])
        return out

    def _statuses(self) -> list[Obj]:
        """The members' Cluster status, walking every pod: once per session, again after evictions."""
        if self._clusters is None:
            self._clusters = [self.fed._cluster(m) for m in self.fed.members.values()]
        return self._clusters

    def _free(self) -> dict[str, dict[str, float]]:
        """Each member's free room as its agent would report it, less the shares dispatched but not yet bound."""
        assumed: dict[str, dict[str, float]] = {}
        for entries in self.fed._assumed.values():
            for share in entries:
                slot = assumed.setdefault(share.cluster, {})
                for request, replicas in share.components:
                    for name, amount in request:
                        slot[name] = slot.get(name, 0.0) + amount * replicas
        out = {}
        for cluster in self._statuses():
            name = cluster["metadata"]["name"]
            cached = self._status_free.get(name)
            if cached is None or cached[0] is not cluster:  # a status object is rebuilt whenever a pod moves
                summary = cluster["status"].get("resourceSummary") or {}
                room = dict(ResourceVector.from_resource_list(summary.get("allocatable")))
                for field in ("allocated", "allocating"):
                    for resource, amount in ResourceVector.from_resource_list(summary.get(field)).items():
                        room[resource] = room.get(resource, 0.0) - amount
                cached = self._status_free[name] = (cluster, room)
            free = dict(cached[1])
            for resource, amount in assumed.get(name, {}).items():
                free[resource] = free.get(resource, 0.0) - amount
            out[name] = free
        return out

    # ------------------------------------------------------------------ the queue series
    def _record(self, now: float) -> None:
        held = {q: 0.0 for q in self.names}
        for member in self.fed.members.values():
            for queue, gpus in member.gpus_by_queue.items():
                held[queue] = held.get(queue, 0.0) + gpus
        attrs = self.ledger.attrs()
        deserved = tuple(min(attrs[q].deserved.get(GPU, 0.0), self.ledger.total.get(GPU, 0.0)) / 1000
                         if q in attrs else 0.0 for q in self.names)
        row = (now - EPOCH, tuple(held.get(q, 0.0) for q in self.names), deserved)
        if not self.series or self.series[-1][1:] != row[1:]:
            self.series.append(row)


def _shape(manifest: Obj) -> Any:
    """A job's pods as a hashable shape (task requests and replicas)."""
    return tuple((repr(t["template"]["spec"]["containers"][0]["resources"]), t.get("replicas", 1))
                 for t in manifest["spec"]["tasks"])


def _holding(member: Member, job: str) -> bool:
    share = member.shares.get(job)
    return share is not None and share.ended is None and share.phase not in ("Completed", "Failed", "Aborted",
                                                                             "Terminated")


def queue_objects_for_members(members: list[Member], queues: list[Obj]) -> None:
    """Per-cluster scope: each member holds every Queue as written (its capability per cluster)."""
    for member in members:
        for queue in queues:
            member.cache.upsert({**queue, "status": {"state": "Open"}})
