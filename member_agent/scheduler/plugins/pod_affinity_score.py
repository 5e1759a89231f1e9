"""The InterPodAffinity score nodeorder adds with ``podaffinity.weight`` (volcano.md §6.8).

kube-scheduler's scoring, which Volcano's nodeorder runs as a batch scorer: every pod already
on a node (running, bound, allocated or pipelined in this session; a pod evicted in this
session no longer counts, as predicates' Deallocate handler takes it out of the node) adds
to a score per topology domain (``topologyKey`` = node label value):

* each preferred affinity term of the incoming pod that selects it: ``+weight``;
* each preferred anti-affinity term of the incoming pod that selects it: ``-weight``;
* each required affinity term *it* holds that selects the incoming pod: ``+1``
  (``hardPodAffinityWeight``, kube's default);
* each preferred affinity / anti-affinity term it holds that selects the incoming pod:
  ``+weight`` / ``-weight``.

A node scores the sum over the domains it is in; the scores are then normalised over the
candidate nodes to ``100 * (s - min) / (max - min)`` (0 everywhere when all are equal) and
multiplied by ``podaffinity.weight`` (Volcano's default 2).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import numpy as np

from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.pod_affinity import NO_POD_AFFINITY
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import JobSpec, TaskSpec
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, TaskStatus

MAX = 100
HARD_POD_AFFINITY_WEIGHT = 1
_ON_NODE = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}


def placed_pods(ssn: Session) -> list[tuple[TaskSpec, int]]:
    """Every pod the nodes' k8s NodeInfo holds, with its row: the session's tasks on nodes, the
    pods of jobs the session leaves out (quiescent: all Running or Bound) and residents."""
    found: list[tuple[TaskSpec, int]] = []
    for row, tasks in ssn.node_tasks.items():
        for task in tasks.values():
            # a pod Releasing since the snapshot still counts; one evicted this session does not
            if task.status in _ON_NODE or (task.status == TaskStatus.RELEASING
                                           and task.spec.status == TaskStatus.RELEASING):
                found.append((task.spec, row))
    index = ssn.nodes.index
    left_out = (spec for spec in ssn.snapshot.jobs if spec.uid not in ssn.jobs)
    for spec in (*(t for job in left_out for t in job.tasks), *ssn.snapshot.residents):
        at = index.get(spec.node) if spec.node else None
        if at is not None and spec.status in _ON_NODE | {TaskStatus.RELEASING}:
            found.append((spec, at))
    return found


def scored(spec: TaskSpec) -> bool:
    terms = spec.pod_affinity  # the shared empty value scores nothing (an identity test spares the property)
    return terms is not NO_POD_AFFINITY and terms.scored


def job_has(job: JobSpec, key: str, test: Callable[[TaskSpec], bool]) -> bool:
    """Whether some pod of ``job`` passes ``test``, kept in the spec's memo (an unchanged job
    keeps its spec across sessions, so this is one walk per job, not per session)."""
    found = job.memo.get(key)
    if found is None:
        found = job.memo[key] = any(test(t) for t in job.tasks)
    return bool(found)


class PodAffinityScore:
    """Raw InterPodAffinity scores per node for one incoming pod, normalised over candidates."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._seen = -1  # len(ssn.changes) when the pods were last collected
        self.pods: list[tuple[TaskSpec, int]] = []
        self.holders: list[tuple[TaskSpec, int]] = []
        self.by_template: dict[object, dict[tuple[str, str], int]] = {}
        ledger = ssn.left_out.ledger  # it describes this snapshot's every job: its count, not a walk
        self.active = any(scored(s) for s in ssn.snapshot.residents) or (
            ledger.with_scored > 0 if ledger is not None
            else any(job_has(spec, "pod_affinity_scored", scored) for spec in ssn.snapshot.jobs))

    def _refresh(self) -> None:
        """Collect the placed pods again when a node changed (placements, evictions, undos)."""
        if self._seen == len(self.ssn.changes):
            return
        self._seen = len(self.ssn.changes)
        self.by_template.clear()
        self.pods = placed_pods(self.ssn)
        # placed pods whose own terms can score an incoming pod
        self.holders = [(spec, row) for spec, row in self.pods if spec.pod_affinity.scored]

    def _domain_scores(self, spec: TaskSpec) -> dict[tuple[str, str], int]:
        """Per (topologyKey, value), the summed term weights for ``spec``; the same for every pod
        of one template until a node changes (only identity, labels and terms matter)."""
        key = (spec.namespace, tuple(sorted(spec.labels.items())), spec.pod_affinity)
        cached = self.by_template.get(key)
        if cached is None:
            cached = self.by_template[key] = self._compute(spec)
        return cached

    def _compute(self, spec: TaskSpec) -> dict[tuple[str, str], int]:
        labels = self.ssn.nodes.labels
        scores: dict[tuple[str, str], int] = defaultdict(int)
        own = spec.pod_affinity
        if own.preferred_affinity or own.preferred_anti_affinity:
            for other, row in self.pods:
                if other.uid == spec.uid:
                    continue
                node_labels = labels[row]
                for weight, term in own.preferred_affinity:
                    if term.topology_key in node_labels and term.matches(other.namespace, other.labels):
                        scores[(term.topology_key, node_labels[term.topology_key])] += weight
                for weight, term in own.preferred_anti_affinity:
                    if term.topology_key in node_labels and term.matches(other.namespace, other.labels):
                        scores[(term.topology_key, node_labels[term.topology_key])] -= weight
        for other, row in self.holders:
            if other.uid == spec.uid:
                continue
            node_labels = labels[row]
            theirs = other.pod_affinity
            weighted = [(HARD_POD_AFFINITY_WEIGHT, t) for t in theirs.affinity]
            weighted += list(theirs.preferred_affinity)
            weighted += [(-w, t) for w, t in theirs.preferred_anti_affinity]
            for weight, term in weighted:
                if term.topology_key in node_labels and term.matches(spec.namespace, spec.labels):
                    scores[(term.topology_key, node_labels[term.topology_key])] += weight
        return scores

    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Normalised (0..100) scores of ``rows`` for ``task``."""
        if not self.active:
            return np.zeros(len(rows))
        self._refresh()
        domains = self._domain_scores(task.spec)
        if not domains:
            return np.zeros(len(rows))
        labels = self.ssn.nodes.labels
        raw = np.array([sum(score for (key, value), score in domains.items() if labels[row].get(key) == value)
                        for row in rows.tolist()], dtype=np.int64)
        if len(raw) == 0:
            return raw.astype(np.float64)
        low, high = int(raw.min()), int(raw.max())
        if high == low:
            return np.zeros(len(rows))
        return np.floor(MAX * ((raw - low) / (high - low)))
