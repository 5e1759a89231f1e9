"""How a placement attempt that did not place ends (a mixin of ``PlacementController``): a job that
fits nowhere (``_failed``: backoff bookkeeping, a cleared or kept binding, Scheduled=False and an
Event), a job a lost cluster ended under its policy (``_end``), a job no policy selects
(``_no_policy``), a policy conflict to report, and a deleted job to forget.
"""

from __future__ import annotations

from typing import Any

from federation.controllers import binding as b
from federation.controllers import binding_priority, failover
from federation.controllers import common as c
from federation.controllers.assumed import AssumedShares
from federation.controllers.matching import Match
from federation.controllers.placement_queue import with_priority
from federation.controllers.placement_writes import BindingWrites, _ns_name
from federation.controllers.triggers import Attempt
from policies.backoff import backoff

Obj = dict[str, Any]
Key = tuple[str, str]


class PlacementOutcomes(BindingWrites):
    """Needs, from the controller: ``options``, ``queue``, ``attempts``, ``assumed``,
    ``preempted_at`` and ``_priority_event`` (:class:`~federation.controllers.placement_queue.QueuedPlacement`)."""

    options: c.ControllerOptions
    queue: Any
    attempts: dict[Key, Attempt]
    assumed: AssumedShares
    preempted_at: dict[Key, float]
    _priority_event: Any

    async def _failed(self, job: Obj, rb: Obj | None, match: Match, reason: str, message: str, version: int,
                      now: float, clear: bool, wake: float | None = None,
                      priority: binding_priority.ResolvedPriority | None = None,
                      tasks: list[Obj] | None = None) -> None:
        """``tasks``: application failover's eviction tasks to record even though nothing fits (the
        evicted cluster stays excluded and its old Work is purged as the task says)."""
        key = _ns_name(job)
        previous = self.attempts.get(key)
        failures = (previous.failures if previous else 0) + 1
        delay = backoff(failures, self.options.retry_base_seconds, self.options.retry_max_seconds)
        self.attempts[key] = Attempt(failures, now + delay, version, message, wake)
        if wake is not None:  # an exclusion lapses then: look again even if no Cluster changes
            self.queue.add(key, max(0.05, wake - now + 0.05))
        generation = b.generation_of(rb)
        had = bool(((rb or {}).get("spec") or {}).get("clusters"))
        new_gen = generation + 1 if (clear and had) else generation
        body = b.binding_body(job, match.policy, rb, [] if clear else None, new_gen, None, now, placed=clear and had)
        if tasks:
            body["spec"]["gracefulEvictionTasks"] = tasks
        rb = await self._write_binding(rb, with_priority(body, priority))
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                     reason, message, now)
        conditions = self._conflict_conditions(conditions, match, now)
        await self._write_status(rb, {"conditions": conditions,
                                      "schedulerObservedGeneration": int(job["metadata"].get("generation") or 1)})
        if clear:
            self.assumed.forget(job["metadata"].get("uid", ""))
        if previous is None or previous.message != message:
            await self._event(job, "FailedScheduling", f"{reason}: {message}", "Warning")
        if priority is not None:
            await self._priority_event(rb, priority)

    async def _end(self, job: Obj, rb: Obj | None, match: Match, ending: failover.Failover, now: float) -> None:
        """A lost cluster ended the job under its policies: withdraw every share (dispatch deletes
        the Works of a binding without clusters) and say how it ended, for the status aggregator."""
        generation = b.generation_of(rb)
        body = b.binding_body(job, match.policy, rb, [], generation + 1, None, now, placed=True)
        body["metadata"]["annotations"][c.ENDED] = c.canonical_json(
            {"phase": ending.phase, "action": ending.action, "message": ending.message})
        rb = await self._write_binding(rb, body)
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                     ending.phase, ending.message, now)
        await self._write_status(rb, {"conditions": conditions,
                                      "schedulerObservedGeneration": int(job["metadata"].get("generation") or 1)})
        self.assumed.forget(job["metadata"].get("uid", ""))
        self.attempts.pop(_ns_name(job), None)
        await self._event(job, ending.phase, ending.message, "Warning")

    async def _no_policy(self, job: Obj, rb: Obj | None, now: float) -> None:
        """No policy selects the job: a binding with Scheduled=False/NoPolicy. A job already placed
        keeps its placement (as in Karmada, unbinding a policy does not withdraw resources)."""
        if (rb or {}).get("spec", {}).get("clusters"):
            return
        message = "no PropagationPolicy or ClusterPropagationPolicy selects this job"
        scheduled = c.condition(rb, "Scheduled")
        if scheduled is not None and scheduled.get("reason") == "NoPolicy":
            return
        rb = await self._write_binding(rb, b.binding_body(job, None, rb, [], 0, None, now, placed=False))
        conditions = c.set_condition(((rb or {}).get("status") or {}).get("conditions"), "Scheduled", "False",
                                     "NoPolicy", message, now)
        await self._write_status(rb, {"conditions": conditions})
        await self._event(job, "FailedScheduling", f"NoPolicy: {message}", "Warning")

    def _conflict_conditions(self, conditions: list[dict[str, Any]], match: Match, now: float) -> list[dict[str, Any]]:
        if match.conflicts:
            return c.set_condition(conditions, "PolicyConflict", "True", "PolicyConflict", match.conflict_message(), now)
        return c.drop_condition(conditions, "PolicyConflict")

    async def _note_conflict(self, job: Obj, rb: Obj | None, match: Match, now: float) -> None:
        current = c.condition(rb, "PolicyConflict")
        if bool(match.conflicts) == (current is not None) and (
                current is None or current.get("message") == match.conflict_message()):
            return
        conditions = self._conflict_conditions(((rb or {}).get("status") or {}).get("conditions") or [], match, now)
        await self._write_status(rb, {"conditions": conditions})
        if match.conflicts:
            await self._event(job, "PolicyConflict", match.conflict_message(), "Warning")

    async def _forget(self, key: Key, job: Obj | None, rb: Obj | None) -> None:
        self.attempts.pop(key, None)
        self.preempted_at.pop(key, None)
        self.assumed.forget_job(key, None if job is None else job["metadata"].get("uid"))
        if rb is not None:
            await self._delete_binding(key[0], c.rb_name(key[1]))
