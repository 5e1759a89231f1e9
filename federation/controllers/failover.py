"""What a lost cluster means for a job, under the Job's own lifecycle policies (pure).

A cluster the job runs on is lost (deleted, being deleted, or an untolerated NoExecute taint):
its shares are treated as evicted pods, Volcano's ``PodEvicted`` event. The action comes from
the policies of the tasks that had pods there (a policy whose ``event`` or ``events`` names
``PodEvicted`` or ``*``), then from the job's ``spec.policies``, as Volcano's ``applyPolicies``
resolves a pod's event: task first, then job. When several affected tasks resolve an action,
the first task in ``spec.tasks`` order that has one wins (a task without a matching policy does
not outvote one that has: in Volcano its eviction would only sync the job).

At federation level a gang cannot restart part of itself, so every restart action
(``RestartJob``, ``RestartTask``, ``RestartPod``, ``RestartPartition``) and no policy at all
mean the whole job is placed again. ``AbortJob`` / ``TerminateJob`` / ``CompleteJob`` end the
job: every Work is withdrawn and the job's phase becomes Aborted / Terminated / Completed.
A policy's ``timeout`` (delayed action) is not modelled: the action is taken at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]

EVENT = "PodEvicted"
ANY_EVENT = "*"
#: actions that end the job, and the phase it ends in
ENDING_PHASES = {"AbortJob": "Aborted", "TerminateJob": "Terminated", "CompleteJob": "Completed"}
RESTART = "RestartJob"


@dataclass(frozen=True)
class Failover:
    """What to do about the lost clusters: ``action`` (``RestartJob`` or an ending action), the
    phase the job ends in (``""`` for a restart), where the action came from, and a message."""

    action: str
    phase: str
    source: str
    message: str

    @property
    def ends_job(self) -> bool:
        return bool(self.phase)


def _matching_action(policies: Any) -> str | None:
    for policy in policies or []:
        if not isinstance(policy, Mapping) or not policy.get("action"):
            continue
        events = ([policy["event"]] if policy.get("event") else []) + list(policy.get("events") or [])
        if EVENT in events or ANY_EVENT in events:
            return str(policy["action"])
    return None


def affected_tasks(rb: Obj | None, lost: Iterable[str]) -> set[str]:
    """Tasks with pods on the ``lost`` clusters, from the binding's ``spec.clusters`` components."""
    gone = set(lost)
    out: set[str] = set()
    for target in ((rb or {}).get("spec") or {}).get("clusters") or []:
        if target.get("name") in gone:
            out.update(str(p.get("name")) for p in target.get("components") or [] if int(p.get("replicas") or 0) > 0)
    return out


def resolve(job: Obj, tasks: Iterable[str]) -> tuple[str | None, str]:
    """The ``PodEvicted`` action for pods of ``tasks`` and where it came from (None: no policy)."""
    wanted = set(tasks)
    spec = job.get("spec") or {}
    for i, task in enumerate(spec.get("tasks") or []):
        name = task.get("name") or f"task-{i}"
        if name in wanted:
            action = _matching_action(task.get("policies"))
            if action is not None:
                return action, f"task {name} policy"
    action = _matching_action(spec.get("policies"))
    return (action, "job policy") if action is not None else (None, "default")


def decide(job: Obj, rb: Obj | None, lost: Mapping[str, str]) -> Failover:
    """The failover for the binding's ``lost`` clusters (name -> why)."""
    action, source = resolve(job, affected_tasks(rb, lost))
    where = "; ".join(f"cluster {name} lost ({why})" for name, why in sorted(lost.items()))
    if action in ENDING_PHASES:
        return Failover(action, ENDING_PHASES[action], source,
                        f"{where}: {EVENT} → {action} ({source})")
    shown = action or RESTART
    return Failover(RESTART, "", source, f"{where}: {EVENT} → {shown} ({source}); the whole job is placed again")
