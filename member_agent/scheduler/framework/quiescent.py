"""Quiescent jobs: running gangs a session can only report on, kept out of its per-job loops.

Volcano's session wraps and walks every job of the snapshot. In a long trace replay most of them
are gangs whose every pod is Running or Bound: with allocate-style actions nothing can happen to
them in the session, yet wrapping them, summing their usage, voting on them and closing them was
most of a session (16 µs a job a session at 600 jobs). A job is *quiescent* for a session when

* the configuration can only act on jobs with pending work: its actions are among
  :data:`ACTIONS` (``enqueue`` admits Pending PodGroups, ``allocate`` and ``backfill`` place
  pending tasks; none evicts) and its plugins among :data:`PLUGINS`, whose per-job work for such
  a job is known (``gang`` marks it Scheduled, ``proportion`` and ``overcommit`` count its usage,
  ``deviceshare`` its GPUs (``plugins/device_carry.py``), ``drf`` ranks only jobs with work to
  place, unless ``enableHierarchy`` ranks queues by every job; the others read only node rows
  and the jobs being placed);
* the PodGroup is Running, every task Running or Bound on a node of the snapshot, none nominated,
  and the gang is ready (``gang``'s JobReady);
* no task of the snapshot carries inter-pod terms (those read every pod of a node), and no old
  Unschedulable condition of the job carries this session's id.

Such a job is not wrapped (``Session.jobs`` leaves it out; ``Session.left_out`` holds its
fragment, kept across sessions by :mod:`left_out`), ``queue_usage`` adds its memoised terms, and ``close_session`` writes what it would have written
for it, from :func:`fragment`: its pods' owner, phase Running, gang's Scheduled condition and its
report. Everything here is a function of the spec, kept in ``JobSpec.memo``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY
from member_agent.scheduler.framework.result import JobReport
from member_agent.scheduler.framework.status import TaskStatus

if TYPE_CHECKING:
    from member_agent.scheduler.framework.snapshot import JobSpec
    from policies.scheduler_conf import SchedulerConf

S = TaskStatus
ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
PLUGINS = frozenset({"priority", "gang", "conformance", "predicates", "proportion", "nodeorder", "binpack",
                     "overcommit", "drf", "deviceshare"})
SETTLED = frozenset({S.RUNNING, S.BOUND})
#: gang's condition for a ready job (``plugins/gang.py`` sets it from here)
SCHEDULED = ("Scheduled", "tasks in gang are ready to be scheduled", "")


def conf_allows(conf: SchedulerConf) -> bool:
    return set(conf.actions) <= ACTIONS and all(
        option.name in PLUGINS and not (option.name == "drf" and option.enabled("enableHierarchy"))
        for tier in conf.tiers for option in tier.plugins)


@dataclass(frozen=True)
class Fragment:
    """What closing a quiescent job writes into the result. Of a spec that is not ``eligible``
    only ``has_terms`` and ``scored`` are worked out (the ledger reads nothing else of it): the
    other fields are then empty."""

    node_names: tuple[str, ...]  # the node table the check was made against
    uid: str
    eligible: bool
    has_terms: bool  # a task carries inter-pod terms
    owners: dict[str, str]
    kept_conditions: tuple[dict[str, Any], ...]  # the spec's conditions but Scheduled, as gang keeps them
    session_ids: frozenset[str]  # transitionIDs of old Unschedulable conditions
    report: JobReport | None
    steady: bool  # the spec already carries gang's Scheduled condition: closing moves only its transitionID
    scored: bool = False  # a task carries terms the InterPodAffinity score reads (plugins/pod_affinity_score.py)


def fragment(spec: JobSpec, node_names: tuple[str, ...], index: Any) -> Fragment:
    memo = spec.memo.get("quiescent")
    if memo is None or memo.node_names is not node_names:
        memo = spec.memo["quiescent"] = _fragment(spec, node_names, index)
    return memo


def settled_ready(spec: JobSpec) -> bool:
    """gang's JobReady (``JobInfo.check_task_ready() and is_ready()``) of a job whose every task is
    Running or Bound, read from the spec without wrapping it: those are ready statuses and none is
    Pending, so the ready number is the task count and a role's ready number its task count (no
    pending best-effort pod adds to either). The role check passes without per-role minimums or
    when they are not enforced (``min_available`` below their total), as ``_role_ready`` says."""
    roles = spec.min_task_member
    if roles and spec.min_available >= sum(roles.values()):
        have = Counter(t.role for t in spec.tasks)
        if not all(have[role] >= need for role, need in roles.items() if need > 0):
            return False
    return len(spec.tasks) >= spec.min_available


def _fragment(spec: JobSpec, node_names: tuple[str, ...], index: Any) -> Fragment:
    eligible = (spec.phase == "Running" and bool(spec.tasks) and all(
        t.status in SETTLED and t.node and t.node in index and not t.nominated_node and not t.pod_affinity
        for t in spec.tasks)) and settled_ready(spec)
    # the shared empty value (most pods) has no terms and scores nothing: left out before the
    # Python-level __bool__ and ``scored`` run per pod
    terms = [t.pod_affinity for t in spec.tasks if t.pod_affinity is not NO_POD_AFFINITY]
    has_terms, scored = any(terms), any(t.scored for t in terms)
    if not eligible:
        # The ledger reads only these of a spec no session leaves out (most new specs of a replay:
        # its Pending and Inqueue jobs'), so what closing would write for it is not worked out.
        return Fragment(node_names, spec.uid, False, has_terms, {}, (), frozenset(), None, False, scored)
    kept = tuple(dict(c) for c in spec.conditions if c.get("type") != SCHEDULED[0])
    message = next((str(c.get("message", "")) for c in kept if c.get("type") == "Unschedulable"), "")
    report = JobReport(job=spec.uid, queue=spec.queue, phase="Running", min_available=spec.min_available,
                       tasks=len(spec.tasks), bound=len(spec.tasks), pipelined=0, pending=0, reason="",
                       message=message)
    ids = frozenset(str(c.get("transitionID")) for c in spec.conditions
                    if c.get("type") == "Unschedulable" and c.get("status") == "True")
    # Closing rewrites the conditions as kept + gang's Scheduled: the same list but for its
    # transitionID when the spec ends with that very condition and holds no other Scheduled one.
    kind, reason, message = SCHEDULED
    last = spec.conditions[-1] if spec.conditions else {}
    steady = (sum(1 for c in spec.conditions if c.get("type") == kind) == 1
              and {k: v for k, v in last.items() if k != "transitionID"}
              == {"type": kind, "status": "True", "reason": reason, "message": message})
    return Fragment(node_names, spec.uid, True, has_terms, {t.key: spec.uid for t in spec.tasks}, kept, ids, report,
                    steady, scored)


def condition(kind: str, reason: str, message: str, session_uid: str) -> dict[str, str]:
    """A PodGroup condition as gang writes it (``plugins/gang.py`` builds its conditions here too)."""
    return {"type": kind, "status": "True", "reason": reason, "message": message, "transitionID": session_uid}


def scheduled_condition(session_uid: str) -> dict[str, str]:
    return condition(*SCHEDULED, session_uid)
