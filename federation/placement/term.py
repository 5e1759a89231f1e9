"""One affinity term's placement in progress: compact per-cluster records, turned into the
decision (and, only when someone asks, into the per-cluster diagnosis)."""

from __future__ import annotations

import numpy as np

from federation.placement.decision import ClusterDiagnosis, Failure, PlacementDecision
from federation.placement.estimate import MAX_SETS
from federation.placement.gang import TaskSplit, components, shares_from_split, split_tasks, verify_share
from federation.placement.request import ClusterAffinity, ClusterState, PlacementRequest
from federation.placement.table import ClusterTable


def held_replicas(request: PlacementRequest, table: ClusterTable) -> dict[str, dict[str, int]]:
    """Per cluster and task, the replicas the previous assignment put there (clusters still known).

    The binding's ``components`` give the per-task layout; without them a single-task job holds
    its replicas in that task, and a multi-task one is split the way Caldera fills shares.
    """
    previous = [c for c in request.previous.clusters if c.replicas > 0 and c.name in table.by_name]
    if not previous:
        return {}
    out = {c.name: {t: n for t, n in c.tasks if n > 0} for c in previous if c.tasks}
    rest = {c.name: c.replicas for c in previous if not c.tasks}
    if rest:
        if len(request.job.tasks) == 1:
            out.update({name: {request.job.tasks[0].name: n} for name, n in rest.items()})
        else:
            out.update(split_tasks(request.job, rest))
    return out


def fmt_split(split: dict[str, int]) -> str:
    return "{" + ", ".join(f"{c}: {n}" for c, n in sorted(split.items())) + "}"


