"""The Job state machine: (phase, action) → operation + status rule (volcano.md §9.2).

| phase                          | action                       | effect                                      |
|--------------------------------|------------------------------|---------------------------------------------|
| Pending / Running              | RestartJob                   | killJob(None), retry+1 → Restarting         |
| Pending / Running              | RestartTask/Pod/Partition    | kill target, retry+1 → Restarting           |
| Pending / Running              | AbortJob / CompleteJob / TerminateJob | killJob(Soft) → Aborting / Completing / Terminating |
| Pending                        | other                        | syncJob; Running once minAvailable ≤ running+succeeded+failed |
| Running                        | other                        | syncJob with the completion rule (:func:`running_rule`) |
| Restarting                     | SyncJob                      | syncJob with the restarting rule            |
| Restarting                     | RestartTask/Pod/Partition    | kill target with the restarting rule        |
| Restarting                     | other                        | killJob(None) with the restarting rule      |
| Aborting                       | ResumeJob                    | killJob(Soft), retry+1 → Restarting         |
| Aborting                       | other                        | killJob(Soft); Aborted when nothing alive   |
| Aborted                        | ResumeJob                    | killJob(Soft), retry+1 → Restarting         |
| Aborted                        | other                        | killJob(Soft)                               |
| Completing / Terminating       | any                          | killJob(Soft); Completed / Terminated when nothing alive |
| Completed / Terminated / Failed | any                         | killJob(Soft)                               |

An empty or unknown phase is Pending.
"""

from __future__ import annotations

from typing import Optional

from member_agent.controllers.job_pass import RETAIN_NONE, RETAIN_SOFT, JobPass, StatusRule
from member_agent.controllers.pod_status import PodCounts
from member_agent.controllers.requests import TARGETED_RESTARTS, JobAction, JobRequest

FINISHED_PHASES = frozenset({"Completed", "Terminated", "Failed"})
KNOWN_PHASES = frozenset({"Pending", "Running", "Restarting", "Aborting", "Aborted", "Completing", "Completed",
                          "Terminating", "Terminated", "Failed"})


def _enter(phase: str, retry: bool = False) -> StatusRule:
    def rule(p: JobPass, counts: PodCounts) -> None:
        if retry:
            p.add_retry()
        p.set_phase(phase)
    return rule


def _when_nothing_alive(phase: str) -> StatusRule:
    def rule(p: JobPass, counts: PodCounts) -> None:
        if counts.terminating == 0 and counts.pending == 0 and counts.running == 0:
            p.set_phase(phase)
    return rule


def pending_rule(p: JobPass, counts: PodCounts) -> None:
    if p.job.min_available <= counts.running + counts.succeeded + counts.failed:
        p.set_phase("Running")


def running_rule(p: JobPass, counts: PodCounts) -> None:
    job = p.job
    replicas = job.total_replicas()
    if replicas == 0:
        return  # scaled to zero: keep the phase
    if job.min_success is not None and counts.succeeded >= job.min_success:
        p.set_phase("Completed")
        return
    if counts.succeeded + counts.failed == replicas:
        if job.min_available >= job.total_task_min_available():
            for task in job.tasks:
                if not task.min_available_set:
                    continue
                succeeded = counts.task_status.get(task.name, {}).get("Succeeded", 0)
                if task.name in counts.task_status and succeeded < task.min_available:
                    p.set_phase("Failed")
                    return
        if job.min_success is not None and counts.succeeded < job.min_success:
            p.set_phase("Failed")
        elif counts.succeeded >= job.min_available:
            p.set_phase("Completed")
        else:
            p.set_phase("Failed")
        return
    if counts.pending > replicas - job.min_available:
        p.set_phase("Pending")


def restarting_rule(p: JobPass, counts: PodCounts) -> None:
    if p.retry_count >= p.job.max_retry:
        p.set_phase("Failed", f"retry limit reached: retryCount {p.retry_count} >= maxRetry {p.job.max_retry}")
        return
    if p.job.total_replicas() - counts.terminating >= p.status_min_available:
        p.set_phase("Pending")


def _kill_target(p: JobPass, action: JobAction, request: Optional[JobRequest], rule: StatusRule) -> None:
    task = request.task if request else ""
    pod = request.pod if request else ""
    partition = request.partition if request else None
    p.kill_target(p.targets(action.value, task, pod, partition), rule)


def execute(p: JobPass, action: JobAction, request: Optional[JobRequest] = None) -> None:
    """Run ``action`` in the job's current phase."""
    phase = p.phase if p.phase in KNOWN_PHASES else "Pending"
    if phase in ("Pending", "Running"):
        if action == JobAction.RESTART_JOB:
            p.kill_job(RETAIN_NONE, _enter("Restarting", retry=True))
        elif action in TARGETED_RESTARTS:
            _kill_target(p, action, request, _enter("Restarting", retry=True))
        elif action == JobAction.ABORT_JOB:
            p.kill_job(RETAIN_SOFT, _enter("Aborting"))
        elif action == JobAction.COMPLETE_JOB:
            p.kill_job(RETAIN_SOFT, _enter("Completing"))
        elif action == JobAction.TERMINATE_JOB:
            p.kill_job(RETAIN_SOFT, _enter("Terminating"))
        else:
            p.sync_job(pending_rule if phase == "Pending" else running_rule)
    elif phase == "Restarting":
        if action == JobAction.SYNC_JOB:
            p.sync_job(restarting_rule)
        elif action in TARGETED_RESTARTS:
            _kill_target(p, action, request, restarting_rule)
        else:
            p.kill_job(RETAIN_NONE, restarting_rule)
    elif phase in ("Aborting", "Aborted"):
        if action == JobAction.RESUME_JOB:
            p.kill_job(RETAIN_SOFT, _enter("Restarting", retry=True))
        else:
            p.kill_job(RETAIN_SOFT, _when_nothing_alive("Aborted") if phase == "Aborting" else None)
    elif phase == "Completing":
        p.kill_job(RETAIN_SOFT, _when_nothing_alive("Completed"))
    elif phase == "Terminating":
        p.kill_job(RETAIN_SOFT, _when_nothing_alive("Terminated"))
    else:  # Completed, Terminated, Failed
        p.kill_job(RETAIN_SOFT, None)
