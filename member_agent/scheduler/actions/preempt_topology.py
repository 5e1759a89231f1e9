"""``preempt`` with ``enableTopologyAwarePreemption: true`` (volcano.md §5.4): kube-scheduler-style
preemption, a dry run per candidate node, the minimal victim set by reprieve, then the best node.

For a preemptor and its candidate nodes (predicates pass or fail resolvably, evictable room
would cover the request), in row order, until ``numCandidates`` nodes have a victim set:

1. **Victims.** The node's tasks the action's filter accepts (same queue, lower priority,
   BestEffort rules), narrowed by the plugins' ``Preemptable`` votes and Caldera's guard (no
   victim job below minMember); none, or not enough room even with all of them: next node.
2. **Dry run.** Remove them one by one in victim order until the preemptor fits: the node's
   FutureIdle plus what was removed, the predicates, and its queue (Allocatable: Volcano's
   SimulateAllocatable, so a queue at its capability makes victims needed even on a node with
   room). Each trial evicts in the session and undoes it at once.
3. **Reprieve.** Give back the removed tasks from the highest priority to the lowest, keeping
   each one whose return still lets the preemptor fit: what is left is the minimal set.

``numCandidates = clamp(N * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute,
maxCandidateNodesAbsolute)`` of the N candidate nodes. The node is chosen as kube-scheduler's
``pickOneNodeForPreemption`` does: the lowest highest-victim priority, then the lowest sum of
``priority + 2^31``, then the fewest victims, then the latest of the earliest starts among each
node's highest-priority victims, then the first in row order. The victims are then evicted and the preemptor pipelined
there in one statement, which is undone if the queue or the predicates still refuse it.

Deviations: candidates are visited from the first row, not a random offset (results are
deterministic); Volcano runs the dry runs on ``topologyAwarePreemptWorkerNum`` goroutines,
Caldera in one (the answer is the same). An inter-pod anti-affinity conflict (either direction)
with pods on the node makes those pods victims that the dry run removes first and the reprieve
never gives back, as kube's SelectVictimsOnNode finds by re-running the filter; a conflict it
cannot resolve there (a pod elsewhere in the domain, or not a victim) rules the node out.
"""

from __future__ import annotations

from typing import Callable, Sequence

from member_agent.scheduler.actions.victims import (
    affinity_blockers,
    blockers_first,
    covers,
    fits_now,
    guard,
    priority_text,
    tiered_victims,
)
from member_agent.scheduler.framework.dims import fits
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.pod_affinity import SHARED_KEY as INTER_POD_AFFINITY
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.victim_order import ordered_victims

Filter = Callable[[TaskInfo], bool]
OFFSET = 2**31


def num_candidates(n: int, percentage: int, minimum: int, maximum: int) -> int:
    """Volcano's (and kube-scheduler's) candidate count: a share of N, clamped, at most N."""
    wanted = n * percentage // 100
    return min(max(wanted, minimum), maximum, n)


def victim_priority(task: TaskInfo, preemptor: TaskInfo) -> int:
    """Inside the preemptor's job tasks compare by task priority, between jobs by job priority."""
    return task.spec.priority if task.job is preemptor.job else task.job.priority


def simulates_removal(ssn: Session) -> bool:
    """Whether the dry run sees a victim leave the inter-pod affinity state: Volcano calls the
    predicates plugin's SimulateRemoveTaskFn only when its ``enablePreemptable`` or
    ``enabledAllocatable`` switch is on (§3), while SimulatePredicateFn follows
    ``enablePredicate``. With both off, an anti-affinity conflict on the node survives every
    simulated eviction, and the node is no candidate."""
    option = next((p for tier in ssn.conf.tiers for p in tier.plugins if p.name == "predicates"), None)
    return option is None or option.enabled("enablePreemptable") or option.enabled("enabledAllocatable")


