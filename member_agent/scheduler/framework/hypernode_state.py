"""Per-session HyperNode accounting and the jobs' topology limits (volcano.md §2.2, §6.16).

:class:`HyperNodeState` keeps, for every HyperNode, the sums of its nodes' allocatable, used,
idle and FutureIdle, computed once when the session opens and then refreshed only for the
node rows the session touched since (``Session.changes``), so asking "does this domain still
have room?" costs O(HyperNodes), never a pass over the nodes. It also resolves each job's
network topology once: ``highestTierName`` to a tier, soft mode to hard at the top tier
(the virtual ``<cluster-top-hypernode>``), and gives the gradients (eligible HyperNodes
grouped by tier, lowest first) the allocate and gang-eviction actions search.

Only built when the snapshot has HyperNodes and the ``network-topology-aware`` plugin is
configured; otherwise ``ssn.shared`` has no entry and the actions take their flat path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from member_agent.scheduler.framework.hypernodes import HyperNodeTree
from member_agent.scheduler.framework.rows import selector

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo
    from member_agent.scheduler.framework.session import Session

KEY = "network-topology"
#: PodGroup annotation the scheduler writes with the HyperNode a job was placed in.
ALLOCATED_ANNOTATION = "volcano.sh/job-allocated-hypernode"


@dataclass(frozen=True)
class JobLimit:
    """A job's hard topology after the session's conversions."""

    tier: int  # highest tier allowed
    soft: bool  # written as soft (converted to hard at the top tier)
    error: str = ""  # the limit cannot be resolved (unknown tier name): the job waits


class HyperNodeState:
    def __init__(self, ssn: Session, tree: HyperNodeTree) -> None:
        self.ssn = ssn
        self.tree = tree
        n = len(ssn.node_names)
        h = len(tree.names)
        self.tiers = tree.tier_list
        #: (T, N): the HyperNode of each tier holding each row (-1: none), tiers ascending.
        self.chain = np.stack([tree.domain_of[t] for t in self.tiers]) if n else np.zeros((len(self.tiers), 0), int)
        #: Whether every tier's HyperNodes hold every node row (no -1 in ``chain``).
        self.covered = bool((self.chain >= 0).all())
        self._repeat: dict[int, np.ndarray] = {}  # k -> 0..k-1 once per tier (covered: the flat index)
        #: The same per tier below the top as Python lists (the LCA of a job's few rows).
        self.chain_lists: list[list[int]] = [level.tolist() for level in self.chain[:-1]]
        d = ssn.idle.shape[1] if n else len(ssn.dims)
        self.d = d
        #: Per row, [used | idle | FutureIdle] as last summed; per HyperNode their sums, side by side
        #: so one pass over the touched rows updates all three.
        self.row_values = np.concatenate([ssn.used, ssn.idle, ssn.idle + ssn.releasing - ssn.pipelined], axis=1)
        self.sums = self._sum(np.arange(n), self.row_values, h)
        self.allocatable = self._sum(np.arange(n), ssn.node_allocatable, h)
        self.pos = len(ssn.changes)
        #: Per tier, its HyperNodes as a slice of the HyperNode axis when they are contiguous
        #: (names sort by tier in the usual naming): a view instead of a gather per job.
        self.tier_span: dict[int, slice | np.ndarray] = {t: selector(tree.by_tier[t]) for t in self.tiers}
        self.limits: dict[str, JobLimit | None] = {}
        #: job uid -> the HyperNode it was placed in this session (written as the annotation).
        self.allocated: dict[str, str] = {}
        #: The plugin that scores HyperNodes (``hypernode_scores(cands, request)``), and its
        #: ``hypernode.gradient.evict.max-hypernodes``.
        self.scorer: Any = None
        self.evict_cap = 8
        #: request tuple -> [tasks of that request each row's FutureIdle holds, changes seen,
        #: their sum per HyperNode, the request's non-zero dims (row_values columns), its values there]
        self.room_memo: dict[tuple[float, ...], list[Any]] = {}
        self._columns: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, bool]] = {}
        #: (task shape, gang need, pending tasks) -> (need, whole, smallest) (allocate_topology._requests)
        self.request_memo: dict[tuple[int, int, int], tuple[np.ndarray, ...]] = {}

    @property
    def used(self) -> np.ndarray:
        return self.sums[:, :self.d]

    @property
    def idle(self) -> np.ndarray:
        return self.sums[:, self.d:2 * self.d]

    @property
    def future(self) -> np.ndarray:
        return self.sums[:, 2 * self.d:]

    @property
    def row_future(self) -> np.ndarray:
        return self.row_values[:, 2 * self.d:]

    def _sum(self, rows: np.ndarray, values: np.ndarray, h: int) -> np.ndarray:
        out = np.zeros((h, values.shape[1]))
        for tier_row in self.chain:
            doms = tier_row[rows]
            keep = doms >= 0
            for col in range(values.shape[1]):
                out[:, col] += np.bincount(doms[keep], weights=values[rows[keep], col], minlength=h)
        return out

    def refresh(self) -> None:
        """Bring the sums up to date with the rows touched since the last call."""
        changes = self.ssn.changes
        if self.pos == len(changes):
            return
        rows = touched(changes, self.pos)
        self.pos = len(changes)
        ssn = self.ssn
        idle = np.take(ssn.idle, rows, axis=0)
        current = np.concatenate([np.take(ssn.used, rows, axis=0), idle,
                                  idle + np.take(ssn.releasing, rows, axis=0) - np.take(ssn.pipelined, rows, axis=0)],
                                 axis=1)
        delta = current - self.row_values[rows]
        self.row_values[rows] = current
        self.add_rows(self.sums, rows, delta)

    def add_rows(self, sums: np.ndarray, rows: np.ndarray, delta: np.ndarray) -> None:
        """Add each row's ``delta`` to the HyperNode of every tier holding it: one scatter for
        all tiers (tier by tier, rows ascending: the order a per-tier sum would add them in)."""
        doms = self.chain[:, rows]
        if self.covered:  # every entry counts (no broadcasting: numpy 2.4's ufunc.at gets 1-D wrong)
            at = self._repeat.get(len(rows))
            if at is None:
                at = self._repeat[len(rows)] = np.tile(np.arange(len(rows)), len(doms))
            np.add.at(sums, doms.ravel(), delta[at])
            return
        levels, at = (doms >= 0).nonzero()
        np.add.at(sums, doms[levels, at], delta[at])

    def room(self, level: int, cands: np.ndarray, smallest: np.ndarray) -> np.ndarray:
        """Per candidate HyperNode of tier ``self.tiers[level]``: how many tasks of request
        ``smallest`` its nodes' FutureIdle holds (per node ``min_d floor(FutureIdle_d / request_d)``).
        Kept per request, per node row and summed per HyperNode, and updated only for the rows
        touched since the request was last asked about."""
        self.refresh()
        key = tuple(smallest.tolist())
        memo = self.room_memo.get(key)
        changes = self.ssn.changes
        future = self.row_future
        if memo is None:
            dims = np.flatnonzero(smallest >= 0.1)
            if len(dims) == 0:
                return np.full(len(cands), np.iinfo(np.int64).max)
            divisor = smallest[dims]
            per_row = _slots(future[:, dims], divisor)
            doms = self.chain
            keep = doms >= 0
            slots = np.bincount(doms[keep], weights=np.broadcast_to(per_row, doms.shape)[keep],
                                minlength=len(self.tree.names))
            memo = self.room_memo[key] = [per_row, len(changes), slots, 2 * self.d + dims, divisor]
        elif memo[1] != len(changes):
            rows = touched(changes, memo[1])
            fresh = _slots(self.row_values[rows[:, None], memo[3]], memo[4])
            self.add_rows(memo[2], rows, fresh - memo[0][rows])
            memo[0][rows] = fresh
            memo[1] = len(changes)
        held: np.ndarray = memo[2][cands]
        return held

    # ------------------------------------------------------------------ job limits
    def limit(self, job: JobInfo) -> JobLimit | None:
        """The job's hard limit, None when it has no network topology."""
        uid = job.uid
        if uid in self.limits:
            return self.limits[uid]
        found = self.limits[uid] = self._resolve(job.spec.network_topology)
        return found

    def _resolve(self, topology: Any) -> JobLimit | None:
        if not topology:
            return None
        tree = self.tree
        soft = str(topology.get("mode") or "hard") == "soft"
        if soft:
            return JobLimit(tree.top_tier, True)
        name = topology.get("highestTierName")
        if name:
            tier = tree.tier_of_name(str(name))
            if tier is None:
                known = sorted({t for t in tree.tier_names if t})
                return JobLimit(tree.top_tier, False, f"network topology: highestTierName {name!r} names no tier "
                                                      f"of this cluster's HyperNodes (known: {', '.join(known) or 'none'})")
            return JobLimit(tier, False)
        allowed = topology.get("highestTierAllowed")
        return JobLimit(min(int(allowed), tree.top_tier) if allowed is not None else tree.top_tier, False)

    # ------------------------------------------------------------------ gradients
    def placed_root(self, job: JobInfo, limit: JobLimit) -> int:
        """Where the job may still grow: the highest ancestor within its limit of the lowest
        HyperNode holding its placed tasks (the top when none is placed)."""
        rows = [t.node for t in job.tasks if t.node is not None and t.status.value & _PLACED]
        if not rows:
            return self.tree.top
        return self.tree.highest_allowed(self.lca_of_rows(rows), limit.tier)

    def lca_of_rows(self, rows: list[int]) -> int:
        """The lowest HyperNode holding every row (``HyperNodeTree.lca_of_rows`` on the session's
        (tier, row) matrix: one gather for all tiers; the top tier always holds them all)."""
        if not rows:
            return self.tree.top
        for level in self.chain_lists:  # a job's few rows: Python lists cost less than numpy calls
            first = level[rows[0]]
            if first >= 0 and all(level[r] == first for r in rows):
                return first
        return self.tree.top

    def gradients(self, job: JobInfo, limit: JobLimit, need: np.ndarray, evict: bool = False,
                  cap: int = 8) -> list[np.ndarray]:
        """Eligible HyperNodes per tier, lowest tier first (volcano.md §6.16): within the job's
        root, at most its allowed tier, and (for allocation, unless the job is partly placed)
        with ``need`` ≤ the domain's Idle or FutureIdle; for eviction ``need`` ≤ allocatable,
        widest tiers first, at most ``cap`` HyperNodes."""
        out = list(self.iter_gradients(job, limit, need, evict))
        if evict:
            out.reverse()
            flat: list[np.ndarray] = []
            left = cap
            for group in out:
                if left <= 0:
                    break
                flat.append(group[:left])
                left -= len(flat[-1])
            out = flat
        return out

    def iter_gradients(self, job: JobInfo, limit: JobLimit, need: np.ndarray,
                       evict: bool = False) -> Iterator[np.ndarray]:
        """:meth:`gradients` one tier at a time, lowest first (allocation stops at the first tier
        that holds the job, so the tiers above are never filtered). Resources are integers
        (milli-units, bytes), so a discarded dry run leaves the sums exactly as they were."""
        self.refresh()
        tree = self.tree
        root = self.placed_root(job, limit)
        partly = root != tree.top
        d = self.d
        need2: np.ndarray | None = None
        for tier in self.tiers:
            if tier > limit.tier:
                break
            cands = tree.by_tier[tier]
            if partly:
                root_tier = int(tree.tiers[root])
                if tier > root_tier:
                    break
                cands = np.asarray([root]) if tier == root_tier else cands[self._under(cands, root)]
            elif len(cands):
                if evict:
                    ok = (self.allocatable[cands] + 0.1 >= need).all(axis=1)
                else:
                    self.refresh()
                    if need2 is None:
                        need2 = np.concatenate([need, need])
                    # Idle and FutureIdle side by side: need fits either
                    fits = self.sums[self.tier_span[tier], d:] + 0.1 >= need2
                    ok = np.logical_or.reduce(np.logical_and.reduce(fits.reshape(len(fits), 2, d), axis=2), axis=1)
                cands = cands[ok]
            if len(cands):
                yield cands

    def _under(self, cands: np.ndarray, root: int) -> np.ndarray:
        parent = self.tree.parent
        mask = np.zeros(len(cands), dtype=bool)
        for i, h in enumerate(cands.tolist()):
            while h >= 0:
                if h == root:
                    mask[i] = True
                    break
                h = int(parent[h])
        return mask

    def binpack(self, cands: np.ndarray, request: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """HyperNode binpack: weighted mean of (used + request) / allocatable over the weighted
        resources the request asks for; 0 where any would overflow."""
        asked = request.tolist()
        weight_of = weights.tolist()
        wanted = [i for i, (r, w) in enumerate(zip(asked, weight_of, strict=True)) if r >= 0.1 and w > 0]
        total = float(sum(weights[i] for i in wanted))
        if not wanted or total == 0:
            return np.zeros(len(cands))
        cols, alloc_cols, usable_everywhere = self._binpack_columns(tuple(wanted))
        if len(wanted) >= 8:  # numpy sums 8 or more terms pairwise: the 2-D form keeps its order
            return self._binpack_2d(cands, request, weights, cols, alloc_cols, usable_everywhere, total)
        # One column at a time (a handful of resources): 2-D gathers and reductions along a short
        # second axis cost several times more than these 1-D passes. The terms are added left to
        # right, as ``sum(axis=1)`` adds fewer than 8 of them, so the scores are the same floats.
        sums = self.sums
        score: np.ndarray | None = None
        over: np.ndarray | None = None
        for j, col in enumerate(wanted):
            alloc = alloc_cols[:, j][cands]
            after = sums[:, col][cands] + asked[col]  # a column view, then a 1-D gather
            if usable_everywhere:
                ratio = after / alloc
            else:
                usable = alloc > 0
                ratio = np.where(usable, after / np.where(usable, alloc, 1.0), 0.0)
            term = ratio * weight_of[col]
            score = term if score is None else score + term
            full = after > alloc + 0.1
            over = full if over is None else over | full
        assert score is not None and over is not None
        score = score / total
        score[over] = 0.0
        return score

    def _binpack_2d(self, cands: np.ndarray, request: np.ndarray, weights: np.ndarray, cols: np.ndarray,
                    alloc_cols: np.ndarray, usable_everywhere: bool, total: float) -> np.ndarray:
        alloc = alloc_cols[cands]
        after = self.sums[cands[:, None], cols] + request[cols]
        ratio = after / alloc
        if not usable_everywhere:
            usable = alloc > 0
            ratio = np.where(usable, after / np.where(usable, alloc, 1.0), 0.0)
        score = (ratio * weights[cols]).sum(axis=1) / total
        score[(after > alloc + 0.1).any(axis=1)] = 0.0
        scores: np.ndarray = score
        return scores

    def _binpack_columns(self, wanted: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, bool]:
        """The columns, the HyperNodes' allocatable there (fixed for the session) and whether
        every HyperNode has some of each (so no division needs guarding)."""
        found = self._columns.get(wanted)
        if found is None:
            cols = np.asarray(wanted, dtype=np.int64)
            alloc = np.asfortranarray(self.allocatable[:, cols])  # column j contiguous: alloc[:, j]
            found = self._columns[wanted] = (cols, alloc, bool((alloc > 0).all()))
        return found


#: TaskStatus bits of tasks that hold a node (Allocated, Pipelined, Binding, Bound, Running).
_PLACED = 2 | 4 | 8 | 16 | 32


def _slots(future: np.ndarray, divisor: np.ndarray) -> np.ndarray:
    """Per row, how many requests of ``divisor`` its FutureIdle holds (≥ 0)."""
    held: np.ndarray = np.maximum(np.minimum.reduce(np.floor((future + 0.1) / divisor), axis=1), 0.0)
    return held


def touched(changes: list[int], since: int) -> np.ndarray:
    """The rows changed since position ``since`` of ``Session.changes``, sorted and unique
    (a few rows: a Python set costs less than ``np.unique``)."""
    return np.asarray(sorted(set(changes[since:])), dtype=np.int64)


def state_of(ssn: Session) -> HyperNodeState | None:
    found: HyperNodeState | None = ssn.shared.get(KEY)
    return found
