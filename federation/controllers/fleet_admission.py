"""Admission before placement (a mixin of ``PlacementController``): one set of Volcano Queues for the fleet.

The placement controller keeps a :class:`~federation.fleet_queues.FleetQueues` ledger of every
federated Job (VCJob, the Kubeflow kinds and JobFlow steps all arrive here as Volcano Jobs). A job
with no placement yet goes to the scheduling queue only once its queue admitted it fleet-wide
(phase ``Allocated``); until then its ResourceBinding names no cluster, and ``Scheduled=False``
with the queue's reason (``QueueCapped``, ``QueueShare``, ``QueueClosed``, ``FleetOverused``...)
plus an Event with the same message say why, e.g. ``queue ai-training capped: nvidia.com/gpu
16/16 allocated across the fleet; this job needs 8``.

Decisions move on events, never on a timer: a job finishing or being deleted, a Queue changing, a
Cluster reporting another total, a placement failing. Each such event marks the ledger dirty;
the next reconcile (or the event handler itself for frees) runs one fleet session
(``decide``) and queues the jobs it newly admitted, in Volcano's order. The ledger is rebuilt from
the informers when the controller starts: jobs whose binding names clusters hold their request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from federation.controllers import binding as b
from federation.controllers import common as c
from federation.controllers.placement_queue import with_priority
from federation.fleet_queues import FleetQueues, Verdict
from federation.fleet_queues.adapters import fleet_total, job_from_object, queue_from_object
from federation.fleet_queues.status import job_counts, queue_status, reported_allocated
from policies.k8s import patches
from policies.kinds import lookup

QUEUES = lookup("scheduling.volcano.sh/v1beta1", "Queue")
log = logging.getLogger("caldera.controllers.fleet_queues")
Obj = dict[str, Any]
Key = tuple[str, str]


class FleetAdmission:
    """Needs, from the controller: ``options``, ``queue``, ``jobs``, ``bindings``, ``clusters``,
    ``priority_classes``, ``informer``, ``_write_binding``, ``_write_status`` and ``_event``."""

    options: c.ControllerOptions
    queue: Any
    jobs: Any
    bindings: Any
    clusters: Any
    priority_classes: Any
    informer: Any
    _write_binding: Any
    _write_status: Any
    _event: Any
    schedq: Any
    rc: Any

    def _init_fleet(self) -> None:
        conf = self.options.fleet_queues
        self.fleet: FleetQueues | None = FleetQueues(conf) if conf is not None else None
        self.fleet_queues = self.informer(QUEUES, self._on_queue)
        self._fleet_loaded = False
        self._fleet_dirty = True
        self._capacity_seen: tuple[Any, ...] = ()

    # ------------------------------------------------------------------ events
    def _on_queue(self, kind: str, obj: Obj, old: Obj | None) -> None:
        # the status this controller writes is no reason to decide again; spec and state are
        if old is not None and kind != "DELETED" and obj.get("spec") == old.get("spec") and \
                (obj.get("status") or {}).get("state") == (old.get("status") or {}).get("state"):
            return
        if self.fleet is not None and self._fleet_loaded:
            self.fleet.set_queues(queue_from_object(q) for q in self.fleet_queues.items())
            self._fleet_decide()

    def _fleet_on_job(self, kind: str, obj: Obj) -> None:
        """A job finished or was deleted: what it held frees its queue at once (no timer)."""
        if self.fleet is None or not self._fleet_loaded:
            return
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if kind == "DELETED" or _finished(obj) or meta.get("deletionTimestamp"):
            if self.fleet.remove_job(key):
                self._fleet_decide()
        elif key not in self.fleet.jobs or self.fleet.jobs[key].phase == "Pending":
            self._fleet_add(obj)  # a new job, or a waiting job's spec changed (queue, size)
            self._fleet_dirty = True
        self._queue_status_soon()  # the queue's job counts (running, completed) move with its jobs

    def _fleet_on_cluster(self) -> None:
        if self.fleet is None or not self._fleet_loaded:
            return
        if self._fleet_capacity():
            self._fleet_decide()
        self._queue_status_soon()  # the members' reports of what each queue holds there

    # ------------------------------------------------------------------ ledger
    def _fleet_capacity(self) -> bool:
        """Σ members' allocatable (and use, for overcommit); True when it changed."""
        assert self.fleet is not None
        clusters = [o for o in self.clusters.items() if not (o.get("metadata") or {}).get("deletionTimestamp")]
        total, used = fleet_total(clusters)
        seen = (tuple(sorted(total.items())), tuple(sorted(used.items())))
        if seen == self._capacity_seen:
            return False
        self._capacity_seen = seen
        self.fleet.set_capacity(total, used)
        return True

    def _fleet_add(self, job: Obj) -> None:
        assert self.fleet is not None
        classes = {pc["metadata"]["name"]: int(pc.get("value") or 0) for pc in self.priority_classes.items()}
        try:
            self.fleet.add_job(job_from_object(job, classes))
        except (ValueError, TypeError, KeyError, ArithmeticError) as err:  # placement reports a bad Job itself
            log.debug("job %s left out of fleet queues: %s", (job.get("metadata") or {}).get("name"), err)

    def _fleet_load(self) -> None:
        """Once, after the informers listed: every unfinished Job, placed ones holding their request."""
        assert self.fleet is not None
        self._fleet_loaded = True
        self.fleet.set_queues(queue_from_object(q) for q in self.fleet_queues.items())
        self._fleet_capacity()
        for job in self.jobs.items():
            meta = job.get("metadata") or {}
            if _finished(job) or meta.get("deletionTimestamp"):
                continue
            self._fleet_add(job)
            rb = self.bindings.get(meta.get("namespace") or "", c.rb_name(meta.get("name") or ""))
            if ((rb or {}).get("spec") or {}).get("clusters"):
                self.fleet.mark_allocated((meta.get("namespace") or "", meta.get("name") or ""))
        self._fleet_dirty = True

    def _fleet_decide(self) -> None:
        """One fleet session; the jobs it newly admitted are reconciled (and so queued for placement)."""
        assert self.fleet is not None
        self._fleet_dirty = False
        before = {key: v.reason for key, v in self.fleet.verdicts.items() if not v.admitted}
        for key in self.fleet.decide():
            if self.schedq.where(key) is None:  # one the scheduling queue holds moves with its events
                self.queue.add(key)
        for key, reason in before.items():  # a waiting job's reason changed (its queue closed...): say so
            verdict = self.fleet.verdict(key)
            if verdict is not None and not verdict.admitted and verdict.reason != reason:
                self.queue.add(key)
        self._queue_status_soon()

    # ------------------------------------------------------------------ Queue status
    def _queue_status_soon(self) -> None:
        """Write the Queues' status after this event (coalesced: one writer at a time, again if asked)."""
        if self.fleet is None or not self._fleet_loaded:
            return
        self._status_again = True
        if getattr(self, "_status_task", None) is None or self._status_task.done():
            self._status_task = asyncio.ensure_future(self._write_queue_statuses())

    async def _write_queue_statuses(self) -> None:
        while getattr(self, "_status_again", False):
            self._status_again = False
            try:
                await self._write_queue_statuses_once()
            except Exception as err:  # best effort: the next event writes again
                log.warning("queue status not written: %s", err)

    async def _write_queue_statuses_once(self) -> None:
        assert self.fleet is not None
        reported = reported_allocated(self.clusters.items())
        ledger = self.fleet.jobs
        rows = []
        for job in self.jobs.items():
            meta = job.get("metadata") or {}
            key = (meta.get("namespace") or "", meta.get("name") or "")
            phase = (((job.get("status") or {}).get("state")) or {}).get("phase") or ""
            queue = ((job.get("spec") or {}).get("queue")) or "default"
            rows.append((queue, phase, ledger[key].phase if key in ledger else "Allocated"))
        counts = job_counts(rows)
        attrs = self.fleet.last_attrs
        for queue in list(self.fleet_queues.items()):
            name = (queue.get("metadata") or {}).get("name") or ""
            status = queue_status(queue, attrs.get(name), reported.get(name, {}), counts.get(name, {}))
            patch = patches.merge_diff({k: (queue.get("status") or {}).get(k) for k in status}, status)
            if patch:
                patched = await self.rc.patch(QUEUES, name, {"status": patch}, None, "status")
                self.fleet_queues.remember(patched)

    # ------------------------------------------------------------------ the gate
    async def _fleet_gate(self, job: Obj, rb: Obj | None, now: float) -> bool:
        """True when the job may be placed now; otherwise its binding and an Event say why it waits."""
        if self.fleet is None:
            return True
        if not self._fleet_loaded:
            self._fleet_load()
        meta = job.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if ((rb or {}).get("spec") or {}).get("clusters"):
            self.fleet.mark_allocated(key)  # already placed: it holds its request
            return True
        if key not in self.fleet.jobs:
            self._fleet_add(job)
            self._fleet_dirty = True
            if key not in self.fleet.jobs:  # not understood: placement reports why
                return True
        if self.fleet.jobs[key].phase != "Allocated" or self._fleet_dirty:
            self._fleet_decide()
        verdict = self.fleet.verdict(key)
        if verdict is None or verdict.admitted:
            return True
        await self._fleet_wait(job, rb, verdict, now)
        return False

    async def _fleet_wait(self, job: Obj, rb: Obj | None, verdict: Verdict, now: float) -> None:
        """Pending at the federation: no cluster, ``Scheduled=False`` with the queue's reason, and an
        Event when the message changes."""
        scheduled = c.condition(rb, "Scheduled")
        if scheduled is not None and scheduled.get("reason") == verdict.reason and \
                scheduled.get("message") == verdict.message and rb is not None:
            return
        from federation.controllers.matching import match_policy

        match = match_policy(job, self.policies_for(job["metadata"].get("namespace") or ""))  # type: ignore[attr-defined]
        priority = self._priority(match.policy, job) if match.policy is not None else None  # type: ignore[attr-defined]
        body = b.binding_body(job, match.policy, rb, [], b.generation_of(rb), None, now, placed=False)
        rb = await self._write_binding(rb, with_priority(body, priority))
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                     verdict.reason, verdict.message, now)
        await self._write_status(rb, {"conditions": conditions,
                                      "schedulerObservedGeneration": int(job["metadata"].get("generation") or 1)})
        await self._event(job, verdict.reason, verdict.message)

    def _fleet_placed(self, key: Key, ok: bool) -> None:
        """After a placement attempt: a placed job holds its request; one that fits nowhere holds its minimum."""
        if self.fleet is None or key not in self.fleet.jobs:
            return
        if ok:
            self.fleet.mark_allocated(key)
        else:
            self.fleet.unplaced(key)
            self._fleet_dirty = True


def _finished(job: Obj) -> bool:
    return (((job.get("status") or {}).get("state")) or {}).get("phase") in c.FINISHED_JOB_PHASES
