"""``place(request) -> PlacementDecision``: filter → estimate → divide → verify.

Each ``clusterAffinities`` term is tried in order (from the one the binding last observed),
falling through to the next when a step fails. Within a term:

1. **filter** removes clusters that are deleting, do not match the affinity, carry an
   untolerated taint (readiness included) or lack a field a spread constraint needs; then
   (after estimating) spreadConstraints select among the rest;
2. **estimate** computes, per candidate, the pods of each task shape that fit and the job's
   availability (see :mod:`federation.placement.estimate`);
3. **divide** runs Karmada's strategy (:mod:`federation.placement.strategies`) and turns the
   totals into per-task sub-jobs (:mod:`federation.placement.gang`);
4. **verify** checks every share with the exact gang-set estimate. If one fails, the MILP
   (:mod:`federation.placement.optimizer`) finds the feasible division closest to Karmada's,
   adding a cap on each cluster that still fails and solving again, a bounded number of times.

Work that depends only on the cluster snapshot is cached in the :class:`Placer`: the numpy
table and per-shape estimates (per snapshot), filter results (per snapshot and placement,
valid until the next readiness boundary) and optimizer answers (per problem).
"""

from __future__ import annotations

from federation.placement.decision import ClusterDiagnosis, Failure, PlacementDecision
from federation.placement.filter import FilterResult, filter_clusters
from federation.placement.fleet_domains import DomainCache
from federation.placement.fleet_topology import place_with_topology
from federation.placement.optimize_step import optimize
from federation.placement.optimizer import Optimizer
from federation.placement.preemption import PreemptionViews, place_with_preemption
from federation.placement.request import ClusterAffinity, ClusterState, PlacementRequest
from federation.placement.spread import SelectionError, select_clusters
from federation.placement.strategies import (
    CHECKS_CAPACITY_IN_SELECTION,
    DIVIDERS,
    USES_SPREAD,
    DivideInput,
    Unschedulable,
    static_votes,
)
from federation.placement.table import ClusterTable, TableCache
from federation.placement.term import Term, fmt_split
from policies.lru import LRU

STRATEGY_LABELS = {
    "Duplicated": "Duplicated",
    "StaticWeight": "Divided/Weighted(staticWeightList)",
    "DynamicWeight": "Divided/Weighted(dynamicWeight: AvailableReplicas)",
    "Aggregated": "Divided/Aggregated",
}


def run_term(placer: "Placer", request: PlacementRequest, table: ClusterTable,
             affinity: ClusterAffinity) -> PlacementDecision:
    term = Term(request, table, affinity, STRATEGY_LABELS[request.spec.strategy])
    job, spec = request.job, request.spec
    if job.replicas <= 0:
        return term.fail("divide", f"job {job.ref} has no replicas", "SchedulerError")
    previous = frozenset(c.name for c in request.previous.clusters)
    filtered = placer.filtered(request, table, affinity, previous)
    term.excluded = {n: ("filter", why) for n, why in filtered.excluded.items()}
    term.notes = dict(filtered.notes)
    if not filtered.candidates:
        return term.fail("filter", "no cluster fits: " + term.why_excluded(), "NoClusterFit")
    # ---- estimate
    avail = term.estimate(filtered.candidates)
    # Karmada's AvailableReplicas: the estimate plus the replicas the job already has there
    # (the cluster's usage counts them). Order: score desc (ClusterLocality: 100 when already
    # holding the job), AvailableReplicas desc, name asc; ``avail`` is in name order and
    # Python's sort is stable even when reversed.
    assigned = {c.name: c.replicas for c in request.previous.clusters}
    available = {n: a + assigned.get(n, 0) for n, a in avail.items()}
    by_avail = sorted(available, key=available.__getitem__, reverse=True)
    ordered = [n for n in by_avail if n in previous] + [n for n in by_avail if n not in previous]
    selected = ordered
    if spec.strategy in USES_SPREAD and spec.spread:
        need = job.replicas if spec.strategy in CHECKS_CAPACITY_IN_SELECTION else None
        try:
            selected = select_clusters(ordered, table.by_name, available, spec.spread, need)
        except SelectionError as err:
            return term.fail("filter", f"spreadConstraints: {err}", "NoClusterFit")
        for name in ordered:
            if name not in selected:
                term.excluded[name] = ("filter", "not selected by spreadConstraints")
    # ---- divide
    names = tuple(selected)
    votes: dict[str, int] = {}
    if spec.strategy == "StaticWeight":
        votes = static_votes([table.by_name[n] for n in names], spec.static_weights)
        for name in names:
            if name not in votes:
                term.excluded[name] = ("divide", "no staticWeightList rule matches (weight 0)")
        names = tuple(n for n in names if n in votes)
    term.weights = dict(votes) if votes else {n: float(avail[n]) for n in names}
    if spec.strategy == "Duplicated":
        return term.duplicated(names)
    inp = DivideInput(job.replicas, job.uid, names, {n: avail[n] for n in names},
                      tuple((c.name, c.replicas) for c in request.previous.clusters), request.previous.fresh, votes)
    try:
        karmada: dict[str, int] | None = DIVIDERS[spec.strategy](inp)
        error = ""
    except Unschedulable as err:
        if len(job.tasks) == 1:
            return term.fail("divide", f"{err} ({term.capacities(names)})")
        karmada, error = None, str(err)
    if karmada is not None:
        term.karmada = karmada
        split = term.split(karmada)
        bad = term.verify(split)
        if not bad:
            return term.succeed(split, "karmada", f"Karmada's split {fmt_split(karmada)} fits every cluster")
        error = "; ".join(f"{c}: {why}" for c, (_, why) in sorted(bad.items()))
        target = {n: float(karmada.get(n, 0)) for n in names}
    else:
        total = sum(term.weights.values()) or 1.0
        target = {n: job.replicas * term.weights[n] / total for n in names}
    # ---- verify failed: the optimizer
    return optimize(term, placer.optimizer, names, target, f"Karmada's split does not fit ({error})")


