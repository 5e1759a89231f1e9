"""Property tests: exact sums, no share above its estimate, every share verified, deterministic."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from placement_builders import cluster, gpu_nodes, job, request, task

from federation.placement.gang import verify_share
from federation.placement.place import Placer
from federation.placement.request import ClusterAffinity, PlacementSpec, StaticWeight
from federation.placement.table import ClusterTable
from federation.placement.webster import webster

NAMES = ["a", "b", "c", "d", "e"]


@st.composite
def scenarios(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 5))
    clusters = tuple(
        cluster(NAMES[i], *(gpu_nodes(draw(st.integers(0, 6)), draw(st.sampled_from([0, 2, 4, 8])))
                            for _ in range(draw(st.integers(1, 3)))))
        for i in range(n)
    )
    tasks = []
    for t in range(draw(st.integers(1, 3))):
        replicas = draw(st.integers(1, 8))
        tasks.append(task(f"t{t}", replicas, gpus=draw(st.sampled_from([1, 2, 4, 8])),
                          min_available=draw(st.integers(0, replicas))))
    low, high = sum(t.min_available for t in tasks), sum(t.replicas for t in tasks)
    j = job(*tasks, min_available=draw(st.integers(low, high)), uid=draw(st.sampled_from(["", "u-1", "u-2"])))
    strategy = draw(st.sampled_from(["StaticWeight", "DynamicWeight", "Aggregated", "Duplicated"]))
    weights = {c.name: draw(st.integers(1, 5)) for c in clusters}
    spec = PlacementSpec(strategy=strategy, static_weights=tuple(
        StaticWeight(ClusterAffinity(cluster_names=(name,)), w) for name, w in weights.items()))
    return j, clusters, spec, weights


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_decisions_are_exact_feasible_and_deterministic(scenario) -> None:  # type: ignore[no-untyped-def]
    j, clusters, spec, weights = scenario
    decision = Placer().place(request(j, spec, clusters))
    again = Placer().place(request(j, spec, clusters))
    assert decision.to_stable_json() == again.to_stable_json()
    assert {c: s.tasks for c, s in decision.shares.items()} == {c: s.tasks for c, s in again.shares.items()}
    if not decision.ok:
        assert decision.failure is not None and decision.failure.reason
        assert decision.failure.step in ("filter", "estimate", "divide", "verify")
        return
    table = ClusterTable(clusters)
    for name, share in decision.shares.items():
        per_task = {t: ts.replicas for t, ts in share.tasks.items()}
        ok, _, why = verify_share(table, j, name, per_task, ())
        assert ok, why
        for t in j.tasks:
            if t.name in per_task:
                assert per_task[t.name] <= table.task_estimates(t.request, t.node_selector)[table.position[name]]
    if spec.strategy == "Duplicated":
        assert all(s.replicas == j.replicas and s.min_available == j.min_available for s in decision.shares.values())
        return
    for t in j.tasks:
        assert sum(s.tasks[t.name].replicas for s in decision.shares.values() if t.name in s.tasks) == t.replicas
        assert sum(s.tasks[t.name].min_available for s in decision.shares.values() if t.name in s.tasks) == t.min_available
    assert sum(s.min_available for s in decision.shares.values()) == j.min_available
    assert sum(s.replicas for s in decision.shares.values()) == j.replicas
    if spec.strategy == "StaticWeight" and decision.path == "karmada":
        karmada = {c: n for c, n in webster(j.replicas, weights, j.uid).items() if n}
        assert decision.replicas() == karmada
