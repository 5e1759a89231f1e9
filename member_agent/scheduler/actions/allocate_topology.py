"""``allocate``'s hard-topology path: a gang goes into the lowest tier HyperNode it fits.

Volcano's ``allocateForJob`` (volcano.md §5.2): for each gradient (eligible HyperNodes of one
tier, lowest tier first, from :class:`HyperNodeState`), try the job in each HyperNode as a dry
run and keep the best-scoring one that makes the job ready or pipelined; else try the next
tier. The HyperNode score (binpack of the job's pending requests) is computed before any
dry run, so trying HyperNodes best score first and keeping the first that works gives the
same choice as trying them all — without the other dry runs. A HyperNode whose nodes cannot
hold as many of the job's tasks as the gang needs (counted per node for the job's smallest
request, one vectorised pass per job) is skipped without a dry run: it cannot succeed.

Soft mode arrives here converted to hard at the top tier, so a soft job tries a leaf, then a
spine, ..., then the whole cluster (the virtual top HyperNode, searched like the flat path).
A job that fits in no HyperNode of its allowed tiers stays Pending with a reason naming them.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING, Any

import numpy as np

from member_agent.scheduler.framework.fit_errors import reason_codes
from member_agent.scheduler.framework.hypernode_state import HyperNodeState, JobLimit
from member_agent.scheduler.framework.node_search import SMALL_ROWS, NodeSearch, ShapeCache, shape_cache
from member_agent.scheduler.framework.rows import unique_rows
from member_agent.scheduler.framework.statement import Statement
from member_agent.scheduler.framework.status import TaskStatus

if TYPE_CHECKING:
    from member_agent.scheduler.framework.infos import JobInfo, TaskInfo
    from member_agent.scheduler.framework.session import Session

S = TaskStatus


class Domain:
    """The node rows of one HyperNode, searched in full (a leaf or a spine is small)."""

    def __init__(self, name: str, rows: np.ndarray) -> None:
        self.name = name
        self.rows = rows
        self._listed: list[int] | None = None

    def feasible(self, ssn: Session, search: NodeSearch, task: TaskInfo) -> tuple[np.ndarray, str]:
        rows = self.rows
        cache = _domain_cache(ssn, task, self.name)
        if cache.missing:  # ShapeCache.ensure_rows without its np.unique: a domain's rows are sorted and unique
            if cache.missing == len(cache.stale):
                # The rows not current are the stale ones (the usual case once a shape has searched
                # the cluster): a leaf's or a spine's rows looked up in the set, no numpy call per pod.
                listed = self._listed
                if listed is None:
                    listed = self._listed = rows.tolist()
                stale = cache.stale
                few = [row for row in listed if row in stale]
                if len(few) > SMALL_ROWS:
                    cache._evaluate(ssn, task, np.array(few, dtype=np.int64))
                elif few:
                    cache._evaluate_few(ssn, task, few)
            else:
                missing = rows[~cache.evaluated[rows]]
                if len(missing):
                    cache._evaluate(ssn, task, missing)
        found = rows[cache.ok[rows]]
        if len(found):
            return found, ""
        codes = reason_codes(ssn, cache, rows, True, None)
        counts = Counter(codes[codes > 0].tolist())
        texts = ssn.reasons.texts
        parts = sorted(f"{k} {texts[c]}" for c, k in counts.items())
        return found, f"In hyperNode {self.name}: 0/{len(rows)} nodes are unavailable: {', '.join(parts)}."


#: A shape that has moved to this many domains is evaluated over every node row at once (one
#: vectorised pass: a template many gangs share); before, only the rows of the domains it searched
#: (a shape of one gang, which stays in one domain, never pays for the whole cluster).
WHOLE_AFTER = 4
VISITS = "topology-shape-visits"  # ssn.shared: shape -> [domains moved to, the last one]


def _domain_cache(ssn: Session, task: TaskInfo, domain: str) -> ShapeCache:
    """The shape's lazy cache for a domain search. Rows touched since the shape's last use are
    only marked not current (ShapeCache.refresh evaluates many of them again at once, which suits
    a search over the whole cluster; a domain search reads a leaf or a spine, so a touched row is
    evaluated again only if a later domain search reads it). Answers are the same: a cache entry
    is a function of the session's state, evaluated before it is read."""
    key = task.spec.shape
    cache = ssn.shape_caches.get(key)
    changes = ssn.changes
    if cache is not None and cache.pos < len(changes):
        evaluated, stale = cache.evaluated, cache.stale
        if len(changes) - cache.pos <= SMALL_ROWS:  # the previous pod's row: scalar code
            for row in set(changes[cache.pos:]):
                if evaluated[row]:
                    evaluated[row] = False
                    stale.add(row)
                    cache.missing += 1
        else:  # a shape's first use in a while (another job's gang): the same marks, vectorised
            rows = unique_rows(changes[cache.pos:], len(evaluated))
            rows = rows[evaluated[rows]]
            evaluated[rows] = False
            stale.update(rows.tolist())
            cache.missing += len(rows)
        cache.pos = len(changes)
    cache = shape_cache(ssn, task, lazy=True)  # current now: keeps the caches' use order
    visits = ssn.shared.setdefault(VISITS, {})
    seen = visits.get(key)
    if seen is None:
        seen = visits[key] = [0, ""]
    if seen[1] != domain:
        seen[0] += 1
        seen[1] = domain
        if seen[0] == WHOLE_AFTER and cache.missing > len(cache.stale):
            cache.ensure_all(ssn, task)
    return cache