class Placer:
    """Holds the caches (cluster tables, filter results, optimizer answers); otherwise stateless."""

    def __init__(self, filter_cache_size: int = 256) -> None:
        self.tables = TableCache()
        self.optimizer = Optimizer()
        self.preemption = PreemptionViews()
        self._filters: LRU[tuple[object, ...], tuple[ClusterTable, FilterResult]] = LRU(filter_cache_size)
        self.domains = DomainCache()  # every reported network domain, per snapshot (fleet_domains)
        self._views: Placer | None = None  # places one cluster seen as one domain (own caches)

    def filtered(self, request: PlacementRequest, table: ClusterTable, affinity: ClusterAffinity,
                 previous: frozenset[str]) -> FilterResult:
        spec = request.spec
        key = (id(table), affinity, spec.tolerations, spec.spread, previous, request.options)
        hit = self._filters.get(key)
        if hit is not None and hit[0] is table and hit[1].valid_from <= request.now < hit[1].valid_until:
            return hit[1]
        result = filter_clusters(request.clusters, affinity, spec.tolerations, spec.spread, previous,
                                 request.now, request.options)
        self._filters.put(key, (table, result))
        return result

    def place(self, request: PlacementRequest) -> PlacementDecision:
        """Place under the job's network topology (:mod:`federation.placement.fleet_topology`),
        which places a job without one exactly as :meth:`place_plain` does."""
        if request.job.topology is None:
            return self.place_plain(request)
        if self._views is None:
            self._views = Placer()
        return place_with_topology(request, self.place_plain, self._views.place_plain, self.domains,
                                   self.filtered_names(request))

    def filtered_names(self, request: PlacementRequest) -> dict[str, str]:
        """Clusters some ``clusterAffinities`` term's filter keeps -> "", and the others -> why not."""
        table = self.tables.get(request.clusters)
        previous = frozenset(c.name for c in request.previous.clusters)
        kept: dict[str, str] = {}
        excluded: dict[str, str] = {}
        for affinity in request.spec.affinities or (ClusterAffinity(),):
            result = self.filtered(request, table, affinity, previous)
            kept.update((c.name, "") for c in result.candidates)
            excluded.update(result.excluded)
        return {**{n: why for n, why in excluded.items() if n not in kept}, **kept}

    def place_plain(self, request: PlacementRequest) -> PlacementDecision:
        """Place on free capacity; if the job fits nowhere and may preempt, on what preemption
        of lower-priority pods would free (:mod:`federation.placement.preemption`)."""
        return place_with_preemption(request, self.place_on_free(request), self.preemption, self.place_on_free)

    def place_on_free(self, request: PlacementRequest) -> PlacementDecision:
        table = self.tables.get(request.clusters)
        terms = request.spec.affinities or (ClusterAffinity(),)
        start = next((i for i, t in enumerate(terms) if t.name and t.name == request.previous.affinity_name), 0)
        attempts: list[PlacementDecision] = []
        for affinity in terms[start:]:
            decision = run_term(self, request, table, affinity)
            if decision.ok:
                if attempts:
                    skipped = "; ".join(f"{a.affinity_name or '#'}: {a.reason}" for a in attempts)
                    decision.reason += f" (earlier clusterAffinities failed: {skipped})"
                return decision
            attempts.append(decision)
        last = attempts[-1]
        if len(attempts) > 1:
            assert last.failure is not None
            combined = "; ".join(f"clusterAffinities[{a.affinity_name}] {a.reason}" for a in attempts)
            last.failure = Failure(last.failure.step, combined, last.failure.condition)
            last.reason = combined
        return last


_DEFAULT = Placer()


def place(request: PlacementRequest, placer: Placer | None = None) -> PlacementDecision:
    """Place one job; deterministic for a given request."""
    return (placer or _DEFAULT).place(request)


__all__ = ["Placer", "place", "fmt_split", "ClusterDiagnosis", "ClusterState", "STRATEGY_LABELS"]
