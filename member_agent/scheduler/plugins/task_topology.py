"""``task-topology``: affinity and anti-affinity between the tasks of one job (volcano.md §6.11).

Rules come from either form:

* the seed's per-task ``taskTopology`` (``affinity.pod[] / antiAffinity.pod[]`` of
  ``{task, topologyKey, weight}``), which the job controller writes as JSON on the task's
  pods in the annotation ``volcano.sh/task-topology``;
* Volcano's PodGroup annotations ``volcano.sh/task-topology-affinity`` /
  ``-anti-affinity`` (groups ``ps,worker;chief``: every role of a group with every other,
  a one-role group with itself; topology key ``kubernetes.io/hostname``, weight 100) and
  ``volcano.sh/task-topology-task-order`` (``ps,worker``).

Scoring (``BatchNodeOrder``): for each rule of the task's role, the share of the target
role's already-placed pods that sit in the node's topology domain (the node's value of
``topologyKey``; ``kubernetes.io/hostname`` falls back to the node name), × the rule's
weight (default 100), negated for anti-affinity; summed and × ``task-topology.weight``.
Ordering (``TaskOrder``, within a job): the explicit task order, else roles that other
roles want to be near come first (``ps`` before its ``worker``s), so targets are placed
before the pods that follow them. Rules naming a role the job does not have are reported
and ignored. Rules are soft: they never make a node infeasible.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import TaskStatus

NAME = "task-topology"
ARGUMENTS = (Argument("task-topology.weight", int, 1),)
POD_ANNOTATION = "volcano.sh/task-topology"
AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
HOSTNAME = "kubernetes.io/hostname"
DEFAULT_WEIGHT = 100
S = TaskStatus
PLACED = frozenset({S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING})


@dataclass(frozen=True)
class Rule:
    target: str  # role
    key: str  # topology key
    weight: float
    anti: bool


class JobRules:
    def __init__(self) -> None:
        self.by_role: dict[str, list[Rule]] = {}
        self.order: dict[str, int] = {}  # role -> rank (higher first)

    def add(self, role: str, rule: Rule) -> None:
        rules = self.by_role.setdefault(role, [])
        if rule not in rules:
            rules.append(rule)


def _pod_rules(text: str) -> list[Rule]:
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("must be a JSON object with affinity / antiAffinity")
    out = []
    for field, anti in (("affinity", False), ("antiAffinity", True)):
        for term in ((doc.get(field) or {}).get("pod") or ()):
            if not isinstance(term, dict) or not term.get("task"):
                raise ValueError(f"{field}.pod[]: each term needs a task")
            out.append(Rule(str(term["task"]), str(term.get("topologyKey") or HOSTNAME),
                            float(term.get("weight") or DEFAULT_WEIGHT), anti))
    return out


def _groups(text: str) -> list[list[str]]:
    return [[n.strip() for n in group.split(",") if n.strip()] for group in text.split(";") if group.strip()]


class TaskTopologyPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.weight = int(args["task-topology.weight"])
        self.rules: dict[str, JobRules] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        for job in ssn.jobs.values():
            rules = self._job_rules(ssn, job)
            if rules is not None:
                self.rules[job.uid] = rules
        if self.rules:
            ssn.add(Point.TASK_ORDER, NAME, self._task_order)
            ssn.add(Point.BATCH_NODE_ORDER, NAME, self._scores)

    def _job_rules(self, ssn: Session, job: JobInfo) -> JobRules | None:
        roles = {t.spec.role for t in job.tasks}
        rules = JobRules()
        for key, anti in ((AFFINITY, False), (ANTI_AFFINITY, True)):
            for group in _groups(job.spec.annotations.get(key, "")):
                for role in group:
                    for other in group if len(group) == 1 else [g for g in group if g != role]:
                        rules.add(role, Rule(other, HOSTNAME, DEFAULT_WEIGHT, anti))
        order = [n.strip() for n in job.spec.annotations.get(TASK_ORDER, "").split(",") if n.strip()]
        rules.order = {role: len(order) - i for i, role in enumerate(order)}
        seen: set[str] = set()
        for task in job.tasks:
            text = task.spec.extras.annotations.get(POD_ANNOTATION)
            if not text or task.spec.role in seen:
                continue
            seen.add(task.spec.role)
            try:
                for rule in _pod_rules(text):
                    rules.add(task.spec.role, rule)
            except (ValueError, TypeError, AttributeError) as exc:
                ssn.warn(f"Pod {task.key}: annotation {POD_ANNOTATION}: {exc}; ignored")
        for role, role_rules in list(rules.by_role.items()):
            unknown = sorted({r.target for r in role_rules} - roles)
            if unknown or role not in roles:
                ssn.warn(f"PodGroup {job.uid}: task-topology names task(s) {', '.join(unknown or [role])} "
                         f"the job does not have; those rules are ignored")
                rules.by_role[role] = [r for r in role_rules if r.target in roles]
        if not any(rules.by_role.values()) and not rules.order:
            return None
        # Roles other roles want to be near go first (explicit order wins).
        if not rules.order:
            wanted: dict[str, int] = {}
            for role, role_rules in rules.by_role.items():
                for rule in role_rules:
                    if not rule.anti and rule.target != role:
                        wanted[rule.target] = wanted.get(rule.target, 0) + 1
            rules.order = wanted
        return rules

    def _task_order(self, left: TaskInfo, right: TaskInfo) -> int:
        if left.job is not right.job:
            return 0
        rules = self.rules.get(left.job.uid)
        if rules is None:
            return 0
        lo, ro = rules.order.get(left.spec.role, 0), rules.order.get(right.spec.role, 0)
        return 0 if lo == ro else (-1 if lo > ro else 1)

    def _domain(self, row: int, key: str) -> str | None:
        value = self.ssn.nodes.labels[row].get(key)
        if value is None and key == HOSTNAME:
            return self.ssn.node_names[row]
        return value

    def _scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=np.float64)
        rules = self.rules.get(task.job.uid)
        role_rules = rules.by_role.get(task.spec.role) if rules else None
        if not role_rules:
            return out
        for rule in role_rules:
            placed: dict[str | None, int] = {}
            total = 0
            for other in task.job.tasks:
                if other is task or other.spec.role != rule.target or other.status not in PLACED or other.node is None:
                    continue
                domain = self._domain(other.node, rule.key)
                placed[domain] = placed.get(domain, 0) + 1
                total += 1
            if total == 0:
                continue
            sign = -1.0 if rule.anti else 1.0
            counts = np.fromiter(
                (placed.get(d, 0) if d is not None else 0 for d in (self._domain(r, rule.key) for r in rows.tolist())),
                dtype=np.float64, count=len(rows))
            out += sign * rule.weight * counts / total
        return out * self.weight

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> TaskTopologyPlugin:
    return TaskTopologyPlugin(args)