def _requests(state: HyperNodeState, tasks: list[TaskInfo], gang_need: int) -> tuple[np.ndarray, ...]:
    """What the gang still needs, what all its pending tasks ask and their smallest request;
    kept per (task shape, gang need, pending count) when every pending task has one shape (the
    usual gang: one template), so jobs alike cost no numpy call here."""
    shape = tasks[0].spec.shape
    key = (shape, gang_need, len(tasks)) if all(t.spec.shape == shape for t in tasks) else None
    found = state.request_memo.get(key) if key is not None else None
    if found is None:
        requests = np.stack([t.spec.request for t in tasks])
        found = (requests[:gang_need].sum(axis=0), requests.sum(axis=0), requests.min(axis=0))
        if key is not None:
            state.request_memo[key] = found
    return found


def _room(state: HyperNodeState, level: int, cands: np.ndarray, smallest: np.ndarray) -> np.ndarray:
    """Per candidate HyperNode: how many tasks of request ``smallest`` its nodes' FutureIdle holds."""
    return state.room(level, cands, smallest)


def allocate_hard(action: Any, ssn: Session, search: NodeSearch, job: JobInfo, worksheet: deque[TaskInfo],
                  state: HyperNodeState, limit: JobLimit) -> Statement | None:
    """Place ``job`` inside one HyperNode of its lowest fitting tier; None when none fits."""
    if limit.error:
        job.job_fit_error = limit.error
        return None
    pending = list(worksheet)
    if not pending:
        return None
    gang_need = max(job.min_available - job.ready_num - job.waiting_num, 1)
    need, whole, smallest = _requests(state, pending, gang_need)
    tree = state.tree
    scorer = state.scorer
    tiers_seen: list[str] = []
    for group in state.iter_gradients(job, limit, need):
        tier = int(tree.tiers[group[0]])
        if tier == tree.top_tier:
            stmt = _try(action, ssn, search, job, worksheet, None)
            if stmt is not None:
                state.allocated[job.uid] = _home(state, job)
                return stmt
            tiers_seen.append(f"the whole cluster ({tree.names[tree.top]})")
            continue
        level = state.tiers.index(tier)
        room = _room(state, level, group, smallest)
        cands = group[room >= gang_need]
        if len(cands) > 1 and scorer is not None:
            scores = _tie_bonus(state, level, job, cands, scorer.hypernode_scores(cands, whole))
            cands = cands[np.argsort(-scores, kind="stable")]
        for h in cands.tolist():
            stmt = _try(action, ssn, search, job, worksheet, Domain(tree.names[h], tree.rows[h]))
            if stmt is not None:
                state.allocated[job.uid] = _home(state, job)
                return stmt
        total = len(tree.by_tier[tier])
        tiers_seen.append(f"{len(group)} of {total} tier-{tier} HyperNodes have the free resources, "
                          f"{len(cands)} the free nodes, none fits all {gang_need} tasks")
    job.job_fit_error = _reason(state, limit, gang_need, tiers_seen)
    return None


def _tie_bonus(state: HyperNodeState, level: int, job: JobInfo, cands: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """HyperNodes tied at the best score gain the share of the job's tasks already inside them
    (Volcano's HyperNodeOrderFn tie-break)."""
    best = scores == scores.max()
    if int(best.sum()) < 2:
        return scores
    rows = [t.node for t in job.tasks if t.node is not None and t.status.value & 62]
    if not rows:
        return scores
    doms = state.chain[level][np.asarray(rows, dtype=np.int64)]
    share = np.array([np.count_nonzero(doms == h) for h in cands.tolist()]) / len(job.tasks)
    return scores + np.where(best, share, 0.0)


def _try(action: Any, ssn: Session, search: NodeSearch, job: JobInfo, worksheet: deque[TaskInfo],
         domain: Domain | None) -> Statement | None:
    """One dry run of the job in ``domain`` (None: every node); kept when it works."""
    saved = set(job.roles_with_fit_errors)
    tasks = deque(worksheet)
    stmt: Statement | None = action._allocate_tasks(ssn, search, job, tasks, domain)
    if stmt is None:
        job.roles_with_fit_errors = saved
        return None
    worksheet.clear()
    worksheet.extend(tasks)
    return stmt


def _home(state: HyperNodeState, job: JobInfo) -> str:
    rows = [t.node for t in job.tasks if t.node is not None and t.status.value & 62]
    return state.tree.names[state.lca_of_rows(rows)]


def _reason(state: HyperNodeState, limit: JobLimit, gang_need: int, tiers_seen: list[str]) -> str:
    tree = state.tree
    allowed = [t for t in state.tiers if t <= limit.tier]
    mode = "soft" if limit.soft else "hard"
    lowest = allowed[0] if allowed else limit.tier
    if limit.tier >= tree.top_tier:
        scope = "no HyperNode, nor the whole cluster,"
    elif limit.tier == lowest:
        scope = f"no tier-{lowest} HyperNode"
    else:
        scope = f"no HyperNode of tier {lowest} to {limit.tier}"
    detail = "; ".join(tiers_seen) if tiers_seen else "; ".join(
        f"{len(tree.by_tier[t])} tier-{t} HyperNodes, none with the free resources" for t in allowed
        if t < tree.top_tier) or "no HyperNode has the free resources"
    return f"network topology ({mode}, highest tier {limit.tier}): {scope} fits the job's {gang_need} tasks: {detail}"
