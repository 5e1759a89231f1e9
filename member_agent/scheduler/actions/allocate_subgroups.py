"""``allocate`` for a PodGroup with ``subGroupPolicy`` (volcano.md §1.5, §5.2).

The subgroups and their counts are ``framework/subgroups.py``: a subgroup needs
``subGroupSize`` (default 1) pods placed, and a job needs at least ``minSubGroups`` such
subgroups of each policy (on top of its minMember; the gang plugin's JobReady checks both).

Without HyperNodes, or without the network-topology-aware plugin (``allocate_sub_groups_flat``),
the whole cluster is the one domain, as in Volcano (the gradients default to the top
HyperNode): subgroups are placed one after another, those still short of ``subGroupSize``
first; a subgroup that cannot get its ``subGroupSize`` pods is undone; the job stops once it is
ready and is kept when ready or pipelined, else undone.

With HyperNodes and the plugin (``allocate_sub_groups``):

For each HyperNode the job may use (its own gradients when it has network topology, else the
cluster), each subgroup is placed inside the lowest-tier HyperNode *within it* that its own
``networkTopology`` allows (soft: up to the job's HyperNode; none: anywhere in it), best
HyperNode binpack first, as a nested dry run; the job's attempt is kept when the job is then
ready or pipelined with its ``minSubGroups``, else undone and the next HyperNode is tried.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from member_agent.scheduler.actions.allocate_topology import Domain, _home, _room
from member_agent.scheduler.framework.hypernode_state import HyperNodeState, JobLimit
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.subgroups import (
    HELD_MASK,
    SubGroup,
    count,
    held,
    short_policy,
    sub_groups,
)

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus


def _ready(job: JobInfo, group: SubGroup) -> bool:
    return held(job, group)


def min_sub_groups_met(job: JobInfo, groups: list[SubGroup]) -> str:
    """"" when every policy has its ``minSubGroups`` subgroups placed, else why not."""
    short = short_policy(job, HELD_MASK)
    return f"{short} ready" if short else ""


def allocate_sub_groups(action: Any, ssn: Session, search: NodeSearch, job: JobInfo, worksheet: deque[TaskInfo],
                        state: HyperNodeState, limit: JobLimit | None) -> Statement | None:
    tree = state.tree
    job_limit = limit or JobLimit(tree.top_tier, False)
    if job_limit.error:
        job.job_fit_error = job_limit.error
        return None
    pending = list(worksheet)
    if not pending:
        return None
    groups = sub_groups(job)
    need = np.stack([t.spec.request for t in pending])[:max(job.min_available - job.ready_num, 1)].sum(axis=0)
    why = "no HyperNode has the free resources"
    # a job without network topology of its own is searched in the whole cluster (Volcano: [[top]])
    gradients = state.gradients(job, job_limit, need) if limit is not None else [np.asarray([tree.top])]
    for gradient in gradients:
        for h in gradient.tolist():
            stmt = Statement(ssn)
            for group in groups:
                tasks = [t for t in worksheet if t.index in group.members and t.status == S.PENDING]
                if tasks and not _ready(job, group):
                    placed = _place_group(ssn, search, job, group, tasks, h, state, job_limit)
                    if placed is not None:
                        stmt.merge(placed)
            missing = min_sub_groups_met(job, groups)
            if not missing and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                kept = [t for t in worksheet if t.status == S.PENDING]
                worksheet.clear()
                worksheet.extend(kept)
                state.allocated[job.uid] = _home(state, job)
                return stmt
            why = missing or f"gang: {job.ready_num + job.waiting_num}/{job.min_available} tasks fit"
            stmt.discard()
    job.job_fit_error = (f"network topology (subGroupPolicy, highest tier {job_limit.tier}): "
                         f"no HyperNode fits the job's subgroups: {why}")
    return None


def _place_group(ssn: Session, search: NodeSearch, job: JobInfo, group: SubGroup, tasks: list[TaskInfo], h: int,
                 state: HyperNodeState, job_limit: JobLimit) -> Statement | None:
    """The subgroup inside the lowest-tier HyperNode under ``h`` its topology allows; None if none."""
    tree = state.tree
    h_tier = int(tree.tiers[h])
    topology = group.topology or {}
    if topology and str(topology.get("mode") or "hard") == "hard":
        name = topology.get("highestTierName")
        tier = tree.tier_of_name(str(name)) if name else topology.get("highestTierAllowed")
        sub_tier = min(int(tier) if tier is not None else h_tier, h_tier)
    else:
        sub_tier = h_tier
    if not topology:  # no networkTopology of its own: anywhere in the job's HyperNode
        return _fill(ssn, search, job, group, tasks, None if h == tree.top else Domain(tree.names[h], tree.rows[h]))
    want = group.size - count(job, group, HELD_MASK)
    smallest = np.stack([t.spec.request for t in tasks]).min(axis=0)
    for level, tier in enumerate(state.tiers):
        if tier > sub_tier:
            break
        cands = tree.by_tier[tier] if tier != h_tier else np.asarray([h])
        if tier < h_tier:
            cands = cands[[h in tree.ancestors(int(c)) for c in cands.tolist()]]
        if len(cands) == 0:
            continue
        if tier != tree.top_tier:
            cands = cands[_room(state, level, cands, smallest) >= want]
        scorer = state.scorer
        if len(cands) > 1 and scorer is not None:
            whole = np.stack([t.spec.request for t in tasks]).sum(axis=0)
            cands = cands[np.argsort(-scorer.hypernode_scores(cands, whole), kind="stable")]
        for c in cands.tolist():
            domain = None if c == tree.top else Domain(tree.names[c], tree.rows[c])
            stmt = _fill(ssn, search, job, group, tasks, domain)
            if stmt is not None:
                return stmt
    return None


def _fill(ssn: Session, search: NodeSearch, job: JobInfo, group: SubGroup, tasks: list[TaskInfo],
          domain: Domain | None) -> Statement | None:
    stmt = Statement(ssn)
    for task in tasks:
        if _ready(job, group):
            break
        if not ssn.allocatable(job.queue, task) or ssn.pre_predicate(task):
            continue
        if domain is None:
            rows, errors = search.feasible(task)
            message = errors.message() if errors is not None else ""
        else:
            rows, message = domain.feasible(ssn, search, task)
        if message:
            task.fit_error = message
            continue
        row, fit_idle = search.best_feasible(task, rows)  # feasible: fits FutureIdle
        if fit_idle:
            stmt.allocate(task, row)
        else:
            stmt.pipeline(task, row)
    if _ready(job, group):
        return stmt
    stmt.discard()
    return None


def allocate_sub_groups_flat(ssn: Session, search: NodeSearch, job: JobInfo,
                             worksheet: deque[TaskInfo]) -> Statement | None:
    """The job's subgroups in the whole cluster (no HyperNodes, or no network-topology-aware).

    A subgroup's placed tasks leave the worksheet (all its tried tasks when it failed), so a job
    pushed back after a commit goes on with the next subgroup; a subgroup that already has
    ``subGroupSize`` pods grows one pod per pop, as Volcano's flat path does for a ready job."""
    groups = sub_groups(job)
    # the subgroups still short of subGroupSize first (those make minSubGroups), then the rest
    ordered = sorted(groups, key=lambda g: (held(job, g), g.order))
    stmt = Statement(ssn)
    for group in ordered:
        tasks = [t for t in worksheet if t.index in group.members and t.status == S.PENDING]
        if not tasks:
            continue
        already = held(job, group)
        tried = tasks[:1] if already else tasks
        placed = _fill_flat(ssn, search, job, group, tried, already)
        # off the worksheet: what was placed, and every tried task of a group that failed or grew
        # (each pop takes at least one task off, so a job pushed back always ends)
        done = {id(t) for t in tried if placed is None or already or t.status != S.PENDING}
        kept = [t for t in worksheet if id(t) not in done]
        worksheet.clear()
        worksheet.extend(kept)
        if placed is not None:
            stmt.merge(placed)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    missing = min_sub_groups_met(job, groups)
    if missing:  # else the gang's own reason (minMember) is reported, as for any job
        job.job_fit_error = missing
    stmt.discard()
    return None


def _fill_flat(ssn: Session, search: NodeSearch, job: JobInfo, group: SubGroup, tasks: list[TaskInfo],
               grow: bool) -> Statement | None:
    """``_fill`` over every node; ``grow``: the group is full already, keep whatever one more pod gets."""
    if not grow:
        return _fill(ssn, search, job, group, tasks, None)
    stmt = Statement(ssn)
    for task in tasks:
        if not ssn.allocatable(job.queue, task) or ssn.pre_predicate(task):
            continue
        rows, errors = search.feasible(task)
        if errors is not None:
            task.fit_error = errors.message()
            continue
        row = search.best_node(task, rows)
        fit_idle, fit_future = search.fits_resources(task, row)
        if fit_idle:
            stmt.allocate(task, row)
        elif fit_future:
            stmt.pipeline(task, row)
    return stmt
