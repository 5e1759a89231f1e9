"""Required inter-pod (anti-)affinity, kube-scheduler's InterPodAffinity filter as Volcano's
``predicates`` plugin runs it (``predicate.PodAffinityEnable``).

A topology domain is the value of a node label (a term's ``topologyKey``); a node without the
label is in no domain. For an incoming pod on a node, in kube's order:

1. its affinity terms: every term needs a pod it selects in the node's domain, and the node
   must carry every term's key; when no pod anywhere (on a node with the key) is selected by
   any of its terms and the pod selects itself with all of them, it is the first of a
   self-affine group and may go to any node with the keys
   (``node(s) didn't match pod affinity rules``, unresolvable);
2. its anti-affinity terms: no pod a term selects in the node's domain
   (``node(s) didn't match pod anti-affinity rules``, resolvable by preemption);
3. existing pods' anti-affinity terms: no pod in the node's domain holds a term that selects
   the incoming pod (``node(s) didn't satisfy existing pods anti-affinity rules``, resolvable).

Only pods that some term selects or that hold anti-affinity terms are tracked, as per-term
counts per node row; a domain's count is a ``bincount`` over the rows. Answers are computed
for all rows per shape and kept until a tracked pod moves; when one does, the rows of its
domains are touched so every shape cache re-evaluates exactly them (all rows when a
self-affine group gains its first or loses its last pod).
"""

from __future__ import annotations

import numpy as np

from member_agent.scheduler.framework.affinity_shapes import distinct_terms
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.pod_affinity import SHARED_KEY as SHARED_KEY  # predicates reads it here
from member_agent.scheduler.framework.pod_affinity import PodAffinityTerm
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import TaskSpec
from member_agent.scheduler.framework.status import ALLOCATED_STATUSES, Code, TaskStatus

AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ON_NODE = ALLOCATED_STATUSES | {TaskStatus.PIPELINED, TaskStatus.RELEASING}


