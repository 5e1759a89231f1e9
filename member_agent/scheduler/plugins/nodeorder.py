"""``nodeorder``: the Kubernetes scoring plugins, with Volcano's argument names (§6.8).

* least-requested (``leastrequested.weight``, 1) and most-requested (``mostrequested.weight``,
  0): NodeResourcesFit over cpu and memory with the kube-scheduler non-zero request
  defaults, integer arithmetic as upstream;
* balanced allocation (``balancedresource.weight``, 1) over cpu, memory, nvidia.com/gpu;
* node affinity (``nodeaffinity.weight``, 2): preferred terms, normalised over candidates;
* taint toleration (``tainttoleration.weight``, 3): intolerable PreferNoSchedule taints,
  normalised and reversed.

* inter-pod affinity (``podaffinity.weight``, 2): preferred pod (anti-)affinity terms of the pod
  and the terms of the pods already placed, normalised over candidates (:mod:`.pod_affinity_score`).

* topology spread (``podtopologyspread.weight``, 2): the pod's ``ScheduleAnyway`` spread
  constraints, normalised over candidates (:mod:`.spread_score`).

* image locality (``imagelocality.weight``, 1): images of the pod already on the node
  (``status.images``), raw 0..100 per node (:mod:`.image_locality`).

A weight of 0 disables a scorer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.infos import TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.node_index import NodeIndex, node_index
from member_agent.scheduler.framework.rows import selector, take
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.plugins.image_locality import ImageLocality
from member_agent.scheduler.plugins.pod_affinity_score import PodAffinityScore
from member_agent.scheduler.plugins.predicates import term_mask
from member_agent.scheduler.plugins.spread_score import SpreadScore
from policies.k8s.tolerations import tolerated

NAME = "nodeorder"
ARGUMENTS = (
    Argument("leastrequested.weight", int, 1),
    Argument("mostrequested.weight", int, 0),
    Argument("nodeaffinity.weight", int, 2),
    Argument("podaffinity.weight", int, 2),
    Argument("balancedresource.weight", int, 1),
    Argument("tainttoleration.weight", int, 3),
    Argument("imagelocality.weight", int, 1),
    Argument("podtopologyspread.weight", int, 2),
)
MAX = 100


#: the per-node constants of the last allocatable array seen (see ``on_session_open``)
_CONSTANTS: dict[Any, tuple[np.ndarray, tuple[Any, ...]]] = {}


def _node_constants(alloc: np.ndarray, balanced_cols: np.ndarray) -> tuple[Any, ...]:
    alloc2 = alloc[:, :2].astype(np.int64)
    alloc_rows = alloc.tolist()  # the scalar scorer reads Python floats and ints
    alloc2_rows = [(int(a), int(b)) for a, b in (row[:2] for row in alloc_rows)]
    safe2 = np.where(alloc2 == 0, 1, alloc2)
    zero2 = alloc2 == 0
    alloc_b = alloc[:, balanced_cols]
    present_b = np.asfortranarray(alloc_b > 0)  # column views below are contiguous
    denom_b = np.asfortranarray(np.where(present_b, alloc_b, 1.0))
    return alloc2, alloc_rows, alloc2_rows, safe2, zero2, present_b, denom_b, present_b.sum(axis=1)


class NodeOrderPlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.least = int(args["leastrequested.weight"])
        self.most = int(args["mostrequested.weight"])
        self.affinity = int(args["nodeaffinity.weight"])
        self.balanced = int(args["balancedresource.weight"])
        self.taint = int(args["tainttoleration.weight"])
        self.pod_affinity = int(args["podaffinity.weight"])
        self.spread = int(args["podtopologyspread.weight"])
        self.image = int(args["imagelocality.weight"])
        self.static: dict[Any, tuple[np.ndarray, np.ndarray, bool]] = {}  # shape -> raw scores
        self.by_placement: dict[Any, tuple[np.ndarray, np.ndarray, bool]] = {}  # placement key -> raw scores

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        gpu = ssn.dims.index.get("nvidia.com/gpu")
        self.balanced_cols_list = [0, 1] + ([gpu] if gpu is not None else [])
        self.balanced_cols = np.array(self.balanced_cols_list, dtype=np.int64)
        # Per-node constants of the vectorised scorers (allocatable never changes in a session,
        # and the cache hands every snapshot the same read-only array until a Node changes).
        alloc = ssn.node_allocatable
        key = (tuple(self.balanced_cols_list), alloc.shape)
        cached = _CONSTANTS.get(key)
        if cached is None or cached[0] is not alloc or alloc.flags.writeable:
            cached = (alloc, _node_constants(alloc, self.balanced_cols))
            _CONSTANTS.clear()  # one layout at a time: a strong reference to one array, no session
            _CONSTANTS[key] = cached
        (self.alloc2, self.alloc_rows, self.alloc2_rows, self.safe2, self.zero2, self.present_b, self.denom_b,
         self.count_b) = cached[1]
        if self.least or self.most or self.balanced:
            ssn.add(Point.NODE_ORDER, NAME, self._resource_scores, row=self._resource_score_row, by_resources=True)
        if self.affinity or self.taint:
            ssn.add(Point.BATCH_NODE_ORDER, NAME, self._normalised_scores)
        if self.pod_affinity:
            scorer = PodAffinityScore(ssn)
            if scorer.active:  # no pod with preferred terms, none placed with terms: all 0 (kube's Skip)
                weight = self.pod_affinity
                ssn.add(Point.BATCH_NODE_ORDER, NAME, lambda task, rows: scorer.scores(task, rows) * weight)
        if self.image:
            images = ImageLocality(ssn.nodes.images, ssn.nodes.lists_images)
            if images.active:  # no node lists images: 0 everywhere
                image_weight = self.image
                ssn.add(Point.BATCH_NODE_ORDER, NAME,
                        lambda task, rows: images.scores(task.spec.extras.images)[rows] * image_weight)
        if self.spread:
            spread = SpreadScore(ssn)
            if spread.active:  # no pod with ScheduleAnyway constraints: kube skips the plugin
                spread_weight = self.spread
                ssn.add(Point.BATCH_NODE_ORDER, NAME, lambda task, rows: spread.scores(task, rows) * spread_weight)

    # ------------------------------------------------------------------ row-local
    def _resource_scores(self, task: TaskInfo, rows: np.ndarray) -> Any:
        ssn = self.ssn
        sel = selector(rows)  # a contiguous span is read as views
        alloc = take(self.alloc2, sel)
        zero = take(self.zero2, sel)
        requested = (take(ssn.nonzero_used, sel) + np.array(task.spec.nonzero)).astype(np.int64)
        total = np.zeros(len(rows))
        safe = take(self.safe2, sel)
        if self.least:
            per = np.where(zero | (requested > alloc), 0, ((alloc - requested) * MAX) // safe)
            total += ((per[:, 0] * 50 + per[:, 1] * 50) // 100) * self.least
        if self.most:
            capped = np.minimum(requested, alloc)
            per = np.where(zero, 0, (capped * MAX) // safe)
            total += ((per[:, 0] + per[:, 1]) // 2) * self.most
        if self.balanced:
            total += self._balanced(task, sel, len(rows)) * self.balanced
        return total

    def _resource_score_row(self, task: TaskInfo, row: int) -> float:
        """:meth:`_resource_scores` for one node, in scalar (integer) arithmetic."""
        ssn = self.ssn
        alloc_row = self.alloc_rows[row]
        used0, used1 = ssn.nonzero_used[row].tolist()[:2]  # Python floats: no numpy scalar per read
        nz = task.spec.nonzero
        total = 0.0
        a0, a1 = self.alloc2_rows[row]
        r0, r1 = int(used0 + nz[0]), int(used1 + nz[1])
        # cpu and memory written out (the per-resource formula twice): comprehensions over two
        # pairs cost more than the integer arithmetic, once per re-evaluated row and shape
        if self.least:
            p0 = 0 if a0 == 0 or r0 > a0 else ((a0 - r0) * MAX) // a0
            p1 = 0 if a1 == 0 or r1 > a1 else ((a1 - r1) * MAX) // a1
            total += ((p0 * 50 + p1 * 50) // 100) * self.least
        if self.most:
            p0 = 0 if a0 == 0 else (min(r0, a0) * MAX) // a0
            p1 = 0 if a1 == 0 else (min(r1, a1) * MAX) // a1
            total += ((p0 + p1) // 2) * self.most
        if self.balanced:
            total += self._balanced_row(task.spec.request_list, alloc_row, row) * self.balanced
        return total

    def _balanced_row(self, req: tuple[float, ...], alloc_row: list[float], row: int) -> int:
        """:meth:`_balanced` for one node: plain loops and running sums (generators for ``any`` and the
        std and a comprehension were most of the row scorer's cost), the same operations in the
        same order: ``min`` with 1.0, sums from 0.0 left to right as ``sum`` of floats adds, squares by
        ``** 2``."""
        cols = self.balanced_cols_list
        for c in cols:
            if req[c] > 0:
                break
        else:  # no balanced resource requested
            return 0
        used, pipelined = self.ssn.used[row].tolist(), self.ssn.pipelined[row].tolist()
        fractions = []
        total = 0.0
        for c in cols:
            a = alloc_row[c]
            if a > 0:
                f = (used[c] + pipelined[c] + req[c]) / a
                if f > 1.0:  # min(f, 1.0) takes 1.0 exactly when 1.0 < f
                    f = 1.0
                fractions.append(f)
                total += f
        k = len(fractions)
        if k < 2:
            return MAX
        mean = total / k
        squares = 0.0
        for f in fractions:
            squares += (f - mean) ** 2
        std: float = (squares / k) ** 0.5
        return math.floor((1 - std) * MAX)

    def _balanced(self, task: TaskInfo, rows: slice | np.ndarray, size: int) -> np.ndarray:
        ssn = self.ssn
        cols = self.balanced_cols
        req = task.spec.request[cols]
        if not np.any(req > 0):
            return np.zeros(size)
        # Column by column on 1-D arrays (reductions over a short axis 1 are slow in numpy);
        # the sums run left to right exactly like ``sum(axis=1)``.
        used = take(ssn.used, rows)
        pipelined = take(ssn.pipelined, rows)
        fractions, presents = [], []
        for j, c in enumerate(self.balanced_cols_list):
            present = self.present_b[:, j][rows]
            requested = used[:, c] + pipelined[:, c] + req[j]
            fractions.append(np.where(present, np.minimum(requested / self.denom_b[:, j][rows], 1.0), 0.0))
            presents.append(present)
        count = self.count_b[rows]
        divisor = np.maximum(count, 1)
        mean = np.where(count > 0, _left_sum(fractions) / divisor, 0.0)
        var = _left_sum([np.where(p, (f - mean) ** 2, 0.0) for f, p in zip(fractions, presents, strict=True)]) / divisor
        std = np.sqrt(var)
        # Two resources: |f1 - f2| / 2, which equals the population std; fewer than two: 0.
        std = np.where(count < 2, 0.0, std)
        scores: np.ndarray = np.floor((1 - std) * MAX)
        return scores

    # ------------------------------------------------------------------ normalised over candidates
    def _raw(self, task: TaskInfo) -> tuple[np.ndarray, np.ndarray, bool]:
        cached = self.static.get(task.spec.shape)
        if cached is not None:
            return cached
        index = node_index(self.ssn)
        placement = index.placement(task.spec)
        cached = self.by_placement.get(placement)
        if cached is None:
            cached = self.by_placement[placement] = self._placement_raw(task, index)
        self.static[task.spec.shape] = cached
        return cached

    def _placement_raw(self, task: TaskInfo, index: NodeIndex) -> tuple[np.ndarray, np.ndarray, bool]:
        """Preferred-affinity weights and intolerable PreferNoSchedule taint counts per node."""
        nodes = self.ssn.nodes
        n = len(nodes)
        affinity = np.zeros(n)
        for weight, term in task.spec.affinity.preferred:
            if weight:
                affinity += weight * term_mask(nodes, term, index)
        taints = np.zeros(n)
        for node_taints, rows in index.taint_groups():
            taints[rows] = sum(
                1 for t in node_taints if t.effect == "PreferNoSchedule" and not tolerated(task.spec.tolerations, t)
            )
        flat = not affinity.any() and not taints.any()
        return affinity, taints, flat

    def _normalised_scores(self, task: TaskInfo, rows: np.ndarray) -> Any:
        affinity, taints, flat = self._raw(task)
        if flat:  # no preferred terms, no PreferNoSchedule taints: the same score everywhere
            return float(MAX * self.taint)
        total = np.zeros(len(rows))
        if self.affinity:
            raw = affinity[rows]
            top = raw.max() if len(raw) else 0
            if top > 0:
                total += (raw * MAX // top) * self.affinity
        if self.taint:
            raw = taints[rows]
            top = raw.max() if len(raw) else 0
            total += (MAX - raw * MAX // top if top > 0 else np.full(len(rows), MAX)) * self.taint
        return total

    def on_session_close(self, ssn: Session) -> None:
        pass


def _left_sum(columns: list[np.ndarray]) -> np.ndarray:
    total = columns[0]
    for column in columns[1:]:
        total = total + column
    return total


def new(args: dict[str, Any]) -> NodeOrderPlugin:
    return NodeOrderPlugin(args)
