"""The placement controller's side of the scheduling queue (a mixin of ``PlacementController``).

Events that could make a waiting job fit move the queue's unschedulable jobs back to its activeQ
(:meth:`QueuedPlacement._move`); reconciles that find a job to place only queue it
(:meth:`QueuedPlacement._enqueue`); one scheduling loop hands the queue's head (binding priority,
then age) to a reconcile worker at a time and waits until that attempt is over, so placements run
in the queue's order while a key is still never reconciled twice at once. The binding's resolved
``spec.schedulePriority`` and the Event for a missing PriorityClass are written from here too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from federation import metrics
from federation.controllers import binding_priority
from federation.controllers import common as c
from federation.controllers.sched_queue import BACKOFF_FLUSH_PERIOD, LEFTOVER_FLUSH_PERIOD, SchedulingQueue

log = logging.getLogger("caldera.controllers.placement")
Obj = dict[str, Any]
Key = tuple[str, str]


class QueuedPlacement:
    """Needs, from the controller: ``queue``, ``clock``, ``options``, ``rc``, ``bindings``,
    ``priority_classes``, ``_guard``, ``_job_version``, ``_reconcile`` and ``_event``."""

    schedq: SchedulingQueue
    _permits: dict[Key, asyncio.Event]
    _attempts_running: dict[Key, asyncio.Event]
    _wake: asyncio.Event | None
    queue: Any
    clock: Any
    rc: Any
    bindings: Any
    priority_classes: Any
    _guard: Any

    def _init_queue(self, options: c.ControllerOptions) -> None:
        self.schedq = SchedulingQueue(self.clock, options.queue_initial_backoff_seconds,
                                      options.queue_max_backoff_seconds, options.queue_max_unschedulable_seconds)
        #: keys popped from the scheduling queue, handed to a reconcile worker, with the event the
        #: scheduling loop waits on until that attempt is over
        self._permits = {}
        #: the permit of each attempt under way (set early by :meth:`_next_may_start`)
        self._attempts_running: dict[Key, asyncio.Event] = {}
        self._wake = None

    def _job_version(self, key: Key) -> Any:
        raise NotImplementedError

    async def _reconcile(self, key: Key, permitted: bool) -> None:
        raise NotImplementedError

    async def _event(self, job: Obj, reason: str, message: str, type_: str = "Normal") -> None:
        raise NotImplementedError

    def _move(self, reason: str | None) -> None:
        """An event that could make a waiting job fit: every unschedulable job goes back to activeQ."""
        if reason is None:
            return
        moved = self.schedq.move_all_to_active(reason)
        if moved:
            log.info("%d unschedulable job(s) back to the active queue: %s", moved, reason)
            metrics.QUEUE_MOVES.inc(moved)
            self._signal()

    def _signal(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _schedule_loop(self, stop: asyncio.Event) -> None:
        """Hand the scheduling queue's head to a reconcile worker, one job at a time, in the queue's
        order (priority, then age); flush the backoffQ every second and the unschedulable leftovers
        every 30 s (Karmada's periods)."""
        assert self._wake is not None
        last_leftover = self.clock()
        while not stop.is_set():
            now = self.clock()
            self.schedq.flush_backoff()
            if now - last_leftover >= LEFTOVER_FLUSH_PERIOD:
                last_leftover = now
                self.schedq.flush_leftover()
            key = self.schedq.pop()
            if key is None:
                self._wake.clear()
                await wait_any(self._wake, stop, BACKOFF_FLUSH_PERIOD)
                continue
            if self._guard.skip(key, self._job_version(key)):
                self.schedq.forget(key)  # poisoned: its next change enqueues it again (reconcile runs then)
                continue
            done = asyncio.Event()
            self._permits[key] = done  # type: ignore[index]
            self.queue.add(key)
            await wait_any(done, stop, None)

    async def reconcile(self, key: Key) -> None:
        permit = self._permits.pop(key, None)
        if permit is not None:
            self._attempts_running[key] = permit
        finished = False
        try:
            await self._reconcile(key, permit is not None)
            finished = True
        finally:
            if permit is not None:
                self._attempts_running.pop(key, None)
                if self.schedq.where(key) == "inflight":  # popped but nothing to place any more, or it raised
                    self.schedq.done(key, "dropped" if finished else "error")  # (the worker retries it too)
                permit.set()

    def _next_may_start(self, key: Key) -> None:
        """This attempt's decision is made and its shares are assumed: the scheduling loop may hand
        out the next job while this one's binding, status and Event are written (those writes took
        most of an attempt, and placements waited for them one by one)."""
        permit = self._attempts_running.get(key)
        if permit is not None:
            permit.set()

    def _enqueue(self, job: Obj, priority: int) -> None:
        """Queue the job for placement (the scheduling loop hands it back to a worker in order)."""
        self.schedq.push(ns_name(job), priority, c.parse_time(job["metadata"].get("creationTimestamp")))
        self._signal()

    def _priority(self, policy: Obj, job: Obj) -> binding_priority.ResolvedPriority:
        classes = {pc["metadata"]["name"]: pc for pc in self.priority_classes.items()}
        return binding_priority.resolve(policy, job, classes)

    async def _priority_event(self, rb: Obj | None, priority: binding_priority.ResolvedPriority) -> None:
        """The policy's PriorityClass was missing: say on the binding what it fell back to (once per note)."""
        if rb is None or not priority.fallback:
            return
        if c.annotations_of(rb).get(PRIORITY_NOTE) == priority.fallback:
            return
        await self._event(rb, "SchedulePriorityFallback", priority.fallback, "Warning")
        meta = rb["metadata"]
        patched = await self.rc.patch(c.BINDINGS, meta["name"], {"metadata": {"annotations": {
            PRIORITY_NOTE: priority.fallback}}}, meta["namespace"])
        self.bindings.remember(patched)


def ns_name(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


#: the schedulePriority fallback already reported by an Event (so it is reported once)
PRIORITY_NOTE = "caldera.io/schedule-priority-fallback"


def with_priority(body: Obj, priority: binding_priority.ResolvedPriority | None) -> Obj:
    """The binding body with the resolved ``spec.schedulePriority`` (unset when the policy sets none)."""
    if priority is not None:
        body["spec"]["schedulePriority"] = priority.spec()
    return body


async def wait_any(event: asyncio.Event, stop: asyncio.Event, timeout: float | None) -> None:
    """Until ``event`` or ``stop`` is set, or ``timeout`` seconds passed."""
    waits = {asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())}
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for fut in waits:
            fut.cancel()
