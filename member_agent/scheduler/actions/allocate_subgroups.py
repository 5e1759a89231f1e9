"""``allocate`` for a PodGroup with ``subGroupPolicy`` under network topology (volcano.md §1.5, §5.2).

A pod belongs to the first policy whose ``labelSelector`` matches its labels and whose
``matchLabelKeys`` all have a value on it; the subgroup is the policy plus those values
(``tp-0``, ``tp-1``, ...), ordered by the first value read as an integer, then by name. A
subgroup needs ``subGroupSize`` (default 1) pods placed to be ready, and a job needs at least
``minSubGroups`` ready subgroups of each policy (on top of its minMember). Pods matching no
policy form the job's default subgroup.

For each HyperNode the job may use (its own gradients when it has network topology, else the
cluster), each subgroup is placed inside the lowest-tier HyperNode *within it* that its own
``networkTopology`` allows (soft: up to the job's HyperNode; none: anywhere in it), best
HyperNode binpack first, as a nested dry run; the job's attempt is kept when the job is then
ready or pipelined with its ``minSubGroups``, else undone and the next HyperNode is tried.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from member_agent.scheduler.actions.allocate_topology import Domain, _home, _room
from member_agent.scheduler.framework.hypernode_state import HyperNodeState, JobLimit
from member_agent.scheduler.framework.node_search import NodeSearch
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus
from policies.k8s import label_selector

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus
_HELD = 2 | 4 | 8 | 16 | 32 | 128  # allocated, pipelined, binding, bound, running, succeeded


@dataclass
class SubGroup:
    name: str
    policy: str
    size: int
    topology: Mapping[str, Any] | None
    order: tuple[int, str]
    members: set[int] = field(default_factory=set)  # task indices in the job


def sub_groups(job: JobInfo) -> list[SubGroup]:
    """The job's subgroups (kept in the spec's memo: they depend on the spec alone)."""
    found: list[SubGroup] | None = job.spec.memo.get("subgroups")
    if found is not None:
        return found
    groups: dict[str, SubGroup] = {}
    policies = job.spec.sub_group_policy
    for task in job.tasks:
        labels = task.spec.labels
        chosen = None
        for p, policy in enumerate(policies):
            keys = [str(k) for k in policy.get("matchLabelKeys") or ()]
            if not label_selector.selects(policy.get("labelSelector"), labels, nil=True) or not all(labels.get(k) for k in keys):
                continue
            values = [labels[k] for k in keys]
            name = str(policy.get("name") or f"policy{p}")
            key = f"{name}/{'/'.join(values)}"
            first = values[0] if values else ""
            chosen = groups.get(key) or groups.setdefault(key, SubGroup(
                key, name, int(policy.get("subGroupSize") or 1), policy.get("networkTopology"),
                (int(first) if first.isdigit() else 1 << 30, key)))
            break
        if chosen is None:
            chosen = groups.setdefault("", SubGroup("", "", 1, None, (1 << 31, "")))
        chosen.members.add(task.index)
    out = sorted(groups.values(), key=lambda g: g.order)
    job.spec.memo["subgroups"] = out
    return out


def _ready(job: JobInfo, group: SubGroup) -> bool:
    held = sum(1 for t in job.tasks if t.index in group.members and t.status.value & _HELD)
    return held >= group.size


def min_sub_groups_met(job: JobInfo, groups: list[SubGroup]) -> str:
    """"" when every policy has its ``minSubGroups`` ready subgroups, else why not."""
    for policy in job.spec.sub_group_policy:
        name = str(policy.get("name") or "")
        need = int(policy.get("minSubGroups") or 0)
        ready = sum(1 for g in groups if g.policy == name and _ready(job, g))
        if ready < need:
            return f"subGroupPolicy {name}: {ready} of minSubGroups {need} subgroups ready"
    return ""


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
    want = group.size - sum(1 for t in job.tasks if t.index in group.members and t.status.value & _HELD)
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
