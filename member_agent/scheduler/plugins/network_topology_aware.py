"""``network-topology-aware``: place gangs in the lowest network tier they fit (volcano.md §6.16).

When the session's snapshot has HyperNodes, opening the plugin builds the session's
:class:`HyperNodeState` (domain sums, job limits, gradients) that ``allocate`` and the gang
eviction actions search, and registers:

* a BATCH_NODE_ORDER score for tasks of a job with network topology that already has tasks
  placed: 1 on a node whose lowest HyperNode is the job's allocated HyperNode, else
  ``(maxTier − tier(LCA)) / (maxTier − minTier)`` (1 when there is one tier); and, with
  ``hypernode.binpack.normal-pod.enable``, for pods without topology:
  ``Σ_tier fading^(tier−1) × binpack(HyperNode of that tier holding the node, 1.0 if none) / Σ
  fading^(tier−1)``; both × 100 × ``weight``;
* the HyperNode order (``hypernode_scores``): HyperNode binpack of the job's pending requests
  with the ``hypernode.binpack.*`` weights, × 100 × ``weight``.

Without HyperNodes (or with none holding a node) it registers nothing: a session without
topology does no new work per job or pod. At close it reports the HyperNode each job was
placed in as the PodGroup annotation ``volcano.sh/job-allocated-hypernode``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from member_agent.scheduler.framework.arguments import Argument
from member_agent.scheduler.framework.hypernode_state import ALLOCATED_ANNOTATION, KEY, HyperNodeState
from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
from member_agent.scheduler.framework.interface import Point
from member_agent.scheduler.framework.session import Session

NAME = "network-topology-aware"
ARGUMENTS = (
    Argument("weight", int, 1),
    Argument("hypernode.binpack.cpu", int, 1),
    Argument("hypernode.binpack.memory", int, 1),
    Argument("hypernode.binpack.resources", str, ""),
    Argument("hypernode.binpack.normal-pod.enable", bool, True),
    Argument("hypernode.binpack.normal-pod.fading", float, 0.8),
    Argument("hypernode.gradient.evict.max-hypernodes", int, 8),
)
PREFIXED = {"hypernode.binpack.resources.": int}
MAX_SCORE = 100.0
#: ssn.shared key of the PodGroup annotations the session writes (close copies them out).
POD_GROUP_ANNOTATIONS = "pod-group-annotations"


class NetworkTopologyAwarePlugin:
    name = NAME

    def __init__(self, args: dict[str, Any]) -> None:
        self.weight = int(args["weight"])
        self.resource_weights: dict[str, int] = {"cpu": max(int(args["hypernode.binpack.cpu"]), 0),
                                                 "memory": max(int(args["hypernode.binpack.memory"]), 0)}
        for name in (n.strip() for n in str(args["hypernode.binpack.resources"]).split(",")):
            if name:
                self.resource_weights[name] = max(int(args.get(f"hypernode.binpack.resources.{name}", 1)), 0)
        self.normal_pods = bool(args["hypernode.binpack.normal-pod.enable"])
        fading = float(args["hypernode.binpack.normal-pod.fading"])
        self.fading = fading if fading >= 0 else 0.8
        cap = int(args["hypernode.gradient.evict.max-hypernodes"])
        self.evict_cap = cap if cap > 0 else 8
        self.state: HyperNodeState | None = None
        self._homes: dict[str, tuple[int, int | None]] = {}

    def on_session_open(self, ssn: Session) -> None:
        tree = ssn.snapshot.topology
        if tree is None or not tree.real:
            return
        self.ssn = ssn
        self.state = state = HyperNodeState(ssn, tree)
        state.evict_cap = self.evict_cap
        state.scorer = self
        ssn.shared[KEY] = state
        self._leaf_of: list[int] = state.chain[0].tolist()  # each row's lowest-tier HyperNode
        self._tier_array = np.asarray(state.tiers, dtype=np.int64)
        self._ancestors: dict[int, np.ndarray] = {}
        self.weights = np.zeros(len(ssn.dims))
        for name, weight in self.resource_weights.items():
            i = ssn.dims.index.get(name)
            if i is not None:
                self.weights[i] = weight
        if self.weight:
            ssn.add(Point.BATCH_NODE_ORDER, NAME, self._node_scores)

    # ------------------------------------------------------------------ HyperNode order
    def hypernode_scores(self, cands: np.ndarray, request: np.ndarray) -> np.ndarray:
        """HyperNodeOrderFn: binpack of ``request`` (the job's pending requests) per HyperNode."""
        assert self.state is not None
        return self.state.binpack(cands, request, self.weights) * (MAX_SCORE * self.weight)

    # ------------------------------------------------------------------ node order
    def _node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        state = self.state
        assert state is not None
        job = task.job
        if state.limit(job) is not None:
            return self._closeness(state, job, rows)
        if not self.normal_pods:
            return np.zeros(len(rows))
        return self._normal_pod(state, task, rows)

    def _closeness(self, state: HyperNodeState, job: JobInfo, rows: np.ndarray) -> np.ndarray:
        # One lowest domain (a leaf's rows, the usual case): the same score everywhere ranks
        # nothing. Checked in Python: a few rows, where numpy's per-call cost dominates.
        leaf_of = self._leaf_of
        listed = rows.tolist()
        first = leaf_of[listed[0]] if listed else -1
        for r in listed:  # a plain loop: all() over a generator costs more for these few rows
            if leaf_of[r] != first:
                break
        else:
            return np.zeros(len(listed))
        home = self._home(state, job)
        if home is None:
            return np.zeros(len(rows))
        tiers = state.tiers
        doms = state.chain[:, rows]  # (levels, rows): each row's HyperNode per tier, lowest first
        # the LCA of a row and the home: the lowest level where the row's HyperNode is the home's
        # ancestor (the virtual top always is)
        lca_tier = self._tier_array[(doms == self._ancestor_column(state, home)).argmax(axis=0)]
        lo, hi = tiers[0], tiers[-1]
        score = np.ones(len(rows)) if hi == lo else (hi - lca_tier) / (hi - lo)
        score[doms[0] == home] = 1.0
        return score * (MAX_SCORE * self.weight)

    def _ancestor_column(self, state: HyperNodeState, home: int) -> np.ndarray:
        """Per level, the home's ancestor of that tier (-2, matching no row, below the home's
        tier or where its chain skips the tier), as a column against ``chain[:, rows]``."""
        found = self._ancestors.get(home)
        if found is None:
            tree = state.tree
            home_tier = int(tree.tiers[home])
            by_tier = {int(tree.tiers[a]): a for a in tree.ancestors(home)}
            found = np.asarray([by_tier.get(t, -2) if t >= home_tier else -2 for t in state.tiers],
                               dtype=np.int64)[:, None]
            self._ancestors[home] = found
        return found

    def _home(self, state: HyperNodeState, job: JobInfo) -> int | None:
        """The lowest HyperNode holding the job's placed tasks (kept per job until its tasks change)."""
        memo = self._homes.get(job.uid)
        if memo is not None and memo[0] == job.status_changes:
            return memo[1]
        placed = [t.node for t in job.tasks if t.node is not None and t.status.value & 62]
        home = state.lca_of_rows(placed) if placed else None
        self._homes[job.uid] = (job.status_changes, home)
        return home

    def _normal_pod(self, state: HyperNodeState, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        state.refresh()
        total = np.zeros(len(rows))
        weight_sum = 0.0
        for level, tier in enumerate(state.tiers[:-1]):
            fade = self.fading ** (tier - 1)
            doms = state.chain[level][rows]
            part = np.ones(len(rows))
            inside = doms >= 0
            if inside.any():
                part[inside] = state.binpack(doms[inside], task.spec.request, self.weights)
            total += fade * part
            weight_sum += fade
        if weight_sum == 0:
            return total
        return total / weight_sum * (MAX_SCORE * self.weight)

    def on_session_close(self, ssn: Session) -> None:
        state = self.state
        if state is None or not state.allocated:
            return
        out = ssn.shared.setdefault(POD_GROUP_ANNOTATIONS, {})
        for uid, hypernode in state.allocated.items():
            out.setdefault(uid, {})[ALLOCATED_ANNOTATION] = hypernode


def new(args: dict[str, Any]) -> NetworkTopologyAwarePlugin:
    return NetworkTopologyAwarePlugin(args)
