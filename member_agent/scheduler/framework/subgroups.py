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
from typing import TYPE_CHECKING, Any, Mapping

from member_agent.scheduler.framework.status import READY_STATUSES, TaskStatus
from policies.k8s import label_selector

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo

S = TaskStatus
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
