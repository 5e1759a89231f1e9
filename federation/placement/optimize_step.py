"""The optimizer step of :mod:`federation.placement.place`: build the MILP, verify, cut, repeat.

The model is pruned before solving: clusters with a target keep their place, and of the
others only those with the most room (in preference order) until the kept room is twice
the job. For one task shape this keeps the optimum (the deficit costs 1 per replica wherever
it goes, and the fewest extra clusters are the roomiest); ties may resolve differently than
in the full model. If the pruned model is infeasible the full one is solved.
"""

from __future__ import annotations

from federation.placement.decision import PlacementDecision
from federation.placement.gang import TaskSplit
from federation.placement.optimizer import Optimizer, Problem, Solution
from federation.placement.strategies import USES_SPREAD
from federation.placement.term import Term, fmt_split


def _prune(term: Term, order: list[str], target: dict[str, float]) -> list[str]:
    job = term.job
    room = {n: sum(min(term.capacity(t.name, n), t.replicas) for t in job.tasks) for n in order}
    kept = [n for n in order if target[n] > 0 and room[n] > 0]
    total = sum(room[n] for n in kept)
    extras = sorted((n for n in order if n not in kept and room[n] > 0), key=lambda n: -room[n])
    for n in extras:
        if total >= 2 * job.replicas:
            break
        kept.append(n)
        total += room[n]
    return [n for n in order if n in kept]


def _problem(term: Term, order: list[str], target: dict[str, float], caps: list[tuple[str, int]],
             groups: tuple[int, int]) -> Problem:
    tasks, opts = term.job.tasks, term.request.options
    multi = len(tasks) > 1
    resources = sorted({r for t in tasks for r, v in t.request if v > 0}) if multi else []
    return Problem(
        tasks=tuple(t.name for t in tasks),
        replicas=tuple(t.replicas for t in tasks),
        clusters=tuple(order),
        target=tuple(target[n] for n in order),
        estimate=tuple(tuple(term.capacity(t.name, n) for n in order) for t in tasks),
        demand=tuple(tuple(dict(t.request).get(r, 0.0) for r in resources) for t in tasks) if multi else (),
        free=tuple(_free(term, n, resources) for n in order) if multi else (),
        caps=tuple((order.index(c), cap) for c, cap in caps if c in order),
        groups=groups, penalty=opts.cluster_penalty, time_limit=opts.time_limit,
    )


def _free(term: Term, name: str, resources: list[str]) -> tuple[float, ...]:
    """Summed free amount per resource on a cluster (after assumed work), for the MILP's rows."""
    groups = term.table.cluster_groups(name, term.request.assumed)
    out = []
    for r in resources:
        if groups is not None:
            col = groups.index.get(r)
            out.append(float((groups.free[:, col].clip(0) * groups.counts).sum()) if col is not None else 0.0)
            continue
        summary = term.table.summary_after(name, term.request.assumed).summary
        if summary is None:
            out.append(0.0)
            continue
        alloc = dict(summary.allocatable)
        if r not in alloc:
            out.append(float("inf") if r == "pods" else 0.0)
            continue
        out.append(max(alloc[r] - dict(summary.allocated).get(r, 0.0) - dict(summary.allocating).get(r, 0.0), 0.0))
    held = term.held.get(name, {})
    if held:  # the job's own pods there free their resources for the job itself
        for task in term.job.tasks:
            request = dict(task.request)
            out = [v + held.get(task.name, 0) * request.get(r, 0.0) for v, r in zip(out, resources, strict=True)]
    return tuple(min(v, 1e15) for v in out)


def optimize(term: Term, optimizer: Optimizer, names: tuple[str, ...], target: dict[str, float],
             why: str) -> PlacementDecision:
    job, opts = term.job, term.request.options
    for t in job.tasks:  # cheap exact bound first: the MILP would only confirm it
        room = sum(term.capacity(t.name, n) for n in names)
        if room < t.replicas:
            return term.fail("divide", f"{why}; capacity is short: {room} {t.name} pods fit in all "
                             f"candidates, {t.replicas} needed ({term.capacities(names)})")
    order = sorted(names, key=lambda n: (-target[n], n))  # preference, for the tie-break
    groups = (0, 0)
    rule = next((s for s in term.request.spec.spread if s.spread_by_field == "cluster"), None)
    if rule is not None and term.strategy in USES_SPREAD:
        groups = (rule.min_groups, rule.max_groups)
    pruned = _prune(term, order, target)
    caps: list[tuple[str, int]] = []
    cuts = 0
    while True:
        solution, cached = optimizer.solve(_problem(term, pruned, target, caps, groups))
        model = pruned
        if solution.x is None and len(pruned) < len(order):
            solution, cached = optimizer.solve(_problem(term, order, target, caps, groups))
            model = order
        term.decision.optimizer = {"status": solution.status, "message": solution.message, "cuts": cuts,
                                   "cached": cached, "distance": solution.distance, "clusters": len(model)}
        if solution.x is None:
            return term.fail("divide", f"{why}; no feasible gang division either "
                             f"(solver status {solution.status}: {solution.message}; {term.capacities(names)})")
        split = _split(term, model, solution)
        bad = term.verify(split)
        if not bad:
            totals = {n: sum(p.values()) for n, p in split.items()}
            limit = "" if solution.optimal else ", best found within the time limit"
            return term.succeed(split, "optimizer", f"{why}; optimizer chose {fmt_split(totals)}, distance "
                                f"{solution.distance:g} from the target{limit}")
        if cuts >= opts.max_cuts:
            detail = "; ".join(f"{c}: {w}" for c, (_, w) in sorted(bad.items()))
            return term.fail("verify", f"{why}; optimizer's answer still does not fit after {cuts} cuts ({detail})")
        for cluster, (placed, _) in bad.items():
            caps.append((cluster, min(placed, sum(split[cluster].values()) - 1)))
        cuts += 1


def _split(term: Term, model: list[str], solution: Solution) -> TaskSplit:
    assert solution.x is not None
    split: TaskSplit = {}
    for c, name in enumerate(model):
        per_task = {t.name: solution.x[i][c] for i, t in enumerate(term.job.tasks) if solution.x[i][c] > 0}
        if per_task:
            split[name] = per_task
    return split