class Term:
    def __init__(self, request: PlacementRequest, table: ClusterTable, affinity: ClusterAffinity,
                 strategy_label: str) -> None:
        self.request, self.table, self.affinity = request, table, affinity
        self.job = request.job
        self.strategy = request.spec.strategy
        self.decision = PlacementDecision(self.job.ref, strategy_label, {}, "", affinity_name=affinity.name,
                                          explain=self.explain)
        self.excluded: dict[str, tuple[str, str]] = {}  # name -> (step, reason)
        self.notes: dict[str, str] = {}
        self.task_est: dict[str, dict[str, int]] = {}
        self.avail: dict[str, int] = {}
        self.weights: dict[str, float] = {}
        self.karmada: dict[str, int] = {}
        self.infeasible: dict[str, str] = {}
        #: the job's own replicas per cluster and task (previous assignment): already counted
        #: in the cluster's reported usage, so they are available to the job itself
        self.held = held_replicas(request, table)

    # ------------------------------------------------------------------ outcomes
    def fail(self, step: str, reason: str, condition: str = "Unschedulable") -> PlacementDecision:
        self.decision.failure = Failure(step, reason, condition)  # type: ignore[arg-type]
        self.decision.reason = f"{step}: {reason}"
        self.decision.path = "none"
        self.decision.karmada_split = self.karmada
        return self.decision

    def succeed(self, split: TaskSplit, path: str, reason: str) -> PlacementDecision:
        self.decision.shares = shares_from_split(self.job, split, previous=self.previous_indices())
        self.decision.path = path  # type: ignore[assignment]
        self.decision.karmada_split = self.karmada
        unknown = self.unknown_names()
        self.decision.reason = reason + (f" (clusterNames lists unknown {', '.join(unknown)})" if unknown else "")
        return self.decision

    # ------------------------------------------------------------------ steps
    def estimate(self, candidates: tuple[ClusterState, ...]) -> dict[str, int]:
        """Per-task estimates on every candidate, and the job's availability in pods."""
        assumed = self.request.assumed
        busy = {a.cluster for a in assumed}
        names = [c.name for c in candidates]
        positions = [self.table.position[n] for n in names]
        lowest = None
        for task in self.job.tasks:
            row = self.table.task_estimates(task.request, task.node_selector)[positions].clip(0)
            est = dict(zip(names, row.tolist(), strict=True))
            for name in busy.intersection(est):
                est[name] = max(self.table.estimate_on(name, task.request, task.node_selector, assumed), 0)
                row[names.index(name)] = est[name]
            self.task_est[task.name] = est
            lowest = row if lowest is None else np.minimum(lowest, row)
        rows = list(self.task_est.values())
        if len(rows) == 1:
            self.avail = dict(rows[0])
        elif self.strategy == "StaticWeight":  # availability only informs the diagnosis here
            assert lowest is not None
            self.avail = dict(zip(names, lowest.tolist(), strict=True))
        else:
            full = components(self.job, {t.name: t.replicas for t in self.job.tasks})
            answers = self.table.sets_for(names, full, assumed, MAX_SETS)
            for n, (sets, partial, _) in zip(names, answers, strict=True):
                self.avail[n] = sets * self.job.replicas + partial
        return self.avail

    def previous_indices(self) -> dict[str, dict[str, tuple[int, ...]]]:
        return {c.name: dict(c.indices) for c in self.request.previous.clusters if c.indices}

    def split(self, totals: dict[str, int]) -> TaskSplit:
        previous = {c.name: dict(c.tasks) for c in self.request.previous.clusters if c.tasks}
        return split_tasks(self.job, totals, previous)

    def increment(self, cluster: str, per_task: dict[str, int]) -> dict[str, int]:
        """What a share adds to what the job already runs there: the only part that needs room."""
        held = self.held.get(cluster)
        if not held:
            return per_task
        return {t: n - held.get(t, 0) for t, n in per_task.items() if n > held.get(t, 0)}

    def capacity(self, task: str, cluster: str) -> int:
        """Pods of ``task`` the job can have on ``cluster``: the estimate plus those it holds."""
        return self.task_est[task][cluster] + self.held.get(cluster, {}).get(task, 0)

    def verify(self, split: TaskSplit) -> dict[str, tuple[int, str]]:
        bad: dict[str, tuple[int, str]] = {}
        for cluster, per_task in split.items():
            adds = self.increment(cluster, per_task)
            if not adds:  # a kept or shrunk share: it runs already
                continue
            ok, placed, why = verify_share(self.table, self.job, cluster, adds, self.request.assumed)
            if not ok:
                bad[cluster] = (placed, why)
                self.infeasible[cluster] = why
        return bad

    def duplicated(self, names: tuple[str, ...]) -> PlacementDecision:
        full = {t.name: t.replicas for t in self.job.tasks}
        fits: TaskSplit = {}
        for n in names:
            adds = self.increment(n, full)
            ok, _, why = verify_share(self.table, self.job, n, adds, self.request.assumed) if adds else (True, 0, "")
            if ok:
                fits[n] = dict(full)
            else:
                self.infeasible[n] = why
        self.karmada = {n: self.job.replicas for n in names}
        if not fits:
            return self.fail("verify", "the whole job fits on no candidate: " + self.why_excluded())
        self.decision.shares = shares_from_split(self.job, fits, duplicated=True)
        self.decision.karmada_split = self.karmada
        dropped = sorted(set(names) - set(fits))
        note = f"; left out (job does not fit): {', '.join(dropped)}" if dropped else ""
        self.decision.reason = f"a full copy on each of {len(fits)} cluster(s){note}"
        return self.decision

    # ------------------------------------------------------------------ explanations
    def explain(self) -> dict[str, ClusterDiagnosis]:
        out: dict[str, ClusterDiagnosis] = {}
        shares = self.decision.shares
        for cluster in sorted(self.request.clusters, key=lambda c: c.name):
            n = cluster.name
            d = ClusterDiagnosis(n)
            d.estimate_kind = "exact" if cluster.node_shapes is not None else (
                "general" if cluster.summary is not None else "none")
            if n in self.excluded:
                d.exclude(*self.excluded[n])  # type: ignore[arg-type]
            else:
                d.reason = self.notes.get(n, "")
                if d.estimate_kind == "none" and n in self.avail:
                    d.reason = "reports neither nodeShapes nor resourceSummary: capacity 0"
            if n in self.avail:
                d.estimate = self.avail[n]
                d.task_estimates = {t: e[n] for t, e in self.task_est.items()}
            d.weight = self.weights.get(n)
            d.karmada = self.karmada.get(n)
            d.infeasible = self.infeasible.get(n, "")
            if n in shares:
                d.verdict = "selected"
            elif d.infeasible and self.strategy == "Duplicated":
                d.verdict, d.step = "infeasible", "verify"
            out[n] = d
        return out

    def capacities(self, names: tuple[str, ...]) -> str:
        parts = [f"{n} fits " + ", ".join(f"{t}×{e[n]}" for t, e in self.task_est.items()) for n in names]
        return "; ".join(parts) if parts else "no candidate"

    def unknown_names(self) -> list[str]:
        known = self.table.by_name
        return sorted(n for n in self.affinity.cluster_names if n not in known)

    def why_excluded(self) -> str:
        parts = [f"{n}: {self.infeasible.get(n) or self.excluded[n][1] if n in self.excluded else self.infeasible[n]}"
                 for n in sorted(set(self.excluded) | set(self.infeasible))]
        unknown = self.unknown_names()
        if unknown:
            parts.append(f"clusterAffinity.clusterNames names unknown cluster(s) {', '.join(unknown)}")
        return "; ".join(parts) or "no clusters given"
