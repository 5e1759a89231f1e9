"""Hierarchical DRF for ``drf`` with ``enableHierarchy: true`` (volcano.md §6.5).

Queues sit on paths from the queue annotation ``volcano.sh/hierarchy`` (``root/eng/dev``)
with weights ``volcano.sh/hierarchy-weights`` (``1/2/8``, values below 1 count as 1); jobs
are the leaves. Bottom-up, a node's allocation is its children's, scaled so that every
unsaturated child counts at the smallest unsaturated dominant share; queues are ordered by
walking both paths from the root: unsaturated before saturated, then lower share/weight.
A queue without the annotation sits at ``root/<name>`` with its spec weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from member_agent.scheduler.framework.dims import Vector
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.session import Session
from member_agent.scheduler.framework.status import Vote
from member_agent.scheduler.plugins.drf_shares import DominantShares

HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"


@dataclass
class Node:
    name: str
    weight: float
    parent: "Node | None"
    request: Vector
    allocated: Vector
    children: dict[str, "Node"] = field(default_factory=dict)
    leaf: bool = False
    share: float = 0.0
    saturated: bool = False


class HierarchicalDrf:
    def __init__(self, ssn: Session, shares: DominantShares) -> None:
        self.ssn = ssn
        self.shares = shares
        zeros = ssn.dims.zeros()
        self.root = Node("root", 1.0, None, zeros.copy(), zeros.copy())
        self.leaves: dict[str, Node] = {}
        self.queue_paths: dict[str, list[Node]] = {}
        for job in ssn.jobs.values():
            parent = self._queue_node(job.queue)
            request = zeros.copy()
            for task in job.tasks:
                request += task.spec.request
            leaf = Node(job.uid, 1.0, parent, request, shares.allocated[job.uid].copy(), leaf=True)
            parent.children[job.uid] = leaf
            self.leaves[job.uid] = leaf
        self._update(self.root)

    def _queue_node(self, queue: str) -> Node:
        path = self.queue_paths.get(queue)
        if path is not None:
            return path[-1]
        spec = self.ssn.queues[queue]
        names = (spec.annotations.get(HIERARCHY) or f"root/{queue}").split("/")
        raw_weights = (spec.annotations.get(HIERARCHY_WEIGHTS) or f"1/{spec.weight}").split("/")
        zeros = self.ssn.dims.zeros()
        node, nodes = self.root, [self.root]
        for depth, name in enumerate(names[1:], start=1):
            try:
                weight = max(1.0, float(raw_weights[depth]))
            except (IndexError, ValueError):
                weight = 1.0
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name, weight, node, zeros.copy(), zeros.copy())
            node = child
            nodes.append(node)
        self.queue_paths[queue] = nodes
        return node

    # ------------------------------------------------------------------ share arithmetic
    def _update(self, node: Node) -> None:
        if node.leaf:
            self._update_leaf(node)
            return
        for child in node.children.values():
            self._update(child)
        self._update_internal(node)

    def _update_leaf(self, node: Node) -> None:
        total = self.shares.total
        demanding = self.root.allocated < total
        alloc, req = node.allocated, node.request
        node.share = self.shares.share_of(alloc)
        node.saturated = bool(
            np.any((alloc > 0) & (req > 0) & (alloc >= req)) or np.any((alloc > 0) & (req > 0) & ~demanding)
        )

    def _update_internal(self, node: Node) -> None:
        children = list(node.children.values())
        mdr = 1.0
        for child in children:
            if child.share > 0 and not child.saturated:
                mdr = min(mdr, child.share)
        allocated = np.zeros_like(node.allocated)
        for child in children:
            if child.share == 0:
                continue
            allocated += child.allocated if child.saturated else child.allocated * (mdr / child.share)
        node.allocated = allocated
        node.request = sum((c.request for c in children), np.zeros_like(node.request))
        node.share = self.shares.share_of(allocated)
        node.saturated = bool(children) and all(c.saturated for c in children)

    def update_job(self, job: JobInfo, allocated: Vector) -> None:
        leaf = self.leaves.get(job.uid)
        if leaf is None:
            return
        leaf.allocated = allocated.copy()
        self._update_leaf(leaf)
        node = leaf.parent
        while node is not None:
            self._update_internal(node)
            node = node.parent

    # ------------------------------------------------------------------ callbacks
    def compare(self, left: str, right: str) -> int:
        lpath, rpath = self.queue_paths.get(left), self.queue_paths.get(right)
        if lpath is None or rpath is None:
            return 0
        for ln, rn in zip(lpath[1:], rpath[1:], strict=False):
            if ln is rn:
                continue
            if ln.saturated != rn.saturated:
                return 1 if ln.saturated else -1
            ls, rs = ln.share / ln.weight, rn.share / rn.weight
            if ls != rs:
                return -1 if ls < rs else 1
        return 0

    def queue_order(self, left: str, right: str) -> int:
        return self.compare(left, right)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
        victims = []
        job = reclaimer.job
        self.update_job(job, self.shares.allocated[job.uid] + reclaimer.spec.request)
        try:
            for task in reclaimees:
                owner = task.job
                self.update_job(owner, self.shares.allocated[owner.uid] - task.spec.request)
                if self.compare(job.queue, owner.queue) < 0:
                    victims.append(task)
                self.update_job(owner, self.shares.allocated[owner.uid])
        finally:
            self.update_job(job, self.shares.allocated[job.uid])
        return victims, Vote.PERMIT
