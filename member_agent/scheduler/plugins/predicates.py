"""``predicates``: the Kubernetes filters that matter for batch pods (volcano.md §6.9).

Per node, in Volcano's order: pod count (``node(s) pod number exceeded``), unschedulable
nodes, node selector and required node affinity (incl. ``matchFields`` on the node name,
GFD labels such as ``nvidia.com/gpu.product``), and NoSchedule/NoExecute taints. The
label/taint part depends only on the task shape, so it is evaluated once per shape over
all nodes (vectorised) and indexed afterwards.

The pod count is the one Volcano's predicate reads from its k8s NodeInfo, which the plugin's
event handlers keep in step with the session: a task pipelined onto a node in this session
counts there, a task evicted in this session (Releasing) no longer does, so evicting a
BestEffort pod frees a pod slot for a preemptor.

With ``predicate.PodAffinityEnable`` (the default) required inter-pod affinity and
anti-affinity are checked after those (:mod:`.inter_pod_affinity`), only when some pod of the
snapshot has such terms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.node_index import NodeIndex, node_index
from member_agent.scheduler.framework.rows import selector
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.snapshot import (
    NodeSelectorTerm,
    NodeTable,
    Taint,
    TaskSpec,
    Toleration,
)
from member_agent.scheduler.framework.status import Code, TaskStatus
from member_agent.scheduler.plugins.inter_pod_affinity import SHARED_KEY as INTER_POD_KEY
from member_agent.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from policies.k8s.node_selector import NodeSelectorRequirement
from policies.k8s.tolerations import tolerated

NAME = "predicates"
ARGUMENTS = (
    Argument("predicate.NodeAffinityEnable", bool, True),
    Argument("predicate.NodePortsEnable", bool, True),
    Argument("predicate.TaintTolerationEnable", bool, True),
    Argument("predicate.PodAffinityEnable", bool, True),
    Argument("predicate.NodeVolumeLimitsEnable", bool, True),
    Argument("predicate.VolumeZoneEnable", bool, True),
    Argument("predicate.PodTopologySpreadEnable", bool, True),
    Argument("predicate.VolumeBindingEnable", bool, True),
    Argument("predicate.DynamicResourceAllocationEnable", bool, False),
    Argument("predicate.CacheEnable", bool, False),
    Argument("volumebinding.weight", int, 1),
    Argument("volumebinding.bindTimeoutSeconds", int, 600),
    Argument("dynamicresources.filterTimeoutSeconds", int, 10),
)
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_PIPELINED = TaskStatus.PIPELINED  # a module constant: read per placement


def term_mask(nodes: NodeTable, term: NodeSelectorTerm, index: NodeIndex | None = None) -> np.ndarray:
    """Rows matching every expression of a term (an empty term matches nothing).

    With a :class:`NodeIndex` a label expression is evaluated once per distinct label value."""
    n = len(nodes)
    if not term.expressions and not term.fields:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for req in term.expressions:
        if index is not None:
            mask &= index.requirement(req, NodeSelectorRequirement.matches)
        else:
            mask &= np.fromiter((req.matches(lab.get(req.key)) for lab in nodes.labels), bool, n)
    for req in term.fields:
        mask &= np.fromiter((req.matches_field(name) for name in nodes.names), bool, n)
    return mask


class PredicatesPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.affinity_enabled = bool(args["predicate.NodeAffinityEnable"])
        self.taints_enabled = bool(args["predicate.TaintTolerationEnable"])
        self.pod_affinity_enabled = bool(args["predicate.PodAffinityEnable"])
        self.static: dict[Any, np.ndarray] = {}  # shape -> codes
        self.by_placement: dict[Any, np.ndarray] = {}  # placement key -> codes (shared by shapes)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.pod_number = ssn.reasons.code(POD_NUMBER_EXCEEDED, Code.UNSCHEDULABLE)
        self.unschedulable = ssn.reasons.code(UNSCHEDULABLE, Code.UNRESOLVABLE)
        self.mismatch = ssn.reasons.code(AFFINITY_MISMATCH, Code.UNRESOLVABLE)
        self.pod_delta = np.zeros(len(ssn.node_names), dtype=np.int64)
        #: Per node whether its pods reached their maximum (:meth:`_full_rows`), and the position in
        #: ``Session.changes`` it is current at.
        self.full: np.ndarray | None = None
        self.full_pos = 0
        self.delta_of: dict[str, tuple[int, int]] = {}  # task key -> (row, +1 pipelined / -1 evicted)
        self.inter_pod: InterPodAffinity | None = None
        if self.pod_affinity_enabled:
            inter_pod = InterPodAffinity(ssn)
            if inter_pod.terms:  # no pod has inter-pod terms: nothing to check, nothing to track
                self.inter_pod = ssn.shared[INTER_POD_KEY] = inter_pod
        # Past the static codes a row's code reads only its pod count, maximum and ``pod_delta``:
        # by state (framework/node_groups.py) unless inter-pod terms read the pods on it.
        ssn.add_row_state(self.pod_delta)
        ssn.add(Point.PREDICATE, NAME, self._predicate, row=self._predicate_row, by_state=self.inter_pod is None,
                static=self._static_codes)
        ssn.add_event_handler(NAME, self._on_allocate, self._on_deallocate)

    def _shift(self, task: TaskInfo, row: int, delta: int) -> None:
        self.delta_of[task.key] = (row, delta)
        self.pod_delta[row] += delta

    def _unshift(self, task: TaskInfo) -> bool:
        entry = self.delta_of.pop(task.key, None)
        if entry is not None:
            self.pod_delta[entry[0]] -= entry[1]
        return entry is not None

    def _on_allocate(self, task: TaskInfo) -> None:
        # Pipelined: counts on the node (Allocated is in ``pod_count`` already); an undone
        # eviction (Releasing -> Running) counts again. ``_unshift`` written out when the task has
        # no entry (every placement of a pending task): a lookup instead of a call.
        if task.spec.key in self.delta_of:
            self._unshift(task)
        elif task.status == _PIPELINED and task.node is not None:
            self._shift(task, task.node, 1)

    def _on_deallocate(self, task: TaskInfo) -> None:
        # An undone pipeline leaves; an in-session eviction stops counting.
        if not self._unshift(task) and task.status == TaskStatus.RELEASING and task.node is not None:
            self._shift(task, task.node, -1)

    def _static_codes(self, task: TaskInfo) -> np.ndarray:
        """Selector, affinity, unschedulable and taints: a function of the shape alone."""
        codes = self.static.get(task.spec.shape)
        if codes is not None:
            return codes
        index = node_index(self.ssn)
        placement = index.placement(task.spec)
        codes = self.by_placement.get(placement)
        if codes is None:
            codes = self.by_placement[placement] = self._placement_codes(task.spec, index)
        self.static[task.spec.shape] = codes
        return codes

    def _placement_codes(self, spec: TaskSpec, index: NodeIndex) -> np.ndarray:
        nodes = self.ssn.nodes
        n = len(nodes)
        codes = np.zeros(n, dtype=np.int32)
        if not tolerated(spec.tolerations, UNSCHEDULABLE_TAINT):
            codes[nodes.unschedulable] = self.unschedulable
        if self.affinity_enabled:
            match = np.ones(n, dtype=bool)
            for key, value in spec.node_selector.items():
                match &= index.label_equals(key, value)
            if spec.affinity.required is not None:
                any_term = np.zeros(n, dtype=bool)
                for term in spec.affinity.required:
                    any_term |= term_mask(nodes, term, index)
                match &= any_term
            codes[(codes == 0) & ~match] = self.mismatch
        if self.taints_enabled:
            for taints, rows in index.taint_groups():
                code = self._first_untolerated(spec.tolerations, taints)
                if code:
                    open_rows = rows[codes[rows] == 0]
                    codes[open_rows] = code
        codes.setflags(write=False)
        return codes

    def _first_untolerated(self, tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> int:
        """Reason code of the first NoSchedule/NoExecute taint not tolerated (0 if none)."""
        for taint in taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(tolerations, taint):
                return self.ssn.reasons.code(
                    f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}", Code.UNRESOLVABLE
                )
        return 0

    def _predicate_row(self, task: TaskInfo, row: int) -> int:
        code = int(self._static_codes(task)[row])
        if code == 0 and self.inter_pod is not None:
            code = self.inter_pod.code_at(task, row)
        if code == 0 and self.ssn.pod_count[row] + self.pod_delta[row] >= self.ssn.nodes.max_pods[row]:
            code = self.pod_number
        return code

    def _predicate(self, task: TaskInfo, rows: np.ndarray) -> Any:
        sel = selector(rows)  # a contiguous span is read as views
        codes = self._static_codes(task)[sel].copy()
        if self.inter_pod is not None:
            inter_pod = self.inter_pod.codes(task)
            if inter_pod is not None:
                codes = np.where(codes == 0, inter_pod[sel], codes)
        full = self._full_rows()[sel]
        if full.any():  # usually none: a node holds far fewer pods than its maximum
            codes[(codes == 0) & full] = self.pod_number
        return codes

    def _full_rows(self) -> np.ndarray:
        """Per node ``pod_count + pod_delta >= max_pods``, shared by every shape's span evaluation (it
        read three integer arrays per span). A placement, an undo and the handlers that move
        ``pod_delta`` all change a row listed in ``Session.changes`` (the shape caches rely on it too),
        so the rows listed since the last read are worked out again."""
        ssn = self.ssn
        changes = ssn.changes
        full = self.full
        if full is None:
            full = self.full = ssn.pod_count + self.pod_delta >= ssn.nodes.max_pods
        elif self.full_pos < len(changes):
            rows = np.array(changes[self.full_pos:], dtype=np.int64)  # repeats written twice, alike
            full[rows] = ssn.pod_count[rows] + self.pod_delta[rows] >= ssn.nodes.max_pods[rows]
        self.full_pos = len(changes)
        return full

    def on_session_close(self, ssn: Session) -> None:
        pass


def new(args: dict[str, Any]) -> PredicatesPlugin:
    return PredicatesPlugin(args)
