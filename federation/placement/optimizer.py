"""The gang-aware fallback: the feasible division closest to the strategy's target (MILP).

Variables, for tasks t and clusters c: integer ``x[t,c]`` (replicas of t on c), binary
``y[c]`` (c is used) and continuous ``d[c] >= |sum_t x[t,c] - target[c]|``.

    minimise   sum_c d[c] + penalty * sum_c y[c] + eps * sum_c rank[c] * sum_t x[t,c]
    subject to sum_c x[t,c] = replicas[t]             every task placed exactly
               x[t,c] <= replicas[t] * y[c]            only on used clusters
               x[t,c] <= estimate[t,c]                 exact single-shape capacity
               sum_t demand[t,r] x[t,c] <= free[c,r]   summed resources (several tasks only)
               sum_t x[t,c] <= cap[c]                  cuts added after a failed verification
               groups_min <= sum_c y[c] <= groups_max  cluster spread constraint, if any

``penalty`` (below 1 by default) breaks ties towards fewer clusters; the ``eps`` term, ranked
by the strategy's preference, makes the answer unique and so deterministic. Every variable
is bounded (HiGHS can fail on unbounded auxiliaries), the relative gap is 0, and the status
is checked on every call; a solver error is retried once without presolve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from policies.lru import LRU


@dataclass(frozen=True)
class Problem:
    tasks: tuple[str, ...]
    replicas: tuple[int, ...]
    clusters: tuple[str, ...]  # in preference order
    target: tuple[float, ...]
    estimate: tuple[tuple[int, ...], ...]  # [t][c]
    demand: tuple[tuple[float, ...], ...] = ()  # [t][r], only with several tasks
    free: tuple[tuple[float, ...], ...] = ()  # [c][r]
    caps: tuple[tuple[int, int], ...] = ()  # (cluster index, max pods)
    groups: tuple[int, int] = (0, 0)  # (min, max) clusters used; max 0 means unbounded
    penalty: float = 0.5
    time_limit: float = 1.0


@dataclass(frozen=True)
class Solution:
    status: int
    message: str
    x: tuple[tuple[int, ...], ...] | None  # [t][c]
    distance: float = 0.0
    optimal: bool = False


def _solve(p: Problem, presolve: bool) -> Solution:
    T, C = len(p.tasks), len(p.clusters)
    nx = T * C
    n = nx + 2 * C  # x, y, d
    R = sum(p.replicas)
    eps = 0.1 / (R * C + 1)
    cost = np.zeros(n)
    rank = np.arange(C, dtype=float) / max(C, 1)
    cost[:nx] = eps * np.tile(rank, T)
    cost[nx:nx + C] = p.penalty
    cost[nx + C:] = 1.0
    est = np.array(p.estimate, dtype=float).reshape(T, C)
    upper = np.concatenate([np.minimum(est, np.array(p.replicas, dtype=float)[:, None]).ravel(),
                            np.ones(C), np.full(C, float(R) + max(p.target, default=0.0))])
    bounds = Bounds(np.zeros(n), upper)
    integrality = np.concatenate([np.ones(nx), np.ones(C), np.zeros(C)])

    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(entries: list[tuple[int, float]], low: float, high: float) -> None:
        r = len(lo)
        for col, val in entries:
            rows.append(r)
            cols.append(col)
            vals.append(val)
        lo.append(low)
        hi.append(high)

    def xi(t: int, c: int) -> int:
        return t * C + c
    for t in range(T):
        row([(xi(t, c), 1.0) for c in range(C)], p.replicas[t], p.replicas[t])
        for c in range(C):
            row([(xi(t, c), 1.0), (nx + c, -float(p.replicas[t]))], -np.inf, 0.0)
    for c in range(C):
        pods = [(xi(t, c), 1.0) for t in range(T)]
        row([(nx + C + c, 1.0)] + [(i, -v) for i, v in pods], -p.target[c], np.inf)
        row([(nx + C + c, 1.0)] + pods, p.target[c], np.inf)
    for c, cap in p.caps:
        row([(xi(t, c), 1.0) for t in range(T)], -np.inf, cap)
    if p.demand:
        for c in range(C):
            for r in range(len(p.demand[0])):
                entries = [(xi(t, c), p.demand[t][r]) for t in range(T) if p.demand[t][r] > 0]
                if entries:
                    row(entries, -np.inf, p.free[c][r])
    gmin, gmax = p.groups
    if gmin > 1 or gmax > 0:
        row([(nx + c, 1.0) for c in range(C)], float(gmin), float(gmax) if gmax > 0 else float(C))
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), n)).tocsr()
    result = milp(cost, constraints=LinearConstraint(matrix, lo, hi), integrality=integrality, bounds=bounds,
                  options={"time_limit": p.time_limit, "mip_rel_gap": 0.0, "presolve": presolve})
    if result.x is None or result.status not in (0, 1):
        return Solution(int(result.status), str(result.message), None)
    x = np.rint(result.x[:nx]).astype(int).reshape(T, C)
    totals = x.sum(axis=0)
    distance = float(np.abs(totals - np.array(p.target)).sum())
    return Solution(int(result.status), str(result.message), tuple(tuple(int(v) for v in r) for r in x),
                    distance, result.status == 0)


class Optimizer:
    """Solves :class:`Problem` instances, caching answers by problem (LRU)."""

    def __init__(self, size: int = 4096) -> None:
        self._cache: LRU[Problem, Solution] = LRU(size)
        self.calls = 0
        self.hits = 0

    def solve(self, problem: Problem) -> tuple[Solution, bool]:
        """The solution and whether it came from the cache."""
        cached = self._cache.get(problem)
        if cached is not None:
            self.hits += 1
            return cached, True
        self.calls += 1
        solution = _solve(problem, presolve=True)
        if solution.x is None and solution.status == 4:  # HiGHS "solve error": retry once
            solution = _solve(problem, presolve=False)
        self._cache.put(problem, solution)
        return solution, False
