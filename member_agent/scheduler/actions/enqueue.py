"""``enqueue``: the Pending → Inqueue gate (volcano.md §5.1).

Queues are served in queue order, one pending job at a time. A PodGroup without
``minResources`` is admitted unconditionally; otherwise every enqueueable plugin must not
reject it (tier vote). Admitted jobs reserve their minimum at once (JobEnqueued), so the
next job of the same cycle sees less room.
"""

from __future__ import annotations

from typing import Any

from member_agent.scheduler.actions.pq import PriorityQueue
from member_agent.scheduler.framework.infos import JobInfo
from member_agent.scheduler.framework.session import Session

NAME = "enqueue"
ARGUMENTS = ()


class Enqueue:
    name = NAME

    def execute(self, ssn: Session) -> None:
        ssn.log(5, "Enter Enqueue ...")
        # Queues enter in the order their first job appears in the snapshot (quiescent jobs too:
        # the queue order breaks ties by that arrival; each queue is listed once), then pending
        # jobs join their queue.
        listed = [queue for queue in ssn.job_queues() if queue in ssn.queues]
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.queue not in ssn.queues:
                continue
            if job.is_pending():
                pq = jobs_by_queue.get(job.queue)
                if pq is None:
                    pq = jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order)
                pq.push(job)
                ssn.log(4, f"Added Job <{job.uid}> into Queue <{job.queue}>")
        ssn.log(3, f"Try to enqueue PodGroup to {len(jobs_by_queue)} Queues")
        if len(jobs_by_queue) == 1:
            self._serve_one(ssn, listed, jobs_by_queue)
        elif jobs_by_queue:
            self._serve(ssn, listed, jobs_by_queue)
        ssn.log(5, "Leaving Enqueue ...")

    def _serve_one(self, ssn: Session, listed: list[str], jobs_by_queue: dict[str, PriorityQueue[JobInfo]]) -> None:
        """One queue has pending jobs: :meth:`_serve` would pop every other queue once and drop it
        (the queue order compares, nothing else), and this queue's jobs one by one as it comes
        back: its jobs in job order, whatever the queue order. A replay's session has one or two
        pending jobs among a dozen queues, where the heap of queues was most of this action."""
        ((queue, pending),) = jobs_by_queue.items()
        if queue not in listed:
            return  # never in the heap: never served
        while pending:
            self._try(ssn, pending.pop())

    def _serve(self, ssn: Session, listed: list[str], jobs_by_queue: dict[str, PriorityQueue[JobInfo]]) -> None:
        """Queues in queue order, one pending job at a time, each served queue back in the heap."""
        queues: PriorityQueue[str] = PriorityQueue(ssn.queue_order)
        for queue in listed:
            queues.push(queue)
        while queues:
            queue = queues.pop()
            pending = jobs_by_queue.get(queue)
            if not pending:
                continue
            self._try(ssn, pending.pop())
            queues.push(queue)

    def _try(self, ssn: Session, job: JobInfo) -> None:
        if job.spec.min_resources is None:
            self._admit(ssn, job)
            return
        ok, plugin = ssn.job_enqueueable(job)
        if ok:
            self._admit(ssn, job)
        else:
            if not job.job_fit_error:
                job.job_fit_error = f"{plugin} rejected the job"
            ssn.log(3, f"PodGroup {job.uid} is pending reason: {job.job_fit_error}")

    @staticmethod
    def _admit(ssn: Session, job: JobInfo) -> None:
        ssn.job_enqueued(job)
        job.phase = "Inqueue"
        job.job_fit_error = ""
        ssn.log(3, f"PodGroup {job.uid} is inqueue")


def new(args: dict[str, Any]) -> Enqueue:
    return Enqueue()
