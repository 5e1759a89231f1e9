"""The subJob model of a PodGroup with ``subGroupPolicy`` (volcano.md §1.5, §6.2).

A pod belongs to the first policy whose ``labelSelector`` matches its labels and whose
``matchLabelKeys`` all have a value on it; the subgroup is the policy plus those values
(``tp/0``, ``tp/1``, ...), ordered by the first value read as an integer, then by name. A
subgroup needs ``subGroupSize`` (default 1) pods; a job needs ``minSubGroups`` (default 0)
subgroups of each policy. Pods matching no policy form the job's default subgroup.

The gang plugin reads the counts here for any job with a ``subGroupPolicy``, with or without
HyperNodes (the whole cluster is then the one domain): ``CheckSubJobValid`` (a policy has
``minSubGroups`` subgroups at all), ``CheckSubJobReady`` and ``CheckSubJobPipelined`` (a policy
has ``minSubGroups`` subgroups whose ready, or ready and pipelined, pods reach ``subGroupSize``). A job without a ``subGroupPolicy`` takes none of this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

from member_agent.scheduler.framework.status import READY_STATUSES, TaskStatus
from policies.k8s import label_selector

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo

S = TaskStatus
T = TypeVar("T", bound="TaskInfo")
#: allocated, pipelined, binding, bound, running, succeeded: a subgroup's pods that count
#: towards ``subGroupSize`` while the allocate action places it (ready or pipelined).
HELD_MASK = 2 | 4 | 8 | 16 | 32 | 128
READY_MASK = sum(int(s) for s in READY_STATUSES)
PIPELINED_MASK = READY_MASK | int(S.PIPELINED)


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


def count(job: JobInfo, group: SubGroup, mask: int) -> int:
    """The group's pods whose status is in ``mask`` (a sum of TaskStatus bits)."""
    tasks = job.tasks
    return sum(1 for i in group.members if tasks[i].status.value & mask)


def held(job: JobInfo, group: SubGroup) -> bool:
    """The group has ``subGroupSize`` pods placed (ready or pipelined) in this session."""
    return count(job, group, HELD_MASK) >= group.size


def short_policy(job: JobInfo, mask: int) -> str:
    """"" when every policy has ``minSubGroups`` subgroups whose ``mask`` pods reach
    ``subGroupSize``, else the first policy short of it, as a reason."""
    policies = job.spec.sub_group_policy
    if not policies:
        return ""
    groups = sub_groups(job)
    for p, policy in enumerate(policies):
        need = int(policy.get("minSubGroups") or 0)
        if need <= 0:
            continue
        name = str(policy.get("name") or f"policy{p}")
        ready = sum(1 for g in groups if g.policy == name and count(job, g, mask) >= g.size)
        if ready < need:
            return f"subGroupPolicy {name}: {ready} of minSubGroups {need} subgroups"
    return ""


def check_sub_job_valid(job: JobInfo) -> bool:
    """``CheckSubJobValid``: each policy has at least ``minSubGroups`` subgroups (volcano.md §6.2)."""
    policies = job.spec.sub_group_policy
    if not policies:
        return True
    groups = sub_groups(job)
    for p, policy in enumerate(policies):
        need = int(policy.get("minSubGroups") or 0)
        name = str(policy.get("name") or f"policy{p}")
        if need > 0 and sum(1 for g in groups if g.policy == name) < need:
            return False
    return True


def check_sub_job_ready(job: JobInfo) -> bool:
    return not short_policy(job, READY_MASK)


def check_sub_job_pipelined(job: JobInfo) -> bool:
    return not short_policy(job, PIPELINED_MASK)


def split_safe_victims(job: JobInfo, tasks: list[T], surplus: int) -> tuple[list[T], list[T]]:
    """Gang eviction's *safe* victims of ``job`` among ``tasks`` (in eviction order), and the rest:
    at most ``surplus`` tasks (ready beyond minMember), none that would leave a policy with fewer
    than ``minSubGroups`` ready subgroups; a subgroup already broken costs nothing more (volcano.md
    §5.6). Without a subGroupPolicy: the first ``surplus`` tasks, as before."""
    if not job.spec.sub_group_policy:
        return tasks[:surplus], tasks[surplus:]
    groups = sub_groups(job)
    group_of = {i: g for g in groups for i in g.members}
    ready = {g.name: count(job, g, READY_MASK) for g in groups}
    need: dict[str, int] = {}
    for p, policy in enumerate(job.spec.sub_group_policy):
        need[str(policy.get("name") or f"policy{p}")] = int(policy.get("minSubGroups") or 0)
    whole = {name: sum(1 for g in groups if g.policy == name and ready[g.name] >= g.size) for name in need}
    safe: list[T] = []
    rest: list[T] = []
    for task in tasks:
        group = group_of.get(task.index)
        counted = group is not None and bool(task.status.value & READY_MASK)
        breaks = counted and group is not None and ready[group.name] == group.size
        if len(safe) >= surplus or (breaks and group is not None and group.policy in need
                                    and whole[group.policy] - 1 < need[group.policy]):
            rest.append(task)
            continue
        safe.append(task)
        if counted and group is not None:
            if breaks and group.policy in whole:
                whole[group.policy] -= 1
            ready[group.name] -= 1
    return safe, rest