class InterPodAffinity:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        tasks = [t for job in ssn.jobs.values() for t in job.tasks]
        affinity, anti = distinct_terms([*(t.spec for t in tasks), *ssn.snapshot.residents])
        self.terms: list[PodAffinityTerm] = list(dict.fromkeys(affinity + anti))
        self.index = {t: i for i, t in enumerate(self.terms)}
        self.affine = frozenset(self.index[t] for t in affinity)  # ... and as affinity
        self.anti = frozenset(self.index[t] for t in anti)  # terms some pod holds as anti-affinity
        if self.terms:
            self._track_all(tasks)

    def _track_all(self, tasks: list[TaskInfo]) -> None:
        ssn = self.ssn
        n = len(ssn.node_names)
        self.domains: dict[str, np.ndarray] = {}  # topologyKey -> domain id per row (-1: no label)
        self.domain_rows: dict[str, list[np.ndarray]] = {}
        for key in dict.fromkeys(t.topology_key for t in self.terms):
            values = [labels.get(key) for labels in ssn.nodes.labels]
            ids: dict[str, int] = {}
            dom = np.array([-1 if v is None else ids.setdefault(v, len(ids)) for v in values], dtype=np.int64)
            self.domains[key] = dom
            self.domain_rows[key] = [np.flatnonzero(dom == d) for d in range(len(ids))]
        self.selects = np.zeros((len(self.terms), n), dtype=np.int64)  # tracked pods each term selects
        self.holds = np.zeros((len(self.terms), n), dtype=np.int64)  # tracked pods holding each anti term
        self.keyed = np.zeros(len(self.terms), dtype=np.int64)  # selects on rows that carry the key
        self.present: dict[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
        self.on_row: list[dict[str, TaskInfo | None]] = [{} for _ in range(n)]
        self.version = 0
        self.by_shape: dict[int, tuple[int, np.ndarray | None]] = {}
        self.selected_by: dict[int, tuple[int, ...]] = {}  # shape -> terms selecting its tasks
        self.reasons = (ssn.reasons.code(AFFINITY_MISMATCH, Code.UNRESOLVABLE),
                        ssn.reasons.code(ANTI_AFFINITY_MISMATCH, Code.UNSCHEDULABLE),
                        ssn.reasons.code(EXISTING_ANTI_AFFINITY, Code.UNSCHEDULABLE))
        for spec in ssn.snapshot.residents:
            row = ssn.nodes.index.get(spec.node) if spec.node else None
            if row is not None:
                self._add(f"resident:{spec.key}", row, spec, None, touch=False)
        for task in tasks:
            if task.node is not None and task.status in ON_NODE:
                self._add(task.key, task.node, task.spec, task, touch=False)
        ssn.add_event_handler(SHARED_KEY, self.on_allocate, self.on_deallocate)

    # ------------------------------------------------------------------ tracking
    def _selecting(self, spec: TaskSpec) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.terms) if t.matches(spec.namespace, spec.labels))

    def _add(self, key: str, row: int, spec: TaskSpec, task: TaskInfo | None, touch: bool = True) -> None:
        selected = self._selecting(spec)
        held = tuple(self.index[t] for t in spec.pod_affinity.anti_affinity)
        if not selected and not held:
            return
        self.present[key] = (row, selected, held)
        self.on_row[row][key] = task
        self._count(row, selected, held, 1, touch)

    def _remove(self, key: str) -> None:
        entry = self.present.pop(key, None)
        if entry is not None:
            row, selected, held = entry
            self.on_row[row].pop(key, None)
            self._count(row, selected, held, -1, True)

    def _count(self, row: int, selected: tuple[int, ...], held: tuple[int, ...], delta: int, touch: bool) -> None:
        crossed = False
        for i in selected:
            self.selects[i, row] += delta
            if self.domains[self.terms[i].topology_key][row] >= 0:
                self.keyed[i] += delta
                crossed |= i in self.affine and self.keyed[i] == (1 if delta > 0 else 0)
        for i in held:
            self.holds[i, row] += delta
        self.version += 1
        if touch:
            self._touch(row, everywhere=crossed)

    def _touch(self, row: int, everywhere: bool) -> None:
        ssn = self.ssn
        if everywhere:  # a self-affine group's first pod appeared or its last one left
            ssn.changes.extend(range(len(ssn.node_names)))
            return
        for key, dom in self.domains.items():
            if dom[row] >= 0:
                ssn.changes.extend(self.domain_rows[key][dom[row]].tolist())

    def on_allocate(self, task: TaskInfo) -> None:
        if task.node is not None and task.status in ON_NODE and task.key not in self.present:
            self._add(task.key, task.node, task.spec, task)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._remove(task.key)

    # ------------------------------------------------------------------ the filter
    def _in_domain(self, counts: np.ndarray, key: str) -> np.ndarray:
        """Rows whose ``key`` domain holds a positive count."""
        dom = self.domains[key]
        keyed = dom >= 0
        if not keyed.any():
            return keyed
        per_domain = np.bincount(dom[keyed], weights=counts[keyed], minlength=len(self.domain_rows[key]))
        return keyed & (per_domain[np.where(keyed, dom, 0)] > 0)

    def codes(self, task: TaskInfo) -> np.ndarray | None:
        """Reason code per row (0: passes), or None when no inter-pod rule concerns ``task``."""
        spec = task.spec
        cached = self.by_shape.get(spec.shape)
        if cached is not None and (cached[1] is None or cached[0] == self.version):
            return cached[1]
        selected = self.selected_by.get(spec.shape)
        if selected is None:
            selected = self.selected_by[spec.shape] = tuple(i for i in self._selecting(spec) if i in self.anti)
        codes = self._evaluate(spec, selected) if spec.pod_affinity or selected else None
        self.by_shape[spec.shape] = (self.version, codes)
        return codes

    def _evaluate(self, spec: TaskSpec, selected: tuple[int, ...]) -> np.ndarray:
        n = len(self.ssn.node_names)
        codes = np.zeros(n, dtype=np.int32)
        affinity_code, anti_code, existing_code = self.reasons
        terms = spec.pod_affinity.affinity
        if terms:
            ok = np.ones(n, dtype=bool)
            has_keys = np.ones(n, dtype=bool)
            for term in terms:
                has_keys &= self.domains[term.topology_key] >= 0
                ok &= self._in_domain(self.selects[self.index[term]], term.topology_key)
            first = not any(self.keyed[self.index[t]] for t in terms)
            if first and all(t.matches(spec.namespace, spec.labels) for t in terms):
                ok = has_keys
            codes[~ok] = affinity_code
        for term in spec.pod_affinity.anti_affinity:
            blocked = self._in_domain(self.selects[self.index[term]], term.topology_key)
            codes[(codes == 0) & blocked] = anti_code
        for i in selected:
            blocked = self._in_domain(self.holds[i], self.terms[i].topology_key)
            codes[(codes == 0) & blocked] = existing_code
        codes.setflags(write=False)
        return codes

    def code_at(self, task: TaskInfo, row: int) -> int:
        codes = self.codes(task)
        return 0 if codes is None else int(codes[row])

    # ------------------------------------------------------------------ preemption
    def blockers(self, task: TaskInfo, row: int) -> list[TaskInfo] | None:
        """The pods on ``row`` whose anti-affinity conflict with ``task`` evicting would resolve:
        [] when there is no conflict, None when evicting on this node cannot resolve it (a
        conflicting pod elsewhere in the domain, one that is not a task, or an affinity miss)."""
        code = self.code_at(task, row)
        if code == 0:
            return []
        if code == self.reasons[0]:
            return None
        found: dict[str, TaskInfo] = {}
        pairs = [(self.index[t], self.selects) for t in task.spec.pod_affinity.anti_affinity]
        pairs += [(i, self.holds) for i in self.selected_by.get(task.spec.shape, ())]
        for i, counts in pairs:
            key = self.terms[i].topology_key
            dom = self.domains[key][row]
            if dom < 0:
                continue
            elsewhere = int(counts[i, self.domain_rows[key][dom]].sum()) - int(counts[i, row])
            if elsewhere > 0:
                return None
            for pod_key, pod in self.on_row[row].items():
                entry = self.present[pod_key]
                if i in (entry[1] if counts is self.selects else entry[2]):
                    if pod is None:
                        return None
                    found[pod_key] = pod
        return list(found.values())
