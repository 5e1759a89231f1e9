"""The PodTopologySpread score nodeorder adds with ``podtopologyspread.weight`` (volcano.md §6.8).

kube-scheduler's scoring of a pod's ``ScheduleAnyway`` topology spread constraints (a batch
pod has no Service or ReplicaSet to build system-default constraints from, so a pod without
such constraints is skipped: 0 everywhere). Over the candidate nodes:

* a candidate without every constraint's ``topologyKey`` label is ignored (score 0);
* per constraint, the pods matching its selector in the pod's namespace (not terminating) are
  counted per topology domain, over the nodes that pass the pod's node selector and required
  node affinity (kube's ``nodeAffinityPolicy: Honor``), for domains some candidate is in; with
  ``kubernetes.io/hostname`` the count is the node's own;
* a node scores ``round(sum(count * log(domains + 2) + maxSkew - 1))`` (``domains``: candidate
  domains of the key; for hostname the candidates kept);
* normalised: ``100 * (max + min - s) // max`` (100 everywhere when max is 0): fewer matching
  pods, higher score; then multiplied by ``podtopologyspread.weight`` (Volcano's 2).
"""

from __future__ import annotations

import math

import numpy as np

from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.node_index import node_index
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import TaskSpec
from member_agent.scheduler.framework.status import TaskStatus
from member_agent.scheduler.framework.topology import SpreadConstraint
from member_agent.scheduler.plugins.pod_affinity_score import job_has, placed_pods
from member_agent.scheduler.plugins.predicates import term_mask

MAX = 100
HOSTNAME = "kubernetes.io/hostname"


def soft_constraints(spec: TaskSpec) -> tuple[SpreadConstraint, ...]:
    """The constraints the score reads (``DoNotSchedule`` ones are a filter)."""
    return tuple(c for c in spec.extras.spread if c.when_unsatisfiable == "ScheduleAnyway")


def _has_soft(spec: TaskSpec) -> bool:
    """``bool(soft_constraints(spec))`` without building the tuple (most pods have no constraint:
    asked of every pod of every job at a session's first opening)."""
    spread = spec.extras.spread
    return bool(spread) and any(c.when_unsatisfiable == "ScheduleAnyway" for c in spread)


class SpreadScore:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.active = any(job_has(job.spec, "soft_spread", _has_soft) for job in ssn.jobs.values())
        self._seen = -1  # len(ssn.changes) when the placed pods were last collected
        self._placed: list[tuple[TaskSpec, int]] = []

        self._counts: dict[tuple[str, SpreadConstraint], np.ndarray] = {}

    def _placed_pods(self) -> list[tuple[TaskSpec, int]]:
        if self._seen != len(self.ssn.changes):
            self._seen = len(self.ssn.changes)
            self._placed = placed_pods(self.ssn)
            self._counts.clear()
        return self._placed

    def _eligible(self, spec: TaskSpec) -> np.ndarray:
        """Nodes passing the pod's node selector and required node affinity."""
        nodes = self.ssn.nodes
        index = node_index(self.ssn)
        mask = np.ones(len(nodes), dtype=bool)
        for key, value in spec.node_selector.items():
            mask &= index.label_equals(key, value)
        if spec.affinity.required is not None:
            any_term = np.zeros(len(nodes), dtype=bool)
            for term in spec.affinity.required:
                any_term |= term_mask(nodes, term, index)
            mask &= any_term
        return mask

    def _matching_per_row(self, spec: TaskSpec, constraint: SpreadConstraint) -> np.ndarray:
        """Per row, the placed pods of ``spec``'s namespace the constraint selects (not terminating)."""
        placed = self._placed_pods()
        key = (spec.namespace, constraint)
        counts = self._counts.get(key)
        if counts is not None:
            return counts
        counts = self._counts[key] = np.zeros(len(self.ssn.nodes), dtype=np.int64)
        if constraint.selector is None:
            return counts
        for other, row in placed:
            if (other.namespace == spec.namespace and other.status != TaskStatus.RELEASING
                    and constraint.selector.matches(other.labels)):
                counts[row] += 1
        return counts

    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Normalised (0..100) scores of ``rows`` for ``task``."""
        constraints = soft_constraints(task.spec) if self.active else ()
        if not constraints or len(rows) == 0:
            return np.zeros(len(rows))
        labels = self.ssn.nodes.labels
        row_list = rows.tolist()
        kept = [r for r in row_list if all(c.topology_key in labels[r] for c in constraints)]
        eligible = self._eligible(task.spec)
        raw = dict.fromkeys(row_list, 0.0)
        for constraint in constraints:
            key = constraint.topology_key
            per_row = self._matching_per_row(task.spec, constraint)
            if key == HOSTNAME:
                weight = math.log(len(kept) + 2)
                for r in kept:
                    raw[r] += per_row[r] * weight + constraint.max_skew - 1
                continue
            domains = {labels[r][key] for r in kept}
            weight = math.log(len(domains) + 2)
            per_domain = dict.fromkeys(domains, 0)
            for r in np.flatnonzero(eligible).tolist():
                value = labels[r].get(key)
                if value in per_domain and all(c.topology_key in labels[r] for c in constraints):
                    per_domain[value] += int(per_row[r])
            for r in kept:
                raw[r] += per_domain[labels[r][key]] * weight + constraint.max_skew - 1
        scores = {r: math.floor(raw[r] + 0.5) for r in kept}  # Go's math.Round (raw >= 0)
        out = np.zeros(len(row_list))
        if not scores:
            return out
        low, high = min(scores.values()), max(scores.values())
        for i, r in enumerate(row_list):
            if r in scores:
                out[i] = MAX if high == 0 else MAX * (high + low - scores[r]) // high
        return out