def fits_without(ssn: Session, preemptor: TaskInfo, row: int, gone: Sequence[TaskInfo]) -> bool:
    """Would ``preemptor`` fit ``row`` with ``gone`` evicted: the queue (Allocatable), the node's
    FutureIdle and the predicates, as Volcano's dry run asks SimulateAllocatable, the resources and
    SimulatePredicate? Tried in the session (so every plugin's queue accounting sees the
    removals, as its Simulate hooks would) and undone before returning."""
    tracker = ssn.shared.get(INTER_POD_AFFINITY)
    if tracker is not None and tracker.code_at(preemptor, row) and not simulates_removal(ssn):
        return False  # the conflict is in the state the simulation cannot change
    marked = []
    try:
        for task in gone:
            marked.append((task, task.status))
            ssn.mark_releasing(task)
        return ssn.allocatable(preemptor.job.queue, preemptor) and fits_now(ssn, preemptor, row)
    finally:
        for task, status in reversed(marked):
            ssn.unmark_releasing(task)
            if task.status != status:  # un-evicting gives Running back; a Bound victim stays Bound
                task.job.set_status(task, status)


def minimal_victims(ssn: Session, preemptor: TaskInfo, row: int, victims: list[TaskInfo],
                    blockers: Sequence[TaskInfo] = ()) -> list[TaskInfo] | None:
    """The dry run and the reprieve on one node: the victims that must go, or None if it cannot work.

    Victims are removed in victim order until the preemptor fits (queue, resources, predicates:
    :func:`fits_without`); none removed, or no fit with all of them, rules the node out.
    ``blockers`` (the pods whose anti-affinity conflict must go) are removed first and never
    reprieved: giving one back brings the conflict back."""
    request, always = preemptor.spec.request, ssn.dims.always
    room = ssn.future_idle(row)
    removed: list[TaskInfo] = []
    must = {b.key for b in blockers}
    for victim in blockers_first(ordered_victims(ssn, preemptor, victims), list(blockers)):
        if victim.key not in must and fits(request, room, always) and fits_without(ssn, preemptor, row, removed):
            break
        room = room + victim.spec.request
        removed.append(victim)
    if not removed or not fits_without(ssn, preemptor, row, removed):
        return None
    # reprieve: highest priority first (stable: victim order among equals)
    for victim in sorted(removed, key=lambda t: -victim_priority(t, preemptor)):
        if victim.key in must:
            continue
        rest = [t for t in removed if t is not victim]
        if fits(request, room - victim.spec.request, always) and fits_without(ssn, preemptor, row, rest):
            room = room - victim.spec.request
            removed = rest
    return removed


def _rank(preemptor: TaskInfo, victims: list[TaskInfo], row: int) -> tuple[int, int, int, float, int]:
    priorities = [victim_priority(v, preemptor) for v in victims]
    highest = max(priorities)
    # kube-scheduler's GetEarliestPodStartTime: the earliest start among the highest-priority
    # victims; the node where that is latest wins (the least work lost).
    earliest_start = min(v.spec.creation for v, p in zip(victims, priorities, strict=True) if p == highest)
    return highest, sum(p + OFFSET for p in priorities), len(victims), -earliest_start, row


def preempt_topology_aware(ssn: Session, stmt: Statement, task: TaskInfo, accept: Filter, rows: list[int],
                           limits: tuple[int, int, int]) -> bool:
    """Try the topology-aware mode for ``task`` over candidate ``rows``; on success the ops are in ``stmt``."""
    wanted = num_candidates(len(rows), *limits)
    found: list[tuple[tuple[int, int, int, float, int], list[TaskInfo]]] = []
    for row in rows:
        if len(found) >= wanted:
            break
        preemptees = [t for t in ssn.node_tasks[row].values() if accept(t)]
        if not preemptees:
            continue
        victims = guard(task, tiered_victims(ssn, Point.PREEMPTABLE, task, preemptees), lower_priority=True)
        blockers = affinity_blockers(ssn, task, row, victims)
        if not victims or blockers is None or not covers(ssn, task, row, victims):
            continue
        chosen = minimal_victims(ssn, task, row, victims, blockers)
        if chosen:
            found.append((_rank(task, chosen, row), chosen))
    for rank, chosen in sorted(found, key=lambda item: item[0]):
        row = rank[-1]
        node_stmt = Statement(ssn)
        for victim in ordered_victims(ssn, task, chosen):
            node_stmt.evict(victim, f"preempt: evicted ({priority_text(victim, task)}) for {task.job.uid}")
        if ssn.allocatable(task.job.queue, task) and fits_now(ssn, task, row):
            node_stmt.pipeline(task, row, True)
            stmt.merge(node_stmt)
            ssn.log(3, f"Topology-aware preemption: {len(chosen)} victim(s) on node {ssn.node_names[row]} "
                       f"for task {task.key}")
            return True
        node_stmt.discard()
    return False
